"""The MEM1 system kind: a memorize job that keeps one summary, which the QA model then reads
as the context of a long-context prompt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memrepro.benchmarks import INSTANCE_BENCHMARKS, MEMALPHA_BENCHMARKS
from memrepro.engines.base import ChatEngine, SamplingParams
from memrepro.evaluation import (
    Judge,
    Prepare,
    Prepared,
    WaveRunner,
    context_question,
    counts,
    drive,
)
from memrepro.systems.base import (
    QUESTION_TOKENS,
    Call,
    Config,
    InstanceShape,
    Settings,
    SystemKind,
    baseline_protocol,
    one_answer,
)


def mem1_memorize_runner(
    engine: ChatEngine, sampling: SamplingParams, max_tokens: int
) -> WaveRunner:
    """MEM1 on a Mem-α benchmark (Mem-α's official code): its summary loop over each
    instance's chunks with the task prompt as its task; one record per instance with the final
    memory (`<think>…</think>`, "" if no step wrote one)."""
    from memrepro.agents.mem1 import mem1

    def run(wave: list[dict[str, Any]]) -> list[dict[str, Any]]:
        loops = [mem1(row["prompt"], row["chunks"], max_tokens) for row in wave]
        rollouts = drive(loops, engine, sampling)
        return [
            {
                "index": row["index"],
                "memory": rollout.answer,
                "n_calls": len(rollout.conversations),
                "failed": rollout.failed,
                "error": rollout.final.completion.error if rollout.failed else None,
            }
            for row, rollout in zip(wave, rollouts, strict=True)
        ]

    return run


def memory_context_questions(engine: ChatEngine, cap: int, max_tokens: int) -> Prepare:
    """MEM1 after its memorize job (long_context_eval.py --model mem1): each question asked
    with the final memory, tags and all, as the whole context of the long-context prompt;
    "Mem." is that memory in the QA model's tokens."""
    from memrepro.data.tokens import count_tokens

    def one(row: dict[str, Any]) -> Prepared:
        memory = row["memorized"]["memory"]
        questions = tuple(
            context_question(engine.tokenizer, row, memory, q, cap, max_tokens)
            for q in row["questions"]
        )
        (tokens,) = count_tokens(engine.tokenizer, [memory])
        return Prepared(questions, tokens, counts=counts(row))

    return one


def memorizer(
    s: Settings, engine: ChatEngine, sampling: SamplingParams, counter: Path | None
) -> WaveRunner:
    return mem1_memorize_runner(engine, sampling, s["memory_tokens"])


def questions(s: Settings, engine: ChatEngine, judge: Judge) -> tuple[Prepare, SamplingParams, str]:
    """Its memory is the context of the long-context prompt."""
    prepare = memory_context_questions(engine, s["max_input_tokens"], s["max_output_tokens"])
    return prepare, SamplingParams(**s["sampling"]), s["protocol"]


def instance_settings(config: Config, system: Settings) -> Settings:
    """The QA model answers with the memory as its context, at the baselines' sampling."""
    baselines = config["memalpha"]["baselines"]
    budgets = {key: baselines["mem1"][key] for key in ("max_input_tokens", "max_output_tokens")}
    return {**baseline_protocol(config), "sampling": baselines["sampling"], **budgets}


def memorize_settings(config: Config, system: Settings) -> Settings:
    mem1 = config["memalpha"]["baselines"]["mem1"]
    return {"sampling": mem1["sampling"], "memory_tokens": mem1["memory_tokens"]}


def memorize_calls(settings: Settings, instance: InstanceShape) -> list[Call]:
    """Its summary loop: per chunk the task, the summary so far and the chunk in, the new
    summary out, at its budget."""
    memory = settings["memory_tokens"]
    return [(QUESTION_TOKENS + instance.chunk_tokens + memory, memory)] * instance.chunks


def instance_calls(settings: Settings, instance: InstanceShape) -> list[Call]:
    """Each question over the final summary (its memorize job's budget) as the context."""
    return one_answer(settings, settings["memorized"]["memory_tokens"]) * instance.questions


# a baseline of Mem-α's framework: one memorize job reads each instance whole
KIND = SystemKind(
    "mem1",
    memory=True,
    benchmarks=MEMALPHA_BENCHMARKS,
    allowed=INSTANCE_BENCHMARKS,
    instances_only=True,
    sharded=False,
    instance_settings=instance_settings,
    memorize_settings=memorize_settings,
    memorizer=memorizer,
    qa_model_answers=True,
    questions=questions,
    memorize_calls=memorize_calls,
    instance_calls=instance_calls,
)
