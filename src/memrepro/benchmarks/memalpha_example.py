"""Mem-α's Table 5 instance (`memalpha.example`): the instance that holds the paper's example,
found by its text among the instances of every data source in every configured split, wherever
it lives (`memrepro.data.memalpha_example`), memorised by the policies its own config block names.
Its one task is the example (EXAMPLE_TASK), whichever source holds it: the plan need not know
which. Table 5 reads their memories alone: no target asks its questions."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from memrepro.benchmarks import EXAMPLE_BENCHMARK, EXAMPLE_TASK, NO_LENGTH, memalpha
from memrepro.benchmarks.base import RowsOf, Sets
from memrepro.layout import ConfigError, memalpha_splits, results_dir


def example_files(config: dict[str, Any]) -> tuple[Path, Path]:
    """The example instance alone (the released schema) and where it was found (JSON)."""
    folder = results_dir(config) / "data" / "memalpha"
    return folder / "example.parquet", folder / "example.json"


def sets(config: dict[str, Any], system_id: str, system: dict[str, Any], kind: Any) -> Sets:
    spec = config["memalpha"].get("example")
    if not spec or system_id not in spec["systems"]:
        return {}
    return {NO_LENGTH: [EXAMPLE_TASK]}


def instance_rows(s: dict[str, Any], tokenizer: Any, pool: Path | None) -> RowsOf:
    """The example's one instance, as its task's rows, whatever data source it came from."""
    from memrepro.data.memalpha import instances_by_source

    rows_of_source = memalpha.instance_rows(s, tokenizer, pool)

    def rows_of(name: str, data: Path) -> list[dict[str, Any]]:
        sources = list(instances_by_source(data))
        if name != EXAMPLE_TASK or len(sources) != 1:
            raise SystemExit(f"{data}: not the example alone (task {name!r}, sources {sources})")
        return rows_of_source(sources[0], data)

    return rows_of


def searched_sources(config: dict[str, Any]) -> list[str]:
    """The data sources the example is looked for in: the block's `sources`, else every source
    of every configured split."""
    spec = config["memalpha"]["example"]
    held = [s for split in memalpha_splits(config) for s in config["memalpha"][split]["sources"]]
    return list(spec.get("sources") or dict.fromkeys(held))


def sized_as(config: dict[str, Any]) -> tuple[int, list[str]]:
    """`memrepro cost`: one instance, as large as the largest of the sources it may be found in."""
    return 1, searched_sources(config)


def data(config: dict[str, Any], length: int, tasks: tuple[str, ...]) -> list[Path]:
    return [example_files(config)[0]] * len(tasks)


def check_data(config: dict[str, Any]) -> None:
    """Where every split is a file on this machine (a packaged fixture too), the example is
    looked for while the plan is made: none found stops it, naming the phrases and the splits
    searched (with a download, the example's job stops so)."""
    from memrepro.data.memalpha_example import ExampleNotFound, find_example
    from memrepro.data.sources import FIXTURE_PREFIX, fixture_path, local_path

    spec = config["memalpha"].get("example")
    if not spec:
        return
    files = {}
    for split in memalpha_splits(config):
        url = config["sources"][config["memalpha"][split]["source"]]["url"]
        path = fixture_path(url) if url.startswith(FIXTURE_PREFIX) else local_path(url)
        if path is None:
            return
        files[split] = path
    try:
        find_example(files, spec["phrases"], spec.get("sources"))
    except ExampleNotFound as exc:
        raise ConfigError(f"config key memalpha.example: {exc}") from None


BENCHMARK = dataclasses.replace(
    memalpha.BENCHMARK,
    name=EXAMPLE_BENCHMARK,
    sets=sets,
    data=data,
    check_data=check_data,
    chosen_per_system=True,
    instance_rows=instance_rows,
    sized_as=sized_as,
)
