"""Held-out accuracy of a policy: the MemAgent workflow with the training prompt, boxed verifier.

Evaluation runs what training rolls out (the training loader's chunking, the "boxed" final
prompt, the strict `\\boxed{}` verifier: the official one unless `verifier="extended"`), on
fresh rows, in two modes:
- sampled: `samples` rollouts per question at the rollout temperature — the accuracy of the
  stochastic policy that RL optimises;
- greedy: one rollout per question at temperature 0 — the policy's most likely behaviour.
Each answer is also classified, to say what RL changed: `correct`, `distractor` (the value of
another key's fact in the context: a distractor was written into memory), `other` (a wrong
value that is no distractor's: a copy error) or `no_box` (no `\\boxed{}`: a format error).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from memrepro.agents.chunking import truncated_chunks
from memrepro.agents.driver import run_batched
from memrepro.agents.memagent import MemAgentConfig, memagent
from memrepro.engines.base import ChatEngine, SamplingParams
from memrepro.engines.hf import HFEngine
from memrepro.scoring.verifier import DEFAULT_VERIFIER, Verifier, boxed_content, boxed_reward
from memrepro.toy.policy import ScriptedEngine
from memrepro.toy.task import parse_facts

OUTCOMES = ("correct", "distractor", "other", "no_box")


def classify(answer: str, row: dict[str, Any], verifier: Verifier = DEFAULT_VERIFIER) -> str:
    """One of OUTCOMES for a final answer to a toy row, under `verifier`."""
    if boxed_reward(answer, row["answers"], verifier):
        return "correct"
    boxed = boxed_content(answer, verifier)
    if boxed is None:
        return "no_box"
    distractors = {value for _, value in parse_facts(row["context"])} - set(row["answers"])
    return "distractor" if boxed.strip() in distractors else "other"


def rollout_outcomes(
    engine: ChatEngine,
    rows: Sequence[dict[str, Any]],
    agent: MemAgentConfig,
    max_chunks: int,
    sampling: SamplingParams,
    samples: int,
    verifier: Verifier = DEFAULT_VERIFIER,
) -> dict[str, Any]:
    """{"accuracy", "outcomes": {outcome: fraction}} over `samples` rollouts of every row."""
    if agent.final_prompt != "boxed":
        raise ValueError("the toy task is scored with the boxed verifier: final_prompt 'boxed'")
    workflows = []
    for row in rows:
        chunks = truncated_chunks(engine.tokenizer, row["context"], agent.chunk_tokens, max_chunks)
        workflows += [memagent(row["input"], chunks, agent) for _ in range(samples)]
    rollouts = run_batched(workflows, engine, sampling)
    counts = Counter(
        "no_box" if rollout.failed else classify(rollout.answer, rows[i // samples], verifier)
        for i, rollout in enumerate(rollouts)
    )
    total = len(rollouts)
    return {
        "accuracy": counts["correct"] / total,
        "outcomes": {outcome: counts[outcome] / total for outcome in OUTCOMES},
    }


def evaluate(
    model: Any,
    tokenizer: Any,
    rows: Sequence[dict[str, Any]],
    agent: MemAgentConfig,
    max_chunks: int,
    *,
    temperature: float,
    top_p: float,
    samples: int,
    seed: int,
    batch_size: int,
    verifier: Verifier = DEFAULT_VERIFIER,
) -> dict[str, dict[str, Any]]:
    """{"sampled": ..., "greedy": ...} outcomes of the model's policy on `rows`."""
    engine = HFEngine(model, tokenizer, batch_size=batch_size)
    sampled = SamplingParams(temperature=temperature, top_p=top_p, seed=seed)
    greedy = SamplingParams(temperature=0.0, top_p=1.0, seed=seed)
    return {
        "sampled": rollout_outcomes(engine, rows, agent, max_chunks, sampled, samples, verifier),
        "greedy": rollout_outcomes(engine, rows, agent, max_chunks, greedy, 1, verifier),
    }


def expert_accuracy(
    tokenizer: Any,
    rows: Sequence[dict[str, Any]],
    agent: MemAgentConfig,
    max_chunks: int,
    eps: float,
    noise: str,
    seed: int,
) -> float:
    """The scripted (noisy) expert's accuracy on `rows`: what perfect imitation would reach."""
    engine = ScriptedEngine(tokenizer, eps=eps, seed=seed, noise=noise)
    return rollout_outcomes(engine, rows, agent, max_chunks, SamplingParams(), 1)["accuracy"]
