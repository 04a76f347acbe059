"""MemAgent's claims checked on our RULER and RULER-HQA records (config/paper/memagent.yaml
`figure1.claims`, `niah.claims`, `ood.claims`: the per-length mean of a panel, its minimum or its
drop, against a bound or a rival) and the RL ablation's claims on its panels; judged by
memrepro.report.claims, printed under the figures that show them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from memrepro.benchmarks import benchmark as benchmark_of
from memrepro.report.cells import AVG
from memrepro.report.claims import (
    NOT_CHECKABLE,
    ClaimCheck,
    Counted,
    Estimate,
    Named,
    described,
    difference,
    estimate,
    judge,
    judge_lowest,
    lone,
    lowest,
    lowest_note,
    parts_of,
)
from memrepro.report.memagent_figures import (
    ROLE_LABELS,
    RULER,
    average_panel_tasks,
    ruler_records,
    task_mean,
)
from memrepro.report.memagent_tables import NIAH_TASKS, token_label
from memrepro.report.records import Key
from memrepro.report.render import length_label
from memrepro.report.rows import Systems
from memrepro.scoring.intervals import Interval


def check_claims(
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    claims: Sequence[Mapping[str, Any]],
    *,
    average_tasks: Sequence[str] | None = None,
    niah_tasks: Sequence[str] = NIAH_TASKS,
    benchmark: str = RULER,
) -> list[ClaimCheck]:
    """Check the paper's claims on our metrics records of `benchmark` (RULER's, or RULER-HQA's
    for Figure 1: see `_check_claims`); the "average" panel is over `average_tasks` (default:
    as the OOD figure's)."""
    specs, found = ruler_records(records, systems, benchmark)
    average = average_panel_tasks(found, average_tasks)
    return _check_claims(
        found, specs, claims, average_tasks=average, niah_tasks=niah_tasks, benchmark=benchmark
    )


# A records claim's statistic over the per-length means, on draws x lengths. "min" is judged
# length by length (memrepro.report.claims.judge_lowest), and is the only one against rivals: the
# smallest of our margins over each rival at each length, over the best rival at the worst one.
LENGTH_STATISTICS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "min": lambda x: x.min(axis=1),
    "drop": lambda x: x[:, 0] - x[:, -1],  # the first length minus the last
}


def _check_claims(
    found: Mapping[Key, Mapping[str, Any]],
    specs: Mapping[str, Mapping[str, Any]],
    claims: Sequence[Mapping[str, Any]],
    *,
    average_tasks: Sequence[str] = (),
    niah_tasks: Sequence[str] = NIAH_TASKS,
    benchmark: str = RULER,
) -> list[ClaimCheck]:
    """Check each claim (config/paper/memagent.yaml `niah.claims`, `ood.claims`,
    `figure1.claims`) on every system whose paper_row is among the claim's `rows`: the
    per-length mean over the claim's `panel` ("average" = `average_tasks`, "niah_mean" =
    `niah_tasks`, else one task), then `statistic` ("min" over the lengths in range, "drop" =
    first minus last) with its 95 % interval, judged by `op` against `value` on that interval
    (memrepro.report.claims.judge: not checkable without one). "min" is judged length by length
    (memrepro.report.claims.judge_lowest: "> 95" holds only if it does at every length) and reports
    the 95 % interval at its lowest length. With `against` ("min" only), on our margin over each
    system of those paper rows at each length: the value is the smallest, over the best rival at
    the worst length, with that margin's interval; it holds only if every margin does."""
    checks = []
    for claim in claims:
        claim_id, text = str(claim["id"]), " ".join(str(claim["text"]).split())
        if "statistic" not in claim:
            checks.append(ClaimCheck(claim_id, text, None, None, NOT_CHECKABLE, NO_NUMBER))
            continue
        if claim["statistic"] not in LENGTH_STATISTICS:
            raise ValueError(
                f"claim {claim_id!r}: unknown statistic {claim['statistic']!r} "
                f"({', '.join(LENGTH_STATISTICS)})"
            )
        if claim.get("against") and claim["statistic"] != "min":
            raise ValueError(
                f"claim {claim_id!r}: a claim against rivals takes statistic 'min' "
                f"(the margin over the best rival at the worst length), not {claim['statistic']!r}"
            )
        panel = claim["panel"]
        tasks = {"average": tuple(average_tasks), "niah_mean": tuple(niah_tasks)}.get(
            panel, (panel,)
        )
        matched = [sid for sid, spec in specs.items() if spec.get("paper_row") in claim["rows"]]
        for sid in matched:
            checks.append(_check_one(claim, claim_id, text, found, specs, sid, tasks, benchmark))
        if not matched:
            checks.append(
                ClaimCheck(claim_id, text, None, None, NOT_CHECKABLE, "no system of its rows")
            )
    return checks


