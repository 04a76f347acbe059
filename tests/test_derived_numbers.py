"""Derived numbers checked where they are read: a metrics record's intervals against its scores
and counts (the table jobs), and the response lengths a training run measured (`memrepro cost`)."""

from __future__ import annotations

import json
import logging
import re
import shlex
from pathlib import Path

import pytest

from memrepro import config as cfg
from memrepro.cost import command
from memrepro.cost.plan import PlannedJob
from memrepro.cost.price import price_job
from memrepro.cost.pricing import Pricing
from memrepro.cost.responses import measured_response_tokens
from memrepro.evaluation import summarize
from memrepro.layout import MEMALPHA_STAGE
from memrepro.report.records import load_metrics
from memrepro.scoring.intervals import wilson

RATE = 4e14  # FLOP/s: any positive rate prices a plan


# --- metrics records ------------------------------------------------------------------------------


def prediction(index: int, score: float, **extra) -> dict:
    """One evaluated sample as the evaluation writes it (its scores are floats)."""
    return {
        "index": index,
        "failed": False,
        "response": "an answer",
        "score": score,
        "num_tokens": 900,
        "n_calls": 1,
        **extra,
    }


def right_wrong_record(right: int = 64, n: int = 128, dropped: int = 0) -> dict:
    """A RULER-HQA record of `right` of `n` items right, `dropped` empty outputs among the
    wrong ones, with a graded F1 beside it: what `summarize` writes."""
    predictions = [
        prediction(
            i,
            float(i < right),
            sub_em=float(i < right),
            f1=0.5 + 0.5 * (i < right) - 0.01 * (i % 7),
            **({"response": ""} if i >= n - dropped else {}),
        )
        for i in range(n)
    ]
    return summarize(predictions, "ruler_hqa", "hqa", "rl-14b", 50)


def instances_record(groups: list[list[float]]) -> dict:
    """A Mem-α record of instances, each a list of its questions' scores."""
    predictions = [
        prediction(i, sum(scores) / len(scores), scores=scores, n_questions=len(scores))
        for i, scores in enumerate(groups)
    ]
    return summarize(predictions, "memalpha", "squad", "memalpha-4b", 0)


def write_record(tmp_path: Path, record: dict) -> Path:
    where = tmp_path / "results/run/eval" / record["benchmark"] / record["system"]
    path = where / f"{record['length']}.metrics.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([record]))
    return path


def refused(tmp_path: Path, record: dict) -> str:
    """The error that stops the table job reading `record`'s file (it names the file)."""
    path = write_record(tmp_path, record)
    with pytest.raises(ValueError, match=re.escape(str(path))) as error:
        load_metrics([path])
    return str(error.value)


@pytest.mark.parametrize(
    "record",
    [
        right_wrong_record(),
        right_wrong_record(right=0, n=12),
        right_wrong_record(right=12, n=12),
        right_wrong_record(right=90, n=128, dropped=5),
        instances_record([[1.0, 0.0, 1.0], [0.0, 0.0], [1.0, 1.0, 1.0, 0.0], [0.5, 0.25]] * 4),
        # every instance all right or all wrong, of unequal sizes: the fixed-instances interval
        # has no spread and falls back to the pooled questions' Wilson interval
        instances_record([[1.0] * 20, [0.0, 0.0], [0.0, 0.0]]),
        instances_record([[0.2, 0.2], [0.6, 0.6, 0.6]]),  # graded, no spread: zero width
    ],
    ids=["half", "none-right", "all-right", "dropped", "instances", "fallback", "graded-flat"],
)
def test_the_records_the_evaluation_writes_pass_every_check(tmp_path, record):
    [loaded] = load_metrics([write_record(tmp_path, record)])
    assert loaded["accuracy"] == record["accuracy"]


def test_a_record_with_intervals_but_no_right_wrong_is_refused(tmp_path):
    # 64/128 with a made-up narrow interval: read as a graded score it would be "reproduced"
    record = {**right_wrong_record(), "ci95": {"accuracy": [49.5, 50.5]}}
    del record["right_wrong"]
    message = refused(tmp_path, record)
    assert "'right_wrong'" in message and "ci95" in message


