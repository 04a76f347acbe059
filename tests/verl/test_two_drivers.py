"""One algorithm, two drivers: the same MemAgent rollouts through our CPU trainer and through verl.

The same scripted policy answers both drivers: our HFEngine (its `_generate` scripted) under
`collect_rollouts`, and a fake rollout server under MemAgentLoop. Then
(a) CPU: `build_experience` + `policy_loss` + `low_var_kl`/`agg_token_mean`;
(b) verl: the loop's outputs stored by verl's v1 postprocess (`{uid}_{session_id}_{index}` rows,
    reward copied from the final row) -> `compute_advantage_for_multi_trajectories(grpo,
    norm_adv_by_std_in_grpo=False)` -> `compute_policy_loss_vanilla` (token-mean) + low_var_kl.
Both use old/new/reference log-probs of the same three tiny models. The conversations, rewards,
per-conversation advantages, loss, metrics and gradients must agree.
(tests/verl/test_verl_equivalence.py checks the functions one by one on random tensors.)
"""

from __future__ import annotations

import copy

import pytest
import torch

# a submodule: tests/ on sys.path makes tests/verl importable as a namespace package "verl"
pytest.importorskip("verl.experimental.agent_loop")

from memagent_fakes import (
    FakeServerManager,
    ScriptedHFEngine,
    ScriptedPolicy,
    TransferQueueRows,
    dataset_rows,
    loop_kwargs,
    run_session,
    tiny_model,
    tiny_tokenizer,
)
from verl.trainer.ppo import core_algos
from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories
from verl.workers.config import ActorConfig

from memrepro.agents.memagent import MemAgentConfig
from memrepro.engines.base import SamplingParams
from memrepro.train.algorithms import agg_token_mean, low_var_kl, policy_loss
from memrepro.train.cpu_trainer import TrainSettings, build_experience, response_log_probs
from memrepro.train.rollout import collect_rollouts

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

AGENT = {"chunk_tokens": 8, "memory_tokens": 6, "final_tokens": 6}
MAX_CHUNKS = 3
GROUP = 4
CLIP_LOW, CLIP_HIGH, CLIP_C, KL_COEF = 0.2, 0.28, 3.0, 1e-3
SAMPLING = {
    "temperature": 1.0,
    "top_p": 1.0,
    "top_k": -1,
    "repetition_penalty": 1.0,
    "logprobs": True,
}
ROWS = [
    {
        "index": 0,
        "input": "Which river runs past the mill?",
        "answers": ["blue"],
        "context": "The mill stands on the river Ouse . Bread is baked there daily . Ada kept the "
        "bees behind the orchard wall . The mill stands on the river Ouse .",  # center-truncated
    },
    {
        "index": 1,
        "input": "Who kept the bees?",
        "answers": ["red"],
        "context": "Ada kept the bees behind the orchard wall .",
    },
]


def perturbed(model, seed, scale):
    other = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in other.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator) * scale)
    return other


@pytest.fixture(scope="module")
def models():
    tokenizer = tiny_tokenizer()
    policy = tiny_model(tokenizer, seed=0)
    return tokenizer, policy, perturbed(policy, 1, 0.05), perturbed(policy, 2, 0.05)


def cpu_driver(tokenizer, policy, new_policy, reference):
    agent = MemAgentConfig(**AGENT, final_prompt="boxed")
    engine = ScriptedHFEngine(policy, tokenizer, ScriptedPolicy(tokenizer))
    batch = collect_rollouts(engine, ROWS, GROUP, agent, MAX_CHUNKS, SamplingParams(1.0, 1.0))
    settings = TrainSettings(
        steps=1, rollout_batch=len(ROWS), group_size=GROUP, mini_batches_per_step=1, lr=0.0
    )
    experience, _, _ = build_experience(batch, policy, reference, engine.pad_id, settings)
    new_logp, _ = response_log_probs(
        new_policy, batch.prompt_ids, batch.response_ids, engine.pad_id
    )
    pg, metrics = policy_loss(
        experience.old_logp, new_logp, experience.advantages, experience.mask, CLIP_LOW, CLIP_HIGH
    )
    kl = agg_token_mean(low_var_kl(new_logp, experience.ref_logp), experience.mask)
    conversations = {
        (traj, tuple(prompt), tuple(response)): experience.advantages[row][experience.mask[row] > 0]
        for row, (traj, prompt, response) in enumerate(
            zip(batch.traj_index, batch.prompt_ids, batch.response_ids, strict=True)
        )
    }
    return conversations, batch.rewards, pg + KL_COEF * kl, metrics


