"""Provenance: each job appends a small record next to its log; one local step loads the records
into MLflow (one parent run per Snakemake invocation, one child run per job).

Jobs never import MLflow: importing it and opening its store costs seconds per job, and hundreds of
SLURM jobs must not write one SQLite file on a network disk. Instead:

- `start_invocation` (the Snakefile's `onstart`, real runs only) writes
  `<results>/provenance/<invocation>.json` (config, git state, host, the command, its targets and
  profile), the uncommitted diff when the tree is dirty (`<invocation>.diff`), and exports what
  the jobs need (`MEMRL_INVOCATION`, the config hash, git state, the diff, the digest cache, the
  tracking URI); local job processes inherit it and the SLURM executor forwards it
  (`--export=ALL`).
- `job_run` (every `memrl` subcommand) appends JSON lines to `<log stem>.provenance.jsonl`: a
  `start` line (rule, wildcards, tags with the software it runs on (memrl.software), params =
  the resolved settings, input digests (memrl.digests)), `metrics` lines as the job logs them,
  and an `end` line (status, wall time, peak RSS, output digests). Each line is flushed, so a
  killed job leaves a record without `end` (loaded as KILLED).
- `end_invocation` (`onsuccess`/`onerror`) marks the invocation finished and runs `load`, which
  creates the runs not yet in MLflow, describes each job run with its inputs linked to the runs
  that produced them (memrl.mlflow_notes) and writes `provenance/mlflow/runs.json` (record id ->
  run id, for `memrl lineage`). It is idempotent (runs are matched by record id) and can be run
  by hand: `python -m memrl.tracking results/<run>` (e.g. after a killed invocation, or to fill
  a tracking server from records written on a cluster).

A results directory moves as a whole: records are read rebased onto where the directory lies now
(`records_under`), the SQLite store's artifact locations are relative to its folder
(`relative_artifacts`), and its URI is found in the directory itself (`store_uri`).

A job whose process logs to MLflow itself (verl's tracker) asks `JobRecord.child_env()` for a live
run; the loader then adopts that run as the job's child run. Tracking never decides whether a job
succeeds. Set MEMRL_TRACKING=off to disable it entirely.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import resource
import shlex
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import memrl
from memrl import mlflow_notes as notes
from memrl.data.io import append_jsonl, read_json, write_json_atomic, write_text_atomic
from memrl.digests import ENV_DIGEST_CACHE, file_digest
from memrl.locks import is_dead, process_identity
from memrl.software import software_tags

log = logging.getLogger(__name__)

EXPERIMENT = "memrl"
ENV_INVOCATION = "MEMRL_INVOCATION"
ENV_CONFIG_HASH = "MEMRL_CONFIG_HASH"
ENV_SNAKEMAKE_VERSION = "MEMRL_SNAKEMAKE_VERSION"
ENV_GIT_COMMIT = "MEMRL_GIT_COMMIT"
ENV_GIT_DIRTY = "MEMRL_GIT_DIRTY"
ENV_GIT_DIFF = "MEMRL_GIT_DIFF"
RECORD_SUFFIX = ".provenance.jsonl"
RUNS_FILE = "mlflow/runs.json"  # in invocations_dir: each loaded record's MLflow run id
# MLflow's UI opens an experiment on its runs, not on its GenAI traces view
EXPERIMENT_TAGS = {"mlflow.experimentKind": "custom_model_development"}
ARTIFACT_MAX_BYTES = 2 * 2**20
ARTIFACTS = "mlartifacts"  # a SQLite store's artifacts: this folder beside the database
PARAM_MAX_CHARS = 6000  # MLflow's limit on a param value
_METRIC_NAME_UNSAFE = re.compile(r"[^\w\-. :/]")
BATCH = {"params": 100, "tags": 100, "metrics": 1000}  # MLflow's limits per log_batch call


def enabled() -> bool:
    return os.environ.get("MEMRL_TRACKING", "on").lower() not in {"off", "0", "false"}


def now_ms() -> int:
    return int(time.time() * 1000)


def _git(repo: Path | None, *args: str) -> subprocess.CompletedProcess[str] | str:
    """A git command run in the MemRL source tree (`repo`), or why it could not run."""
    repo = repo or Path(memrl.__file__).resolve().parents[2]
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    except FileNotFoundError:  # a minimal image
        return "no git here"
    except OSError as error:
        return f"git cannot run here: {error.strerror or error}"


def _git_output(repo: Path | None, *args: str) -> str:
    done = _git(repo, *args)
    return done.stdout if not isinstance(done, str) and done.returncode == 0 else ""


def git_state(repo: Path | None = None) -> dict[str, str]:
    """The commit of the MemRL source tree and whether it has uncommitted changes: the
    invocation's, from the environment, when a Snakemake run exported it (so a job in a container
    without git or .git records the host's); else asked of git; else "unknown" with the reason."""
    if ENV_GIT_COMMIT in os.environ:
        return {"git.commit": os.environ[ENV_GIT_COMMIT], "git.dirty": os.environ[ENV_GIT_DIRTY]}
    done = _git(repo, "rev-parse", "HEAD")
    if isinstance(done, str) or done.returncode != 0:
        reason = done if isinstance(done, str) else f"not a git checkout: {done.stderr.strip()}"
        return {"git.commit": "unknown", "git.dirty": "unknown", "git.unknown_reason": reason}
    dirty = bool(_git_output(repo, "status", "--porcelain").strip())
    return {"git.commit": done.stdout.strip(), "git.dirty": str(dirty).lower()}


