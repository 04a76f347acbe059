"""Ours against the paper's number as a two-sample comparison, calibrated by simulation at the
papers' sample sizes (seeded: the same numbers every run)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from docs_pages import docs_text

from memrl.report.cells import Cell
from memrl.scoring.compare import (
    CONSISTENT,
    DIFFERS_ABOVE,
    DIFFERS_BELOW,
    REPRODUCED,
    compare_graded,
    compare_proportions,
    detectable_difference,
    error_rate_table,
    outcome_rates,
)
from memrl.scoring.intervals import nested_interval


def simulate(p, n, paper_n, delta, shift=0.0, trials=2000, seed=0) -> dict[str, float]:
    return outcome_rates(p, n, paper_n, delta, shift, trials, seed)


TRIALS = 3000
MC = 3 * np.sqrt(0.05 * 0.95 / TRIALS)  # three Monte-Carlo standard errors at 5 %


@pytest.mark.parametrize("p", [0.3, 0.6, 0.85])
@pytest.mark.parametrize("n", [128, 200])  # RULER-HQA's questions, LongBench's items
def test_a_perfect_reproduction_differs_in_five_percent_of_cells(p, n):
    rates = simulate(p, n, n, delta=5.0, trials=TRIALS, seed=n)
    differs = rates[DIFFERS_ABOVE] + rates[DIFFERS_BELOW]
    assert abs(differs - 0.05) < MC + 0.01  # Newcombe's interval is slightly conservative


@pytest.mark.parametrize("p", [0.3, 0.6, 0.85])
@pytest.mark.parametrize("n", [128, 200])
def test_a_true_difference_of_the_stated_detectable_size_differs_in_about_80_percent(p, n):
    d = detectable_difference(p, n, n)
    up = simulate(p, n, n, 5.0, shift=d, trials=TRIALS, seed=1)[DIFFERS_ABOVE]
    down = simulate(p, n, n, 5.0, shift=-d, trials=TRIALS, seed=2)[DIFFERS_BELOW]
    assert 0.74 < min(up, down) < 0.86  # the harder direction, which the stated size is for
    assert max(up, down) > 0.74


def test_at_the_papers_n_a_miss_of_15_points_shows_but_agreement_within_5_does_not():
    # 128 questions on both sides: the detectable difference is ~17 points, and a perfect
    # reproduction essentially never shows agreement within ±5 points (its 90 % interval is
    # about ±10 points wide)
    assert 15 < 100 * detectable_difference(0.6, 128, 128) < 19
    assert simulate(0.6, 128, 128, delta=5.0, trials=500)[REPRODUCED] == 0
    assert simulate(0.6, 128, 128, delta=15.0, trials=500)[REPRODUCED] > 0.5


def test_graded_items_differ_in_five_percent_of_perfect_reproductions():
    rng = np.random.default_rng(7)
    differs = 0
    for _ in range(TRIALS):
        ours = rng.beta(2, 3, size=200)
        paper = 100 * rng.beta(2, 3, size=200).mean()
        se = 100 * ours.std(ddof=1) / np.sqrt(200)
        outcome = compare_graded(100 * ours.mean(), se, 200, float(paper), 200, delta=5.0).outcome
        differs += outcome in (DIFFERS_ABOVE, DIFFERS_BELOW)
    assert abs(differs / TRIALS - 0.05) < MC


def test_the_three_outcomes_and_what_each_cell_states():
    far = compare_proportions(100, 128, 50.0, 128, delta=5.0)
    assert far.outcome == DIFFERS_ABOVE and far.difference == pytest.approx(28.125)
    assert far.ci95[0] > 0 and far.ci90[0] > far.ci95[0]
    assert compare_proportions(30, 128, 50.0, 128, 5.0).outcome == DIFFERS_BELOW
    near = compare_proportions(64, 128, 50.0, 128, 5.0)
    assert near.outcome == CONSISTENT and near.ci95[0] < 0 < near.ci95[1]
    assert near.detectable == pytest.approx(100 * detectable_difference(0.5, 128, 128), abs=1e-4)
    # thousands of items on both sides do show agreement within ±2 points
    big = compare_proportions(5000, 10000, 50.3, 10000, delta=2.0)
    assert big.outcome == REPRODUCED and big.ci90[0] > -2 and big.ci90[1] < 2


def test_an_unknown_paper_n_uses_our_error_alone_and_says_so():
    known = compare_proportions(64, 128, 50.0, 128, 5.0)
    unknown = compare_proportions(64, 128, 50.0, None, 5.0)
    assert unknown.note == "paper n unknown: our sampling error alone" and known.note == ""
    assert unknown.ci95[1] - unknown.ci95[0] < known.ci95[1] - known.ci95[0]
    assert unknown.detectable < known.detectable


def test_a_score_at_zero_or_one_hundred_still_gets_a_real_interval():
    for successes in (0, 128):
        compared = compare_proportions(successes, 128, 50.0, 128, 5.0)
        assert compared.ci95[1] - compared.ci95[0] > 5
    assert detectable_difference(0.0, 128, 128) > 0 and detectable_difference(1.0, 8, 8) > 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((1, 0, 50.0, 128, 5.0), "at least one of our items"),
        ((1, 2, 150.0, 128, 5.0), "not a percentage"),
        ((1, 2, 50.0, 0, 5.0), "the paper's n must be positive"),
        ((1, 2, 50.0, 128, -1.0), "margin must be a number >= 0, got -1.0"),
        ((1, 2, 50.0, 128, float("nan")), "margin must be a number >= 0"),
    ],
)
def test_bad_input_is_named(args, message):
    with pytest.raises(ValueError, match=message):
        compare_proportions(*args)


def test_the_docs_state_the_error_rates_this_code_computes():
    """docs/evaluation.md prints `python -m memrl.scoring.compare`'s table (seeded)."""
    assert error_rate_table() in docs_text(Path(__file__).resolve().parents[1])


def test_a_one_instance_memalpha_cell_differs_in_about_five_percent_of_perfect_reproductions():
    """Through the table's own path: a MemoryAgentBench source of one instance of 100 questions,
    its two-level interval, a Cell graded against the paper's one instance."""
    rng = np.random.default_rng(11)
    trials, differs = 400, 0
    for _ in range(trials):
        ours = rng.binomial(1, 0.6, size=100).astype(float)
        paper = 100 * rng.binomial(1, 0.6, size=100).mean()
        mean = 100 * ours.mean()
        ci = nested_interval([ours.tolist()])
        cell = Cell(mean, paper, mean - paper, ci=ci, n_scored=1, paper_n=1)
        differs += cell.verdict in (DIFFERS_ABOVE, DIFFERS_BELOW)
    assert abs(differs / trials - 0.05) < 3 * np.sqrt(0.05 * 0.95 / trials) + 0.01
