"""Multi-Conv DAPO's equations (seed 000 Eq. 1–2) checked against hand-computed values."""

from __future__ import annotations

import math

import pytest
import torch

from memrepro.train.algorithms import (
    agg_token_mean,
    broadcast_to_conversations,
    final_answer_kl,
    group_advantages,
    low_var_kl,
    policy_loss,
    warmup_constant_lr,
)


def test_group_advantage_is_reward_minus_group_mean_without_std():
    rewards = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0])
    adv = group_advantages(rewards, ["a", "a", "a", "a", "b", "b", "c"])
    # group a: mean 0.75; group b: all equal -> 0; singleton c: mean 0 -> its raw reward
    assert adv.tolist() == [0.25, -0.75, 0.25, 0.25, 0.0, 0.0, 1.0]


def test_group_advantage_groups_by_id_not_by_position():
    adv = group_advantages(torch.tensor([1.0, 3.0, 0.0, 5.0]), [0, 1, 0, 1])
    assert adv.tolist() == [0.5, -1.0, -0.5, 1.0]


def test_group_advantage_rejects_mismatched_ids():
    with pytest.raises(ValueError, match="one entry per group id"):
        group_advantages(torch.tensor([1.0, 0.0]), [0])


def test_broadcast_gives_every_conversation_its_trajectory_advantage_on_real_tokens():
    mask = torch.tensor([[1, 1, 0], [1, 0, 0], [1, 1, 1], [0, 0, 0]])
    adv = broadcast_to_conversations(torch.tensor([0.5, -0.5]), torch.tensor([0, 0, 1, 1]), mask)
    assert adv.tolist() == [[0.5, 0.5, 0.0], [0.5, 0.0, 0.0], [-0.5, -0.5, -0.5], [0, 0, 0]]


def test_broadcast_rejects_bad_trajectory_index():
    with pytest.raises(ValueError, match="out of range"):
        broadcast_to_conversations(torch.zeros(2), torch.tensor([0, 2]), torch.ones(2, 1))


def _four_tokens():
    """Tokens chosen to hit each branch; a fifth, masked token must not count."""
    log_ratio = torch.tensor([[0.5, 0.0, -0.5, 2.0, 1.0]])
    adv = torch.tensor([[1.0, 1.0, -1.0, -1.0, 100.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0, 1.0, 0.0]])
    old = torch.full_like(log_ratio, -1.0)
    return old, old + log_ratio, adv, mask


def test_policy_loss_clips_both_sides_and_dual_clips_negative_advantages():
    old, logp, adv, mask = _four_tokens()
    loss, metrics = policy_loss(old, logp, adv, mask, clip_low=0.2, clip_high=0.2, clip_c=3.0)
    # token 1: A=+1, r=e^.5 -> clipped to 1.2 -> -1.2;  token 2: r=1 -> -1
    # token 3: A=-1, r=e^-.5=.61 -> clipped to .8 -> .8;  token 4: A=-1, r=e^2 -> dual clip 3
    assert float(loss) == pytest.approx((-1.2 - 1.0 + 0.8 + 3.0) / 4)
    assert metrics["pg_clipfrac"] == pytest.approx(2 / 4)
    assert metrics["pg_clipfrac_lower"] == pytest.approx(1 / 4)
    assert metrics["ppo_kl"] == pytest.approx(-(0.5 + 0.0 - 0.5 + 2.0) / 4)
    assert metrics["pg_loss"] == pytest.approx(float(loss))


def test_policy_loss_clip_higher_uses_the_upper_bound():
    old, logp, adv, mask = _four_tokens()
    loss, _ = policy_loss(old, logp, adv, mask, clip_low=0.2, clip_high=0.28)
    assert float(loss) == pytest.approx((-1.28 - 1.0 + 0.8 + 3.0) / 4)


