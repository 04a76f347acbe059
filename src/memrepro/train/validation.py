"""What a validation during training reports, on either trainer: `val/<source>` per data source and
`val_reward`, their unweighted mean (the score the best checkpoint is chosen by)."""

from __future__ import annotations

from collections.abc import Mapping


def validation_summary(by_source: Mapping[str, float]) -> dict[str, float]:
    """`val_reward` and `val/<source>` (sorted) from each source's score."""
    if not by_source:
        raise ValueError("validation: no data source was scored")
    return {
        "val_reward": sum(by_source.values()) / len(by_source),
        **{f"val/{source}": by_source[source] for source in sorted(by_source)},
    }
