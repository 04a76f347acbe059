"""Our score against the paper's as a two-sample comparison: both carry sampling error.

A cell compares our mean over n items with the paper's printed number over its n_paper items
(the same benchmark, another sample of model outputs). The difference ours − paper gets an
interval that carries both errors, on the design the data has (`design`):

- `items`, right/wrong: Newcombe's hybrid score interval for a difference of two proportions
  (Newcombe 1998, method 10: the two Wilson intervals combined), the paper's successes taken as
  round(p_paper · n_paper);
- `items`, graded (an F1, a table's average): the normal interval of the difference. The paper
  prints no spread of its own, so both sides get the per-item spread ours implies, taken at the
  two sides' pooled mean (pooled under the null, as a two-proportion z-test pools: `null_spread`):
  a score with many zeros has a spread that shrinks with its mean, so a spread read at our mean
  alone is too small exactly when ours is low by chance, flagging one tail too often;
- `fixed instances` (Mem-α): both sides answer the same released instances, so only the
  questions within each instance vary: our interval resamples questions within the fixed
  instances (memrepro.scoring.intervals.fixed_instances_interval) and the paper's side has the
  same design, hence the same spread;
- `instances resampled` (Mem-α, where the instances differ, e.g. a subset of them): the
  two-level interval, instances then their questions;
- the paper's n unknown: our error alone (our interval shifted by the paper's number), said so.

Three outcomes, and why a cell has none:
- `differs` (above or below): the 95 % interval of the difference excludes 0 (p < 0.05, the
  two-sided p-value of the same test, `Comparison.p_value`);
- `reproduced` within ±δ: two one-sided tests at 5 %, i.e. the 90 % interval lies inside ±δ;
- `consistent`: neither; no difference shown and no agreement shown.
*differs* wins when both hold (thousands of items and a true gap smaller than δ: the gap is
real, and small). A cell over fewer than MIN_ITEMS sampled units, or whose interval has no
width, reads *too few items*: shown, never judged (memrepro.report.cells).

Each comparison also states the smallest difference its n could detect (two-sided 5 %, 80 %
power), so a reader sees why a cell is only `consistent`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from memrepro.scoring.intervals import Z95, Interval, wilson_bounds

Z90 = 1.6448536269514722  # two-sided 90 %: the TOST at 5 % each side
Z_POWER80 = 0.8416212335729143
DIFFERS_ABOVE, DIFFERS_BELOW = "differs above", "differs below"
REPRODUCED, CONSISTENT = "reproduced", "consistent"
DEFAULT_MARGIN = 5.0  # ±δ in points: report.equivalence_margin's default
OUTCOMES = (REPRODUCED, CONSISTENT, DIFFERS_ABOVE, DIFFERS_BELOW)
ALPHA = 0.05  # a cell's two-sided level: a perfect reproduction differs in 5 % of cells
# Below this many sampled units (items; a Mem-α cell's questions) no cell is judged: the normal
# and bootstrap approximations behind its interval do not hold, and one item decides nothing.
MIN_ITEMS = 10
# Below this many instances the two-level interval (instances resampled) does not cover the
# population of instances: at 1-2 instances its spread between instances is a guess.
MIN_INSTANCES = 3
# Below this many units above 0, a graded cell (an F1, a ROUGE) is not judged either: its spread
# rests on those few values: with 80-92 % zeros at n 10-50 the low tail read *differs* in up to
# 5.6 % of perfect reproductions, and at most 2.5 % a tail with this rule (seeded simulations:
# memrepro.scoring.calibration.sparse_graded_table).
MIN_NONZERO = 5


def too_sparse(right_wrong: bool, n_nonzero: int | None) -> bool:
    """A graded score with fewer than MIN_NONZERO sampled units above 0 (None: not recorded)."""
    return not right_wrong and n_nonzero is not None and n_nonzero < MIN_NONZERO


# The designs a comparison can have (the CSV's `design` column).
ITEMS = "items"
FIXED_INSTANCES = "fixed instances"
INSTANCES_RESAMPLED = "instances resampled"
OURS_ALONE = "ours alone"
PERCENT = (0.0, 100.0)  # a score's scale
DIFFERENCE = (-100.0, 100.0)  # a difference of two scores' scale (MemAgent's Table 4)


@dataclass(frozen=True)
class Comparison:
    """Ours − paper, in points of %."""

    outcome: str
    difference: float
    ci95: Interval
    ci90: Interval
    detectable: float  # the smallest |difference| found at 80 % power
    delta: float  # the equivalence margin
    paper_n: int | None
    p_value: float = 1.0  # two-sided, of "no difference": below ALPHA exactly when it differs
    design: str = ITEMS
    grid_note: str = ""  # the paper's number is no k/n of its n
    design_note: str = ""  # why the design is what it is, where a reader would ask

    @property
    def note(self) -> str:
        unknown = "paper n unknown: our sampling error alone" if self.paper_n is None else ""
        return "; ".join(note for note in (unknown, self.grid_note, self.design_note) if note)


def outcome(ci95: Interval, ci90: Interval, delta: float) -> str:
    """The three outcomes from the intervals of the difference (*differs* first: it wins)."""
    if ci95[0] > 0:
        return DIFFERS_ABOVE
    if ci95[1] < 0:
        return DIFFERS_BELOW
    if -delta < ci90[0] and ci90[1] < delta:
        return REPRODUCED
    return CONSISTENT


def compare_proportions(
    successes: int, n: int, paper_percent: float, paper_n: int | None, delta: float
) -> Comparison:
    """Our successes/n against the paper's percentage over paper_n right/wrong items."""
    _check(n, paper_percent, paper_n, delta)
    if isinstance(successes, bool) or not isinstance(successes, int) or not 0 <= successes <= n:
        raise ValueError(f"successes must be a whole number within 0..{n}, got {successes!r}")
    paper = paper_percent / 100
    if paper_n is None:  # ours alone: our interval shifted by the paper's number

        def at(z: float) -> tuple[float, float]:
            return _shift(wilson_bounds(successes, n, z), paper)

    else:
        paper_successes = round(paper * paper_n)

        def at(z: float) -> tuple[float, float]:
            return _newcombe(successes, n, paper_successes, paper_n, z)

    return _comparison(
        successes / n - paper,
        at(Z95),
        at(Z90),
        detectable_difference(paper, n, paper_n),
        delta,
        paper_n,
        _inverted_p_value(at),
        ITEMS if paper_n else OURS_ALONE,
        off_grid_note(paper_percent, paper_n),
    )


