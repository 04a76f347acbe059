"""How often each verdict comes out when the truth is known: seeded simulations of the comparison
(memrepro.scoring.compare) at the papers' sample sizes. The tests assert these rates with their
Monte-Carlo error, docs/evaluation.md prints the tables, and
`python -m memrepro.scoring.calibration` (part of `make bench`) measures every one of them in one
run.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import numpy as np

from memrepro.scoring.compare import (
    DIFFERS_ABOVE,
    DIFFERS_BELOW,
    FIXED_INSTANCES,
    INSTANCES_RESAMPLED,
    OUTCOMES,
    REPRODUCED,
    compare_graded,
    compare_proportions,
    detectable_difference,
    outcome,
    standard_error,
    too_sparse,
)
from memrepro.scoring.intervals import (
    bootstrap,
    fixed_instances_interval,
    log_binomial_pmf,
    nested_interval,
)


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


def exact_outcome_rates(
    p: float, n: int, paper_n: int, margins: Sequence[float], spread: float = 6.0
) -> dict[float, dict[str, float]]:
    """The probability of each outcome, per margin ±δ, when both sides' true rate is p over
    right/wrong items: the binomial sum over every pair of counts within `spread` standard
    deviations of the mean on each side (the mass left out is below 1e-8), no simulation."""
    counts = [_central_counts(p, size, spread) for size in (n, paper_n)]
    rates = {delta: dict.fromkeys(OUTCOMES, 0.0) for delta in margins}
    for x, weight_x in counts[0]:
        for k, weight_k in counts[1]:
            compared = compare_proportions(x, n, 100 * k / paper_n, paper_n, margins[0])
            for delta in margins:
                verdict = outcome(compared.ci95, compared.ci90, delta)
                rates[delta][verdict] += weight_x * weight_k
    return rates


def _central_counts(p: float, n: int, spread: float) -> list[tuple[int, float]]:
    """The counts within `spread` standard deviations of n·p, with their binomial probability."""
    sd = math.sqrt(n * p * (1 - p))
    low, high = max(0, math.floor(n * p - spread * sd)), min(n, math.ceil(n * p + spread * sd))
    return [(k, math.exp(log_binomial_pmf(n, k, p))) for k in range(low, high + 1)]


def differs(rates: dict[str, float]) -> float:
    return rates[DIFFERS_ABOVE] + rates[DIFFERS_BELOW]


INTERVALS: dict[str, Callable[[Sequence[Sequence[float]]], tuple[float, float]]] = {
    FIXED_INSTANCES: fixed_instances_interval,
    INSTANCES_RESAMPLED: nested_interval,
}


def memalpha_rates(
    instances: int,
    spread: float,
    design: str,
    trials: int,
    seed: int,
    shift: float = 0.0,
    p: float = 0.6,
    questions: tuple[int, int] = (20, 100),
) -> dict[str, float]:
    """A Mem-α cell where both sides answer the same `instances` released instances (each
    trial draws them once: a true rate p + spread·z per instance, questions uniform in
    `questions`), ours at each instance's rate + shift: how often the 95 % interval of the
    difference holds the true one (`coverage`) and how often the cell reads *differs*, with our
    interval on `design` (INTERVALS) as the table computes it."""
    rng = np.random.default_rng(seed)
    covered = differ = 0
    for _ in range(trials):
        rates = np.clip(p + spread * rng.standard_normal(instances), 0.02, 0.98 - shift)
        sizes = rng.integers(questions[0], questions[1] + 1, size=instances)
        ours = [
            rng.binomial(1, r + shift, size=q).astype(float)
            for r, q in zip(rates, sizes, strict=True)
        ]
        paper = 100 * float(
            np.mean([rng.binomial(q, r) / q for r, q in zip(rates, sizes, strict=True)])
        )
        mean = 100 * float(np.mean([answers.mean() for answers in ours]))
        ci = INTERVALS[design]([answers.tolist() for answers in ours])
        compared = compare_graded(
            mean, standard_error(ci), instances, paper, instances, 5.0, design=design
        )
        covered += compared.ci95[0] <= 100 * shift <= compared.ci95[1]
        differ += compared.outcome in (DIFFERS_ABOVE, DIFFERS_BELOW)
    return {"coverage": covered / trials, "differs": differ / trials}


def population_coverage(
    instances: int,
    spread: float,
    trials: int,
    seed: int,
    p: float = 0.6,
    questions: tuple[int, int] = (20, 100),
) -> float:
    """Two samples of `instances` instances each from one population (true rates p + spread·z,
    questions uniform in `questions`): ours, judged on the two-level interval, against the
    paper's mean over its own instances. How often the 95 % interval of the difference holds
    the true difference, 0: the design where the instances differ (INSTANCES_RESAMPLED)."""
    rng = np.random.default_rng(seed)

    def draw() -> list[np.ndarray]:
        rates = np.clip(p + spread * rng.standard_normal(instances), 0.02, 0.98)
        sizes = rng.integers(questions[0], questions[1] + 1, size=instances)
        return [rng.binomial(1, r, size=q).astype(float) for r, q in zip(rates, sizes, strict=True)]

    covered = 0
    for _ in range(trials):
        ours, theirs = draw(), draw()
        mean = 100 * float(np.mean([answers.mean() for answers in ours]))
        paper = 100 * float(np.mean([answers.mean() for answers in theirs]))
        ci = nested_interval([answers.tolist() for answers in ours])
        compared = compare_graded(
            mean, standard_error(ci), instances, paper, instances, 5.0, design=INSTANCES_RESAMPLED
        )
        covered += compared.ci95[0] <= 0 <= compared.ci95[1]
    return covered / trials


POPULATION_INSTANCES = (1, 2, 3, 5, 10)
POPULATION_SPREADS = (0.1, 0.2)


def population_table(trials: int = 300) -> str:
    """Mem-α cells whose instances differ from the paper's: how often the two-level interval
    covers the true difference, by number of instances and spread between them."""
    spreads = " | ".join(f"spread {spread:g}" for spread in POPULATION_SPREADS)
    lines = [f"| instances | {spreads} |", "|---:|" + "---:|" * len(POPULATION_SPREADS)]
    for k in POPULATION_INSTANCES:
        rates = [
            population_coverage(k, s, trials, 10 * k + int(10 * s)) for s in POPULATION_SPREADS
        ]
        lines.append(f"| {k} | " + " | ".join(f"{rate:.0%}" for rate in rates) + " |")
    return "\n".join(lines)


def zero_heavy_items(rng: np.random.Generator, n: int, zeros: float) -> np.ndarray:
    """Graded items (an F1 or a ROUGE at small n): 0 with probability `zeros`, else uniform
    in [0.3, 1]."""
    return np.where(rng.random(n) < zeros, 0.0, rng.uniform(0.3, 1.0, n))


def graded_tail_rates(
    n: int, zeros: float, trials: int, seed: int, resamples: int = 500
) -> dict[str, float]:
    """A perfect reproduction of a zero-heavy graded score over n items a side: how often the
    cell reads *differs* below and above (2.5 % each intended), and how often it is judged at
    all (`judged`). As a table judges it: a cell with fewer than MIN_NONZERO items above 0
    (`too_sparse`), or every item 0, reads *too few items*; its difference interval must have
    width (memrepro.report.cells)."""
    rng = np.random.default_rng(seed)
    counts = dict.fromkeys((DIFFERS_BELOW, DIFFERS_ABOVE, JUDGED), 0)
    for trial in range(trials):
        ours = zero_heavy_items(rng, n, zeros)
        paper = 100 * float(zero_heavy_items(rng, n, zeros).mean())
        if too_sparse(False, int((ours > 0).sum())):
            continue
        ci = bootstrap(ours.tolist(), seed=trial, resamples=resamples)
        compared = compare_graded(100 * float(ours.mean()), standard_error(ci), n, paper, n, 5.0)
        if ci[0] == ci[1] or compared.ci95[0] == compared.ci95[1]:
            continue
        counts[JUDGED] += 1
        if compared.outcome in counts:
            counts[compared.outcome] += 1
    return {name: count / trials for name, count in counts.items()}


JUDGED = "judged"
SPARSE_SIZES = (10, 20, 30, 50)
SPARSE_ZEROS = (0.8, 0.92)


def sparse_graded_table(trials: int = 2000) -> str:
    """Zero-heavy graded cells at n 10-50 a side (80 and 92 % zeros): how often a perfect
    reproduction reads *differs* on each side, and how often it is judged at all."""
    lines = [
        "| n a side | zeros | judged | differs below | differs above |",
        "|---:|---:|---:|---:|---:|",
    ]
    for n in SPARSE_SIZES:
        for zeros in SPARSE_ZEROS:
            rates = graded_tail_rates(n, zeros, trials, seed=n)
            lines.append(
                f"| {n} | {zeros:.0%} | {rates[JUDGED]:.0%} | {rates[DIFFERS_BELOW]:.1%} | "
                f"{rates[DIFFERS_ABOVE]:.1%} |"
            )
    return "\n".join(lines)


# The papers' sample sizes a cell compares (docs/evaluation.md prints their error rates).
PAPER_SAMPLES = (
    ("RULER-HQA (MemAgent Tables 1, 10)", 128),
    ("LongBench-QA (MemAgent Tables 3, 11)", 200),
    ("MemoryAgentBench, one instance of ~100 questions (Mem-α Table 2)", 100),
)
RATE_MARGINS = (5.0, 10.0, 15.0)


def error_rate_table() -> str:
    """The Markdown table of what a cell can show at the papers' n: the detectable difference,
    how often a perfect reproduction reads `differs`, and how often `reproduced` at each margin,
    exactly (`exact_outcome_rates`)."""
    margins = " | ".join(f"reproduced ±{m:g}" for m in RATE_MARGINS)
    lines = [
        f"| cells | n a side | true score | detectable (points) | differs | {margins} |",
        "|---|---:|---:|---:|---:|" + "---:|" * len(RATE_MARGINS),
    ]
    for label, n in PAPER_SAMPLES:
        for p in (0.5, 0.8):
            exact = exact_outcome_rates(p, n, n, RATE_MARGINS)
            rates = [exact[m] for m in RATE_MARGINS]
            reproduced = " | ".join(f"{r[REPRODUCED]:.1%}" for r in rates)
            lines.append(
                f"| {label} | {n} | {p:.0%} | {100 * detectable_difference(p, n, n):.1f} | "
                f"{differs(rates[0]):.1%} | {reproduced} |"
            )
    return "\n".join(lines)


REACH_RATES = (0.05, 0.5, 0.8, 0.98)
REACH_SIZES = (50, 128, 200, 500, 2000)


def reachability_table(trials: int = 1000) -> str:
    """Right/wrong cells by true rate and n a side: the detectable difference and how often a
    perfect reproduction reads *reproduced* within ±5 and *differs*. Near 0 and 100 % the
    binomial's spread shrinks, so agreement is in reach at smaller n than at 50 %."""
    lines = [
        "| true score | n a side | detectable (points) | reproduced ±5 | differs |",
        "|---:|---:|---:|---:|---:|",
    ]
    for p in REACH_RATES:
        for n in REACH_SIZES:
            rates = outcome_rates(p, n, n, 5.0, trials=trials, seed=n)
            lines.append(
                f"| {p:.0%} | {n} | {100 * detectable_difference(p, n, n):.1f} | "
                f"{rates[REPRODUCED]:.0%} | {differs(rates):.1%} |"
            )
    return "\n".join(lines)


