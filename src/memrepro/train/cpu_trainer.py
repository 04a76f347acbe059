"""A small reference Multi-Conv DAPO trainer (HF generation, plain torch), for tiny models on CPU.

One training step, as in the official verl fork (MemAgent's official code):
1. take `rollout_batch` questions (a seeded shuffle per epoch) and run `group_size` MemAgent
   rollouts each with the current policy; every engine call is one training conversation;
2. reward = boxed verifier on the final answer (`TrainSettings.verifier`, by default the
   official one); A_i = R_i − group mean, broadcast to every conversation of rollout i
   (Algorithm 1's variant: R_i − kl_coef × the final answer's KL, divided by the group's std);
3. old log-probs from the policy before the update, reference log-probs from a frozen copy of the
   initial policy (both without grad);
4. split the conversations (turn-major order) into `mini_batches_per_step` contiguous
   mini-batches; per mini-batch: clipped surrogate + kl_coef × low_var_kl (none with the KL in
   the reward), token-mean over the mini-batch, one AdamW step after gradient clipping;
5. the LR schedule (constant with linear warmup) advances once per training step.

It runs on CPU in float32 with dropout off. With a `Validation` it scores the policy every
`every` steps and after the last, as verl does (`val_reward` and the rest on that step's metrics
line), and may keep the best validated policy instead of the last. The model is saved once, at
the end; a rerun starts from the beginning.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import os
import random
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor
from transformers import AutoModelForCausalLM

from memrepro.agents.memagent import MemAgentConfig
from memrepro.data.io import publish_directory
from memrepro.engines.base import SamplingParams
from memrepro.engines.hf import HFEngine
from memrepro.models import load_named, load_tokenizer
from memrepro.progress import progress
from memrepro.scoring.verifier import DEFAULT_VERIFIER, Verifier, check_verifier
from memrepro.train import TOKEN_MEAN
from memrepro.train.algorithms import (
    aggregate,
    broadcast_to_conversations,
    final_answer_kl,
    group_advantages,
    low_var_kl,
    policy_loss,
    warmup_constant_lr,
    weight_of,
)
from memrepro.train.rollout import RolloutBatch, collect_rollouts, parse_row

log = logging.getLogger(__name__)

METRICS_FILE = "train_metrics.jsonl"
# token-weighted over a step's updates (0 when no update happened)
UPDATE_METRICS = ("pg_loss", "kl", "pg_clipfrac", "pg_clipfrac_lower", "ppo_kl", "grad_norm")
STEP_SEED_STRIDE = 1000  # step k samples with seed + 1000k (HFEngine adds the micro-batch number)


@dataclass(frozen=True)
class TrainSettings:
    """Every hyperparameter of a run. Defaults are the official 7B run's (§3.1, §3.2)."""

    steps: int
    rollout_batch: int  # questions per step
    group_size: int  # rollouts per question (G)
    mini_batches_per_step: int | None  # optimizer updates per step (official: 128 / 8 = 16)
    lr: float
    warmup_steps: int = 20  # in training steps; step 0 runs at lr 0 (official)
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.999)
    grad_clip: float = 1.0
    clip_low: float = 0.2
    clip_high: float = 0.2  # DAPO clip-higher would be 0.28; the official run used 0.2
    clip_c: float = 3.0
    kl_coef: float = 1e-3
    chunk_tokens: int = 5000
    memory_tokens: int = 1024
    final_tokens: int = 1024
    max_chunks: int = 8
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int = 0
    generation_batch: int = 8  # HFEngine micro-batch size for rollouts
    micro_batch_rows: int = 8  # conversations per forward/backward pass (memory only)
    norm_adv_by_std: bool = False  # Mem-α's GRPO divides by the group std; MemAgent's does not
    # Algorithm 1's variant: kl_coef x the final answer's KL to the reference leaves the reward
    # (no KL loss term then)
    kl_in_reward: bool = False
    # Mem-α instead updates on a fixed number of rows (official 32): ceil(rows / it) updates
    mini_batch_rows: int | None = None
    loss_agg: str = TOKEN_MEAN  # or ROW_MEAN, Mem-α's Eq. 2 (memalpha.training.loss_agg)
    # MemAgent's training reward: "official" (MemAgent's official code) or "extended"
    verifier: Verifier = DEFAULT_VERIFIER

    def __post_init__(self) -> None:
        check_verifier(self.verifier)
        if (self.mini_batches_per_step is None) == (self.mini_batch_rows is None):
            raise ValueError(
                "TrainSettings: set exactly one of mini_batches_per_step, mini_batch_rows"
            )
        positive = (
            "steps",
            "rollout_batch",
            "group_size",
            *(("mini_batches_per_step",) if self.mini_batch_rows is None else ("mini_batch_rows",)),
            "chunk_tokens",
            "memory_tokens",
            "final_tokens",
            "max_chunks",
            "generation_batch",
            "micro_batch_rows",
        )
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"TrainSettings.{name} must be >= 1, got {getattr(self, name)}")
        if self.lr < 0 or self.weight_decay < 0 or self.kl_coef < 0 or self.grad_clip <= 0:
            raise ValueError("TrainSettings: lr, weight_decay, kl_coef must be >= 0, grad_clip > 0")
        if not (0 <= self.clip_low < 1 and self.clip_high >= 0 and self.clip_c > 1):
            raise ValueError(
                "TrainSettings: need 0 <= clip_low < 1, clip_high >= 0 and clip_c > 1, got "
                f"{self.clip_low}, {self.clip_high}, {self.clip_c}"
            )
        if self.temperature <= 0 or not 0 < self.top_p <= 1:
            raise ValueError(
                f"TrainSettings: rollouts sample: need temperature > 0 and 0 < top_p <= 1, got "
                f"{self.temperature}, {self.top_p}"
            )