def commit_text() -> str:
    """`commit <short hash>[ with uncommitted changes]`, for footnotes and --version."""
    git = git_state()
    dirty = " with uncommitted changes" if git["git.dirty"] == "true" else ""
    why = f" ({git['git.unknown_reason']})" if "git.unknown_reason" in git else ""
    return f"commit {git['git.commit'][:12]}{dirty}{why}"


def made_by() -> str:
    """One line naming what made an output: commit, config hash, invocation (for footnotes)."""
    return (
        f"{commit_text()}, config {os.environ.get(ENV_CONFIG_HASH, '?')}, "
        f"invocation {os.environ.get(ENV_INVOCATION) or 'none (run by hand)'}"
    )


def git_diff(repo: Path | None = None) -> str:
    """The uncommitted changes of the source tree: `git diff HEAD`, then the untracked files."""
    untracked = _git_output(repo, "ls-files", "--others", "--exclude-standard").splitlines()
    listing = "".join(f"# untracked: {name}\n" for name in untracked)
    return _git_output(repo, "diff", "HEAD") + listing


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


def peak_rss_mb() -> float:
    """Peak resident memory of this process and of its largest finished child, in MB."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, children) / 1024  # Linux reports KiB


def record_path(log_file: Path) -> Path:
    """`logs/<rule>/<job>.log` → `logs/<rule>/<job>.provenance.jsonl`."""
    return log_file.with_suffix(RECORD_SUFFIX)


def keep_attempt(path: Path) -> None:
    """Move an earlier attempt's record aside (`<job>.<its record id>.provenance.jsonl`), so a
    killed or failed attempt still reaches MLflow after its job is run again; the loader reads
    both. A record without a start line (killed before its first write) is dropped; a damaged
    one is set aside as `<job>.damaged-<uuid>` (the loader skips it) with a warning: tracking
    never decides whether a job runs."""
    if not path.is_file():
        return
    stem = path.name.removesuffix(RECORD_SUFFIX)
    events, damage = read_events(path)
    if events and events[0].get("event") == "start" and events[0].get("record"):
        path.rename(path.with_name(f"{stem}.{events[0]['record']}{RECORD_SUFFIX}"))
    elif damage:
        aside = path.with_name(f"{stem}.damaged-{uuid.uuid4().hex}")
        log.warning("%s; set aside as %s, not loaded into MLflow", "; ".join(damage), aside.name)
        path.rename(aside)
    else:
        path.unlink()


def invocations_dir(results: Path) -> Path:
    return results / "provenance"


# --- the Snakemake invocation (main process) ------------------------------------------------------


def start_invocation(
    results: Path,
    uri: str,
    config: Mapping[str, Any],
    snakemake_version: str,
    command: list[str],
    targets: list[str],
) -> str | None:
    """Record the invocation (the `command` that started it and its `targets`) and export what
    its jobs need; returns its id."""
    if not enabled():
        return None
    from memrl.config import config_hash

    invocation = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
    git = git_state()
    tags = {
        "run": str(config["run"]),
        "config.hash": config_hash(dict(config)),
        "snakemake.version": snakemake_version,
        "host": socket.gethostname(),
        "command": shlex.join(command),
        "targets": " ".join(targets) or "all",
        "profile": profile_of(command),
        **git,
    }
    diff = invocations_dir(results) / f"{invocation}.diff"
    if git["git.dirty"] == "true":
        write_text_atomic(diff, git_diff())
    write_json_atomic(
        invocations_dir(results) / f"{invocation}.json",
        {
            "invocation": invocation,
            "uri": uri,
            "cwd": os.getcwd(),  # a relative store path is relative to it
            "results": str(results.resolve()),  # where the results lay: a moved copy is rebased
            "start_ms": now_ms(),
            "process": process_identity(),  # a killed invocation is recognised by it
            "tags": tags,
            "config": config,
        },
    )
    os.environ.update(
        {
            ENV_INVOCATION: invocation,
            ENV_CONFIG_HASH: tags["config.hash"],
            ENV_SNAKEMAKE_VERSION: snakemake_version,
            ENV_GIT_COMMIT: git["git.commit"],
            ENV_GIT_DIRTY: git["git.dirty"],
            ENV_GIT_DIFF: str(diff.resolve()) if diff.is_file() else "",
            ENV_DIGEST_CACHE: str((invocations_dir(results) / "digests").resolve()),
            "MLFLOW_TRACKING_URI": absolute_uri(uri),
        }
    )
    return invocation


def profile_of(command: list[str]) -> str:
    """The profile a Snakemake command line names (`--profile X`, `--profile=X`), else
    $SNAKEMAKE_PROFILE's, else "none"."""
    for i, arg in enumerate(command):
        if arg == "--profile" and i + 1 < len(command):
            return command[i + 1]
        if arg.startswith("--profile="):
            return arg.split("=", 1)[1]
    return os.environ.get("SNAKEMAKE_PROFILE", "none")


