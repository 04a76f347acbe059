"""Hostile but fair inputs: config mutations, corrupt files, malformed model outputs, dead and
refusing endpoints. Each must end in a clear error naming the key, file or line, or be handled on
purpose; a failure is never reported as a result. (Kill-and-resume of the DAG: test_resume.py.)"""

from __future__ import annotations

import copy
import inspect
import io as io_module
import json
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fake_http import JSONHandler, serve

from memrepro import config as cfg
from memrepro import locks as locks_module
from memrepro.agents.driver import run_batched
from memrepro.agents.mem1 import mem1
from memrepro.agents.memagent import MemAgentConfig, memagent
from memrepro.agents.memalpha_tools import MAX_CALLS_PER_REPLY, parse_calls
from memrepro.benchmarks import Task
from memrepro.data import io
from memrepro.data.docqa import load_docqa
from memrepro.data.essays import load_essay_text
from memrepro.data.hotpotqa import load_hotpotqa
from memrepro.data.longbench import load_longbench
from memrepro.data.memalpha import instances_by_source
from memrepro.data.ruler_hqa import read_pool
from memrepro.engines.base import ChatRequest, Completion, SamplingParams
from memrepro.engines.hf import HFEngine
from memrepro.engines.openai import MAX_REPLY_CHARS_PER_TOKEN, OpenAIEngine
from memrepro.engines.served import ServedEngine
from memrepro.engines.vllm import VLLMEngine
from memrepro.evaluation import check_failures, evaluate, load_finished, record, summarize
from memrepro.models.tiny import build_tiny_model
from memrepro.report.memalpha_tables import load_memories, load_stats
from memrepro.report.records import load_metrics
from memrepro.report.training_curves import read_training_curve
from memrepro.scoring.extract import extract_answer, extract_boxed, extract_solution
from memrepro.scoring.longbench import score_longbench
from memrepro.scoring.memalpha import judge_verdict, score_answer
from memrepro.scoring.metrics import score_answer_is
from memrepro.scoring.ruler import score_ruler
from memrepro.scoring.verifier import training_reward
from memrepro.secrets import PARTIAL_SECRET_CHARS, REDACTED, RedactingStream, redact
from memrepro.tracking.record import read_record
from memrepro.train.memalpha_rewards import content_verdict

pytestmark = pytest.mark.reliability

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
KEY = "sk-test-0123456789abcdef"  # an API key an endpoint echoes back

# What a model (or a broken server) may answer.
MALFORMED = {
    "empty": "",
    "whitespace": " \n\t ",
    "surrogate": "the answer is Par\ud800is",
    "surrogate pair halves": "\udc00\ud83d",
    "huge": "the answer is " + "x" * 100_000,
    "unbalanced braces": "\\boxed{\\frac{1}{2 the answer is {{{",
    "unbalanced tool call": '✿FUNCTION✿: memory_insert\n✿ARGS✿: {"memory_type": "core", "con',
    "control characters": "\x00\x1b[31mthe answer is \x07Paris\x00",
    "only punctuation": "Therefore, the answer is ???",
    "nested think": "<think><think>the answer is A</think>",
}


# --- config mutations -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def smoke_config() -> dict[str, Any]:
    return cfg.load_yaml(REPO / "config/smoke.yaml")