def ours_alone_differs_rate(ratio: float = 1.0) -> float:
    """How often a perfect reproduction reads *differs* when the paper's n is unknown and only
    our error is counted: ours − paper has variance se²·(1 + ratio), with ratio = our n over the
    paper's, so |z| > 1.96 with probability 2Φ(−1.96 / √(1 + ratio)): 5 % only as the paper's
    n grows without bound, 16.6 % where it equals ours."""
    if not (math.isfinite(ratio) and ratio >= 0):
        raise ValueError(f"need a finite ratio >= 0, got {ratio!r}")
    return math.erfc(Z95 / math.sqrt(1 + ratio) / math.sqrt(2))


def off_grid_note(paper_percent: float, paper_n: int | None) -> str:
    """Why a right/wrong cell's paper number cannot be k/n of its n at the decimals it is
    printed with ('' where it can): the n or the number is misprinted, or the paper dropped
    items (e.g. failed requests) from its denominator."""
    if paper_n is None:
        return ""
    nearest = round(paper_percent * paper_n / 100)
    rate = 100 * nearest / paper_n
    if abs(rate - paper_percent) <= _printed_precision(paper_percent):
        return ""
    return (
        f"the paper's {paper_percent:g} is no k/{paper_n} (nearest {nearest}/{paper_n} = "
        f"{rate:.2f}): its n, its number or its denominator differs from the stated one"
    )


def _printed_precision(value: float) -> float:
    """Half a unit of the last decimal a number is written with (79.69: 0.005)."""
    text = repr(float(value))
    decimals = 0 if "e" in text else len(text.partition(".")[2].rstrip("0"))
    return 0.5 * 10.0**-decimals + 1e-9


