"""Mem-α's Table 5 instance: the paper's example, found by its text among the instances of
every data source in every configured split (training, validation, MemoryAgentBench, the full
training set), written alone in the released schema for the policies to memorise."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path


class ExampleNotFound(ValueError):
    """No instance holds every phrase of the example, or more than one does."""


def find_example(
    splits: Mapping[str, str | Path],
    phrases: Sequence[str],
    sources: Sequence[str] | None = None,
) -> tuple[str, int, str]:
    """(split, row, data source) of the one instance whose chunks hold every phrase
    (case-insensitive), its first place in split order and then file order. One instance is
    one text: a split that holds another's instances (the full training set) repeats it, and so
    may two sources. `sources` narrows the search; None searches every source.
    ExampleNotFound where none does, naming the phrases and the splits searched, and where
    several do, with their count: phrases that fit many instances do not pick the paper's."""
    from memrepro.data.memalpha import instances_by_source

    wanted = [phrase.lower() for phrase in phrases]
    found: dict[str, tuple[str, int, str]] = {}  # an instance's text -> its first place
    for split, path in splits.items():
        for source, rows in instances_by_source(path).items():
            if sources is not None and source not in sources:
                continue
            for row in rows:
                text = " ".join(row["chunks"]).lower()
                if all(phrase in text for phrase in wanted):
                    found.setdefault(text, (split, row["index"], source))
    searched = ", ".join(f"{split} ({path})" for split, path in splits.items())
    among = "every source" if sources is None else f"the sources {list(sources)}"
    if len(found) > 1:
        places = ", ".join(f"{split} row {row} ({source})" for split, row, source in found.values())
        raise ExampleNotFound(
            f"the paper's example (every one of {list(phrases)}) fits {len(found)} instances "
            f"of {among}: {places}. Give phrases that only the example holds, or name the "
            "sources to search (its key `sources`)"
        )
    if not found:
        raise ExampleNotFound(
            f"the paper's example (every one of {list(phrases)}) is in no instance of {among} "
            f"in the splits searched: {searched}"
        )
    return next(iter(found.values()))


def write_example(path: str | Path, row: int, out: str | Path) -> None:
    """Row `row` of the parquet at `path`, alone and in its schema, to `out` (atomically)."""
    import pyarrow.parquet as pq

    from memrepro.data.io import atomic_path

    table = pq.read_table(path).slice(row, 1)
    with atomic_path(Path(out)) as tmp:
        pq.write_table(table, tmp)
