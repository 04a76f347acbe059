"""The RAG top-K system kind: retrieval over documents or fixed-size chunks, then direct
generation; on Mem-α's benchmarks each question over its retrieved chunks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from memrepro.agents.driver import Workflow
from memrepro.benchmarks import MEMALPHA_BENCHMARKS, Task, benchmark
from memrepro.data.ruler_hqa import context_pieces
from memrepro.engines.base import ChatEngine, SamplingParams
from memrepro.evaluation import (
    Judge,
    Prepare,
    WorkflowFactory,
    context_questions,
    deferred,
    direct_prompt,
    output_tokens,
    question,
)
from memrepro.systems.base import (
    QUESTION_TOKENS,
    Call,
    Config,
    InstanceShape,
    Settings,
    SystemKind,
    Work,
    context_baseline_settings,
    one_answer,
)


def rag_system(
    task: Task,
    tokenizer: Any,
    pool: Sequence[str] | None,
    retriever: Any,
    top_k: int,
    unit_tokens: int | None,
    max_input_tokens: int,
    max_output_tokens: int | None,
) -> WorkflowFactory:
    """RAG top-K over whole documents (`unit_tokens` None) or `unit_tokens`-token chunks, answered
    by direct generation with the benchmark's prompt (memrepro.baselines.rag)."""
    from memrepro.baselines.rag import document_units, rag, token_units

    budget = output_tokens(task, max_output_tokens)

    def units(row: dict[str, Any]) -> list[str]:
        pieces = context_pieces(row, pool)
        if unit_tokens is None:  # a row that lists its documents (one's own data) by them
            return list(row["documents"]) if "documents" in row else document_units(pieces)
        return token_units(tokenizer, pieces, unit_tokens)

    def start(row: dict[str, Any]) -> Workflow:
        def render(context: str) -> str:
            return direct_prompt(task, row, context)

        return rag(
            question(task, row),
            units(row),
            retriever,
            top_k,
            render,
            tokenizer,
            max_input_tokens,
            budget,
        )

    return lambda row: deferred(start, row)


def workflows(task: Task, s: Settings, tokenizer: Any, pool: list[str] | None) -> WorkflowFactory:
    from memrepro.baselines.rag import make_retriever

    return rag_system(
        task,
        tokenizer,
        pool,
        make_retriever(s["retriever"], **s.get("retriever_options", {})),
        s["top_k"],
        s["unit_tokens"],
        s["max_input_tokens"],
        s["max_output_tokens"],
    )


def questions(s: Settings, engine: ChatEngine, judge: Judge) -> tuple[Prepare, SamplingParams, str]:
    """Each question over its top-k retrieved units of the instance's context."""
    from memrepro.baselines.rag import make_retriever

    retriever = make_retriever(s["retriever"], **s.get("retriever_options", {}))
    budget = output_tokens(Task(s["benchmark"], ""), s["max_output_tokens"])
    prepare = context_questions(engine, s["max_input_tokens"], budget, retriever, s["top_k"])
    return prepare, SamplingParams(**s["sampling"]), s["protocol"]


def expand(name: str, spec: Settings) -> dict[str, Settings]:
    """Every setting of its grid: `<name>.<retriever>-k<K>-<unit>` (unit `doc` = whole
    documents, Table 10; `c<C>` = C-token chunks, Table 11)."""
    units = [("doc", None), *((f"c{c}", c) for c in spec["chunk_tokens"])]
    systems = {}
    for retriever in spec["retrievers"]:
        for k in spec["top_k"]:
            for unit, chunk_tokens in units:
                shown_unit = "" if chunk_tokens is None else f" C={chunk_tokens}"
                systems[f"{name}.{retriever}-k{k}-{unit}"] = {
                    **spec,
                    "retriever": retriever,
                    "top_k": k,
                    "unit": unit,
                    "unit_tokens": chunk_tokens,
                    "display": f"{spec['display']} ({retriever}){shown_unit} K={k}",
                }
    return systems