DELETE = object()
RUN = {"base": "tiny-instruct", "beta": 0.0, "gamma": 0.1}  # a Mem-α training run
STORES = ["core", "semantic", "episodic"]
# (path, value, what the error must name); None: accepted on purpose (the comment says why).
MUTATIONS: list[tuple[tuple[Any, ...], Any, str | None]] = [
    (("run",), 5, "config key run"),
    (("seed",), "x", "config key seed"),
    (("colour",), "red", "unknown key(s) colour"),
    (("sources", "hotpotqa_dev", "url"), 3, "sources.hotpotqa_dev.url"),
    (("models", "tiny-base", "source"), "bogus", "models.tiny-base.source"),
    (("models", "tiny-base", "gpus"), -1, "models.tiny-base.gpus"),
    (("ruler_hqa", "tokenizer"), "ghost", "ruler_hqa.tokenizer"),
    (("ruler_hqa", "n_docs"), [], "ruler_hqa.n_docs"),
    (("ruler_hqa", "n_docs"), [10, 10], "ruler_hqa.n_docs"),
    (("ruler_hqa", "eval_questions"), 100, "ruler_hqa.eval_questions"),
    (("ruler", "variant"), "latest", "ruler.variant"),
    (("ruler", "tasks"), ["niah_single_9"], "ruler.tasks"),
    (("ruler", "max_length", "qa1"), 1024, "ruler.max_length"),  # a typo would drop the cap
    (("ruler", "max_length", "qa_1"), 512, "ruler.max_length.qa_1"),  # below every length
    (("ruler", "lengths"), [0], "ruler.lengths"),
    (("ruler", "squad"), "ghost", "ruler.squad"),
    (("longbench", "tasks"), ["trec"], "longbench.tasks"),
    (("filter", "models"), ["ghost"], "filter.models"),
    (("filter", "sampling", "top_p"), 0, "filter.sampling.top_p"),
    (("filter", "sampling", "temperature"), -1, "filter.sampling.temperature"),
    (("agent", "memory_tokens"), 0, "agent.memory_tokens"),
    (("agent", "memory_tokens"), 5000, "agent.memory_tokens"),  # beyond the model's context
    (("agent", "chunk_tokens"), "256", "agent.chunk_tokens"),
    (("agent", "final_tokens"), DELETE, "final_tokens missing"),
    (("training", "stage1", "steps"), 10**9, "training.stage1.steps"),
    (("training", "stage1", "clip_c"), 1, "training.stage1.clip_c"),
    (("training", "stage1", "lr"), 0, "training.stage1.lr"),
    (("training", "runs", "rl-memagent-tiny", "base"), "ghost", "rl-memagent-tiny.base"),
    (("training", "runs", "tiny-base"), {"base": "tiny-base"}, "names also used in models"),
    (("training", "stage2_data", "source"), "ghost", "training.stage2_data.source"),
    (("training", "stage2_data", "max_context_tokens"), 10**6, "max_context_tokens"),
    (("evaluation", "shards", "ruler_hqa", 20), 100_000, "evaluation.shards.ruler_hqa.20"),
    (("evaluation", "shards", "ruler_hqa", 20), 9, "evaluation.shards.ruler_hqa.20"),
    (("evaluation", "shards", "ruler_hqa", "twenty"), 2, "evaluation.shards.ruler_hqa"),
    (("evaluation", "shards", "ruler_qa"), {20: 2}, "evaluation.shards"),
    (("evaluation", "allow_failures"), 1.5, "evaluation.allow_failures"),
    (("evaluation", "wave_size"), 0, "evaluation.wave_size"),
    (("evaluation", "final_prompt"), "json", "evaluation.final_prompt"),
    (("evaluation", "engine", "kind"), "tgi", "evaluation.engine.kind"),
    (("evaluation", "engine"), {"kind": "openai", "timeout_s": 0}, "evaluation.engine.timeout_s"),
    (("evaluation", "engine", "timeout_s"), 30, "'timeout_s' must be one of"),  # not for hf
    (("evaluation", "systems", "mem1-tiny", "max_docs"), 5, "mem1-tiny.max_docs"),
    (("evaluation", "systems", "rag-tiny", "kind"), "oracles", "rag-tiny.kind"),
    (("evaluation", "systems", "rag-tiny", "model"), "ghost", "rag-tiny.model"),
    (("evaluation", "systems", "rag-tiny", "colour"), "red", "rag-tiny: unknown key(s) colour"),
    (("evaluation", "systems", "longcontext-tiny", "context_extension"), "yarn", "extension"),
    (("memalpha", "qa", "model"), "ghost", "memalpha.qa.model"),
    (("memalpha", "mab", "sources"), ["nosuch"], "memalpha.mab.sources"),
    (("memalpha", "training", "recipes", "official", "steps"), 0, "recipes.official.steps"),
    (("memalpha", "training", "recipes", "paper", "checkpoint"), "first", "paper.checkpoint"),
    (("memalpha", "training", "recipe"), "fast", "memalpha.training.recipe"),
    # Mem-α: the agent, QA step, baselines, data, training
    (("memalpha", "agent", "max_new_tokens"), 0, "memalpha.agent.max_new_tokens"),
    (("memalpha", "agent", "max_new_tokens"), 5000, "memalpha.agent.max_new_tokens"),  # window
    (("memalpha", "agent", "visible_items"), -1, "memalpha.agent.visible_items"),
    (("memalpha", "agent", "prompt_cap"), 0, "memalpha.agent.prompt_cap"),
    (("memalpha", "agent", "enable_thinking"), "no", "memalpha.agent.enable_thinking"),
    (("memalpha", "agent", "colour"), "red", "memalpha.agent: unknown key(s) colour"),
    (("memalpha", "sampling", "temperature"), -1, "memalpha.sampling.temperature"),
    (("memalpha", "qa", "top_k"), 0, "memalpha.qa.top_k"),
    (("memalpha", "qa", "prompt_cap"), 0, "memalpha.qa.prompt_cap"),
    (("memalpha", "qa", "max_tokens"), 0, "memalpha.qa.max_tokens"),
    (("memalpha", "qa", "judge_sampling", "top_p"), 2, "memalpha.qa.judge_sampling.top_p"),
    (("memalpha", "qa", "judge_max_tokens"), 0, "memalpha.qa.judge_max_tokens"),
    (("memalpha", "memory_tokenizer"), "ghost", "memalpha.memory_tokenizer"),
    (("memalpha", "train", "source"), "ghost", "memalpha.train.source"),
    (("memalpha", "memalpha", "sources"), ["nosuch"], "memalpha.memalpha.sources"),
    (("memalpha", "ruler_hqa", "source"), "nosuch", "memalpha.ruler_hqa.source"),
    (("memalpha", "ruler_hqa", "chunk_tokens"), 0, "memalpha.ruler_hqa.chunk_tokens"),
    (("memalpha", "baselines", "protocol"), "lenient", "memalpha.baselines.protocol"),
    (("memalpha", "baselines", "mem1", "memory_tokens"), 0, "baselines.mem1.memory_tokens"),
    (("memalpha", "baselines", "memagent", "final_tokens"), 0, "memagent.final_tokens"),
    (("memalpha", "training", "runs", "memalpha-tiny-grpo", "base"), "ghost", "grpo.base"),
    (("memalpha", "training", "runs", "memalpha-tiny-grpo", "beta"), -1, "grpo.beta"),
    (("memalpha", "training", "runs", "tiny-instruct"), RUN, "memalpha.training.runs: names"),
    (("memalpha", "training", "runs", "orphan"), RUN, "runs.orphan: no memalpha system"),
    (("memalpha", "training", "group_size"), 0, "memalpha.training.group_size"),
    (("memalpha", "training", "mini_batch_rows"), 0, "memalpha.training.mini_batch_rows"),
    (("memalpha", "training", "clip_c"), 1, "memalpha.training.clip_c"),
    (("memalpha", "training", "cut_responses"), "yes", "memalpha.training.cut_responses"),
    (("memalpha", "training", "judge", "max_tokens"), 0, "training.judge.max_tokens"),
    (("memalpha", "training", "validation", "every"), -1, "training.validation.every"),
    (("memalpha", "training", "recipes", "official", "kl_coef"), -1, "official.kl_coef"),
    (("memalpha", "training", "prompt_cap"), 5000, "memalpha.training.prompt_cap"),  # window
    # which systems have stores to disable, and what is left
    (("evaluation", "systems", "memalpha-tiny", "disabled_memory"), STORES, "every store"),
    (("evaluation", "systems", "rl-memagent-tiny", "disabled_memory"), ["core"], "no memory"),
    (("evaluation", "systems", "memalpha-tiny", "disabled_memory"), ["procedural"], "disabled"),
    (("evaluation", "systems", "memalpha-tiny", "benchmarks"), ["ruler"], "memalpha-tiny.bench"),
    # the memory ablation (Tables 8, 9)
    (("evaluation", "memory_ablation", "systems"), {"memalpha-tiny": "14B"}, "not a memagent"),
    (("evaluation", "memory_ablation", "settings"), [[48]], "memory_ablation.settings"),
    (("evaluation", "memory_ablation", "settings"), [[0, 256]], "memory_ablation.settings"),
    (("evaluation", "memory_ablation", "settings"), [[24, 256]], "'rl-memagent-tiny''s own"),
    (("evaluation", "memory_ablation", "tasks", "ruler"), ["niah_single_9"], "tasks.ruler"),
    (("evaluation", "memory_ablation", "tasks", "trec"), ["trec"], "unknown key(s) trec"),
    (("evaluation", "memory_ablation", "retrain"), "yes", "memory_ablation.retrain"),
    # Table 4's probe
    (("evaluation", "probe", "systems"), {"memalpha-tiny": "14B"}, "probe.systems"),
    (("evaluation", "probe", "systems"), {"ghost": "14B"}, "probe.systems"),
    (("evaluation", "probe", "n_docs"), [7], "probe.n_docs"),
    (("evaluation", "probe", "n_docs"), [0], "probe.n_docs"),
    (("evaluation", "probe", "placements"), [[0, 101]], "probe.placements"),
    (("evaluation", "probe", "placements"), [[0, 100, 5]], "probe.placements"),
    # a selection: what `replace` names must be systems too (a misspelt key swapped nothing)
    (
        ("evaluation", "select"),
        {"systems": ["rl-memagent-tiny"], "replace": {"rl-memagent-tny": "rl-memagent-tiny"}},
        "evaluation.select.replace: unknown system(s) rl-memagent-tny (did you mean",
    ),
    (("evaluation", "select"), {"replace": {}}, "evaluation.select: systems missing"),
    (("models", "tiny-base", "reproduces"), "no", "models.tiny-base.reproduces"),
    # NaN and infinity are numbers to the schema, within any bounds: refused wherever they stand
    (("evaluation", "allow_failures"), float("nan"), "evaluation.allow_failures: nan is not a"),
    (("training", "stage1", "lr"), float("inf"), "training.stage1.lr: inf is not a finite"),
    (("filter", "sampling", "temperature"), float("-inf"), "filter.sampling.temperature: -inf"),
    (("report", "equivalence_margin"), {"default": float("inf")}, "equivalence_margin.default"),
    (("evaluation", "probe", "placements"), [[0, float("nan")]], "probe.placements.0.1: nan"),
    # Accepted on purpose:
    (("models", "tiny-base", "reproduces"), False, None),  # a tiny model never does anyway
    (("evaluation", "select"), None, None),  # no selection: what clears a file's from the CLI
    (("evaluation", "probe", "placements"), [[60, 40]], None),  # the second group first
    (("evaluation", "memory_ablation", "systems"), {"memagent-tiny-instruct": "7B"}, None),
    (("evaluation", "allow_failures"), 0.05, None),  # tolerate 5% failed samples
    (("evaluation", "shards", "ruler_hqa", 20), 8, None),  # one sample per shard
    (("ruler", "max_length", "niah_multikey_1"), 1024, None),  # caps a task that is not run
    (("ruler_hqa", "n_docs"), [50, 10, 20], None),  # any order
    (("evaluation", "engine", "batch_size"), 1, None),  # slower, same results
]


