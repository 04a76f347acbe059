"""The report half of `memrepro verify`: every table, figure and reproduction report built again.

Each report job is run again from its record, into a scratch directory, from the run's own
files: the metrics (already checked against their predictions), the paper's numbers
(config/paper/, checked against the digest the job recorded) and the job's settings. What the
run holds is then compared with what the rebuild gives:

- `make_table`: its CSV cell by cell (ours, interval, paper, verdict, p), its Markdown and its
  claims; not its LaTeX and HTML, renders of the same cells.
- `plot_figure`: the claims it checks; not the pixels of its PNG and PDF.
- `reproduction`: every judged cell (verdict, p, q) and every diagnosis; not its renders.

Last, `run.json`'s cells, claims and diagnoses are read again from the checked files.
"""

from __future__ import annotations

import csv
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from memrepro.data.io import read_json
from memrepro.digests import file_digest
from memrepro.verify import Difference, Tally, VerifyError, same_number, settings_of

REPORT_RULES = {  # rule -> what its check says it did
    "make_table": "tables built again",
    "plot_figure": "figures' claim checks made again",
    "reproduction": "reproduction reports' cells and diagnoses made again",
}


def paths(record: Mapping[str, Any], name: str) -> list[Path]:
    """The paths a job was given as argument `name` (none if it was not given)."""
    value = record.get("arguments", {}).get(name, [])
    return [Path(v) for v in ([value] if isinstance(value, str) else value)]


def workflow_file_differences(
    record: Mapping[str, Any], writers: Mapping[str, Any], tally: Tally
) -> Iterator[Difference]:
    """Each file a report job read that no job of the run wrote (the paper's numbers in
    config/paper/), against the digest the job recorded. A bundle carries them."""
    for path, recorded in record.get("inputs", {}).items():
        if path in writers:
            continue  # a job's output: checked against its writer's digest
        if not Path(path).is_file():
            raise VerifyError(f"{record['path']}: it read {path}, which is not here")
        tally.checked["workflow files a report job read, against their digests"] += 1
        if (now := file_digest(Path(path))) != recorded:
            yield Difference(f"{path} (sha256)", recorded, now)


def csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def cell_name(row: Mapping[str, str]) -> str:
    """A table row as a reader finds it: its system and label, else its first two fields."""
    named = [row[key] for key in ("system", "label") if row.get(key)]
    return ", ".join(named or list(row.values())[:2])


def csv_differences(held: Path, derived: Path) -> Iterator[Difference]:
    """The first cell (file line, row, column) whose text differs."""
    mine, again = csv_rows(held), csv_rows(derived)
    if len(mine) != len(again):
        yield Difference(f"{held} (rows)", len(mine), len(again))
        return
    for line, (row, rebuilt) in enumerate(zip(mine, again, strict=True), 2):
        for column in dict.fromkeys([*rebuilt, *row]):
            if row.get(column) != rebuilt.get(column):
                where = f"{held}:{line} ({cell_name(rebuilt)}) {column}"
                yield Difference(where, row.get(column), rebuilt.get(column))
                return


def text_differences(held: Path, derived: Path) -> Iterator[Difference]:
    """The first line that differs, the provenance footnote (commit, invocation) apart."""
    from memrepro.report.render import MADE_BY_LINE

    mine, again = (
        [line for line in p.read_text(encoding="utf-8").splitlines() if MADE_BY_LINE not in line]
        for p in (held, derived)
    )
    for number, (line, rebuilt) in enumerate(zip(mine, again, strict=False), 1):
        if line != rebuilt:
            yield Difference(f"{held}: line {number} (footnote apart)", line, rebuilt)
            return
    if len(mine) != len(again):
        yield Difference(f"{held} (lines, footnote apart)", len(mine), len(again))


def claims_differences(held: Path, derived: list[dict[str, Any]]) -> Iterator[Difference]:
    """The first claim check whose fields differ."""
    mine = read_json(held)
    if not isinstance(mine, list) or len(mine) != len(derived):
        yield Difference(f"{held} (claims)", _count(mine), len(derived))
        return
    for number, (claim, again) in enumerate(zip(mine, derived, strict=True)):
        for key in dict.fromkeys([*again, *claim]):
            if not same_number(claim.get(key), again.get(key)):
                what = again.get("claim_id") or str(again.get("text", ""))[:60]
                yield Difference(
                    f"{held}: claim {number} ({what}) {key}", claim.get(key), again.get(key)
                )
                return


def _count(value: Any) -> Any:
    return len(value) if isinstance(value, list) else value


