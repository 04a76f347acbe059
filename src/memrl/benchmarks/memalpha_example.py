"""Mem-α's Table 5 instance (`memalpha.example`): the instance that holds the paper's example,
found by its text among one data source's instances in every configured split, wherever it lives
(`memrl.data.memalpha_example`), memorised by the policies its own config block names. Table 5
reads their memories alone: no target asks its questions."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from memrl.benchmarks import EXAMPLE_BENCHMARK, NO_LENGTH, memalpha
from memrl.benchmarks.base import Sets
from memrl.layout import ConfigError, memalpha_splits, results_dir


def example_files(config: dict[str, Any]) -> tuple[Path, Path]:
    """The example instance alone (the released schema) and where it was found (JSON)."""
    folder = results_dir(config) / "data" / "memalpha"
    return folder / "example.parquet", folder / "example.json"


def sets(config: dict[str, Any], system_id: str, system: dict[str, Any], kind: Any) -> Sets:
    spec = config["memalpha"].get("example")
    if not spec or system_id not in spec["systems"]:
        return {}
    return {NO_LENGTH: [spec["source"]]}


def data(config: dict[str, Any], length: int, tasks: tuple[str, ...]) -> list[Path]:
    return [example_files(config)[0]] * len(tasks)


def check_data(config: dict[str, Any]) -> None:
    """Where every split is a file on this machine (a packaged fixture too), the example is
    looked for while the plan is made: none found stops it, naming the phrases and the splits
    searched (with a download, the example's job stops so)."""
    from memrl.data.memalpha_example import ExampleNotFound, find_example
    from memrl.data.sources import FIXTURE_PREFIX, fixture_path, local_path

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
        find_example(files, spec["source"], spec["phrases"])
    except ExampleNotFound as exc:
        raise ConfigError(f"config key memalpha.example: {exc}") from None


BENCHMARK = dataclasses.replace(
    memalpha.BENCHMARK,
    name=EXAMPLE_BENCHMARK,
    sets=sets,
    data=data,
    check_data=check_data,
    chosen_per_system=True,
    sized_as=("train", 1),  # `memrl cost`: one instance of its source, as Table 7 sizes them
)
