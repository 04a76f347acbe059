"""Our Multi-Conv DAPO functions compute verl 0.9.1's numbers (skipped where verl is absent).

verl pins a transformers older than ours, so it lives in its own environment (the train-cpu lock):
    make verl-tests
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

verl = pytest.importorskip("verl")
core_algos = pytest.importorskip("verl.trainer.ppo.core_algos")

from omegaconf import OmegaConf  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.workers.config import ActorConfig  # noqa: E402

from memrepro.train.algorithms import (  # noqa: E402
    agg_token_mean,
    aggregate,
    broadcast_to_conversations,
    final_answer_kl,
    group_advantages,
    low_var_kl,
    policy_loss,
)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")


def _mask(generator: torch.Generator, rows: int, width: int) -> torch.Tensor:
    """Right-padded response masks with 1..width real tokens per row."""
    lengths = torch.randint(1, width + 1, (rows,), generator=generator)
    return (torch.arange(width).unsqueeze(0) < lengths.unsqueeze(1)).float()


def _outcome_rewards(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """verl's token-level rewards: the score at each row's last response token."""
    rewards = torch.zeros_like(mask)
    rewards[torch.arange(len(scores)), mask.sum(-1).long() - 1] = scores
    return rewards


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_group_advantage_matches_grpo_without_std(seed):
    generator = torch.Generator().manual_seed(seed)
    n, width = 24, 7
    uids = np.array([f"q{i}" for i in torch.randint(0, 6, (n,), generator=generator).tolist()])
    scores = torch.randint(0, 2, (n,), generator=generator).float()
    scores[-1] = 0.7  # also a non-binary score
    mask = _mask(generator, n, width)
    expected, _ = core_algos.compute_grpo_outcome_advantage(
        _outcome_rewards(scores, mask), mask, uids, norm_adv_by_std_in_grpo=False
    )
    ours = broadcast_to_conversations(
        group_advantages(scores, uids.tolist()), torch.arange(n), mask
    )
    torch.testing.assert_close(ours, expected)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_memalpha_chunk_rows_advantage_matches_grpo_with_std(seed):
    """Mem-α: every chunk row carries its own reward; the group is the instance (all chunk rows
    of all its rollouts); verl normalises by the group's std (norm_adv_by_std_in_grpo=True)."""
    generator = torch.Generator().manual_seed(seed)
    n, width = 30, 5
    uids = np.array([f"i{i}" for i in torch.randint(0, 4, (n,), generator=generator).tolist()])
    uids[-1] = "alone"  # a group of one row
    scores = torch.rand(n, generator=generator) * 2.5 - 0.5  # r1 + βr3 + r2 + γr4 spans ~[-0.5, 2]
    mask = _mask(generator, n, width)
    expected, _ = core_algos.compute_grpo_outcome_advantage(
        _outcome_rewards(scores, mask), mask, uids, norm_adv_by_std_in_grpo=True
    )
    ours = broadcast_to_conversations(
        group_advantages(scores, uids.tolist(), norm_by_std=True), torch.arange(n), mask
    )
    torch.testing.assert_close(ours, expected)


def _sessions(generator: torch.Generator, n_questions: int, group: int):
    """Rows of `group` rollouts per question, 1-4 conversations each, keyed as verl's v1 trainer
    keys them (`uid_session_index`): (keys, each row's trajectory, whether it is the final row,
    each trajectory's 0/1 score, each trajectory's group)."""
    keys, conv_traj, is_final, traj_scores, group_ids = [], [], [], [], []
    for q in range(n_questions):
        for session in range(group):
            traj = len(traj_scores)
            traj_scores.append(float(torch.randint(0, 2, (1,), generator=generator)))
            group_ids.append(f"uid{q}")
            n_conv = int(torch.randint(1, 5, (1,), generator=generator))
            for index in range(n_conv):
                keys.append(f"uid{q}_{session}_{index}")
                conv_traj.append(traj)
                is_final.append(index == n_conv - 1)
    return keys, conv_traj, is_final, traj_scores, group_ids


@pytest.mark.parametrize("seed", [0, 1])
def test_multi_conversation_advantage_matches_verl_v1(seed):
    v1_utils = pytest.importorskip("verl.trainer.ppo.v1.utils")
    generator = torch.Generator().manual_seed(seed)
    width = 6
    keys, conv_traj, _, traj_scores, group_ids = _sessions(generator, 3, 4)
    order = torch.randperm(len(keys), generator=generator).tolist()  # any row order
    keys = [keys[i] for i in order]
    conv_traj = torch.tensor([conv_traj[i] for i in order])
    mask = _mask(generator, len(keys), width)
    scores = torch.tensor(traj_scores)[conv_traj]  # verl copies the final score to every row
    data = DataProto.from_dict(
        tensors={"token_level_rewards": _outcome_rewards(scores, mask), "response_mask": mask},
        non_tensors={"uid": np.array([key.split("_")[0] for key in keys], dtype=object)},
    )
    result = v1_utils.compute_advantage_for_multi_trajectories(
        data, keys, core_algos.AdvantageEstimator.GRPO, norm_adv_by_std_in_grpo=False
    )
    ours = broadcast_to_conversations(
        group_advantages(torch.tensor(traj_scores), group_ids), conv_traj, mask
    )
    torch.testing.assert_close(ours, result.batch["advantages"])


