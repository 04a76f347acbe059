"""How the provenance records are laid out as MLflow runs: one parent run per invocation, one
child run per job.

A parent run carries the invocation's tags (command, targets, profile, config hash, commit), the
resolved config as params, what the run reproduced as metrics (cells per verdict, claims per
outcome), the config, Snakemake's log and the uncommitted diff as artifacts, and is matched on a
later load by `memrepro.invocation.parent`. A job's run carries the record's tags (the rule as the
UI's Source column), its params (the resolved settings), its metrics (plus `job.wall_s`,
`job.peak_rss_mb`), its small outputs, log and diff as artifacts, and is matched by
`memrepro.record`, with the models it wrote and the data sets it read by reference
(memrepro.tracking.catalog). Each run's name and description come from memrepro.mlflow_notes.
Batches keep to MLflow's limits. MLflow is imported only when a run is written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from memrepro import mlflow_notes as notes
from memrepro.scoring.compare import OUTCOMES as VERDICTS
from memrepro.tracking.catalog import dataset_inputs, log_datasets, log_models, model_outputs
from memrepro.tracking.invocation import invocations_dir
from memrepro.tracking.pipeline_info import claim_checks, judged_rows
from memrepro.tracking.record import flatten
from memrepro.tracking.results_dir import origin_of, producers_of

PARENT_TAG = "memrepro.invocation.parent"  # on an invocation's run: its invocation id
RECORD_TAG = "memrepro.record"  # on a job's run: its record id
CLOSED_TAG = "memrepro.closed"  # on an invocation's run once its invocation has ended
PARAM_MAX_CHARS = 6000  # MLflow's limit on a param value
PARAM_KEY_MAX_CHARS = 250  # and on its name
# every claim outcome a summary counts, 0 included, so two invocations compare on the same metrics:
# memrepro.report.claims.OUTCOMES, which this floor cannot import (the verdicts it can: OUTCOMES)
SUMMARY_OUTCOMES = ("holds", "does not hold", "undecided", "not checkable")
BATCH = {"params": 100, "tags": 100, "metrics": 1000}  # MLflow's limits per log_batch call


def pages(client: Any, experiment: str) -> Iterator[list[Any]]:
    """Every run of the experiment, a page at a time."""
    token = None
    while True:
        page = client.search_runs([experiment], max_results=10000, page_token=token)
        yield list(page)
        token = page.token
        if not token:
            return


def create_parent_run(
    client: Any, experiment: str, invocation: str, info: Mapping[str, Any]
) -> str:
    """An invocation's run (`info`: its invocation record), with its config as an artifact."""
    run_id = client.create_run(
        experiment,
        start_time=info["start_ms"],
        run_name=notes.parent_run_name(info),
        tags={**info["tags"], PARENT_TAG: invocation},
    ).info.run_id
    client.log_dict(run_id, info["config"], "config.json")
    params = {_param_key(key): value for key, value in flatten(info["config"]).items()}
    log_batch(client, run_id, params=params.items())  # two invocations compare key by key
    return run_id


def _param_key(key: str) -> str:
    """A config key as an MLflow param name (letters, digits, `_ - . / :` and spaces)."""
    return re.sub(r"[^\w\-./: ]", "_", key)[:PARAM_KEY_MAX_CHARS]


def summary_metrics(results: Path) -> dict[str, float]:
    """What a run reproduced, as metrics its invocation's run carries: judged cells per verdict
    (`cells.reproduced`, `cells.consistent`, `cells.differs`, ...: the reproduction report's
    `reproduction.cells.csv`) and the papers' claims per outcome (`claims.holds`, ...: every
    `*.claims.json`), each 0 when none; nothing where the run made no report."""
    judged = judged_rows(results)
    if judged is None:
        return {}
    verdicts = [row["verdict"] for row in judged]
    outcomes = [claim.get("outcome", "") for claim in claim_checks(results)]
    counted = {f"cells.{v}": verdicts.count(v) for v in (*VERDICTS, *verdicts)}
    counted |= {f"claims.{o}": outcomes.count(o) for o in (*SUMMARY_OUTCOMES, *outcomes)}
    return {_param_key(key.replace(" ", "_")): float(n) for key, n in counted.items()}


def fill_job_run(client: Any, experiment: str, record: dict[str, Any], parent: str | None) -> str:
    """The job's run (created, or the live run its process logged into), filled and ended."""
    tags = {
        **record["tags"],
        "rule": record["rule"],
        "wildcards": json.dumps(record["wildcards"]),
        RECORD_TAG: record["record"],
        "mlflow.runName": notes.job_run_name(record),
        # the UI's Source and Version columns: the rule and the commit
        "mlflow.source.type": "LOCAL",
        "mlflow.source.name": record["rule"],
        "mlflow.source.git.commit": record["tags"].get("git.commit", ""),
    }
    if record.get("damaged"):  # the lines of the record that could not be read
        tags["memrepro.damaged"] = "; ".join(record["damaged"])[:5000]
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
    log_batch(client, run_id, params=record["params"].items(), tags=tags.items(), metrics=metrics)
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


def describe_job_run(
    client: Any,
    experiment: str,
    results: Path,
    record: Mapping[str, Any],
    producers: Mapping[tuple[str, str], dict[str, Any]],
    runs: Mapping[str, str],
    parents: Mapping[str, str],
) -> None:
    """A job run's description (its inputs linked to the runs that made them), its
    `provenance.json` artifact (every input with its digest and producing run, every output),
    the models it wrote and the data sets it read (memrepro.tracking.catalog)."""
    made_by = producers_of(record, producers)
    run_id = runs[record["record"]]
    parent = parents.get(record["invocation"] or "")
    origin = origin_of(record)
    note = notes.job_description(record, made_by, runs, experiment, results, parent, origin)
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
    log_models(client, experiment, run_id, model_outputs(record, results))
    log_datasets(client, run_id, record["rule"], dataset_inputs(record, results, made_by))


def close_parent_run(
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
    metrics = [(k, v, info["end_ms"], 0) for k, v in summary_metrics(results).items()]
    log_batch(client, run_id, metrics=metrics)
    for log_file in info.get("snakemake_logs", []):
        if Path(log_file).is_file():
            client.log_artifact(run_id, log_file, artifact_path="snakemake")
    diff = invocations_dir(results) / f"{info['invocation']}.diff"
    if diff.is_file():
        client.log_artifact(run_id, str(diff), artifact_path="git")
    client.set_tag(run_id, CLOSED_TAG, "true")
    client.set_terminated(run_id, info["status"], end_time=info["end_ms"])


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def log_batch(client: Any, run_id: str, params=(), tags=(), metrics=()) -> None:
    """Params (cut to MLflow's length limit), tags and metrics in batches MLflow accepts."""
    from mlflow.entities import Metric, Param, RunTag

    for chunk in _chunks([Param(k, v[:PARAM_MAX_CHARS]) for k, v in params], BATCH["params"]):
        client.log_batch(run_id, params=chunk)
    for chunk in _chunks([RunTag(k, str(v)) for k, v in tags], BATCH["tags"]):
        client.log_batch(run_id, tags=chunk)
    for chunk in _chunks([Metric(*m) for m in metrics], BATCH["metrics"]):
        client.log_batch(run_id, metrics=chunk)
