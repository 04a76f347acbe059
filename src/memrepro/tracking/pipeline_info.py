"""One run in one place, as nf-core's `pipeline_info/` and lm-evaluation-harness's results file
give it: after each invocation, from the job records (memrepro.tracking.record) and Snakemake's
benchmark files,

- `<results>/pipeline_info/trace.tsv`: every job of the run (its newest record), its status, start,
  wall time, CPU time and peak memory;
- `<results>/pipeline_info/timeline_<invocation>.html`: that invocation's jobs as a Gantt chart;
- `<results>/pipeline_info/software_versions.json`: each distinct software stack (environment
  lock, image, Python and the packages a record names) once, with the rules that ran in it;
- `<results>/ro-crate-metadata.json`: the run as a Provenance Run Crate
(memrepro.tracking.run_crate);
- `<results>/run.json`: the invocation (command, targets, profile, commit, config and its hash),
  the software stacks, every table's score cells (ours, interval, the paper's, the verdict, p and
  the reproduction report's q), every claim check and every diagnosis (ranked, a row per factor).
  Each cell names the job that wrote its table (`written_by`: invocation, config hash, settings
  digest) and whether that job ran under this invocation's config (`same_config`): a table left
  by another config, or by no job of this directory, is marked, not passed off as this run's.

A damaged benchmark file reads as no benchmark, with a warning naming it. A damaged table or
claims file stops the step in one sentence naming it (rc 1), and nothing is written.

`python -m memrepro.tracking.pipeline_info RESULTS` writes them (what `end_invocation` runs); each
file is replaced whole or not at all, and nothing else in RESULTS is touched."""

from __future__ import annotations

import argparse
import csv
import html
import io
import json
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memrepro.data.io import json_text, read_json, write_text_atomic
from memrepro.digests import file_digest
from memrepro.mlflow_notes import job_run_name
from memrepro.tracking.invocation import invocations_dir, read_invocations
from memrepro.tracking.results_dir import producer_index, records_under
from memrepro.tracking.run_crate import CRATE_FILE, run_crate

log = logging.getLogger(__name__)

INFO_DIR = "pipeline_info"
RUN_SUMMARY = "run.json"
TRACE_COLUMNS = (
    "job", "rule", "status", "invocation", "start", "wall_s", "cpu_s", "peak_rss_mb", "host",
    "container",
)  # fmt: skip
SOFTWARE_TAGS = ("env.lock", "env.lock.digest", "container.image", "container.digest", "python")
CELLS_FILE = "reproduction.cells.csv"  # memrepro.report.reproduction.CELLS_SUFFIX
DIAGNOSES_FILE = "reproduction.diagnoses.csv"  # memrepro.report.diagnosis_pages.DIAGNOSES_SUFFIX
CELL_FIELDS = (
    "system", "label", "kind", "ours", "ci_low", "ci_high", "paper", "delta", "diff_low",
    "diff_high", "verdict", "field_verdict", "p_value",
)  # fmt: skip
CLAIMS_SUFFIX = ".claims.json"  # memrepro.report.claims.CLAIMS_SUFFIX
BAR_HEIGHT, LABEL_WIDTH, CHART_WIDTH = 14, 360, 900


