"""Mem-α rollouts made GRPO training rows (Mem-α's official code).

For each instance, `group_size` memorisation rollouts of the workflow the evaluation runs
(`agents.memalpha.memorize`, each into a fresh memory). Every chunk's generation is one training
row, scored r1 + β·r3 + r2_t + γ·r4_t (`train.memalpha_rewards`): r1 answers the instance's
questions from that rollout's final memory through the frozen QA step (training metric), r4 asks
the judge about every insert and update. The GRPO group of a row is its instance: all chunk rows
of all its rollouts, normalised by the group's std (`group_advantages(..., norm_by_std=True)`).

In the returned `RolloutBatch` every row is its own scored unit (`traj_index[i] == i`), so the
trainer's per-unit advantage is per row; `group_ids` name the instance.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memrepro.agents.driver import Rollout, run_batched
from memrepro.agents.memalpha import (
    ChunkStep,
    MemAlphaConfig,
    answer,
    kept_token_count,
    memorize,
)
from memrepro.agents.structured_memory import StructuredMemory
from memrepro.engines.base import ChatEngine, SamplingParams, prompt_length
from memrepro.evaluation import Judge, MemoryQA
from memrepro.systems.memalpha import memory_qa_runner
from memrepro.train.cpu_trainer import Rollouts, TrainSettings, step_sampling
from memrepro.train.memalpha_rewards import (
    compression_reward,
    content_judge_request,
    content_reward,
    content_verdict,
    judged_content,
    step_rewards,
    tool_call_reward,
)
from memrepro.train.rollout import RolloutBatch
from memrepro.train.validation import validation_summary


@dataclass(frozen=True)
class MemAlphaReward:
    """The reward's weights and its judge (r4: the QA model at T=0.1, 512 tokens, officially)."""

    beta: float  # compression (r3)
    gamma: float  # content (r4)
    judge_sampling: SamplingParams
    judge_max_tokens: int = 512


@dataclass
class RowTerms:
    """Each row's reward terms, kept for the training curves (per row of the batch)."""

    r1: list[float] = field(default_factory=list)
    r2: list[float] = field(default_factory=list)
    r3: list[float] = field(default_factory=list)
    r4: list[float] = field(default_factory=list)
    memory_tokens: list[int] = field(default_factory=list)


@dataclass
class Memorized:
    """One memorisation rollout as scored: its instance, final memory and per-chunk trace."""

    instance: dict[str, Any]  # questions, answers, chunks, task
    memory: StructuredMemory
    trace: list[ChunkStep]
    failed: bool = False
    error: str | None = None


@dataclass(frozen=True)
class RolloutScore:
    """A rollout's reward: one scalar per traced chunk step, and the terms behind it."""

    rewards: list[float]  # r1 + β·r3 + r2_t + γ·r4_t per chunk step
    r1: float
    r2: list[float]
    r3: float
    r4: list[float]
    memory_tokens: int


def score_rollouts(
    qa_engine: ChatEngine,
    rollouts: Sequence[Memorized],
    qa: MemoryQA,
    qa_judge: Judge,
    reward: MemAlphaReward,
) -> list[RolloutScore]:
    """Mem-α's reward of finished rollouts (both trainers): r1 by the frozen QA step on each
    final memory, r4 by the judge on every insert/update, all requests of all rollouts batched
    on `qa_engine`; r2, r3 from the trace and the memory (l_c in the memory's counter, o200k
    officially)."""
    r1 = _correctness(qa_engine, rollouts, qa, qa_judge)
    r4 = _content(qa_engine, [rollout.trace for rollout in rollouts], reward)
    scores = []
    for rollout, correctness, content in zip(rollouts, r1, r4, strict=True):
        memory = rollout.memory
        input_tokens = sum(memory.count_tokens(chunk) for chunk in rollout.instance["chunks"])
        memory_tokens = memory.total_length()
        r3 = compression_reward(memory_tokens, input_tokens)
        r2 = [tool_call_reward(step.results) for step in rollout.trace]
        scores.append(
            RolloutScore(
                rewards=step_rewards(correctness, r3, r2, content, reward.beta, reward.gamma),
                r1=correctness,
                r2=r2,
                r3=r3,
                r4=content,
                memory_tokens=memory_tokens,
            )
        )
    return scores


