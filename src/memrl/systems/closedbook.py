"""The closed-book control: the question alone, in the benchmark's own direct-generation prompt with
an empty context (on Mem-α's benchmarks, each question in the official long-context prompt over no
context). It reads nothing, so its score is what the model knows without the document: the level a
memory system's score is read against (a cell where it already reaches the agent's score was
answerable without the context).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memrl.benchmarks import Task
from memrl.engines.base import ChatEngine, SamplingParams
from memrl.evaluation import (
    Judge,
    Prepare,
    Prepared,
    WorkflowFactory,
    context_question,
    direct_prompt,
    output_tokens,
)
from memrl.systems.base import (
    Call,
    Config,
    Control,
    InstanceShape,
    Settings,
    SystemKind,
    context_baseline_settings,
    one_answer,
)

NO_CONTEXT = ""


def workflows(
    task: Task, s: Settings, tokenizer: Any, pool: Sequence[str] | None
) -> WorkflowFactory:
    from memrl.baselines.longcontext import longcontext

    budget = output_tokens(task, s["max_output_tokens"])
    prompt = s["max_input_tokens"]
    return lambda row: longcontext(direct_prompt(task, row, NO_CONTEXT), tokenizer, prompt, budget)


def questions(s: Settings, engine: ChatEngine, judge: Judge) -> tuple[Prepare, SamplingParams, str]:
    """Each question of an instance over no context; its memory is none (0 tokens)."""
    budget = output_tokens(Task(s["benchmark"], ""), s["max_output_tokens"])
    cap, tokenizer = s["max_input_tokens"], engine.tokenizer

    def prepare(row: dict[str, Any]) -> Prepared:
        asked = (
            context_question(tokenizer, row, NO_CONTEXT, question, cap, budget)
            for question in row["questions"]
        )
        return Prepared(tuple(asked), 0)

    return prepare, SamplingParams(**s["sampling"]), s["protocol"]


def job_settings(config: Config, system: Settings) -> Settings:
    return {key: system[key] for key in ("max_input_tokens", "max_output_tokens")}


def calls(settings: Settings, context_tokens: int) -> list[Call]:
    """One answer over the question alone, whatever the context's length."""
    return one_answer(settings, 0)


def instance_calls(settings: Settings, instance: InstanceShape) -> list[Call]:
    return one_answer(settings, 0) * instance.questions


KIND = SystemKind(
    "closedbook",
    qa_only=True,  # a summary of a document it never reads says nothing
    sharded=False,  # a question's prompt, whatever the length: one job a length
    control=Control(
        "closed-book",
        above="memory adds",
        below="closed-book higher",
        reached="answerable without the context",
    ),
    job_settings=job_settings,
    instance_settings=context_baseline_settings,
    workflows=workflows,
    questions=questions,
    calls=calls,
    instance_calls=instance_calls,
)
