"""The CPU reference trainer: log-prob alignment, update direction, a full run, a saved model."""

from __future__ import annotations

import copy
import itertools
import json
import math
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from memrepro.models.tiny import build_tiny_model
from memrepro.train import cpu_trainer, rollout
from memrepro.train.cpu_trainer import (
    Experience,
    TrainSettings,
    Validation,
    mini_batches,
    question_batches,
    response_log_probs,
    train,
    update_policy,
    updates_per_step,
    validation_due,
)

CORPUS = [
    "Document 1: The Orrow flows past the old mill at Tessaly, north of Edderby.",
    "Document 2: The Brindle Observatory opened in 1911 and closed in 1978.",
    "Question: which river flows past the mill? Updated memory: the Orrow. \\boxed{Orrow}",
] * 4
ROWS = [
    {"index": 0, "input": "Which river?", "answers": ["Orrow"], "context": CORPUS[0] + CORPUS[1]},
    {"index": 1, "input": "When did it open?", "answers": ["1911"], "context": CORPUS[1]},
    {"index": 2, "input": "Which town?", "answers": ["Tessaly"], "context": CORPUS[0]},
]
PAD = 0


def settings(**overrides) -> TrainSettings:
    base = {
        "steps": 1,
        "rollout_batch": 2,
        "group_size": 2,
        "mini_batches_per_step": 2,
        "lr": 1e-2,
        "warmup_steps": 0,
        "weight_decay": 0.0,
        "chunk_tokens": 16,
        "memory_tokens": 6,
        "final_tokens": 6,
        "max_chunks": 2,
        "seed": 0,
        "generation_batch": 4,
        "micro_batch_rows": 4,
    }
    return TrainSettings(**{**base, **overrides})


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", CORPUS)


@pytest.fixture
def model(tiny: Path):
    return AutoModelForCausalLM.from_pretrained(str(tiny), dtype=torch.float32).eval()


def test_log_probs_take_token_t_from_the_logits_at_t_minus_1(model):
    prompts = [[5, 6, 7, 8], [9, 10]]
    responses = [[11, 12], [13, 14, 15]]
    for temperature in (1.0, 0.5):
        logp, mask = response_log_probs(model, prompts, responses, PAD, temperature)
        assert mask.tolist() == [[1, 1, 0], [1, 1, 1]]
        for row, (prompt, response) in enumerate(zip(prompts, responses, strict=True)):
            sequence = torch.tensor([prompt + response])
            with torch.no_grad():
                scores = model(input_ids=sequence).logits[0] / temperature
            expected = [
                scores[len(prompt) + k - 1].log_softmax(-1)[token]
                for k, token in enumerate(response)
            ]
            torch.testing.assert_close(logp[row, : len(response)], torch.stack(expected))
        assert logp[0, 2] == 0  # padding


def _experience(model, prompt, response, advantage) -> Experience:
    with torch.no_grad():
        logp, mask = response_log_probs(model, [prompt], [response], PAD)
    return Experience([prompt], [response], advantage * mask, logp, logp.clone(), mask)


@pytest.mark.parametrize("advantage", [1.0, -1.0])
def test_an_update_moves_the_response_log_prob_with_the_sign_of_its_advantage(model, advantage):
    prompt, response = [5, 6, 7, 8, 9], [20, 21, 22]
    experience = _experience(model, prompt, response, advantage)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    metrics = update_policy(model, optimizer, experience, [0], PAD, settings())
    assert metrics is not None and math.isfinite(metrics["pg_loss"])
    assert metrics["pg_loss"] == pytest.approx(-advantage)  # ratio 1 at the first update
    with torch.no_grad():
        after, _ = response_log_probs(model, [prompt], [response], PAD)
    change = float(after.sum() - experience.old_logp.sum())
    assert change * advantage > 0


