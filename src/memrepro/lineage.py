"""`memrepro lineage PATH`: the jobs that made a file, back to the raw downloads and base models.

Every job's provenance record (memrepro.tracking.record) names the digests of what it read and
wrote, computed the same way by the producer and by every reader (memrepro.digests). From a file's
current digest this walks producer → its inputs → their producers, until it reaches inputs no
job of the run wrote (data and models fetched from outside, packaged fixtures). Each job is shown
once, with its record, its MLflow run (once the records were loaded), the commit and the
software it ran on, a download with the origin its manifest names (URL or hub id, revision,
sha256); a job reached again is shown as `(above)`.

Every file on the trace is hashed again and compared with the digest its reader recorded: an
intermediate or a source changed (or gone) since is flagged with both digests, and the command
exits 1. Large files are hashed once per content (memrepro.digests' cache, keyed by size and
modification time), so the recheck stays fast.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memrepro.data.io import read_json
from memrepro.digests import ENV_DIGEST_CACHE, file_digest
from memrepro.mlflow_notes import job_run_name, short_digest, shown_path
from memrepro.progress import quantity
from memrepro.tracking.invocation import invocations_dir
from memrepro.tracking.loader import RUNS_FILE
from memrepro.tracking.results_dir import (
    absolute,
    origin_of,
    origin_text,
    producer_index,
    producers_of,
    records_under,
)

SHOWN_TAGS = ("git.commit", "git.dirty", "host", "accelerator", "pkg.torch", "pkg.transformers")
SHOWN_TAGS += ("pkg.vllm", "pkg.verl", "env.lock.digest", "container.image", "container.digest")
SHOWN_TAGS += ("ray.container.image", "ray.container.lock.digest")  # a verl job's Ray and driver


def results_of(path: Path) -> Path:
    """The results directory a path lies in: the nearest parent holding `provenance/`."""
    for parent in [path, *path.parents]:
        if invocations_dir(parent).is_dir():
            return parent
    raise SystemExit(f"{path}: not inside a results directory (no provenance/ above it)")


def lineage(
    path: Path, records: list[dict[str, Any]], damaged: list[str] | None = None
) -> dict[str, Any]:
    """The producers of `path`'s current content and of everything they read, as a graph:
    `target` (path, digest, producing record id or None), `jobs` (record id -> job, its inputs
    each with digest and producer), `sources` (absolute path -> digest: read, written by none),
    `damaged` (record lines that could not be read: a producer may be among them), `changed`
    (each file on the trace whose content now differs from what its reader recorded: path,
    recorded digest, digest now or None where it is gone).
    A file changed since its producer wrote it has no producer; `rewritten` names who wrote
    the path last, with that digest."""
    index = producer_index(records)
    target = os.path.realpath(path)  # records are read onto the resolved results directory
    digest = file_digest(path)
    producer = index.get((target, digest))
    graph: dict[str, Any] = {
        "target": {"path": target, "digest": digest, "producer": _id(producer)},
        "jobs": {},
        "sources": {},
        "damaged": list(damaged or []),
        "changed": [],
    }
    now, flagged = _digests_now(), set()
    if producer is None:
        graph["target"]["rewritten"] = _last_writer(target, index)
    pending = [producer] if producer else []
    while pending:
        record = pending.pop()
        if record["record"] in graph["jobs"]:
            continue
        inputs = {}
        for name, source in producers_of(record, index).items():
            input_path = absolute(record, name)
            recorded = record["inputs"][name]
            inputs[input_path] = {"digest": recorded, "producer": _id(source)}
            if now(input_path) != recorded and input_path not in flagged:
                flagged.add(input_path)
                graph["changed"].append(
                    {"path": input_path, "recorded": recorded, "now": now(input_path)}
                )
            if source is None:
                graph["sources"][input_path] = record["inputs"][name]
            else:
                pending.append(source)
        graph["jobs"][record["record"]] = {**_job(record), "inputs": inputs}
    return graph


def _digests_now():
    """The current digest of a path (None if it is gone), each path hashed once."""
    seen: dict[str, str | None] = {}

    def now(path: str) -> str | None:
        if path not in seen:
            seen[path] = file_digest(Path(path)) if os.path.exists(path) else None
        return seen[path]

    return now


def _id(record: Mapping[str, Any] | None) -> str | None:
    return record["record"] if record else None


def _last_writer(path: str, index: Mapping[tuple[str, str], dict[str, Any]]) -> dict | None:
    writers = [(r["end_ms"], r["record"], d) for (p, d), r in index.items() if p == path]
    if not writers:
        return None
    _, record, digest = max(writers)
    return {"record": record, "digest": digest}


def _job(record: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "name": job_run_name(record),
        "status": record.get("status", "KILLED"),
        "ended": record.get("end_ms"),
        "tags": {key: record["tags"][key] for key in SHOWN_TAGS if record["tags"].get(key)},
        "log": record["log"],
        "origin": origin_of(record),
    }


def render(graph: Mapping[str, Any], runs: Mapping[str, str], base: Path) -> str:
    """The graph as an indented tree from the target; `runs`: record id -> MLflow run id."""
    lines: list[str] = []
    shown: set[str] = set()

    changed = {change["path"]: change["now"] for change in graph.get("changed", [])}

    def show_path(path: str, digest: str, producer: str | None, depth: int) -> None:
        flag = f"  CHANGED: now {_now_text(changed[path])}" if path in changed else ""
        lines.append(f"{'  ' * depth}{shown_path(path, base)}  {short_digest(digest)}{flag}")
        if producer is None:
            lines.append(f"{'  ' * (depth + 1)}(source: written by no job of this run)")
        else:
            show_job(producer, depth + 1)

    def show_job(record: str, depth: int) -> None:
        job = graph["jobs"][record]
        if record in shown:
            lines.append(f"{'  ' * depth}<- {job['name']}  (above)")
            return
        shown.add(record)
        ended = time.strftime("%Y-%m-%d %H:%M", time.localtime(job["ended"] / 1000))
        run = f"  mlflow run {runs[record]}" if record in runs else ""
        lines.append(f"{'  ' * depth}<- {job['name']}  {job['status']} {ended}{run}")
        facts = "  ".join(f"{k}={v}" for k, v in job["tags"].items())
        lines.append(f"{'  ' * (depth + 1)}record {record}  {facts}")
        if job.get("origin"):
            lines.append(f"{'  ' * (depth + 1)}origin {origin_text(job['origin'])}")
        for path, edge in sorted(job["inputs"].items()):
            show_path(path, edge["digest"], edge["producer"], depth + 1)

    target = graph["target"]
    lines.append(f"{shown_path(target['path'], base)}  {short_digest(target['digest'])}")
    rewritten = target.get("rewritten")
    if target["producer"]:
        show_job(target["producer"], 1)
    elif rewritten:
        lines.append(
            f"  (changed since record {rewritten['record']} wrote it as "
            f"{short_digest(rewritten['digest'])})"
        )
    elif graph["damaged"]:
        lines.append("  (no readable record wrote this file; the damaged lines below may have)")
    else:
        lines.append("  (no job of this run wrote this file)")
    sources = graph["sources"]
    if graph["jobs"]:
        listed = ":" if sources else "."  # a colon only before a list
        lines.append(
            f"\n{quantity(len(graph['jobs']), 'job')}; "
            f"{quantity(len(sources), 'source')} written by none{listed}"
        )
        lines += [f"  {shown_path(p, base)}  {short_digest(d)}" for p, d in sorted(sources.items())]
    if changed:
        lines.append(
            f"\n{quantity(len(changed), 'file')} on the trace changed since its reader ran "
            "(recorded -> now):"
        )
        lines += [
            f"  {shown_path(c['path'], base)}  {short_digest(c['recorded'])} -> "
            f"{_now_text(c['now'])}"
            for c in graph["changed"]
        ]
    if graph["damaged"]:
        lines.append(
            f"\n{quantity(len(graph['damaged']), 'record line')} could not be read (skipped):"
        )
        lines += [f"  {shown_path(note, base)}" for note in graph["damaged"]]
    return "\n".join(lines)


def _now_text(digest: str | None) -> str:
    return short_digest(digest) if digest else "gone"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="memrepro lineage", description=__doc__.split("\n\n")[0].split(": ", 1)[1]
    )
    parser.add_argument("path", type=Path, help="a table, a metrics file, a checkpoint, ...")
    parser.add_argument("--json", action="store_true", help="the graph as JSON")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")  # e.g. a moved directory
    if not args.path.exists():
        raise SystemExit(f"{args.path}: no such file or directory")
    results = results_of(args.path.resolve())
    os.environ.setdefault(ENV_DIGEST_CACHE, str(invocations_dir(results) / "digests"))
    damaged: list[str] = []
    graph = lineage(args.path, records_under(results, damaged), damaged)
    runs_file = invocations_dir(results) / RUNS_FILE
    runs = read_json(runs_file) if runs_file.is_file() else {}
    if args.json:
        print(json.dumps({**graph, "runs": runs}, indent=1))
    else:
        print(render(graph, runs, Path.cwd()))
    if graph["target"]["producer"] is None or graph["changed"]:
        raise SystemExit(1)  # no job vouches for this content, or the path to it changed: said