def mutated(config: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    config = copy.deepcopy(config)
    parent = config
    for key in path[:-1]:
        parent = parent[key]
    if value is DELETE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return config


def test_the_fuzz_covers_ninety_rejections():
    assert sum(expected is not None for _, _, expected in MUTATIONS) >= 90


@pytest.mark.parametrize(("path", "value", "expected"), MUTATIONS, ids=lambda x: str(x)[:40])
def test_a_config_mutation_is_rejected_naming_the_key_or_accepted_on_purpose(
    smoke_config, path, value, expected
):
    config = mutated(smoke_config, path, value)
    if expected is None:
        cfg.validate_config(config, SCHEMA)
        assert cfg.eval_jobs(config)
        return
    with pytest.raises(cfg.ConfigError) as error:
        cfg.validate_config(config, SCHEMA)
    assert expected in str(error.value)


def test_each_engine_kind_takes_exactly_its_constructors_options():
    rules = cfg.load_yaml(SCHEMA)["$defs"]["engine"]["allOf"]
    allowed = {
        rule["if"]["properties"]["kind"]["const"]: set(rule["then"]["propertyNames"]["enum"])
        for rule in rules
    }

    def options(factory, set_by_the_pipeline: set[str]) -> set[str]:
        return {"kind", *inspect.signature(factory).parameters} - set_by_the_pipeline

    assert allowed["hf"] == options(HFEngine.load, {"path"})
    assert allowed["vllm"] == options(
        VLLMEngine, {"model_path", "tensor_parallel_size", "hf_overrides", "seed"}
    )
    assert allowed["openai"] == options(
        OpenAIEngine, {"model", "api_key", "tokenizer_path", "retry_delay", "client"}
    )
    assert allowed["served"] == options(
        ServedEngine, {"model_path", "tensor_parallel_size", "log_path"}
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "run: x\nagent:\n  chunk_tokens: 5\n  chunk_tokens: 7\n",
            ":4:3: duplicate key 'chunk_tokens'",
        ),
        ("run: x\nagent:\n\tchunk_tokens: 5\n", ":3:1: found character"),
        ("run: x\nseed: [1, 2\nagent: {}\n", ":3:6: did not find expected ','"),
        ("- a\n- b\n", "a config must be a mapping"),
    ],
    ids=["duplicate", "tab", "unclosed", "list"],
)
def test_a_yaml_error_names_the_line_and_column(tmp_path, text, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(cfg.ConfigError) as error:
        cfg.load_yaml(path)
    assert str(path) in str(error.value) and expected in str(error.value)
    if "\t" in text:
        assert "YAML indents with spaces only" in str(error.value)


def test_the_config_checker_reports_like_snakemake_would_not(tmp_path, capsys):
    path = tmp_path / "dup.yaml"
    path.write_text((REPO / "config/smoke.yaml").read_text() + "\nseed: 7\n")
    with pytest.raises(SystemExit, match=r"dup.yaml:\d+:1: duplicate key 'seed'"):
        cfg.main([str(path)])
    cfg.main([str(REPO / "config/smoke.yaml")])
    assert "valid" in capsys.readouterr().out
    # several files merge as Snakemake merges them: the released overlay plans fewer evaluations
    cfg.main([str(REPO / "config/config.yaml")])
    paper = capsys.readouterr().out
    cfg.main([str(REPO / "config/config.yaml"), str(REPO / "config/eval-released.yaml")])
    released = capsys.readouterr().out
    assert "config.yaml + " in released
    assert int(released.split("(")[1].split()[0]) < int(paper.split("(")[1].split()[0])


# --- corrupt inputs: every reader names the file (and the line) --------------------------------


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


CORRUPT_JSON = {
    "not utf-8": (b'{"text": "caf\xe9"}', r":1:14: not UTF-8 text"),
    "truncated": (b'{"text": "ab', r":1:\d+: invalid JSON"),
    "empty": (b"", r":1:1: invalid JSON"),
}


@pytest.mark.parametrize("case", CORRUPT_JSON)
@pytest.mark.parametrize("reader", [io.read_json, load_hotpotqa, load_essay_text])
def test_a_corrupt_json_file_names_the_file_and_position(tmp_path, case, reader):
    data, message = CORRUPT_JSON[case]
    path = write(tmp_path / "in.json", data)
    with pytest.raises(ValueError, match=rf"{path}{message}"):
        reader(path)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"index": 0}\n{"index": 1, "x": "\xff"}\n', r":2:\d+: not UTF-8 text"),
        (b'{"index": 0}\n{"index": \n{"index": 2}\n', r":2: invalid JSON line"),
        (b'{"index": 0}\n[1, 2]\n', r":2: expected a JSON object, got list"),
        (b'{"index": 0}\n{"input": "q"}\n', r":2: missing field\(s\) index"),
        (
            b'{"index": 0}\n{"index": 1, "ctx": ["a", "Par\\ud800is"]}\n',
            r":2: field ctx\[1\] holds a lone surrogate",
        ),
    ],
    ids=["not utf-8", "bad line", "not an object", "missing field", "lone surrogate"],
)
def test_a_corrupt_jsonl_file_names_the_file_and_line(tmp_path, data, message):
    path = write(tmp_path / "rows.jsonl", data)
    with pytest.raises(ValueError, match=rf"{path}{message}"):
        io.read_jsonl(path, required=("index",))


