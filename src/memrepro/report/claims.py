"""The papers' claims checked on our numbers: one `ClaimCheck` per claim and system, printed
under a figure or a table and written beside it (`<name>.claims.json`) for the reproduction
report. MemAgent's are checked by its figures (memagent_figures), Mem-α's by its tables
(`table_claims`, on the built table's cells).

A claim is judged on the 95 % interval of its statistic, never on a value alone (`judge`):
holds when the interval is wholly on the claimed side, so at the bound it reads holds 2.5 % of
the time. The interval carries each input's own, asymmetric one (`statistic_intervals`: a lone
input's bounds as they are, several drawn from split normals). A right/wrong input (one task's
accuracy, or equally sized tasks' mean: `Counted`) has exact Clopper–Pearson bounds at every
level, so neither verdict errs more than 2.5 % at the bound, near 100 % too. A claim on the
smallest of several parts (every length, every rival) is judged part by part (`judge_lowest`).
Without an interval (Mem-α's memory sizes, not sampled per instance) a claim is not checkable."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from functools import cache
from itertools import pairwise
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

from memrepro.data.io import write_json_atomic
from memrepro.scoring.intervals import Z95, Interval, clopper_pearson, mean_interval

CLAIMS_SUFFIX = ".claims.json"
CLAIM_LINE, CHECK_LINE = "Paper claim: ", "    ours, "  # how claim_lines begin its lines
# A claim on ours: its 95 % interval wholly on the claimed side, wholly off it, or across it.
HOLDS, FAILS, UNDECIDED, NOT_CHECKABLE = "holds", "does not hold", "undecided", "not checkable"
OUTCOMES = (HOLDS, FAILS, UNDECIDED, NOT_CHECKABLE)
DRAWS, SEED = 4000, 0  # a statistic's interval: split-normal draws of its inputs, seeded


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
Statistic = Callable[[np.ndarray], np.ndarray]  # draws x inputs -> draws
Named = dict[str, tuple[Statistic, Sequence[Estimate]]]  # a claim's parts by name (`parts_of`)
TAIL = 0.025  # each side of a 95 % interval: a claim holds one-sidedly at 2.5 %


class Counted(tuple):  # type: ignore[type-arg]
    """An Estimate of `right` of `n` right/wrong items (one task's accuracy, or several equally
    sized tasks' mean, which is their pooled count): (value %, its 95 % interval), with exact
    bounds at any tail (Clopper–Pearson: `bounds`). A claim at the Bonferroni level of k parts
    then reads its bounds at 2.5 %/k, never a normal extrapolated from the 95 % ones; Wilson's
    upper bound, short near 100 %, read *does not hold* in 4.8 % of claims at the bound (3 tasks
    of 128 items at 95 %)."""

    right: int
    n: int

    def __new__(cls, right: int, n: int) -> Counted:
        made = super().__new__(cls, (100 * right / n, _percent(clopper_pearson(right, n, TAIL))))
        made.right, made.n = right, n
        return made

    def bounds(self, tail: float) -> Interval:
        return _percent(clopper_pearson(self.right, self.n, tail))


def _percent(bounds: tuple[float, float]) -> Interval:
    return (100 * bounds[0], 100 * bounds[1])


def spreads(inputs: Sequence[Estimate]) -> tuple[np.ndarray, np.ndarray]:
    """The standard errors below and above each input's value (all have an interval) that its
    own 95 % interval implies: (value - low) / Z95 and (high - value) / Z95; a Wilson interval
    near 100 % is short above, long below. Never negative."""
    values = np.array([value for value, _ in inputs], dtype=float)
    bounds = np.array([bounds for _, bounds in inputs], dtype=float).reshape(len(inputs), 2)
    below, above = values - bounds[:, 0], bounds[:, 1] - values
    return np.maximum(below, 0.0) / Z95, np.maximum(above, 0.0) / Z95


def split_normal_draws(inputs: Sequence[Estimate], draws: int = DRAWS) -> np.ndarray:
    """Seeded draws (draws x inputs) of inputs that all have an interval: each from a split
    normal, below its value a normal half with the standard error below (`spreads`), above it
    one with the standard error above, so each input's 2.5th and 97.5th percentiles are its
    own bounds."""
    below, above = spreads(inputs)
    z = _normals(draws, len(inputs))
    values = np.array([value for value, _ in inputs], dtype=float)
    return values + z * np.where(z < 0, below, above)


@cache
def _normals(draws: int, k: int) -> np.ndarray:
    """The seeded standard normal draws (draws x k), made once (read-only)."""
    z = np.random.default_rng(SEED).standard_normal((draws, k))
    z.flags.writeable = False
    return z


def statistic_interval(
    statistic: Statistic, inputs: Sequence[Estimate], tail: float = TAIL
) -> Interval | None:
    """The interval of a statistic of our numbers from its `tail` quantile to its 1 - `tail`
    one (default: its 95 % interval; `statistic_intervals`)."""
    intervals = statistic_intervals(statistic, inputs, (tail,))
    return None if intervals is None else intervals[0]


def statistic_intervals(
    statistic: Statistic,
    inputs: Sequence[Estimate],
    tails: Sequence[float],
) -> list[Interval] | None:
    """The intervals of a statistic of our numbers (`statistic` maps draws x inputs to draws),
    each from its `tail` quantile to its 1 - `tail` one, on each input's own asymmetric
    interval:
    - one input: the statistic at the input's split-normal quantiles (`split_normal_draws`), at
      2.5 % its own bounds: exact for a statistic monotone in it, as all of ours are;
    - several: the `tail` and 1 - `tail` percentiles of the statistic over their seeded
      split-normal draws.
    None when an input has no interval, or one of no width (a bootstrap whose items all score
    the same): holding it fixed would make the interval too narrow, so the claim is then not
    checkable; None too when no draw gives a finite statistic."""
    if not inputs or any(bounds is None or bounds[1] <= bounds[0] for _, bounds in inputs):
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        if len(inputs) == 1:
            ends = [_single_ends(statistic, inputs[0], tail) for tail in tails]
        else:
            values = statistic(split_normal_draws(inputs))
            values = values[np.isfinite(values)]
            if not len(values):
                return None
            percents = [100 * q for tail in tails for q in (tail, 1 - tail)]
            ends = list(np.percentile(values, percents).reshape(len(tails), 2))
    if not np.isfinite(ends).all():
        return None
    return [(round(float(low), 4), round(float(high), 4)) for low, high in ends]


def _single_ends(statistic: Statistic, single: Estimate, tail: float) -> np.ndarray:
    """A statistic of one input at the input's bounds at `tail` and 1 - `tail`, the smaller
    first: a count's exact ones (`Counted`), else its split-normal quantiles (its own bounds at
    2.5 %)."""
    if isinstance(single, Counted):
        low, high = single.bounds(tail)
    else:
        ((below,), (above,)), z = spreads([single]), NormalDist().inv_cdf(1 - tail)
        low, high = single[0] - z * below, single[0] + z * above
    values = statistic(np.array([[low], [high]]))
    return np.array([values.min(), values.max()])


def point(statistic: Statistic, inputs: Sequence[Estimate]) -> float:
    """The statistic of our numbers themselves."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(statistic(np.array([[value for value, _ in inputs]], dtype=float))[0])


