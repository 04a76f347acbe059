"""The response lengths a training run measured (`--lengths`): the mean response tokens of a
training stage, from its metrics or, for a killed or running job, from verl's logs. Each step's
mean is checked against what the stage can write: positive, and at most its longest response."""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any


class ResponseLengthError(ValueError):
    """A training run's measured lengths that cannot be read or cannot be a stage's responses;
    the message names the file and line, or the step."""


def measured_response_tokens(out: Path, longest: int | None = None) -> float | None:
    """The mean response (tokens per conversation or chunk row) over the steps a training stage
    logged: its finished `train_metrics.jsonl`, else the CPU trainer's growing one, else verl's
    logs of every attempt (a killed or running job); None where none has `response_tokens_mean`
    (or the CPU trainer's totals). A torn last line (a killed job's cut write) is skipped with a
    warning; a step's mean that is not a number in (0, `longest`] is a ResponseLengthError."""
    from memrepro.verl.job import METRICS_FILE, curve_rows, read_verl_logs, work_dir

    for file in (out / METRICS_FILE, out.parent / f".{out.name}.partial" / METRICS_FILE):
        if file.is_file():
            rows = [(f"{file}:{line}", row) for line, row in _metrics_lines(file)]
            break
    else:
        logs = sorted((metrics := work_dir(out) / "metrics").glob("attempt-*.jsonl"))
        try:
            steps = curve_rows(read_verl_logs(logs)) if logs else []
        except ValueError as exc:
            raise ResponseLengthError(str(exc)) from exc
        rows = [(f"{metrics}: step {row['step']}", row) for row in steps]
    found = [_checked(mean, where, longest) for where, row in rows if (mean := _response_mean(row))]
    return statistics.fmean(found) if found else None


def _metrics_lines(file: Path) -> list[tuple[int, dict[str, Any]]]:
    """A metrics file's rows with their line numbers (a torn last line left out)."""
    from memrepro.data.io import iter_appended_jsonl

    try:
        return list(iter_appended_jsonl(file))
    except ValueError as exc:  # damaged inside the file, not cut at its end
        raise ResponseLengthError(str(exc)) from exc


def _response_mean(row: dict[str, Any]) -> tuple[str, Any] | None:
    """(what was logged, the step's mean response) where the row has one."""
    if "response_tokens_mean" in row:
        return "response_tokens_mean", row["response_tokens_mean"]
    if row.get("n_conversations"):  # the CPU trainer's totals, before it logged the mean
        totals = (row.get("response_tokens"), row["n_conversations"])
        numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in totals)
        return "response_tokens/n_conversations", totals[0] / totals[1] if numbers else totals
    return None


def _checked(logged: tuple[str, Any], where: str, longest: int | None) -> float:
    """A step's mean response length, if it is one the stage can write."""
    name, value = logged
    number = not isinstance(value, bool) and isinstance(value, int | float)
    if number and math.isfinite(value) and 0 < value <= (longest or math.inf):
        return float(value)
    bound = f"at most the stage's longest response, {longest} tokens" if longest else "finite"
    raise ResponseLengthError(
        f"{where}: {name}={value!r} is no mean response length (positive and {bound})"
    )
