"""MemAgent as a verl 0.9.1 agent loop: one training row per conversation, final answer last.

The loop drives the same `memagent()` workflow as evaluation and the CPU trainer (final prompt
"boxed"): every request the workflow yields becomes one fresh-context generate call on verl's
rollout servers and one `AgentLoopOutput`. verl's v1 trainer (`trainer.use_v1=True`, the 0.9.1
default) stores each output as its own row `{uid}_{session_id}_{i}`, copies the final row's
reward onto the others, and broadcasts the GRPO advantage of the final row to every row of the
session (`compute_advantage_for_multi_trajectories`).

Decisions (verl would otherwise fail silently):
- The loop scores the final answer itself, with the reward file's `compute_score`, and sets the
  final output's `reward_score`; verl then skips its own reward call and copies the score to the
  session's other rows. verl 0.9.1's reward managers decode the last output of a list through
  `attention_mask[-response_length:]` of right-padded [prompt | response] rows, which is the
  answer only when the final row is the session's longest; MemAgent's final prompt (no chunk) is
  its shortest, so they would score an empty or cut answer (tests/verl/test_agent_loop.py shows
  it).
- An empty final response (no token at all; vLLM returns at least the EOS token unless a request
  was cut off) becomes the single token EOS, masked in. verl reads a session's advantage at the
  first unmasked token of its final row, so an empty row would zero the advantage of every memory
  turn of the session; with EOS the turns keep A_i = R_i - mean (an empty answer scores 0), and the
  policy is pushed away from answering nothing. Its rollout log-prob is recorded as 0.0.
- An empty memory response is dropped, as the CPU trainer drops it (no token to train on).
- An aborted request, a prompt longer than `rollout.prompt_length` (verl would left-truncate it,
  cutting off the instructions) and a turn budget above `rollout.response_length` raise: verl
  logs the error and evicts the question's group (`training/rollout_failure/*`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import (
    AgentLoopBase,
    AgentLoopMetrics,
    AgentLoopOutput,
)

from memrl.agents.chunking import truncated_chunks
from memrl.agents.driver import Workflow
from memrl.agents.memagent import MemAgentConfig, memagent
from memrl.engines.base import ChatRequest, Completion
from memrl.verl.dataset import load_context
from memrl.verl.reward import compute_score

TASK_KEYS = (
    "index",
    "question",
    "context_id",
    "context_store",
    "max_chunks",
    "chunk_tokens",
    "memory_tokens",
    "final_tokens",
)


@dataclass(frozen=True)
class Task:
    """One training row's question, document reference and budgets (its `extra_info`)."""

    index: int
    question: str
    context_id: str
    context_store: str
    max_chunks: int
    agent: MemAgentConfig


def parse_task(extra_info: Mapping[str, Any] | None) -> Task:
    """The Task of a row written by `memrl.verl.dataset.write_verl_dataset`."""
    info = dict(extra_info or {})
    missing = [key for key in TASK_KEYS if key not in info]
    if missing:
        raise KeyError(
            f"row extra_info lacks {missing} (index {info.get('index')!r}): write the rows with "
            "memrl.verl.dataset.write_verl_dataset"
        )
    return Task(
        index=int(info["index"]),
        question=str(info["question"]),
        context_id=str(info["context_id"]),
        context_store=str(info["context_store"]),
        max_chunks=int(info["max_chunks"]),
        agent=MemAgentConfig(
            chunk_tokens=int(info["chunk_tokens"]),
            memory_tokens=int(info["memory_tokens"]),
            final_tokens=int(info["final_tokens"]),
            final_prompt="boxed",
        ),
    )


@dataclass
class Turn:
    """One conversation as generated: its tokens and what the server reported."""

    prompt_ids: list[int]
    response_ids: list[int]
    log_probs: list[float] | None
    seconds: float
    num_preempted: int = -1
    extra_fields: dict[str, Any] = field(default_factory=dict)


