"""What a person reads in MLflow's UI: run names and run descriptions (Markdown, which the UI
renders on each run's page), built from the provenance records (memrepro.tracking.record).

A job's run is named `<rule> <wildcards as its log path spells them>` (`evaluate
ruler_hqa/memagent-7b/50`); its description lists the files it read, each with a link to the run
that wrote that content, and the files it wrote with their digests. An invocation's run names
its command, targets, profile, config hash and commit, and links the runs of its tables and of
the reproduction report, whose summary it quotes. Links are the UI's own routes, relative to the
page, so they hold on any host and port.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# MLflow 3.x's UI opens an experiment on its GenAI overview unless told otherwise: its global
# "workflow type" comes from this URL parameter (else the browser's stored choice, default GenAI);
# the experiment's `mlflow.experimentKind` tag is not consulted while that switch is on.
RUNS_VIEW = "workflowType=machine_learning"
NOTE_TAG = "mlflow.note.content"  # the run's description in the UI
NOTE_MAX_CHARS = 7500  # under MLflow's 8,000-character limit on a tag's value
COMMAND_MAX_CHARS = 1000  # the whole command is the run's `command` tag
KEY_METRICS = 8  # metrics quoted at the top of a job's description


def experiment_link(experiment: str) -> str:
    """The experiment's runs, as a link relative to the UI's root (`#/...`)."""
    return f"#/experiments/{experiment}/runs?{RUNS_VIEW}"


def run_link(experiment: str, run_id: str) -> str:
    return f"#/experiments/{experiment}/runs/{run_id}?{RUNS_VIEW}"


def job_label(record: Mapping[str, Any]) -> str:
    """A job's wildcards as its log path spells them (`ruler_hqa/memagent-7b/50` for
    `logs/evaluate/ruler_hqa/memagent-7b/50.log`), else their values joined by `/`."""
    parts = Path(record["log"]).with_suffix("").parts
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] == "logs" and parts[i + 1] == record["rule"]:
            return "/".join(parts[i + 2 :])
    return "/".join(str(value) for value in record["wildcards"].values())


def job_run_name(record: Mapping[str, Any]) -> str:
    """`<rule> <label>`: short, whole, and sorted with its rule in the run list."""
    return f"{record['rule']} {job_label(record)}".strip()


def parent_run_name(info: Mapping[str, Any]) -> str:
    """`<run> <month-day hour:minute> <targets>`: one invocation among many of the same run."""
    started = time.strftime("%m-%d %H:%M", time.localtime(info["start_ms"] / 1000))
    return f"{info['tags']['run']} {started} {info['tags'].get('targets', '')}".strip()


def shown_path(path: str, base: Path) -> str:
    """A path as a person reads it: relative to `base` (the results directory, so a moved
    copy reads the same; the working directory) where it lies there, else as recorded."""
    relative = os.path.relpath(path, base)
    return path if relative.startswith("..") else relative


def short_digest(digest: str) -> str:
    """`sha256:<first 12 hex digits>`."""
    kind, _, value = digest.partition(":")
    return f"{kind}:{value[:12]}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def job_description(
    record: Mapping[str, Any],
    producers: Mapping[str, Mapping[str, Any] | None],
    runs: Mapping[str, str],
    experiment: str,
    results: Path,
    parent: str | None,
    origin: Mapping[str, str] | None = None,
) -> str:
    """A job run's description: what it is (a download: the `origin` its manifest names), then
    its inputs (each linked to the run that made that content, or marked as a source) and outputs
    with digests. `producers`: input path -> the producing record
    (memrepro.tracking.results_dir.producers_of); `runs`: record id -> run id."""
    status = record.get("status", "KILLED")
    facts = [status]
    if "wall_s" in record:
        facts.append(f"{record['wall_s']:.1f} s")
    if "peak_rss_mb" in record:
        facts.append(f"peak {record['peak_rss_mb']:.0f} MB")
    head = f"**{record['rule']}** `{job_label(record) or '-'}`: {', '.join(facts)}"
    if parent:
        head += f" · [its pipeline run]({run_link(experiment, parent)})"
    if origin:
        head += "\n\nOrigin: " + " · ".join(f"{k} `{v}`" for k, v in origin.items())
    metrics = final_metrics(record)
    if metrics:
        first = sorted(metrics.items(), key=lambda item: _metric_order(item[0]))
        shown = " · ".join(f"`{k}` {v:g}" for k, v in first[:KEY_METRICS])
        more = f" (all {len(metrics)}: Metrics below)" if len(metrics) > KEY_METRICS else ""
        head += f"\n\nMetrics: {shown}{more}"
    linked, sources = [], []  # the inputs a job made (links to follow), the sources
    for path, digest in sorted(record.get("inputs", {}).items()):
        producer = producers.get(path)
        shown = f"| `{_cell(shown_path(path, results))}` | `{short_digest(digest)}` |"
        if producer and producer["record"] in runs:
            link = run_link(experiment, runs[producer["record"]])
            linked.append(f"{shown} [{_cell(job_run_name(producer))}]({link}) |")
        else:
            sources.append(f"{shown} no job of this run (a source) |")
    outputs = [
        f"| `{_cell(shown_path(path, results))}` | `{short_digest(digest)}` |"
        for path, digest in sorted(record.get("outputs", {}).items())
    ]
    tail = []
    for output in sorted(record.get("outputs", {}))[:1]:
        workdir = results.parent.parent  # results/<run> lies in the workflow's directory
        tail = ["", f"Every job behind an output: `memrepro lineage {shown_path(output, workdir)}`"]
    # (lines, rank): rank 0 always shown; where MLflow's limit cuts, sources go first, then
    # outputs, then linked inputs
    return _fit(
        [
            ([head, "", "#### Inputs", "", "| file | digest | made by |", "|---|---|---|"], 0),
            (linked, 1),
            (sources, 3),
            ([] if linked or sources else ["| (none) | | |"], 0),
            (["", "#### Outputs", "", "| file | digest |", "|---|---|"], 0),
            (outputs or ["| (none) | |"], 2 if outputs else 0),
            (tail, 0),
        ]
    )


HEADLINE_PREFIXES = ("score.", "ci_low.", "ci_high.")  # an evaluation's (memrepro.jobs.evaluate)


def _metric_order(name: str) -> tuple[int, str, int]:
    """Each task's score and its interval bounds, task by task, before the details."""
    for rank, prefix in enumerate(HEADLINE_PREFIXES):
        if name.startswith(prefix):
            return (0, name.removeprefix(prefix), rank)
    return (1, name, 0)


