"""`memrl cost`: the plan's jobs, the measured rate and the work each job prices."""

from __future__ import annotations

import json

import pytest

from memrl import config as cfg
from memrl import cost
from memrl.report.flops import published_shape
from memrl.systems import system_kind

PLAN = """\
[Thu Nov 26 06:54:07 2026]
rule train_stage1:
    input: results/paper/data/ruler_hqa/train.jsonl
    output: results/paper/checkpoints/rl-memagent-7b/stage1
    wildcards: train_run=rl-memagent-7b
    resources: tmpdir=/tmp, mem_mb=480000, runtime=5760, gpu=32, nodes=4, slurm_extra=--exclusive
Shell command: memrl --job '{"rule": "train_stage1"}' train --settings '{"steps": 2, "a": "b c"}' \
--out x

[Thu Nov 26 06:54:07 2026]
localrule make_table:
    output: results/paper/tables/table1.md
    wildcards: table=table1
    resources: tmpdir=/tmp
"""


@pytest.fixture
def paper(repo):
    return cfg.load_config([repo / "config/config.yaml"])


def test_the_plan_gives_each_jobs_rule_wildcards_resources_and_settings():
    train, table = cost.parse_plan(PLAN)
    assert train.rule == "train_stage1" and train.wildcards == {"train_run": "rl-memagent-7b"}
    assert train.resources["gpu"] == "32" and train.resources["slurm_extra"] == "--exclusive"
    assert train.settings == {"steps": 2, "a": "b c"}
    assert table.rule == "make_table" and table.settings is None


def test_the_rate_is_what_the_measured_prefill_achieved():
    measured = json.loads(cost.MEASURED.read_text())
    rate = cost.prefill_flop_rate(measured)
    # 7B at 8,192 tokens by hand: 2 FLOPs per dense weight per token, causal attention
    shape = published_shape("Qwen/Qwen2.5-7B-Instruct")
    n, dense = 8192, cost.dense_parameters(shape)
    by_hand = 2 * dense * n + 2 * n * n * 128 * 28 * 28
    assert cost.forward_flops(shape, [n]) == pytest.approx(by_hand)
    point = measured["models"][0]["prefill"][0]
    assert rate == pytest.approx(by_hand / point["seconds"], rel=0.15)
    assert 3e14 < rate < 9.9e14  # below the H200's dense bf16 peak


def test_contexts_come_from_the_length_labels(paper):
    assert cost.hqa_tokens(paper, 50) == 7000 and cost.hqa_tokens(paper, 25600) == 3_500_000
    assert cost.hqa_tokens(paper, 75) == pytest.approx(75 * 140, rel=0.05)  # between labels
    settings = {"benchmark": "longbench", "tasks": ["hotpotqa", "qasper"], "length": 0}
    assert cost.job_questions(paper, settings) == [(200, 11896), (200, 4705)]
    sharded = {"benchmark": "ruler_hqa", "tasks": ["hqa"], "length": 6400, "shards": 4}
    assert cost.job_questions(paper, sharded) == [(32, 896000)]


def test_each_kind_says_what_one_question_asks_of_the_engine():
    agent = {
        "query_tokens": 1024,
        "chunk_tokens": 5000,
        "memory_tokens": 1024,
        "final_tokens": 1024,
    }
    calls = system_kind("memagent").calls({"agent": agent}, 12_000)
    assert calls == [(7248, 1024)] * 3 + [(2148, 1024)]
    long = {"max_input_tokens": 120_000, "max_output_tokens": 10_000}
    assert system_kind("longcontext").calls(long, 500_000) == [(120_000, 10_000)]
    rag = {**long, "top_k": 4, "unit_tokens": None, "length": 100}
    assert system_kind("rag").calls(rag, 14_000) == [(4 * 140 + 100, 10_000)]
    assert system_kind("memalpha").calls is None  # priced by its allocation alone


