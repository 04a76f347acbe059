"""MemAlphaLoop and MemAlphaTrainer's advantage under verl 0.9.1's v1 machinery: a scripted
rollout server, a rule-based QA server (the engine protocol), verl's real postprocess.

Runs in the verl venv: PYTHONPATH=src /tmp/verlvenv/bin/python -m pytest tests/verl
"""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("verl.experimental.agent_loop")

import torch
from memagent_fakes import (
    FakeServerManager,
    TransferQueueRows,
    loop_kwargs,
    run_session,
    tiny_tokenizer,
)
from memalpha_fakes import QAAndJudge, call
from omegaconf import OmegaConf
from verl.utils.dataset.rl_dataset import RLHFDataset

from memrepro.train.algorithms import broadcast_to_conversations, group_advantages
from memrepro.verl import QA_URL_ENV, agent_loop
from memrepro.verl.dataset import memalpha_loop_settings, write_memalpha_verl_dataset
from memrepro.verl.trainer import (
    memalpha_advantages,
    memalpha_metrics,
    memalpha_row_rewards,
)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::DeprecationWarning")

SAMPLING = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0}
INSTANCE = {
    "index": 3,
    "task": "squad",
    "prompt": "Memorize the passage.",
    "chunks": ["Ada was born in Caldre .", "Varn has a port ."],
    "questions": ["Where was Ada born?"],
    "answers": [["Caldre"]],
}
JOB = {
    "agent": {
        "max_new_tokens": 64,
        "visible_items": 5,
        "prompt_cap": 16384,
        "enable_thinking": False,
    },
    "beta": 0.05,
    "gamma": 0.1,
    "judge": {"max_tokens": 32, "sampling": {"temperature": 0.1, "top_p": 1.0, "seed": None}},
    "qa": {
        "top_k": 20,
        "prompt_cap": 30000,
        "max_tokens": 16,
        "sampling": {"temperature": 0.7, "top_p": 1.0, "seed": None},
        "judge_sampling": {"temperature": 0.6, "top_p": 0.95, "seed": None},
        "judge_max_tokens": 8,
    },
    "qa_server": {"concurrency": 4},
}
LOOP_CONFIG = {
    "prompt_length": 16384,
    "response_length": 64,
    "chat_template_kwargs": {"enable_thinking": False},
}


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer()


@pytest.fixture
def row(tmp_path, tokenizer):
    return dataset_row(tmp_path, tokenizer, JOB)


def dataset_row(tmp_path, tokenizer, job, validation=False):
    counter = tmp_path / "counter"
    tokenizer.save_pretrained(counter)
    settings = memalpha_loop_settings(job, str(counter), "qwen3-32b", str(counter), validation)
    parquet = tmp_path / "train.parquet"
    write_memalpha_verl_dataset([INSTANCE], parquet, tmp_path / "store.sqlite", settings)
    config = OmegaConf.create(
        {"prompt_key": "prompt", "max_prompt_length": 512, "cache_dir": str(tmp_path / "c")}
    )
    dataset = RLHFDataset(str(parquet), tokenizer, config)
    return dataset[0]


@pytest.fixture
def qa(tokenizer, monkeypatch):
    server = QAAndJudge(tokenizer)
    monkeypatch.setattr(agent_loop, "qa_engine", lambda *args: server)
    return server


