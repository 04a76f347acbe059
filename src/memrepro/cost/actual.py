"""What a finished run used (`--actual`): each planned job's last finished provenance record, its
wall time and GPU-hours per rule beside the estimate, and the table of them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from memrepro.cost.plan import PlannedJob
from memrepro.cost.price import Price
from memrepro.cost.report import format_hours


def finished_records(records: Iterable[dict[str, Any]]) -> dict[tuple[str, tuple], dict[str, Any]]:
    """The last finished record of each job, by (rule, wildcards)."""
    found: dict[tuple[str, tuple], dict[str, Any]] = {}
    for record in sorted(records, key=lambda r: r.get("end_ms") or 0):
        if record.get("status") == "FINISHED" and record.get("wall_s") is not None:
            found[(record["rule"], tuple(sorted(record.get("wildcards", {}).items())))] = record
    return found


def actual_rows(
    jobs: Sequence[PlannedJob], prices: Sequence[Price], records: Iterable[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Per rule of the planned jobs: how many ran (a finished record), the estimate of those
    (GPU-h), what they used (wall hours; GPU-h = wall time x the GPUs each requested) and the
    ratio actual / estimate over the jobs that have both."""
    ran = finished_records(records)
    rows: dict[str, dict[str, Any]] = {}
    for job, price in zip(jobs, prices, strict=True):
        if not job.runs:
            continue
        row = rows.setdefault(
            job.rule,
            {"rule": job.rule, "jobs": 0, "ran": 0, "wall_h": 0.0, "estimate_gpu_h": 0.0}
            | {"actual_gpu_h": 0.0, "compared_estimate": 0.0, "compared_actual": 0.0},
        )
        row["jobs"] += 1
        record = ran.get((job.rule, tuple(sorted(job.wildcards.items()))))
        if record is None:
            continue
        hours = float(record["wall_s"]) / 3600
        used = hours * int(job.resources.get("gpu", 0) or 0)
        row["ran"] += 1
        row["wall_h"] += hours
        row["actual_gpu_h"] += used
        if price.estimate_gpu_h is not None:
            row["estimate_gpu_h"] += price.estimate_gpu_h
            if used:
                row["compared_estimate"] += price.estimate_gpu_h
                row["compared_actual"] += used
    for row in rows.values():
        estimate = row.pop("compared_estimate")
        row["ratio"] = row.pop("compared_actual") / estimate if estimate else None
    return sorted(rows.values(), key=lambda row: row["rule"])


def render_actual(rows: Sequence[dict[str, Any]], results: Path) -> str:
    widths = (22, 6, 6, 10, 16, 14, 16)
    titles = ("rule", "jobs", "ran", "wall h", "estimate GPU-h", "actual GPU-h", "actual/estimate")

    def line(values: Sequence[str]) -> str:
        head, *rest = values
        return head.ljust(widths[0]) + "".join(
            v.rjust(w) for v, w in zip(rest, widths[1:], strict=True)
        )

    body = [
        line(
            [
                row["rule"],
                f"{row['jobs']:,}",
                f"{row['ran']:,}",
                f"{row['wall_h']:,.2f}" if row["wall_h"] >= 0.1 else f"{row['wall_h']:.3f}",
                format_hours(row["estimate_gpu_h"]) if row["estimate_gpu_h"] else "—",
                format_hours(row["actual_gpu_h"]) if row["actual_gpu_h"] else "—",
                "—" if row["ratio"] is None else f"{row['ratio']:.2f}×",
            ]
        )
        for row in rows
    ]
    header = line(titles)
    return "\n".join(
        [
            header,
            "-" * len(header),
            *body,
            "",
            f"ran: the jobs of the target with a finished record in {results} (the last of "
            "each); wall h: their wall time; actual GPU-h: wall time x the GPUs each requested; "
            "actual/estimate: over the GPU jobs that have both.",
        ]
    )