class MemAgentLoop(AgentLoopBase):
    """`run` returns one AgentLoopOutput per conversation: memory updates, then the answer."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.config.trainer.get("use_v1", True):
            raise ValueError(
                "MemAgentLoop returns one output per conversation, which only verl's v1 trainer "
                "accepts: set trainer.use_v1=True"
            )
        self.prompt_length = int(self.rollout_config.prompt_length)
        self.response_length = int(self.rollout_config.response_length)

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> list[AgentLoopOutput]:
        task = parse_task(kwargs.get("extra_info"))
        session = f"uid {kwargs.get('uid')}, session {kwargs.get('session_id')}"
        where = f"memagent row {task.index} ({session})"
        for name in ("memory_tokens", "final_tokens"):
            budget = getattr(task.agent, name)
            if budget > self.response_length:
                raise ValueError(
                    f"{where}: {name}={budget} exceeds actor_rollout_ref.rollout.response_length="
                    f"{self.response_length}"
                )
        chunks = await self.loop.run_in_executor(None, self._chunks, task)
        workflow = memagent(task.question, chunks, task.agent)
        turns, answer = await self._converse(workflow, sampling_params, where)
        outputs = self._outputs(turns, len(chunks))
        ground_truth = kwargs["reward_model"]["ground_truth"]
        score = compute_score(kwargs["data_source"], answer, ground_truth, kwargs["extra_info"])
        outputs[-1].reward_score = score
        outputs[-1].extra_fields["reward_extra_info"] = {"acc": score}  # as verl logs a float
        return outputs

    async def _converse(
        self, workflow: Workflow, sampling_params: dict[str, Any], where: str
    ) -> tuple[list[Turn], str]:
        """Answer each request of the workflow with one generate call; its turns and answer."""
        request_id = uuid4().hex  # one per session: its calls stick to one server (prefix cache)
        turns: list[Turn] = []
        request = next(workflow)
        while True:
            turn = await self._generate(
                request, sampling_params, request_id, f"{where} turn {len(turns)}"
            )
            turns.append(turn)
            text = self.tokenizer.decode(turn.response_ids, skip_special_tokens=True)
            try:
                request = workflow.send(Completion(text, turn.prompt_ids, turn.response_ids))
            except StopIteration as stop:
                return turns, stop.value or ""

    def _chunks(self, task: Task) -> list[str]:
        context = load_context(task.context_store, task.context_id)
        return truncated_chunks(self.tokenizer, context, task.agent.chunk_tokens, task.max_chunks)

    async def _generate(
        self, request: ChatRequest, sampling_params: dict[str, Any], request_id: str, where: str
    ) -> Turn:
        """One fresh-context call: the chat-templated messages, verl's tokenization, no cut."""
        messages = list(request.messages)
        builder = self.continuous_token_builder
        prompt_ids = await self.loop.run_in_executor(
            None, lambda: builder.build_initial_tokens(messages)
        )
        if len(prompt_ids) > self.prompt_length:
            raise ValueError(
                f"{where}: the prompt has {len(prompt_ids)} tokens, more than "
                f"actor_rollout_ref.rollout.prompt_length={self.prompt_length} (verl would cut off "
                "its beginning); raise the prompt length to the chat-templated question + chunk + "
                "memory"
            )
        began = time.perf_counter()
        output = await self.server_manager.generate(
            request_id=request_id,
            prompt_ids=prompt_ids,
            # a new dict per call: the server pops max_tokens from it
            sampling_params={**sampling_params, "max_tokens": request.max_tokens},
        )
        seconds = time.perf_counter() - began
        if output.stop_reason == "aborted":
            raise RuntimeError(f"{where}: the rollout server aborted the request")
        response_ids = list(output.token_ids)
        log_probs = None if output.log_probs is None else list(output.log_probs)
        if log_probs is not None and len(log_probs) != len(response_ids):
            raise RuntimeError(
                f"{where}: the server returned {len(log_probs)} log-probs for "
                f"{len(response_ids)} tokens"
            )
        preempted = output.num_preempted
        return Turn(
            prompt_ids=list(prompt_ids),
            response_ids=response_ids,
            log_probs=log_probs,
            seconds=seconds,
            num_preempted=-1 if preempted is None else int(preempted),
            extra_fields=dict(output.extra_fields),
        )

    def _outputs(self, turns: list[Turn], n_chunks: int) -> list[AgentLoopOutput]:
        final = turns[-1]
        empty_final = not final.response_ids
        if empty_final:
            final.response_ids = [self._eos_id()]
            final.log_probs = None if final.log_probs is None else [0.0]
        kept = [(i, turn) for i, turn in enumerate(turns[:-1]) if turn.response_ids]
        kept.append((len(turns) - 1, final))
        session = {
            "memagent_chunks": n_chunks,
            "memagent_conversations": len(kept),
            "memagent_empty_final": empty_final,
            "memagent_dropped_empty": len(turns) - len(kept),
            "memagent_response_tokens": sum(len(turn.response_ids) for _, turn in kept),
            **_step_span(turns),
        }
        return [
            AgentLoopOutput(
                prompt_ids=turn.prompt_ids,
                response_ids=turn.response_ids,
                response_mask=[1] * len(turn.response_ids),
                response_logprobs=turn.log_probs,
                num_turns=2 * len(turns),  # the session's user + assistant messages
                metrics=AgentLoopMetrics(
                    generate_sequences=turn.seconds, num_preempted=turn.num_preempted
                ),
                extra_fields={
                    **turn.extra_fields,
                    **session,
                    "memagent_turn": position,
                    "memagent_final": position == len(turns) - 1,
                },
            )
            for position, turn in kept
        ]

    def _eos_id(self) -> int:
        eos = self.tokenizer.eos_token_id
        if eos is None:
            raise ValueError("the tokenizer has no eos token to stand for an empty final answer")
        return int(eos)


def _step_span(turns: list[Turn]) -> dict[str, int]:
    """The weight versions a session's calls ran with, on every row: verl's staleness control
    reads them per row, and a row's tokens depend on every earlier call of its session."""
    span = {}
    for key, pick in (("min_global_steps", min), ("max_global_steps", max)):
        values = [turn.extra_fields.get(key) for turn in turns]
        values = [value for value in values if value is not None]
        if values:
            span[key] = pick(values)
    return span
