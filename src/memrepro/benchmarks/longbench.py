"""LongBench (its QA and summary tasks, as MemAgent's Table 2): its own prompts, output budgets
and metrics; summaries are scored after `</think>` only with `strip_think`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memrepro.benchmarks import NO_LENGTH, Task
from memrepro.benchmarks.base import Benchmark, Sets
from memrepro.layout import longbench_source, raw_file


def question(task: Task, row: dict[str, Any]) -> str:
    from memrepro.data.longbench import question_for_memagent

    return question_for_memagent(task.task, row)


def direct_prompt(task: Task, row: dict[str, Any], context: str) -> str:
    from memrepro.data.longbench import prompt

    return prompt(task.task, context, row["input"])


def output_tokens(task: Task) -> int:
    from memrepro.data.longbench import max_new_tokens

    return max_new_tokens(task.task)


def data(config: dict[str, Any], length: int, tasks: tuple[str, ...]) -> list[Path]:
    """Each task's parquet as downloaded (sources.longbench_<task>)."""

    return [raw_file(config, longbench_source(task)) for task in tasks]


def read_rows(task: Task, data: Path, tokenizer: Any) -> list[dict[str, Any]]:
    """A task's rows from LongBench's parquet, each measured in tokens."""
    from memrepro.agents.chunking import text_tokens
    from memrepro.data.longbench import load_longbench

    rows = load_longbench(data, task.task)
    for row in rows:
        row["num_tokens"] = text_tokens(tokenizer, row["context"])
    return rows


# its datasets' column headers in the paper (Tables 2, 3, 9, 11)
TASK_LABELS = {
    "2wikimqa": "2Wiki",
    "hotpotqa": "HQA",
    "musique": "MuSiQue",
    "narrativeqa": "NQA",
    "qasper": "Qasper",
    "gov_report": "GovReport",
    "qmsum": "QMSum",
}
TOKENS_PER_WORD = 1.3  # Qwen2.5's tokenizer on English prose, about


def sizes(config: dict[str, Any], tasks: list[str], length: int) -> list[tuple[int, int]]:
    """(questions, context tokens) per task: LongBench's published sizes (words, made tokens)."""
    from memrepro.data.longbench import PUBLISHED_SIZES

    return [(n, round(words * TOKENS_PER_WORD)) for n, words in (PUBLISHED_SIZES[t] for t in tasks)]


def sets(config: dict[str, Any], system_id: str, system: dict[str, Any], kind: Any) -> Sets:
    """One job of its configured tasks: QA only for a QA-only kind (the summaries are Table 2's),
    a memory-ablation variant's `tasks.longbench` only."""
    from memrepro.scoring.longbench import LONGBENCH_SUM

    only = system.get("tasks", {}).get("longbench")
    return {
        NO_LENGTH: [
            task
            for task in config["longbench"]["tasks"]
            if not (kind.qa_only and task in LONGBENCH_SUM) and (only is None or task in only)
        ]
    }


def row_settings(config: dict[str, Any]) -> dict[str, Any]:
    """`strip_think` only when on: LongBench jobs rerun only then."""
    return {"strip_think": True} if config["evaluation"].get("longbench_strip_think") else {}


def score(task: Task, row: dict[str, Any], response: str) -> dict[str, Any]:
    from memrepro.scoring.longbench import score_longbench

    return score_longbench(
        task.task, response, row["answers"], task.strip_think, task.answer_format
    )


BENCHMARK = Benchmark(
    "longbench",
    score=score,
    output_tokens=output_tokens,
    question=question,
    direct_prompt=direct_prompt,
    read_rows=read_rows,
    data=data,
    retrieves_documents=False,  # the official RAG baseline cuts its contexts into chunks
    sizes=sizes,
    row_settings=row_settings,
    sets=sets,
    lengths=False,
    task_labels=TASK_LABELS,  # the official RAG baseline cuts LongBench's contexts into chunks
)