def settings_from_job(job: dict[str, Any]) -> TrainSettings:
    """TrainSettings from a MemAgent train job's settings (memrepro.config.train_settings)."""
    agent = job["agent"]
    return TrainSettings(
        **algorithm_settings(job),
        chunk_tokens=agent["chunk_tokens"],
        memory_tokens=agent["memory_tokens"],
        final_tokens=agent["final_tokens"],
        max_chunks=job["max_chunks"],
        verifier=job.get("verifier", DEFAULT_VERIFIER),
        norm_adv_by_std=job["norm_adv_by_std"],
        kl_in_reward=job["kl_in_reward"],
    )


def algorithm_settings(job: dict[str, Any]) -> dict[str, Any]:
    """The TrainSettings every agent's train job carries (schedule, optimiser, clip, KL,
    rollout sampling); the seed is the sampling's, else the run's."""
    sampling = job["sampling"]
    return {
        **{key: job[key] for key in ALGORITHM_KEYS},
        # MemAgent: updates per step; Mem-α: rows per update
        "mini_batches_per_step": job.get("mini_batches_per_step"),
        "mini_batch_rows": job.get("mini_batch_rows"),
        "loss_agg": job.get("loss_agg", TOKEN_MEAN),
        "weight_decay": job.get("weight_decay", 0.0),
        "grad_clip": job.get("grad_clip", 1.0),
        "temperature": sampling["temperature"],
        "top_p": sampling["top_p"],
        "seed": job["seed"] if sampling.get("seed") is None else sampling["seed"],
    }


ALGORITHM_KEYS = (
    "steps",
    "rollout_batch",
    "group_size",
    "lr",
    "warmup_steps",
    "clip_low",
    "clip_high",
    "clip_c",
    "kl_coef",
)


@dataclass
class Experience:
    """A step's conversations with everything the update needs; token tensors are [n_conv, L]."""

    prompt_ids: list[list[int]]
    response_ids: list[list[int]]
    advantages: Tensor
    old_logp: Tensor
    ref_logp: Tensor
    mask: Tensor