def end_invocation(
    results: Path, succeeded: bool, snakemake_log: str | Sequence[str] | None = None
) -> None:
    """Mark the invocation finished and load every pending record into MLflow (a subprocess:
    MLflow is imported once per invocation, and a tracking failure never fails the workflow).
    `snakemake_log`: Snakemake's log file(s) of the invocation (its handlers' `log`: a list in
    Snakemake 9), attached to its parent run."""
    invocation = os.environ.get(ENV_INVOCATION)
    if not enabled() or not invocation:
        return
    path = invocations_dir(results) / f"{invocation}.json"
    record = read_json(path)
    record.update(end_ms=now_ms(), status="FINISHED" if succeeded else "FAILED")
    logs = [snakemake_log] if isinstance(snakemake_log, str) else list(snakemake_log or [])
    record["snakemake_logs"] = [str(Path(log_file).resolve()) for log_file in logs]
    write_json_atomic(path, record)
    done = subprocess.run([sys.executable, "-m", "memrl.tracking", str(results)], check=False)
    if done.returncode != 0:
        log.warning(
            "provenance: loading into MLflow failed; rerun python -m memrl.tracking %s", results
        )


def absolute_uri(uri: str, cwd: Path | None = None) -> str:
    """A relative `sqlite:///rel/path.db` or plain store path made absolute (jobs and Ray workers
    run elsewhere); URLs unchanged."""
    cwd = cwd or Path.cwd()
    prefix = "sqlite:///"
    if uri.startswith(prefix):
        return prefix + _absolute_path(uri[len(prefix) :], cwd)
    return uri if ":" in uri else _absolute_path(uri, cwd)


def _absolute_path(path: str, cwd: Path) -> str:
    if "://" in path or os.path.isabs(path) or path.startswith("~"):
        return path
    return str(cwd / path)


# --- one job --------------------------------------------------------------------------------------


class JobRecord:
    """The handle a job logs through: lines appended to its provenance record (no-ops without)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.mlflow_run_id: str | None = None

    def write(self, event: dict[str, Any]) -> None:
        if self.path is not None:
            append_jsonl(self.path, [event])

    def log_metrics(self, metrics: Mapping[str, Any], step: int | None = None) -> None:
        """Numeric values only; names keep the characters MLflow allows (a data source such as
        `longmemeval_s*` would fail the whole load)."""
        values = {
            _METRIC_NAME_UNSAFE.sub("_", k): float(v)
            for k, v in metrics.items()
            if isinstance(v, int | float)
        }
        if values:
            self.write({"event": "metrics", "ts": now_ms(), "step": step or 0, "values": values})

    def child_env(self) -> dict[str, str]:
        """MLFLOW_* for a process that logs into MLflow itself (verl under Ray): a live run of
        this job, created here, which the loader later adopts as the job's child run."""
        uri = os.environ.get("MLFLOW_TRACKING_URI")
        if self.path is None or not uri:
            return {}
        if self.mlflow_run_id is None:
            import mlflow

            client = mlflow.MlflowClient(uri)
            run = client.create_run(experiment_id(client, uri))
            self.mlflow_run_id = run.info.run_id
            self.write({"event": "mlflow_run", "run_id": self.mlflow_run_id})
        return {"MLFLOW_TRACKING_URI": uri, "MLFLOW_RUN_ID": self.mlflow_run_id}


