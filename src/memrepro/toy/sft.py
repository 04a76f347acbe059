"""Supervised warm start: teacher-forced cross-entropy on the scripted policy's traces.

The traces come from the real MemAgent workflow driven by the ScriptedEngine (the same chunking,
templates and chat-template prompt ids as HFEngine), so every training example is one
conversation (prompt ids, response ids + eos) exactly as a rollout of the policy would hold it.
The loss is the token-mean negative log-likelihood of the response tokens.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from tqdm import tqdm

from memrepro.agents.memagent import MemAgentConfig
from memrepro.engines.base import SamplingParams
from memrepro.toy.policy import ScriptedEngine
from memrepro.train.cpu_trainer import response_log_probs
from memrepro.train.rollout import collect_rollouts


@dataclass(frozen=True)
class SFTSettings:
    rows: int = 4000  # training questions whose scripted traces are imitated
    epochs: int = 1
    batch_size: int = 8  # conversations per optimizer step
    lr: float = 2e-3  # peak; linear warmup over warmup_frac of the steps, then cosine to 0
    warmup_frac: float = 0.05
    weight_decay: float = 0.0
    grad_clip: float = 1.0

    def __post_init__(self) -> None:
        for name in ("rows", "epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"sft.{name} must be >= 1, got {getattr(self, name)}")
        if self.lr <= 0 or self.weight_decay < 0 or self.grad_clip <= 0:
            raise ValueError("sft: need lr > 0, weight_decay >= 0 and grad_clip > 0")
        if not 0 <= self.warmup_frac < 1:
            raise ValueError(f"sft.warmup_frac must be in [0, 1), got {self.warmup_frac}")


@dataclass
class Traces:
    """The expert's conversations (one SFT example each) and, where measured (MemAgent's
    scripted traces), its own accuracy on the rows."""

    prompt_ids: list[list[int]]
    response_ids: list[list[int]]
    expert_accuracy: float | None = None


def scripted_traces(
    tokenizer: Any,
    rows: Sequence[dict[str, Any]],
    agent: MemAgentConfig,
    max_chunks: int,
    eps: float,
    seed: int,
    noise: str,
) -> Traces:
    """Run the scripted policy through MemAgent on `rows`; one rollout per row."""
    engine = ScriptedEngine(tokenizer, eps=eps, seed=seed, noise=noise)
    batch = collect_rollouts(engine, rows, 1, agent, max_chunks, SamplingParams(seed=seed))
    accuracy = sum(batch.rewards) / max(len(batch.rewards), 1)
    return Traces(batch.prompt_ids, batch.response_ids, accuracy)


def nll(model: Any, prompts: Sequence[list[int]], responses: Sequence[list[int]], pad_id: int):
    """Token-mean negative log-likelihood of the responses given the prompts."""
    logp, mask = response_log_probs(model, prompts, responses, pad_id)
    return -(logp * mask).sum() / mask.sum()


def sft(
    model: Any,
    traces: Traces,
    pad_id: int,
    settings: SFTSettings,
    seed: int,
    on_step: Callable[[int, float], None] | None = None,
) -> list[float]:
    """Fit `model` in place to the traces (seeded shuffles per epoch); returns the loss per step."""
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=settings.lr, weight_decay=settings.weight_decay
    )
    n = len(traces.prompt_ids)
    rng = random.Random(seed)
    steps_per_epoch = -(-n // settings.batch_size)
    total = settings.epochs * steps_per_epoch
    warmup = max(1, round(settings.warmup_frac * total))
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: warmup_cosine(step, warmup, total)
    )
    losses: list[float] = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        progress = tqdm(total=total, desc="sft", unit="step")
        for _ in range(settings.epochs):
            order = list(range(n))
            rng.shuffle(order)
            for start in range(0, n, settings.batch_size):
                batch = order[start : start + settings.batch_size]
                loss = nll(
                    model,
                    [traces.prompt_ids[i] for i in batch],
                    [traces.response_ids[i] for i in batch],
                    pad_id,
                )
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), settings.grad_clip)
                optimizer.step()
                scheduler.step()
                losses.append(float(loss.detach()))
                if on_step is not None:
                    on_step(len(losses) - 1, losses[-1])
                progress.update()
                progress.set_postfix(loss=f"{losses[-1]:.3f}")
        progress.close()
    return losses


def warmup_cosine(step: int, warmup: int, total: int) -> float:
    """LR multiplier: linear warmup to 1 over `warmup` steps, then cosine decay to 0 at `total`."""
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))