def response_log_probs(
    model: Any,
    prompt_ids: Sequence[Sequence[int]],
    response_ids: Sequence[Sequence[int]],
    pad_id: int,
    temperature: float = 1.0,
) -> tuple[Tensor, Tensor]:
    """log π(response token k | prompt, response[:k]) per conversation, as ([n, L], mask [n, L]).

    Each conversation is prompt + response, right-padded into one batch; the logits at position
    t − 1 give the probability of the token at t. Logits are divided by the sampling
    temperature, as verl does, so the ratio is taken against the distribution sampled from.
    """
    if len(prompt_ids) != len(response_ids):
        raise ValueError(f"{len(prompt_ids)} prompts for {len(response_ids)} responses")
    if any(len(p) == 0 for p in prompt_ids):
        raise ValueError("every conversation needs a non-empty prompt")
    n = len(prompt_ids)
    width = max((len(p) + len(r) for p, r in zip(prompt_ids, response_ids, strict=True)), default=0)
    longest = max((len(r) for r in response_ids), default=0)
    device = model.device
    input_ids = torch.full((n, width), pad_id, dtype=torch.long)
    attention = torch.zeros((n, width), dtype=torch.long)
    for row, (prompt, response) in enumerate(zip(prompt_ids, response_ids, strict=True)):
        sequence = torch.tensor([*prompt, *response], dtype=torch.long)
        input_ids[row, : len(sequence)] = sequence
        attention[row, : len(sequence)] = 1
    logp = torch.zeros((n, longest), device=device)
    mask = torch.zeros((n, longest), device=device)
    if n == 0 or longest == 0:
        return logp, mask
    logits = model(input_ids=input_ids.to(device), attention_mask=attention.to(device)).logits
    rows = []
    for row, (prompt, response) in enumerate(zip(prompt_ids, response_ids, strict=True)):
        start, length = len(prompt) - 1, len(response)
        scores = logits[row, start : start + length].float() / temperature
        targets = torch.tensor(response, dtype=torch.long, device=device)
        token_logp = scores.log_softmax(-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        rows.append(torch.nn.functional.pad(token_logp, (0, longest - length)))
        mask[row, :length] = 1.0
    return torch.stack(rows), mask


def build_experience(
    batch: RolloutBatch,
    policy: Any,
    reference: Any,
    pad_id: int,
    settings: TrainSettings,
) -> tuple[Experience, Tensor, Tensor | None]:
    """Advantages and old/reference log-probs of a step's conversations; also the
    per-trajectory advantages and, with the KL in the reward, each trajectory's KL (else None),
    for logging."""
    longest = max((len(r) for r in batch.response_ids), default=0)
    old_parts, ref_parts, mask_parts = [], [], []
    with torch.no_grad():
        for rows in _chunks(range(batch.n_conversations), settings.micro_batch_rows):
            prompts = [batch.prompt_ids[i] for i in rows]
            responses = [batch.response_ids[i] for i in rows]
            old, mask = response_log_probs(policy, prompts, responses, pad_id, settings.temperature)
            ref, _ = response_log_probs(reference, prompts, responses, pad_id, settings.temperature)
            old_parts.append(_pad_to(old, longest))
            ref_parts.append(_pad_to(ref, longest))
            mask_parts.append(_pad_to(mask, longest))
    empty = torch.zeros((0, longest))
    mask = torch.cat(mask_parts) if mask_parts else empty
    index = torch.tensor(batch.traj_index, dtype=torch.long)
    old_logp = torch.cat(old_parts) if old_parts else empty
    ref_logp = torch.cat(ref_parts) if ref_parts else empty
    rewards = torch.tensor(batch.rewards, dtype=torch.float32)
    traj_kl = None
    if settings.kl_in_reward:
        traj_kl = final_answer_kl(old_logp, ref_logp, mask, index, batch.is_final, len(rewards))
        rewards = rewards - settings.kl_coef * traj_kl
    traj_adv = group_advantages(rewards, batch.group_ids, norm_by_std=settings.norm_adv_by_std)
    experience = Experience(
        prompt_ids=batch.prompt_ids,
        response_ids=batch.response_ids,
        advantages=broadcast_to_conversations(traj_adv, index, mask),
        old_logp=old_logp,
        ref_logp=ref_logp,
        mask=mask,
    )
    return experience, traj_adv, traj_kl


def update_policy(
    model: Any,
    optimizer: torch.optim.Optimizer,
    experience: Experience,
    rows: Sequence[int],
    pad_id: int,
    settings: TrainSettings,
) -> dict[str, float] | None:
    """One optimizer update on the conversations `rows` (a mini-batch); None if they hold no token.

    The loss is aggregated over the whole mini-batch (`loss_agg`): each micro-batch's aggregate
    is weighted by its share of the mini-batch's tokens (token-mean, the official scaling) or of
    its rows with tokens (the row mean) before backward. A step whose gradient norm is not
    finite is skipped, as verl does.
    """
    total = float(experience.mask[list(rows)].sum())
    if total == 0:
        return None
    weight = weight_of(experience.mask[list(rows)], settings.loss_agg)
    sums = {key: 0.0 for key in UPDATE_METRICS if key != "grad_norm"}
    optimizer.zero_grad(set_to_none=True)
    for micro in _chunks(rows, settings.micro_batch_rows):
        prompts = [experience.prompt_ids[i] for i in micro]
        responses = [experience.response_ids[i] for i in micro]
        logp, mask = response_log_probs(model, prompts, responses, pad_id, settings.temperature)
        share = weight_of(mask, settings.loss_agg) / weight
        if share == 0:
            continue
        width = logp.shape[1]
        pg, metrics = policy_loss(
            experience.old_logp[micro, :width],
            logp,
            experience.advantages[micro, :width],
            mask,
            settings.clip_low,
            settings.clip_high,
            settings.clip_c,
            settings.loss_agg,
        )
        kl_tokens = low_var_kl(logp, experience.ref_logp[micro, :width])
        kl = aggregate(kl_tokens, mask, settings.loss_agg)
        loss_kl = 0.0 if settings.kl_in_reward else settings.kl_coef
        ((pg + loss_kl * kl) * share).backward()
        metrics["kl"] = float(kl.detach())
        for key in sums:
            sums[key] += metrics[key] * share
    params = [p for p in model.parameters() if p.requires_grad]
    grad_norm = float(torch.nn.utils.clip_grad_norm_(params, settings.grad_clip))
    if math.isfinite(grad_norm):
        optimizer.step()
    else:
        log.warning("non-finite gradient norm %s: update skipped", grad_norm)
    return {**sums, "grad_norm": grad_norm, "tokens": total}


def mini_batches(n_rows: int, n_batches: int) -> list[list[int]]:
    """Contiguous split of range(n_rows) into n_batches parts whose sizes differ by at most 1
    (torch.tensor_split's rule, as the official actor splits); parts may be empty."""
    base, extra = divmod(n_rows, n_batches)
    bounds = [0]
    for part in range(n_batches):
        bounds.append(bounds[-1] + base + (1 if part < extra else 0))
    return [list(range(bounds[i], bounds[i + 1])) for i in range(n_batches)]


def updates_per_step(n_rows: int, settings: TrainSettings) -> int:
    """MemAgent's fixed updates per step, or Mem-α's ceil(rows / mini_batch_rows) (>= 1)."""
    if settings.mini_batch_rows is None:
        return settings.mini_batches_per_step
    return max(1, -(-n_rows // settings.mini_batch_rows))


def question_batches(n_rows: int, per_step: int, steps: int, seed: int) -> list[list[int]]:
    """Row positions for each step: consecutive slices of a seeded reshuffle of every epoch."""
    if n_rows < 1:
        raise ValueError("no training rows")
    rng = random.Random(seed)
    stream: list[int] = []
    while len(stream) < per_step * steps:
        epoch = list(range(n_rows))
        rng.shuffle(epoch)
        stream += epoch
    return [stream[k * per_step : (k + 1) * per_step] for k in range(steps)]


# A step's rollouts: (step, its rows, the policy's engine, the frozen reference's engine) ->
# the training rows and any metrics of their own (Mem-α's reward terms).
Rollouts = Callable[
    [int, Sequence[dict[str, Any]], HFEngine, HFEngine], tuple[RolloutBatch, dict[str, float]]
]


def step_sampling(step: int, settings: TrainSettings) -> SamplingParams:
    """Rollout sampling of step `step` (its own seed)."""
    return SamplingParams(
        temperature=settings.temperature,
        top_p=settings.top_p,
        seed=settings.seed + STEP_SEED_STRIDE * step,
    )


def memagent_rollouts(settings: TrainSettings) -> Rollouts:
    """MemAgent's: `step_rollouts`, no extra metrics."""

    def collect(
        step: int, rows: Sequence[dict[str, Any]], engine: HFEngine, reference_engine: HFEngine
    ) -> tuple[RolloutBatch, dict[str, float]]:
        return step_rollouts(step, rows, engine, settings), {}

    return collect


def step_rollouts(
    step: int, rows: Sequence[dict[str, Any]], engine: HFEngine, settings: TrainSettings
) -> RolloutBatch:
    """Step `step`'s rollouts of `rows` with the current policy (training prompt, step seed)."""
    agent = MemAgentConfig(
        chunk_tokens=settings.chunk_tokens,
        memory_tokens=settings.memory_tokens,
        final_tokens=settings.final_tokens,
        final_prompt="boxed",
    )
    sampling = step_sampling(step, settings)
    return collect_rollouts(
        engine,
        rows,
        settings.group_size,
        agent,
        settings.max_chunks,
        sampling,
        verifier=settings.verifier,
    )


def train_step(
    step: int,
    rows: Sequence[dict[str, Any]],
    engine: HFEngine,
    reference: HFEngine,
    optimizer: torch.optim.Optimizer,
    settings: TrainSettings,
    rollouts: Rollouts,
) -> dict[str, float]:
    """Rollouts on the policy (`engine`; the frozen `reference` answers and judges where the
    agent needs it), advantages, log-probs and the step's mini-batch updates; its metrics."""
    began = time.perf_counter()
    batch, extra = rollouts(step, rows, engine, reference)
    policy = engine.model
    experience, traj_adv, traj_kl = build_experience(
        batch, policy, reference.model, engine.pad_id, settings
    )
    lr = optimizer.param_groups[0]["lr"]
    weighted = dict.fromkeys(UPDATE_METRICS, 0.0)
    tokens = 0.0
    updates = 0
    for part in mini_batches(
        batch.n_conversations, updates_per_step(batch.n_conversations, settings)
    ):
        result = update_policy(policy, optimizer, experience, part, engine.pad_id, settings)
        if result is None:
            continue
        updates += 1
        tokens += result["tokens"]
        for key in UPDATE_METRICS:
            weighted[key] += result[key] * result["tokens"]
    rewards = torch.tensor(batch.rewards)
    return {
        "reward_mean": float(rewards.mean()),
        "advantage_abs_mean": float(traj_adv.abs().mean()),
        # Algorithm 1's d_g, before its kl_coef, where the KL is in the reward
        **({} if traj_kl is None else {"reward_kl_mean": float(traj_kl.mean())}),
        **{key: value / tokens if tokens else 0.0 for key, value in weighted.items()},
        "lr": lr,
        "updates": updates,
        "n_trajectories": batch.n_trajectories,
        "n_conversations": batch.n_conversations,
        "n_failed": sum(batch.failed),
        "n_empty": batch.n_empty,
        "response_tokens": sum(len(r) for r in batch.response_ids),
        "response_tokens_mean": sum(len(r) for r in batch.response_ids)
        / max(1, len(batch.response_ids)),
        "prompt_tokens": sum(len(p) for p in batch.prompt_ids),
        **extra,
        "seconds": time.perf_counter() - began,
    }


@dataclass(frozen=True)
class Validation:
    """Validation during training: `score(policy, reference)` returns metrics with
    `val_reward` (higher is better)."""

    every: int  # validate after every `every` steps and after the last
    score: Callable[[HFEngine, HFEngine], dict[str, float]]
    keep_best: bool  # save the best validated policy (ties: the later) instead of the last


def validation_due(completed: int, every: int, steps: int) -> bool:
    """Whether verl validates after `completed` steps (test_freq = every): every `every` steps
    and after the last one."""
    return every > 0 and (completed % every == 0 or completed == steps)


def train(
    policy_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    rows: list[dict],
    settings: TrainSettings,
    log_metrics: Callable[[dict, int], None] | None = None,
    rollouts: Rollouts | None = None,
    check_row: Callable[[dict, int], Any] = parse_row,
    validation: Validation | None = None,
) -> dict:
    """Train the policy in `policy_dir` on `rows` (MemAgent's {input, answers, context} by
    default; with `rollouts` and its `check_row`, e.g. Mem-α's instances); save it (the last
    policy, or with `validation.keep_best` the best validated one) to out_dir.

    out_dir (an ordinary HF model directory with the tokenizer and `train_metrics.jsonl`, one
    line per step) appears atomically at the end; while training, the metrics file grows in a
    hidden sibling `.<name>.partial/`. `log_metrics(metrics, step)` is called after every step.
    """
    for position, row in enumerate(rows):
        check_row(row, position)  # fail before any work on a bad row
    batches = question_batches(len(rows), settings.rollout_batch, settings.steps, settings.seed)
    out = Path(out_dir)
    staging = out.parent / f".{out.name}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    torch.manual_seed(settings.seed)
    tokenizer = load_tokenizer(policy_dir)
    policy = load_named(
        "model", policy_dir, AutoModelForCausalLM.from_pretrained, dtype=torch.float32
    )
    policy.eval()  # dropout off for generation, old log-probs and the update alike
    engine = HFEngine(policy, tokenizer, batch_size=settings.generation_batch)
    reference = HFEngine(
        copy.deepcopy(policy).requires_grad_(False), tokenizer, settings.generation_batch
    )
    collect = rollouts or memagent_rollouts(settings)
    optimizer = torch.optim.AdamW(
        policy.parameters(),
        lr=settings.lr,
        betas=settings.betas,
        weight_decay=settings.weight_decay,
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: warmup_constant_lr(step, settings.warmup_steps)
    )
    began = time.perf_counter()
    history: list[dict[str, float]] = []
    best: tuple[float, int, dict[str, Tensor]] | None = None  # (val_reward, step, weights)
    with (
        (staging / METRICS_FILE).open("a", encoding="utf-8") as metrics_file,
        progress(f"train {out.parent.name}/{out.name}", settings.steps, unit="step") as shown,
    ):
        for step, positions in enumerate(batches):
            metrics = train_step(
                step, [rows[i] for i in positions], engine, reference, optimizer, settings, collect
            )
            scheduler.step()
            if validation is not None and validation_due(
                step + 1, validation.every, settings.steps
            ):
                metrics.update(validation.score(engine, reference))
                if validation.keep_best and (best is None or metrics["val_reward"] >= best[0]):
                    weights = {k: v.detach().clone() for k, v in policy.state_dict().items()}
                    best = (metrics["val_reward"], step + 1, weights)
            history.append(metrics)
            metrics_file.write(json.dumps({"step": step, **metrics}) + "\n")
            metrics_file.flush()
            if log_metrics is not None:
                log_metrics(metrics, step)
            shown.advance(1)
            log.info(
                "step %d: reward %.3f, %d conversations, %d response tokens, %.1f s",
                step,
                metrics["reward_mean"],
                metrics["n_conversations"],
                metrics["response_tokens"],
                metrics["seconds"],
            )
    if best is not None:
        log.info("keeping the policy after step %d, the best validated (%.4f)", best[1], best[0])
        policy.load_state_dict(best[2])
    policy.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    publish_directory(staging, out)
    return {
        "steps": settings.steps,
        "checkpoint_step": settings.steps if best is None else best[1],
        "updates": sum(m["updates"] for m in history),
        "reward_mean": sum(m["reward_mean"] for m in history) / len(history),
        "final_reward_mean": history[-1]["reward_mean"],
        "conversations": sum(m["n_conversations"] for m in history),
        "response_tokens": sum(m["response_tokens"] for m in history),
        "seconds": time.perf_counter() - began,
        "out_dir": str(out),
        "settings": asdict(settings),
    }


def _chunks(items: Sequence[int], size: int) -> Iterator[list[int]]:
    items = list(items)
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _pad_to(values: Tensor, width: int) -> Tensor:
    return torch.nn.functional.pad(values, (0, width - values.shape[1]))
