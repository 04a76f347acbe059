"""Counting verdicts: what chance alone gives among many cells, which cells still stand out, and
one test of a whole table.

Each cell's verdict is a test at 5 % (memrepro.scoring.compare), so a perfect reproduction still
shows *differs* in about 5 % of its cells: 3 of 60, 70 of the papers' ~1,400. Three rules put a
count of cells in that light:

- `chance_range(m)`: the number of *differs* among m independent cells of a perfect
  reproduction is Binomial(m, 0.05): its mean and central 95 % range (the 2.5 % and 97.5 %
  quantiles), printed beside every count;
- `bh_q_values(p)`: Benjamini–Hochberg's adjusted p-values (1995) across a paper's cells: a
  cell with q < 0.10 stands out with at most 10 % of such cells expected to be chance;
- `table_test(p)`: "every cell of the table reproduced" as one test: the sum of the cells'
  squared z-scores (z = the normal quantile of each two-sided p) against a χ² with one degree of
  freedom per cell. Cells are taken as independent, so averages, which repeat the cells they
  average, are counted apart and left out of every rule here.

Exact finite sums (the binomial's distribution, the χ² survival function at whole degrees of
freedom), no approximation; the tests check them against SciPy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

from memrepro.scoring.compare import ALPHA
from memrepro.scoring.intervals import log_binomial_pmf

Q_WORTH_A_LOOK = 0.10  # a cell whose q-value is below this is listed as worth a look
Z_CAP = 40.0  # a p-value of 0 (beyond double precision) counts as this z


@dataclass(frozen=True)
class Chance:
    """What a perfect reproduction gives among `cells` independent cells at `rate` each."""

    cells: int
    rate: float
    expected: float
    low: int  # the central 95 % range of the count
    high: int

    def text(self, differ: int) -> str:
        """'3 differ; 0.05 × 60 = 3.0 expected by chance, 95 % range 0–7'."""
        return (
            f"{differ} differ; {self.rate:g} × {self.cells} = {self.expected:.1f} expected by "
            f"chance in a perfect reproduction, 95 % range {self.low}–{self.high}"
        )


def chance_range(cells: int, rate: float = ALPHA) -> Chance:
    """The count of *differs* in a perfect reproduction of `cells` cells: Binomial(cells, rate)."""
    if cells < 0 or not 0 < rate < 1:
        raise ValueError(f"need cells >= 0 and 0 < rate < 1, got {cells}, {rate}")
    low = binomial_quantile(cells, rate, 0.025)
    return Chance(cells, rate, cells * rate, low, binomial_quantile(cells, rate, 0.975))


def binomial_quantile(n: int, rate: float, level: float) -> int:
    """The smallest k with P(Binomial(n, rate) <= k) >= level."""
    cumulative = 0.0
    for k in range(n + 1):
        cumulative += math.exp(log_binomial_pmf(n, k, rate))
        if cumulative >= level - 1e-12:
            return k
    return n


def bh_q_values(p_values: Sequence[float]) -> list[float]:
    """Benjamini–Hochberg adjusted p-values, in the order given: q_(i) = min over j >= i of
    p_(j) · m / j (p sorted ascending), capped at 1. Only finite p-values in 0..1 count: m is
    their number, and any other (a NaN: a cell without a p-value) gets a NaN q-value."""
    finite = [i for i, p in enumerate(p_values) if _is_p_value(p)]
    m = len(finite)
    order = sorted(finite, key=lambda i: p_values[i])
    q = [math.nan] * len(p_values)
    running = 1.0
    for rank in range(m, 0, -1):
        index = order[rank - 1]
        running = min(running, p_values[index] * m / rank)
        q[index] = min(1.0, running)
    return q


def _is_p_value(p: object) -> bool:
    return (
        isinstance(p, int | float) and not isinstance(p, bool) and math.isfinite(p) and 0 <= p <= 1
    )


@dataclass(frozen=True)
class TableTest:
    """Σ z² of a table's cells against χ²(cells): small p says not every cell reproduced."""

    cells: int
    statistic: float
    p_value: float

    def text(self) -> str:
        return (
            f"one test of 'every cell reproduced' (Σz² = {self.statistic:.1f} on {self.cells} "
            f"cells against χ²({self.cells})): p = {format_p(self.p_value)}"
        )


def table_test(p_values: Sequence[float]) -> TableTest | None:
    """The cells' two-sided p-values combined (None without cells)."""
    if not p_values:
        return None
    statistic = sum(z_score(p) ** 2 for p in p_values)
    return TableTest(len(p_values), statistic, chi2_survival(statistic, len(p_values)))


def z_score(p_value: float) -> float:
    """|z| of a two-sided p-value, exact in the far tail: the lower quantile of p/2 (1 − p/2
    rounds to 1 below p ≈ 1e-16); a p/2 that underflows to 0 counts as Z_CAP."""
    if not _is_p_value(p_value):
        raise ValueError(f"a p-value must be a finite number in 0..1, got {p_value!r}")
    half = p_value / 2
    if half <= 0:
        return Z_CAP
    return min(Z_CAP, abs(NormalDist().inv_cdf(half)))


def chi2_survival(x: float, k: int) -> float:
    """P(χ²_k > x) for whole k >= 1, as the finite Poisson-type sums of the regularised upper
    incomplete gamma function at half-integer shape."""
    if k < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {k}")
    if x <= 0:
        return 1.0
    half = x / 2
    if k % 2 == 0:
        terms = (i * math.log(half) - math.lgamma(i + 1) for i in range(k // 2))
        head = 0.0
    else:
        terms = ((i - 0.5) * math.log(half) - math.lgamma(i + 0.5) for i in range(1, k // 2 + 1))
        head = math.erfc(math.sqrt(half))
    return min(1.0, head + sum(math.exp(t - half) for t in terms))


def format_p(p: float) -> str:
    """0.0312 -> '0.031'; 2e-7 -> '<0.001'."""
    return "<0.001" if p < 0.001 else f"{p:.3f}" if p < 0.1 else f"{p:.2f}"