@contextlib.contextmanager
def job_run(
    rule: str,
    wildcards: Mapping[str, str],
    settings: Mapping[str, Any],
    inputs: list[Path],
    outputs: list[Path],
    log_file: Path | None = None,
) -> Iterator[JobRecord]:
    """Run the body while writing this job's provenance record next to its log."""
    if not enabled() or log_file is None:
        yield JobRecord()
        return
    path = record_path(log_file)
    keep_attempt(path)
    record = JobRecord(path)
    started = time.monotonic()
    record.write(
        {
            "event": "start",
            "record": uuid.uuid4().hex,
            "invocation": os.environ.get(ENV_INVOCATION),
            "rule": rule,
            "wildcards": dict(wildcards),
            "start_ms": now_ms(),
            "tags": {
                "config.hash": os.environ.get(ENV_CONFIG_HASH, "unknown"),
                "snakemake.version": os.environ.get(ENV_SNAKEMAKE_VERSION, "unknown"),
                "host": socket.gethostname(),
                "slurm.job_id": os.environ.get("SLURM_JOB_ID", ""),
                **git_state(),
                **software_tags(),
            },
            "params": flatten(settings),
            "inputs": {str(p): file_digest(p) for p in inputs if p.exists()},
            "log": str(log_file),
            "cwd": os.getcwd(),  # what the relative paths above are relative to
            "diff": os.environ.get(ENV_GIT_DIFF, ""),
        }
    )
    status = "FAILED"
    try:
        yield record
        status = "FINISHED"
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (memrl.cli maps it): SLURM preemption, timeout
        status = "KILLED"
        raise
    except SystemExit as exc:
        status = "FAILED" if exc.code else "FINISHED"
        raise
    finally:
        existing = [p for p in outputs if p.exists()]
        record.write(
            {
                "event": "end",
                "status": status,
                "end_ms": now_ms(),
                "wall_s": round(time.monotonic() - started, 3),
                "peak_rss_mb": round(peak_rss_mb(), 1),
                "outputs": {str(p): file_digest(p) for p in existing},
                "artifacts": [
                    str(p)
                    for p in existing
                    if p.is_file() and p.stat().st_size <= ARTIFACT_MAX_BYTES
                ],
            }
        )


# --- loading records into MLflow ------------------------------------------------------------------


def read_events(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """A record's readable lines, and what was wrong with the others (`path:line: why`): one
    damaged line costs that line only. A last line without its newline is a write cut short
    (the job killed mid-write): also reported, as what it held is lost."""
    data = path.read_bytes()
    events: list[dict[str, Any]] = []
    damage: list[str] = []
    offset = 0
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, 1):
        where = f"{path}:{number}"
        start, offset = offset, offset + len(raw) + 1
        if not raw.strip():
            continue
        if number == len(lines):
            damage.append(f"{where}: cut mid-line (the job was killed while writing it)")
            continue
        try:
            event = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            damage.append(f"{where}: not UTF-8 at byte {start + exc.start} of the file")
            continue
        except json.JSONDecodeError as exc:
            damage.append(f"{where}: not a JSON line ({exc.msg}, column {exc.colno})")
            continue
        if not isinstance(event, dict) or not isinstance(event.get("event"), str):
            damage.append(f"{where}: not a record line (no `event`)")
            continue
        events.append(event)
    return events, damage


def read_record(path: Path, damaged: list[str] | None = None) -> dict[str, Any] | None:
    """A job's record as one dict (start fields, `metrics` lines, end fields); None if it has
    no start line. Damaged lines are skipped with one warning naming the file and lines, and
    added to `damaged`; the record then carries them as `damaged`."""
    events, damage = read_events(path)
    if damage:
        log.warning("skipped damaged provenance lines: %s", "; ".join(damage))
        if damaged is not None:
            damaged.extend(damage)
    if not events or events[0].get("event") != "start":
        return None
    record: dict[str, Any] = {"metrics": [], "path": str(path)}
    if damage:
        record["damaged"] = damage
    for event in events:
        kind = event.pop("event")
        if kind == "metrics":
            record["metrics"].append(event)
        else:
            record.update(event)
    return record