def test_corrupt_parquet_files_name_the_file(tmp_path):
    damaged = write(tmp_path / "d.parquet", b"PAR1 not really")
    with pytest.raises(ValueError, match=rf"{damaged}: not a readable parquet file"):
        io.read_table_records(damaged, ["context"], "LongBench")
    narrow = tmp_path / "narrow.parquet"
    pq.write_table(pa.table({"input": ["q"]}), narrow)
    with pytest.raises(ValueError, match=rf"{narrow}: missing column"):
        load_longbench(narrow, "hotpotqa")
    with pytest.raises(ValueError, match=rf"{narrow}"):
        instances_by_source(narrow)
    with pytest.raises(ValueError, match=r"expected a \.parquet or \.jsonl"):
        io.read_table_records(write(tmp_path / "x.csv", b"a,b"), ["a"], "LongBench")


def test_corrupt_metrics_and_provenance_records_name_the_file(tmp_path):
    metrics = write(tmp_path / "m.json", b'[{"benchmark": "ruler_hqa"}]')
    with pytest.raises(ValueError, match=rf"{metrics}: missing key"):
        load_metrics([metrics])
    record = write(
        tmp_path / "r.provenance.jsonl",
        b'{"event": "start", "record": "r"}\ngarbage\n{"event": 1}\n{"x": "\xff"}\n'
        b'{"event": "end", "status": "FINISHED"}\n',
    )
    damaged: list[str] = []
    read = read_record(record, damaged)  # each bad line skipped, named; the rest kept
    assert read["record"] == "r" and read["status"] == "FINISHED"
    assert (
        damaged
        == read["damaged"]
        == [
            f"{record}:2: not a JSON line (Expecting value, column 1)",
            f"{record}:3: not a record line (no `event`)",
            f"{record}:4: not UTF-8 at byte 62 of the file",
        ]
    )


READERS = {
    "DocQA-RL rows": lambda path: load_docqa(path.with_suffix(".jsonl")),
    "dataset stats": lambda path: load_stats([path]),
    "memories": lambda path: load_memories([path]),
    "training curve": lambda path: read_training_curve(path),
    "document pool": lambda path: read_pool(path.with_suffix(".parquet"), path),
}


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("data", [b"[1, 2]\n", b'{"a": "\xff"}\n', b"\x00garbage"])
def test_every_other_reader_names_the_file_it_cannot_read(tmp_path, reader, data):
    path = tmp_path / "input.json"
    for twin in (path, path.with_suffix(".jsonl"), path.with_suffix(".parquet")):
        twin.write_bytes(data)
    with pytest.raises(ValueError, match=str(tmp_path / "input")):
        READERS[reader](path)


def test_a_damaged_partial_file_keeps_its_valid_prefix_and_warns(tmp_path, caplog):
    partial = tmp_path / "p.partial"
    lines = [json.dumps({"index": i, "failed": False}) for i in range(3)]
    partial.write_text(lines[0] + "\n" + lines[1] + "\ngar\xffbage\n" + lines[2] + "\n{torn")
    with caplog.at_level(logging.WARNING):
        assert [r["index"] for r in load_finished(partial)] == [0, 1]
    assert f"{partial}:3: invalid JSON line" in caplog.text
    assert partial.read_text() == lines[0] + "\n" + lines[1] + "\n"  # the rest is recomputed