MEMALPHA_INSTANCES = (1, 2, 3, 5)
MEMALPHA_SPREADS = (0.0, 0.1, 0.2)


def memalpha_design_table(trials: int = 300) -> str:
    """Mem-α cells on the same released instances (20–100 questions each): coverage of the
    true difference and false *differs* of both designs, at 1, 2, 3 and 5 instances."""
    lines = [
        "| instances | spread between instances | fixed: coverage | fixed: differs | "
        "resampled: coverage | resampled: differs |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for k in MEMALPHA_INSTANCES:
        for spread in MEMALPHA_SPREADS:
            seed = 100 * k + int(10 * spread)
            fixed, resampled = (
                memalpha_rates(k, spread, design, trials, seed)
                for design in (FIXED_INSTANCES, INSTANCES_RESAMPLED)
            )
            lines.append(
                f"| {k} | {spread:g} | {fixed['coverage']:.1%} | {fixed['differs']:.1%} | "
                f"{resampled['coverage']:.1%} | {resampled['differs']:.1%} |"
            )
    return "\n".join(lines)


def monte_carlo_error(rate: float, trials: int) -> float:
    """The standard error of a simulated rate."""
    return math.sqrt(rate * (1 - rate) / trials)


def main() -> None:
    sections = (
        ("Right/wrong cells at the papers' n (exact binomial sums)", error_rate_table),
        ("Right/wrong cells by true score and n (1,000 trials each)", reachability_table),
        ("Mem-α cells on shared instances (300 trials each)", memalpha_design_table),
        ("Mem-α cells whose instances differ (300 trials each)", population_table),
        ("Sparse graded cells (2,000 trials each)", sparse_graded_table),
    )
    for title, table in sections:
        print(f"## {title}\n\n{table()}\n")
    tails = graded_tail_rates(50, 0.8, trials=2000, seed=5)
    print(
        "## A zero-heavy graded score (n = 50 a side, 80 % zeros; 2,000 trials)\n\n"
        f"differs below {tails[DIFFERS_BELOW]:.1%}, above {tails[DIFFERS_ABOVE]:.1%} "
        f"(2.5 % each intended; Monte-Carlo error {monte_carlo_error(0.025, 2000):.1%})"
    )


if __name__ == "__main__":
    main()
