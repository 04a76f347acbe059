"""Mem-α's Table 5 instance: the paper's example, found by its text among one data source's
instances in every configured split (training, validation, MemoryAgentBench, the full training
set), written alone in the released schema for the policies to memorise."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path


class ExampleNotFound(ValueError):
    """No instance of the source holds every phrase of the example."""


def find_example(
    splits: Mapping[str, str | Path], source: str, phrases: Sequence[str]
) -> tuple[str, int]:
    """(split, row) of the first instance of `source`, in split order and then file order, whose
    chunks hold every phrase (case-insensitive); ExampleNotFound naming the phrases, the source
    and the splits searched where none does."""
    from memrl.data.memalpha import instances_by_source

    wanted = [phrase.lower() for phrase in phrases]
    for split, path in splits.items():
        for row in instances_by_source(path).get(source, []):
            text = " ".join(row["chunks"]).lower()
            if all(phrase in text for phrase in wanted):
                return split, row["index"]
    searched = ", ".join(f"{split} ({path})" for split, path in splits.items())
    raise ExampleNotFound(
        f"the paper's example (every one of {list(phrases)}) is in no {source!r} instance of "
        f"the splits searched: {searched}"
    )


def write_example(path: str | Path, row: int, out: str | Path) -> None:
    """Row `row` of the parquet at `path`, alone and in its schema, to `out` (atomically)."""
    import pyarrow.parquet as pq

    from memrl.data.io import atomic_path

    table = pq.read_table(path).slice(row, 1)
    with atomic_path(Path(out)) as tmp:
        pq.write_table(table, tmp)