# --- failures are not results --------------------------------------------------------------


def test_failed_samples_fail_the_job_beyond_the_allowed_fraction():
    rows = [{"failed": i < 2, "error": "APIConnectionError" if i < 2 else None} for i in range(10)]
    with pytest.raises(SystemExit, match=r"2 of 10 samples failed.*\n  2 x APIConnectionError"):
        check_failures(rows, 0.0, "sys on ruler_hqa/hqa")
    check_failures(rows, 0.2, "sys on ruler_hqa/hqa")
    check_failures([], 0.0, "an empty shard")


def test_a_resumed_evaluation_retries_failed_samples_without_duplicates(tmp_path):
    rows = [{"index": i} for i in range(4)]
    partial = tmp_path / "p.partial"
    attempts: list[int] = []

    def flaky(wave):
        attempts.extend(row["index"] for row in wave)
        first = len(attempts) <= 4
        return [{"index": r["index"], "failed": first and r["index"] % 2 == 1} for r in wave]

    first = evaluate(rows, flaky, partial, batch_size=2)
    assert sum(r["failed"] for r in first) == 2
    again = evaluate(rows, flaky, partial, batch_size=2)
    assert attempts == [0, 1, 2, 3, 1, 3]
    assert sorted(r["index"] for r in again) == [0, 1, 2, 3] and not any(r["failed"] for r in again)


def memrepro_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "memrepro.cli", *args], cwd=cwd, text=True, capture_output=True
    )


def test_an_empty_evaluation_set_stops_the_job_naming_the_file(tmp_path, tiny, smoke_config):
    """An empty eval set exits non-zero naming the file instead of writing accuracy 0.0."""
    job = next(j for j in cfg.eval_jobs(smoke_config) if j.benchmark == "ruler_hqa")
    settings = {**cfg.eval_settings(smoke_config, job, 0), "tasks": ["hqa"], "shards": 1}
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    done = memrepro_cli(
        "evaluate",
        "--settings",
        json.dumps(settings),
        "--data",
        str(empty),
        "--model",
        str(tiny),
        "--predictions",
        str(tmp_path / "p.jsonl"),
        "--metrics",
        str(tmp_path / "m.json"),
        cwd=tmp_path,
    )
    assert done.returncode != 0
    assert f"{empty}: no hqa sample to evaluate (an empty set has no score)" in done.stderr
    assert not (tmp_path / "m.json").exists()


def test_a_filter_that_kept_no_dev_question_stops_the_eval_set_naming_the_file(
    tmp_path, smoke_config
):
    empty = tmp_path / "dev.filtered.jsonl"
    empty.write_text("")
    settings = {"eval_questions": 4, "n_docs": 10, "seed": 0, "store_ids_above": 0}
    missing = str(tmp_path / "never-read")
    done = memrepro_cli(
        *("eval-set", "--settings", json.dumps(settings), "--dev", str(empty)),
        *("--pool-docs", missing, "--pool-questions", missing, "--tokenizer", missing),
        *("--out", str(tmp_path / "set.jsonl")),
        cwd=tmp_path,
    )
    assert done.returncode != 0
    assert f"{empty}: no filtered dev question (an empty set has no score)" in done.stderr


def test_a_repeated_sample_in_an_unsharded_evaluation_names_the_file(tmp_path, tiny, smoke_config):
    job = next(j for j in cfg.eval_jobs(smoke_config) if j.benchmark == "ruler_hqa")
    settings = {**cfg.eval_settings(smoke_config, job, 0), "tasks": ["hqa"], "shards": 1}
    data = tmp_path / "hqa.jsonl"
    row = {"index": 7, "input": "q?", "answers": ["a"], "context": "d", "num_tokens": 3}
    data.write_text(json.dumps(row) + "\n" + json.dumps(row) + "\n")
    done = memrepro_cli(
        *("evaluate", "--settings", json.dumps(settings), "--data", str(data)),
        *("--model", str(tiny), "--predictions", str(tmp_path / "p.jsonl")),
        *("--metrics", str(tmp_path / "m.json")),
        cwd=tmp_path,
    )
    assert done.returncode != 0 and f"{data}: sample 2 repeats index 7" in done.stderr


@pytest.mark.parametrize("damaged", ["tokenizer.json", "model.safetensors"])
def test_a_damaged_model_file_names_its_directory(tmp_path, tiny, damaged):
    import shutil

    copy = tmp_path / "model"
    shutil.copytree(tiny, copy)
    path = copy / damaged
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    with pytest.raises(ValueError, match=rf"{copy}: cannot load the (tokenizer|model)"):
        HFEngine.load(str(copy), device="cpu")


def test_an_incomplete_paper_file_names_itself(tmp_path):
    from memrepro.jobs.report import _reading_paper
    from memrepro.report.memalpha_tables import build_memalpha_table

    paper = cfg.load_yaml(REPO / "config/paper/memalpha.yaml")
    del paper["table2"]  # a file cut short: its later tables are missing
    path = tmp_path / "memalpha.yaml"
    expected = rf"{path}: not the published numbers memalpha_table2"
    with pytest.raises(ValueError, match=expected), _reading_paper(path, "memalpha_table2"):
        build_memalpha_table([], [], paper, "memalpha_table2")


def test_a_metrics_record_of_no_sample_is_an_error_not_a_zero(tmp_path):
    record = {
        "benchmark": "ruler_hqa",
        "task": "hqa",
        "system": "s",
        "length": 10,
        "n_items": 0,
        "n_failed": 0,
        "accuracy": 0.0,
        "accuracy_official": 0.0,
        "mean_tokens": None,
        "mean_calls": 0.0,
    }
    path = tmp_path / "m.json"
    path.write_text(json.dumps([record]))
    with pytest.raises(ValueError, match=rf"{path}: n_items=0: no sample was evaluated"):
        load_metrics([path])


