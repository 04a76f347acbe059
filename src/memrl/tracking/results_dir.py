"""The job records under a results directory, read where the directory lies now, and which record
produced which content.

A results directory moves as a whole (copied with `cp -a` to a laptop, an archive): each record
names paths as its job saw them, so `records_under` reads every record (reruns' earlier attempts
included) rebased onto where the directory lies now (`relocated`). `producer_index` and
`producers_of` link each job's inputs to the finished jobs that wrote that content (by digest):
the loader's run descriptions, `memrl lineage` and `memrl cost` read them. No MLflow here.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memrl.tracking.record import RECORD_SUFFIX, read_record

log = logging.getLogger(__name__)


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
