"""Multi-Conv DAPO's advantage, loss and schedule (seed 000 §2.2, Eq. 1–2), in plain torch.

Shapes: a batch holds `n_traj` rollouts (trajectories) and `n_conv` conversations; token tensors
are `[n_conv, L]`, right-padded in response space, with a 0/1 `mask` marking real response tokens.
The numbers match verl 0.9.1 (`compute_grpo_outcome_advantage(norm_adv_by_std_in_grpo=False)`
broadcast as in `compute_advantage_for_multi_trajectories`, `compute_policy_loss_vanilla` with
`loss_agg_mode="token-mean"`, `kl_penalty(..., "low_var_kl")`) and the official MemAgent fork.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import torch
from torch import Tensor

from memrepro.train import LOSS_AGG_MODES, ROW_MEAN, TOKEN_MEAN

STD_EPSILON = 1e-6  # verl's epsilon under the group std
LOG_RATIO_CLAMP = 20.0  # |log r| bound before exp, for stability (verl's value)
KL_CLAMP = 10.0  # low_var_kl is clamped to [-10, 10] (verl's value)


def group_advantages(
    rewards: Tensor, group_ids: Sequence[Hashable], norm_by_std: bool = False
) -> Tensor:
    """Eq. 1: A_i = R_i − mean of R over i's group (Dr. GRPO: no division by the std); with
    `norm_by_std` (Mem-α's GRPO: a group is every chunk row of an instance's rollouts) divided
    by the group's unbiased std + 1e-6.

    A group with a single rollout uses mean 0 and std 1, so its advantage is its raw reward
    (over 1 + 1e-6 with `norm_by_std`), as verl and the official code do.
    """
    if rewards.dim() != 1 or rewards.numel() != len(group_ids):
        raise ValueError(
            f"rewards must be 1-D with one entry per group id: got shape "
            f"{tuple(rewards.shape)} for {len(group_ids)} group ids"
        )
    slots: dict[Hashable, int] = {}
    index = torch.tensor([slots.setdefault(g, len(slots)) for g in group_ids], dtype=torch.long)
    rewards = rewards.detach().float()
    sums = torch.zeros(len(slots)).index_add_(0, index, rewards)
    counts = torch.zeros(len(slots)).index_add_(0, index, torch.ones_like(rewards))
    means = torch.where(counts > 1, sums / counts, torch.zeros_like(sums))
    centred = rewards - means[index]
    if not norm_by_std:
        return centred
    squares = torch.zeros(len(slots)).index_add_(0, index, centred**2)
    std = torch.where(
        counts > 1, (squares / (counts - 1).clamp(min=1)).sqrt(), torch.ones_like(sums)
    )
    return centred / (std[index] + STD_EPSILON)


def broadcast_to_conversations(
    traj_adv: Tensor, conv_traj_index: Tensor, response_mask: Tensor
) -> Tensor:
    """Token-level advantages: each conversation of trajectory i gets A_i on its response tokens."""
    if conv_traj_index.dim() != 1 or conv_traj_index.numel() != response_mask.shape[0]:
        raise ValueError(
            f"conv_traj_index must hold one trajectory index per mask row: got shape "
            f"{tuple(conv_traj_index.shape)} for mask {tuple(response_mask.shape)}"
        )
    if conv_traj_index.numel() and (
        int(conv_traj_index.min()) < 0 or int(conv_traj_index.max()) >= traj_adv.numel()
    ):
        raise ValueError(f"conv_traj_index out of range for {traj_adv.numel()} trajectories")
    return traj_adv[conv_traj_index].unsqueeze(-1) * response_mask.to(traj_adv.dtype)


def agg_token_mean(values: Tensor, mask: Tensor) -> Tensor:
    """Mean of `values` over the masked tokens of all rows together (DAPO's token-level mean).

    With no masked token it returns 0 (still attached to the graph), where verl would give NaN.
    """
    mask = mask.to(values.dtype)
    total = (values * mask).sum()
    count = mask.sum()
    return total / count if count > 0 else total


def aggregate(values: Tensor, mask: Tensor, mode: str = TOKEN_MEAN) -> Tensor:
    """`values` over the masked tokens by `mode` (LOSS_AGG_MODES); 0 with no masked token."""
    if mode == TOKEN_MEAN:
        return agg_token_mean(values, mask)
    if mode != ROW_MEAN:
        raise ValueError(f"unknown loss aggregation {mode!r}; known: {', '.join(LOSS_AGG_MODES)}")
    mask = mask.to(values.dtype)
    tokens = mask.sum(-1)
    rows = tokens > 0
    row_means = (values * mask).sum(-1)[rows] / tokens[rows]
    return row_means.mean() if bool(rows.any()) else (values * mask).sum()


def weight_of(mask: Tensor, mode: str = TOKEN_MEAN) -> float:
    """What a micro-batch's aggregate counts for in its mini-batch: its tokens (token-mean) or
    its rows with tokens (the row mean)."""
    return float(mask.sum() if mode == TOKEN_MEAN else (mask.sum(-1) > 0).sum())


def policy_loss(
    old_logp: Tensor,
    logp: Tensor,
    adv: Tensor,
    mask: Tensor,
    clip_low: float,
    clip_high: float,
    clip_c: float = 3.0,
    loss_agg: str = TOKEN_MEAN,
) -> tuple[Tensor, dict[str, float]]:
    """Eq. 2's clipped surrogate, aggregated by `loss_agg` (default: token-mean over ALL
    response tokens of all conversations; the metrics are always token means).

    Per token, with r = exp(logp − old_logp):  ℓ = max(−A·r, −A·clip(r, 1−ε_low, 1+ε_high)),
    and for A < 0 the dual clip ℓ = min(ℓ, −A·c) bounds the loss of very unlikely tokens.
    Metrics: `pg_loss`; `pg_clipfrac`, the fraction of tokens where the clipped term is the one
    taken; `pg_clipfrac_lower`, where the dual clip binds; `ppo_kl`, mean of old_logp − logp.
    """
    if clip_c <= 1.0:
        raise ValueError(f"clip_c (dual-clip bound) must be > 1, got {clip_c}")
    log_ratio = (logp - old_logp).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)
    ratio = log_ratio.exp()
    unclipped = -adv * ratio
    clipped = -adv * ratio.clamp(1.0 - clip_low, 1.0 + clip_high)
    ppo_loss = torch.maximum(unclipped, clipped)
    dual_bound = -adv * clip_c
    negative = adv < 0
    token_loss = torch.where(negative, torch.minimum(ppo_loss, dual_bound), ppo_loss)
    loss = aggregate(token_loss, mask, loss_agg)
    with torch.no_grad():
        metrics = {
            "pg_loss": float(loss.detach()),
            "pg_clipfrac": float(agg_token_mean((clipped > unclipped).float(), mask)),
            "pg_clipfrac_lower": float(
                agg_token_mean(((ppo_loss > dual_bound) & negative).float(), mask)
            ),
            "ppo_kl": float(agg_token_mean(-log_ratio, mask)),
        }
    return loss, metrics


def low_var_kl(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """Per-token k3 estimator of KL(π_θ ‖ π_ref): e^(ref−logp) − (ref−logp) − 1, clamped to ±10."""
    diff = (ref_logp - logp).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)
    return (diff.exp() - diff - 1.0).clamp(-KL_CLAMP, KL_CLAMP)


def final_answer_kl(
    old_logp: Tensor,
    ref_logp: Tensor,
    mask: Tensor,
    traj_index: Tensor,
    is_final: Sequence[bool],
    n_traj: int,
) -> Tensor:
    """Each trajectory's d_g of Algorithm 1: low_var_kl(π_old ‖ π_ref) summed over its final
    answer's response tokens (verl's in-reward KL, summed by GRPO over the row it scores); 0 for
    a trajectory whose answer was empty and left out."""
    kl = torch.zeros(n_traj)
    final = torch.tensor(list(is_final), dtype=torch.bool)
    if not bool(final.any()):
        return kl
    per_row = (low_var_kl(old_logp[final], ref_logp[final]) * mask[final]).sum(-1)
    return kl.index_add_(0, traj_index[final], per_row.float())


def warmup_constant_lr(step: int, warmup_steps: int) -> float:
    """LR multiplier: linear warmup step/warmup_steps over the first training steps, then 1.

    `step` counts training steps from 0, as verl's (and the official fork's) constant schedule
    with warmup does, so the official run's first step (lambda step/20) ran at lr 0. With
    warmup_steps <= 0 the multiplier is 1 from the start.
    """
    if step < 0:
        raise ValueError(f"step must be >= 0, got {step}")
    if warmup_steps <= 0 or step >= warmup_steps:
        return 1.0
    return step / warmup_steps
