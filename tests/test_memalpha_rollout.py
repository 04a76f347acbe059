"""Mem-α rollouts scored into GRPO rows: every reward term of every chunk row, by hand."""

from __future__ import annotations

import json
import math

import pytest
from memalpha_fakes import QAAndJudge, call, words

from memrepro.agents.memalpha import MemAlphaConfig
from memrepro.agents.structured_memory import StructuredMemory
from memrepro.engines.base import Completion, SamplingParams
from memrepro.evaluation import Judge, MemoryQA
from memrepro.train.memalpha_rollout import (
    MemAlphaReward,
    memalpha_validation,
    memorize_and_score,
    training_rows,
    validation_scores,
)


class Policy:
    """Replies in order (rollouts are batched by trajectory), with token ids to train on."""

    def __init__(self, replies):
        self.replies, self.tokenizer = iter(replies), None

    def chat(self, requests, sampling):
        return [Completion(next(self.replies), [1, 2], [3, 4, 5]) for _ in requests]


def test_each_chunk_row_carries_its_rollouts_r1_r3_and_its_own_r2_r4():
    row = {
        "index": 0,
        "task": "squad",
        "prompt": "",
        "chunks": [
            "Ada was born in Caldre and moved to Varn.",
            "Varn has a large port and a market.",
        ],
        "questions": ["Where was Ada born?"],
        "answers": [["Caldre"]],
    }
    policy = Policy(
        [
            # rollout 0, chunk 1: an insert and a delete of a missing id (ok, never judged)
            call(
                "new_memory_insert", memory_type="semantic_memory", content="Ada was born in Caldre"
            )
            + call("memory_delete", memory_type="semantic_memory", memory_id="beef"),
            # rollout 1, chunk 1: no call
            "Nothing worth keeping.",
            # rollout 0, chunk 2: a core update
            call("memory_update", memory_type="core_memory", new_content="User asks about Ada"),
            # rollout 1, chunk 2: an insert and its duplicate (skipped: a failure for r2)
            call("new_memory_insert", memory_type="semantic_memory", content="Varn has a port")
            + call("new_memory_insert", memory_type="semantic_memory", content="Varn has a port"),
        ]
    )
    judge = QAAndJudge()
    scored = memorize_and_score(
        policy,
        judge,
        [row],
        group_size=2,
        agent=MemAlphaConfig(max_new_tokens=64),
        sampling=SamplingParams(1.0, 1.0, seed=0),
        new_memory=lambda q, g: StructuredMemory(words, seed=g),
        qa=MemoryQA(SamplingParams(0.7, 1.0), top_k=20, prompt_cap=30000, max_tokens=16),
        qa_judge=Judge(SamplingParams(0.6, 0.95), 8),
        reward=MemAlphaReward(beta=0.05, gamma=0.1, judge_sampling=SamplingParams(0.1, 1.0)),
    )
    batch, terms = training_rows(*scored, group_size=2, tokenizer=policy.tokenizer)
    # rollout order: (r0 c1, r0 c2, r1 c1, r1 c2); one group: the instance
    assert terms.r1 == [1.0, 1.0, 0.0, 0.0]  # "Caldre" only in rollout 0's memory
    assert terms.r3 == pytest.approx([1 - 9 / 17] * 2 + [1 - 4 / 17] * 2)  # 17 chunk words
    assert terms.r2 == [1.0, 1.0, 0.0, 0.5]
    assert terms.r4 == [0.5, 1.0, 0.0, 1.0]  # the delete counts 0; no call, 0
    beta_r3 = [0.05 * r for r in terms.r3]
    expected = [
        1.0 + beta_r3[0] + 1.0 + 0.05,
        1.0 + beta_r3[1] + 1.0 + 0.1,
        0.0 + beta_r3[2] + 0.0 + 0.0,
        0.0 + beta_r3[3] + 0.5 + 0.1,
    ]
    assert batch.rewards == pytest.approx(expected)
    assert batch.group_ids == [0, 0, 0, 0] and batch.traj_index == [0, 1, 2, 3]
    assert batch.is_final == [False, True, False, True]
    assert batch.response_ids == [[3, 4, 5]] * 4 and terms.memory_tokens == [9, 9, 4, 4]
    judged = [r for r in judge.requests if r.messages[0]["content"].startswith("You are an")]
    assert len(judged) == 4  # insert, core update, two inserts: never the delete
    assert judged[0].messages[1]["content"].startswith("Analyze this semantic memory content:")