def final_metrics(record: Mapping[str, Any]) -> dict[str, float]:
    """Each metric the job logged, at its last value."""
    return {
        key: value for line in record.get("metrics", []) for key, value in line["values"].items()
    }


def _fit(
    parts: Sequence[tuple[Sequence[str], int]],
    what: str = "files",
    where: str = "the run's artifact `provenance.json`",
) -> str:
    """The parts' lines joined. `parts`: (lines, rank); where the text would pass MLflow's
    limit on a tag, the lines of the highest rank are left out first (rank 0 never), and
    counted: the full lists are in the run's `provenance.json`."""
    text = "\n".join(line for lines, _ in parts for line in lines)
    if len(text) <= NOTE_MAX_CHARS:
        return text
    room = NOTE_MAX_CHARS - 100  # 100: the note on what was left out
    room -= sum(len(line) + 1 for lines, rank in parts if rank == 0 for line in lines)
    kept = {}
    for index, (lines, rank) in sorted(enumerate(parts), key=lambda part: part[1][1]):
        kept[index] = len(lines) if rank == 0 else 0
        for line in lines if rank else []:
            if len(line) + 1 > room:
                break
            room -= len(line) + 1
            kept[index] += 1
    shown = [line for i, (lines, _) in enumerate(parts) for line in lines[: kept[i]]]
    dropped = sum(len(lines) for lines, _ in parts) - len(shown)
    return "\n".join([*shown, "", f"({dropped} more {what}: {where} has them all)"])


def parent_description(
    info: Mapping[str, Any],
    jobs: Sequence[tuple[Mapping[str, Any], str]],
    experiment: str,
    results: Path,
) -> str:
    """An invocation's description: how it was started, how its jobs ended, and its tables and
    reproduction report (linked, with the report's summary). `jobs`: (record, run id)."""
    tags = info["tags"]
    dirty = (
        " (with uncommitted changes: artifact `git/`)" if tags.get("git.dirty") == "true" else ""
    )
    statuses: dict[str, int] = {}
    for record, _ in jobs:
        status = record.get("status", "KILLED")
        statuses[status] = statuses.get(status, 0) + 1
    ended = ", ".join(f"{n} {status.lower()}" for status, n in sorted(statuses.items()))
    lines = [
        f"**Run `{tags['run']}`**: {info.get('status', 'RUNNING')}; "
        f"{len(jobs)} jobs{f' ({ended})' if ended else ''}",
        "",
        f"- command: `{tags.get('command', '?')[:COMMAND_MAX_CHARS]}`",
        f"- targets: `{tags.get('targets', 'all')}` · profile: `{tags.get('profile', 'none')}`",
        f"- config hash: `{tags.get('config.hash', '?')}` · commit `{tags.get('git.commit', '?')}`"
        f"{dirty} · host `{tags.get('host', '?')}`",
        f"- all runs of this experiment: [runs]({experiment_link(experiment)})",
    ]
    report = []
    for _, run in [(r, run) for r, run in jobs if r["rule"] == "reproduction"]:
        report += ["", f"#### [Reproduction]({run_link(experiment, run)})", ""]
        report += reproduction_summary(results / "reproduction.md")
    tables = sorted(
        (job_label(r), run) for r, run in jobs if r["rule"] == "make_table" and job_label(r)
    )
    links = [f"[{name}]({run_link(experiment, run)})" for name, run in tables]
    heading = ["", "#### Tables", ""] if tables else []
    return _fit([(lines, 0), (report, 1), (heading, 0), (links, 2)], "lines", "the run list")


def reproduction_summary(report: Path) -> list[str]:
    """The reproduction report's summary: its banner and one line per paper (the lines between
    its title and the first section)."""
    if not report.is_file():
        return []
    lines = report.read_text(encoding="utf-8").splitlines()[1:]
    summary = []
    for line in lines:
        if line.startswith("#"):
            break
        if line.startswith(("> ", "- **")):
            summary.append(line)
    return summary
