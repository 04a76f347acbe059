"""Memalpha's validation set (Mem-α's Table 1): instances of chunks and questions. Its QA model
answers within `long_context_eval.py`'s budget; a per-sample answer is scored with LongBench's
metric of the row's task."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from memrepro.benchmarks import NO_LENGTH, longbench
from memrepro.benchmarks.base import Benchmark, RowsOf, Sets, fixed_budget
from memrepro.layout import memalpha_data

OUTPUT_TOKENS = 2048  # long_context_eval.py's answers on Mem-α's benchmarks


def instance_rows(s: dict[str, Any], tokenizer: Any, pool: Path | None) -> RowsOf:
    """Rows of a task (a data source): every task of a job names the same parquet, read once;
    each instance measured in `tokenizer`'s tokens (its chunks)."""
    from memrepro.data.memalpha import instances_by_source
    from memrepro.data.tokens import count_tokens

    files: dict[Path, dict[str, list[dict[str, Any]]]] = {}

    def rows_of(name: str, data: Path) -> list[dict[str, Any]]:
        if data not in files:
            files[data] = instances_by_source(data)
        if name not in files[data]:
            known = ", ".join(sorted(files[data]))
            raise SystemExit(f"{data}: no instance of data source {name!r} (it has: {known})")
        rows = files[data][name]
        for row in rows:
            row["num_tokens"] = sum(count_tokens(tokenizer, row["chunks"]))
        return rows

    return rows_of


def split_file(name: str) -> Callable[..., list[Path]]:
    """A Mem-α benchmark's parquet (`memalpha.<name>.source`): every task (a data source) of
    a job reads it."""

    def data(config: dict[str, Any], length: int, tasks: tuple[str, ...]) -> list[Path]:

        return [memalpha_data(config, name)] * len(tasks)

    return data


def source_sets(name: str) -> Callable[..., Sets]:
    """The plan of a Mem-α benchmark: one job of its data sources (`memalpha.<name>.sources`),
    those of the system's `sources` where it names some (none of them here: no job)."""

    def sets(config: dict[str, Any], system_id: str, system: dict[str, Any], kind: Any) -> Sets:
        sources = config["memalpha"][name]["sources"]
        chosen = [s for s in sources if s in system.get("sources", sources)]
        return {NO_LENGTH: chosen} if chosen else {}

    return sets


BENCHMARK = Benchmark(
    "memalpha",
    score=longbench.score,
    output_tokens=fixed_budget(OUTPUT_TOKENS),
    instances=True,
    lengths=False,
    instance_rows=instance_rows,
    sets=source_sets("memalpha"),
    data=split_file("memalpha"),
)