NO_NUMBER = "no number to check"


def _check_one(
    claim: Mapping[str, Any],
    claim_id: str,
    text: str,
    found: Mapping[Key, Mapping[str, Any]],
    specs: Mapping[str, Mapping[str, Any]],
    sid: str,
    tasks: Sequence[str],
    benchmark: str,
) -> ClaimCheck:
    low, high = (int(n) for n in claim["lengths"])
    name = token_label if benchmark_of(benchmark).length_unit == "tokens" else str
    span = f"{name(low)}–{name(high)}" if low != high else name(low)
    display = specs[sid]["display"]
    rivals = [s for s, spec in specs.items() if spec.get("paper_row") in claim.get("against", ())]
    if claim.get("against") and not rivals:
        rows = ", ".join(claim["against"])
        return ClaimCheck(claim_id, text, display, None, NOT_CHECKABLE, f"no system of {rows}")
    series = [_length_series(found, s, tasks, low, high, benchmark) for s in [sid, *rivals]]
    if any(s is None for s in series):
        detail = f"not all of {span} run on {len(tasks)} task(s)"
        return ClaimCheck(claim_id, text, display, None, NOT_CHECKABLE, detail)
    ours, *others = [s for s in series if s is not None]
    lengths = [n for n, _ in ours]
    if any([n for n, _ in other] != lengths for other in others):
        detail = f"the rivals do not run the same lengths of {span}"
        return ClaimCheck(claim_id, text, display, None, NOT_CHECKABLE, detail)
    op, threshold = claim["op"], float(claim["value"])
    if claim["statistic"] == "min":
        theirs = [(specs[r]["display"], o) for r, o in zip(rivals, others, strict=True)]
        parts = parts_of(_min_parts(ours, theirs, name))
        least = lowest(parts)
        value, interval = least.value, least.interval
        outcome = judge_lowest(op, threshold, parts)
        of = lowest_note(least, parts)
    else:  # no rivals: checked by _check_claims
        statistic = LENGTH_STATISTICS[claim["statistic"]]
        value, interval = estimate(statistic, [e for _, e in ours])
        outcome, of = judge(op, threshold, interval), ""
    over = f" of the margin over {', '.join(claim['against'])}" if others else ""
    detail = (
        f"{claim['statistic']}{over} over {span} = {described(value, interval)}{of} "
        f"(claim: {op} {threshold:g})"
    )
    return ClaimCheck(claim_id, text, display, value, outcome, detail, interval)


Series = list[tuple[int, Estimate]]  # a system's per-length means with their intervals


def _min_parts(
    ours: Series, theirs: Sequence[tuple[str, Series]], label: Callable[[int], str]
) -> Named:
    """The parts of a "min" claim (memrepro.report.claims.judge_lowest): our mean at each length,
    or, against rivals, our margin over each rival at each length."""
    if not theirs:
        return {f"at {label(n)}": (lone, [mean]) for n, mean in ours}
    return {
        f"over {rival} at {label(n)}": (difference, [mean, other])
        for rival, series in theirs
        for (n, mean), (_, other) in zip(ours, series, strict=True)
    }


def _length_series(
    found: Mapping[Key, Mapping[str, Any]],
    sid: str,
    tasks: Sequence[str],
    low: int,
    high: int,
    benchmark: str,
) -> Series | None:
    """The system's complete per-length means over `tasks` from `low` to `high`, with their
    intervals; None unless both ends and every length between are complete."""
    lengths = sorted({k[3] for k in found if k[2] == sid and k[1] in tasks and low <= k[3] <= high})
    if not lengths or lengths[0] != low or lengths[-1] != high:
        return None
    series: Series = []
    for n in lengths:
        value, interval, partial = task_mean(found, sid, tasks, n, benchmark)
        if value is None or partial:
            return None
        records = [found[(benchmark, task, sid, n)] for task in tasks]
        series.append((n, counted(records) or (value, interval)))
    return series


