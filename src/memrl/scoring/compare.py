"""Our score against the paper's as a two-sample comparison: both carry sampling error.

A cell compares our mean over n items with the paper's printed number over its n_paper items
(the same benchmark, another sample of model outputs). The difference ours − paper gets an
interval that carries both errors:

- right/wrong items: Newcombe's hybrid score interval for a difference of two proportions
  (Newcombe 1998, method 10: the two Wilson intervals combined), the paper's successes taken as
  round(p_paper · n_paper);
- graded items (an F1, an instance's mean, a table's average): the normal interval of the
  difference, our standard error from our 95 % interval and the paper's taken as ours per item
  (the paper prints no spread of its own);
- the paper's n unknown: our error alone (our interval shifted by the paper's number), said so.

Three outcomes:
- `differs` (above or below): the 95 % interval of the difference excludes 0;
- `reproduced` within ±δ: two one-sided tests at 5 %, i.e. the 90 % interval lies inside ±δ;
- `consistent`: neither; no difference shown and no agreement shown.

Each comparison also states the smallest difference its n could detect (two-sided 5 %, 80 %
power), so a reader sees why a cell is only `consistent`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from memrl.scoring.intervals import Z95, Interval, wilson_bounds

Z90 = 1.6448536269514722  # two-sided 90 %: the TOST at 5 % each side
Z_POWER80 = 0.8416212335729143
DIFFERS_ABOVE, DIFFERS_BELOW = "differs above", "differs below"
REPRODUCED, CONSISTENT = "reproduced", "consistent"
DEFAULT_MARGIN = 5.0  # ±δ in points: report.equivalence_margin's default
OUTCOMES = (REPRODUCED, CONSISTENT, DIFFERS_ABOVE, DIFFERS_BELOW)


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

    @property
    def note(self) -> str:
        return "paper n unknown: our sampling error alone" if self.paper_n is None else ""


def outcome(ci95: Interval, ci90: Interval, delta: float) -> str:
    """The three outcomes from the intervals of the difference."""
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
    ours = successes / n
    paper = paper_percent / 100
    if paper_n is None:  # ours alone: our interval shifted by the paper's number
        ci95, ci90 = (_shift(wilson_bounds(successes, n, z), paper) for z in (Z95, Z90))
    else:
        paper_successes = round(paper * paper_n)
        ci95, ci90 = (_newcombe(successes, n, paper_successes, paper_n, z) for z in (Z95, Z90))
    detectable = detectable_difference(paper, n, paper_n)
    return _comparison(ours - paper, ci95, ci90, detectable, delta, paper_n)


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
    mean: float, se: float, n: int, paper_percent: float, paper_n: int | None, delta: float
) -> Comparison:
    """Our graded score (`mean` ± standard error `se`, in %, over n items) against the paper's
    percentage over paper_n items: the normal interval of the difference, the paper's spread
    taken as ours per item (it prints none of its own), i.e. se · sqrt(n / paper_n)."""
    _check(n, paper_percent, paper_n, delta)
    if not (math.isfinite(se) and se >= 0):
        raise ValueError(f"a standard error must be a number >= 0, got {se!r}")
    spread = se / 100 * math.sqrt(1 + (n / paper_n if paper_n else 0))
    difference = (mean - paper_percent) / 100
    ci95, ci90 = ((difference - z * spread, difference + z * spread) for z in (Z95, Z90))
    detectable = (Z95 + Z_POWER80) * spread
    return _comparison(difference, ci95, ci90, detectable, delta, paper_n)


def standard_error(ci95: Interval) -> float:
    """The standard error a 95 % interval implies (its half-width over 1.96), in its units."""
    return (ci95[1] - ci95[0]) / (2 * Z95)


def _comparison(
    difference: float,
    ci95: tuple[float, float],
    ci90: tuple[float, float],
    detectable: float,
    delta: float,
    paper_n: int | None,
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
    )


def _check(n: int, paper_percent: float, paper_n: int | None, delta: float) -> None:
    if n < 1:
        raise ValueError("a comparison needs at least one of our items")
    if not 0 <= paper_percent <= 100:
        raise ValueError(f"the paper's number {paper_percent} is not a percentage")
    if paper_n is not None and paper_n < 1:
        raise ValueError(f"the paper's n must be positive, got {paper_n}")
    if not (isinstance(delta, int | float) and math.isfinite(delta) and delta >= 0):
        raise ValueError(f"the equivalence margin must be a number >= 0, got {delta!r}")


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


def outcome_rates(
    p: float,
    n: int,
    paper_n: int,
    delta: float,
    shift: float = 0.0,
    trials: int = 2000,
    seed: int = 0,
) -> dict[str, float]:
    """How often each outcome comes out when our true rate is p + shift and the paper's p, both
    over right/wrong items (seeded): shift 0 is a perfect reproduction."""
    import numpy as np

    rng = np.random.default_rng(seed)
    ours = rng.binomial(n, p + shift, size=trials)
    papers = rng.binomial(paper_n, p, size=trials)
    judged = functools.cache(
        lambda x, k: compare_proportions(x, n, 100 * k / paper_n, paper_n, delta).outcome
    )
    counts = dict.fromkeys(OUTCOMES, 0)
    for x, k in zip(ours.tolist(), papers.tolist(), strict=True):
        counts[judged(x, k)] += 1
    return {name: count / trials for name, count in counts.items()}


# The papers' sample sizes a cell compares (docs/evaluation.md prints their error rates).
PAPER_SAMPLES = (
    ("RULER-HQA (MemAgent Tables 1, 10)", 128),
    ("LongBench-QA (MemAgent Tables 3, 11)", 200),
    ("MemoryAgentBench, one instance of ~100 questions (Mem-α Table 2)", 100),
)
RATE_MARGINS = (5.0, 10.0, 15.0)


def error_rate_table(trials: int = 2000) -> str:
    """The Markdown table of what a cell can show at the papers' n: the detectable difference,
    how often a perfect reproduction reads `differs`, and how often `reproduced` at each margin."""
    margins = " | ".join(f"reproduced ±{m:g}" for m in RATE_MARGINS)
    lines = [
        f"| cells | n a side | true score | detectable (points) | differs | {margins} |",
        "|---|---:|---:|---:|---:|" + "---:|" * len(RATE_MARGINS),
    ]
    for label, n in PAPER_SAMPLES:
        for p in (0.5, 0.8):
            rates = [outcome_rates(p, n, n, m, trials=trials, seed=n) for m in RATE_MARGINS]
            differs = rates[0][DIFFERS_ABOVE] + rates[0][DIFFERS_BELOW]
            reproduced = " | ".join(f"{r[REPRODUCED]:.0%}" for r in rates)
            lines.append(
                f"| {label} | {n} | {p:.0%} | {100 * detectable_difference(p, n, n):.1f} | "
                f"{differs:.1%} | {reproduced} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    print(error_rate_table())
