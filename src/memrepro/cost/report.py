"""The prices of a plan as `memrepro cost` prints them: one row per rule and their total, as a text
table, a Markdown table (the README's) or JSON's rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memrepro.cost.price import Price


def summarise(prices: Sequence[Price]) -> list[dict[str, Any]]:
    """One row per rule with GPU jobs, downloads or checkpoints, by rule name."""
    rows: dict[str, dict[str, Any]] = {}
    for price in prices:
        row = rows.setdefault(
            price.rule,
            {
                "rule": price.rule,
                "jobs": 0,
                "gpu_jobs": 0,
                "estimated_jobs": 0,
                "estimate_gpu_h": 0.0,
                "allocation_gpu_h": 0.0,
                "download_gb": 0.0,
                "checkpoint_gb": 0.0,
                "measured_jobs": 0,
                "api_jobs": 0,
                "api_modelled_jobs": 0,
                "api_calls": 0,
                "api_mtok": 0.0,
                "api_usd": 0.0,
                "unpriced_api_jobs": 0,
            },
        )
        row["jobs"] += 1
        row["gpu_jobs"] += price.gpu
        if price.estimate_gpu_h is not None:
            row["estimated_jobs"] += 1
            row["estimate_gpu_h"] += price.estimate_gpu_h
        row["measured_jobs"] += price.measured
        row["allocation_gpu_h"] += price.allocation_gpu_h or 0.0
        row["download_gb"] += price.download_gb
        row["checkpoint_gb"] += price.checkpoint_gb
        row["api_jobs"] += price.hosted
        if price.api is not None:
            row["api_modelled_jobs"] += 1
            row["api_calls"] += round(price.api.calls)
            row["api_mtok"] += (price.api.input_tokens + price.api.output_tokens) / 1e6
            row["api_usd"] += price.api.usd or 0.0
        row["unpriced_api_jobs"] += price.hosted and (price.api is None or price.api.usd is None)
    kept = [
        r
        for r in rows.values()
        if r["gpu_jobs"] or r["download_gb"] or r["checkpoint_gb"] or r["api_jobs"]
    ]
    return sorted(kept, key=lambda row: row["rule"])


COLUMNS = (  # (heading, text width, row key)
    ("rule", 22, "rule"),
    ("jobs", 6, "jobs"),
    ("GPU jobs", 10, "gpu_jobs"),
    ("estimated", 11, "estimated_jobs"),
    ("estimate GPU-h", 16, "estimate_gpu_h"),
    ("allocation GPU-h", 18, "allocation_gpu_h"),
    ("downloads GB", 14, "download_gb"),
    ("checkpoints GB", 16, "checkpoint_gb"),
    ("API calls", 11, "api_calls"),
    ("API Mtok", 10, "api_mtok"),
    ("API $", 10, "api_usd"),
)
# in the rows, not shown as columns
COUNTED = ("measured_jobs", "api_jobs", "api_modelled_jobs", "unpriced_api_jobs")


def with_total(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    keys = [key for _, _, key in COLUMNS[1:]] + list(COUNTED)
    total = {key: sum(row[key] for row in rows) for key in keys}
    return [*rows, {"rule": "total", **total}]


def cells(row: dict[str, Any]) -> list[str]:
    """A row's values as shown: hours and gigabytes rounded, "—" for an estimate of no job (or
    API use of none), * on an estimate with measured response lengths, + on dollars that leave
    out a hosted model's job (no price, or calls not modelled)."""
    shown = []
    for _, _, key in COLUMNS:
        value = row[key]
        if key == "estimate_gpu_h" and not row["estimated_jobs"]:
            shown.append("—")
        elif key == "estimate_gpu_h":
            shown.append(format_hours(value) + ("*" if row["measured_jobs"] else ""))
        elif key.startswith("api_") and not row["api_modelled_jobs"]:
            shown.append("—+" if key == "api_usd" and row["api_jobs"] else "—")
        elif key == "api_mtok":
            shown.append(f"{value:,.1f}")
        elif key == "api_usd":
            shown.append(f"{value:,.0f}" + ("+" if row["unpriced_api_jobs"] else ""))
        elif key.endswith("_gpu_h"):
            shown.append(format_hours(value))
        elif key.endswith("_gb"):
            shown.append(f"{value:,.0f}")
        else:
            shown.append(f"{value:,}" if isinstance(value, int) else str(value))
    return shown


def render(
    rows: Sequence[dict[str, Any]], planned: int, measured: dict[str, Any], rate: float
) -> str:
    def line(values: Sequence[str]) -> str:
        return values[0].ljust(COLUMNS[0][1]) + "".join(
            value.rjust(width) for value, (_, width, _) in zip(values[1:], COLUMNS[1:], strict=True)
        )

    header = line([title for title, _, _ in COLUMNS])
    *body, total = with_total(rows)
    lines = [header, "-" * len(header), *(line(cells(row)) for row in body)]
    lines += [
        "-" * len(header),
        line(cells(total)),
        f"(and {planned - total['jobs']} other jobs: CPU work, downloads of data, tables and "
        "figures)",
        "",
        f"estimate: FLOPs at {rate / 1e12:,.0f} TFLOP/s, the prefill rate measured on one "
        f"{measured['device']} ({measured['dtype']}, transformers {measured['transformers']}); "
        "every call at its token budgets (* : training responses at the mean length its run "
        "measured, --lengths); — : work not modelled (allocation only).",
        "allocation: each job's runtime limit x the GPUs it requests, the scheduler's upper bound.",
        "downloads: model weights at 2 bytes per parameter, datasets where a manifest records "
        "them; checkpoints: verl's kept training states and the merged model.",
        API_NOTE,
    ]
    return "\n".join(lines)


API_NOTE = (
    "API: the calls of hosted models (source api), at their token budgets; dollars at each "
    "model's `price` (per million input and output tokens; + : a hosted model without one, or "
    "whose calls are not modelled, left out)."
)


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The rows and their total as a Markdown table (the README's)."""
    lines = [
        "| " + " | ".join(title for title, _, _ in COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    *body, total = with_total(rows)
    for row in body:
        rule, *rest = cells(row)
        lines.append("| " + " | ".join([f"`{rule}`", *rest]) + " |")
    rule, *rest = cells(total)
    lines.append("| " + " | ".join([f"**{rule}**", *rest]) + " |")
    return "\n".join(lines)


def format_hours(value: float) -> str:
    """Hours as shown: whole from 10 up, else to a tenth."""
    return f"{value:,.0f}" if value >= 10 else f"{value:,.1f}"
