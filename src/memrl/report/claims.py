"""The papers' claims checked on our numbers: one `ClaimCheck` per claim and system, printed
under a figure or a table and written beside it (`<name>.claims.json`) for the reproduction
report. MemAgent's are checked by its figures (memagent_figures), Mem-α's by its tables
(`table_claims`, on the built table's cells)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from memrl.data.io import write_json_atomic
from memrl.scoring.compare import standard_error
from memrl.scoring.intervals import Interval, mean_interval

CLAIMS_SUFFIX = ".claims.json"
CLAIM_LINE, CHECK_LINE = "Paper claim: ", "    ours, "  # how claim_lines begin its lines
# A claim on ours: its 95 % interval wholly on the claimed side, wholly off it, or across it.
HOLDS, FAILS, UNDECIDED, NOT_CHECKABLE = "holds", "does not hold", "undecided", "not checkable"
OUTCOMES = (HOLDS, FAILS, UNDECIDED, NOT_CHECKABLE)
DRAWS, SEED = 4000, 0  # the statistic's interval: normal draws of its inputs, seeded


@dataclass(frozen=True)
class ClaimCheck:
    """One paper claim against one of our systems (or alone, when it has no number)."""

    claim_id: str
    text: str
    system: str | None  # display name
    value: float | None  # our statistic
    outcome: str  # one of OUTCOMES
    detail: str
    interval: Interval | None = None  # our statistic's 95 % interval (None: no sampled input)


OPS = {
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
}

Estimate = tuple[float, Interval | None]  # a number of ours and its 95 % interval (None: none)


def statistic_interval(
    statistic: Callable[[np.ndarray], np.ndarray], inputs: Sequence[Estimate]
) -> Interval | None:
    """The 95 % interval of a statistic of our numbers: each input drawn from a normal with the
    standard error its interval implies (inputs without one held fixed), the statistic taken
    row by row (`statistic` maps draws x inputs to draws), its 2.5th and 97.5th percentiles.
    None when no input has an interval."""
    if all(bounds is None for _, bounds in inputs):
        return None
    centres = np.array([value for value, _ in inputs], dtype=float)
    spreads = np.array([0.0 if b is None else standard_error(b) for _, b in inputs])
    rng = np.random.default_rng(SEED)
    with np.errstate(divide="ignore", invalid="ignore"):
        values = statistic(centres + rng.standard_normal((DRAWS, len(inputs))) * spreads)
    values = values[np.isfinite(values)]
    if not len(values):
        return None
    low, high = np.percentile(values, [2.5, 97.5])
    return (round(float(low), 4), round(float(high), 4))


def estimate(
    statistic: Callable[[np.ndarray], np.ndarray], inputs: Sequence[Estimate]
) -> tuple[float, Interval | None]:
    """A statistic of our numbers and its 95 % interval (`statistic_interval`)."""
    value = float(statistic(np.array([[v for v, _ in inputs]], dtype=float))[0])
    return value, statistic_interval(statistic, inputs)


def judge(op: str, threshold: float, value: float, interval: Interval | None) -> str:
    """holds: the whole interval satisfies `op threshold`; does not hold: none of it does;
    undecided: it lies across the threshold. Without an interval, the value alone decides."""
    if op not in OPS:
        raise ValueError(f"unknown op {op!r} ({', '.join(OPS)})")
    bounds = (value, value) if interval is None else interval
    satisfied = [OPS[op](bound, threshold) for bound in bounds]
    return HOLDS if all(satisfied) else FAILS if not any(satisfied) else UNDECIDED


def described(value: float, interval: Interval | None, style: str = "{:.1f}") -> str:
    """'12.3 [8.1, 16.5]' (no interval: '12.3, no interval: no sampled input')."""
    if interval is None:
        return f"{style.format(value)}, no interval: no sampled input"
    low, high = (style.format(bound) for bound in interval)
    return f"{style.format(value)} [{low}, {high}]"


def claim_lines(checks: Sequence[ClaimCheck]) -> list[str]:
    """Footer lines: each claim once, then our check per system (wrapped by the figure)."""
    lines: list[str] = []
    seen: set[str] = set()
    for check in checks:
        if check.claim_id not in seen:
            seen.add(check.claim_id)
            lines.append(f'{CLAIM_LINE}"{check.text}"')
        if check.system is not None:
            lines.append(f"{CHECK_LINE}{check.system}: {check.detail} -> {check.outcome}")
    return lines


def not_comparable(checks: Sequence[ClaimCheck]) -> list[ClaimCheck]:
    """The checks of a table or figure whose systems cannot reproduce: none is judged."""
    prefix = "not comparable (machinery check only): "
    return [replace(c, outcome=NOT_CHECKABLE, detail=prefix + c.detail) for c in checks]


def write_claims(checks: Sequence[ClaimCheck], path: Path) -> Path:
    write_json_atomic(path, [asdict(check) for check in checks])
    return path


# How a table claim's statistic combines the `of` row's cell (column 0) with the `against`
# rows' (columns 1...), on draws x rows, and how it is printed.
STATISTICS: dict[str, tuple[Callable[[np.ndarray], np.ndarray], str]] = {
    "ratio_to_mean": (lambda x: x[:, 0] / x[:, 1:].mean(axis=1), "{:.2f}×"),
    "margin_over_best": (lambda x: x[:, 0] - x[:, 1:].max(axis=1), "{:+.1f}"),
    # each row above the next, in the claimed order: the smallest such gap
    "gap_in_order": (lambda x: np.diff(-x, axis=1).min(axis=1), "{:+.1f}"),
}


def table_claims(
    table: pd.DataFrame, claims: Sequence[Mapping[str, Any]], name: str
) -> list[ClaimCheck]:
    """The claims (a paper file's `claims`) that name table `name`, on its cells: the mean of
    `column` over our rows compared with the paper row `of` and those of `against`, combined by
    `statistic` with its 95 % interval from the cells', judged by `op` against `value`; the
    same on the paper's own numbers beside."""
    checks = []
    for claim in (c for c in claims if name in c["tables"]):
        text = " ".join(str(claim["text"]).split())
        if claim["statistic"] not in STATISTICS:
            raise ValueError(
                f"claim {claim['id']!r}: unknown statistic {claim['statistic']!r} "
                f"({', '.join(STATISTICS)})"
            )
        statistic, style = STATISTICS[claim["statistic"]]
        ours = _row_values(table, claim, "ours")
        value = _combine(claim["statistic"], statistic, ours)
        if ours is None or value is None:
            rows = "; ".join([claim["of"], *claim["against"]])
            detail = f"not checkable: this run has no (non-zero) {claim['column']} for {rows}"
            checks.append(ClaimCheck(str(claim["id"]), text, None, None, NOT_CHECKABLE, detail))
            continue
        interval = statistic_interval(statistic, ours)
        outcome = judge(claim["op"], float(claim["value"]), value, interval)
        detail = (
            f"{claim['statistic']} {described(value, interval, style)} "
            f"(claim: {claim['op']} {claim['value']})"
        )
        paper = _row_values(table, claim, "paper")
        if (printed := _combine(claim["statistic"], statistic, paper)) is not None:
            detail += f"; on the paper's own numbers {style.format(printed)}"
        checks.append(
            ClaimCheck(str(claim["id"]), text, claim["of"], value, outcome, detail, interval)
        )
    return checks


def _combine(
    name: str, statistic: Callable[[np.ndarray], np.ndarray], values: Sequence[Estimate] | None
) -> float | None:
    """The statistic of the values, or None where it says nothing: a ratio whose numerator is 0
    (ours wrote no memory at all: 0.00× is not "half the memory") or whose denominator is."""
    if values is None:
        return None
    numbers = np.array([[value for value, _ in values]], dtype=float)
    if name == "ratio_to_mean" and (numbers[0, 0] == 0 or numbers[0, 1:].mean() == 0):
        return None
    return float(statistic(numbers)[0])


def _row_values(table: pd.DataFrame, claim: Mapping[str, Any], side: str) -> list[Estimate] | None:
    """The `of` row's then the `against` rows' numbers in `claim['column']` with our intervals,
    from our cells or the paper's (no interval); a paper row shown by several of our systems
    gives their mean; None if one is missing."""
    rows = table.attrs["paper_rows"]
    values = []
    for row in [claim["of"], *claim["against"]]:
        cells = [table.loc[display, claim["column"]] for display, r in rows.items() if r == row]
        found = [cell for cell in cells if getattr(cell, side) is not None]
        if not found:
            return None
        numbers = [float(getattr(cell, side)) for cell in found]
        bounds = [cell.ci for cell in found]
        sampled = side == "ours" and None not in bounds
        interval = mean_interval(numbers, bounds) if sampled else None  # type: ignore[arg-type]
        values.append((sum(numbers) / len(numbers), interval))
    return values