@pytest.mark.parametrize(
    ("field", "bounds", "named"),
    [
        ("accuracy", [10.0, 20.0], "accuracy=50.0 lies outside ci95['accuracy']=[10.0, 20.0]"),
        ("f1", [1.0, 2.0], "f1="),  # graded (a bootstrap interval): the score inside only
    ],
)
def test_a_score_outside_its_own_interval_is_refused(tmp_path, field, bounds, named):
    record = right_wrong_record()
    record["ci95"] = {**record["ci95"], field: bounds}
    assert named in refused(tmp_path, record)


def test_a_score_outside_its_fixed_instances_interval_is_refused(tmp_path):
    record = instances_record([[1.0, 0.0, 1.0], [0.0, 1.0], [1.0, 1.0, 1.0, 0.0]] * 4)
    record["ci95_fixed_instances"] = {"accuracy": [0.0, 5.0]}
    assert "ci95_fixed_instances['accuracy']" in refused(tmp_path, record)


def test_an_interval_that_disagrees_with_its_counts_is_refused(tmp_path):
    record = right_wrong_record()  # 64/128: Wilson [41.5, 58.5]
    record["ci95"]["accuracy"] = [49.0, 51.0]  # contains the score, far narrower than its counts
    message = refused(tmp_path, record)
    low, high = wilson(64, 128)
    assert "ci95['accuracy']=[49.0, 51.0]" in message and "64/128" in message
    assert f"{low:.2f}" in message and f"{high:.2f}" in message


def test_a_rounded_interval_is_accepted(tmp_path):
    record = right_wrong_record()
    record["ci95"]["accuracy"] = [round(bound, 2) for bound in record["ci95"]["accuracy"]]
    assert load_metrics([write_record(tmp_path, record)])


def test_the_official_accuracys_interval_counts_the_answered_items_only(tmp_path):
    record = right_wrong_record(right=90, n=128, dropped=5)  # 90 of 123 answered
    record["ci95"]["accuracy_official"] = list(wilson(90, 128))  # over every item: wrong n
    assert "90/123" in refused(tmp_path, record)


def test_a_right_wrong_score_that_is_no_count_is_refused(tmp_path):
    record = {**right_wrong_record(), "accuracy": 50.3}  # 64.38 of 128
    record["ci95"]["accuracy"] = [41.8, 58.8]
    message = refused(tmp_path, record)
    assert "accuracy=50.3" in message and "k/128" in message


def test_right_wrong_naming_a_score_the_record_lacks_is_refused(tmp_path):
    record = {**right_wrong_record(), "right_wrong": ["accuracy", "em"]}
    assert "'right_wrong'" in refused(tmp_path, record) and "em" in refused(tmp_path, record)


# --- measured response lengths (`memrepro cost --lengths`) ----------------------------------------


@pytest.fixture
def paper(repo):
    return cfg.load_config([repo / "config/config.yaml"])


def stage1_job(paper: dict) -> PlannedJob:
    settings = cfg.train_settings(paper, "rl-memagent-7b", "stage1")
    return PlannedJob("train_stage1", {"train_run": "rl-memagent-7b"}, {"gpu": "32"}, settings)


def stage_dir(results: Path) -> Path:
    return results / "checkpoints" / "rl-memagent-7b" / "stage1"


def write_train_metrics(results: Path, text: str) -> Path:
    out = stage_dir(results)
    out.mkdir(parents=True)
    path = out / "train_metrics.jsonl"
    path.write_text(text)
    return path


def metrics_line(step: int, mean: object) -> str:
    return json.dumps({"step": step, "reward_mean": 0.1, "response_tokens_mean": mean}) + "\n"


def test_a_torn_last_line_is_skipped_with_a_warning(tmp_path, caplog):
    path = write_train_metrics(
        tmp_path, metrics_line(0, 300.0) + metrics_line(1, 500.0) + '{"step": 2, "response_tok'
    )
    with caplog.at_level(logging.WARNING):
        assert measured_response_tokens(path.parent) == pytest.approx(400.0)
    assert f"{path}:3" in caplog.text and "torn" in caplog.text


def test_a_damaged_line_inside_the_file_is_an_error_naming_it(tmp_path):
    path = write_train_metrics(tmp_path, metrics_line(0, 300.0) + "garbage\n" + metrics_line(2, 1))
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))}:2"):
        measured_response_tokens(path.parent)


