"""Fakes at verl's boundaries for the MemAgent agent-loop tests (verl venv only).

- a tiny BPE tokenizer (memrepro.models.tiny) and tiny random Qwen2 models, built in code;
- `ScriptedPolicy`: deterministic "sampling" from the prompt's token ids, usable by both drivers
  (a fake rollout server for verl, an HFEngine whose `_generate` it replaces for the CPU trainer);
- `make_loop`: MemAgentLoop instantiated exactly as verl's AgentLoopWorker does (hydra, from
  agent_loops.yaml);
- `TransferQueueRows`: verl's real v1 postprocess (`AgentLoopWorkerTQ._agent_loop_postprocess`,
  scoring with our reward file through verl's NaiveRewardManager) with TransferQueue replaced by
  a list, and the trainer's advantage input built from what it stored.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import hydra
import numpy as np
import torch
from omegaconf import OmegaConf
from transformers import Qwen2Config, Qwen2ForCausalLM
from verl import DataProto
from verl.experimental.agent_loop.agent_loop import (
    DictConfigWrap,
    ToolListWrap,
    _agent_loop_registry,
)
from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager
from verl.trainer.ppo.reward import get_custom_reward_fn
from verl.trainer.ppo.v1 import agent_loop_tq
from verl.utils.dataset.rl_dataset import RLHFDataset
from verl.workers.rollout.replica import TokenOutput

from memrepro.agents.memagent import FINAL_TEMPLATES, MEMORY_TEMPLATES, NO_MEMORY
from memrepro.engines.hf import HFEngine
from memrepro.models.tiny import DEFAULT_SYSTEM_PROMPT, build_tokenizer
from memrepro.verl import AGENT_LOOP_CONFIG, AGENT_NAME, REWARD_FILE, REWARD_NAME
from memrepro.verl.dataset import write_verl_dataset

WORDS = (
    "The mill stands on the river Ouse . Bread is baked there daily . Ada kept the bees behind "
    "the orchard wall . Which river runs past the mill ? Who kept the bees ? memo note fact "
    "blue red green none one two three four five six seven eight nine"
)


def tiny_tokenizer() -> Any:
    corpus = [
        MEMORY_TEMPLATES["official"],
        FINAL_TEMPLATES["boxed"],
        NO_MEMORY,
        DEFAULT_SYSTEM_PROMPT,
        WORDS,
    ]
    corpus += ["\\boxed{Ouse} \\boxed{Ada} \\boxed{blue} \\boxed{red} system user assistant"]
    return build_tokenizer(corpus * 4, vocab_size=600, model_max_length=4096)


def tiny_model(tokenizer: Any, seed: int) -> Qwen2ForCausalLM:
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = [tokenizer.eos_token_id]
    return model.eval()


def token_log_probs(tokens: Sequence[int]) -> list[float]:
    return [-0.05 * (i % 7 + 1) for i in range(len(tokens))]


class ScriptedPolicy:
    """Response token ids as a function of the prompt ids and of how often that prompt was seen.

    Memory turns answer "memo <digit>", final turns "\\boxed{blue}" or "\\boxed{red}" (digest
    parity), then EOS. The occurrence count makes the rollouts of one question differ; both
    drivers present identical prompts in the same order, so both get identical tokens.
    """

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.seen: dict[tuple[int, ...], int] = {}

    def __call__(self, prompt_ids: Sequence[int], max_tokens: int) -> list[int]:
        key = tuple(int(i) for i in prompt_ids)
        count = self.seen.get(key, 0)
        self.seen[key] = count + 1
        digest = hashlib.sha256(repr((key, count)).encode()).digest()
        prompt = self.tokenizer.decode(key)
        if "Your answer:" in prompt:  # the final template's last line
            text = "\\boxed{blue}" if digest[0] % 2 else "\\boxed{red}"
        else:
            text = f"memo {digest[1] % 10}"
        ids = self.tokenizer.encode(text, add_special_tokens=False)[: max_tokens - 1]
        return [*ids, self.tokenizer.eos_token_id]


class FakeServerManager:
    """verl's LLMServerClient.generate with scripted outputs; records every call.

    `respond(prompt_ids, max_tokens)` gives the token ids, or a TokenOutput to return as is.
    Like verl's vLLM server, it pops max_tokens from the sampling params it is handed.
    """

    def __init__(self, respond: Callable[[list[int], int], Any]) -> None:
        self.respond = respond
        self.calls: list[dict[str, Any]] = []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs) -> TokenOutput:
        max_tokens = sampling_params.pop("max_tokens")
        self.calls.append(
            {
                "request_id": request_id,
                "prompt_ids": list(prompt_ids),
                "max_tokens": max_tokens,
                "sampling_params": dict(sampling_params),
            }
        )
        result = self.respond(list(prompt_ids), max_tokens)
        if isinstance(result, TokenOutput):
            return result
        return TokenOutput(
            token_ids=list(result),
            log_probs=token_log_probs(result) if sampling_params.get("logprobs") else None,
            stop_reason="completed",
            extra_fields={"global_steps": 3, "min_global_steps": 3, "max_global_steps": 3},
        )


class ScriptedHFEngine(HFEngine):
    """Our HFEngine (real templating, stop-token cut, decoding) with `generate` scripted."""

    def __init__(self, model: Any, tokenizer: Any, policy: ScriptedPolicy) -> None:
        super().__init__(model, tokenizer, batch_size=4)
        self.policy = policy

    def _generate(self, prompts, max_tokens, sampling, seed) -> list[list[int]]:
        rows = [self.policy(prompt, max_tokens) for prompt in prompts]
        width = max(len(row) for row in rows)
        return [row + [self.pad_id] * (width - len(row)) for row in rows]


def trainer_config(
    prompt_length: int = 4096,
    response_length: int = 64,
    use_v1: bool = True,
    chat_template_kwargs: dict | None = None,
):
    return OmegaConf.create(
        {
            "trainer": {"use_v1": use_v1},
            "actor_rollout_ref": {
                "rollout": {"prompt_length": prompt_length, "response_length": response_length}
            },
            "data": {"apply_chat_template_kwargs": chat_template_kwargs or {}},
        }
    )


def make_loop(
    tokenizer: Any, server: FakeServerManager, name: str = AGENT_NAME, **config: Any
) -> Any:
    """The loop as verl's AgentLoopWorker builds it: the YAML entry, instantiated by hydra."""
    for entry in OmegaConf.load(AGENT_LOOP_CONFIG):
        _agent_loop_registry[entry.name] = entry
    cfg = trainer_config(**config)
    return hydra.utils.instantiate(
        config=_agent_loop_registry[name],
        trainer_config=DictConfigWrap(config=cfg),
        server_manager=server,
        tokenizer=tokenizer,
        processor=None,
        hf_model_type="qwen2",
        dataset_cls=RLHFDataset,
        data_config=DictConfigWrap(cfg.data),
        tools=ToolListWrap([]),
    )