def test_an_empty_shard_evaluates_nothing_and_writes_no_partial(tmp_path):
    assert evaluate([], lambda wave: [], tmp_path / "p.partial", batch_size=4) == []
    assert not (tmp_path / "p.partial").exists()


# --- malformed model outputs: every scorer, writer and agent copes ---------------------------


@pytest.mark.parametrize("name", MALFORMED)
def test_every_scorer_scores_a_malformed_output_within_bounds(name):
    text = MALFORMED[name]
    scores = [
        *score_answer_is(text, "Paris").values(),
        *score_ruler("niah_single_1", text, ["1234567"], "memagent").values(),
        *score_ruler("qa_1", text, ["Paris"], "upstream").values(),
        *score_longbench("hotpotqa", text, ["Paris"]).values(),
        *score_longbench("gov_report", text, ["A report."]).values(),
        training_reward(text, ["Paris"], "ruler_hqa"),
        training_reward(text, ["Paris"], "ruler_hqa", "extended"),
        score_answer("squad", text, ["Paris"]),
        score_answer("icl_trec_coarse_6600shot_balance", text, ["3"]),
        score_answer("infbench_sum_eng_shots2", text, ["keyword"]),
        judge_verdict(text),
        content_verdict(text),
    ]
    assert all(0.0 <= s <= 1.0 for s in scores if isinstance(s, float))
    for extracted in (extract_answer(text), extract_boxed(text), extract_solution(text)):
        assert extracted is None or isinstance(extracted, str)
    parse_calls(text)  # tool calls: a malformed one is a failed call, never an exception


@pytest.mark.parametrize("name", MALFORMED)
def test_every_writer_stores_a_malformed_output(tmp_path, name):
    row = {"index": 0, "response": MALFORMED[name]}
    io.append_jsonl(tmp_path / "p.jsonl", [row])
    io.write_jsonl_atomic(tmp_path / "w.jsonl", [row])
    io.write_json_atomic(tmp_path / "w.json", row)
    for back in (*io.read_jsonl(tmp_path / "p.jsonl"), *io.read_jsonl(tmp_path / "w.jsonl")):
        assert back["response"] == io.storable(MALFORMED[name])
    assert "\ud800" not in (tmp_path / "w.json").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    corpus = ["the answer is Paris. memory of a document about a tower."] * 20
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", corpus)


class ScriptedEngine:
    """A ChatEngine answering every request with one text (token ids from the real tokenizer),
    ignoring max_tokens as some OpenAI-compatible servers do."""

    def __init__(self, tokenizer: Any, text: str) -> None:
        self.tokenizer, self.text = tokenizer, text
        self.requests: list[ChatRequest] = []

    def chat(self, requests, sampling):
        self.requests += requests
        ids = self.tokenizer.encode(self.text, add_special_tokens=False)
        return [Completion(self.text, [1], list(ids)) for _ in requests]


@pytest.mark.parametrize("name", MALFORMED)
def test_the_agents_run_a_malformed_output_to_a_storable_record(tmp_path, tiny, name):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny)
    engine = ScriptedEngine(tokenizer, io.storable(MALFORMED[name]))
    config = MemAgentConfig(chunk_tokens=8, memory_tokens=6, final_tokens=4)
    workflows = [memagent("Where?", ["chunk one", "chunk two"], config), mem1("Where?", ["a"], 6)]
    rollouts = run_batched(workflows, engine, SamplingParams(temperature=0.0, top_p=1.0))
    row = {"index": 0, "input": "Where?", "answers": ["Paris"], "num_tokens": 4}
    io.append_jsonl(tmp_path / "p.jsonl", [record(Task("ruler_hqa", "hqa"), row, rollouts[0])])
    assert io.read_jsonl(tmp_path / "p.jsonl")[0]["index"] == 0
    for rollout in rollouts:
        for conversation in rollout.conversations:  # a memory never outgrows its budget
            assert len(conversation.completion.response_ids) <= conversation.request.max_tokens
    prompts = [r.messages[-1]["content"] for r in engine.requests]
    second_prompt = next(p for p in prompts if "chunk two" in p)
    memory = second_prompt.split("<memory>\n")[1].split("\n</memory>")[0]
    assert len(tokenizer.encode(memory, add_special_tokens=False)) <= config.memory_tokens + 2


def test_summaries_count_lenient_sub_em_beside_the_official_one():
    task = Task("ruler_hqa", "hqa")
    lines = [
        {"index": 0, "n_calls": 1, "failed": False, **score_answer_is("the answer is ???", "Rome")},
        {
            "index": 1,
            "n_calls": 1,
            "failed": False,
            **score_answer_is("the answer is Rome", "Rome"),
        },
    ]
    for line in lines:
        line["score"] = line["sub_em"]
    summary = summarize(lines, task.benchmark, task.task, "sys", 10)
    assert (summary["sub_em"], summary["sub_em_strict"], summary["n_lenient_sub_em"]) == (
        100.0,
        50.0,
        1,
    )


# --- endpoints: dead, refusing, echoing, slow, malformed -------------------------------------


class OpenAIStub(JSONHandler):
    """An OpenAI-compatible /chat/completions whose behaviour the model name picks."""

    def do_POST(self):
        body = self.body()
        model = body["model"]
        if model == "refuse":  # 401 echoing the key, as some gateways do
            key = self.headers["Authorization"].removeprefix("Bearer ")
            return self.reply(401, {"error": {"message": f"Incorrect API key provided: {key}"}})
        if model == "slow":
            time.sleep(2)
        if model == "garbage":
            return self.reply(200, b"<html>oops</html>")
        if model == "runaway":  # a megabyte where max_tokens allows a few words
            message = {"role": "assistant", "content": "word " * 200_000}
            return self.reply(
                200,
                {
                    "id": "x",
                    "object": "chat.completion",
                    "choices": [{"index": 0, "message": message}],
                },
            )
        if model == "garbage-echo":  # no choices; the key straddles character 500 of the body
            key = self.headers["Authorization"].removeprefix("Bearer ")
            return self.reply(200, {"id": "x" * 466 + key, "object": "chat.completion"})
        message: dict[str, Any] = {"role": "assistant", "content": MALFORMED.get(model, "")}
        if model == "null":
            message["content"] = None
        if model == "list":
            message["content"] = [{"type": "text", "text": "hi"}]
        choices = [] if model == "no choices" else [{"index": 0, "message": message}]
        self.reply(200, {"id": "x", "object": "chat.completion", "choices": choices})


