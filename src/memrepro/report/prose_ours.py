"""The papers' sentences judged on our score tables' cells, where no table or figure of ours
checks them itself: each number a sentence rests on is read from the cell of ours that stands
for it (memrepro.config.prose_claims.our_cells), with its 95 % interval, and the sentence's own
arithmetic is judged on those intervals (memrepro.report.claims).

How a sentence's k cases are judged, for each of our systems of a claimed row (on the cases
that claim its row: each model's own drop, every column of a margin):
- each case is its statistic (a difference, a relative drop, a ratio, a value), or for a margin
  over rivals one part per rival (the case holds only if every part does);
- holds: at least the needed cases (all, or the share `holds_in`) hold, each part's interval
  wholly on the claimed side, at 2.5 % a side (all needed) or 2.5 %/k (a share);
- does not hold: more cases fail than the share allows, a part failing on its interval at
  2.5 %/P a side (P: all parts of all cases);
- so neither verdict errs more than 2.5 % with every part at the bound (Bonferroni, conservative
  where parts are correlated); otherwise undecided.
A number with no cell of ours, or a cell without an interval, leaves the sentence not
checkable, its value still shown."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memrepro.report.cells import NOT_COMPARABLE
from memrepro.report.claims import (
    FAILS,
    HOLDS,
    NOT_CHECKABLE,
    TAIL,
    UNDECIDED,
    Estimate,
    Statistic,
    described,
    point,
    statistic_intervals,
)
from memrepro.scoring.intervals import Interval, mean_interval

REPORTED = "reported"  # a sentence with no bound: our value shown, not judged
Cells = Mapping[str, Sequence[Mapping[str, str]]]  # a table's name -> its CSV rows
Intervals = dict[tuple[str, str], Interval | None]  # each part's 95 % interval by (case, part)

# a case's statistic on draws x inputs (the claimed cell first), by the sentence's `compute`
STATISTICS: dict[str, Statistic] = {
    "difference": lambda x: x[:, 0] - x[:, 1],
    "relative_drop": lambda x: 100 * (x[:, 0] - x[:, 1]) / x[:, 0],
    "ratio": lambda x: x[:, 0] / x[:, 1],
    "value": lambda x: x[:, 0],
}
JUDGED = {
    "<": lambda r, v: r < v,
    "<=": lambda r, v: r <= v,
    ">": lambda r, v: r > v,
    ">=": lambda r, v: r >= v,
    "within": lambda r, v: v[0] <= r <= v[1],
}


@dataclass(frozen=True)
class Part:
    """One part of a case on our numbers: its statistic, its inputs and whether any input is a
    machinery-only cell (a model that cannot reproduce the papers)."""

    name: str
    statistic: Statistic
    inputs: tuple[Estimate, ...]
    machinery: bool


def on_our_cells(claim: Mapping[str, Any], cells: Cells) -> str:
    """Our systems' verdicts on the sentence, 'system: outcome (case: value [interval]; ...)',
    or why none: no bound, no table of ours, a table not in this run."""
    cases = claim["cases"]
    if not cases or "ours_at" not in cases[0]:
        return "no check on our numbers"
    if claim.get("op") in ("==", "!="):
        return "not judged on ours: it compares two of the paper's printed cells"
    missing = [c["label"] for c in cases if None in c["ours_at"]]
    if missing:
        return f"not checkable: no table of ours holds {', '.join(missing)}"
    absent = sorted({at["table"] for c in cases for at in c["ours_at"]} - set(cells))
    if absent:
        return f"{', '.join(absent)} not part of this run"
    systems = _claimed_systems(cases, cells)
    if not systems:
        return "not checkable: this run has no system of the claimed row"
    return "; ".join(f"{system}: {_judged(claim, system, row, cells)}" for system, row in systems)


def _claimed_systems(cases: Sequence[Mapping[str, Any]], cells: Cells) -> list[tuple[str, str]]:
    """Our systems shown for one of the claimed rows (each case's first `of` numbers), with
    their paper row."""
    found = {}
    for case in cases:
        for at in case["ours_at"][: case["of"]]:
            names = {name.casefold() for name in at["rows"]}
            for row in cells[at["table"]]:
                if row.get("paper_row", "").casefold() in names:
                    found.setdefault(row["system"], row["paper_row"])
    return list(found.items())


def _claims_row(at: Mapping[str, Any], paper_row: str) -> bool:
    return paper_row.casefold() in {name.casefold() for name in at["rows"]}


def _judged(claim: Mapping[str, Any], system: str, paper_row: str, cells: Cells) -> str:
    """One system's verdict on the cases that claim its paper row (each model's own drop; every
    column of a margin, where the case claims several rows)."""
    mine = [
        c
        for c in claim["cases"]
        if any(_claims_row(at, paper_row) for at in c["ours_at"][: c["of"]])
    ]
    cases = {c["label"]: _parts(claim, c, system, paper_row, cells) for c in mine}
    lacking = list(dict.fromkeys(parts for parts in cases.values() if isinstance(parts, str)))
    if lacking:
        return f"{NOT_CHECKABLE} (this run has no cell of ours for {', '.join(lacking)})"
    found = {label: parts for label, parts in cases.items() if not isinstance(parts, str)}
    if "op" not in claim:
        return f"{REPORTED} ({_values(found, _intervals(found))})"
    if claim["compute"] == "margin" and claim["op"] not in (">", ">="):
        return f"{NOT_CHECKABLE} (a margin is judged above a bound only)"
    outcome, intervals = judge_cases(claim["op"], claim["value"], found, _needed(claim, found))
    if any(part.machinery for parts in found.values() for part in parts):
        outcome = f"{NOT_CHECKABLE}, not comparable (machinery check only)"
    return f"{outcome} ({_values(found, intervals)})"


def _needed(claim: Mapping[str, Any], cases: Mapping[str, Any]) -> int:
    return math.ceil(float(claim.get("holds_in", 1.0)) * len(cases) - 1e-9)


def _parts(
    claim: Mapping[str, Any], case: Mapping[str, Any], system: str, paper_row: str, cells: Cells
) -> list[Part] | str:
    """The case's parts for one of our systems: its own cell at the claimed row's number, each
    other number from its row's cells (its own, where the row is the system's; else the mean of
    our systems of that row); a margin's rivals (the numbers after `of`) one part each. Where a
    number has no cell of ours: that number ('RL-MEMAGENT-14B @ 25600')."""
    ats, of = case["ours_at"], case["of"]
    own = next(at for at in ats[:of] if _claims_row(at, paper_row))
    claimed = _cell(cells, own, system)
    others = [_cell(cells, at, system if at["rows"] == own["rows"] else None) for at in ats[of:]]
    missing = [at for at, found in zip(ats[of:], others, strict=True) if found is None]
    if claimed is None or missing:
        return ", ".join(_named(at) for at in missing or [own])
    if claim["compute"] == "margin":
        names = [f"over {at['rows'][0]}" for at in ats[of:]]
        pairs = [(name, (claimed, other)) for name, other in zip(names, others, strict=True)]
        return [_part(name, STATISTICS["difference"], inputs) for name, inputs in pairs]
    return [_part(case["label"], STATISTICS[claim["compute"]], (claimed, *others))]


def _named(at: Mapping[str, Any]) -> str:
    return f"{at['rows'][0]} @ {'/'.join(at['steps'])}"


Found = tuple[Estimate, bool]  # a number of ours with its interval, and machinery-only or not


def _part(name: str, statistic: Statistic, inputs: Sequence[Found]) -> Part:
    estimates = tuple(estimate for estimate, _ in inputs)
    return Part(name, statistic, estimates, any(machinery for _, machinery in inputs))


def _rows(cells: Cells, at: Mapping[str, Any]) -> list[Mapping[str, str]]:
    """The CSV rows of our systems at a paper number (its row by any of its names, case aside:
    the arXiv version prints RL-MemAgent-14B; its steps in any order) that have a value."""
    names = {name.casefold() for name in at["rows"]}
    steps = sorted(at["steps"])
    return [
        row
        for row in cells[at["table"]]
        if row.get("paper_row", "").casefold() in names
        and sorted(row.get("paper_at", "").split("/")) == steps
        and row.get("ours", "") != ""
    ]


def _cell(cells: Cells, at: Mapping[str, Any], system: str | None) -> Found | None:
    """The number of ours at a paper number: `system`'s own cell, or (None) the mean of every
    system of that row with its interval (mean_interval); None where there is none."""
    rows = [r for r in _rows(cells, at) if system is None or r["system"] == system]
    if not rows:
        return None
    values = [float(r["ours"]) for r in rows]
    bounds = [_interval(r) for r in rows]
    machinery = any(r.get("verdict") == NOT_COMPARABLE for r in rows)
    if any(b is None for b in bounds):
        return (sum(values) / len(values), None), machinery
    if len(rows) == 1:
        return (values[0], bounds[0]), machinery
    return (sum(values) / len(values), mean_interval(values, bounds)), machinery  # type: ignore[arg-type]


def _interval(row: Mapping[str, str]) -> Interval | None:
    if row.get("ci_low", "") == "" or row.get("ci_high", "") == "":
        return None
    return (float(row["ci_low"]), float(row["ci_high"]))


def judge_cases(
    op: str, value: Any, cases: Mapping[str, Sequence[Part]], needed: int
) -> tuple[str, Intervals]:
    """A sentence's outcome from its cases' parts (the module's rule), and each part's 95 %
    interval by (case, part)."""
    k, total = len(cases), sum(len(parts) for parts in cases.values())
    hold_tail = TAIL if needed == k else TAIL / k
    fail_tail = TAIL / total
    held = failed = 0
    intervals: Intervals = {}
    for label, parts in cases.items():
        outcomes = []
        for part in parts:
            found = statistic_intervals(part.statistic, part.inputs, (TAIL, hold_tail, fail_tail))
            intervals[label, part.name] = None if found is None else found[0]
            if found is not None:
                outcomes.append((_side(op, value, found[1]), _side(op, value, found[2])))
        held += all(hold == HOLDS for hold, _ in outcomes)
        failed += any(fail == FAILS for _, fail in outcomes)
    if None in intervals.values():
        return NOT_CHECKABLE, intervals
    if held >= needed:
        return HOLDS, intervals
    if failed > k - needed:
        return FAILS, intervals
    return UNDECIDED, intervals


def _side(op: str, value: Any, interval: Interval) -> str:
    """holds: the whole interval meets `op value`; does not hold: none of it does (for
    `within`, it lies wholly outside the range); else undecided."""
    if op not in JUDGED:
        raise ValueError(f"unknown op {op!r} ({', '.join(JUDGED)})")
    met = [JUDGED[op](bound, value) for bound in interval]
    if all(met):
        return HOLDS
    if op == "within":  # both ends outside the range may still straddle it
        outside = interval[1] < value[0] or interval[0] > value[1]
        return FAILS if outside else UNDECIDED
    return UNDECIDED if any(met) else FAILS


def _intervals(cases: Mapping[str, Sequence[Part]]) -> Intervals:
    """Each part's 95 % interval by (case, part) (None: an input has none)."""
    found: Intervals = {}
    for label, parts in cases.items():
        for part in parts:
            both = statistic_intervals(part.statistic, part.inputs, (TAIL,))
            found[label, part.name] = None if both is None else both[0]
    return found


def _values(cases: Mapping[str, Sequence[Part]], intervals: Intervals) -> str:
    """Each case's value with its 95 % interval (a margin's: its smallest part's)."""
    shown = []
    for label, parts in cases.items():
        values = {part.name: point(part.statistic, part.inputs) for part in parts}
        least = min(values, key=lambda name: values[name])
        text = described(values[least], intervals.get((label, least)), "{:.3g}")
        shown.append(f"{label}: {text}" + (f", {least}" if len(parts) > 1 else ""))
    return "; ".join(shown)