def runs(system: Settings, name: str) -> bool:
    """A RAG system runs where it retrieves its benchmark's unit: whole documents (Mem-α's
    benchmarks: their chunks), or fixed chunks (LongBench); either on one's own datasets."""
    documents = benchmark(name).retrieves_documents
    return documents is None or (system["unit"] == "doc") == documents


def retriever_options(config: Config, system: Settings) -> Settings:
    """The embedding endpoint for the `openai` retriever (none otherwise, so that the other
    retrievers' jobs do not rerun when it changes)."""
    if system["retriever"] != "openai":
        return {}
    return {"retriever_options": config["evaluation"].get("embedding", {})}


def job_settings(config: Config, system: Settings) -> Settings:
    keys = ("retriever", "top_k", "unit", "unit_tokens", "max_input_tokens", "max_output_tokens")
    return {**{key: system.get(key) for key in keys}, **retriever_options(config, system)}


def instance_settings(config: Config, system: Settings) -> Settings:
    retrieval = {"retriever": system["retriever"], "top_k": system["top_k"]}
    return {
        **context_baseline_settings(config, system),
        **retrieval,
        **retriever_options(config, system),
    }


# Tables 10 and 11: the paper ran RAG on RULER-HQA and LongBench's QA tasks only; a sample reads
# its top-k units, so its cost does not grow with the context and its jobs are not sharded
def calls(settings: Settings, context_tokens: int) -> list[Call]:
    """One call over the top-K units: whole documents (the context's mean document) or chunks."""
    unit = settings["unit_tokens"] or context_tokens / max(settings["length"], 1)
    return one_answer(settings, min(context_tokens, round(settings["top_k"] * unit)))


def hosted_calls(settings: Settings, questions: list[tuple[int, int]]) -> list[tuple[str, Work]]:
    """The `openai` retriever's embedding requests (the others embed nothing hosted): each
    distinct unit of the job's contexts once (RULER-HQA's documents once however many samples
    draw them, `distinct_pool_docs`) and each question, `batch_size` texts a request."""
    from memrepro.baselines.rag import EMBEDDING_BATCH, EMBEDDING_MODEL

    if settings["retriever"] != "openai":
        return []
    options = settings.get("retriever_options") or {}
    pool = benchmark(settings["benchmark"]).pool_docs
    texts = tokens = 0.0
    for count, context in questions:
        texts += count
        tokens += count * QUESTION_TOKENS
        if settings["unit_tokens"] is None and pool is not None:  # whole documents of the pool
            n_docs = max(int(settings["length"]), 1)
            distinct = distinct_pool_docs(pool, n_docs, count)
            texts += distinct
            tokens += distinct * context / n_docs
        else:  # each sample's own units: chunks of unit_tokens, else its one context
            unit = settings["unit_tokens"] or max(context, 1)
            texts += count * math.ceil(context / unit)
            tokens += count * context
    requests = math.ceil(texts / options.get("batch_size", EMBEDDING_BATCH))
    if not requests:
        return []
    return [(options.get("model", EMBEDDING_MODEL), [(requests, [(round(tokens / requests), 0)])])]


def distinct_pool_docs(pool: int, n_docs: int, samples: int) -> float:
    """The expected distinct documents among `samples` samples of `n_docs` each, drawn
    uniformly from a pool of `pool` (each document missing from one sample with probability
    1 - n_docs/pool); the whole pool from a sample as large."""
    if n_docs >= pool:
        return float(pool)
    return pool * (1 - (1 - n_docs / pool) ** samples)


def instance_calls(settings: Settings, instance: InstanceShape) -> list[Call]:
    """Each question over its top-K of the instance's chunks."""
    retrieved = min(instance.context_tokens, settings["top_k"] * instance.chunk_tokens)
    return one_answer(settings, retrieved) * instance.questions


KIND = SystemKind(
    "rag",
    benchmarks=("ruler_hqa", "longbench"),
    allowed=("ruler_hqa", "longbench", *MEMALPHA_BENCHMARKS),
    sharded=False,
    qa_only=True,
    expand=expand,
    runs=runs,
    job_settings=job_settings,
    instance_settings=instance_settings,
    workflows=workflows,
    questions=questions,
    calls=calls,
    instance_calls=instance_calls,
    hosted_calls=hosted_calls,
)
