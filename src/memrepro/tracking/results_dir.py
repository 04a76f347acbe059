"""The job records under a results directory, read where the directory lies now, and which record
produced which content.

A results directory moves as a whole (copied with `cp -a` to a laptop, an archive): each record
names paths as its job saw them, so `records_under` reads every record (reruns' earlier attempts
included) rebased onto where the directory lies now (`relocated`). `producer_index` and
`producers_of` link each job's inputs to the finished jobs that wrote that content (by digest):
the loader's run descriptions, `memrepro lineage` and `memrepro cost` read them. No MLflow here.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memrepro.tracking.record import RECORD_SUFFIX, read_record

log = logging.getLogger(__name__)


def records_under(results: Path, damaged: list[str] | None = None) -> list[dict[str, Any]]:
    """Every job record under `results` (reruns' earlier attempts included), its paths made
    absolute and, where the directory was copied or moved since, rebased onto where it lies now
    (`relocated`). What could not be read or placed (each warned about) is added to `damaged`."""
    results = results.resolve()
    paths = sorted(results.glob(f"logs/**/*{RECORD_SUFFIX}"))
    for folder in (path for path in paths if not path.is_file()):
        log.warning("%s: not a file, so no job record: skipped", folder)
        if damaged is not None:
            damaged.append(f"{folder}: not a file, so no job record")
    records = [r for path in paths if path.is_file() and (r := read_record(path, damaged))]
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
    (a copy of a results directory reads its own files, never the original's); where the whole
    workflow directory moved with it (`results/<run>` under both), the files of the workflow the
    job read (the paper's numbers in config/paper/) are read in the new one."""
    moves = [(origin, str(results))]
    workdir = record.get("cwd") or os.getcwd()
    if moved_workdir := _workdir_now(origin, results, workdir):
        moves.append((workdir, moved_workdir))

    def moved(path: str) -> str:
        path = absolute(record, path)
        for old, new in moves:
            if path == old or path.startswith(old + os.sep):
                return new + path[len(old) :]
        return path

    record = dict(record)
    for key in ("inputs", "outputs"):
        record[key] = {moved(path): digest for path, digest in record.get(key, {}).items()}
    record["arguments"] = {
        name: [moved(p) for p in value] if isinstance(value, list) else moved(value)
        for name, value in record.get("arguments", {}).items()
    }
    record["artifacts"] = [moved(path) for path in record.get("artifacts", [])]
    record["log"] = moved(record["log"])
    if record.get("diff"):
        record["diff"] = moved(record["diff"])
    return record


def _workdir_now(origin: str, results: Path, workdir: str) -> str | None:
    """Where the workflow directory a job ran in lies now: `results` less the folders that led
    from it to the results directory then (`results/<run>`), when `results` ends in the same
    folders; else None (the results directory was copied alone)."""
    within = Path(os.path.relpath(origin, workdir)).parts
    if not within or within[0] in (".", "..") or results.parts[-len(within) :] != within:
        return None
    return str(Path(*results.parts[: -len(within)]))


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


MANIFEST_SUFFIX = ".manifest.json"
ORIGIN_KEYS = ("source", "id", "file", "revision", "sha256")


def origin_of(record: Mapping[str, Any]) -> dict[str, str]:
    """Where a download job's file came from, as its manifest output says: the source (URL, hub
    id, fixture, local path), the revision or commit it was pinned to, the sha256 checked on
    arrival. Empty for a job that wrote no manifest, or whose manifest is gone or unreadable."""
    for path in record.get("outputs", {}):
        if not path.endswith(MANIFEST_SUFFIX):
            continue
        try:
            manifest = json.loads(Path(absolute(record, path)).read_text())
        except (OSError, ValueError):
            return {}
        fields = {**manifest.get("spec", {}), **manifest}  # a model's spec: hub id, revision
        return {key: str(fields[key]) for key in ORIGIN_KEYS if fields.get(key) is not None}
    return {}


def origin_text(origin: Mapping[str, str]) -> str:
    """`source=hf id=Qwen/Qwen2.5-7B-Instruct revision=a09a354…`: one line."""
    return " ".join(f"{key}={value}" for key, value in origin.items())
