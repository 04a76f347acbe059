"""Mem-α's datasets: Memalpha (train/validation) and Memalpha-Memoryagentbench (test), one
parquet row per instance (Mem-α's official code):

    instance_id, prompt, chunks (JSON list of str), questions_and_answers (JSON list of
    {question, answer}), data_source, metadata (JSON), num_chunks, num_questions

`instances_by_source` reads them into evaluation rows (`index`, `task` = data source, `prompt`,
`chunks`, `questions`, `answers`), failing with the file, row and field of anything malformed.
The query prompt of a source (config/prompts_wrt_datasource.yaml, verbatim) is prepended to each
question with a blank line, in Mem-α's QA step and in the baselines alike.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

_BOOK = (
    "Your core memory contains a comprehensive book summary. Use this information to fulfill the "
    "user's request."
)
_RULES = (
    "Your core memory is used to store the classification rules of the articles. Identify the "
    "meaning of each class and how the article is classified."
)
_EXAMPLES = " Your semantic memory likely includes example labels."
_ANSWER = (
    " Fulfill the user's request with the core memory.\n\nWhen answering questions, you should "
    "put the final prediction in the format of \\boxed{label}. Note that the label is a single "
    "number."
)
QUERY_PROMPTS: dict[str, str | None] = {
    "squad": None,
    "hotpotqa": None,
    "perltqa": None,
    "lme_train": None,
    "accurate_retrieval": None,
    "ruler_qa1_197K": None,
    "ruler_qa2_421K": None,
    "longmemeval_s*": None,
    "booksum": _BOOK,
    "infbench_sum_eng_shots2": _BOOK,
    "long_range_understanding": _BOOK,
    "infbench_qa_eng_shots2": (
        "The book has been memorized in the memory. Answer the question as briefly as possible. "
        "Only output the answer with no other text."
    ),
    "pubmed-rct": _RULES + _ANSWER,
    "icl_trec_coarse_6600shot_balance": _RULES + _ANSWER,
    "icl_trec_fine_6400shot_balance": _RULES + _ANSWER,
    "ttl_train": _RULES + _EXAMPLES + _ANSWER,
    "test_time_learning": _RULES + _EXAMPLES + _ANSWER,
    "icl_banking77_5900shot_balance": _RULES + _EXAMPLES + _ANSWER,
    "icl_clinic150_7050shot_balance": _RULES + _EXAMPLES + _ANSWER,
    "icl_nlu_8296shot_balance": _RULES + _EXAMPLES + _ANSWER,
}


def query(source: str, question: str) -> str:
    """The question as the QA model (and the retriever) sees it."""
    if source not in QUERY_PROMPTS:
        known = ", ".join(sorted(QUERY_PROMPTS))
        raise KeyError(f"no query prompt for data source {source!r} (known: {known})")
    prompt = QUERY_PROMPTS[source]
    return question if prompt is None else f"{prompt}\n\n{question}"


def instances_by_source(path: str | Path) -> dict[str, list[dict[str, Any]]]:
    """The parquet's instances as rows, grouped by data source, in file order; `index` is the
    row number in the file."""
    from memrepro.data.io import read_parquet

    table = read_parquet(path, ("chunks", "questions_and_answers", "data_source"))
    grouped: dict[str, list[dict[str, Any]]] = {}
    for index, raw in enumerate(table.to_pylist()):
        row = _instance(raw, index, f"{path}: row {index}")
        grouped.setdefault(row["task"], []).append(row)
    return grouped


def write_instances(path: str | Path, rows: list[dict[str, Any]]) -> None:
    """Instances (lists and dicts as built) to a parquet in the released schema, atomically."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from memrepro.data.io import atomic_path

    encoded = [
        {
            "instance_id": row["instance_id"],
            "prompt": row["prompt"],
            "chunks": json.dumps(row["chunks"], ensure_ascii=False),
            "questions_and_answers": json.dumps(row["questions_and_answers"], ensure_ascii=False),
            "data_source": row["data_source"],
            "metadata": json.dumps(row.get("metadata", {}), ensure_ascii=False),
            "num_chunks": len(row["chunks"]),
            "num_questions": len(row["questions_and_answers"]),
        }
        for row in rows
    ]
    text = ("prompt", "chunks", "questions_and_answers", "data_source", "metadata")
    schema = pa.schema(
        [
            ("instance_id", pa.int64()),
            *((name, pa.string()) for name in text),
            ("num_chunks", pa.int64()),
            ("num_questions", pa.int64()),
        ]
    )
    with atomic_path(Path(path)) as tmp:
        pq.write_table(pa.Table.from_pylist(encoded, schema=schema), tmp)


