"""The response lengths a training run measured (`--lengths`): the mean response tokens of a
training stage, from its metrics or, for a killed or running job, from verl's logs."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any


def measured_response_tokens(out: Path) -> float | None:
    """The mean response (tokens per conversation or chunk row) over the steps a training stage
    logged: its finished `train_metrics.jsonl`, else the CPU trainer's growing one, else verl's
    logs of every attempt (a killed or running job); None where none has `response_tokens_mean`
    (or the CPU trainer's totals)."""
    from memrl.data.io import iter_jsonl
    from memrl.verl.job import METRICS_FILE, curve_rows, read_verl_logs, work_dir

    rows: list[dict[str, Any]] = []
    for file in (out / METRICS_FILE, out.parent / f".{out.name}.partial" / METRICS_FILE):
        if file.is_file():
            rows = list(iter_jsonl(file))
            break
    else:
        logs = sorted((work_dir(out) / "metrics").glob("attempt-*.jsonl"))
        rows = curve_rows(read_verl_logs(logs)) if logs else []
    found = [mean for mean in map(_response_mean, rows) if mean is not None]
    return statistics.fmean(found) if found else None


def _response_mean(row: dict[str, Any]) -> float | None:
    if "response_tokens_mean" in row:
        return float(row["response_tokens_mean"])
    if row.get("n_conversations"):  # the CPU trainer's totals, before it logged the mean
        return float(row["response_tokens"]) / float(row["n_conversations"])
    return None
