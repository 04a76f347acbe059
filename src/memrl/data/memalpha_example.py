"""Mem-α's Table 5 instance: the paper's example, found by its text among one data source's
instances in every configured split (training, validation, MemoryAgentBench, the full training
set), written alone in the released schema for the policies to memorise."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path


class ExampleNotFound(ValueError):
    """No instance of the source holds every phrase of the example, or more than one does."""


def find_example(
    splits: Mapping[str, str | Path], source: str, phrases: Sequence[str]
) -> tuple[str, int]:
    """(split, row) of the one instance of `source` whose chunks hold every phrase
    (case-insensitive), its first place in split order and then file order (a split that
    holds another's instances, the full training set, repeats it: one instance by its text).
    ExampleNotFound where none does, naming the phrases and the splits searched, and where
    several do, with their count: phrases that fit many instances do not pick the paper's."""
    from memrl.data.memalpha import instances_by_source

    wanted = [phrase.lower() for phrase in phrases]
    found: dict[str, tuple[str, int]] = {}  # an instance's text -> its first place
    for split, path in splits.items():
        for row in instances_by_source(path).get(source, []):
            text = " ".join(row["chunks"]).lower()
            if all(phrase in text for phrase in wanted):
                found.setdefault(text, (split, row["index"]))
    searched = ", ".join(f"{split} ({path})" for split, path in splits.items())
    if len(found) > 1:
        places = ", ".join(f"{split} row {row}" for split, row in list(found.values())[:3])
        raise ExampleNotFound(
            f"the paper's example (every one of {list(phrases)}) fits {len(found)} {source!r} "
            f"instances ({places}, ...): give phrases that only the example holds"
        )
    if not found:
        raise ExampleNotFound(
            f"the paper's example (every one of {list(phrases)}) is in no {source!r} instance "
            f"of the splits searched: {searched}"
        )
    return next(iter(found.values()))


def write_example(path: str | Path, row: int, out: str | Path) -> None:
    """Row `row` of the parquet at `path`, alone and in its schema, to `out` (atomically)."""
    import pyarrow.parquet as pq

    from memrl.data.io import atomic_path

    table = pq.read_table(path).slice(row, 1)
    with atomic_path(Path(out)) as tmp:
        pq.write_table(table, tmp)
