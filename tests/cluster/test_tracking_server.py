"""Tracking at scale: the documented multi-user setup, a real `mlflow server` with a
database backend and served artifacts, started here; several pipelines whose jobs log to it at the
same time, then load their provenance at the same time. Every run is recorded once, none is lost,
each job is the child of its pipeline's run. The jobs run as local processes (server on
127.0.0.1), then as SLURM jobs on the test cluster's two nodes (server on the cluster network)."""

from __future__ import annotations

import functools
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow_server import mlflow_server
from slurm_jobs import CONTROLLER_IP, NODE_IP, finished, run, sbatch

from memrepro.tracking.invocation import ENV_INVOCATION, now_ms, start_invocation
from memrepro.tracking.store import EXPERIMENT

pytestmark = pytest.mark.cluster

PIPELINES, JOBS = 4, 3

# A training job as memrepro.verl.main runs one: its own process logs into the job's live run.
LIVE_JOB = """
import sys
from pathlib import Path
import mlflow
from memrepro.tracking.record import job_run
results, name = Path(sys.argv[1]), sys.argv[2]
log = results / "logs" / "train" / f"{name}.log"
log.parent.mkdir(parents=True, exist_ok=True)
log.write_text("training log\\n")
with job_run("train", {"job": name}, {"lr": 1e-6}, [], [], log) as record:
    env = record.child_env()
    client = mlflow.MlflowClient(env["MLFLOW_TRACKING_URI"])
    for step in range(3):
        client.log_metric(env["MLFLOW_RUN_ID"], "reward", 0.25 * step, step=step)
    record.log_metrics({"final_reward": 0.5})
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with mlflow_server(tmp_path_factory.mktemp("mlflow-server"), "127.0.0.1") as uri:
        yield uri


def start_pipeline(results: Path, uri: str, i: int, monkeypatch) -> str:
    """What Snakemake's onstart does: the invocation record and the jobs' environment."""
    invocation = start_invocation(
        results, uri, {"run": f"t{i}", "seed": i}, "9.0", ["snakemake"], []
    )
    for key in ("MLFLOW_TRACKING_URI", ENV_INVOCATION):
        monkeypatch.setenv(key, os.environ[key])  # restored after the test
    return invocation


def end_pipeline(results: Path) -> None:
    [path] = (results / "provenance").glob("*.json")
    info = json.loads(path.read_text())
    path.write_text(json.dumps({**info, "end_ms": now_ms(), "status": "FINISHED"}))


def run_all(commands: list[list[str]], env: dict[str, str] | None = None) -> None:
    """Start every command at once; each must succeed within the bound."""
    processes = [
        subprocess.Popen(c, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for c in commands
    ]
    for process in processes:
        output, _ = process.communicate(timeout=300)
        assert process.returncode == 0, output[-3000:]


def test_concurrent_pipelines_and_jobs_record_every_run_once(server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pipelines_log_and_load(server, tmp_path, monkeypatch, run_all)


def test_slurm_jobs_on_two_nodes_log_to_the_server(cluster, shared_dir, monkeypatch):
    """The same, each job an sbatch job on the SLURM test cluster's nodes, which reach the server
    over the cluster's network (slurm_up.sh's bridge), as GPU nodes reach a site's server."""
    (shared_dir / "server").mkdir()
    jobs: list[str] = []
    with mlflow_server(shared_dir / "server", CONTROLLER_IP) as uri:
        monkeypatch.chdir(shared_dir)
        pipelines_log_and_load(uri, shared_dir, monkeypatch, functools.partial(run_on_slurm, jobs))
    nodes = run("sacct", "-n", "-X", "-P", "-o", "NodeList", "-j", ",".join(jobs)).split()
    assert set(nodes) == set(NODE_IP)  # the jobs ran on both nodes


def run_on_slurm(submitted: list[str], commands: list[list[str]], env: dict[str, str]) -> None:
    """sbatch every command at once (one CPU each); each job must complete within the bound."""
    jobs = [
        sbatch(
            *("-c", "1", "--mem=1000", "-t", "10", "-o", "slurm-%j.out"),
            *("--wrap", shlex.join(command)),
            env=env,
        )
        for command in commands
    ]
    for job in jobs:
        assert finished(job, 300) == ("COMPLETED", "0:0"), Path(f"slurm-{job}.out").read_text()
    submitted += jobs


def pipelines_log_and_load(server: str, work: Path, monkeypatch, run_jobs) -> None:
    """4 pipelines whose jobs (run_jobs runs them all at once) log live to the server, then
    load their provenance at once: every run recorded once, each job under its pipeline."""
    monkeypatch.setenv("MEMREPRO_TRACKING", "on")
    pipelines = [work / f"user{i}" / f"results/t{i}" for i in range(PIPELINES)]
    invocations = []
    for i, results in enumerate(pipelines):
        invocations.append(start_pipeline(results, server, i, monkeypatch))
        # the pipeline's jobs, all at once, each logging live to the shared server
        jobs = [[sys.executable, "-c", LIVE_JOB, str(results), f"job{j}"] for j in range(JOBS)]
        run_jobs(jobs, env=dict(os.environ))
        end_pipeline(results)
    # every pipeline loads its provenance at the same time
    loads = [
        [sys.executable, "-m", "memrepro.tracking", str(r), "--uri", server] for r in pipelines
    ]
    run_all(loads)

    import mlflow

    client = mlflow.MlflowClient(server)
    experiment = client.get_experiment_by_name(EXPERIMENT).experiment_id
    runs = client.search_runs([experiment], max_results=1000)
    parents = {
        r.data.tags["memrepro.invocation.parent"]: r
        for r in runs
        if "memrepro.invocation.parent" in r.data.tags
    }
    assert sorted(parents) == sorted(invocations)
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId")]
    assert len(runs) == len(parents) + len(children) == PIPELINES * (1 + JOBS)  # none twice
    parent_ids = {r.info.run_id: invocation for invocation, r in parents.items()}
    per_pipeline = [r.data.tags["mlflow.parentRunId"] for r in children]
    assert sorted(per_pipeline) == sorted(list(parent_ids) * JOBS)  # each job under its own
    for child in children:
        assert child.info.status == "FINISHED" and child.data.tags["rule"] == "train"
        job = json.loads(child.data.tags["wildcards"])["job"]
        assert [a.path for a in client.list_artifacts(child.info.run_id, "log")] == [
            f"log/{job}.log"
        ]
        rewards = client.get_metric_history(child.info.run_id, "reward")
        assert [m.value for m in sorted(rewards, key=lambda m: m.step)] == [0.0, 0.25, 0.5]
        assert child.data.metrics["final_reward"] == 0.5
    for parent in parents.values():
        assert parent.info.status == "FINISHED"
        assert {a.path for a in client.list_artifacts(parent.info.run_id)} >= {"config.json"}

    run_all(loads)  # loading again records nothing more
    assert len(client.search_runs([experiment], max_results=1000)) == len(runs)