def detectable_difference(paper: float, n: int, paper_n: int | None) -> float:
    """The smallest true difference (a rate, either direction, the harder one) that two samples
    of n and paper_n right/wrong items show as `differs` with 80 % power at a rate `paper`: the
    usual two-proportion sample-size relation solved for the difference."""
    inverse_paper_n = 1 / paper_n if paper_n else 0.0

    def solve(sign: int) -> float:
        d = 0.1
        for _ in range(50):
            ours = min(1.0, max(0.0, paper + sign * d))
            weight = n / (n + paper_n) if paper_n else 1.0
            pooled = weight * ours + (1 - weight) * paper
            null = math.sqrt(max(pooled * (1 - pooled), 0.25 / n) * (1 / n + inverse_paper_n))
            spread = ours * (1 - ours) / n + paper * (1 - paper) * inverse_paper_n
            d = Z95 * null + Z_POWER80 * math.sqrt(max(spread, 0.25 / n**2))
        return d

    return max(solve(+1), solve(-1))


def compare_graded(
    mean: float,
    se: float,
    n: int,
    paper_percent: float,
    paper_n: int | None,
    delta: float,
    *,
    scale: tuple[float, float] = PERCENT,
    design: str = ITEMS,
) -> Comparison:
    """Our graded score (`mean` ± standard error `se`, on `scale`, over n sampled units) against
    the paper's number over paper_n: the normal interval of the difference, the paper's spread
    taken as ours scaled to its n, both at the pooled mean (`null_spread`; a difference of two
    scores, scale DIFFERENCE, keeps ours). `design` names how `se` was sampled (fixed
    instances: the paper's side has the same instances, so paper_n = n)."""
    _check(n, paper_percent, paper_n, delta, scale)
    if not (math.isfinite(mean) and scale[0] <= mean <= scale[1]):
        raise ValueError(f"our score {mean!r} is not within {scale[0]:g}..{scale[1]:g}")
    if not (math.isfinite(se) and se >= 0):
        raise ValueError(f"a standard error must be a number >= 0, got {se!r}")
    pooled = scale == PERCENT
    ours = null_spread(mean, paper_percent, se, n, paper_n, design) if pooled else se
    spread = ours / 100 * math.sqrt(1 + (n / paper_n if paper_n else 0))
    difference = (mean - paper_percent) / 100

    def at(z: float) -> tuple[float, float]:
        return difference - z * spread, difference + z * spread

    p_value = (
        math.erfc(abs(difference) / spread / math.sqrt(2)) if spread else float(not difference)
    )
    return _comparison(
        difference,
        at(Z95),
        at(Z90),
        (Z95 + Z_POWER80) * spread,
        delta,
        paper_n,
        p_value,
        design if paper_n else OURS_ALONE,
    )


def null_spread(
    mean: float,
    paper_percent: float,
    se: float,
    n: int,
    paper_n: int | None,
    design: str = ITEMS,
) -> float:
    """Our standard error carried to the two sides' pooled mean m0 (pooled under the null, as
    the two-proportion z-test pools). For n items in [0, 1] the variance at mean m is c·m − m²,
    with c = E[x²] / E[x] read from ours (n·se², Bessel-corrected, plus m², over m): for
    right/wrong items c = 1 and this is the pooled binomial variance; for a graded score with
    many zeros c is set by the non-zero items alone, so the spread no longer shrinks with ours
    when ours is low by chance. Never below our own spread: where the paper's mean lies beyond
    what our items can reach (c·m0 − m0² ≤ 0: ours 15 from items of 0 and 0.3 against the
    paper's 60), the model has no variance left, and a zero-width interval would judge on
    nothing. Instances' means (whose se is no spread of n items) scale by the binomial form,
    se · sqrt(m0(1 − m0) / m(1 − m)). Ours alone (paper n unknown), or ours at 0 or 100 (an
    interval that is no spread of items: the Wilson fallback), keep `se`."""
    m, p = mean / 100, paper_percent / 100
    if not paper_n or m * (1 - m) <= 0:
        return se
    pooled = (n * m + paper_n * p) / (n + paper_n)
    if design != ITEMS or n < 2:
        return se * math.sqrt(pooled * (1 - pooled) / (m * (1 - m)))
    own_variance = n * (se / 100) ** 2 * n / (n - 1)
    second_moment = own_variance + m * m
    variance = second_moment / m * pooled - pooled * pooled
    return 100 * math.sqrt(max(variance, own_variance) / n)