@pytest.mark.parametrize("loss_agg", ["token-mean", "seq-mean-token-mean"])
def test_micro_batches_give_the_same_update_as_one_pass(model, loss_agg):
    prompts = [[5, 6, 7], [8, 9], [10, 11, 12, 13]]
    responses = [[20, 21], [22, 23, 24, 25], [26]]
    with torch.no_grad():
        logp, mask = response_log_probs(model, prompts, responses, PAD)
    advantages = torch.tensor([[1.0], [-0.5], [2.0]]) * mask
    experience = Experience(prompts, responses, advantages, logp - 0.1, logp + 0.3, mask)
    updated = []
    for micro in (1, 3):
        copy_ = copy.deepcopy(model)
        optimizer = torch.optim.SGD(copy_.parameters(), lr=1.0)
        update_policy(
            copy_,
            optimizer,
            experience,
            [0, 1, 2],
            PAD,
            settings(micro_batch_rows=micro, loss_agg=loss_agg),
        )
        updated.append(torch.cat([p.detach().flatten() for p in copy_.parameters()]))
    original = torch.cat([p.detach().flatten() for p in model.parameters()])
    assert not torch.equal(updated[0], original)
    torch.testing.assert_close(updated[0], updated[1], rtol=1e-4, atol=1e-6)


def test_the_row_mean_weighs_each_row_alike_the_token_mean_each_token(model):
    """Eq. 2's per-action mean: a one-token row counts as much as a four-token row."""
    prompts, responses = [[5, 6], [7, 8]], [[20], [21, 22, 23, 24]]
    with torch.no_grad():
        logp, mask = response_log_probs(model, prompts, responses, PAD)
    advantages = torch.tensor([[3.0], [1.0]]) * mask
    experience = Experience(prompts, responses, advantages, logp, logp, mask)
    losses = {
        mode: update_policy(
            copy.deepcopy(model),
            torch.optim.SGD(model.parameters(), lr=0.0),
            experience,
            [0, 1],
            PAD,
            settings(loss_agg=mode),
        )["pg_loss"]
        for mode in ("token-mean", "seq-mean-token-mean")
    }
    # ratio 1: minus the mean advantage, per token (3 + 4 x 1) / 5 or per row (3 + 1) / 2
    assert losses == {
        "token-mean": pytest.approx(-7 / 5),
        "seq-mean-token-mean": pytest.approx(-2.0),
    }


def test_a_mini_batch_without_tokens_is_no_update(model):
    experience = Experience(
        [[5]], [[]], torch.zeros(1, 0), torch.zeros(1, 0), torch.zeros(1, 0), torch.zeros(1, 0)
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=1.0)
    assert update_policy(model, optimizer, experience, [0], PAD, settings()) is None


@pytest.mark.parametrize("kl_in_reward", [False, True])
def test_algorithm_1_moves_the_kl_from_the_loss_into_the_reward(model, kl_in_reward):
    """With the KL in the reward (Algorithm 1) the advantage is (R - kl_coef d) normalised by the
    group's mean and std, and the update carries no KL loss: with zero advantages and a
    reference far from the policy, the loss alone (Eq. 2) moves the weights."""
    reference, noise = copy.deepcopy(model), torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in reference.parameters():
            parameter.add_(0.05 * torch.randn(parameter.shape, generator=noise))
    batch = rollout.RolloutBatch(
        prompt_ids=[[5, 6], [7, 8], [9, 10], [11, 12]],
        response_ids=[[20, 21], [22], [23, 24, 25], [26]],
        traj_index=[0, 1, 0, 1],
        is_final=[False, False, True, True],
        rewards=[1.0, 0.0],
        group_ids=[0, 0],
        failed=[False, False],
    )
    kl_coef = 0.5
    run = settings(kl_in_reward=kl_in_reward, norm_adv_by_std=kl_in_reward, kl_coef=kl_coef)
    experience, traj_adv, traj_kl = cpu_trainer.build_experience(batch, model, reference, PAD, run)
    if kl_in_reward:
        penalised = torch.tensor(batch.rewards) - kl_coef * traj_kl
        centred = penalised - penalised.mean()
        torch.testing.assert_close(traj_adv, centred / (penalised.std() + 1e-6))
        assert float(traj_kl.min()) > 0
    else:
        assert traj_kl is None
        torch.testing.assert_close(traj_adv, torch.tensor([0.5, -0.5]))
    still = Experience(
        experience.prompt_ids,
        experience.response_ids,
        torch.zeros_like(experience.advantages),
        experience.old_logp,
        experience.ref_logp,
        experience.mask,
    )
    before = [p.detach().clone() for p in model.parameters()]
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    update_policy(model, optimizer, still, [0, 1, 2, 3], PAD, run)
    moved = any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    assert moved is not kl_in_reward


