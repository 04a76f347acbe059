"""MemAgent and Mem-α as verl 0.9.1 agent loops: one training row per conversation.

MemAgent's loop (Mem-α's: see `MemAlphaLoop`) drives the same `memagent()` workflow as
evaluation and the CPU trainer (final prompt "boxed"): every request the workflow yields becomes
one fresh-context generate call on verl's rollout servers and one `AgentLoopOutput`. verl's v1
trainer (`trainer.use_v1=True`, the 0.9.1 default) stores each output as its own row
`{uid}_{session_id}_{i}`, copies the final row's reward onto the others, and broadcasts the GRPO
advantage of the final row to every row of the session (`compute_advantage_for_multi_trajectories`).

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

import functools
import hashlib
import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import (
    AgentLoopBase,
    AgentLoopMetrics,
    AgentLoopOutput,
)

from memrepro.agents.chunking import truncated_chunks
from memrepro.agents.driver import Workflow
from memrepro.agents.memagent import MemAgentConfig, memagent
from memrepro.agents.memalpha import (
    ChunkStep,
    MemAlphaConfig,
    kept_token_count,
    load_memory_counter,
    memorize,
)
from memrepro.agents.structured_memory import StructuredMemory
from memrepro.engines.base import ChatEngine, ChatRequest, Completion, SamplingParams
from memrepro.evaluation import Judge, MemoryQA
from memrepro.train.memalpha_rollout import MemAlphaReward, Memorized, RolloutScore, score_rollouts
from memrepro.verl import QA_URL_ENV
from memrepro.verl.dataset import load_context, load_instance
from memrepro.verl.reward import compute_score

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


def row_info(
    extra_info: Mapping[str, Any] | None, keys: tuple[str, ...], writer: str
) -> dict[str, Any]:
    """A row's `extra_info`, every one of `keys` present (else the error names the writer)."""
    info = dict(extra_info or {})
    missing = [key for key in keys if key not in info]
    if missing:
        raise KeyError(
            f"row extra_info lacks {missing} (index {info.get('index')!r}): write the rows with "
            f"memrepro.verl.dataset.{writer}"
        )
    return info


def parse_task(extra_info: Mapping[str, Any] | None) -> Task:
    """The Task of a row written by `memrepro.verl.dataset.write_verl_dataset`."""
    info = row_info(extra_info, TASK_KEYS, "write_verl_dataset")
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


class WorkflowLoop(AgentLoopBase):
    """An agent workflow (memrepro.agents) on verl's rollout servers: each request it yields is one
    fresh-context generate call; the workflow itself is stepped in an executor (it tokenizes)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.config.trainer.get("use_v1", True):
            raise ValueError(
                f"{type(self).__name__} returns one output per conversation, which only verl's "
                "v1 trainer accepts: set trainer.use_v1=True"
            )
        self.prompt_length = int(self.rollout_config.prompt_length)
        self.response_length = int(self.rollout_config.response_length)

    async def _converse(
        self, workflow: Workflow, sampling_params: dict[str, Any], where: str
    ) -> tuple[list[Turn], str]:
        """Answer each request of the workflow with one generate call; its turns and answer."""
        request_id = uuid4().hex  # one per session: its calls stick to one server (prefix cache)
        turns: list[Turn] = []
        request, answer = await self.loop.run_in_executor(None, _advance, workflow, None)
        while request is not None:
            turn = await self._generate(
                request, sampling_params, request_id, f"{where} turn {len(turns)}"
            )
            turns.append(turn)
            text = self.tokenizer.decode(turn.response_ids, skip_special_tokens=True)
            completion = Completion(text, turn.prompt_ids, turn.response_ids)
            request, answer = await self.loop.run_in_executor(None, _advance, workflow, completion)
        return turns, answer

    def prompt_tokens(self, request: ChatRequest) -> int:
        """The request's prompt length as `_generate` tokenizes it (the Mem-α prompt cap)."""
        return len(self.continuous_token_builder.build_initial_tokens(list(request.messages)))

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


