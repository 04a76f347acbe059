"""The Mem-α toy task: instances, the compact prompts through the real memorisation workflow,
what each step did, the scripted expert and reader scored by Mem-α's reward (hand-computed), the
config, and one miniature end-to-end run of the experiment's runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from memrepro.agents.memalpha import OFFICIAL_PROMPTS, MemAlphaConfig, memorize
from memrepro.agents.memalpha_tools import ToolCall, parse_calls
from memrepro.agents.structured_memory import StructuredMemory
from memrepro.config import ConfigError
from memrepro.engines.base import ChatRequest, SamplingParams, prompt_ids
from memrepro.models.tiny import build_tokenizer
from memrepro.toy import memalpha_runner as runner
from memrepro.toy import runner as toy_runner
from memrepro.toy.__main__ import main
from memrepro.toy.memalpha_config import load_config, parse_config
from memrepro.toy.memalpha_policy import (
    MemAlphaExpertSettings,
    ScriptedMemorizer,
    ScriptedReader,
    judge_reply,
    read_answer,
)
from memrepro.toy.memalpha_task import (
    TASK,
    TOY_PROMPTS,
    MemAlphaTaskSettings,
    check_instances,
    classify_step,
    insert_call,
    make_instances,
    tokenizer_corpus,
)
from memrepro.toy.task import parse_facts
from memrepro.train.cpu_trainer import METRICS_FILE
from memrepro.train.memalpha_rewards import content_verdict

TASK_SETTINGS = MemAlphaTaskSettings(n_keys=6, n_chunks=3, chunk_tokens=8)
AGENT = MemAlphaConfig(max_new_tokens=48, prompts=TOY_PROMPTS)


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer(tokenizer_corpus(TASK_SETTINGS), 1000, 512)


def test_instances_have_the_training_schema_one_fact_per_chunk_and_are_seeded(tokenizer):
    instances = make_instances(30, seed=4, task=TASK_SETTINGS)
    assert instances == make_instances(30, seed=4, task=TASK_SETTINGS)
    assert instances != make_instances(30, seed=5, task=TASK_SETTINGS)
    for i, instance in enumerate(instances):
        assert instance["index"] == i and instance["task"] == TASK
        facts = [parse_facts(chunk) for chunk in instance["chunks"]]
        assert all(len(f) == 1 for f in facts)
        keys = [f[0][0] for f in facts]
        assert len(set(keys)) == 3  # every fact about another key, and every key asked
        assert instance["questions"] == [f"What is the number of the {k}?" for k in keys]
        assert instance["answers"] == [f[0][1] for f in facts]
    check_instances(tokenizer, instances, TASK_SETTINGS)
    short = {**instances[0], "chunks": [instances[0]["chunks"][0].rsplit(" ", 1)[0]]}
    with pytest.raises(ValueError, match=r"toy instance 0, chunk 0: \d tokens, expected 8"):
        check_instances(tokenizer, [short], TASK_SETTINGS)


def test_the_toy_prompts_show_the_memory_compactly_and_the_official_ones_stay_default(tokenizer):
    assert MemAlphaConfig().prompts is OFFICIAL_PROMPTS
    memory = StructuredMemory(len, frozenset({"core"}), semantic=[("ab12", "owl is 3.")])
    request = next(memorize([" so fox is 7. and"], memory, AGENT))
    system, user = (m["content"] for m in request.messages)
    assert "[ab12] owl is 3." in system and "<episodic_memory>\nEmpty." in system
    assert user == "<new_chunk>\nso fox is 7. and\n</new_chunk>"
    official = next(memorize([" so fox is 7. and"], memory, MemAlphaConfig()))
    assert len(prompt_ids(tokenizer, request)) < 100 < 2000 < len(prompt_ids(tokenizer, official))


@pytest.mark.parametrize(
    ("content", "store", "action"),
    [
        ("fox is 7.", "semantic", "concise"),
        ("so fox is 7. and", "semantic", "verbatim"),
        ("fox is 7.", "episodic", "episodic"),
        ("owl is 7.", "semantic", "other"),  # the wrong key copied
        ("fox is 7.", "core", "other"),
    ],
)
def test_each_step_is_classified_by_what_it_did_with_the_fact(content, store, action):
    _, calls = parse_calls(insert_call(store, content))
    assert classify_step(" so fox is 7. and", calls) == action


def test_steps_without_one_readable_insert():
    chunk = " so fox is 7. and"
    call = ToolCall(
        "new_memory_insert", '{"memory_type": "semantic_memory", "content": "fox is 7."}'
    )
    assert classify_step(chunk, []) == "skip"
    assert classify_step(chunk, [call, call]) == "other"
    assert classify_step(chunk, [ToolCall("", "", "unreadable call")]) == "other"
    assert classify_step(chunk, [ToolCall("memory_delete", call.arguments)]) == "other"


def test_the_reader_answers_from_memory_and_judges_by_memory_type():
    memory = "1. owl is 3.\n2. fox is 7."
    assert read_answer("What is the number of the fox?", memory) == "7"
    assert read_answer("What is the number of the elk?", memory) == "unknown"
    assert content_verdict(judge_reply("semantic", "fox is 7.")) == 1.0
    assert content_verdict(judge_reply("semantic", "so and then")) == 0.0
    assert content_verdict(judge_reply("episodic", "fox is 7.")) == 0.0


CONCISE_R3 = 1 - 15 / 24  # 3 chunks of 8 tokens; "fox is 7." is 5 tokens


@pytest.mark.parametrize(
    ("noise", "action", "expected"),
    [
        ({}, "concise", {"r1": 1.0, "r2": 1.0, "r3": CONCISE_R3, "r4": 1.0}),
        ({"skip": 1.0}, "skip", {"r1": 0.0, "r2": 0.0, "r3": 1.0, "r4": 0.0}),
        ({"verbatim": 1.0}, "verbatim", {"r1": 1.0, "r2": 1.0, "r3": None, "r4": 1.0}),
        ({"episodic": 1.0}, "episodic", {"r1": 1.0, "r2": 1.0, "r3": CONCISE_R3, "r4": 0.0}),
    ],
)
def test_each_expert_action_costs_its_own_reward_term(tokenizer, noise, action, expected):
    instances = make_instances(4, seed=1, task=TASK_SETTINGS)
    if expected["r3"] is None:  # the memory holds the chunks themselves, stripped
        size = runner.token_counter(tokenizer)
        stored = [sum(size(c.strip()) for c in i["chunks"]) / 24 for i in instances]
        expected["r3"] = 1 - sum(stored) / len(stored)
        assert expected["r3"] < 0.1
    reward = runner.mem_alpha_reward(runner.RewardWeights(beta=0.05, gamma=0.1))
    result = runner.outcomes(
        ScriptedMemorizer(tokenizer, MemAlphaExpertSettings(**noise)),
        ScriptedReader(tokenizer),
        instances,
        AGENT,
        reward,
        SamplingParams(),
        samples=2,
    )
    for term in ("r1", "r2", "r3", "r4"):
        assert result[term] == pytest.approx(expected[term]), term
    assert result["actions"][action] == 1.0
    row = expected["r1"] + 0.05 * expected["r3"] + expected["r2"] + 0.1 * expected["r4"]
    assert result["reward"] == pytest.approx(row)


def test_the_reader_is_a_chat_engine_for_the_judge_and_the_qa_step(tokenizer):
    reader = ScriptedReader(tokenizer)
    judge = ChatRequest(
        (
            {"role": "system", "content": "x"},
            {"role": "user", "content": "Analyze this episodic memory content:\n\nfox is 7."},
        ),
        8,
    )
    qa = ChatRequest(
        (
            {"role": "system", "content": "1. fox is 7."},
            {"role": "user", "content": "What is the number of the fox?"},
        ),
        8,
    )
    verdict, reply = (c.text for c in reader.chat([judge, qa], SamplingParams()))
    assert content_verdict(verdict) == 0.0 and reply == "7"


def base_config() -> dict:
    return {
        "kind": "memalpha",
        "seeds": [0],
        "task": {"n_keys": 4, "n_chunks": 2, "chunk_tokens": 6},
        "agent": {"max_new_tokens": 8},
        "model": {
            "hidden_size": 16,
            "num_layers": 1,
            "num_heads": 2,
            "num_kv_heads": 1,
            "intermediate_size": 32,
        },
        "sft": {"rows": 2, "batch_size": 4},
        "rl": {
            "rows": 2,
            "variants": {
                "paper": {"beta": 0.05, "gamma": 0.1},
                "no_content": {"beta": 0.05, "gamma": 0.0},
            },
            "steps": 1,
            "rollout_batch": 1,
            "group_size": 2,
            "mini_batch_rows": 4,
            "lr": 0.01,
            "generation_batch": 4,
            "micro_batch_rows": 4,
        },
        "eval": {"rows": 2, "samples": 1, "batch_size": 4},
    }


def test_the_shipped_config_loads(repo: Path):
    config = load_config(repo / "config" / "toy_memalpha.yaml")
    assert len(config.seeds) >= 3
    weights = {(w.beta, w.gamma) for w in config.rl.variants.values()}
    assert {(0.05, 0.1), (0.05, 0.0), (0.0, 0.1)} <= weights  # the paper's, γ = 0, β = 0
    settings = config.rl.train_settings(seed=3)
    assert settings.norm_adv_by_std and settings.mini_batch_rows and settings.seed == 3


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kind": "memagent"}, "kind must be memalpha"),
        ({"extra": 1}, r"unknown key\(s\) extra"),
        ({"expert": {"skip": 0.7, "verbatim": 0.7}}, "sum to <= 1"),
        ({"expert": {"forget": 0.1}}, r"expert: unknown key\(s\) forget"),
        ({"reward": {"beta": 0.1}}, "reward must be a mapping with exactly beta, gamma"),
        ({"reward": {"beta": -1, "gamma": 0}}, "need beta, gamma >= 0"),
        ({"rl": {"steps": 1}}, "rl.variants must map"),
        ({"task": {"chunk_tokens": 4}}, "task.chunk_tokens must be >= 5"),
    ],
)
def test_config_errors_name_the_key(change, message, tmp_path):
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump({**base_config(), **change}))
    with pytest.raises(ConfigError, match=message) as error:
        load_config(path)
    assert str(path) in str(error.value)


def test_the_toy_sets_the_algorithm_keys_itself():
    raw = base_config()
    raw["rl"]["norm_adv_by_std"] = False
    with pytest.raises(ConfigError, match="norm_adv_by_std are set by the toy itself"):
        parse_config(raw)


def test_the_entry_point_dispatches_on_kind(tmp_path, capsys):
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump({**base_config(), "kind": "mem1"}))
    assert main(["--config", str(path), "--out", str(tmp_path / "out")]) == 2
    assert "kind must be memagent or memalpha" in capsys.readouterr().err


def test_a_miniature_run_writes_every_output_and_resumes(tmp_path, monkeypatch):
    config = parse_config(base_config())
    summary = runner.run(config, tmp_path)
    seed_dir = tmp_path / "seed0"
    for path in (
        "init/config.json",
        "sft/model.safetensors",
        f"paper/{METRICS_FILE}",
        f"no_content/{METRICS_FILE}",
        "sft.json",
        "paper.json",
    ):
        assert (seed_dir / path).is_file(), path
    step = json.loads((seed_dir / "paper" / METRICS_FILE).read_text().splitlines()[0])
    assert {"r1_mean", "r2_mean", "r3_mean", "r4_mean", "memory_tokens_mean"} <= set(step)
    result = json.loads((seed_dir / "result.json").read_text())
    assert set(result["variants"]) == {"paper", "no_content"}
    assert set(result["warm_start"]) == {"sampled", "greedy"}
    paper = summary["policies"]["paper"]["sampled"]
    assert paper["delta"]["per_seed"] == [
        paper["reward"]["per_seed"][0]
        - summary["policies"]["warm_start"]["sampled"]["reward"]["mean"]
    ]
    assert json.loads((tmp_path / "summary.json").read_text()) == summary
    table = (tmp_path / "summary.md").read_text()
    assert "| 0 |" in table and "| paper |" in table and "| no_content |" in table
    for name in ("paper", "no_content"):
        assert (tmp_path / f"training_curve_{name}.png").is_file()
    # a finished seed is read back, not rerun
    monkeypatch.setattr(toy_runner, "build_tiny_model", lambda *a, **k: pytest.fail("reran"))
    assert runner.run(config, tmp_path)["policies"] == summary["policies"]
