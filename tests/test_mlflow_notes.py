"""What MLflow's UI shows of a job: its run's name and its description's links and limits."""

from __future__ import annotations

import json
from pathlib import Path

from memrepro import mlflow_notes as notes

RESULTS = Path("/w/results/r")


def record(rule, log, inputs=None, outputs=None, **extra):
    return {
        "record": f"id-{rule}",
        "rule": rule,
        "wildcards": {"benchmark": "ruler_hqa", "length": "50", "system": "memagent-7b"},
        "log": str(RESULTS / log),
        "inputs": inputs or {},
        "outputs": outputs or {},
        "metrics": [],
        "status": "FINISHED",
        **extra,
    }


def test_a_job_is_named_by_its_rule_and_its_logs_own_path():
    job = record("evaluate", "logs/evaluate/ruler_hqa/memagent-7b/50.log")
    assert notes.job_run_name(job) == "evaluate ruler_hqa/memagent-7b/50"
    elsewhere = record("evaluate", "other/x.log")  # a log outside logs/<rule>/: the wildcards
    assert notes.job_run_name(elsewhere) == "evaluate ruler_hqa/50/memagent-7b"


def test_a_description_links_each_input_to_its_producer_and_fits_mlflows_limit():
    producer = record("download_model", "logs/download_model/base.log")
    inputs = {str(RESULTS / f"data/part-{i:04d}.json"): f"sha256:{i:064x}" for i in range(300)}
    inputs[str(RESULTS / "models/base")] = "sha256:" + "f" * 64
    made_by = {str(RESULTS / "models/base"): producer}
    metrics = [{"values": {"accuracy": 40.0}}, {"values": {"accuracy": 62.5, "f1": 0.5}}]
    job = record("train", "logs/train/rl.log", inputs, {str(RESULTS / "ckpt"): "sha256:00"})
    job["metrics"] = metrics
    text = notes.job_description(job, made_by, {"id-download_model": "r1"}, "7", RESULTS, "p0")
    assert len(text) <= notes.NOTE_MAX_CHARS
    assert "Metrics: `accuracy` 62.5 · `f1` 0.5" in text
    assert "[download_model base](#/experiments/7/runs/r1?workflowType=machine_learning)" in text
    assert (
        "| `data/part-0000.json` | `sha256:000000000000` | no job of this run (a source) |" in text
    )
    dropped = int(text.rsplit("(", 1)[1].split(" ")[0])
    shown = text.count("| `data/part-")
    assert dropped > 0 and shown + dropped == 300  # every file counted, the rest in the artifact
    assert text.rstrip().endswith("the run's artifact `provenance.json` has them all)")


def test_a_download_run_says_where_its_file_came_from(tmp_path):
    from memrepro.tracking.results_dir import origin_of

    manifest = tmp_path / "raw/hotpot.json.manifest.json"
    manifest.parent.mkdir()
    spec = {"source": "hf", "id": "Qwen/Qwen2.5-7B-Instruct", "revision": "a09a354"}
    manifest.write_text(f'{{"source": "hf", "spec": {json.dumps(spec)}, "path": "m"}}')
    job = record("download_model", "logs/download_model/qwen.log", outputs={str(manifest): "x"})
    origin = origin_of(job)
    text = notes.job_description(job, {}, {}, "7", tmp_path, None, origin)
    assert "Origin: source `hf` · id `Qwen/Qwen2.5-7B-Instruct` · revision `a09a354`" in text
    manifest.unlink()  # gone: no origin, nothing made up
    assert origin_of(job) == {}
    assert "Origin" not in notes.job_description(job, {}, {}, "7", tmp_path, None, {})


def test_an_evaluation_run_shows_each_tasks_score_and_interval_first():
    from memrepro.jobs.evaluate import headline_metrics

    summary = {"task": "hotpotqa", "accuracy": 62.5, "ci95": {"accuracy": [40.1, 80.2]}}
    named = headline_metrics(summary)
    assert named == {"score.hotpotqa": 62.5, "ci_low.hotpotqa": 40.1, "ci_high.hotpotqa": 80.2}
    assert headline_metrics({"task": "qa", "accuracy": 0.0, "ci95": {}}) == {"score.qa": 0.0}
    details = {"2wikimqa.length": 0.0, "mean_calls": 5.0, "2wikimqa.accuracy": 10.0}
    lines = [{"values": details}, {"values": named | {"score.2wikimqa": 10.0}}]
    job = record("evaluate", "logs/evaluate/longbench/rl/0.log", metrics=lines)
    text = notes.job_description(job, {}, {}, "7", RESULTS, None)
    assert (
        "Metrics: `score.2wikimqa` 10 · `score.hotpotqa` 62.5 · `ci_low.hotpotqa` 40.1 · " in text
    )