def scripted(tokenizer, replies):
    """Chunk step k of session s answers replies[s][k] (then EOS)."""

    def respond(prompt_ids, max_tokens):
        text = replies[respond.calls // 2][respond.calls % 2]
        respond.calls += 1
        return [*tokenizer.encode(text, add_special_tokens=False), tokenizer.eos_token_id]

    respond.calls = 0
    return respond


REPLIES = [
    [  # session 0: an insert that answers the question, then a core update
        call("new_memory_insert", memory_type="semantic_memory", content="Ada was born in Caldre"),
        call("memory_update", memory_type="core_memory", new_content="User studies Ada"),
    ],
    [  # session 1: no call, then an insert and its duplicate (skipped: a failure)
        "Nothing to keep.",
        call("new_memory_insert", memory_type="semantic_memory", content="Varn has a port")
        + call("new_memory_insert", memory_type="semantic_memory", content="Varn has a port"),
    ],
]


def sessions(tokenizer, row, qa):
    server = FakeServerManager(scripted(tokenizer, REPLIES))
    return [run_session(tokenizer, server, row, SAMPLING, "i0", s, **LOOP_CONFIG) for s in (0, 1)]


def test_one_row_per_chunk_step_each_with_its_own_reward(tokenizer, row, qa):
    outputs = sessions(tokenizer, row, qa)
    assert [len(session) for session in outputs] == [2, 2]
    terms = [[o.extra_fields for o in session] for session in outputs]
    assert [[t["memalpha_r1"] for t in s] for s in terms] == [[1.0, 1.0], [0.0, 0.0]]
    assert [[t["memalpha_r2"] for t in s] for s in terms] == [[1.0, 1.0], [0.0, 0.5]]
    assert [[t["memalpha_r4"] for t in s] for s in terms] == [[1.0, 1.0], [0.0, 1.0]]
    for session in terms:
        for t in session:
            expected = t["memalpha_r1"] + 0.05 * t["memalpha_r3"] + t["memalpha_r2"]
            assert t["memalpha_reward"] == pytest.approx(expected + 0.1 * t["memalpha_r4"])
    # verl calls no reward manager: the final output carries its own row's reward
    assert [s[-1].reward_score for s in outputs] == [t[-1]["memalpha_reward"] for t in terms]
    # r1 asked the QA server the instance's question over each final memory; r4 judged 4 writes
    judged = [r for r in qa.requests if r.messages[0]["content"].startswith("You are an expert")]
    assert len(judged) == 4


def test_a_validation_row_scores_its_rollout_by_r1_alone(tokenizer, tmp_path, qa):
    """The official _validate: verl's validation reads the final row's reward, r1 only."""
    row = dataset_row(tmp_path, tokenizer, JOB, validation=True)
    outputs = sessions(tokenizer, row, qa)
    assert [s[-1].reward_score for s in outputs] == [1.0, 0.0]
    assert outputs[0][-1].extra_fields["memalpha_reward"] > 1.0  # r2, r3, r4 still logged


def test_a_cut_response_trains_on_the_sampled_tokens_before_the_made_up_result(
    tokenizer, tmp_path, qa
):
    job = {**JOB, "agent": {**JOB["agent"], "cut_responses": True}}
    row = dataset_row(tmp_path, tokenizer, job)
    kept = call("new_memory_insert", memory_type="semantic_memory", content="Ada was born here")
    dropped = call("new_memory_insert", memory_type="semantic_memory", content="Varn has a port")
    replies = [[kept + "✿RESULT✿: ok\n" + dropped, "Done"]]
    server = FakeServerManager(scripted(tokenizer, replies))
    first, second = run_session(tokenizer, server, row, SAMPLING, "i0", 0, **LOOP_CONFIG)
    assert first.extra_fields["memalpha_tool_calls"] == 1  # the call after the result never ran
    assert first.extra_fields["memalpha_r2"] == 1.0
    generated = tokenizer.encode(replies[0][0], add_special_tokens=False)
    ids = list(first.response_ids)
    assert ids == generated[: len(ids)] and len(ids) < len(generated)  # a prefix, cut
    assert tokenizer.decode(ids).strip() == kept.strip()
    assert len(first.response_mask) == len(ids)
    assert tokenizer.decode(list(second.response_ids), skip_special_tokens=True) == "Done"


def test_the_trainer_recovers_each_rows_reward_and_groups_by_instance(
    tokenizer, row, qa, monkeypatch
):
    """verl's postprocess copies the final reward onto every row of a session; the trainer's
    advantage reads each row's own reward and normalises over the instance's rows, as the
    official naive.py: equal to our CPU trainer's group_advantages(norm_by_std=True)."""
    outputs = sessions(tokenizer, row, qa)
    stored = TransferQueueRows(tokenizer, monkeypatch)
    for session_id, session in enumerate(outputs):
        stored.store(session, **loop_kwargs(row, "i0", session_id))
    rm_scores = [float(r["rm_scores"].sum()) for r in stored.rows]
    assert rm_scores[0] == rm_scores[1]  # verl's copy: not the per-row rewards
    extra = [r["extra_fields"] for r in stored.rows]
    rewards, groups = memalpha_row_rewards(stored.keys, stored.tags, extra)
    own = [t.extra_fields["memalpha_reward"] for session in outputs for t in session]
    assert rewards == pytest.approx(own) and groups == ["i0"] * 4
    mask = stored.advantage_input().batch["response_mask"]
    algorithm = OmegaConf.create({"norm_adv_by_std_in_grpo": True})
    token_level, advantages = memalpha_advantages(rewards, groups, mask, algorithm, 2)
    assert token_level.sum(-1).tolist() == pytest.approx(rewards)
    expected = broadcast_to_conversations(
        group_advantages(torch.tensor(rewards), groups, norm_by_std=True), torch.arange(4), mask
    )
    torch.testing.assert_close(advantages, expected.to(advantages.dtype))
    metrics = memalpha_metrics(stored.tags, extra)
    assert metrics["memalpha/r2/mean"] == pytest.approx(0.625)
    assert metrics["memalpha/rows"] == 4.0


def test_padding_rows_score_zero_in_a_group_of_their_own():
    keys = ["i0_0_0", "i0_1_0", "padab_0_0"]
    tags = [{}, {}, {"is_padding": True}]
    extra = [{"memalpha_reward": 1.5}, {"memalpha_reward": 0.5}, {"memalpha_reward": 1.5}]
    rewards, groups = memalpha_row_rewards(keys, tags, extra)
    assert rewards == [1.5, 0.5, 0.0] and groups == ["i0", "i0", "padab"]
    mask = torch.tensor([[1, 1, 0], [1, 0, 0], [0, 0, 0]])
    _, advantages = memalpha_advantages(
        rewards, groups, mask, OmegaConf.create({"norm_adv_by_std_in_grpo": True}), 2
    )
    assert advantages[2].abs().sum() == 0
    assert advantages[0, 0] > 0 > advantages[1, 0]
    with pytest.raises(ValueError, match="no memalpha_reward"):
        memalpha_row_rewards(["i0_0_0"], [{}], [{}])


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({**LOOP_CONFIG, "response_length": 32}, "max_new_tokens=64 exceeds"),
        ({**LOOP_CONFIG, "prompt_length": 4096}, "prompt_cap=16384 must be set and at most"),
        ({**LOOP_CONFIG, "chat_template_kwargs": {}}, "enable_thinking=False but verl"),
    ],
)
def test_settings_verl_would_run_differently_raise(tokenizer, row, qa, config, message):
    server = FakeServerManager(scripted(tokenizer, REPLIES))
    with pytest.raises(ValueError, match=message):
        run_session(tokenizer, server, row, SAMPLING, "i0", 0, **config)


def test_the_qa_server_address_must_come_from_the_job(monkeypatch):
    agent_loop.qa_engine.cache_clear()
    monkeypatch.delenv(QA_URL_ENV, raising=False)
    with pytest.raises(RuntimeError, match="MEMREPRO_QA_BASE_URL is not set"):
        agent_loop.qa_engine("qwen3-32b", "/nonexistent", 4)


def test_rows_name_their_instance_and_carry_the_runs_settings(row):
    info = row["extra_info"]
    assert json.loads(info["settings"])["beta"] == 0.05
    instance = agent_loop.load_instance(info["context_store"], info["instance_id"])
    assert instance["chunks"] == INSTANCE["chunks"] and instance["answers"] == [["Caldre"]]
    assert row["data_source"] == "squad"
    assert np.asarray(row["reward_model"]["ground_truth"]).tolist() == ['["Caldre"]']
