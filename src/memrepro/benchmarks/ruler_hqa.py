"""RULER-HQA (MemAgent's main benchmark: HotpotQA questions among distractor documents, from 50
to 6,400 documents) and its probe (Table 4: the gold documents at given depths), scored by
sub-string exact match of the first answer, as the official `answer_is` check."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from memrepro.benchmarks import PROBE_BENCHMARK, RULER_HQA_TASK, Task
from memrepro.benchmarks.base import (
    EVAL_ROW_FIELDS,
    Benchmark,
    Evidence,
    RowsOf,
    Sets,
    fixed_budget,
)
from memrepro.layout import results_dir

OUTPUT_TOKENS = 10000  # the official direct-generation MAX_OUTPUT_LEN
TOKENS_PER_DOC = 140  # its documents: the paper's 7K tokens at 50


def context_tokens(config: dict[str, Any], n_docs: int) -> int:
    """The context at `n_docs` documents: its length label ("7K", "3.5M"), or the tokens per
    document of the labelled lengths (the paper's where none reads as tokens)."""
    labels = {
        int(n): _label_tokens(label) for n, label in config["ruler_hqa"]["length_labels"].items()
    }
    if labels.get(n_docs):
        return labels[n_docs]
    per_doc = [tokens / n for n, tokens in labels.items() if tokens]
    return round(n_docs * (sum(per_doc) / len(per_doc) if per_doc else TOKENS_PER_DOC))


def _label_tokens(label: str) -> int | None:
    match = re.fullmatch(r"([\d.]+)\s*([KM])", str(label).strip())
    return round(float(match[1]) * {"K": 1e3, "M": 1e6}[match[2]]) if match else None


def sizes(config: dict[str, Any], tasks: list[str], length: int) -> list[tuple[int, int]]:
    """(questions, context tokens) per task at `length` documents, for `memrepro cost`."""
    return [(config["ruler_hqa"]["eval_questions"], context_tokens(config, length))] * len(tasks)


def score(task: Task, row: dict[str, Any], response: str) -> dict[str, Any]:
    from memrepro.scoring.metrics import score_answer_is

    scores = score_answer_is(response, row["answers"][0], task.answer_format)
    return {**scores, "score": scores["sub_em"]}


def sets(config: dict[str, Any], system_id: str, system: dict[str, Any], kind: Any) -> Sets:
    """One job per document count, up to the system's `max_docs`."""
    limit = system.get("max_docs")
    return {
        n: [RULER_HQA_TASK] for n in config["ruler_hqa"]["n_docs"] if limit is None or n <= limit
    }


def instance_shapes(
    config: dict[str, Any], s: dict[str, Any]
) -> list[tuple[int, tuple[int, int, int], str]]:
    """Its samples at the job's length as Mem-α instances, for `memrepro cost`: (count, (chunks,
    tokens per chunk, questions), source): the context cut into chunks, one question each."""
    spec = s["ruler_hqa"]
    chunks = math.ceil(context_tokens(config, int(s["length"])) / spec["chunk_tokens"])
    shape = (chunks, spec["chunk_tokens"], 1)
    return [(config["ruler_hqa"]["eval_questions"], shape, spec["source"])]


def eval_set(config: dict[str, Any], length: int, tasks: tuple[str, ...]) -> list[Path]:
    """Its set at `length` documents (built, or the released one converted)."""

    return [results_dir(config) / "data/ruler_hqa" / f"eval_{length}.jsonl"]


def probe_set(config: dict[str, Any], length: int, tasks: tuple[str, ...]) -> list[Path]:
    """The probe's set of each placement at `length` documents."""

    probe = results_dir(config) / "data/ruler_hqa/probe"
    return [probe / task / f"eval_{length}.jsonl" for task in tasks]


def probe_task(placement: Sequence[int]) -> str:
    """A probe placement's task name: [0, 20] (percent depths of the two groups) -> p0_20."""
    return f"p{placement[0]}_{placement[1]}"


def probe_sets(config: dict[str, Any], system_id: str, system: dict[str, Any], kind: Any) -> Sets:
    """The systems `evaluation.probe` names: one job per document count, a task per placement."""
    probe = config["evaluation"].get("probe")
    if not probe or system_id not in probe["systems"]:
        return {}
    return {n: [probe_task(p) for p in probe["placements"]] for n in probe["n_docs"]}


def instance_settings(config: dict[str, Any]) -> dict[str, Any]:
    """How Mem-α's framework reads the samples: chunk size, source, prompt."""
    return {"ruler_hqa": config["memalpha"]["ruler_hqa"]}


def pool_documents(rows: list[dict[str, Any]], pool_docs: Path | None) -> list[str] | None:
    """The document pool, needed only by rows that store doc ids instead of text."""
    if not any("doc_ids" in row for row in rows):
        return None
    if pool_docs is None:
        raise SystemExit("these rows store doc ids: pass --pool with the hqa-pool documents")
    return read_documents(pool_docs)


def read_documents(pool_docs: Path) -> list[str]:
    from memrepro.data.io import read_parquet

    return read_parquet(pool_docs, ["doc"])["doc"].to_pylist()


def gold_documents(pool_questions: Path, indices: Iterable[int]) -> dict[int, list[int]]:
    """Each question's supporting paragraphs (HotpotQA's two hops, `gold_doc_ids`, in group
    order) by index, as pool doc ids; an index the pool lacks stops, naming the file."""
    from memrepro.data.io import read_parquet

    table = read_parquet(pool_questions, ["index", "gold_doc_ids"]).to_pylist()
    gold = {q["index"]: q["gold_doc_ids"] for q in table}
    wanted = list(indices)
    if missing := [i for i in wanted if i not in gold]:
        raise SystemExit(f"{pool_questions}: no question of index {missing[:5]}")
    return {i: list(dict.fromkeys(d for group in gold[i] for d in group)) for i in wanted}


def supporting_paragraphs(
    indices: Iterable[int], docs: Sequence[str], pool_questions: Path
) -> dict[int, dict[str, str]]:
    """Each question's supporting paragraphs by index, as {title: what begins it in a rendered
    context}."""
    from memrepro.data.ruler_hqa import document_start, document_title

    return {
        i: {document_title(docs[d]): document_start(docs[d]) for d in ids}
        for i, ids in gold_documents(pool_questions, indices).items()
    }


def pool_questions_file(config: dict[str, Any]) -> Path:
    """The pool's questions: each one's supporting paragraphs (`gold_doc_ids`) by index."""
    return results_dir(config) / "data/ruler_hqa/pool_questions.parquet"


def gold_contexts(
    rows: list[dict[str, Any]], pool_questions: Path, pool_docs: Path | None
) -> list[str]:
    """Each row's supporting paragraphs alone (HotpotQA's two hops), in the order its context
    holds them and rendered as a context is ("Document 1:" onwards): what the oracle reads."""
    from memrepro.data.ruler_hqa import document_start, render_context

    if pool_docs is None:
        raise SystemExit("the supporting paragraphs are the pool's documents: pass --pool")
    docs = read_documents(pool_docs)
    gold = gold_documents(pool_questions, [row["index"] for row in rows])

    def position(row: dict[str, Any], doc_id: int) -> int:
        if "doc_ids" in row:
            ids = list(row["doc_ids"])
            return ids.index(doc_id) if doc_id in ids else len(ids)
        found = row["context"].find(document_start(docs[doc_id]))
        return found if found >= 0 else len(row["context"])

    return [
        render_context(sorted(gold[row["index"]], key=lambda d: position(row, d)), docs)
        for row in rows
    ]


def instance_rows(s: dict[str, Any], tokenizer: Any, pool: Path | None) -> RowsOf:
    """The set's samples as Mem-α instances: each context chunked in `tokenizer`'s tokens, its
    question asked after them (settings `ruler_hqa`: chunk size, source, prompt)."""
    from memrepro.benchmarks.base import row_chunks
    from memrepro.data.io import read_jsonl
    from memrepro.data.memalpha import ruler_hqa_instance

    spec = s["ruler_hqa"]

    def rows_of(name: str, data: Path) -> list[dict[str, Any]]:
        rows = read_jsonl(data, required=EVAL_ROW_FIELDS)
        docs = pool_documents(rows, pool)
        return [
            ruler_hqa_instance(
                row,
                list(row_chunks(row, docs, tokenizer, spec["chunk_tokens"])),
                spec["source"],
                spec["prompt"],
            )
            for row in rows
        ]

    return rows_of


# HotpotQA dev's distinct paragraphs, every RULER-HQA sample's documents drawn from them: the
# size of MemAgent's largest released set (eval_66635.json, the whole pool)
DEV_POOL_DOCS = 66_635

BENCHMARK = Benchmark(
    "ruler_hqa",
    score=score,
    output_tokens=fixed_budget(OUTPUT_TOKENS),
    data=eval_set,
    reads_pool=True,
    same_questions=True,  # the filtered dev questions of eval_200, in its order, at every length
    instance_rows=instance_rows,
    instance_settings=instance_settings,
    instance_shapes=instance_shapes,
    sizes=sizes,
    sets=sets,
    evidence=Evidence(pool_questions_file, gold_contexts),
    pool_docs=DEV_POOL_DOCS,
)
PROBE = Benchmark(
    PROBE_BENCHMARK,
    score=score,
    output_tokens=fixed_budget(OUTPUT_TOKENS),
    data=probe_set,
    reads_pool=True,
    sizes=sizes,
    sets=probe_sets,
    chosen_per_system=True,
    shards_as="ruler_hqa",  # split as the RULER-HQA set of its length
    pool_docs=DEV_POOL_DOCS,
)