def estimate(statistic: Statistic, inputs: Sequence[Estimate]) -> tuple[float, Interval | None]:
    """A statistic of our numbers and its 95 % interval (`statistic_interval`)."""
    return point(statistic, inputs), statistic_interval(statistic, inputs)


def judge(op: str, threshold: float, interval: Interval | None) -> str:
    """holds: the whole 95 % interval satisfies `op threshold` (so at the bound it reads holds
    2.5 % of the time); does not hold: none of it does; undecided: it lies across the threshold.
    A value alone never decides: without an interval the claim is not checkable."""
    if op not in OPS:
        raise ValueError(f"unknown op {op!r} ({', '.join(OPS)})")
    if interval is None:
        return NOT_CHECKABLE
    satisfied = [OPS[op](bound, threshold) for bound in interval]
    return HOLDS if all(satisfied) else FAILS if not any(satisfied) else UNDECIDED


def difference(x: np.ndarray) -> np.ndarray:
    """The first input minus the second (a part: our margin over one rival, one gap)."""
    return x[:, 0] - x[:, 1]


def lone(x: np.ndarray) -> np.ndarray:
    """The one input itself (a part: one length's score)."""
    return x[:, 0]


@dataclass(frozen=True)
class Part:
    """One part of a claim on the smallest of several parts ("over 95 % at every length", "above
    every baseline": our score at one length, our margin over one rival): its value, its 95 %
    interval and its interval at the Bonferroni level over the claim's k parts (2.5 %/k a
    side)."""

    name: str
    value: float
    interval: Interval | None
    corrected: Interval | None