def experiment_id(client: Any, uri: str) -> str:
    """The `memrl` experiment. In a SQLite store its artifact locations are relative to the
    database's folder (`relative_artifacts`), so a results directory moves as a whole."""
    experiment = client.get_experiment_by_name(EXPERIMENT)
    if experiment is None:
        from mlflow.exceptions import MlflowException

        try:
            found = client.create_experiment(EXPERIMENT, tags=EXPERIMENT_TAGS)
        except MlflowException:  # on a shared server, another job may have created it meanwhile
            experiment = client.get_experiment_by_name(EXPERIMENT)
            if experiment is None:
                raise
            found = experiment.experiment_id
    else:
        found = experiment.experiment_id
        for key, value in EXPERIMENT_TAGS.items():
            if experiment.tags.get(key) != value:  # a store made before the tag existed
                client.set_experiment_tag(found, key, value)
    if uri.startswith("sqlite:///"):
        relative_artifacts(Path(uri.removeprefix("sqlite:///")))
    return found


def relative_artifacts(database: Path) -> None:
    """Point our experiment, MLflow's `Default` and their runs at `mlartifacts/` relative to
    the database's folder. MLflow records absolute locations: a copied results directory would
    otherwise read (and write) the original's artifacts, or none once it is gone. Artifacts are
    then written and served from that folder (`in_store_folder`, `memrl ui`). Plain SQL on
    MLflow's tables: it has no API for it."""
    import sqlite3

    ours = "SELECT experiment_id FROM experiments WHERE name IN (?, 'Default')"
    with sqlite3.connect(database) as db:
        db.execute(
            f"UPDATE experiments SET artifact_location = ? WHERE experiment_id IN ({ours}) "
            "AND artifact_location != ?",
            (ARTIFACTS, EXPERIMENT, ARTIFACTS),
        )
        moved = db.execute(
            f"UPDATE runs SET artifact_uri = ? || '/' || run_uuid || '/artifacts' "
            f"WHERE experiment_id IN ({ours}) AND artifact_uri != ? || '/' || run_uuid || "
            "'/artifacts'",
            (ARTIFACTS, EXPERIMENT, ARTIFACTS),
        ).rowcount
    if moved:
        log.info("%s: %d runs' artifact locations made relative to its folder", database, moved)


def in_store_folder(uri: str) -> contextlib.AbstractContextManager:
    """Work in a SQLite store's folder, where its relative artifact locations lead."""
    if not uri.startswith("sqlite:///"):
        return contextlib.nullcontext()
    return contextlib.chdir(Path(uri.removeprefix("sqlite:///")).parent)


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _log_batch(client: Any, run_id: str, params=(), tags=(), metrics=()) -> None:
    from mlflow.entities import Metric, Param, RunTag

    for chunk in _chunks([Param(k, v[:PARAM_MAX_CHARS]) for k, v in params], BATCH["params"]):
        client.log_batch(run_id, params=chunk)
    for chunk in _chunks([RunTag(k, str(v)) for k, v in tags], BATCH["tags"]):
        client.log_batch(run_id, tags=chunk)
    for chunk in _chunks([Metric(*m) for m in metrics], BATCH["metrics"]):
        client.log_batch(run_id, metrics=chunk)


LOAD_LOCK = ".load.lock"  # in invocations_dir: one load of a results directory at a time
LOAD_LOCK_WAIT_S = 1800  # a load of thousands of records takes minutes, not hours


@contextlib.contextmanager
def load_lock(results: Path, wait_s: float = LOAD_LOCK_WAIT_S) -> Iterator[None]:
    """Hold the results directory's load lock: a POSIX record lock (fcntl.lockf, which NFS
    honours too), released by the kernel when the holder exits however it exits. Another
    loader waits for it, up to `wait_s`, so two loads never both create a record's run."""
    import fcntl

    path = invocations_dir(results) / LOAD_LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait_s
    with path.open("a") as handle:
        waiting = False
        while True:
            try:
                fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit(
                        f"{path}: another provenance load has held this lock for {wait_s:.0f} s"
                    ) from None
                if not waiting:
                    log.info("%s: waiting for another provenance load to finish", path)
                    waiting = True
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.lockf(handle, fcntl.LOCK_UN)


