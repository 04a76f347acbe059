"""LongBench v1 (THUDM/LongBench): the seven configs MemAgent reports (seed 000, Tables 2 and 3).

QA (Table 3): 2wikimqa, hotpotqa, musique, narrativeqa, qasper. SUM (Table 2): gov_report,
qmsum. Each config has 200 test rows with the columns `input` (the question; "" for
gov_report), `context`, `answers` (list[str]), `length` (LongBench's word count of input,
context and answers), `dataset` (the config name), `language`, `all_classes` (null here), `_id`.

Prompts and maximum generation lengths are LongBench's `config/dataset2prompt.json` and
`config/dataset2maxlen.json`, stored verbatim (typos such as "asconcisely" and qasper's
"\\n\\n Answer" included) in `longbench_prompts.json` / `longbench_maxlen.json` next to this
module (THUDM/LongBench @ 2e00731, `LongBench/config/`, MIT licence). Filling is
`template.format(context=..., input=...)`, as LongBench's `pred.py` does.

Where the data lives (Hugging Face dataset THUDM/LongBench, alias zai-org/LongBench):
- `main` (5e628be) holds only the legacy `data.zip` (114 MB; `data/<config>.jsonl`, the same
  columns) and a loading script that current `datasets` no longer runs;
- one parquet per config, `<config>/test-00000-of-00001.parquet`, exists on the hub's
  "Convert dataset to Parquet" branch, whose last commit ("Delete loading script") is
  LONGBENCH_REVISION. We pin that commit: a commit hash is immutable, `main` is not.
`load_longbench` reads either form (`.parquet`, or a `.jsonl` taken from data.zip).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from memrepro.data.io import read_table_records
from memrepro.scoring.longbench import LONGBENCH_QA, LONGBENCH_SUM

LONGBENCH_TASKS = LONGBENCH_QA + LONGBENCH_SUM
QA_METRICS = ("sub_em", "f1")  # what `scoring.longbench` scores golds by: sub_em, qa_f1
SUM_METRICS = ("rouge",)

# LongBench's published sizes (Bai et al., 2023, Table 1): samples per task and their average
# length in words, for pricing an evaluation before the data is downloaded (`memrepro cost`).
PUBLISHED_SIZES = {
    "2wikimqa": (200, 4887),
    "hotpotqa": (200, 9151),
    "musique": (200, 11214),
    "narrativeqa": (200, 18409),
    "qasper": (200, 3619),
    "gov_report": (200, 8734),
    "qmsum": (200, 10614),
}
HF_DATASET = "THUDM/LongBench"
# The "Delete loading script" commit of the hub's parquet conversion: every config as
# <config>/test-00000-of-00001.parquet (read from the hub's commit pages; not downloaded here).
LONGBENCH_REVISION = "985ffd80932bc3f863ad4155dc36b2e88043ed51"

# What a memory agent is asked instead of the full LongBench prompt (see question_for_memagent).
SUMMARY_PROBLEM = "Write a one-page summary of the report."

_DATA_DIR = Path(__file__).resolve().parent
# Columns the loader needs, with their Python types (`language`, `all_classes` are not used).
_COLUMNS: dict[str, type] = {
    "input": str,
    "context": str,
    "answers": list,
    "length": int,
    "dataset": str,
    "_id": str,
}


# --- prompts and generation lengths ------------------------------------------------------------


@cache
def _prompts() -> dict[str, str]:
    return json.loads((_DATA_DIR / "longbench_prompts.json").read_text(encoding="utf-8"))


@cache
def _maxlen() -> dict[str, int]:
    return json.loads((_DATA_DIR / "longbench_maxlen.json").read_text(encoding="utf-8"))


def _check_task(task: str) -> None:
    if task not in LONGBENCH_TASKS:
        raise ValueError(f"unknown LongBench task {task!r}; expected one of {LONGBENCH_TASKS}")


def prompt(task: str, context: str, question: str) -> str:
    """LongBench's prompt for `task` with the context and the question (`input`) filled in.

    `str.format` substitutes once, so braces inside the context or question are kept as text.
    """
    _check_task(task)
    return _prompts()[task].format(context=context, input=question)


def max_new_tokens(task: str) -> int:
    """LongBench's generation budget: 32 (multi-doc QA), 128 (narrativeqa, qasper), 512 (SUM)."""
    _check_task(task)
    return _maxlen()[task]