def parts_of(named: Named) -> list[Part]:
    """Each named part's statistic of its inputs with its intervals (`statistic_intervals`)."""
    parts = []
    for name, (statistic, inputs) in named.items():
        both = statistic_intervals(statistic, inputs, (TAIL, TAIL / len(named)))
        interval, corrected = (None, None) if both is None else both
        parts.append(Part(name, point(statistic, inputs), interval, corrected))
    return parts


def lowest(parts: Sequence[Part]) -> Part:
    """The smallest part (the length we score least at, the rival we lead least): its value is
    the claim's, its 95 % interval the one a check of the claim reports."""
    return min(parts, key=lambda part: part.value)


def lowest_note(least: Part, parts: Sequence[Part]) -> str:
    """What a check's interval is of, where the claim has several parts (else nothing)."""
    if len(parts) < 2 or least.interval is None:
        return ""
    return f" (the interval: {least.name}, the lowest of {len(parts)})"


def judge_lowest(op: str, threshold: float, parts: Sequence[Part]) -> str:
    """A claim on the smallest of k parts, min_j m_j `op` `threshold`, judged as an
    intersection-union test on the parts m_j (each at 2.5 % one-sided):
    - `>` or `>=` ("above 95 % at every length", "we beat every rival"): holds only if every
      m_j's 95 % interval is wholly on the claimed side (`judge` of each holds); does not hold
      if some m_j's Bonferroni interval (2.5 %/k a side) is wholly off it; else undecided;
    - `<` or `<=` ("some rival is ahead of us"): the mirror, holds if some m_j's Bonferroni
      interval is wholly on the claimed side, does not hold only if every m_j's 95 % interval
      is wholly off it; else undecided.
    So neither verdict is wrong more than 2.5 % of the time with every part at the bound,
    however many tie (the minimum of noisy draws over the parts would be biased below each).
    Not checkable when a part has no interval; with one part, `judge` of it."""
    if op not in OPS:
        raise ValueError(f"unknown op {op!r} ({', '.join(OPS)})")
    if not parts or any(part.interval is None or part.corrected is None for part in parts):
        return NOT_CHECKABLE
    each = [judge(op, threshold, part.interval) for part in parts]
    some = [judge(op, threshold, part.corrected) for part in parts]
    if op in (">", ">="):  # every m_j on the claimed side
        if all(outcome == HOLDS for outcome in each):
            return HOLDS
        if any(outcome == FAILS for outcome in some):
            return FAILS
    else:  # some m_j on the claimed side
        if any(outcome == HOLDS for outcome in some):
            return HOLDS
        if all(outcome == FAILS for outcome in each):
            return FAILS
    return UNDECIDED


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
    """The checks as JSON, each with its outcome in the field's words (`field_verdict`)."""
    from memrepro.report.field_verdicts import claim_word

    rows = [asdict(c) | {"field_verdict": claim_word(c.outcome, c.detail)} for c in checks]
    write_json_atomic(path, rows)
    return path