def load(results: Path, uri: str | None = None) -> dict[str, int]:
    """Create the MLflow runs of every invocation and job record under `results` not yet loaded.

    A record without an `end` line is loaded as KILLED once its invocation has ended; until
    then (or forever, for a job run by hand outside Snakemake) it waits. Loads of one results
    directory run one at a time (`load_lock`), so concurrent ones create each run once.
    """
    with load_lock(results):
        return _load(results, uri)


def store_uri(results: Path, info: Mapping[str, Any]) -> str:
    """The tracking URI an invocation (`info`) logged to, as seen from `results` now: a SQLite
    store that lay in the results directory is the copy's own after a copy or move."""
    uri = info.get("uri") or ""
    if not uri.startswith("sqlite:///"):
        return uri  # a tracking server is the same from anywhere
    if "results" not in info:  # written before invocations said where they ran
        default = f"sqlite:///results/{info['tags']['run']}/mlflow.db"  # config.tracking_uri's
        return f"sqlite:///{results.resolve() / 'mlflow.db'}" if uri == default else uri
    database = Path(absolute_uri(uri, Path(info["cwd"])).removeprefix("sqlite:///"))
    origin = Path(info["results"])
    if database.is_relative_to(origin):
        database = results.resolve() / database.relative_to(origin)
    return f"sqlite:///{database}"


