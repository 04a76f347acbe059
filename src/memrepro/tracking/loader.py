"""Loading the provenance records into MLflow: the step that imports MLflow, run once per
invocation (`end_invocation`, in a subprocess) or by hand (`python -m memrepro.tracking
results/<run>`, e.g. after a killed invocation, or to fill a tracking server from records written
on a cluster).

`load` creates the runs not yet in MLflow (memrepro.tracking.runs lays them out), describes each job
run with its inputs linked to the runs that produced them, and writes `provenance/mlflow/runs.json`
(record id -> run id, for `memrepro lineage`). It is idempotent (runs are matched by record id),
serialised per results directory by a lock, and closes as KILLED an invocation whose Snakemake
process is gone. Tracking never decides whether a job succeeds.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from memrepro.data.io import write_json_atomic
from memrepro.locks import is_dead
from memrepro.tracking.invocation import invocations_dir, read_invocations
from memrepro.tracking.results_dir import producer_index, records_under
from memrepro.tracking.runs import (
    CLOSED_TAG,
    PARENT_TAG,
    RECORD_TAG,
    close_parent_run,
    create_parent_run,
    describe_job_run,
    fill_job_run,
    pages,
)
from memrepro.tracking.store import absolute_uri, experiment_id, in_store_folder, store_uri
from memrepro.tracking.traces import TRACES_TAG, predictions_of, trace_evaluation

log = logging.getLogger(__name__)

RUNS_FILE = "mlflow/runs.json"  # in invocations_dir: each loaded record's MLflow run id
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


def _load(results: Path, uri: str | None) -> dict[str, int]:
    results = results.resolve()
    invocations = read_invocations(results)
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
    traced = set()  # evaluations' runs that hold their items' traces
    for page in pages(client, experiment):
        for run in page:
            for key in (PARENT_TAG, RECORD_TAG):
                if key in run.data.tags:
                    loaded[(key, run.data.tags[key])] = run.info.run_id
            if run.data.tags.get(CLOSED_TAG) == "true":
                closed.add(run.info.run_id)
            if TRACES_TAG in run.data.tags:
                traced.add(run.info.run_id)

    parents: dict[str, str] = {}
    closing = []  # parents whose invocation has ended since they were last loaded
    counts = {"invocations": 0, "jobs": 0, "waiting": 0, "traces": 0}
    for invocation, info in invocations.items():
        run_id = loaded.get((PARENT_TAG, invocation))
        if run_id is None:
            run_id = create_parent_run(client, experiment, invocation, info)
            counts["invocations"] += 1
        if "end_ms" in info and run_id not in closed:  # also a parent loaded while it ran
            closing.append((run_id, info))
        parents[invocation] = run_id

    runs = {record_id: run for (key, record_id), run in loaded.items() if key == RECORD_TAG}
    new = []
    for record in records:
        if record["record"] in runs:
            continue
        invocation = invocations.get(record["invocation"] or "", {})
        if "status" not in record and "end_ms" not in invocation:
            counts["waiting"] += 1  # still running (or killed in a run that has not ended)
            continue
        runs[record["record"]] = fill_job_run(
            client, experiment, record, parents.get(record["invocation"] or "")
        )
        new.append(record)
        counts["jobs"] += 1
    producers = producer_index(records)
    for record in new:  # every producer has a run by now: it finished before its reader began
        describe_job_run(client, experiment, results, record, producers, runs, parents)
    for record in records:  # a killed load's evaluations too: their traces are made again
        run_id = runs.get(record["record"])
        if run_id is not None and run_id not in traced and predictions_of(record):
            config = invocations.get(record["invocation"] or "", {}).get("config", {})
            counts["traces"] += trace_evaluation(
                client, experiment, run_id, record, results, config
            )
    for run_id, info in closing:
        jobs = [
            (r, runs[r["record"]])
            for r in records
            if r["invocation"] == info["invocation"] and r["record"] in runs
        ]
        close_parent_run(client, run_id, results, info, experiment, jobs)
    write_json_atomic(invocations_dir(results) / RUNS_FILE, runs)
    return counts


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