# How a table claim's statistic combines the `of` row's cell (column 0) with the `against`
# rows' (columns 1...), on draws x rows, and how it is printed.
STATISTICS: dict[str, tuple[Statistic, str]] = {
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
    `statistic` with its 95 % interval from the cells' (`statistic_interval`), judged by `op`
    against `value` on that interval (`judge`; margin_over_best and gap_in_order part by part,
    PARTS and `judge_lowest`); not checkable where an input has no interval (Mem-α's memory
    sizes), its value still printed; the same statistic on the paper's own numbers beside."""
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
        interval, outcome, of = _judged(claim, statistic, ours)
        bound = f"(claim: {claim['op']} {claim['value']})"
        if interval is None:
            reason = NO_INTERVAL.get(str(claim["column"]).rsplit(".", 1)[-1], NO_INTERVAL[""])
            detail = f"not checkable, {reason}: {claim['statistic']} {style.format(value)} {bound}"
        else:
            detail = f"{claim['statistic']} {described(value, interval, style)}{of} {bound}"
        paper = _row_values(table, claim, "paper")
        if (printed := _combine(claim["statistic"], statistic, paper)) is not None:
            detail += f"; on the paper's own numbers {style.format(printed)}"
        checks.append(
            ClaimCheck(str(claim["id"]), text, claim["of"], value, outcome, detail, interval)
        )
    return checks


# Why a table claim has no interval, by its column's field (`avg.mem` -> "mem")
NO_INTERVAL = {
    "mem": "no interval: memory sizes are not sampled per instance in this run",
    "": "no interval: an input has none in this run",
}


def _judged(
    claim: Mapping[str, Any], statistic: Statistic, ours: Sequence[Estimate]
) -> tuple[Interval | None, str, str]:
    """A table claim's interval, outcome and what the interval is of: a statistic that is the
    smallest of several parts (PARTS) is judged part by part (`judge_lowest`) and reports the
    95 % interval of its lowest part, whose value is the statistic's; any other on its own
    interval."""
    op, threshold = claim["op"], float(claim["value"])
    if claim["statistic"] not in PARTS:
        interval = statistic_interval(statistic, ours)
        return interval, judge(op, threshold, interval), ""
    rows = [str(row) for row in [claim["of"], *claim["against"]]]
    parts = parts_of(PARTS[claim["statistic"]](rows, ours))
    least = lowest(parts)
    return least.interval, judge_lowest(op, threshold, parts), lowest_note(least, parts)


# The table statistics that are the smallest of several differences, by part: the `of` row's
# margin over each `against` row; each row's gap over the next.
PARTS: dict[str, Callable[[list[str], Sequence[Estimate]], Named]] = {
    "margin_over_best": lambda rows, x: {
        f"over {row}": (difference, [x[0], rival])
        for row, rival in zip(rows[1:], x[1:], strict=True)
    },
    "gap_in_order": lambda rows, x: {
        f"{a} over {b}": (difference, [above, below])
        for (a, above), (b, below) in pairwise(zip(rows, x, strict=True))
    },
}


def _combine(name: str, statistic: Statistic, values: Sequence[Estimate] | None) -> float | None:
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
    gives their mean; a right/wrong cell its count (`Counted`); None if one is missing."""
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
        if sampled and len(found) == 1 and found[0].right_wrong:  # k/n: exact at any level
            values.append(Counted(round(numbers[0] * found[0].n_scored / 100), found[0].n_scored))
            continue
        interval = mean_interval(numbers, bounds) if sampled else None  # type: ignore[arg-type]
        values.append((sum(numbers) / len(numbers), interval))
    return values
