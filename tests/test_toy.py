"""The toy memory task: rows, the scripted expert through the real MemAgent workflow, SFT, the
config, the summary, and one miniature end-to-end run of the experiment's runner."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest
import torch
import yaml
from transformers import AutoModelForCausalLM, AutoTokenizer

from memrepro.agents.chunking import truncated_chunks
from memrepro.agents.memagent import NO_MEMORY, MemAgentConfig
from memrepro.config import ConfigError
from memrepro.engines.base import ChatRequest, SamplingParams
from memrepro.engines.hf import HFEngine
from memrepro.models.tiny import build_tiny_model, build_tokenizer
from memrepro.toy import runner
from memrepro.toy.config import load_config, parse_config
from memrepro.toy.evaluate import classify, expert_accuracy, rollout_outcomes
from memrepro.toy.policy import ScriptedEngine, final_answer, memory_update, prompt_ids
from memrepro.toy.sft import SFTSettings, nll, scripted_traces, sft
from memrepro.toy.task import (
    FACT_TOKENS,
    FILLER,
    TaskSettings,
    asked_key,
    check_rows,
    fact,
    make_rows,
    parse_facts,
    tokenizer_corpus,
)
from memrepro.train.cpu_trainer import METRICS_FILE

TASK = TaskSettings(n_keys=8, n_chunks=3, chunk_tokens=7, distractor_prob=0.5)
AGENT = MemAgentConfig(chunk_tokens=7, memory_tokens=8, final_tokens=8, final_prompt="boxed")


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer(tokenizer_corpus(TASK), 1000, 512)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(
        tmp_path_factory.mktemp("toy") / "model",
        tokenizer_corpus(TASK),
        vocab_size=1000,
        hidden_size=32,
        num_layers=1,
        num_heads=2,
        num_kv_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        initializer_range=0.1,
    )


def test_rows_have_the_schema_one_needle_and_are_seeded():
    rows = make_rows(60, seed=5, task=TASK)
    assert rows == make_rows(60, seed=5, task=TASK)
    assert rows != make_rows(60, seed=6, task=TASK)
    for i, row in enumerate(rows):
        assert set(row) >= {"index", "input", "answers", "context"} and row["index"] == i
        key, (value,) = asked_key(row["input"]), row["answers"]
        facts = parse_facts(row["context"])
        assert [f for f in facts if f[0] == key] == [(key, value)]  # exactly one needle
        assert len({k for k, _ in facts}) == len(facts) <= TASK.n_chunks  # keys all differ
    n_facts = [len(parse_facts(row["context"])) for row in rows]
    assert min(n_facts) == 1 and max(n_facts) == TASK.n_chunks  # distractor_prob 0.5
    assert {row["needle_chunk"] for row in rows} == set(range(TASK.n_chunks))


def test_every_word_is_one_token_so_chunks_split_at_the_facts(tokenizer):
    for word in FILLER:
        assert len(tokenizer.encode(f" {word}", add_special_tokens=False)) == 1, word
    assert len(tokenizer.encode(fact("fox", "7"), add_special_tokens=False)) == FACT_TOKENS
    rows = make_rows(40, seed=1, task=TASK)
    check_rows(tokenizer, rows, TASK)
    for row in rows:
        chunks = truncated_chunks(tokenizer, row["context"], TASK.chunk_tokens, TASK.n_chunks)
        assert "".join(chunks) == row["context"]
        assert fact(asked_key(row["input"]), row["answers"][0]) in chunks[row["needle_chunk"]]
    moved = {**rows[0], "needle_chunk": (rows[0]["needle_chunk"] + 1) % TASK.n_chunks}
    with pytest.raises(ValueError, match="toy row 0: needle in chunks"):
        check_rows(tokenizer, [moved], TASK)
    with pytest.raises(ValueError, match="chunk token counts"):
        check_rows(tokenizer, [{**rows[0], "context": rows[0]["context"].rsplit(" ", 1)[0]}], TASK)


def test_task_settings_are_checked():
    with pytest.raises(ValueError, match="chunk_tokens must be >= 5"):
        TaskSettings(chunk_tokens=4)
    with pytest.raises(ValueError, match=r"n_chunks \(5\) must be <= task.n_keys \(4\)"):
        TaskSettings(n_keys=4, n_chunks=5)


def test_the_expert_policy():
    rng = random.Random(0)
    needle, other = " fox is 7. so", " so owl is 3."
    assert memory_update("fox", NO_MEMORY, needle, rng, 0.0) == " fox is 7."
    assert memory_update("fox", " fox is 7.", other, rng, 0.0) == " fox is 7."
    assert memory_update("fox", NO_MEMORY, " so and or", rng, 1.0, "distract") == NO_MEMORY
    assert memory_update("fox", NO_MEMORY, needle, rng, 1.0, "forget") == NO_MEMORY
    assert memory_update("fox", " fox is 7.", other, rng, 1.0, "distract") == " owl is 3."
    assert memory_update("fox", NO_MEMORY, needle, rng, 1.0, "distract") == " fox is 7."
    assert final_answer(" fox is 7.", rng) == "\\boxed{7}"
    assert final_answer(NO_MEMORY, rng) in {f"\\boxed{{{d}}}" for d in range(10)}


def test_the_clean_expert_solves_every_row_through_memagent(tokenizer):
    rows = make_rows(30, seed=2, task=TASK)
    engine = ScriptedEngine(tokenizer, eps=0.0)
    clean = rollout_outcomes(engine, rows, AGENT, TASK.n_chunks, SamplingParams(), samples=2)
    assert clean == {
        "accuracy": 1.0,
        "outcomes": {"correct": 1.0, "distractor": 0.0, "other": 0.0, "no_box": 0.0},
    }
    forgetful = expert_accuracy(tokenizer, rows, AGENT, TASK.n_chunks, 1.0, "forget", seed=0)
    assert forgetful < 0.5  # never records the needle: guesses
    distracted = rollout_outcomes(
        ScriptedEngine(tokenizer, eps=1.0, noise="distract"),
        rows,
        AGENT,
        TASK.n_chunks,
        SamplingParams(),
        samples=1,
    )
    needle_last = sum(
        row["needle_chunk"] == TASK.n_chunks - 1 or len(parse_facts(row["context"])) == 1
        for row in rows
    )
    assert distracted["accuracy"] >= needle_last / len(rows) > 0
    assert distracted["outcomes"]["distractor"] > 0


def test_scripted_conversations_are_tokenized_as_hf_engine_does(tiny):
    tokenizer = AutoTokenizer.from_pretrained(tiny)
    rows = make_rows(3, seed=3, task=TASK)
    traces = scripted_traces(tokenizer, rows, AGENT, TASK.n_chunks, 0.0, 0, noise="forget")
    assert len(traces.prompt_ids) == 3 * (TASK.n_chunks + 1) and traces.expert_accuracy == 1.0
    eos = tokenizer.eos_token_id
    assert all(r[-1] == eos and eos not in r[:-1] for r in traces.response_ids)
    engine = HFEngine(AutoModelForCausalLM.from_pretrained(tiny), tokenizer)
    request = ChatRequest(({"role": "user", "content": rows[0]["input"]},), max_tokens=1)
    (completion,) = engine.chat([request], SamplingParams(temperature=0.0))
    assert prompt_ids(tokenizer, request) == completion.prompt_ids
    with pytest.raises(ValueError, match="not a MemAgent prompt"):
        ScriptedEngine(tokenizer).chat([request], SamplingParams())


def test_sft_lowers_the_loss_on_the_traces(tiny):
    tokenizer = AutoTokenizer.from_pretrained(tiny)
    model = AutoModelForCausalLM.from_pretrained(tiny, dtype=torch.float32).eval()
    traces = scripted_traces(
        tokenizer, make_rows(8, 4, TASK), AGENT, TASK.n_chunks, 0.0, 0, noise="forget"
    )

    def loss() -> float:
        with torch.no_grad():
            return float(nll(model, traces.prompt_ids, traces.response_ids, tokenizer.pad_token_id))

    before = loss()
    settings = SFTSettings(rows=8, epochs=3, batch_size=8, lr=1e-2)
    steps = sft(model, traces, tokenizer.pad_token_id, settings, seed=0)
    assert len(steps) == 3 * 4  # 32 conversations in batches of 8, three epochs
    assert loss() < 0.8 * before


def test_outcomes_are_classified():
    row = {"answers": ["7"], "context": " fox is 7. so owl is 3. and"}
    assert classify("\\boxed{7}", row) == "correct"
    assert classify("so \\boxed{3}", row) == "distractor"
    assert classify("\\boxed{5}", row) == "other"
    assert classify("7", row) == "no_box"
    # the official verifier (the default) reads no \\fbox; the extended one does
    assert classify("\\fbox{7}", row) == "no_box"
    assert classify("\\fbox{7}", row, "extended") == "correct"


BASE = {
    "seeds": [0],
    "rl": {"steps": 1, "rollout_batch": 1, "group_size": 2, "mini_batches_per_step": 1, "lr": 0.1},
}


def test_the_shipped_config_loads(repo: Path):
    config = load_config(repo / "config" / "toy.yaml")
    assert len(config.seeds) >= 3 and config.rl.train_settings(config.task, config.agent, 0)
    assert config.rl.train["group_size"] >= 4


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"seeds": []}, "seeds must be a non-empty list"),
        ({"seeds": [1, 1]}, "seeds must be distinct"),
        ({"extra": 1}, "unknown key"),
        ({"task": {"n_chunk": 3}}, r"task: unknown key\(s\) n_chunk"),
        ({"sft": {"lr": "3e-3"}}, "sft.lr must be a float"),
        ({"expert": {"noise": "loud"}}, "expert.noise must be one of"),
        ({"model": {"hidden_size": 30}}, "multiple of num_heads"),
        ({"eval": {"samples": 0}}, "eval.samples must be >= 1"),
        ({"workers": 0}, "workers must be an integer >= 1"),
        ({"rl": {**BASE["rl"], "chunk_tokens": 5}}, "are set by the toy itself"),
        ({"rl": {**BASE["rl"], "group": 5}}, r"rl: unknown key\(s\) group"),
        ({"rl": {"steps": 1}}, r"rl: missing key\(s\) group_size, lr"),
        ({"rl": {**BASE["rl"], "steps": 1.5}}, "rl.steps must be a int"),
        ({"rl": {**BASE["rl"], "clip_c": 1.0}}, "rl: TrainSettings: need"),
    ],
)
def test_config_errors_name_the_key(change, message, tmp_path):
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump({**BASE, **change}))
    with pytest.raises(ConfigError, match=message) as error:
        load_config(path)
    assert str(path) in str(error.value)


def test_row_sets_are_seeded_and_the_held_out_set_is_fresh():
    config = parse_config(
        {**BASE, "task": {"n_keys": 3, "n_chunks": 2, "chunk_tokens": 5}, "eval": {"rows": 20}}
    )  # a tiny task: training and evaluation rows do collide
    config = replace(config, sft=replace(config.sft, rows=40))
    sets = runner.row_sets(config, seed=0)
    assert sets == runner.row_sets(config, seed=0) != runner.row_sets(config, seed=1)
    seen = {row["context"] for name in ("sft", "rl") for row in sets[name]}
    assert len(sets["eval"]) == 20 and not seen & {row["context"] for row in sets["eval"]}
    assert [row["index"] for row in sets["eval"]] == list(range(20))


def _result(seed: int, sampled: tuple[float, float], greedy: tuple[float, float]) -> dict:
    def metrics(value: float) -> dict:
        return {"accuracy": value, "outcomes": {}}

    return {
        "seed": seed,
        "warm_start": {"sampled": metrics(sampled[0]), "greedy": metrics(greedy[0])},
        "after_rl": {"sampled": metrics(sampled[1]), "greedy": metrics(greedy[1])},
        "delta": {"sampled": sampled[1] - sampled[0], "greedy": greedy[1] - greedy[0]},
        "expert": {"accuracy": 0.7},
        "evaluation": {"rows": 10, "samples": 2, "temperature": 1.0, "top_p": 1.0},
        "seconds": {"total": 1.0},
    }


def test_summary_reports_every_seed_with_mean_and_std():
    config = parse_config({**BASE, "seeds": [0, 1]})
    results = [_result(0, (0.4, 0.6), (0.5, 0.5)), _result(1, (0.2, 0.6), (0.3, 0.7))]
    summary = runner.summarize(results, config, seconds=12.0)
    assert summary["mean"]["sampled_warm_start"] == pytest.approx(0.3)
    assert summary["std"]["sampled_delta"] == pytest.approx(0.1414, abs=1e-4)
    assert summary["mean"]["greedy_delta"] == pytest.approx(0.2)
    assert summary["improved_seeds"] == 2
    table = runner.summary_markdown(summary)
    assert "| 0 | 40.0 | 60.0 | +20.0 | 50.0 | 50.0 | +0.0 | 70.0 |" in table
    assert "| **mean ± std** | 30.0 ± 14.1 | 60.0 ± 0.0 | +30.0 ± 14.1 |" in table


def test_a_miniature_run_writes_every_output_and_resumes(tmp_path, monkeypatch):
    raw = {
        **BASE,
        "task": {"n_keys": 4, "n_chunks": 2, "chunk_tokens": 5},
        "model": {
            "hidden_size": 16,
            "num_layers": 1,
            "num_heads": 2,
            "num_kv_heads": 1,
            "intermediate_size": 32,
        },
        "sft": {"rows": 2, "batch_size": 4},
        "rl": {**BASE["rl"], "rows": 2, "generation_batch": 4, "micro_batch_rows": 4},
        "eval": {"rows": 2, "samples": 1},
    }
    config = parse_config(raw)
    summary = runner.run(config, tmp_path)
    seed_dir = tmp_path / "seed0"
    for path in ("init/config.json", "sft/model.safetensors", f"rl/{METRICS_FILE}"):
        assert (seed_dir / path).is_file(), path
    result = json.loads((seed_dir / "result.json").read_text())
    assert result["sft"]["steps"] == 2 and result["rl"]["steps"] == 1
    assert set(result["warm_start"]) == {"sampled", "greedy"}
    assert json.loads((tmp_path / "summary.json").read_text()) == summary
    assert "| 0 |" in (tmp_path / "summary.md").read_text()
    # a finished seed is read back, not rerun
    monkeypatch.setattr(runner, "build_tiny_model", lambda *a, **k: pytest.fail("reran"))
    assert runner.run(config, tmp_path)["per_seed"] == summary["per_seed"]