def test_splits_and_question_order_are_deterministic():
    assert mini_batches(7, 3) == [[0, 1, 2], [3, 4], [5, 6]]
    assert mini_batches(2, 4) == [[0], [1], [], []]
    first = question_batches(5, 2, 6, seed=3)
    assert first == question_batches(5, 2, 6, seed=3) != question_batches(5, 2, 6, seed=4)
    flat = list(itertools.chain.from_iterable(first))
    assert sorted(flat[:5]) == sorted(flat[5:10]) == [0, 1, 2, 3, 4]  # each epoch once
    with pytest.raises(ValueError, match="no training rows"):
        question_batches(0, 2, 1, seed=0)


def test_settings_are_validated():
    with pytest.raises(ValueError, match="group_size"):
        settings(group_size=0)
    with pytest.raises(ValueError, match="clip_c"):
        settings(clip_c=1.0)
    with pytest.raises(ValueError, match="unknown verifier 'strict'"):
        settings(verifier="strict")


def test_the_training_reward_verifier_defaults_to_the_official_one(monkeypatch):
    assert (
        settings().verifier == "official" and settings(verifier="extended").verifier == "extended"
    )
    job = {
        "agent": {"chunk_tokens": 16, "memory_tokens": 6, "final_tokens": 6},
        "max_chunks": 2,
        "sampling": {"temperature": 1.0, "top_p": 1.0},
        "seed": 0,
        "mini_batches_per_step": 2,
        "norm_adv_by_std": False,
        "kl_in_reward": False,
        **{key: getattr(settings(), key) for key in cpu_trainer.ALGORITHM_KEYS},
    }
    assert cpu_trainer.settings_from_job(job).verifier == "official"
    assert cpu_trainer.settings_from_job({**job, "verifier": "extended"}).verifier == "extended"
    # step_rollouts hands the settings' verifier to collect_rollouts (which scores with it)
    seen = []
    monkeypatch.setattr(
        cpu_trainer, "collect_rollouts", lambda *args, verifier: seen.append(verifier)
    )
    for verifier in ("official", "extended"):
        cpu_trainer.step_rollouts(0, ROWS, None, settings(verifier=verifier))
    assert seen == ["official", "extended"]


def test_training_runs_updates_the_policy_and_saves_a_loadable_model(tiny, tmp_path, monkeypatch):
    # a random tiny model never answers correctly: alternate the rewards so advantages are non-zero
    rewards = itertools.cycle([1.0, 0.0, 0.0, 1.0])
    verifiers: set[str] = set()

    def fake_reward(response, answers, source, verifier):
        verifiers.add(verifier)
        return next(rewards)

    monkeypatch.setattr(rollout, "training_reward", fake_reward)
    logged: list[tuple[dict, int]] = []
    out = tmp_path / "ckpt" / "stage1"
    summary = train(
        tiny,
        out,
        ROWS,
        settings(steps=2, warmup_steps=1),
        lambda metrics, step: logged.append((metrics, step)),
    )
    assert verifiers == {"official"}  # the training reward defaults to the official verifier
    lines = [json.loads(line) for line in (out / cpu_trainer.METRICS_FILE).read_text().splitlines()]
    assert [line["step"] for line in lines] == [0, 1] == [step for _, step in logged]
    assert [line["lr"] for line in lines] == [0.0, 1e-2]  # warmup: step 0 runs at lr 0
    for line in lines:
        assert line["reward_mean"] == 0.5 and line["advantage_abs_mean"] == 0.5
        assert line["n_trajectories"] == 4 and line["n_conversations"] > 4
        assert line["updates"] == 2 and line["response_tokens"] > 0
        mean = line["response_tokens"] / line["n_conversations"]  # what memrepro cost reads
        assert line["response_tokens_mean"] == pytest.approx(mean)
        assert all(math.isfinite(line[key]) for key in ("pg_loss", "kl", "grad_norm"))
    assert lines[1]["grad_norm"] > 0
    assert summary["steps"] == 2 and summary["updates"] == 4 and summary["out_dir"] == str(out)
    assert sorted(p.name for p in out.parent.iterdir()) == ["stage1"]  # no staging left behind
    trained = AutoModelForCausalLM.from_pretrained(str(out))
    initial = AutoModelForCausalLM.from_pretrained(str(tiny))
    assert any(
        not torch.equal(a, b)
        for a, b in zip(trained.state_dict().values(), initial.state_dict().values(), strict=True)
    )
    assert AutoTokenizer.from_pretrained(str(out)).encode("Orrow") == AutoTokenizer.from_pretrained(
        str(tiny)
    ).encode("Orrow")


