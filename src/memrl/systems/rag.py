"""The RAG top-K system kind: retrieval over documents or fixed-size chunks, then direct
generation; on Mem-α's benchmarks each question over its retrieved chunks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memrl.agents.driver import Workflow
from memrl.data.ruler_hqa import context_pieces
from memrl.engines.base import ChatEngine, SamplingParams
from memrl.evaluation import (
    Judge,
    Prepare,
    Task,
    WorkflowFactory,
    context_questions,
    deferred,
    direct_prompt,
    output_tokens,
    question,
)
from memrl.systems.base import Settings, SystemKind


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
    by direct generation with the benchmark's prompt (memrl.baselines.rag)."""
    from memrl.baselines.rag import document_units, rag, token_units

    budget = output_tokens(task, max_output_tokens)

    def units(row: dict[str, Any]) -> list[str]:
        pieces = context_pieces(row, pool)
        if unit_tokens is None:
            return document_units(pieces)
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
    from memrl.baselines.rag import make_retriever

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
    from memrl.baselines.rag import make_retriever

    retriever = make_retriever(s["retriever"], **s.get("retriever_options", {}))
    budget = output_tokens(Task(s["benchmark"], ""), s["max_output_tokens"])
    prepare = context_questions(engine, s["max_input_tokens"], budget, retriever, s["top_k"])
    return prepare, SamplingParams(**s["sampling"]), s["protocol"]


KIND = SystemKind("rag", workflows=workflows, questions=questions)