@pytest.mark.parametrize("seed", [0, 1])
def test_algorithm_1s_reward_and_advantage_match_verls_in_reward_kl(seed):
    """Algorithm 1 (training.recipe: algorithm1): verl's apply_kl_penalty on every row, then the
    v1 multi-trajectory GRPO with the std division, equal our final-answer KL subtracted from
    each trajectory's reward before group_advantages(norm_by_std=True)."""
    from verl.trainer.ppo.ray_trainer import apply_kl_penalty

    v1_utils = pytest.importorskip("verl.trainer.ppo.v1.utils")
    generator = torch.Generator().manual_seed(seed)
    width, beta = 6, 0.05
    keys, conv_traj, is_final, traj_scores, group_ids = _sessions(generator, 3, 4)
    rows = len(keys)
    mask = _mask(generator, rows, width)
    old = -torch.rand(rows, width, generator=generator) * 3 * mask
    ref = -torch.rand(rows, width, generator=generator) * 3 * mask
    index = torch.tensor(conv_traj)
    scores = torch.tensor(traj_scores)[index]
    data = DataProto.from_dict(
        tensors={
            "token_level_scores": _outcome_rewards(scores, mask),
            "response_mask": mask,
            "old_log_probs": old,
            "ref_log_prob": ref,
        },
        non_tensors={"uid": np.array([key.split("_")[0] for key in keys], dtype=object)},
    )
    control = core_algos.get_kl_controller(OmegaConf.create({"type": "fixed", "kl_coef": beta}))
    data, _ = apply_kl_penalty(data, kl_ctrl=control, kl_penalty="low_var_kl")
    result = v1_utils.compute_advantage_for_multi_trajectories(
        data, keys, core_algos.AdvantageEstimator.GRPO, norm_adv_by_std_in_grpo=True
    )
    kl = final_answer_kl(old, ref, mask, index, is_final, len(traj_scores))
    rewards = torch.tensor(traj_scores) - beta * kl
    ours = broadcast_to_conversations(
        group_advantages(rewards, group_ids, norm_by_std=True), index, mask
    )
    torch.testing.assert_close(ours, result.batch["advantages"])


@pytest.mark.parametrize(
    ("seed", "clip_high", "loss_agg"),
    [
        (0, 0.2, "token-mean"),
        (1, 0.28, "token-mean"),
        (2, 0.28, "token-mean"),
        (3, 0.2, "seq-mean-token-mean"),  # Mem-α's Eq. 2
        (4, 0.28, "seq-mean-token-mean"),
    ],
)
def test_policy_loss_matches_vanilla_ppo(seed, clip_high, loss_agg):
    generator = torch.Generator().manual_seed(seed)
    rows, width = 9, 11
    old = -torch.rand(rows, width, generator=generator) * 3
    new = (old + torch.randn(rows, width, generator=generator) * 0.6).requires_grad_(True)
    adv = torch.randn(rows, width, generator=generator)
    adv[0, :4] = -2.0  # make sure the dual clip binds somewhere
    new.data[0, :4] = old[0, :4] + 2.5
    mask = _mask(generator, rows, width)
    config = ActorConfig(
        strategy="fsdp",
        rollout_n=1,
        ppo_micro_batch_size_per_gpu=1,
        clip_ratio_low=0.2,
        clip_ratio_high=clip_high,
        clip_ratio_c=3.0,
        loss_agg_mode=loss_agg,
    )
    expected, expected_metrics = core_algos.compute_policy_loss_vanilla(
        old, new, adv, mask, loss_agg_mode=loss_agg, config=config
    )
    (expected_grad,) = torch.autograd.grad(expected, new)
    ours, metrics = policy_loss(old, new, adv, mask, 0.2, clip_high, 3.0, loss_agg)
    (our_grad,) = torch.autograd.grad(ours, new)
    torch.testing.assert_close(ours, expected)
    torch.testing.assert_close(our_grad, expected_grad)
    assert metrics["pg_clipfrac_lower"] > 0
    for key in ("pg_clipfrac", "pg_clipfrac_lower", "ppo_kl"):
        assert metrics[key] == pytest.approx(expected_metrics[f"actor/{key}"], abs=1e-6)


def test_low_var_kl_and_token_mean_match_verl():
    generator = torch.Generator().manual_seed(0)
    logp = -torch.rand(5, 8, generator=generator) * 4
    ref = logp + torch.randn(5, 8, generator=generator) * 4  # wide: hits the ±10 clamp
    expected = core_algos.kl_penalty(logp, ref, "low_var_kl")
    torch.testing.assert_close(low_var_kl(logp, ref), expected)
    assert (expected == 10).any()
    mask = _mask(generator, 5, 8)
    torch.testing.assert_close(
        agg_token_mean(expected, mask), core_algos.agg_loss(expected, mask, "token-mean")
    )
    for mode in ("token-mean", "seq-mean-token-mean"):
        torch.testing.assert_close(
            aggregate(expected, mask, mode), core_algos.agg_loss(expected, mask, mode)
        )