class MemAgentLoop(WorkflowLoop):
    """`run` returns one AgentLoopOutput per conversation: memory updates, then the answer."""

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

    def _chunks(self, task: Task) -> list[str]:
        context = load_context(task.context_store, task.context_id)
        return truncated_chunks(self.tokenizer, context, task.agent.chunk_tokens, task.max_chunks)

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
            _output(
                turn,
                2 * len(turns),  # the session's user + assistant messages
                {
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


MEMALPHA_TASK_KEYS = ("index", "instance_id", "context_store", "settings")


@dataclass(frozen=True)
class MemAlphaTask:
    """One Mem-α training row: the instance's id in the store and the run's loop settings."""

    index: int
    instance_id: str
    context_store: str
    settings: str  # JSON of memrepro.verl.dataset.memalpha_loop_settings


def parse_memalpha_task(extra_info: Mapping[str, Any] | None) -> MemAlphaTask:
    """The MemAlphaTask of a row written by `memrepro.verl.dataset.write_memalpha_verl_dataset`."""
    info = row_info(extra_info, MEMALPHA_TASK_KEYS, "write_memalpha_verl_dataset")
    return MemAlphaTask(
        int(info["index"]), str(info["instance_id"]), str(info["context_store"]), info["settings"]
    )


@dataclass(frozen=True)
class MemAlphaLoopSettings:
    """What a Mem-α rollout reads besides its instance (one JSON per run, on every row)."""

    agent: MemAlphaConfig
    reward: MemAlphaReward
    qa: MemoryQA
    qa_judge: Judge
    memory_tokenizer: str  # "o200k_base" or a tokenizer directory
    qa_model: str  # the served model name
    qa_tokenizer: str  # the QA model's directory (the openai engine re-tokenizes with it)
    qa_concurrency: int
    validation: bool  # a validation row: the rollout's reward is r1 alone (official _validate)


@functools.lru_cache(maxsize=8)
def loop_settings(text: str) -> MemAlphaLoopSettings:
    """The settings JSON of a row (parsed once per process)."""
    data = json.loads(text)
    qa = data["qa"]
    judge = data["judge"]
    return MemAlphaLoopSettings(
        agent=MemAlphaConfig(**data["agent"]),
        reward=MemAlphaReward(
            data["beta"], data["gamma"], SamplingParams(**judge["sampling"]), judge["max_tokens"]
        ),
        qa=MemoryQA.from_settings(qa),
        qa_judge=Judge.from_settings(qa),
        memory_tokenizer=data["memory_tokenizer"],
        qa_model=data["qa_model"],
        qa_tokenizer=data["qa_tokenizer"],
        qa_concurrency=int(data["qa_concurrency"]),
        validation=bool(data["validation"]),
    )


@functools.lru_cache(maxsize=4)
def memory_counter(spec: str) -> Callable[[str], int]:
    """The memory's token counter: o200k_base, or the tokenizer in directory `spec`."""
    if spec == "o200k_base":
        return load_memory_counter(spec)
    from memrepro.models import load_tokenizer

    return load_memory_counter(spec, load_tokenizer(spec))


@functools.lru_cache(maxsize=4)
def qa_engine(model: str, tokenizer: str, concurrency: int) -> ChatEngine:
    """The frozen QA model and judge: the OpenAI-compatible server at $MEMREPRO_QA_BASE_URL."""
    from memrepro.engines.openai import OpenAIEngine

    url = os.environ.get(QA_URL_ENV)
    if not url:
        raise RuntimeError(
            f"{QA_URL_ENV} is not set: the Mem-α training job starts the QA server and sets it "
            "(memrepro.verl.job); memrepro.verl.main forwards it to the Ray actors"
        )
    return OpenAIEngine(model, base_url=url, concurrency=concurrency, tokenizer_path=tokenizer)


class MemAlphaLoop(WorkflowLoop):
    """Mem-α: one AgentLoopOutput per chunk step, each with its own reward (r1 + β·r3 + r2_t +
    γ·r4_t, `train.memalpha_rewards`) in `extra_fields["memalpha_reward"]`.

    verl's v1 postprocess copies the final output's `reward_score` onto the session's other
    outputs and its advantage function broadcasts the final row's advantage; Mem-α needs a
    reward per row and GRPO over all chunk rows of an instance, so `MemAlphaTrainer` rebuilds
    the rewards from `memalpha_reward` and computes the advantage itself. The final output's
    `reward_score` is still set (to its own reward; on a validation row, to r1, the score
    verl's validation reads from the final row): verl then calls no reward manager.
    The QA step and the judge run on the QA server (`qa_engine`), in an executor thread.
    """

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> list[AgentLoopOutput]:
        task = parse_memalpha_task(kwargs.get("extra_info"))
        session = f"uid {kwargs.get('uid')}, session {kwargs.get('session_id')}"
        where = f"memalpha row {task.index} ({session})"
        settings = loop_settings(task.settings)
        self._check(settings.agent, where)
        instance = await self.loop.run_in_executor(
            None, load_instance, task.context_store, task.instance_id
        )
        seed = int.from_bytes(hashlib.sha256(session.encode()).digest()[:8], "big")
        memory = StructuredMemory(memory_counter(settings.memory_tokenizer), seed=seed)
        trace: list[ChunkStep] = []
        workflow = memorize(instance["chunks"], memory, settings.agent, trace, self.prompt_tokens)
        turns, _ = await self._converse(workflow, sampling_params, where)
        turns = [
            kept_turn(self.tokenizer, turn, step) for turn, step in zip(turns, trace, strict=True)
        ]
        engine = qa_engine(settings.qa_model, settings.qa_tokenizer, settings.qa_concurrency)
        rollout = Memorized(instance, memory, trace)
        (score,) = await self.loop.run_in_executor(
            None, score_rollouts, engine, [rollout], settings.qa, settings.qa_judge, settings.reward
        )
        return self._outputs(turns, score, trace, where, settings.validation)

    def _check(self, agent: MemAlphaConfig, where: str) -> None:
        if agent.max_new_tokens > self.response_length:
            raise ValueError(
                f"{where}: agent.max_new_tokens={agent.max_new_tokens} exceeds "
                f"actor_rollout_ref.rollout.response_length={self.response_length}"
            )
        if agent.prompt_cap is None or agent.prompt_cap > self.prompt_length:
            raise ValueError(
                f"{where}: agent.prompt_cap={agent.prompt_cap} must be set and at most "
                f"actor_rollout_ref.rollout.prompt_length={self.prompt_length}"
            )
        thinking = self.apply_chat_template_kwargs.get("enable_thinking", True)
        if bool(thinking) != agent.enable_thinking:
            raise ValueError(
                f"{where}: agent.enable_thinking={agent.enable_thinking} but verl templates with "
                f"data.apply_chat_template_kwargs.enable_thinking={thinking}"
            )

    def _outputs(
        self,
        turns: list[Turn],
        score: RolloutScore,
        trace: list[ChunkStep],
        where: str,
        validation: bool,
    ) -> list[AgentLoopOutput]:
        kept = [step for step, turn in enumerate(turns) if turn.response_ids]
        if not kept:
            raise RuntimeError(f"{where}: every chunk step returned an empty response")
        session = {
            "memalpha_chunks": len(turns),
            "memalpha_dropped_empty": len(turns) - len(kept),
            "memalpha_r1": score.r1,
            "memalpha_r3": score.r3,
            "memalpha_memory_tokens": score.memory_tokens,
            **_step_span(turns),
        }
        outputs = [
            _output(
                turns[step],
                2,  # each chunk step is a fresh system + user -> assistant chat
                {
                    **session,
                    "memalpha_step": step,
                    "memalpha_reward": score.rewards[step],
                    "memalpha_r2": score.r2[step],
                    "memalpha_r4": score.r4[step],
                    "memalpha_tool_calls": len(trace[step].results),
                    "reward_extra_info": {
                        "r1": score.r1,
                        "r2": score.r2[step],
                        "r3": score.r3,
                        "r4": score.r4[step],
                    },
                },
            )
            for step in kept
        ]
        final = outputs[-1]
        final.reward_score = score.r1 if validation else final.extra_fields["memalpha_reward"]
        return outputs


def kept_turn(tokenizer: Any, turn: Turn, step: ChunkStep) -> Turn:
    """The turn trained on: its tokens (and log-probs) up to the end of the executed text, i.e.
    all of them unless the memorisation step cut the response (`agents.memalpha.cut_response`)."""
    kept = kept_token_count(tokenizer, turn.response_ids, step)
    if kept == len(turn.response_ids):
        return turn
    log_probs = None if turn.log_probs is None else turn.log_probs[:kept]
    return replace(turn, response_ids=turn.response_ids[:kept], log_probs=log_probs)


def _output(turn: Turn, num_turns: int, extra_fields: dict[str, Any]) -> AgentLoopOutput:
    """One generated conversation as verl's output row, every response token trained."""
    return AgentLoopOutput(
        prompt_ids=turn.prompt_ids,
        response_ids=turn.response_ids,
        response_mask=[1] * len(turn.response_ids),
        response_logprobs=turn.log_probs,
        num_turns=num_turns,
        metrics=AgentLoopMetrics(generate_sequences=turn.seconds, num_preempted=turn.num_preempted),
        extra_fields={**turn.extra_fields, **extra_fields},
    )


def _advance(workflow: Workflow, completion: Completion | None) -> tuple[ChatRequest | None, str]:
    """The workflow's next request, or (None, its answer) when it has finished. (StopIteration
    cannot cross an executor future, hence the pair.)"""
    try:
        request = next(workflow) if completion is None else workflow.send(completion)
    except StopIteration as stop:
        return None, stop.value or ""
    return request, ""


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