def question_for_memagent(task: str, row: dict) -> str:
    """The "problem" a memory agent carries through its chunks instead of LongBench's prompt.

    Our decision (neither paper says): QA tasks and qmsum give the row's question / query
    (`input`, stripped as MemAgent strips it); gov_report has no `input`, so the agent gets the
    instruction of its LongBench prompt, "Write a one-page summary of the report.". The
    template's other wording (e.g. "Only give me the answer") is left out because the memory
    agent's final prompt asks for the answer in its own format.
    """
    _check_task(task)
    if task == "gov_report":
        return SUMMARY_PROBLEM
    return row["input"].strip()


def parquet_url(task: str, revision: str = LONGBENCH_REVISION) -> str:
    """The download URL of one config's parquet at a pinned revision of the HF dataset."""
    _check_task(task)
    return (
        f"https://huggingface.co/datasets/{HF_DATASET}/resolve/{revision}/"
        f"{task}/test-00000-of-00001.parquet"
    )


# --- loading ------------------------------------------------------------------------------------


def load_longbench(path: str | Path, task: str) -> list[dict]:
    """The eval-set rows of one LongBench config file (`.parquet` or `.jsonl`).

    Each row is {index (position in the file), task, input, context, answers, length, _id,
    num_tokens: None}; texts are kept as stored (LongBench fills its prompt with them
    unstripped). A malformed row (missing column, wrong type, empty context, no answers, an
    empty question outside gov_report, `dataset` other than `task`) raises ValueError naming
    the file and the row.
    """
    _check_task(task)
    path = Path(path)
    records = read_table_records(path, _COLUMNS, "LongBench")
    if not records:
        raise ValueError(f"{path}: no rows")
    return [_parse(record, task, f"{path}: row {i}", i) for i, record in enumerate(records)]


def _parse(record: dict, task: str, where: str, index: int) -> dict:
    for key, kind in _COLUMNS.items():
        if key not in record:
            raise ValueError(f"{where}: missing key {key!r}")
        value = record[key]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ValueError(
                f"{where}: {key!r} must be {kind.__name__}, got {type(value).__name__}"
            )
    if record["dataset"] != task:
        raise ValueError(f"{where}: 'dataset' is {record['dataset']!r}, expected {task!r}")
    if not record["context"].strip():
        raise ValueError(f"{where}: empty 'context'")
    if task != "gov_report" and not record["input"].strip():
        raise ValueError(f"{where}: empty 'input' (a {task} row needs its question)")
    return {
        "index": index,
        "task": task,
        "input": record["input"],
        "context": record["context"],
        "answers": _answers(record["answers"], where, task),
        "length": record["length"],
        "_id": record["_id"],
        "num_tokens": None,
    }


def _answers(answers: list[Any], where: str, task: str) -> list[str]:
    """The golds: a non-empty list of non-blank strings (a blank gold would be contained in
    every prediction and score sub_em 1), each one the task's metrics can score
    (`memrepro.scoring.golds`)."""
    from memrepro.scoring.golds import bad_gold

    if not answers:
        raise ValueError(f"{where}: 'answers' is empty")
    for j, answer in enumerate(answers):
        if not isinstance(answer, str):
            raise ValueError(f"{where}: answers[{j}] must be str, got {type(answer).__name__}")
        if not answer.strip():
            raise ValueError(f"{where}: answers[{j}] is blank")
    problem = bad_gold(
        answers, SUM_METRICS if task in LONGBENCH_SUM else QA_METRICS, published=True
    )
    if problem is not None:
        raise ValueError(f"{where}: {problem}")
    return list(answers)