def newest_records(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each job's newest record (by its log), oldest first."""
    newest: dict[str, dict[str, Any]] = {}
    for record in records:
        if record["start_ms"] >= newest.get(record["log"], {}).get("start_ms", 0):
            newest[record["log"]] = record
    return sorted(newest.values(), key=lambda r: r["start_ms"])


def benchmark_of(results: Path, record: Mapping[str, Any]) -> dict[str, float]:
    """The job's Snakemake benchmark (its log's path under benchmarks/, .tsv), if it has one:
    its last line's CPU seconds and peak resident memory (MB)."""
    logs = results.resolve() / "logs"  # records_under made the log's path absolute, here
    path = results / "benchmarks" / Path(record["log"]).relative_to(logs).with_suffix(".tsv")
    if not path.is_file():
        return {}
    try:
        rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8")), delimiter="\t"))
        return {"cpu_s": float(rows[-1]["cpu_time"]), "max_rss": float(rows[-1]["max_rss"])}
    except (IndexError, KeyError, TypeError, ValueError) as exc:  # UnicodeDecodeError too
        why = "a header and no row" if isinstance(exc, IndexError) else f"{exc}"
        log.warning("%s: not a Snakemake benchmark (%s): read as no benchmark", path, why)
        return {}


def trace_row(results: Path, record: Mapping[str, Any]) -> dict[str, Any]:
    bench = benchmark_of(results, record)
    tags = record.get("tags", {})
    peak = max(record.get("peak_rss_mb") or 0.0, bench.get("max_rss", 0.0))
    return {
        "job": job_run_name(record),
        "rule": record["rule"],
        "status": record.get("status", "RUNNING"),
        "invocation": record.get("invocation", ""),
        "start": iso(record["start_ms"]),
        "wall_s": record.get("wall_s", ""),
        "cpu_s": bench.get("cpu_s", ""),
        "peak_rss_mb": round(peak, 1) if peak else "",
        "host": tags.get("host", ""),
        "container": container_of(tags),
        "start_ms": record["start_ms"],
        "end_ms": record.get("end_ms"),
    }


def container_of(tags: Mapping[str, str]) -> str:
    """The image a job ran in; a verl job (on the host) with the one its Ray and driver ran in."""
    own = tags.get("container.image", "")
    ray = tags.get("ray.container.image")
    return f"{own}; Ray and verl: {ray}" if ray else own


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds")


def trace_tsv(rows: Sequence[Mapping[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, delimiter="\t", lineterminator="\n")
    writer.writerow(TRACE_COLUMNS)
    writer.writerows([row[c] for c in TRACE_COLUMNS] for row in rows)
    return out.getvalue()


def software_stacks(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each distinct stack (SOFTWARE_TAGS and every `pkg.*` tag) once, with its rules."""
    stacks: dict[str, dict[str, Any]] = {}
    for record in records:
        tags = record.get("tags", {})
        stack = {k: v for k, v in sorted(tags.items()) if k in SOFTWARE_TAGS or k[:4] == "pkg."}
        entry = stacks.setdefault(json.dumps(stack, sort_keys=True), {**stack, "rules": []})
        if record["rule"] not in entry["rules"]:
            entry["rules"].append(record["rule"])
    return list(stacks.values())


def timeline_html(rows: Sequence[Mapping[str, Any]], title: str) -> str:
    """The jobs as horizontal bars from their start to their end (a running or killed job: to
    the last end), one line each, coloured by rule; a bar's tooltip gives its trace row."""
    esc = html.escape
    if not rows:
        svg = "<p>No job ran in this invocation.</p>"
    else:
        start = min(r["start_ms"] for r in rows)
        end = max(max(r["end_ms"] or r["start_ms"] for r in rows), start + 1)
        scale = CHART_WIDTH / (end - start)
        rules = sorted({r["rule"] for r in rows})
        bars = []
        for k, row in enumerate(rows):
            x = LABEL_WIDTH + (row["start_ms"] - start) * scale
            width = max(((row["end_ms"] or end) - row["start_ms"]) * scale, 1.0)
            hue = 360 * rules.index(row["rule"]) // len(rules)
            tip = ", ".join(f"{c} {row[c]}" for c in TRACE_COLUMNS if row[c] != "")
            y = k * (BAR_HEIGHT + 2)
            bars.append(
                f'<text x="{LABEL_WIDTH - 6}" y="{y + BAR_HEIGHT - 3}" text-anchor="end">'
                f"{esc(row['job'][:60])}</text>"
                f'<rect x="{x:.1f}" y="{y}" width="{width:.1f}" height="{BAR_HEIGHT}" '
                f'fill="hsl({hue},60%,55%)"><title>{esc(tip)}</title></rect>'
            )
        height = len(rows) * (BAR_HEIGHT + 2) + 20
        axis = f"0 s to {(end - start) / 1000:.0f} s after {iso(start)}"
        svg = (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{LABEL_WIDTH + CHART_WIDTH + 10}" '
            f'height="{height}" font-family="sans-serif" font-size="11">{"".join(bars)}'
            f'<text x="{LABEL_WIDTH}" y="{height - 4}">{esc(axis)}</text></svg>'
        )
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}'
        f"</title></head><body><h1>{esc(title)}</h1>{svg}</body></html>\n"
    )


def read_csv(path: Path) -> list[dict[str, str]]:
    """A CSV's rows; one that is not UTF-8 text stops, naming it and the byte."""
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            return list(csv.DictReader(handle))
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def judged_rows(results: Path) -> list[dict[str, str]] | None:
    """The reproduction report's judged cells (verdict, p, q); None where it made no report."""
    path = results / CELLS_FILE
    return read_csv(path) if path.is_file() else None


def table_cells(
    results: Path, records: list[dict[str, Any]], config_hash: str | None
) -> list[dict[str, Any]]:
    """Every score cell of every table (its CSV: ours, interval, the paper's, the verdict), with
    the q-value the reproduction report gave it (across its paper's cells; '' if none) and the
    job that wrote its table (`written_by`)."""
    q_values = {
        (row["table"], row["system"], row["label"]): row["q_value"]
        for row in judged_rows(results) or []
    }
    producers = producer_index(records)
    cells = []
    for path in sorted((results / "tables").glob("*.csv")):
        made = written_by(path, producers, config_hash)
        for row in read_csv(path):
            if "verdict" not in row or not row.get("ours"):
                continue  # a text table's row
            key = (path.stem, row["system"], row["label"])
            cells.append(
                {"table": path.stem, **{c: row.get(c, "") for c in CELL_FIELDS}}
                | {"q_value": q_values.get(key, "")}
                | made
            )
    return cells


def written_by(
    path: Path, producers: Mapping[tuple[str, str], Mapping[str, Any]], config_hash: str | None
) -> dict[str, Any]:
    """The job whose record wrote this very content of `path`: its invocation, config hash and
    settings digest, and whether it ran under `config_hash`; None and False where no job did."""
    record = producers.get((os.path.abspath(path), file_digest(path)))
    if record is None:
        return {"written_by": None, "same_config": False}
    tags = record.get("tags", {})
    job = {
        "invocation": record.get("invocation"),
        "config_hash": tags.get("config.hash"),
        "settings_digest": tags.get("settings.digest"),
    }
    return {"written_by": job, "same_config": job["config_hash"] == config_hash}


def diagnoses(results: Path) -> list[dict[str, str]]:
    """Every diagnosis the reproduction report ranked, a row per measured factor (its CSV)."""
    path = results / DIAGNOSES_FILE
    return read_csv(path) if path.is_file() else []


def claim_checks(results: Path) -> list[dict[str, Any]]:
    """Every claim check a figure or table wrote, with its `source` (that figure or table); a
    file that is not a JSON list of checks stops, naming it."""
    checks = []
    for path in sorted(results.glob(f"*/*{CLAIMS_SUFFIX}")):
        found = read_json(path)
        if not isinstance(found, list) or not all(isinstance(c, dict) for c in found):
            raise ValueError(f"{path}: not a JSON list of claim checks")
        source = path.name.removesuffix(CLAIMS_SUFFIX)
        checks += [{"source": source, **check} for check in found]
    return checks


def run_summary(
    invocation: Mapping[str, Any],
    stacks: list[dict[str, Any]],
    results: Path,
    records: list[dict[str, Any]],
) -> dict[str, Any]:
    tags = invocation.get("tags", {})
    return {
        "run": tags.get("run"),
        "invocation": {
            "id": invocation["invocation"],
            "start": iso(invocation["start_ms"]),
            "end": iso(invocation["end_ms"]) if invocation.get("end_ms") else None,
            "status": invocation.get("status", "RUNNING"),
            **{key: tags.get(key) for key in ("command", "targets", "profile", "host")},
            "commit": tags.get("git.commit"),
            "uncommitted_changes": tags.get("git.dirty") == "true",
        },
        "config_hash": tags.get("config.hash"),
        "config": invocation.get("config", {}),
        "software": stacks,
        "cells": table_cells(results, records, tags.get("config.hash")),
        "claims": claim_checks(results),
        "diagnoses": diagnoses(results),
        "pipeline_info": INFO_DIR,
    }


def write_pipeline_info(results: Path) -> list[Path]:
    """The files of this module's docstring, for the newest invocation of `results`."""
    invocations = read_invocations(results)
    if not invocations:
        raise FileNotFoundError(f"{invocations_dir(results)}: no invocation recorded")
    invocation = invocations[next(reversed(invocations))]
    every = records_under(results)
    records = newest_records(every)
    rows = [trace_row(results, record) for record in records]
    stacks = software_stacks(records)
    info, name = results / INFO_DIR, invocation["invocation"]
    current = [row for row in rows if row["invocation"] == name]
    texts = {  # all made before any is written: a failure leaves the last ones as they were
        info / "trace.tsv": trace_tsv(rows),
        info / f"timeline_{name}.html": timeline_html(current, f"Jobs of invocation {name}"),
        info / "software_versions.json": json_text(stacks),
        results / RUN_SUMMARY: json_text(run_summary(invocation, stacks, results, every)),
        results / CRATE_FILE: json_text(
            run_crate(results, results.parent.parent, invocation, records)
        ),
    }
    for path, text in texts.items():
        write_text_atomic(path, text)
    return list(texts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m memrepro.tracking.pipeline_info",
        description="Write results/<run>/run.json and pipeline_info/ from the job records.",
    )
    parser.add_argument("results", type=Path, help="results/<run>")
    results = parser.parse_args(argv).results
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        written = write_pipeline_info(results)
    except (ValueError, FileNotFoundError) as exc:  # a damaged file, named; nothing written
        sys.exit(f"pipeline_info: {exc}")
    info = [path for path in written if path.parent == results / INFO_DIR]
    print(
        f"run summary: {results / RUN_SUMMARY}, the run's RO-Crate {results / CRATE_FILE} "
        f"and {len(info)} files in {results / INFO_DIR}"
    )


if __name__ == "__main__":
    main()
