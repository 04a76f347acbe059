"""One job's provenance record: what the job writes next to its log, and reading it back.

Every `memrepro` subcommand runs inside `job_run`, which appends JSON lines to
`<log stem>.provenance.jsonl`: a `start` line (rule, wildcards, tags with the software it runs on
(memrepro.software), params = the resolved settings, input digests (memrepro.digests), the command's
path arguments by name), `metrics` lines as the job logs them (`JobRecord.log_metrics`), and an
`end` line (status, wall time, peak RSS, output digests). Each line is flushed, so a killed job
leaves a record without `end` (loaded as KILLED); a rerun keeps the earlier attempt's record
beside it (`keep_attempt`). `read_record` reads one back, a damaged line costing that line only.

Every job imports this module, so it never imports MLflow at import time: a job whose process logs
to MLflow itself (verl's tracker) asks `JobRecord.child_env()` for a live run, which the loader
later adopts as the job's child run. Tracking never decides whether a job succeeds.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import resource
import socket
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from memrepro.data.io import append_jsonl
from memrepro.digests import file_digest
from memrepro.software import software_tags
from memrepro.tracking.invocation import (
    ENV_CONFIG_HASH,
    ENV_GIT_DIFF,
    ENV_INVOCATION,
    ENV_SNAKEMAKE_VERSION,
    enabled,
    git_state,
    now_ms,
)
from memrepro.tracking.store import experiment_id

log = logging.getLogger(__name__)

RECORD_SUFFIX = ".provenance.jsonl"
ARTIFACT_MAX_BYTES = 2 * 2**20
_METRIC_NAME_UNSAFE = re.compile(r"[^\w\-. :/]")


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

    def add_tags(self, tags: Mapping[str, str]) -> None:
        """Tags learnt while the job runs (where its Ray workers ran), merged into the start's."""
        if tags:
            self.write({"event": "tags", "tags": dict(tags)})

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


def settings_digest(settings: Mapping[str, Any]) -> str:
    """The digest that names a job's settings file (memrepro.settings_files)."""
    from memrepro.settings_files import canonical, digest

    return digest(canonical(settings))


@contextlib.contextmanager
def job_run(
    rule: str,
    wildcards: Mapping[str, str],
    settings: Mapping[str, Any],
    inputs: list[Path],
    outputs: list[Path],
    log_file: Path | None = None,
    arguments: Mapping[str, str | list[str]] | None = None,
) -> Iterator[JobRecord]:
    """Run the body while writing this job's provenance record next to its log. `arguments`
    are the command's path arguments by name (`metrics`, `paper`): which input is which, for
    whoever runs the job again from its record (`memrepro verify`)."""
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
                "settings.digest": settings_digest(settings),
                **git_state(),
                **software_tags(),
            },
            "params": flatten(settings),
            "inputs": {str(p): file_digest(p) for p in inputs if p.exists()},
            "arguments": dict(arguments or {}),
            "log": str(log_file),
            "cwd": os.getcwd(),  # what the relative paths above are relative to
            "diff": os.environ.get(ENV_GIT_DIFF, ""),
        }
    )
    status = "FAILED"
    try:
        yield record
        status = "FINISHED"
    except (
        KeyboardInterrupt
    ):  # Ctrl-C, or SIGTERM (memrepro.cli maps it): SLURM preemption, timeout
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
    """A job's record as one dict (start fields, `metrics` lines, `tags` lines merged into the
    start's tags, end fields); None if it has no start line. Damaged lines are skipped with one
    warning naming the file and lines, and added to `damaged`; the record then carries them as
    `damaged`."""
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
        elif kind == "tags":
            record["tags"] = {**record.get("tags", {}), **event["tags"]}
        else:
            record.update(event)
    return record
