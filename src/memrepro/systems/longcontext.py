"""The long-context system kind: direct generation over the (middle-truncated) context; on
Mem-α's benchmarks each question over the instance's context cut to fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memrepro.agents.driver import Workflow
from memrepro.benchmarks import Task
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
)
from memrepro.systems.base import (
    Config,
    Settings,
    SystemKind,
    answers_over_context,
    context_baseline_settings,
    one_answer,
)


def longcontext_system(
    task: Task,
    tokenizer: Any,
    pool: Sequence[str] | None,
    max_input_tokens: int,
    max_output_tokens: int | None,
) -> WorkflowFactory:
    from memrepro.baselines.longcontext import longcontext

    budget = output_tokens(task, max_output_tokens)

    def start(row: dict[str, Any]) -> Workflow:
        context = "".join(context_pieces(row, pool))
        return longcontext(direct_prompt(task, row, context), tokenizer, max_input_tokens, budget)

    return lambda row: deferred(start, row)


def workflows(task: Task, s: Settings, tokenizer: Any, pool: list[str] | None) -> WorkflowFactory:
    return longcontext_system(task, tokenizer, pool, s["max_input_tokens"], s["max_output_tokens"])


def questions(s: Settings, engine: ChatEngine, judge: Judge) -> tuple[Prepare, SamplingParams, str]:
    """Each question over the instance's context, cut from the left to fit."""
    budget = output_tokens(Task(s["benchmark"], ""), s["max_output_tokens"])
    prepare = context_questions(engine, s["max_input_tokens"], budget, None, 0)
    return prepare, SamplingParams(**s["sampling"]), s["protocol"]


def job_settings(config: Config, system: Settings) -> Settings:
    keys = ("max_input_tokens", "max_output_tokens", "context_extension")
    return {key: system.get(key) for key in keys}


KIND = SystemKind(
    "longcontext",
    job_settings=job_settings,
    instance_settings=context_baseline_settings,
    workflows=workflows,
    questions=questions,
    calls=one_answer,  # over the whole context, middle-truncated
    instance_calls=answers_over_context,  # cut from the left
)
