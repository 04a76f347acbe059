"""Provenance: one MLflow run per pipeline invocation, one child run per Snakemake job.

`start_pipeline_run` is called once from the Snakefile's `onstart` (main process only); it creates
the experiment, records the parent run and exports its id through the environment, which local job
subprocesses inherit and the SLURM executor forwards (`--export=ALL`). Each `memrl` subcommand then
wraps its work in `job_run`, which nests a child run under that parent with the DESIGN §4 tags.
A child process that itself starts MLflow (verl's tracker) resumes the job's run via MLFLOW_RUN_ID.

Tracking never decides whether a job succeeds: if the backend is unreachable after retries the job
goes on and says so in its log. Set MEMRL_TRACKING=off to disable it entirely.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import memrl
from memrl.data.io import sha256_file

log = logging.getLogger(__name__)

EXPERIMENT = "memrl"
ENV_PARENT = "MEMRL_PARENT_RUN_ID"
ENV_CONFIG_HASH = "MEMRL_CONFIG_HASH"
ENV_SNAKEMAKE_VERSION = "MEMRL_SNAKEMAKE_VERSION"
FULL_HASH_MAX_BYTES = 256 * 2**20  # larger files (model shards) are identified by size + mtime
ARTIFACT_MAX_BYTES = 2 * 2**20


def enabled() -> bool:
    return os.environ.get("MEMRL_TRACKING", "on").lower() not in {"off", "0", "false"}


def git_state(repo: Path | None = None) -> dict[str, str]:
    """The commit of the MemRL source tree and whether it has uncommitted changes."""
    repo = repo or Path(memrl.__file__).resolve().parents[2]

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "HEAD")
    if not commit:
        return {"git.commit": "unknown", "git.dirty": "unknown"}
    return {"git.commit": commit, "git.dirty": str(bool(git("status", "--porcelain"))).lower()}


def file_digest(path: Path) -> str:
    """sha256 of a file, or of a directory's (relative path, file digest) listing."""
    if path.is_dir():
        listing = "\n".join(
            f"{p.relative_to(path)} {file_digest(p)}"
            for p in sorted(path.rglob("*"))
            if p.is_file()
        )
        return "sha256:" + hashlib.sha256(listing.encode()).hexdigest()
    stat = path.stat()
    if stat.st_size > FULL_HASH_MAX_BYTES:
        return f"size:{stat.st_size},mtime:{int(stat.st_mtime)}"
    return "sha256:" + sha256_file(path)