def test_the_cpu_reference_trainer_runs_memalphas_grpo_on_the_tiny_model(tmp_path):
    """The same trainer as MemAgent's, with Mem-α's rollouts, reward and std-normalised groups:
    the QA step and the judge run on the frozen reference (the initial policy)."""
    from memrepro.data.memalpha import instances_by_source
    from memrepro.data.sources import fixture_path
    from memrepro.models.tiny import build_tiny_model
    from memrepro.train.cpu_trainer import TrainSettings, Validation, train
    from memrepro.train.memalpha_rollout import check_instance, memalpha_rollouts

    grouped = instances_by_source(fixture_path("memalpha/train.parquet"))
    rows = [grouped["squad"][0], grouped["pubmed-rct"][0]]
    held_out = instances_by_source(fixture_path("memalpha/validation.parquet"))
    validation_rows = [held_out["squad"][0], held_out["booksum"][0]]
    corpus = [chunk for row in rows for chunk in row["chunks"]]
    model = build_tiny_model(tmp_path / "tiny", corpus)
    settings = TrainSettings(
        steps=1,
        rollout_batch=2,
        group_size=2,
        mini_batches_per_step=2,
        lr=1e-3,
        warmup_steps=0,
        seed=0,
        generation_batch=4,
        micro_batch_rows=4,
        norm_adv_by_std=True,
    )
    agent = MemAlphaConfig(max_new_tokens=12, prompt_cap=6144)  # the training cap, measured
    qa = MemoryQA(SamplingParams(0.7, 1.0, seed=0), top_k=20, prompt_cap=30000, max_tokens=6)
    qa_judge = Judge(SamplingParams(0.6, 0.95, seed=0), 4)
    rollouts = memalpha_rollouts(
        settings,
        agent,
        words,
        qa,
        qa_judge,
        MemAlphaReward(beta=0.05, gamma=0.1, judge_sampling=SamplingParams(0.1, 1.0, seed=0)),
    )
    greedy = SamplingParams(0.0, 1.0, seed=0)
    score = memalpha_validation(validation_rows, 1, greedy, agent, words, qa, qa_judge, seed=0)
    summary = train(
        model,
        tmp_path / "out",
        rows,
        settings,
        rollouts=rollouts,
        check_row=check_instance,
        validation=Validation(1, score, keep_best=True),
    )
    lines = (tmp_path / "out" / "train_metrics.jsonl").read_text().splitlines()
    metrics = [json.loads(line) for line in lines]
    assert summary["steps"] == 1 and len(metrics) == 1 and summary["checkpoint_step"] == 1
    validated = {key for key in metrics[0] if key.startswith("val")}
    assert validated == {"val_reward", "val/squad", "val/booksum"}
    n_chunks = sum(len(row["chunks"]) for row in rows)
    for step in metrics:
        assert step["n_conversations"] + step["n_empty"] == n_chunks * settings.group_size
        assert {"r1_mean", "r2_mean", "r3_mean", "r4_mean", "memory_tokens_mean"} <= set(step)
        assert all(math.isfinite(step[key]) for key in ("pg_loss", "kl", "reward_mean"))
    assert (tmp_path / "out" / "config.json").is_file()
    with pytest.raises(ValueError, match="training row 0: missing chunks"):
        train(model, tmp_path / "bad", [{"task": "squad"}], settings, check_row=check_instance)


def test_validation_scores_r1_alone_averaged_per_source_then_over_sources():
    """verl's val-core scores: each source's mean over its rollouts, then the unweighted mean."""
    scores = validation_scores(["squad", "squad", "booksum"], [1.0, 0.0, 0.25])
    assert scores == {"val_reward": (0.5 + 0.25) / 2, "val/booksum": 0.25, "val/squad": 0.5}
    with pytest.raises(ValueError, match="no data source was scored"):
        validation_scores([], [])


def test_validation_memorizes_with_the_given_sampling_and_answers_on_the_reference():
    """The official _validate: the policy memorises each instance (greedy), the frozen QA step
    answers from the final memory, r1 is the score; no judge is asked about the contents."""
    rows = [
        {
            "index": i,
            "task": task,
            "prompt": "",
            "chunks": ["Ada was born in Caldre."],
            "questions": ["Where was Ada born?"],
            "answers": [["Caldre"]],
        }
        for i, task in enumerate(["squad", "hotpotqa"])
    ]
    insert = call("new_memory_insert", memory_type="semantic_memory", content="born in Caldre")
    policy = Policy([insert, "Nothing to keep."])  # squad remembers, hotpotqa does not
    seen: list[SamplingParams] = []
    chat = policy.chat
    policy.chat = lambda requests, sampling: seen.append(sampling) or chat(requests, sampling)
    reference = QAAndJudge()
    greedy = SamplingParams(0.0, 1.0, seed=0)
    score = memalpha_validation(
        rows,
        1,
        greedy,
        MemAlphaConfig(max_new_tokens=64),
        words,
        MemoryQA(SamplingParams(0.7, 1.0), top_k=20, prompt_cap=30000, max_tokens=16),
        Judge(SamplingParams(0.6, 0.95), 8),
        seed=0,
    )
    assert score(policy, reference) == {"val_reward": 0.5, "val/hotpotqa": 0.0, "val/squad": 1.0}
    assert seen == [greedy]
    assert not [r for r in reference.requests if r.messages[0]["content"].startswith("You are an")]