def counted(records: Sequence[Mapping[str, Any]]) -> Counted | None:
    """The tasks' mean accuracy as one count (`Counted`: exact bounds at any level) where every
    task's accuracy is right/wrong over the same number of items, so the mean of their rates is
    the pooled rate; None otherwise (the mean keeps its combined interval, or none)."""
    if not all(_right_wrong_accuracy(record) for record in records):
        return None  # graded, or no interval: the mean keeps what it has
    sizes = {int(record["n_items"]) for record in records}
    if len(sizes) != 1:
        return None  # unequal tasks: the mean of their rates is no pooled count
    (n,) = sizes
    right = sum(round(float(record["accuracy"]) * n / 100) for record in records)
    return Counted(right, n * len(records))


def _right_wrong_accuracy(record: Mapping[str, Any]) -> bool:
    has_interval = record.get("ci95", {}).get("accuracy") is not None
    return has_interval and "accuracy" in record.get("right_wrong", ())


def check_ablation_claims(
    panels: Mapping[str, pd.DataFrame], claims: Sequence[Mapping[str, Any]]
) -> list[ClaimCheck]:
    """Each claim (config/paper/memagent.yaml `rl_ablation.claims`) on every group: `gain` = the
    mean over the columns both have of `of[0]` minus `of[1]` (roles), `drop` = `of[0]` at its
    first column minus its last, each with its 95 % interval from the cells'; judged by `op`
    against `value` when the claim has a number, else only reported. Average columns (AVG) are
    left out: they are means of the others."""
    checks = []
    for claim in claims:
        claim_id, text = str(claim["id"]), " ".join(str(claim["text"]).split())
        for group, panel in panels.items():
            value, interval, detail = _ablation_statistic(claim, panel)
            outcome = NOT_CHECKABLE
            if value is not None and "op" in claim:
                outcome = judge(claim["op"], float(claim["value"]), interval)
                detail += f" (claim: {claim['op']} {float(claim['value']):g})"
            elif value is not None:
                detail += " (the paper gives no number: reported, not judged)"
            checks.append(ClaimCheck(claim_id, text, group, value, outcome, detail, interval))
    return checks


def _ablation_statistic(
    claim: Mapping[str, Any], panel: pd.DataFrame
) -> tuple[float | None, Interval | None, str]:
    roles = [ROLE_LABELS[role] for role in claim["of"]]
    columns = [c for c in panel.columns if c != AVG]
    cells = {role: {c: panel.loc[role, c] for c in columns} for role in roles}
    if claim["statistic"] == "gain":
        first, second = roles
        shared = [c for c in columns if None not in (cells[first][c].ours, cells[second][c].ours)]
        if not shared:
            return None, None, f"{first} and {second} share no column"
        inputs = [_estimate(cells[role][c]) for role in (first, second) for c in shared]
        k = len(shared)

        def gain(x: np.ndarray) -> np.ndarray:
            return (x[:, :k] - x[:, k:]).mean(axis=1)

        value, interval = estimate(gain, inputs)
        mean = f"mean over {k} column(s) = {described(value, interval, '{:+.1f}')}"
        return value, interval, f"{first} minus {second}, {mean}"
    if claim["statistic"] == "drop":
        (role,) = roles
        present = [c for c in columns if cells[role][c].ours is not None]
        if len(present) < 2:
            return None, None, f"{role}: fewer than two columns"
        inputs = [_estimate(cells[role][c]) for c in (present[0], present[-1])]
        value, interval = estimate(LENGTH_STATISTICS["drop"], inputs)
        span = f"{length_label(panel, present[0])} to {length_label(panel, present[-1])}"
        return value, interval, f"{role}: {span} drop = {described(value, interval)}"
    raise ValueError(f"claim {claim['id']!r}: unknown statistic {claim['statistic']!r}")


def _estimate(cell: Any) -> Estimate:
    return float(cell.ours), cell.ci