def training_rows(
    memorized: Sequence[Memorized],
    conversations: Sequence[Rollout],
    scores: Sequence[RolloutScore],
    group_size: int,
    tokenizer: Any,
) -> tuple[RolloutBatch, RowTerms]:
    """Scored rollouts (`memorize_and_score`'s, `group_size` per instance) as one training row
    per chunk step, grouped by instance, on the tokens the step kept (`kept_token_count`: all of
    them unless the response was cut). A failed rollout has r1 = 0 and keeps its answered
    steps; a step with nothing to train on is left out."""
    batch, terms = RolloutBatch(), RowTerms()
    for t, (m, rollout, score) in enumerate(zip(memorized, conversations, scores, strict=True)):
        q = t // group_size
        for step, conversation in enumerate(rollout.conversations[: len(m.trace)]):
            completion = conversation.completion
            ids = list(completion.response_ids)
            ids = ids[: kept_token_count(tokenizer, ids, m.trace[step])]
            if not ids:
                batch.n_empty += 1
                continue
            batch.prompt_ids.append(list(completion.prompt_ids))
            batch.response_ids.append(ids)
            batch.traj_index.append(len(batch.rewards))
            batch.is_final.append(step == len(m.instance["chunks"]) - 1)
            batch.rewards.append(score.rewards[step])
            batch.group_ids.append(q)
            batch.failed.append(rollout.failed)
            terms.r1.append(score.r1)
            terms.r2.append(score.r2[step])
            terms.r3.append(score.r3)
            terms.r4.append(score.r4[step])
            terms.memory_tokens.append(score.memory_tokens)
    return batch, terms


def memorize_and_score(
    policy: ChatEngine,
    qa_engine: ChatEngine,
    rows: Sequence[dict[str, Any]],
    group_size: int,
    agent: MemAlphaConfig,
    sampling: SamplingParams,
    new_memory: Callable[[int, int], StructuredMemory],
    qa: MemoryQA,
    qa_judge: Judge,
    reward: MemAlphaReward,
) -> tuple[list[Memorized], list[Rollout], list[RolloutScore]]:
    """`memorize_rollouts`, and their rewards (`score_rollouts`)."""
    memorized, conversations = memorize_rollouts(
        policy, rows, group_size, agent, sampling, new_memory
    )
    return memorized, conversations, score_rollouts(qa_engine, memorized, qa, qa_judge, reward)


def memorize_rollouts(
    policy: ChatEngine,
    rows: Sequence[dict[str, Any]],
    group_size: int,
    agent: MemAlphaConfig,
    sampling: SamplingParams,
    new_memory: Callable[[int, int], StructuredMemory],
) -> tuple[list[Memorized], list[Rollout]]:
    """`group_size` memorisation rollouts of each instance on `policy` (rollout g of instance
    q into `new_memory(q, g)`, prompts capped as in training) and their conversations,
    rollouts of an instance adjacent."""
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")
    memorized = [
        Memorized(row, new_memory(q, g), [])
        for q, row in enumerate(rows)
        for g in range(group_size)
    ]

    measure = prompt_length(policy.tokenizer)  # the training prompt cap's measure
    workflows = [
        memorize(m.instance["chunks"], m.memory, agent, m.trace, measure) for m in memorized
    ]
    conversations = run_batched(workflows, policy, sampling)
    for m, rollout in zip(memorized, conversations, strict=True):
        m.failed = rollout.failed
        m.error = rollout.final.completion.error if rollout.failed else None
    return memorized, conversations


def _correctness(
    qa_engine: ChatEngine, rollouts: Sequence[Memorized], qa: MemoryQA, qa_judge: Judge
) -> list[float]:
    """r1 per rollout: its questions answered from its final memory by the QA step, scored by
    the training metric (LongMemEval's by the judge); 0 for a failed rollout."""
    instances = [
        {
            **m.instance,
            "num_tokens": m.instance.get("num_tokens", 0),
            "memorized": {"memory": m.memory.snapshot(), "failed": m.failed, "error": m.error},
        }
        for m in rollouts
    ]
    run = memory_qa_runner(qa_engine, qa, qa_judge, protocol="train")
    return [record["score"] for record in run(instances)]


def _content(
    judge_engine: ChatEngine, traces: Sequence[Sequence[ChunkStep]], reward: MemAlphaReward
) -> list[list[float]]:
    """r4 per rollout and step: every insert/update judged in one batch, other calls 0."""
    keys, requests = [], []
    for t, trace in enumerate(traces):
        for step, chunk in enumerate(trace):
            for c, call in enumerate(chunk.calls):
                judged = judged_content(call)
                if judged is not None:
                    keys.append((t, step, c))
                    requests.append(content_judge_request(*judged, reward.judge_max_tokens))
    replies = run_batched([answer(r) for r in requests], judge_engine, reward.judge_sampling)
    verdicts = {  # a failed judge request scores 0, as the official batch endpoint's "Error:"
        key: 0.0 if reply.failed else content_verdict(reply.answer)
        for key, reply in zip(keys, replies, strict=True)
    }
    return [
        [
            content_reward([verdicts.get((t, step, c)) for c in range(len(chunk.calls))])
            for step, chunk in enumerate(trace)
        ]
        for t, trace in enumerate(traces)
    ]