def test_a_training_stage_counts_every_pass_of_every_conversation(paper):
    settings = cfg.train_settings(paper, "rl-memagent-7b", "stage1")
    shape = published_shape("Qwen/Qwen2.5-7B-Instruct")
    # 200 documents, 28K tokens: 6 updates of 8,272 tokens and the final answer's 3,172
    lengths = [8272] * 6 + [3172]
    backward = cost.sequence_flops(shape, lengths, attention="verl")
    passes = backward * (1 + 4 / 3)  # rollout, old policy, reference, recomputation
    expected = 400 * 128 * 16 * passes
    assert cost.training_flops(paper, settings, shape) == pytest.approx(expected)
    job = cost.PlannedJob(
        "train_stage1", {"train_run": "rl-memagent-7b"}, {"gpu": "32", "runtime": "5760"}, settings
    )
    price = cost.price_job(job, cost.Pricing.of(paper, 5e14))
    assert price.estimate_gpu_h == pytest.approx(expected / 5e14 / 3600)
    assert price.allocation_gpu_h == 96 * 32
    # two kept training states and the merged model, 14 and 2 bytes per parameter
    assert price.checkpoint_gb == pytest.approx(cost.dense_parameters(shape) * 30 / 1e9)


def test_config_files_follow_snakemakes_order(repo):
    assert cost.config_files(["--profile", str(repo / "profiles/slurm"), "all"]) == [
        "config/config.yaml"
    ]
    args = ["table1", "--configfile", "a.yaml", "b.yaml", "--cores", "2"]
    assert cost.config_files(args) == ["a.yaml", "b.yaml"]
    assert cost.config_files(["all"]) == [cost.DEFAULT_CONFIG]


def test_a_model_is_priced_by_its_downloaded_config_before_its_family(tmp_path, monkeypatch, paper):
    monkeypatch.chdir(tmp_path)
    shapes = cost.model_shapes(paper)
    assert shapes["rl-memagent-14b"] == shapes["qwen2.5-14b-instruct"]
    assert shapes["qwen2.5-0.5b-instruct"] is None  # no published shape: no estimate
    downloaded = cfg.model_dir(paper, "qwen2.5-0.5b-instruct")
    downloaded.mkdir(parents=True)
    sizes = {"hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24}
    heads = {"num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936}
    (downloaded / "config.json").write_text(json.dumps({**sizes, **heads}))
    shape = cost.model_shapes(paper)["qwen2.5-0.5b-instruct"]
    assert (shape.hidden_size, shape.num_layers, shape.attention_dim) == (896, 24, 64)


def test_the_readmes_training_estimates_are_these(repo, paper):
    readme = " ".join((repo / "README.md").read_text().split())
    pricing = cost.Pricing.of(paper, RATE)
    hours = {}
    for run in ("rl-memagent-7b", "rl-memagent-14b"):
        for stage in ("stage1", "stage2"):
            settings = cfg.train_settings(paper, run, stage)
            job = cost.PlannedJob(f"train_{stage}", {"train_run": run}, {}, settings)
            hours[run, stage] = round(cost.price_job(job, pricing).estimate_gpu_h)
    seven = hours["rl-memagent-7b", "stage1"], hours["rl-memagent-7b", "stage2"]
    fourteen = hours["rl-memagent-14b", "stage1"], hours["rl-memagent-14b", "stage2"]
    assert (
        f"estimated at {seven[0]:,} GPU-hours for stage I and {seven[1]:,} for stage II" in readme
    )
    assert f"({sum(seven):,} in all;" in readme
    assert f"14B at {fourteen[0]:,} + {fourteen[1]:,} = {sum(fourteen):,}" in readme
    assert f"on one NVIDIA H200: {RATE / 1e12:.0f} TFLOP/s" in readme


RATE = cost.prefill_flop_rate(json.loads(cost.MEASURED.read_text()))


def test_the_readmes_gpu_measurements_are_the_packaged_ones(repo):
    readme = " ".join((repo / "README.md").read_text().split())
    measured = json.loads(cost.MEASURED.read_text())
    rates = [point["tokens_per_s"] for model in measured["models"] for point in model["prefill"]]
    assert f"prefill reached {min(rates):,}–{max(rates):,} tokens/s" in readme
    peaks = [model["prefill"][-1]["peak_gb"] for model in measured["models"]]
    expected = "peaked at {:.1f} GB (7B), {:.1f} GB (14B) and {:.1f} GB (32B)".format(*peaks)
    assert expected in readme
