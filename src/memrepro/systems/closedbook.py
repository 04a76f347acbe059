"""The closed-book control: the question alone. Its score is what the model knows without the
document: the level a memory system's score is read against. A cell where it already reaches the
agent's score was answerable without the context.

Its `prompt` on MemAgent's benchmarks:
- `filter`: MemAgent's own "answerable without context" filter (memrepro.train.filter): the
  question, then "Your final answer in \\boxed{}.", read in `\\boxed{}`;
- `direct` (the default): the benchmark's direct-generation prompt over an empty context.

On Mem-α's benchmarks each question goes in the official long-context prompt over no context.
It reads no context, so on RULER-HQA, whose lengths ask the same questions, it runs once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memrepro.agents.memagent import NO_CONTEXT_PROMPT
from memrepro.benchmarks import Task
from memrepro.engines.base import ChatEngine, SamplingParams
from memrepro.evaluation import (
    Judge,
    Prepare,
    Prepared,
    WorkflowFactory,
    context_question,
    direct_prompt,
    output_tokens,
    question,
)
from memrepro.systems.base import (
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
# its `prompt` (the benchmark's own, or MemAgent's filter's) and where each asks the answer
ANSWER_FORMATS = {"direct": "answer_is", "filter": "boxed"}


def prompt_text(task: Task, row: dict[str, Any], prompt: str) -> str:
    """The whole prompt of one question under `prompt` (a key of ANSWER_FORMATS)."""
    if prompt == "filter":
        return NO_CONTEXT_PROMPT.format(question=question(task, row))
    return direct_prompt(task, row, NO_CONTEXT)


def workflows(
    task: Task, s: Settings, tokenizer: Any, pool: Sequence[str] | None
) -> WorkflowFactory:
    from memrepro.baselines.longcontext import longcontext

    budget = output_tokens(task, s["max_output_tokens"])
    cap, prompt = s["max_input_tokens"], s["prompt"]
    return lambda row: longcontext(prompt_text(task, row, prompt), tokenizer, cap, budget)


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
    prompt = system.get("prompt", "direct")
    return {
        **{key: system[key] for key in ("max_input_tokens", "max_output_tokens")},
        "prompt": prompt,
        "answer_format": ANSWER_FORMATS[prompt],
    }


def calls(settings: Settings, context_tokens: int) -> list[Call]:
    """One answer over the question alone, whatever the context's length."""
    return one_answer(settings, 0)


def instance_calls(settings: Settings, instance: InstanceShape) -> list[Call]:
    return one_answer(settings, 0) * instance.questions


KIND = SystemKind(
    "closedbook",
    qa_only=True,  # a summary of a document it never reads says nothing
    sharded=False,  # a question's prompt, whatever the length: one job
    reads_context=False,
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
