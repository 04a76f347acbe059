"""Turn MemAgent rollouts into Multi-Conv training rows (MemAgent's official code).

For each question, `group_size` rollouts of the same workflow the evaluation runs (with the
training prompt: final answer in `\\boxed{}`). Every engine call of a rollout is one training
conversation; the rollout's reward is the boxed verifier on its final answer
(`scoring.verifier.training_reward`; the official verifier unless `verifier="extended"`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memrepro.agents.chunking import truncated_chunks
from memrepro.agents.driver import Rollout, run_batched
from memrepro.agents.memagent import MemAgentConfig, memagent
from memrepro.engines.base import ChatEngine, SamplingParams
from memrepro.scoring.verifier import DEFAULT_VERIFIER, Verifier, check_verifier, training_reward


@dataclass
class RolloutBatch:
    """Conversations (training rows) and trajectories (rollouts) of one training step.

    Conversations are in the official sync order (turn-major: every trajectory's first memory
    update, then every second one, ..., then all final answers), so contiguous mini-batches
    split the step like the official trainer. A conversation whose response is empty (a failed
    request, or an engine returning nothing) has no token to train on and is left out; its
    trajectory keeps its reward and its other conversations.
    """

    prompt_ids: list[list[int]] = field(default_factory=list)  # per conversation
    response_ids: list[list[int]] = field(default_factory=list)  # per conversation
    traj_index: list[int] = field(default_factory=list)  # per conversation
    is_final: list[bool] = field(default_factory=list)  # per conversation: the answer turn
    rewards: list[float] = field(default_factory=list)  # per trajectory
    group_ids: list[int] = field(default_factory=list)  # per trajectory: question position
    failed: list[bool] = field(default_factory=list)  # per trajectory: a request failed
    n_empty: int = 0  # conversations left out for an empty response

    @property
    def n_conversations(self) -> int:
        return len(self.response_ids)

    @property
    def n_trajectories(self) -> int:
        return len(self.rewards)


def collect_rollouts(
    engine: ChatEngine,
    rows: Sequence[dict[str, Any]],
    group_size: int,
    agent: MemAgentConfig,
    max_chunks: int,
    sampling: SamplingParams,
    on_step: Callable[[int, int], None] | None = None,
    verifier: Verifier = DEFAULT_VERIFIER,
) -> RolloutBatch:
    """Run `group_size` MemAgent rollouts per row (rows: {input, answers, context}) in one batch.

    Trajectory `q * group_size + g` is rollout g of row q; its group id is q. A failed rollout
    gets reward 0; the others the `verifier` ("official" | "extended") training reward.
    """
    check_verifier(verifier)
    if agent.final_prompt != "boxed":
        raise ValueError(
            f"training scores the final answer's \\boxed{{}}: final_prompt must be 'boxed', "
            f"got {agent.final_prompt!r}"
        )
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")
    questions = [parse_row(row, position) for position, row in enumerate(rows)]
    chunks = [
        truncated_chunks(engine.tokenizer, context, agent.chunk_tokens, max_chunks)
        for _, _, context in questions
    ]
    workflows = [
        memagent(question, chunks[q], agent)
        for q, (question, _, _) in enumerate(questions)
        for _ in range(group_size)
    ]
    rollouts = run_batched(workflows, engine, sampling, on_step=on_step)
    batch = RolloutBatch()
    turns: list[tuple[bool, int, int, list[int], list[int]]] = []
    for traj, rollout in enumerate(rollouts):
        q = traj // group_size
        batch.group_ids.append(q)
        batch.failed.append(rollout.failed)
        source = rows[q].get("data_source")
        batch.rewards.append(_reward(rollout, questions[q][1], source, verifier))
        n_chunks = len(chunks[q])
        for turn, conversation in enumerate(rollout.conversations):
            completion = conversation.completion
            if not completion.response_ids:
                batch.n_empty += 1
                continue
            if not completion.prompt_ids:
                raise ValueError(
                    f"trajectory {traj} turn {turn}: the engine returned no prompt token ids; "
                    "training needs an engine that reports them (hf, vllm)"
                )
            turns.append(
                (turn == n_chunks, turn, traj, completion.prompt_ids, completion.response_ids)
            )
    # official sync order: memory turns by turn then trajectory, then every final answer
    for is_final, _, traj, prompt, response in sorted(turns, key=_turn_major):
        batch.prompt_ids.append(list(prompt))
        batch.response_ids.append(list(response))
        batch.traj_index.append(traj)
        batch.is_final.append(is_final)
    return batch


def _turn_major(turn: tuple[bool, int, int, list[int], list[int]]) -> tuple[bool, int, int]:
    is_final, position, traj = turn[:3]
    return is_final, 0 if is_final else position, traj


def _reward(
    rollout: Rollout, answers: list[str], data_source: str | None, verifier: Verifier
) -> float:
    if rollout.failed:
        return 0.0
    return training_reward(rollout.answer, answers, data_source, verifier)


def parse_row(row: dict[str, Any], position: int) -> tuple[str, list[str], str]:
    """(question, answers, context) of a training row, or a clear error naming the row."""
    where = f"training row {position} (index {row.get('index')!r})"
    if not isinstance(row.get("input"), str):
        raise ValueError(f"{where}: 'input' (the question) must be a string")
    answers = row.get("answers")
    if not isinstance(answers, list) or not answers or not all(isinstance(a, str) for a in answers):
        raise ValueError(f"{where}: 'answers' must be a non-empty list of strings")
    if not isinstance(row.get("context"), str):
        raise ValueError(
            f"{where}: 'context' must be the text (rows holding only 'doc_ids' are evaluation "
            "rows above store_ids_above documents; training contexts are stored as text)"
        )
    return row["input"], answers, row["context"]