def _instance(raw: dict[str, Any], index: int, where: str) -> dict[str, Any]:
    source = raw["data_source"]
    if not isinstance(source, str) or source not in QUERY_PROMPTS:
        raise ValueError(f"{where}: data_source {source!r} has no query prompt")
    chunks = _json_list(raw["chunks"], f"{where}, chunks")
    if not chunks or not all(isinstance(c, str) for c in chunks):
        raise ValueError(f"{where}, chunks: expected a non-empty list of strings")
    pairs = _json_list(raw["questions_and_answers"], f"{where}, questions_and_answers")
    questions, answers = [], []
    for n, pair in enumerate(pairs):
        if not isinstance(pair, dict) or not {"question", "answer"} <= set(pair):
            raise ValueError(
                f"{where}, questions_and_answers[{n}]: expected {{question, answer}}, got {pair!r}"
            )
        questions.append(str(pair["question"]))
        answers.append(pair["answer"])
    if not questions:
        raise ValueError(f"{where}, questions_and_answers: no questions")
    return {
        "index": index,
        "instance_id": raw.get("instance_id", index),
        "prompt": _task_prompt(raw.get("prompt"), where),
        "task": source,
        "chunks": chunks,
        "questions": questions,
        "answers": answers,
    }


def _task_prompt(value: Any, where: str) -> str:
    """The instance's task description (the baselines put it before the context): a string, or
    a chat message list (what verl's dataset expects), whose contents are joined."""
    if value is None or isinstance(value, str):
        return value or ""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, list) and all(isinstance(m, dict) and "content" in m for m in value):
        return "\n\n".join(str(m["content"]) for m in value)
    raise ValueError(f"{where}, prompt: expected a string or chat messages, got {value!r:.80}")


def _json_list(value: Any, where: str) -> list[Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: not valid JSON ({exc})") from exc
    if not isinstance(value, list):
        raise ValueError(f"{where}: expected a JSON list, got {type(value).__name__}")
    return value


def source_statistics(
    grouped: dict[str, list[dict[str, Any]]], count: Callable[[list[str]], list[int]]
) -> list[dict[str, Any]]:
    """Paper Tables 6-8 per data source: instances, chunks and questions per instance, tokens
    per chunk (every chunk of the source counted with `count`, a batched token counter)."""
    records = []
    for source, rows in grouped.items():
        chunks = [chunk for row in rows for chunk in row["chunks"]]
        records.append(
            {
                "task": source,
                "instances": len(rows),
                "chunks_per_instance": len(chunks) / len(rows),
                "tokens_per_chunk": sum(count(chunks)) / len(chunks),
                "questions_per_instance": sum(len(row["questions"]) for row in rows) / len(rows),
            }
        )
    return records


def ruler_hqa_instance(
    row: dict[str, Any], chunks: list[str], source: str, prompt: str
) -> dict[str, Any]:
    """A RULER-HQA sample as a Mem-α instance: its context cut into `chunks`, its one question
    asked and scored as the MemoryAgentBench source `source` (memalpha.ruler_hqa; the config
    check makes sure it has a query prompt)."""
    return {
        "index": row["index"],
        "instance_id": row["index"],
        "prompt": prompt,
        "task": source,
        "chunks": chunks,
        "questions": [row["input"]],
        "answers": [list(row["answers"])],
        "num_tokens": row["num_tokens"],
    }