def table_differences(
    record: Mapping[str, Any], s: dict[str, Any], scratch: Path
) -> Iterator[Difference]:
    """A table built again from its job's metrics, paper file and controls."""
    from memrepro.config import report_plan
    from memrepro.jobs.report import paper_table_of
    from memrepro.report.claims import CLAIMS_SUFFIX
    from memrepro.report.tables import write_paper_table

    (prefix,) = paths(record, "out-prefix")
    (paper,) = paths(record, "paper")
    table = paper_table_of(s, paths(record, "metrics"), paper, paths(record, "controls"))
    again = scratch / prefix.name
    write_paper_table(s["name"], table, again, f"{report_plan(s['name']).caption}, run {s['run']}")
    for suffix in (".csv", ".md"):
        compare = csv_differences if suffix == ".csv" else text_differences
        yield from compare(Path(f"{prefix}{suffix}"), Path(f"{again}{suffix}"))
    yield from claims_differences(
        Path(f"{prefix}{CLAIMS_SUFFIX}"), read_json(Path(f"{again}{CLAIMS_SUFFIX}"))
    )


def figure_differences(
    record: Mapping[str, Any], s: dict[str, Any], scratch: Path
) -> Iterator[Difference]:
    """A figure's claim checks made again from its job's metrics and paper file."""
    from memrepro.config import load_yaml
    from memrepro.jobs.report import figure_checks
    from memrepro.report.claims import CLAIMS_SUFFIX, write_claims
    from memrepro.report.records import load_metrics

    (prefix,) = paths(record, "out-prefix")
    (paper,) = paths(record, "paper")
    checks = figure_checks(s, load_metrics(paths(record, "metrics")), load_yaml(paper), paper)
    again = write_claims(checks, scratch / f"{prefix.name}{CLAIMS_SUFFIX}")
    yield from claims_differences(Path(f"{prefix}{CLAIMS_SUFFIX}"), read_json(again))


def reproduction_differences(
    record: Mapping[str, Any], s: dict[str, Any], scratch: Path
) -> Iterator[Difference]:
    """The reproduction report's judged cells (verdict, p, q) and diagnoses made again."""
    from memrepro.report.diagnosis_pages import DIAGNOSES_SUFFIX
    from memrepro.report.reproduction import CELLS_SUFFIX, write_reproduction

    (prefix,) = paths(record, "out-prefix")
    again = scratch / prefix.name
    write_reproduction(
        s,
        [p for p in paths(record, "tables") if p.suffix == ".md"],
        paths(record, "figures"),
        paths(record, "claims"),
        paths(record, "case-studies"),
        again,
        None,
        paths(record, "evaluations"),
        paths(record, "benchmarks"),
    )
    for suffix in (CELLS_SUFFIX, DIAGNOSES_SUFFIX):
        yield from csv_differences(Path(f"{prefix}{suffix}"), Path(f"{again}{suffix}"))


REBUILDS: dict[str, Callable[[Mapping[str, Any], dict[str, Any], Path], Iterator[Difference]]] = {
    "make_table": table_differences,
    "plot_figure": figure_differences,
    "reproduction": reproduction_differences,
}


def report_differences(
    results: Path, writers: Mapping[str, Mapping[str, Any]], tally: Tally
) -> Iterator[Difference]:
    """Every report job of the run built again (module docstring), in the order they ran: a job
    is checked after the jobs whose outputs it read (the paper claims table after the figures)."""
    jobs = {id(r): r for r in writers.values() if r["rule"] in REPORT_RULES}.values()
    ordered = sorted(jobs, key=lambda r: int(r.get("end_ms") or 0))
    with tempfile.TemporaryDirectory(prefix="memrepro-verify-") as scratch:
        for record in ordered:
            yield from workflow_file_differences(record, writers, tally)
            if "arguments" not in record:
                raise VerifyError(
                    f"{record['path']}: the record names no arguments (written before records "
                    "kept them): run the job again to verify it"
                )
            place = Path(scratch) / record["rule"]
            place.mkdir(exist_ok=True)
            yield from REBUILDS[record["rule"]](record, settings_of(record, results), place)
            tally.checked[REPORT_RULES[record["rule"]]] += 1
    yield from run_summary_differences(results, tally)


def run_summary_differences(results: Path, tally: Tally) -> Iterator[Difference]:
    """run.json's cells, claims and diagnoses against the checked files they are read from."""
    from memrepro.tracking.pipeline_info import (
        RUN_SUMMARY,
        claim_checks,
        diagnoses,
        table_cells,
    )
    from memrepro.tracking.results_dir import records_under

    path = results / RUN_SUMMARY
    if not path.is_file():
        tally.left[f"{RUN_SUMMARY} (the run wrote none)"] += 1
        return
    held = read_json(path)
    derived = {
        "cells": table_cells(results, records_under(results), held.get("config_hash")),
        "claims": claim_checks(results),
        "diagnoses": diagnoses(results),
    }
    for key, rows in derived.items():
        mine = held.get(key, [])
        tally.checked[f"{RUN_SUMMARY} {key}"] += len(rows)
        if len(mine) != len(rows):
            yield Difference(f"{path}: {key} (count)", len(mine), len(rows))
            return
        for number, (row, again) in enumerate(zip(mine, rows, strict=True)):
            for field in dict.fromkeys([*again, *row]):
                if not same_number(row.get(field), again.get(field)):
                    name = os.path.basename(str(again.get("table", again.get("source", ""))))
                    where = f"{path}: {key}[{number}] ({name}) {field}"
                    yield Difference(where, row.get(field), again.get(field))
                    return