@pytest.fixture(scope="module")
def endpoint():
    with serve(OpenAIStub) as url:
        yield url + "/v1"


def ask(engine: OpenAIEngine, n: int = 1) -> list[Completion]:
    request = ChatRequest(({"role": "user", "content": "Where?"},), 8)
    return engine.chat([request] * n, SamplingParams(temperature=0.0, top_p=1.0))


def openai_engine(tiny: Path, url: str, model: str, **options: Any) -> OpenAIEngine:
    options = {"api_key": KEY, "retry_delay": 0.01, "max_retries": 1, **options}
    return OpenAIEngine(model, base_url=url, tokenizer_path=str(tiny), **options)


@pytest.mark.parametrize("name", [*MALFORMED, "null", "list", "no choices", "garbage"])
def test_a_malformed_reply_is_a_storable_text_or_a_failed_request(tiny, endpoint, name, tmp_path):
    [completion] = ask(openai_engine(tiny, endpoint, name))
    if name in MALFORMED or name == "null":
        assert not completion.failed
        limit = 8 * MAX_REPLY_CHARS_PER_TOKEN  # `ask` allows 8 tokens: "huge" is cut
        assert completion.text == io.storable(MALFORMED.get(name, ""))[:limit]
    else:
        assert completion.failed and completion.error
    io.append_jsonl(tmp_path / "p.jsonl", [{"response": completion.text}])


