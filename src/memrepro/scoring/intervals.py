"""95 % intervals of a score over items (the comparison with the paper's number is
memrepro.scoring.compare).

An item scores in [0, 1] (a question right or wrong, an F1, an instance's mean over its
questions); a score is their mean in %. Items that are all 0 or 1 get the Wilson score interval;
others a percentile bootstrap over items (seeded, so a rerun writes the same interval). Mem-α's
instances of questions get two: the two-level bootstrap (instances, then their questions) and
the fixed-instances one (questions within each instance); which a comparison uses depends on
whether both sides answered the same instances (memrepro.scoring.compare). The mean of several
scores (a table's average column) gets the normal approximation from their
intervals, side by side, the scores taken as independent.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import numpy as np

Z95 = 1.959963984540054
RESAMPLES = 2000
SEED = 0
Interval = tuple[float, float]  # in %


def wilson(successes: int, n: int) -> Interval:
    """The Wilson score interval of successes/n, in %."""
    if n <= 0:
        raise ValueError("an interval needs at least one item")
    return _percent(*wilson_bounds(successes, n))


def wilson_bounds(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of successes/n as rates, at the two-sided level of `z`."""
    p = successes / n
    denominator = 1 + z**2 / n
    centre = (p + z**2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z**2 / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


@functools.cache  # a claim's simulations and tables ask the same counts again and again
def clopper_pearson(successes: int, n: int, tail: float) -> tuple[float, float]:
    """The exact (Clopper–Pearson) bounds of successes/n as rates, each one-sided at `tail`:
    the p at which P(X >= successes) = tail, and the one at which P(X <= successes) = tail, for
    X ~ Binomial(n, p). Each side errs at most `tail` at any n and rate, where Wilson's upper
    bound near 100 % errs more often (memrepro.report.claims judges claims on these)."""
    if isinstance(successes, bool) or not 0 <= successes <= n or n < 1 or not 0 < tail < 0.5:
        raise ValueError(f"need 0 <= successes <= n, n >= 1, 0 < tail < 0.5: {successes}, {n}")
    counts = range(n + 1)

    def pmf(p: float) -> np.ndarray:
        return np.exp([log_binomial_pmf(n, k, p) for k in counts])

    def at_least(p: float) -> float:  # P(X >= successes) − tail: increasing in p
        return float(pmf(p)[successes:].sum()) - tail

    def at_most(p: float) -> float:  # tail − P(X <= successes): increasing in p
        return tail - float(pmf(p)[: successes + 1].sum())

    low = 0.0 if successes == 0 else _solve_rate(at_least)
    high = 1.0 if successes == n else _solve_rate(at_most)
    return low, high


def log_binomial_pmf(n: int, k: int, p: float) -> float:
    """log P(X = k) for X ~ Binomial(n, p), 0 < p < 1."""
    return (
        math.lgamma(n + 1)
        - math.lgamma(k + 1)
        - math.lgamma(n - k + 1)
        + k * math.log(p)
        + (n - k) * math.log1p(-p)
    )


def _solve_rate(increasing: Callable[[float], float]) -> float:
    """The p in (0, 1) where an increasing function of p crosses 0 (bisection, 1e-12)."""
    low, high = 1e-15, 1 - 1e-15
    while high - low > 1e-12:
        mid = (low + high) / 2
        low, high = (mid, high) if increasing(mid) < 0 else (low, mid)
    return (low + high) / 2


def bootstrap(values: Sequence[float], seed: int = SEED, resamples: int = RESAMPLES) -> Interval:
    """The 2.5th and 97.5th percentiles of the mean over `resamples` resamplings of the items."""
    if not values:
        raise ValueError("an interval needs at least one item")
    items = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = items[rng.integers(0, len(items), size=(resamples, len(items)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return _percent(float(low), float(high))


def nested_interval(
    groups: Sequence[Sequence[float]], seed: int = SEED, resamples: int = RESAMPLES
) -> Interval:
    """The 95 % interval of the mean of group means (Mem-α: instances of questions) by a
    two-level bootstrap: the groups resampled, then each chosen group's items; one group is
    resampled within. It generalises over instances: the design where another sample of
    instances is compared (a subset of the released ones, one's own). Never of zero width
    where the items are right/wrong (`_without_spread`)."""
    _check_groups(groups)
    rng = np.random.default_rng(seed)
    # each group's mean under `resamples` resamplings of its items: (groups, resamples)
    inner = np.stack(
        [
            np.asarray(g, dtype=float)[rng.integers(0, len(g), size=(resamples, len(g)))].mean(1)
            for g in groups
        ]
    )
    chosen = rng.integers(0, len(groups), size=(resamples, len(groups)))
    return _percentiles(inner[chosen, np.arange(resamples)[:, None]].mean(axis=1), groups)


def fixed_instances_interval(
    groups: Sequence[Sequence[float]], seed: int = SEED, resamples: int = RESAMPLES
) -> Interval:
    """The 95 % interval of the mean of group means with the groups held fixed (a stratified
    bootstrap: each group's items resampled within it, the groups never). The design where both
    sides answer the same released instances: only their questions' answers vary. A group of
    right/wrong items is resampled as a binomial draw of its size at its rate (the same
    distribution as drawing its items, at a fraction of the cost)."""
    _check_groups(groups)
    rng = np.random.default_rng(seed)
    inner = np.stack([_resampled_means(np.asarray(g, dtype=float), rng, resamples) for g in groups])
    return _percentiles(inner.mean(axis=0), groups)


def paired_fixed_instances_interval(
    groups: Sequence[Sequence[float]], seed: int = SEED, resamples: int = RESAMPLES
) -> Interval:
    """The 95 % interval (in points) of the mean of group means of paired differences, the
    groups held fixed: each instance's per-question differences resampled within it, the
    instances never. The paired design on released instances (both sides answered the same
    questions); no spread (every difference alike within each instance) gives zero width."""
    _check_groups(groups)
    rng = np.random.default_rng(seed)
    inner = np.stack(
        [
            np.asarray(g, dtype=float)[rng.integers(0, len(g), size=(resamples, len(g)))].mean(1)
            for g in groups
        ]
    )
    low, high = np.percentile(inner.mean(axis=0), [2.5, 97.5])
    return _percent(float(low), float(high))


def _resampled_means(items: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    if np.isin(items, (0.0, 1.0)).all():
        return rng.binomial(len(items), items.mean(), size=resamples) / len(items)
    return items[rng.integers(0, len(items), size=(resamples, len(items)))].mean(axis=1)


def _check_groups(groups: Sequence[Sequence[float]]) -> None:
    if not groups or any(len(group) == 0 for group in groups):
        raise ValueError("an interval needs at least one item in every group")


def _percentiles(means: np.ndarray, groups: Sequence[Sequence[float]]) -> Interval:
    low, high = np.percentile(means, [2.5, 97.5])
    return _percent(float(low), float(high)) if high > low else _without_spread(groups)


def _without_spread(groups: Sequence[Sequence[float]]) -> Interval:
    """Where every resample gives the same mean: right/wrong items (e.g. every question of an
    instance wrong) get a Wilson interval as wide as the pooled items give, centred on the score
    (the mean of group means); graded ones keep a zero-width interval at the score, which a
    cell reads as too few items to judge."""
    items = [value for group in groups for value in group]
    score = sum(sum(group) / len(group) for group in groups) / len(groups)
    if all(value in (0.0, 1.0) for value in items):
        return _percent(*wilson_bounds(score * len(items), len(items)))
    return _percent(score, score)


def interval(values: Sequence[float]) -> Interval | None:
    """Wilson for right/wrong items, else the bootstrap; None without items."""
    if not values:
        return None
    if all(v in (0.0, 1.0) for v in values):
        return wilson(int(sum(values)), len(values))
    return bootstrap(values)


def paired_difference_interval(pairs: Sequence[tuple[float, float]]) -> Interval:
    """The 95 % interval (in points) of the mean per-item difference first − second, each item
    scored by both sides (the same question under two conditions): for right/wrong items
    Newcombe's paired score interval (Newcombe 1998, "Improved confidence intervals for the
    difference between binomial proportions based on paired data", method 10: the two Wilson
    intervals combined with the correlation of the pairs), never of zero width; for graded
    ones the percentile bootstrap of the per-item differences."""
    if not pairs:
        raise ValueError("an interval needs at least one item")
    if all(x in (0.0, 1.0) and y in (0.0, 1.0) for x, y in pairs):
        return _percent(*paired_proportions_bounds(pairs, Z95))
    return bootstrap([x - y for x, y in pairs])


def paired_proportions_bounds(
    pairs: Sequence[tuple[float, float]], z: float = Z95
) -> tuple[float, float]:
    """Newcombe's method 10 for right/wrong pairs, as rates, at the two-sided level of `z`."""
    n = len(pairs)
    both = sum(1 for x, y in pairs if x and y)
    first_only = sum(1 for x, y in pairs if x and not y)
    second_only = sum(1 for x, y in pairs if y and not x)
    neither = n - both - first_only - second_only
    p1, p2 = (both + first_only) / n, (both + second_only) / n
    l1, u1 = wilson_bounds(both + first_only, n, z)
    l2, u2 = wilson_bounds(both + second_only, n, z)
    margins = (
        (both + first_only)
        * (second_only + neither)
        * (both + second_only)
        * (first_only + neither)
    )
    phi = (both * neither - first_only * second_only) / math.sqrt(margins) if margins else 0.0
    below = (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2
    above = (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2
    difference = p1 - p2
    return difference - math.sqrt(max(0.0, below)), difference + math.sqrt(max(0.0, above))


def mean_interval(means: Sequence[float], intervals: Sequence[Interval]) -> Interval:
    """The interval of the mean of independent scores: on each side, the root of the summed
    squares of each score's distance to that bound, over their number (so a Wilson interval's
    asymmetry near 0 or 100 % carries over)."""
    if not means or len(means) != len(intervals):
        raise ValueError("one interval per score")
    centre = sum(means) / len(means)
    pairs = list(zip(means, intervals, strict=True))
    below = math.sqrt(sum((m - lo) ** 2 for m, (lo, _) in pairs)) / len(means)
    above = math.sqrt(sum((hi - m) ** 2 for m, (_, hi) in pairs)) / len(means)
    return (round(max(0.0, centre - below), 4), round(min(100.0, centre + above), 4))


def _percent(low: float, high: float) -> Interval:
    return (round(100 * low, 4), round(100 * high, 4))