def flatten(settings: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested settings → MLflow params ("agent.chunk_tokens": "5000")."""
    flat: dict[str, str] = {}
    for key, value in settings.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, f"{name}."))
        else:
            flat[name] = json.dumps(value) if isinstance(value, list | tuple) else str(value)
    return flat


def _retry(action: Callable[[], Any], what: str, attempts: int = 5) -> Any:
    """SQLite backends shared by concurrent jobs report 'database is locked'; back off and retry."""
    for attempt in range(attempts):
        try:
            return action()
        except Exception as exc:
            if attempt == attempts - 1:
                log.warning("MLflow: %s failed after %d attempts: %s", what, attempts, exc)
                return None
            time.sleep(0.5 * 2**attempt)
    return None


def start_pipeline_run(uri: str, config: Mapping[str, Any], snakemake_version: str) -> str | None:
    """Create the invocation's parent run and export what the jobs need to nest under it."""
    if not enabled():
        return None
    import mlflow

    from memrl.config import config_hash

    if uri.startswith("sqlite:///"):
        Path(uri.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    mlflow.set_tracking_uri(uri)

    def create() -> str:
        experiment = mlflow.set_experiment(EXPERIMENT)
        tags = {
            "run": str(config["run"]),
            "config.hash": config_hash(dict(config)),
            "snakemake.version": snakemake_version,
            "host": socket.gethostname(),
            **git_state(),
        }
        client = mlflow.MlflowClient()
        run = client.create_run(
            experiment.experiment_id, run_name=f"pipeline-{config['run']}", tags=tags
        )
        client.log_dict(run.info.run_id, dict(config), "config.json")
        client.set_terminated(run.info.run_id)
        return run.info.run_id

    run_id = _retry(create, "creating the pipeline run")
    if run_id:
        os.environ.update(
            {
                "MLFLOW_TRACKING_URI": uri,
                ENV_PARENT: run_id,
                ENV_CONFIG_HASH: config_hash(dict(config)),
                ENV_SNAKEMAKE_VERSION: snakemake_version,
            }
        )
    return run_id


class JobRun:
    """The handle a job logs through; every call is a no-op when tracking is off or failed."""

    def __init__(self, client: Any = None, run_id: str | None = None) -> None:
        self.client, self.run_id = client, run_id

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        if self.run_id is None:
            return
        values = {k: float(v) for k, v in metrics.items() if isinstance(v, int | float)}
        ts = int(time.time() * 1000)
        from mlflow.entities import Metric

        batch = [Metric(k, v, ts, step or 0) for k, v in values.items()]
        _retry(lambda: self.client.log_batch(self.run_id, metrics=batch), "logging metrics")


def child_env() -> dict[str, str]:
    """What a launched process (verl under Ray) needs to log into this job's MLflow run: the
    run id and the tracking URI, a sqlite path made absolute (Ray workers run elsewhere)."""
    env = {}
    uri = os.environ.get("MLFLOW_TRACKING_URI")
    if uri:
        prefix = "sqlite:///"
        if uri.startswith(prefix) and not uri[len(prefix) :].startswith("/"):
            uri = prefix + str(Path(uri[len(prefix) :]).resolve())
        env["MLFLOW_TRACKING_URI"] = uri
    if os.environ.get("MLFLOW_RUN_ID"):
        env["MLFLOW_RUN_ID"] = os.environ["MLFLOW_RUN_ID"]
    return env


@contextmanager
def job_run(
    rule: str,
    wildcards: Mapping[str, str],
    settings: Mapping[str, Any],
    inputs: list[Path],
    outputs: list[Path],
    log_file: Path | None = None,
) -> Iterator[JobRun]:
    """Run the body inside a child MLflow run carrying this job's provenance."""
    if not enabled() or not os.environ.get("MLFLOW_TRACKING_URI"):
        yield JobRun()
        return
    import mlflow

    client = mlflow.MlflowClient(os.environ["MLFLOW_TRACKING_URI"])
    label = ",".join(f"{k}={v}" for k, v in wildcards.items())
    tags = {
        "rule": rule,
        "wildcards": json.dumps(dict(wildcards)),
        "config.hash": os.environ.get(ENV_CONFIG_HASH, "unknown"),
        "snakemake.version": os.environ.get(ENV_SNAKEMAKE_VERSION, "unknown"),
        "host": socket.gethostname(),
        "slurm.job_id": os.environ.get("SLURM_JOB_ID", ""),
        **git_state(),
        **{f"input.{p}": file_digest(p) for p in inputs if p.exists()},
    }
    if os.environ.get(ENV_PARENT):
        tags["mlflow.parentRunId"] = os.environ[ENV_PARENT]

    def create() -> str:
        experiment = client.get_experiment_by_name(EXPERIMENT) or client.get_experiment(
            client.create_experiment(EXPERIMENT)
        )
        run = client.create_run(
            experiment.experiment_id, run_name=f"{rule}[{label}]" if label else rule, tags=tags
        )
        client.log_batch(
            run.info.run_id,
            params=[mlflow.entities.Param(k, v[:6000]) for k, v in flatten(settings).items()],
        )
        return run.info.run_id

    run_id = _retry(create, f"creating the run of {rule}")
    handle = JobRun(client, run_id)
    status = "FAILED"
    if run_id:
        os.environ.setdefault("MLFLOW_RUN_ID", run_id)
    try:
        yield handle
        status = "FINISHED"
    finally:
        if run_id:
            _finish(client, run_id, outputs, log_file, status)


def _finish(client: Any, run_id: str, outputs: list[Path], log_file: Path | None, status: str):
    def finish() -> None:
        for path in outputs:
            if path.exists():
                client.set_tag(run_id, f"output.{path}", file_digest(path))
                if path.is_file() and path.stat().st_size <= ARTIFACT_MAX_BYTES:
                    client.log_artifact(run_id, str(path))
        if log_file is not None and log_file.exists():
            client.log_artifact(run_id, str(log_file), artifact_path="log")
        client.set_terminated(run_id, status=status)

    _retry(finish, "finishing the run")