def memalpha_rollouts(
    settings: TrainSettings,
    agent: MemAlphaConfig,
    memory_counter: Callable[[str], int],
    qa: MemoryQA,
    qa_judge: Judge,
    reward: MemAlphaReward,
    disabled_memory: frozenset[str] = frozenset(),
    qa_engine: ChatEngine | None = None,
) -> Rollouts:
    """The CPU reference trainer's Mem-α step (`settings` with `norm_adv_by_std`): rollouts on
    the current policy, the QA step and the judge on `qa_engine` (default: the frozen reference
    model, standing in for Qwen3-32B), one fresh seeded memory per rollout; the step's mean
    reward terms as extra metrics."""

    def collect(
        step: int, rows: Sequence[dict[str, Any]], engine: Any, reference: Any
    ) -> tuple[RolloutBatch, dict[str, float]]:
        def new_memory(instance: int, rollout: int) -> StructuredMemory:
            seed = ((settings.seed * 1_000_003 + step) * 10_007 + instance) * 101 + rollout
            return StructuredMemory(memory_counter, disabled_memory, seed=seed)

        scored = memorize_and_score(
            engine,
            qa_engine or reference,
            rows,
            settings.group_size,
            agent,
            step_sampling(step, settings),
            new_memory,
            qa,
            qa_judge,
            reward,
        )
        batch, terms = training_rows(*scored, settings.group_size, engine.tokenizer)
        return batch, term_means(terms)

    return collect


def memalpha_validation(
    rows: Sequence[dict[str, Any]],
    n: int,
    sampling: SamplingParams,
    agent: MemAlphaConfig,
    memory_counter: Callable[[str], int],
    qa: MemoryQA,
    qa_judge: Judge,
    seed: int,
    qa_engine: ChatEngine | None = None,
) -> Callable[[ChatEngine, ChatEngine], dict[str, float]]:
    """The CPU reference trainer's Mem-α validation (the official `_validate`): `n` rollouts of
    each validation instance on the current policy (officially greedy), scored by r1 alone on
    the QA step (`qa_engine`, default the frozen reference); the same memory seeds every time."""

    def score(engine: ChatEngine, reference: ChatEngine) -> dict[str, float]:
        def new_memory(instance: int, rollout: int) -> StructuredMemory:
            return StructuredMemory(memory_counter, seed=(seed * 10_007 + instance) * 101 + rollout)

        memorized, _ = memorize_rollouts(engine, rows, n, agent, sampling, new_memory)
        r1 = _correctness(qa_engine or reference, memorized, qa, qa_judge)
        return validation_scores([m.instance["task"] for m in memorized], r1)

    return score


def validation_scores(sources: Sequence[str], r1: Sequence[float]) -> dict[str, float]:
    """The mean r1 of each data source's rollouts, summarised as verl's val-core scores are
    (`validation_summary`)."""
    by_source: dict[str, list[float]] = {}
    for source, score in zip(sources, r1, strict=True):
        by_source.setdefault(source, []).append(score)
    return validation_summary({s: sum(v) / len(v) for s, v in by_source.items()})


def term_means(terms: RowTerms) -> dict[str, float]:
    """Each reward term's mean over a step's rows (the training curves), and the memory size."""
    means = {
        f"{name}_mean": sum(values) / len(values) if values else 0.0
        for name, values in (("r1", terms.r1), ("r2", terms.r2), ("r3", terms.r3), ("r4", terms.r4))
    }
    sizes = terms.memory_tokens
    return {**means, "memory_tokens_mean": sum(sizes) / len(sizes) if sizes else 0.0}


def check_instance(row: dict[str, Any], position: int) -> None:
    """A Mem-α training row: chunks and questions with their answers (the loader's rows)."""
    missing = [key for key in ("task", "chunks", "questions", "answers") if key not in row]
    if missing:
        raise ValueError(f"training row {position}: missing {', '.join(missing)}")
    if len(row["questions"]) != len(row["answers"]) or not row["chunks"]:
        raise ValueError(f"training row {position}: no chunks, or questions without answers")
