"""RULER (its 11 tasks, as MemAgent's fork or upstream): each task's own output budget and
scoring; the upstream variant asks direct generation with RULER's own prompt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memrepro.benchmarks import Task
from memrepro.benchmarks.base import Benchmark, Sets, official_direct_prompt
from memrepro.layout import results_dir


def direct_prompt(task: Task, row: dict[str, Any], context: str) -> str:
    """RULER's upstream rows get RULER's own prompt (context inside the task template, answer
    prefix last); MemAgent's fork (and so the paper) asks them the official way."""
    if task.variant != "upstream":
        return official_direct_prompt(task, row, context)
    from memrepro.data.ruler import ruler_prompt

    return ruler_prompt({**row, "context": context})


def output_tokens(task: Task) -> int:
    from memrepro.data.ruler import tokens_to_generate

    return tokens_to_generate(task.task)


def data(config: dict[str, Any], length: int, tasks: tuple[str, ...]) -> list[Path]:
    """Each task's set at `length` tokens (synthesize_ruler)."""

    return [results_dir(config) / "data/ruler" / task / f"{length}.jsonl" for task in tasks]


def sizes(config: dict[str, Any], tasks: list[str], length: int) -> list[tuple[int, int]]:
    """(questions, context tokens) per task: the configured samples at `length` tokens."""
    return [(config["ruler"]["samples"], length)] * len(tasks)


def ruler_sets(config: dict[str, Any]) -> list[tuple[str, int]]:
    """Every (task, length) RULER set, lengths above a task's `max_length` left out."""
    ruler = config["ruler"]
    caps = ruler.get("max_length", {})
    return [
        (task, length)
        for task in ruler["tasks"]
        for length in ruler["lengths"]
        if length <= caps.get(task, length)
    ]


def sets(config: dict[str, Any], system_id: str, system: dict[str, Any], kind: Any) -> Sets:
    """One job per length up to the system's `max_length`, covering the tasks set there (a
    memory-ablation variant's `tasks.ruler` only)."""
    limit, only = system.get("max_length"), system.get("tasks", {}).get("ruler")
    planned: Sets = {}
    for task, length in ruler_sets(config):
        if (limit is None or length <= limit) and (only is None or task in only):
            planned.setdefault(length, []).append(task)
    return planned


def row_settings(config: dict[str, Any]) -> dict[str, Any]:
    return {"variant": config["ruler"]["variant"]}  # MemAgent's fork, or upstream


def score(task: Task, row: dict[str, Any], response: str) -> dict[str, Any]:
    from memrepro.scoring.ruler import score_ruler

    return score_ruler(task.task, response, row["answers"], task.variant, task.answer_format)


BENCHMARK = Benchmark(
    "ruler",
    score=score,
    output_tokens=output_tokens,
    direct_prompt=direct_prompt,
    length_unit="tokens",
    data=data,
    sizes=sizes,
    row_settings=row_settings,
    sets=sets,
)