def test_policy_loss_gradient_flows_only_through_unclipped_tokens():
    old, logp, adv, mask = _four_tokens()
    logp.requires_grad_(True)
    loss, _ = policy_loss(old, logp, adv, mask, clip_low=0.2, clip_high=0.2)
    loss.backward()
    # d/dlogp of -A·r/N is -A·r/N for the unclipped token 2 (r = 1); clipped tokens get 0
    assert logp.grad.tolist() == [[0.0, -0.25, 0.0, 0.0, 0.0]]


def test_policy_loss_is_a_token_mean_over_all_conversations_not_a_mean_of_means():
    # one 1-token conversation with A=2 and one 3-token conversation with A=0, ratio 1
    adv = torch.tensor([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    mask = torch.tensor([[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    zeros = torch.zeros(2, 3)
    loss, _ = policy_loss(zeros, zeros, adv, mask, clip_low=0.2, clip_high=0.2)
    assert float(loss) == pytest.approx(-2.0 / 4)  # a mean of per-row means would give -1.0


def test_policy_loss_rejects_a_dual_clip_bound_not_above_one():
    old, logp, adv, mask = _four_tokens()
    with pytest.raises(ValueError, match="clip_c"):
        policy_loss(old, logp, adv, mask, 0.2, 0.2, clip_c=1.0)


def test_low_var_kl_is_k3_and_clamped():
    logp = torch.tensor([0.0, -1.0, 0.0])
    ref = torch.tensor([math.log(2.0), -1.0, 15.0])
    kl = low_var_kl(logp, ref).tolist()
    assert kl[0] == pytest.approx(2.0 - math.log(2.0) - 1.0)  # e^d - d - 1 with d = ref - logp
    assert kl[1] == 0.0
    assert kl[2] == 10.0  # e^15 - 16 is clamped to 10
    assert (low_var_kl(torch.randn(50), torch.randn(50)) >= 0).all()


def test_agg_token_mean_uses_only_masked_tokens_and_is_zero_without_any():
    values = torch.tensor([[1.0, 2.0], [3.0, 100.0]])
    assert float(agg_token_mean(values, torch.tensor([[1, 1], [1, 0]]))) == pytest.approx(2.0)
    values.requires_grad_(True)
    empty = agg_token_mean(values, torch.zeros(2, 2))
    assert float(empty.detach()) == 0.0 and empty.requires_grad


def test_warmup_is_linear_from_zero_then_constant():
    assert [warmup_constant_lr(s, 20) for s in (0, 1, 10, 19, 20, 400)] == [
        0.0,
        0.05,
        0.5,
        0.95,
        1.0,
        1.0,
    ]
    assert warmup_constant_lr(0, 0) == 1.0
    with pytest.raises(ValueError):
        warmup_constant_lr(-1, 20)


def test_group_advantage_divided_by_the_unbiased_group_std():
    rewards = torch.tensor([1.0, 0.0, 2.0, 3.0, 3.0, 5.0])
    adv = group_advantages(rewards, ["a", "a", "a", "b", "b", "c"], norm_by_std=True)
    # a: mean 1, unbiased std 1; b: all equal -> 0; singleton c: mean 0, std 1
    expected = [0.0, -1.0 / (1 + 1e-6), 1.0 / (1 + 1e-6), 0.0, 0.0, 5.0 / (1 + 1e-6)]
    torch.testing.assert_close(adv, torch.tensor(expected))


def test_algorithm_1s_kl_sums_over_each_final_answers_tokens():
    """d_g: low_var_kl of the final answer's tokens only, summed (padding and memory updates
    count for nothing); a trajectory whose answer was left out gets 0."""
    old = torch.tensor([[0.0, -1.0, 0.0], [-0.5, 0.0, 0.0], [-2.0, -1.0, -0.5]])
    ref = torch.tensor([[-1.0, 0.0, 0.0], [0.5, 0.0, 0.0], [-2.0, 0.0, 0.5]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    index = torch.tensor([0, 0, 1])
    kl = final_answer_kl(old, ref, mask, index, [False, True, False], 3)

    def k3(o: float, r: float) -> float:
        return math.exp(r - o) - (r - o) - 1

    torch.testing.assert_close(kl, torch.tensor([k3(-0.5, 0.5), 0.0, 0.0]))
