"""The workflow as users run it: the paper plan under the SLURM profile, and the whole smoke DAG."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.workflow

WORKFLOW_FILES = ("Snakefile", "workflow", "config", "profiles", "envs")


def snakemake(*args: str, cwd: Path, path: Path | None = None) -> subprocess.CompletedProcess[str]:
    dirs = [str(p) for p in (path, Path(sys.executable).parent) if p is not None]
    env = {**os.environ, "PATH": os.pathsep.join([*dirs, os.environ["PATH"]])}
    return subprocess.run(
        [sys.executable, "-m", "snakemake", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def job_counts(output: str) -> dict[str, int]:
    table = output.split("Job stats:")[1]
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.MULTILINE)}


def test_slurm_profile_plans_every_paper_job(repo, tmp_path):
    # The profile runs jobs in apptainer images; planning only asks the binary for its version.
    shim = tmp_path / "apptainer"
    shim.write_text("#!/bin/sh\necho 'apptainer version 1.4.0'\n")
    shim.chmod(0o755)
    done = snakemake("-n", "-p", "--profile", "profiles/slurm", "all", cwd=repo, path=tmp_path)
    assert done.returncode == 0, done.stderr
    counts = job_counts(done.stdout)
    assert counts["download_data"] == 4
    assert counts["download_model"] == 5
    assert counts["synthesize_eval"] == 10
    assert counts["stage2_data"] == 1
    assert counts["train_stage1"] == counts["train_stage2"] == counts["plot_training_curve"] == 2
    assert counts["evaluate_memagent"] == 6 * 10
    assert counts["make_table1"] == counts["plot_figure1"] == 1
    # 16 nodes x 8 GPUs for RL-MemAgent-14B: the job's total GPU count goes to SLURM
    assert "gpu=128, nodes=16" in done.stdout
    # the plan shows the real verl command: Ray across the job's nodes, then verl's overrides
    launches = re.findall(r"-- bash workflow/scripts/ray_job\.sh (.*)", done.stdout)
    assert len(launches) == 4
    stage1_14b = next(line for line in launches if "--nodes 16" in line and ".stage1.verl" in line)
    for override in (
        "-- python -u -m memrl.verl.main",
        "algorithm.adv_estimator=grpo",
        "algorithm.norm_adv_by_std_in_grpo=false",
        "actor_rollout_ref.actor.loss_agg_mode=token-mean",
        "actor_rollout_ref.actor.kl_loss_type=low_var_kl",
        "actor_rollout_ref.rollout.n=16",
        "actor_rollout_ref.rollout.tensor_model_parallel_size=2",
        "trainer.nnodes=16",
        "trainer.test_freq=5",
        "trainer.save_freq=10",
        "trainer.resume_mode=auto",
    ):
        assert override in stage1_14b, override


@pytest.fixture(scope="module")
def smoke(tmp_path_factory, repo) -> Path:
    """The whole smoke DAG, run once in a scratch copy of the workflow."""
    work = tmp_path_factory.mktemp("smoke")
    for name in WORKFLOW_FILES:
        source = repo / name
        copy = shutil.copytree if source.is_dir() else shutil.copy
        copy(source, work / name)
    done = snakemake("--profile", "profiles/smoke", cwd=work)
    assert done.returncode == 0, done.stderr[-5000:]
    return work


def test_smoke_table_has_every_cell_with_sane_values(smoke):
    results = smoke / "results/smoke"
    with open(results / "tables/table1.csv") as handle:
        rows = list(csv.DictReader(handle))
    cells = {(row["system"], int(row["n_docs"])) for row in rows}
    assert len(cells) == 2 * 3
    for row in rows:
        assert 0.0 <= float(row["ours"]) <= 100.0
    assert "paper" in (results / "tables/table1.md").read_text()
    assert "\\begin{tabular}" in (results / "tables/table1.tex").read_text()
    metrics = json.loads((results / "eval/ruler_hqa/rl-memagent-tiny/50.metrics.json").read_text())
    assert metrics["n_items"] == 8 and metrics["mean_calls"] > 2


def test_smoke_figures_exist_as_png_and_pdf(smoke):
    figures = smoke / "results/smoke/figures"
    for name in ("figure1", "training_rl-memagent-tiny"):
        assert (figures / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (figures / f"{name}.pdf").read_bytes()[:5] == b"%PDF-"


def test_smoke_stage2_mixes_docqa_with_stage1_rows(smoke):
    lines = (smoke / "results/smoke/data/stage2/train.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    sources = {row["data_source"] for row in rows}
    assert len(rows) == 10 and "ruler_hqa" in sources and len(sources) > 1


def test_smoke_records_one_mlflow_child_run_per_job(smoke):
    db = sqlite3.connect(smoke / "results/smoke/mlflow.db")
    runs = dict(db.execute("select run_uuid, name from runs"))
    tags = {}
    for run, key, value in db.execute("select run_uuid, key, value from tags"):
        tags.setdefault(run, {})[key] = value
    parents = [r for r in runs if runs[r].startswith("pipeline-")]
    children = [r for r in runs if tags[r].get("mlflow.parentRunId") == parents[0]]
    assert len(parents) == 1
    rules = sorted(tags[r]["rule"] for r in children)
    assert rules.count("evaluate_memagent") == 6 and rules.count("download_model") == 2
    assert len(children) == len(runs) - 1 == 23
    for run in children:
        for key in ("git.commit", "git.dirty", "config.hash", "snakemake.version", "host"):
            assert tags[run][key], key
    evaluation = next(r for r in children if tags[r]["rule"] == "evaluate_memagent")
    assert any(k.startswith("output.") for k in tags[evaluation])
    metric_keys = {
        k for (k,) in db.execute("select key from metrics where run_uuid=?", (evaluation,))
    }
    assert "accuracy" in metric_keys


def test_smoke_rerun_is_up_to_date_and_one_target_reruns_alone(smoke):
    again = snakemake("--profile", "profiles/smoke", cwd=smoke)
    assert again.returncode == 0 and "Nothing to be done" in again.stderr + again.stdout
    (smoke / "results/smoke/tables/table1.csv").unlink()
    table = snakemake("--profile", "profiles/smoke", "table1", cwd=smoke)
    assert table.returncode == 0, table.stderr
    assert job_counts(table.stdout + table.stderr) == {"make_table1": 1, "table1": 1, "total": 2}


def test_smoke_html_report_builds(smoke):
    done = snakemake("--profile", "profiles/smoke", "--report", "report.zip", cwd=smoke)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (smoke / "report.zip").stat().st_size > 10_000
