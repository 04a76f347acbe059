"""MemAgent's Multi-Conv DAPO and Mem-α's GRPO on verl 0.9.1's v1 sync trainer (train env only).

verl's v1 trainer already does the Multi-Conv parts: the agent loop's list of outputs becomes one
TransferQueue row per conversation (key `{uid}_{session}_{index}`, final answer last) and
`adv_estimator=grpo` broadcasts each rollout's group-relative advantage to all its rows. Two
things it does differently from the official run, fixed here:

1. Updates per step. verl mini-batches by *rows*: `_update_actor` sends
   mini_batch_size = ppo_mini_batch_size x rollout.n rows, so a step whose rollouts have ~k
   conversations each makes ~k x train_batch_size / ppo_mini_batch_size optimizer updates.
   The official fork split each step's rows into exactly train_batch_size / ppo_mini_batch_size
   mini-batches (`td_split`). `MemAgentTrainer` sends `num_mini_batch` (which verl's
   `TrainingWorker.train_mini_batch` supports) instead, and pads the step's rows to a multiple of
   dp x num_mini_batch (not of the row mini-batch size), so every DP rank splits its share into
   exactly num_mini_batch parts; global mini-batch i is the union of the ranks' parts i and
   verl's token-mean normalises over all its tokens (batch_num_tokens is all-reduced over DP).
   Padding rows have an empty loss mask. The LR scheduler still steps once per training step.
2. Metrics. verl's `critic/score/*`, `response_length/*` are per row, i.e. weighted by the
   number of conversations; `memagent/*` adds per-trajectory ones (reward = accuracy of the
   boxed verifier, conversations per trajectory, groups with a learning signal). Validation is
   already per trajectory (verl keeps the final row of each session).

How verl runs it: `get_trainer_cls(config.trainer.v1.trainer_mode)` inside `TaskRunnerV1.run`
picks the registered `sync` trainer, and `register_trainer` refuses a second class under a taken
name; another name would change behaviour, since "sync" is also tested literally (replay buffer
class, dataloader refill, checkpoint restore). So `memrepro.verl.main` passes its own Ray actor,
`MemAgentTaskRunner`, to verl's `run_ppo`: the same start-up as TaskRunnerV1 with this trainer,
and `trainer_mode` stays `sync`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import ray
import torch
import transfer_queue as tq
from omegaconf import DictConfig, OmegaConf
from tensordict import TensorDict
from verl import DataProto
from verl.trainer.distillation import is_distillation_enabled
from verl.trainer.ppo.core_algos import AdvantageEstimator
from verl.trainer.ppo.ray_trainer import compute_advantage
from verl.trainer.ppo.v1 import AgentLoopManagerTQ
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync
from verl.utils.logging_utils import configure_verl_logging
from verl.utils.metric import reduce_metrics
from verl.utils.py_functional import rename_dict
from verl.workers.utils.padding import response_to_nested

from memrepro.verl import MEMALPHA_AGENT_NAME

Trajectory = tuple[str, str]  # (uid = prompt, session = rollout)


# --- pure parts (tested on CPU) -----------------------------------------------------------------


def num_mini_batches(config: DictConfig) -> int:
    """Optimizer updates per step: train_batch_size / ppo_mini_batch_size (both in prompts)."""
    batch = config.data.train_batch_size
    mini = config.actor_rollout_ref.actor.ppo_mini_batch_size
    if mini < 1 or batch % mini:
        raise ValueError(
            f"data.train_batch_size={batch} must be a multiple of "
            f"actor_rollout_ref.actor.ppo_mini_batch_size={mini}"
        )
    return batch // mini


def actor_update_info(config: DictConfig, num_rows: int, mini_batches: int) -> dict[str, Any]:
    """What `TrainingWorker.train_mini_batch` reads from the batch: `num_mini_batch` parts per
    DP rank (instead of verl's `mini_batch_size` rows), the rest as verl's own _update_actor."""
    if num_rows % mini_batches:
        raise ValueError(f"{num_rows} rows do not split into {mini_batches} mini-batches")
    actor = config.actor_rollout_ref.actor
    return {
        "calculate_entropy": bool(actor.calculate_entropy or actor.entropy_coeff != 0.0),
        # rows of a global mini-batch: only the seq-mean loss modes read it (token-mean does not)
        "global_batch_size": num_rows // mini_batches,
        "num_mini_batch": mini_batches,
        "epochs": actor.ppo_epochs,
        "seed": actor.data_loader_seed,
        "dataloader_kwargs": {"shuffle": actor.shuffle},
        "temperature": config.actor_rollout_ref.rollout.temperature,
    }


def split_key(key: str) -> tuple[str, str, int]:
    """A TransferQueue row key `{uid}_{session}_{index}` -> (uid, session, conversation index)."""
    uid, session, index = key.rsplit("_", 2)
    return uid, session, int(index)


def trajectory_rows(
    keys: Sequence[str], tags: Sequence[Mapping[str, Any]]
) -> dict[Trajectory, list[int]]:
    """Positions of each trajectory's rows (padding rows left out), ordered by conversation."""
    rows: dict[Trajectory, list[tuple[int, int]]] = defaultdict(list)
    for position, (key, tag) in enumerate(zip(keys, tags, strict=True)):
        if tag.get("is_padding", False):
            continue
        uid, session, index = split_key(key)
        rows[(uid, session)].append((index, position))
    return {traj: [pos for _, pos in sorted(items)] for traj, items in rows.items()}


def trajectory_metrics(
    keys: Sequence[str],
    tags: Sequence[Mapping[str, Any]],
    rewards: Mapping[Trajectory, float],
) -> dict[str, float]:
    """Per-trajectory metrics of one step; `rewards` = each trajectory's final-row reward."""
    rows = trajectory_rows(keys, tags)
    if not rows:
        return {}
    missing = sorted(set(rows) - set(rewards))
    if missing:
        raise ValueError(f"no reward for trajectories {missing[:3]} (of {len(missing)})")
    trajectories = sorted(rows)
    conversations = np.array([len(rows[traj]) for traj in trajectories], dtype=float)
    scores = np.array([rewards[traj] for traj in trajectories], dtype=float)
    groups: dict[str, list[float]] = defaultdict(list)
    for (uid, _), score in zip(trajectories, scores, strict=True):
        groups[uid].append(float(score))
    metrics = {
        "memagent/trajectories": float(len(trajectories)),
        "memagent/trajectory_reward/mean": float(scores.mean()),
        "memagent/conversations_per_trajectory/mean": float(conversations.mean()),
        "memagent/conversations_per_trajectory/max": float(conversations.max()),
        "memagent/conversations_per_trajectory/min": float(conversations.min()),
        # groups whose rewards differ: the only ones with a non-zero advantage
        "memagent/groups_with_signal": float(
            np.mean([max(group) > min(group) for group in groups.values()])
        ),
    }
    lengths = [[tags[pos].get("response_len") for pos in rows[traj]] for traj in trajectories]
    if all(length is not None for traj in lengths for length in traj):
        metrics["memagent/trajectory_response_tokens/mean"] = float(
            np.mean([sum(t) for t in lengths])
        )
    return metrics


MEMALPHA_TERMS = ("reward", "r1", "r2", "r3", "r4", "memory_tokens", "tool_calls")


def memalpha_row_rewards(
    keys: Sequence[str], tags: Sequence[Mapping[str, Any]], extra_fields: Sequence[Mapping]
) -> tuple[list[float], list[str]]:
    """Each row's own Mem-α reward (`MemAlphaLoop`'s `memalpha_reward`) and GRPO group: the
    instance (uid), so a group is every chunk row of its n rollouts. Padding rows score 0 in a
    group of their own (their key's uid is verl's `pad...`)."""
    rewards, groups = [], []
    for key, tag, extra in zip(keys, tags, extra_fields, strict=True):
        uid, _, _ = split_key(key)
        if tag.get("is_padding", False):
            rewards.append(0.0)
        elif "memalpha_reward" not in extra:
            raise ValueError(f"row {key}: no memalpha_reward (not a MemAlphaLoop row)")
        else:
            rewards.append(float(extra["memalpha_reward"]))
        groups.append(uid)
    return rewards, groups


def outcome_rewards(rewards: Sequence[float], response_mask: torch.Tensor) -> torch.Tensor:
    """verl's token-level rewards: each row's reward on its last response token (naive.py)."""
    token_level = torch.zeros_like(response_mask, dtype=torch.float32)
    lengths = response_mask.sum(-1).long()
    rows = torch.nonzero(lengths > 0).squeeze(-1)
    token_level[rows, lengths[rows] - 1] = torch.tensor(rewards, dtype=torch.float32)[rows]
    return token_level


def memalpha_advantages(
    rewards: Sequence[float],
    groups: Sequence[str],
    response_mask: torch.Tensor,
    algorithm: Any,
    n: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(token-level rewards, advantages) of a step's rows by verl's own GRPO
    (`compute_advantage`, norm_adv_by_std_in_grpo=True) over the instance groups."""
    token_level = outcome_rewards(rewards, response_mask)
    data = DataProto.from_dict(
        tensors={"token_level_rewards": token_level, "response_mask": response_mask},
        non_tensors={"uid": np.array(list(groups), dtype=object)},
    )
    data = compute_advantage(
        data,
        adv_estimator=AdvantageEstimator.GRPO,
        num_repeat=n,
        norm_adv_by_std_in_grpo=True,
        config=algorithm,
    )
    return token_level, data.batch["advantages"]


def memalpha_metrics(
    tags: Sequence[Mapping[str, Any]], extra_fields: Sequence[Mapping]
) -> dict[str, float]:
    """Per-row means of the reward and its terms (the training curves), padding left out."""
    rows = [
        extra
        for tag, extra in zip(tags, extra_fields, strict=True)
        if not tag.get("is_padding", False)
    ]
    if not rows:
        return {}
    metrics = {
        f"memalpha/{term}/mean": float(np.mean([row[f"memalpha_{term}"] for row in rows]))
        for term in MEMALPHA_TERMS
    }
    metrics["memalpha/rows"] = float(len(rows))
    return metrics


# --- the trainers -------------------------------------------------------------------------------


class MemAgentTrainer(PPOTrainerSync):
    """verl's sync v1 trainer with a fixed number of updates per step and per-trajectory metrics."""

    def __init__(self, config: DictConfig):
        super().__init__(config)
        if self.trainer_mode != "sync":
            raise ValueError(f"trainer.v1.trainer_mode must be sync, got {self.trainer_mode!r}")
        if self.use_critic:
            raise ValueError(
                "MemAgentTrainer trains without a critic (algorithm.adv_estimator=grpo)"
            )
        if is_distillation_enabled(config.get("distillation")):
            raise ValueError("MemAgentTrainer does not support distillation (distillation.enabled)")
        self.mini_batches = num_mini_batches(config)

    def _get_required_batch_multiple(self, dp_size: int) -> int:
        # every DP rank must split its rows into exactly `mini_batches` equal parts
        return dp_size * self.mini_batches

    def _update_actor(self, batch, metrics: dict) -> Any:
        batch.extra_info.pop("mini_batch_size", None)  # it would win over num_mini_batch
        batch.extra_info.update(actor_update_info(self.config, len(batch), self.mini_batches))
        output = self.actor_rollout_wg.update_actor(batch)
        actor_metrics = rename_dict(output["metrics"], "actor/")
        if "actor/mfu" in actor_metrics:
            actor_metrics["perf/mfu/actor"] = actor_metrics.pop("actor/mfu")
        metrics.update(reduce_metrics(actor_metrics))
        metrics["memagent/optimizer_updates"] = float(
            self.mini_batches * self.config.actor_rollout_ref.actor.ppo_epochs
        )
        return batch

    def _compute_metrics(self, batch, metrics, timing_raw, global_steps, epoch) -> None:
        super()._compute_metrics(batch, metrics, timing_raw, global_steps, epoch)
        metrics.update(trajectory_metrics(batch.keys, batch.tags, self._final_rewards(batch)))

    def _final_rewards(self, batch) -> dict[Trajectory, float]:
        """Each trajectory's reward, read from its final (answer) row in TransferQueue."""
        rows = trajectory_rows(batch.keys, batch.tags)
        if not rows:
            return {}
        finals = [batch.keys[positions[-1]] for positions in rows.values()]
        data = tq.kv_batch_get(
            keys=finals, partition_id=batch.partition_id, select_fields=["rm_scores"]
        )
        scores = [float(row.sum()) for row in data["rm_scores"].unbind(0)]
        return dict(zip(rows, scores, strict=True))


class MemAlphaTrainer(PPOTrainerSync):
    """verl's sync v1 trainer with Mem-α's advantage: every chunk row its own reward, GRPO
    normalised by the std of the instance's group (all chunk rows of its n rollouts), as the
    official `naive.py` + verl 0.4 did. verl's own v1 advantage would instead copy each
    session's final reward to all its rows. Mini-batches are verl's: ppo_mini_batch_size x n
    rows each (the official run: 32 rows per update)."""

    def __init__(self, config: DictConfig):
        super().__init__(config)
        if self.trainer_mode != "sync" or self.use_critic:
            raise ValueError("MemAlphaTrainer runs verl's sync trainer without a critic")
        if config.algorithm.adv_estimator != "grpo" or config.algorithm.use_kl_in_reward:
            raise ValueError("MemAlphaTrainer: algorithm.adv_estimator=grpo, no KL in reward")
        if is_distillation_enabled(config.get("distillation")):
            raise ValueError("MemAlphaTrainer does not support distillation (distillation.enabled)")
        correction = config.algorithm.get("rollout_correction") or {}
        if any(correction.get(key) for key in ("rollout_is", "rollout_rs", "bypass_mode")):
            # verl's own _compute_advantage applies it; ours replaces that method
            raise ValueError("MemAlphaTrainer does not apply algorithm.rollout_correction")

    def _compute_advantage(self, batch, metrics: dict) -> Any:
        data = tq.kv_batch_get(
            keys=batch.keys,
            partition_id=batch.partition_id,
            select_fields=["response_mask", "extra_fields"],
        )
        extra = list(data["extra_fields"])
        nested_mask = data["response_mask"]
        mask = torch.nested.to_padded_tensor(nested_mask, 0)
        rewards, groups = memalpha_row_rewards(batch.keys, batch.tags, extra)
        token_level, advantages = memalpha_advantages(
            rewards, groups, mask, self.config.algorithm, self.config.actor_rollout_ref.rollout.n
        )
        fields = {
            "rm_scores": token_level,  # the per-row rewards verl's score metrics read
            "token_level_rewards": token_level,
            "advantages": advantages,
            "returns": advantages,
        }
        output = TensorDict(
            {key: response_to_nested(value, nested_mask) for key, value in fields.items()},
            batch_size=len(batch),
        )
        tq.kv_batch_put(keys=batch.keys, partition_id=batch.partition_id, fields=output)
        metrics.update(memalpha_metrics(batch.tags, extra))
        return batch


class TaskRunner:
    """verl's TaskRunnerV1 start-up (TransferQueue, trainer, agent-loop manager, fit, tracker
    shutdown), running our trainer instead of the registry's `sync` trainer: MemAlphaTrainer
    for the Mem-α agent loop, else MemAgentTrainer."""

    def run(self, config: DictConfig) -> None:
        configure_verl_logging()
        config.transfer_queue.enable = True
        OmegaConf.resolve(config)
        tq.init(config.transfer_queue)
        trainer = None
        succeeded = False
        try:
            trainer = trainer_class(config)(config=config)
            trainer.init()
            manager = AgentLoopManagerTQ.create(
                config=config,
                llm_client=trainer.get_llm_client(),
                teacher_client=trainer.get_teacher_client(),
                reward_loop_worker_handles=trainer.get_reward_handles(),
            )
            trainer.fit(manager)
            succeeded = True
        finally:
            try:
                tracking = getattr(trainer, "logger", None)
                if tracking is not None:
                    tracking.finish(exit_code=0 if succeeded else 1)
            finally:
                tq.close()


def trainer_class(config: DictConfig) -> type[PPOTrainerSync]:
    """The trainer of the run's agent loop (rollout.agent.default_agent_loop)."""
    loop = config.actor_rollout_ref.rollout.agent.default_agent_loop
    return MemAlphaTrainer if loop == MEMALPHA_AGENT_NAME else MemAgentTrainer


MemAgentTaskRunner = ray.remote(TaskRunner)  # what memrepro.verl.main hands to verl's run_ppo