def test_validation_runs_as_verls_test_freq_every_k_steps_and_after_the_last():
    assert [n for n in range(1, 206) if validation_due(n, 50, 205)] == [50, 100, 150, 200, 205]
    assert [n for n in range(1, 4) if validation_due(n, 1, 3)] == [1, 2, 3]
    assert not any(validation_due(n, 0, 3) for n in range(1, 4))


@pytest.mark.parametrize(
    ("scores", "keep_best", "kept"),
    [
        ([0.2, 0.7, 0.5], True, 2),  # the best
        ([0.5, 0.5, 0.1], True, 2),  # of equal scores, the later
        ([0.2, 0.7, 0.5], False, 3),  # the last
    ],
)
def test_the_saved_policy_is_the_best_validated_one_or_the_last(
    tiny, tmp_path, monkeypatch, scores, keep_best, kept
):
    rewards = itertools.cycle([1.0, 0.0, 0.0, 1.0])  # non-zero advantages: every step moves
    monkeypatch.setattr(rollout, "training_reward", lambda *args: next(rewards))
    weights: list[dict[str, torch.Tensor]] = []
    pending = iter(scores)

    def score(engine, reference):
        assert reference.model is not engine.model  # the frozen initial policy
        weights.append({k: v.clone() for k, v in engine.model.state_dict().items()})
        return {"val_reward": next(pending)}

    out = tmp_path / "out"
    summary = train(tiny, out, ROWS, settings(steps=3), validation=Validation(1, score, keep_best))
    lines = [json.loads(line) for line in (out / cpu_trainer.METRICS_FILE).read_text().splitlines()]
    assert [line["val_reward"] for line in lines] == scores
    assert summary["checkpoint_step"] == kept
    saved = AutoModelForCausalLM.from_pretrained(str(out)).state_dict()
    for step, state in enumerate(weights, 1):
        same = all(torch.equal(saved[k], v) for k, v in state.items())
        assert same == (step == kept)


def test_a_bad_row_fails_before_any_work(tmp_path):
    bad = [*ROWS, {"index": 7, "input": "q", "answers": ["a"], "doc_ids": [1, 2]}]
    with pytest.raises(ValueError, match=r"training row 3 \(index 7\)"):
        train(tmp_path / "no-model", tmp_path / "out", bad, settings())
    assert list(tmp_path.iterdir()) == []


def test_memalpha_updates_on_a_fixed_number_of_rows_memagent_a_fixed_number_of_times():
    memagent = TrainSettings(steps=1, rollout_batch=2, group_size=2, mini_batches_per_step=3, lr=0)
    assert [updates_per_step(n, memagent) for n in (1, 30, 300)] == [3, 3, 3]
    memalpha = TrainSettings(
        steps=1, rollout_batch=2, group_size=2, mini_batches_per_step=None, mini_batch_rows=32, lr=0
    )
    assert [updates_per_step(n, memalpha) for n in (0, 1, 32, 33, 2560)] == [1, 1, 1, 2, 80]
    with pytest.raises(ValueError, match="exactly one of mini_batches_per_step, mini_batch_rows"):
        TrainSettings(
            steps=1,
            rollout_batch=2,
            group_size=2,
            mini_batches_per_step=2,
            mini_batch_rows=32,
            lr=0,
        )