def verl_driver(tokenizer, policy, new_policy, reference, tmp_path, monkeypatch):
    rows = dataset_rows(ROWS, tmp_path, tokenizer, AGENT, MAX_CHUNKS)
    server = FakeServerManager(ScriptedPolicy(tokenizer))
    stored = TransferQueueRows(tokenizer, monkeypatch)
    for q, row in enumerate(rows):
        uid = f"uid{q}"  # verl's uids are uuid4 strings: no '_'
        for session in range(GROUP):
            outputs = run_session(tokenizer, server, row, SAMPLING, uid=uid, session_id=session)
            stored.store(outputs, **loop_kwargs(row, uid, session))
    data = stored.advantage_input()
    advantages = compute_advantage_for_multi_trajectories(
        data, stored.keys, core_algos.AdvantageEstimator.GRPO, norm_adv_by_std_in_grpo=False
    ).batch["advantages"]
    prompts = [row["prompts"].tolist() for row in stored.rows]
    responses = [row["responses"].tolist() for row in stored.rows]
    pad = tokenizer.pad_token_id
    with torch.no_grad():
        old, mask = response_log_probs(policy, prompts, responses, pad)
        ref, _ = response_log_probs(reference, prompts, responses, pad)
    new, _ = response_log_probs(new_policy, prompts, responses, pad)
    assert torch.equal(mask, data.batch["response_mask"].float())
    config = ActorConfig(
        strategy="fsdp",
        rollout_n=GROUP,
        ppo_micro_batch_size_per_gpu=1,
        clip_ratio_low=CLIP_LOW,
        clip_ratio_high=CLIP_HIGH,
        clip_ratio_c=CLIP_C,
        loss_agg_mode="token-mean",
    )
    pg, metrics = core_algos.compute_policy_loss_vanilla(
        old, new, advantages, mask, loss_agg_mode="token-mean", config=config
    )
    kl = core_algos.agg_loss(core_algos.kl_penalty(new, ref, "low_var_kl"), mask, "token-mean")
    conversations, rewards = {}, {}
    for position, key in enumerate(stored.keys):
        uid, session, _ = key.rsplit("_", 2)
        traj = int(uid.removeprefix("uid")) * GROUP + int(session)
        rewards[traj] = float(stored.rows[position]["rm_scores"].sum())
        real = mask[position] > 0
        conversations[(traj, tuple(prompts[position]), tuple(responses[position]))] = advantages[
            position
        ][real]
    return conversations, [rewards[t] for t in sorted(rewards)], pg + KL_COEF * kl, metrics


def test_cpu_trainer_and_verl_compute_the_same_step(models, tmp_path, monkeypatch):
    tokenizer, policy, new_policy, reference = models
    cpu_convs, cpu_rewards, cpu_loss, cpu_metrics = cpu_driver(
        tokenizer, policy, new_policy, reference
    )
    verl_convs, verl_rewards, verl_loss, verl_metrics = verl_driver(
        tokenizer, policy, new_policy, reference, tmp_path, monkeypatch
    )
    # the same conversations (trajectory, prompt ids, response ids), one row each
    assert sorted(cpu_convs) == sorted(verl_convs)
    assert len({traj for traj, _, _ in cpu_convs}) == GROUP * len(ROWS)
    # the same rewards, and groups where they differ (so advantages are not all zero)
    assert cpu_rewards == verl_rewards
    groups = [set(cpu_rewards[q * GROUP : (q + 1) * GROUP]) for q in range(len(ROWS))]
    assert any(len(group) == 2 for group in groups), groups
    for key, advantage in cpu_convs.items():
        torch.testing.assert_close(advantage, verl_convs[key])
    assert any(advantage.abs().sum() > 0 for advantage in cpu_convs.values())
    # the same loss, clip fraction and gradient
    torch.testing.assert_close(cpu_loss, verl_loss)
    assert cpu_metrics["pg_clipfrac"] == pytest.approx(verl_metrics["actor/pg_clipfrac"], abs=1e-6)
    parameters = list(new_policy.parameters())
    cpu_grads = torch.autograd.grad(cpu_loss, parameters)
    verl_grads = torch.autograd.grad(verl_loss, parameters)
    for cpu_grad, verl_grad in zip(cpu_grads, verl_grads, strict=True):
        torch.testing.assert_close(cpu_grad, verl_grad)
    assert any(grad.abs().sum() > 0 for grad in cpu_grads)
