"""What every job body shares: the log, an engine from its settings, the empty-set guard."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger("memrl")


def require_rows(rows: Sequence[Any], path: Path, what: str) -> None:
    """Stop on an empty set, naming its file: evaluated, it would read as accuracy 0.0."""
    if not rows:
        raise SystemExit(f"{path}: no {what} (an empty set has no score)")


def build_engine(model: Path | str, spec: dict[str, Any], job_log: Path | None) -> Any:
    """An engine from a config engine block: `kind` picks it, the other keys configure it. A
    server the engine starts (`served`) logs beside the job's log."""
    from memrl.engines import make_engine

    options = {key: value for key, value in spec.items() if key != "kind"}
    if spec["kind"] == "served" and job_log is not None:
        options["log_path"] = job_log.with_name(f"{job_log.stem}.{Path(model).name}.server.log")
    return make_engine(spec["kind"], str(model), options)