def test_a_refusing_endpoint_that_echoes_the_key_never_gets_it_written(
    tiny, endpoint, tmp_path, caplog, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with caplog.at_level(logging.WARNING):
        completions = ask(openai_engine(tiny, endpoint, "refuse", api_key=None), n=3)
    assert all(c.failed for c in completions)
    assert KEY not in caplog.text and REDACTED in completions[0].error
    rows = [{"index": i, "failed": True, "error": c.error} for i, c in enumerate(completions)]
    io.append_jsonl(tmp_path / "p.jsonl", [{**rows[0], "echo": f"key={KEY}"}])
    assert KEY not in (tmp_path / "p.jsonl").read_text()
    with pytest.raises(SystemExit, match="3 of 3 samples failed") as error:
        check_failures(rows, 0.0, "refused")
    assert KEY not in str(error.value)


def test_a_runaway_reply_is_cut_before_it_is_tokenised_or_stored(tiny, endpoint):
    [completion] = ask(openai_engine(tiny, endpoint, "runaway"))  # max_tokens 8
    assert len(completion.text) == 8 * MAX_REPLY_CHARS_PER_TOKEN
    assert completion.text == ("word " * 200_000)[: 8 * MAX_REPLY_CHARS_PER_TOKEN]


# --- hostile model output: bounded work --------------------------------------------------------


def test_a_reply_of_many_calls_runs_at_most_the_cap_and_fails_the_rest():
    one = '✿FUNCTION✿: memory_delete\n✿ARGS✿: {"memory_type": "core_memory"}\n'
    _, calls = parse_calls(one * (MAX_CALLS_PER_REPLY + 50))
    assert len(calls) == MAX_CALLS_PER_REPLY + 1
    assert (
        calls[-1].malformed
        == f"more than {MAX_CALLS_PER_REPLY} calls in one reply: the rest were not run"
    )
    assert all(call.malformed is None for call in calls[:-1])


def test_a_full_store_and_exhausted_ids_fail_that_insert_only(monkeypatch):
    from memrepro.agents import structured_memory
    from memrepro.agents.memalpha_tools import ToolCall, execute

    monkeypatch.setattr(structured_memory, "MAX_STORE_ITEMS", 2)
    memory = structured_memory.StructuredMemory(len, seed=0)
    insert = '{"memory_type": "semantic_memory", "content": "%s"}'
    results = [execute(memory, ToolCall("new_memory_insert", insert % c)) for c in "abc"]
    assert [r.ok for r in results] == [True, True, False]
    assert "semantic memory is full (2 items)" in results[2].message
    assert execute(
        memory, ToolCall("new_memory_insert", insert.replace("semantic", "episodic") % "d")
    ).ok
    monkeypatch.setattr(structured_memory, "ID_SPACE", 3)  # every id taken: a failure, no loop
    with pytest.raises(structured_memory.MemoryOperationError, match="every one of the 3"):
        memory.insert("episodic", "e")


def test_a_dead_endpoint_fails_every_request_and_so_the_job(tiny):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    completions = ask(openai_engine(tiny, dead, "any"), n=2)
    assert all(c.failed and "Connection" in c.error for c in completions)
    with pytest.raises(SystemExit, match="2 of 2 samples failed"):
        check_failures([{"failed": c.failed, "error": c.error} for c in completions], 0.0, "dead")


def test_a_slow_endpoint_times_out_as_configured(tiny, endpoint):
    # The server answers after 2 s: only the engine's 0.3 s timeout makes this request fail.
    [completion] = ask(openai_engine(tiny, endpoint, "slow", timeout_s=0.3, max_retries=0))
    assert completion.failed and "Timeout" in completion.error


# --- a killed run's lock --------------------------------------------------------------------


def lock_dir_with(tmp_path: Path, holders: list[dict[str, Any]], locks=("0.input.lock",)) -> Path:
    lock_dir = tmp_path / ".snakemake/locks"
    lock_dir.mkdir(parents=True)
    for name in locks:
        (lock_dir / name).write_text("results/x\n")
    for i, holder in enumerate(holders):
        io.write_json_atomic(lock_dir / f"{locks_module.HOLDER_PREFIX}{i}.json", holder)
    return lock_dir


def test_a_dead_runs_lock_is_released_and_only_then(tmp_path, exited_pid):
    me = locks_module.process_identity()
    dead = {**me, "pid": exited_pid, "locks": ["0.input.lock", "0.output.lock"]}
    cases = {
        "dead, every lock its own": ([dead], True),
        "alive": ([{**me, "locks": dead["locks"]}], False),
        "pid reused by another process": ([{**me, "started": -1, "locks": dead["locks"]}], True),
        "another host": ([{**dead, "host": "node-7"}], False),
        "a lock taken after it": ([{**dead, "locks": ["0.input.lock"]}], False),
        "one dead, one alive": ([dead, {**me, "locks": []}], False),
        "no record": ([], False),
    }
    for case, (holders, released) in cases.items():
        root = tmp_path / case.replace(" ", "_").replace(",", "")
        lock_dir = lock_dir_with(root, holders, locks=("0.input.lock", "0.output.lock"))
        assert bool(locks_module.release_stale_lock(lock_dir)) == released, case
        assert lock_dir.exists() != released, case


def test_redaction_covers_named_variables_longest_first_and_ignores_placeholders(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-abcdefgh")
    monkeypatch.setenv("MY_GATEWAY_TOKEN", "sk-abcdefgh-longer")
    monkeypatch.setenv("MEMREPRO_SECRET_ENV", "MY_GATEWAY_TOKEN")
    monkeypatch.setenv("HF_TOKEN", "EMPTY")  # a placeholder, not a secret
    text = "a sk-abcdefgh-longer b sk-abcdefgh EMPTY"
    assert redact(text) == "a [REDACTED] b [REDACTED] EMPTY"
    assert redact("key=passed-as-argument", ["passed-as-argument"]) == "key=[REDACTED]"
    sink = io_module.StringIO()
    RedactingStream(sink).write(text)
    assert sink.getvalue() == "a [REDACTED] b [REDACTED] EMPTY"


def test_a_secret_cut_short_is_redacted_wherever_the_cut_left_it(monkeypatch):
    """A reply cut at max_tokens, an error cut at N characters: what is left of the key goes
    too, from 12 characters on; a shorter start ("sk-proj-", shared by every key) stays."""
    key = "sk-proj-0123456789abcdefghij"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    assert redact(f"echo: {key[:24]}") == "echo: [REDACTED]"
    assert redact(f'{{"error": "{key[:26]}", "n": 1}}') == '{"error": "[REDACTED]", "n": 1}'
    assert redact(f"{key[:12]}x and {key}") == "[REDACTED]x and [REDACTED]"
    assert redact(f"keys look like {key[:11]}...") == f"keys look like {key[:11]}..."
    sink = io_module.StringIO()
    RedactingStream(sink).write(f"the model said {key[:20]}")
    assert sink.getvalue() == "the model said [REDACTED]"


def test_a_malformed_response_is_redacted_before_it_is_cut(tiny, endpoint, monkeypatch):
    """The malformed-response error keeps 500 characters: the key across that boundary must
    not leave its first characters behind."""
    [completion] = ask(openai_engine(tiny, endpoint, "garbage-echo"))
    assert completion.failed and KEY[:PARTIAL_SECRET_CHARS] not in completion.error


def test_a_run_records_itself_beside_its_locks(tmp_path):
    lock_dir = lock_dir_with(tmp_path, [])
    locks_module.record_lock_holder("results/smoke", ["table3"], lock_dir)
    [holder] = lock_dir.glob(f"{locks_module.HOLDER_PREFIX}*.json")
    record = io.read_json(holder)
    assert record["pid"] == os.getpid() and record["locks"] == ["0.input.lock"]
    assert (record["results"], record["targets"]) == ("results/smoke", ["table3"])
    assert not locks_module.is_dead(record)
    unlocked = tmp_path / "nolock"
    locks_module.record_lock_holder("results/smoke", [], unlocked)  # --nolock: nothing to record
    assert not unlocked.exists()


def test_a_second_run_beside_a_live_one_is_named_and_never_told_to_unlock(tmp_path, exited_pid):
    """Into the live run's results directory: its pid, host, start and targets, and how to write
    elsewhere. Into another directory, after a dead run, or with no lock: nothing to say."""
    me = locks_module.process_identity()
    live = {**me, "locks": ["0.input.lock"], "began": "2026-12-06 21:40:00 UTC",
            "results": "results/smoke", "targets": ["table3"]}  # fmt: skip
    lock_dir = lock_dir_with(tmp_path / "live", [live])
    said = locks_module.live_run("results/smoke", lock_dir)
    assert said == (
        f"A live run is writing results/smoke: pid {os.getpid()} on {me['host']}, started "
        "2026-12-06 21:40:00 UTC, targets table3. Wait for it to end, or write another results "
        "directory beside it: --config run=NAME."
    )
    assert "unlock" not in said
    assert locks_module.live_run("results/mine", lock_dir) is None
    dead = lock_dir_with(tmp_path / "dead", [{**live, "pid": exited_pid}])
    assert locks_module.live_run("results/smoke", dead) is None
    unlocked = lock_dir_with(tmp_path / "unlocked", [live], locks=())
    assert locks_module.live_run("results/smoke", unlocked) is None


def test_a_paper_number_off_its_scale_names_the_file_table_and_cell(tmp_path):
    from memrepro.jobs.report import _reading_paper
    from memrepro.report.cells import Cell, attach_paper_n

    table = pd.DataFrame(
        {"ar": [Cell(60.0, float("nan"), None, ci=(50.0, 70.0), n_scored=3)]},
        index=pd.Index(["Mem-α"], name="system"),
        dtype=object,
    )
    path = tmp_path / "memalpha.yaml"
    expected = rf"{path}: memalpha_table2, row 'Mem-α', column 'ar': the paper's number nan "
    with pytest.raises(ValueError, match=expected), _reading_paper(path, "memalpha_table2"):
        attach_paper_n(table, 3, 5.0, "memalpha_table2")