def _load(results: Path, uri: str | None) -> dict[str, int]:
    results = results.resolve()
    invocations = {
        path.stem: read_json(path) for path in sorted(invocations_dir(results).glob("*.json"))
    }
    last = next(reversed(invocations.values()), {})
    uri = absolute_uri(uri) if uri else store_uri(results, last)
    if not uri:
        raise SystemExit(f"{results}: no invocation records and no --uri: nothing says where")
    records = records_under(results)
    for invocation, info in invocations.items():
        if "end_ms" not in info and is_dead(info.get("process", {})):
            _end_killed(results, info, [r for r in records if r["invocation"] == invocation])

    import mlflow

    if uri.startswith("sqlite:///"):
        Path(uri.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    client = mlflow.MlflowClient(uri)
    with in_store_folder(uri):  # where a SQLite store's relative artifact locations lead
        counts = _load_runs(client, uri, results, invocations, records)
    log.info("provenance → %s: %s", uri, counts)
    return counts


def _load_runs(
    client: Any,
    uri: str,
    results: Path,
    invocations: Mapping[str, dict[str, Any]],
    records: list[dict[str, Any]],
) -> dict[str, int]:
    experiment = experiment_id(client, uri)
    loaded: dict[tuple[str, str], str] = {}
    closed = set()  # parents whose invocation ended when they were last loaded
    for page in _pages(client, experiment):
        for run in page:
            for key in ("memrl.invocation.parent", "memrl.record"):
                if key in run.data.tags:
                    loaded[(key, run.data.tags[key])] = run.info.run_id
            if run.data.tags.get("memrl.closed") == "true":
                closed.add(run.info.run_id)

    parents: dict[str, str] = {}
    closing = []  # parents whose invocation has ended since they were last loaded
    counts = {"invocations": 0, "jobs": 0, "waiting": 0}
    for invocation, info in invocations.items():
        run_id = loaded.get(("memrl.invocation.parent", invocation))
        if run_id is None:
            run_id = client.create_run(
                experiment,
                start_time=info["start_ms"],
                run_name=notes.parent_run_name(info),
                tags={**info["tags"], "memrl.invocation.parent": invocation},
            ).info.run_id
            client.log_dict(run_id, info["config"], "config.json")
            counts["invocations"] += 1
        if "end_ms" in info and run_id not in closed:  # also a parent loaded while it ran
            closing.append((run_id, info))
        parents[invocation] = run_id

    runs = {record_id: run for (key, record_id), run in loaded.items() if key == "memrl.record"}
    new = []
    for record in records:
        if record["record"] in runs:
            continue
        invocation = invocations.get(record["invocation"] or "", {})
        if "status" not in record and "end_ms" not in invocation:
            counts["waiting"] += 1  # still running (or killed in a run that has not ended)
            continue
        runs[record["record"]] = _load_job(
            client, experiment, record, parents.get(record["invocation"] or "")
        )
        new.append(record)
        counts["jobs"] += 1
    producers = producer_index(records)
    for record in new:  # every producer has a run by now: it finished before its reader began
        _describe_job(client, experiment, results, record, producers, runs, parents)
    for run_id, info in closing:
        jobs = [
            (r, runs[r["record"]])
            for r in records
            if r["invocation"] == info["invocation"] and r["record"] in runs
        ]
        _close_parent(client, run_id, results, info, experiment, jobs)
    write_json_atomic(invocations_dir(results) / RUNS_FILE, runs)
    return counts


def _describe_job(
    client: Any,
    experiment: str,
    results: Path,
    record: Mapping[str, Any],
    producers: Mapping[tuple[str, str], dict[str, Any]],
    runs: Mapping[str, str],
    parents: Mapping[str, str],
) -> None:
    """A job run's description (its inputs linked to the runs that made them) and its
    `provenance.json` artifact (every input with its digest and producing run, every output)."""
    made_by = producers_of(record, producers)
    run_id = runs[record["record"]]
    parent = parents.get(record["invocation"] or "")
    note = notes.job_description(record, made_by, runs, experiment, results, parent)
    client.set_tag(run_id, notes.NOTE_TAG, note)
    inputs = {
        path: {
            "digest": digest,
            "run": runs.get(made_by[path]["record"]) if made_by.get(path) else None,
        }
        for path, digest in record.get("inputs", {}).items()
    }
    client.log_dict(
        run_id, {"inputs": inputs, "outputs": record.get("outputs", {})}, "provenance.json"
    )


def _close_parent(
    client: Any,
    run_id: str,
    results: Path,
    info: Mapping[str, Any],
    experiment: str,
    jobs: list[tuple[Mapping[str, Any], str]],
) -> None:
    """End an invocation's parent run, with its description, Snakemake's log and the
    uncommitted diff."""
    note = notes.parent_description(info, jobs, experiment, results)
    client.set_tag(run_id, notes.NOTE_TAG, note)
    for log_file in info.get("snakemake_logs", []):
        if Path(log_file).is_file():
            client.log_artifact(run_id, log_file, artifact_path="snakemake")
    diff = invocations_dir(results) / f"{info['invocation']}.diff"
    if diff.is_file():
        client.log_artifact(run_id, str(diff), artifact_path="git")
    client.set_tag(run_id, "memrl.closed", "true")
    client.set_terminated(run_id, info["status"], end_time=info["end_ms"])


def records_under(results: Path, damaged: list[str] | None = None) -> list[dict[str, Any]]:
    """Every job record under `results` (reruns' earlier attempts included), its paths made
    absolute and, where the directory was copied or moved since, rebased onto where it lies now
    (`relocated`). What could not be read or placed (each warned about) is added to `damaged`."""
    results = results.resolve()
    paths = sorted(results.glob(f"logs/**/*{RECORD_SUFFIX}"))
    records = [record for path in paths if (record := read_record(path, damaged))]
    placed, moved, unplaced = [], set(), []
    for record in records:
        origin = written_in(record, results)
        if origin is None:
            unplaced.append(f"{record['path']}: its job logged to {record['log']}")
            continue
        placed.append(relocated(record, origin, results))
        if origin != str(results):
            moved.add(origin)
    if moved:
        log.info("%s: records written in %s, read here", results, ", ".join(sorted(moved)))
    if unplaced:
        note = "; ".join(unplaced[:3]) + (f"; and {len(unplaced) - 3} more" if unplaced[3:] else "")
        log.warning(
            "records moved away from their logs, left out: %s (put each back beside its log, "
            "in the logs/ folder it names)",
            note,
        )
        if damaged is not None:
            damaged += [f"{u} (moved away from its log: put it back beside it)" for u in unplaced]
    return placed


def written_in(record: Mapping[str, Any], results: Path) -> str | None:
    """The absolute results directory `record` was written in: its log's folder, less the
    folders that lead from the results directory to where the record lies now (records lie
    beside their logs). None if the two do not match (a record moved by hand)."""
    logged = Path(absolute(record, record["log"])).parent
    here = Path(record["path"]).parent.relative_to(results)
    if logged.parts[len(logged.parts) - len(here.parts) :] != here.parts:
        return None
    return str(Path(*logged.parts[: len(logged.parts) - len(here.parts)]))


def relocated(record: dict[str, Any], origin: str, results: Path) -> dict[str, Any]:
    """`record` with every path it names absolute, those under `origin` moved under `results`
    (a copy of a results directory reads its own files, never the original's)."""

    def moved(path: str) -> str:
        path = absolute(record, path)
        inside = path == origin or path.startswith(origin + os.sep)
        return str(results) + path[len(origin) :] if inside else path

    record = dict(record)
    for key in ("inputs", "outputs"):
        record[key] = {moved(path): digest for path, digest in record.get(key, {}).items()}
    record["artifacts"] = [moved(path) for path in record.get("artifacts", [])]
    record["log"] = moved(record["log"])
    if record.get("diff"):
        record["diff"] = moved(record["diff"])
    return record


def absolute(record: Mapping[str, Any], path: str) -> str:
    """A path a record names, made absolute against the directory its job ran in."""
    return os.path.normpath(os.path.join(record.get("cwd") or os.getcwd(), path))


def producer_index(records: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """(absolute output path, digest) -> the finished record that wrote it (the latest, if
    several)."""
    index: dict[tuple[str, str], dict[str, Any]] = {}
    for record in sorted(records, key=lambda r: r.get("end_ms", 0)):
        if record.get("status") == "FINISHED":
            for path, digest in record.get("outputs", {}).items():
                index[(absolute(record, path), digest)] = record
    return index


def producers_of(
    record: Mapping[str, Any], index: Mapping[tuple[str, str], dict[str, Any]]
) -> dict[str, dict[str, Any] | None]:
    """Each input of `record` (as it names it) -> the record that wrote that content, or None."""
    return {
        path: index.get((absolute(record, path), digest))
        for path, digest in record.get("inputs", {}).items()
    }


def _end_killed(results: Path, info: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """Mark an invocation whose Snakemake process was killed as ended (KILLED, at its last
    record's time), so that it and its unfinished jobs are closed, not left RUNNING."""
    last = [m["ts"] for r in records for m in r["metrics"]]
    last += [r.get("end_ms", r["start_ms"]) for r in records]
    info.update(end_ms=max([info["start_ms"], *last]), status="KILLED")
    write_json_atomic(invocations_dir(results) / f"{info['invocation']}.json", info)
    log.warning(
        "invocation %s: its Snakemake process is gone; closed as KILLED", info["invocation"]
    )


def _pages(client: Any, experiment: str) -> Iterator[list[Any]]:
    token = None
    while True:
        page = client.search_runs([experiment], max_results=10000, page_token=token)
        yield list(page)
        token = page.token
        if not token:
            return


def _load_job(client: Any, experiment: str, record: dict[str, Any], parent: str | None) -> str:
    """The job's run (created, or the live run its process logged into), filled and ended."""
    tags = {
        **record["tags"],
        "rule": record["rule"],
        "wildcards": json.dumps(record["wildcards"]),
        "memrl.record": record["record"],
        "mlflow.runName": notes.job_run_name(record),
        # the UI's Source and Version columns: the rule and the commit
        "mlflow.source.type": "LOCAL",
        "mlflow.source.name": record["rule"],
        "mlflow.source.git.commit": record["tags"].get("git.commit", ""),
    }
    if record.get("damaged"):  # the lines of the record that could not be read
        tags["memrl.damaged"] = "; ".join(record["damaged"])[:5000]
    if parent:
        tags["mlflow.parentRunId"] = parent
    run_id = record.get("run_id")  # a live run the job's own process logged into (verl)
    if run_id is None:
        run_id = client.create_run(experiment, start_time=record["start_ms"]).info.run_id
    metrics = [
        (key, value, m["ts"], m["step"])
        for m in record["metrics"]
        for key, value in m["values"].items()
    ]
    for key in ("wall_s", "peak_rss_mb"):
        if key in record:
            metrics.append((f"job.{key}", record[key], record["end_ms"], 0))
    _log_batch(client, run_id, params=record["params"].items(), tags=tags.items(), metrics=metrics)
    for path in record.get("artifacts", []):
        if Path(path).is_file():
            client.log_artifact(run_id, path)
    if Path(record["log"]).is_file():
        client.log_artifact(run_id, record["log"], artifact_path="log")
    if record.get("diff") and Path(record["diff"]).is_file():
        client.log_artifact(run_id, record["diff"], artifact_path="git")
    client.set_terminated(
        run_id, record.get("status", "KILLED"), end_time=record.get("end_ms", record["start_ms"])
    )
    return run_id


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m memrl.tracking",
        description="Load the provenance records under a results directory into MLflow.",
    )
    parser.add_argument("results", type=Path, help="results/<run>")
    parser.add_argument("--uri", help="tracking URI (default: the last invocation's)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    load(args.results, args.uri)


if __name__ == "__main__":
    main()