@pytest.mark.parametrize("mean", [-5.0, 0, 1e12, 1025, "NaN", "long"])
def test_a_measured_length_off_the_stages_range_is_an_error_naming_its_line(paper, tmp_path, mean):
    text = metrics_line(0, 300.0) + metrics_line(1, mean).replace('"NaN"', "NaN")
    path = write_train_metrics(tmp_path, text)
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))}:2: response_tokens_mean=") as e:
        price_job(stage1_job(paper), Pricing.of(paper, RATE, tmp_path))
    assert "1024" in str(e.value)  # stage I's longest response: its memory and answer budget


def test_the_stages_longest_response_is_accepted(paper, tmp_path):
    write_train_metrics(tmp_path, metrics_line(0, 1024) + metrics_line(1, 0.5))
    assert price_job(stage1_job(paper), Pricing.of(paper, RATE, tmp_path)).measured


def test_a_verl_log_length_off_the_range_names_its_step(paper, tmp_path):
    logs = stage_dir(tmp_path).parent / ".stage1.verl" / "metrics"
    logs.mkdir(parents=True)
    data = {"memagent/trajectory_reward/mean": 0.1, "response_length/mean": -3.0}
    (logs / "attempt-1.jsonl").write_text(json.dumps({"step": 7, "data": data}) + "\n")
    with pytest.raises(ValueError, match=r"step 7: response_tokens_mean=-3\.0"):
        price_job(stage1_job(paper), Pricing.of(paper, RATE, tmp_path))


def test_a_memalpha_runs_lengths_are_bounded_by_its_chunk_budget(paper, tmp_path):
    run = next(iter(cfg.memalpha_runs(paper)))
    settings = cfg.memalpha_train_settings(paper, run)
    longest = settings["agent"]["max_new_tokens"]
    out = tmp_path / "checkpoints" / run / MEMALPHA_STAGE
    out.mkdir(parents=True)
    (out / "train_metrics.jsonl").write_text(metrics_line(0, longest + 1))
    job = PlannedJob("train_memalpha", {}, {"gpu": "8"}, settings)
    with pytest.raises(ValueError, match=rf"response_tokens_mean={longest + 1}\b.*{longest}"):
        price_job(job, Pricing.of(paper, RATE, tmp_path))


# --- the command ----------------------------------------------------------------------------------


def plan_of(job: PlannedJob) -> str:
    """A dry run's text of one job (what `snakemake -n -p` prints)."""
    settings = shlex.quote(json.dumps(job.settings))
    return (
        f"rule {job.rule}:\n    wildcards: train_run=rl-memagent-7b\n    resources: gpu=32\n"
        f"Shell command: memrepro train --settings {settings} --out x\n"
    )


def test_the_command_reports_a_bad_measured_length_without_a_traceback(
    paper, repo, tmp_path, monkeypatch, capsys
):
    path = write_train_metrics(tmp_path, metrics_line(0, -1.0))
    monkeypatch.chdir(repo)
    monkeypatch.setattr(command, "dry_run", lambda args, overrides: plan_of(stage1_job(paper)))
    argv = ["--lengths", str(tmp_path), "--configfile", "config/config.yaml"]
    with pytest.raises(SystemExit, match=rf"memrepro cost: {re.escape(str(path))}:1"):
        command.main(argv)


def test_actual_on_a_directory_without_job_records_is_an_error_naming_it(
    repo, tmp_path, monkeypatch
):
    monkeypatch.chdir(repo)
    monkeypatch.setattr(command, "dry_run", lambda *a: pytest.fail("planned a wrong path"))
    with pytest.raises(SystemExit, match=rf"--actual {re.escape(str(tmp_path))}: no job record"):
        command.main(["--actual", str(tmp_path), "--configfile", "config/smoke.yaml"])


@pytest.mark.parametrize(
    "args",
    [
        ["--configfile", "config/smoke.yaml", "BAD"],
        ["--configfile", "config/smoke.yaml", "--config", "ruler_hqa.train_docs=-5"],
    ],
)
def test_a_config_that_fails_the_schema_prints_its_error(repo, tmp_path, monkeypatch, args):
    bad = tmp_path / "bad.yaml"
    bad.write_text("ruler_hqa:\n  train_docs: -5\n")
    monkeypatch.chdir(repo)
    monkeypatch.setattr(command, "dry_run", lambda *a: pytest.fail("planned a bad config"))
    argv = [str(bad) if arg == "BAD" else arg for arg in args]
    with pytest.raises(SystemExit, match=r"ruler_hqa\.train_docs: -5 must be at least 1 \(set in "):
        command.main(argv)