def standard_error(ci95: Interval) -> float:
    """The standard error a 95 % interval implies (its half-width over 1.96), in its units."""
    return (ci95[1] - ci95[0]) / (2 * Z95)


def _inverted_p_value(interval: Callable[[float], tuple[float, float]]) -> float:
    """The two-sided p-value of an interval family (bounds at the two-sided level of z): the
    level whose interval just touches 0, found by bisection, so p < 0.05 exactly when the
    95 % interval excludes 0."""
    low, high = interval(0.0)
    if low <= 0 <= high:
        return 1.0
    above = low > 0

    def clear(z: float) -> bool:  # the interval at z still excludes 0
        bounds = interval(z)
        return bounds[0] > 0 if above else bounds[1] < 0

    lo, hi = 0.0, 40.0
    if clear(hi):
        return 0.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if clear(mid) else (lo, mid)
    return math.erfc(lo / math.sqrt(2))


def _comparison(
    difference: float,
    ci95: tuple[float, float],
    ci90: tuple[float, float],
    detectable: float,
    delta: float,
    paper_n: int | None,
    p_value: float,
    design: str,
    grid_note: str = "",
) -> Comparison:
    in_points = [_points(ci95), _points(ci90)]
    return Comparison(
        outcome=outcome(*in_points, delta),
        difference=round(100 * difference, 4),
        ci95=in_points[0],
        ci90=in_points[1],
        detectable=round(100 * detectable, 4),
        delta=delta,
        paper_n=paper_n,
        p_value=p_value,
        design=design,
        grid_note=grid_note,
    )


def _check(
    n: int,
    paper_percent: float,
    paper_n: int | None,
    delta: float,
    scale: tuple[float, float] = PERCENT,
) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"a comparison needs at least one of our items, got n={n!r}")
    if not (math.isfinite(paper_percent) and scale[0] <= paper_percent <= scale[1]):
        what = "a percentage" if scale == PERCENT else f"within {scale[0]:g}..{scale[1]:g}"
        raise ValueError(f"the paper's number {paper_percent} is not {what}")
    if paper_n is not None:
        check_paper_n(paper_n)
    check_margin(delta)


def check_paper_n(paper_n: object) -> int:
    """The items behind a paper's number: a whole number >= 1 (not True, not 2.5)."""
    if isinstance(paper_n, bool) or not isinstance(paper_n, int) or paper_n < 1:
        raise ValueError(f"the paper's n must be a whole number >= 1, got {paper_n!r}")
    return paper_n


def check_margin(delta: object) -> float:
    """The equivalence margin ±δ: a finite number >= 0 (in points)."""
    if isinstance(delta, bool) or not (
        isinstance(delta, int | float) and math.isfinite(delta) and delta >= 0
    ):
        raise ValueError(f"the equivalence margin must be a finite number >= 0, got {delta!r}")
    return float(delta)


def _newcombe(x1: int, n1: int, x2: int, n2: int, z: float) -> tuple[float, float]:
    """Newcombe's hybrid score interval of p1 − p2 (method 10)."""
    p1, p2 = x1 / n1, x2 / n2
    l1, u1 = wilson_bounds(x1, n1, z)
    l2, u2 = wilson_bounds(x2, n2, z)
    d = p1 - p2
    return d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + math.sqrt(
        (u1 - p1) ** 2 + (p2 - l2) ** 2
    )


def _shift(interval: tuple[float, float], by: float) -> tuple[float, float]:
    return interval[0] - by, interval[1] - by


def _points(interval: tuple[float, float]) -> Interval:
    return (round(100 * interval[0], 4), round(100 * interval[1], 4))