def dataset_rows(
    rows: list[dict], tmp_path: Path, tokenizer: Any, agent: dict, max_chunks: int
) -> list[dict]:
    """Our rows written by write_verl_dataset and read back by verl's RLHFDataset."""
    parquet = tmp_path / "train.parquet"
    write_verl_dataset(rows, parquet, tmp_path / "contexts.sqlite", agent, max_chunks)
    config = OmegaConf.create(
        {
            "prompt_key": "prompt",
            "max_prompt_length": 512,
            "filter_overlong_prompts": True,
            "filter_overlong_prompts_workers": 1,
            "cache_dir": str(tmp_path / "cache"),
        }
    )
    dataset = RLHFDataset(str(parquet), tokenizer, config)
    return [dataset[i] for i in range(len(dataset))]


def loop_kwargs(row: dict, uid: str, session_id: int) -> dict:
    """What verl's v1 worker passes to `run` (and to its postprocess): the row's fields minus
    `agent_name`, plus uid, session_id and global_steps."""
    kwargs = {key: value for key, value in row.items() if key != "agent_name"}
    return {**kwargs, "uid": uid, "session_id": session_id, "global_steps": 3}


class _Remote:
    def __init__(self, function: Callable) -> None:
        self.remote = function


class TransferQueueRows:
    """verl's v1 postprocess of agent-loop outputs, with TransferQueue kept in memory."""

    def __init__(self, tokenizer: Any, monkeypatch: Any) -> None:
        reward_config = OmegaConf.create(
            {"reward": {"custom_reward_function": {"path": str(REWARD_FILE), "name": REWARD_NAME}}}
        )
        self.reward = (reward_config, tokenizer, get_custom_reward_fn(reward_config))
        worker = object.__new__(agent_loop_tq.AgentLoopWorkerTQ.__ray_actor_class__)
        worker.tokenizer = tokenizer
        worker.processor = None
        worker.mm_processor_kwargs = {}
        worker.distillation_enabled = False
        self.worker = worker
        self.keys: list[str] = []
        self.rows: list[dict[str, Any]] = []
        self.tags: list[dict[str, Any]] = []
        monkeypatch.setattr(agent_loop_tq.tq, "async_kv_batch_put", self._put)

    async def _put(self, keys, fields, tags, partition_id) -> None:
        assert partition_id == "train"
        self.keys += keys
        self.tags += tags
        for j in range(len(keys)):
            # a TensorDict iterates over its batch, not its keys
            self.rows.append({key: _item(fields, key, j) for key in fields.keys()})  # noqa: SIM118

    def store(self, outputs: list, **kwargs: Any) -> None:
        """Score and store one session's outputs as verl's worker does (in its event loop)."""

        async def main() -> None:
            handle = type("RewardLoopWorker", (), {})()
            handle.compute_score = _Remote(NaiveRewardManager(*self.reward).run_single)
            self.worker.reward_loop_worker_handles = [handle]
            await self.worker._agent_loop_postprocess(outputs, False, **kwargs)

        asyncio.run(main())

    def advantage_input(self) -> DataProto:
        """The trainer's `_compute_advantage` input: uid, response_mask, rm_scores as
        token_level_rewards, right-padded."""

        def pad(key: str) -> torch.Tensor:
            return torch.nn.utils.rnn.pad_sequence(
                [row[key] for row in self.rows], batch_first=True
            )

        return DataProto.from_dict(
            tensors={
                "response_mask": pad("response_mask"),
                "token_level_rewards": pad("rm_scores"),
            },
            non_tensors={"uid": np.array([row["uid"] for row in self.rows], dtype=object)},
        )


def _item(fields: Any, key: str, j: int) -> Any:
    value = fields.get(key)
    if isinstance(value, torch.Tensor):
        return value.unbind(0)[j] if value.is_nested else value[j]
    return value.tolist()[j]


def run_session(
    tokenizer: Any,
    server: FakeServerManager,
    row: dict,
    sampling: dict,
    uid: str = "q0",
    session_id: int = 0,
    **config: Any,
) -> list:
    """One agent-loop run (the row's `agent_name`), the loop built inside the event loop as
    verl's worker does."""

    async def main() -> list:
        loop = make_loop(tokenizer, server, row["agent_name"], **config)
        return await loop.run(dict(sampling), **loop_kwargs(row, uid, session_id))

    return asyncio.run(main())
