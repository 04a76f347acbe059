"""Ours against the paper's number as a two-sample comparison, calibrated by simulation at the
papers' sample sizes (seeded: the same numbers every run)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from docs_pages import docs_text

from memrepro.report.cells import TOO_FEW_ITEMS, Cell, PaperNumberError, attach_paper_n
from memrepro.scoring.calibration import (
    MEMALPHA_INSTANCES,
    MEMALPHA_SPREADS,
    SPARSE_SIZES,
    SPARSE_ZEROS,
    error_rate_table,
    exact_outcome_rates,
    graded_tail_rates,
    memalpha_design_table,
    memalpha_rates,
    outcome_rates,
    population_table,
    reachability_table,
    sparse_graded_table,
)
from memrepro.scoring.compare import (
    CONSISTENT,
    DIFFERENCE,
    DIFFERS_ABOVE,
    DIFFERS_BELOW,
    FIXED_INSTANCES,
    INSTANCES_RESAMPLED,
    MIN_NONZERO,
    REPRODUCED,
    compare_graded,
    compare_proportions,
    detectable_difference,
)
from memrepro.scoring.intervals import fixed_instances_interval, nested_interval


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
        ((1, 2, 50.0, 0, 5.0), "the paper's n must be a whole number >= 1"),
        ((1, 2, 50.0, True, 5.0), "the paper's n must be a whole number >= 1, got True"),
        ((1, 2, 50.0, 2.5, 5.0), "the paper's n must be a whole number >= 1, got 2.5"),
        ((1, 2, 50.0, 128, -1.0), "margin must be a finite number >= 0, got -1.0"),
        ((1, 2, 50.0, 128, float("nan")), "margin must be a finite number >= 0"),
        ((1, 2, 50.0, 128, float("inf")), "margin must be a finite number >= 0, got inf"),
        ((130, 128, 50.0, 128, 5.0), "successes must be a whole number within 0..128"),
        ((1, 2, float("nan"), 128, 5.0), "not a percentage"),
    ],
)
def test_bad_input_is_named(args, message):
    with pytest.raises(ValueError, match=message):
        compare_proportions(*args)


def test_the_docs_state_the_error_rates_this_code_computes():
    """docs/evaluation.md prints `python -m memrepro.scoring.calibration`'s tables (seeded)."""
    docs = docs_text(Path(__file__).resolve().parents[1])
    tables = (error_rate_table(), reachability_table(), memalpha_design_table())
    for table in (*tables, population_table(), sparse_graded_table()):
        assert table in docs


def test_a_one_instance_memalpha_cell_differs_in_about_five_percent_of_perfect_reproductions():
    """Through the table's own path: a MemoryAgentBench source of one instance of 100 questions,
    both intervals a metrics record has, a Cell graded against the paper's one instance."""
    rng = np.random.default_rng(11)
    trials, differs = 400, 0
    for _ in range(trials):
        ours = rng.binomial(1, 0.6, size=100).astype(float)
        paper = 100 * rng.binomial(1, 0.6, size=100).mean()
        mean = 100 * ours.mean()
        ci, fixed = nested_interval([ours.tolist()]), fixed_instances_interval([ours.tolist()])
        cell = Cell(mean, paper, mean - paper, ci=ci, ci_fixed=fixed, n_scored=1, paper_n=1)
        cell = replace(cell, n_questions=100)
        assert cell.design == FIXED_INSTANCES
        differs += cell.verdict in (DIFFERS_ABOVE, DIFFERS_BELOW)
    assert abs(differs / trials - 0.05) < 3 * np.sqrt(0.05 * 0.95 / trials) + 0.01


MEMALPHA_TRIALS = 400
# three Monte-Carlo errors (3.3 points) and one point for the normal approximation
MEMALPHA_MC = 3 * np.sqrt(0.05 * 0.95 / MEMALPHA_TRIALS) + 0.01


@pytest.mark.parametrize("spread", MEMALPHA_SPREADS)
@pytest.mark.parametrize("instances", MEMALPHA_INSTANCES)
def test_memalpha_cells_on_shared_instances_cover_the_true_difference_95_percent(instances, spread):
    """1, 2, 3, 5 released instances of 20-100 questions answered by both sides, the instances'
    true rates 0.6 ± spread: the fixed-instances design covers the true difference (0, and +8
    points) 95 % of the time and a perfect reproduction differs in 5 %."""
    seed = 10 * instances + int(10 * spread)
    null = memalpha_rates(instances, spread, FIXED_INSTANCES, MEMALPHA_TRIALS, seed)
    shifted = memalpha_rates(
        instances, spread, FIXED_INSTANCES, MEMALPHA_TRIALS, seed + 1, shift=0.08
    )
    assert abs(null["differs"] - 0.05) < MEMALPHA_MC
    assert abs(null["coverage"] - 0.95) < MEMALPHA_MC
    assert abs(shifted["coverage"] - 0.95) < MEMALPHA_MC


def test_resampling_shared_instances_is_too_wide_which_is_why_the_fixed_design_is_used():
    # five instances 0.2 apart: the two-level interval counts the instances' spread, which
    # both sides share, so a perfect reproduction almost never differs
    rates = memalpha_rates(5, 0.2, INSTANCES_RESAMPLED, 100, seed=3)
    assert rates["coverage"] > 0.99 and rates["differs"] < 0.01


def test_the_cell_uses_fixed_instances_only_where_the_paper_answered_the_same_ones():
    base = Cell(60.0, 55.0, 5.0, ci=(40.0, 80.0), ci_fixed=(50.0, 70.0), n_scored=5)
    same = replace(base, paper_n=5, n_questions=400)
    subset = replace(base, paper_n=8, n_questions=400)
    assert same.design == FIXED_INSTANCES and same.interval == (50.0, 70.0)
    assert subset.design == INSTANCES_RESAMPLED and subset.interval == (40.0, 80.0)
    assert same.comparison.design == FIXED_INSTANCES
    assert subset.comparison.design == INSTANCES_RESAMPLED


SPARSE_TRIALS = 2000
SPARSE_MC = 3 * np.sqrt(0.025 * 0.975 / SPARSE_TRIALS)  # 1.05 points: three Monte-Carlo errors


@pytest.mark.parametrize("n", SPARSE_SIZES)
@pytest.mark.parametrize("zeros", SPARSE_ZEROS)
def test_a_sparse_graded_score_is_not_flagged_on_either_side_too_often(n, zeros):
    """n = 10-50 a side, 80 or 92 % of items 0 (an F1 at small n), as a table judges it: each
    tail at most 2.5 % within three Monte-Carlo errors. Without the rule on non-zero items the
    low side read *differs* in 4.3-5.6 % at 80 % zeros (n 10-30) and 4.6 % at 92 % (n 50)."""
    rates = graded_tail_rates(n, zeros, SPARSE_TRIALS, seed=n)
    for tail in (DIFFERS_BELOW, DIFFERS_ABOVE):
        assert rates[tail] <= 0.025 + SPARSE_MC, (n, zeros, rates)


def test_a_graded_cell_needs_five_non_zero_items_to_be_judged():
    base = Cell(8.0, 20.0, -12.0, ci=(2.0, 16.0), n_scored=50, paper_n=50)
    assert replace(base, n_nonzero=MIN_NONZERO).verdict is not None
    sparse = replace(base, n_nonzero=MIN_NONZERO - 1)
    assert sparse.verdict is None and sparse.unjudged == TOO_FEW_ITEMS
    assert replace(base, n_nonzero=None).verdict is not None  # a record before n_nonzero
    # right/wrong cells have Wilson's interval, which holds at any count of right answers
    right_wrong = replace(base, right_wrong=True, ours=4.0, n_nonzero=2, ci=(1.1, 13.5))
    assert right_wrong.verdict is not None


def test_the_p_value_is_the_verdicts_own_test():
    for successes in range(40, 90, 3):
        for compared in (
            compare_proportions(successes, 128, 50.0, 128, 5.0),
            compare_proportions(successes, 128, 50.0, None, 5.0),
            compare_graded(successes / 1.28, 4.0, 128, 50.0, 128, 5.0),
        ):
            differs = compared.outcome in (DIFFERS_ABOVE, DIFFERS_BELOW)
            assert differs == (compared.p_value < 0.05), compared
    assert compare_proportions(64, 128, 50.0, 128, 5.0).p_value == 1.0
    assert compare_proportions(128, 128, 0.0, 128, 5.0).p_value < 1e-10


def test_a_paper_number_that_is_no_k_over_n_is_noted():
    assert compare_proportions(64, 128, 79.69, 128, 5.0).grid_note == ""  # 102/128 = 79.6875
    off = compare_proportions(64, 128, 79.68, 128, 5.0)
    assert "no k/128 (nearest 102/128 = 79.69)" in off.note
    assert compare_proportions(64, 128, 79.7, 128, 5.0).grid_note == ""  # one decimal printed


@pytest.mark.parametrize(
    ("cell", "why"),
    [
        (Cell(37.0, 40.0, -3.0, ci=(37.0, 37.0), n_scored=1, paper_n=1), "one graded item"),
        (Cell(50.0, 40.0, 10.0, ci=(50.0, 50.0), n_scored=40, paper_n=40), "no spread"),
        (Cell(50.0, 40.0, 10.0, ci=(20.0, 80.0), n_scored=9, paper_n=9, right_wrong=True), "9"),
    ],
)
def test_a_cell_without_information_reads_too_few_items(cell, why):
    assert cell.verdict is None and cell.unjudged == TOO_FEW_ITEMS, why


def test_a_score_off_its_scale_is_refused():
    with pytest.raises(ValueError, match=r"our score 150\.0 is not within 0\.\.100"):
        compare_graded(150.0, 2.0, 50, 40.0, 50, 5.0)
    with pytest.raises(ValueError, match="our score nan"):
        compare_graded(float("nan"), 2.0, 50, 40.0, 50, 5.0)
    assert compare_graded(-20.0, 5.0, 50, -10.0, 50, 5.0, scale=DIFFERENCE).p_value > 0.05


def test_a_paper_number_off_its_scale_stops_the_table_naming_the_cell():
    table = pd.DataFrame(
        {50: [Cell(60.0, 150.0, -90.0, ci=(50.0, 70.0), n_scored=128)]},
        index=pd.Index(["RL-MemAgent-14B"], name="system"),
        dtype=object,
    )
    with pytest.raises(PaperNumberError, match="table1, row 'RL-MemAgent-14B', column 50: the "):
        attach_paper_n(table, 128, 5.0, "table1")


def test_the_exact_rates_agree_with_a_seeded_simulation():
    """The papers'-n table is exact (binomial sums); a 4,000-trial simulation of the same cell
    lands within three Monte-Carlo errors of it (58.3 % reproduced ±15 at 128 and 50 %)."""
    exact = exact_outcome_rates(0.5, 128, 128, (5.0, 15.0))
    assert sum(exact[15.0].values()) == pytest.approx(1.0, abs=1e-8)
    assert exact[15.0][REPRODUCED] == pytest.approx(0.583, abs=5e-4)
    simulated = outcome_rates(0.5, 128, 128, 15.0, trials=4000, seed=9)
    for verdict, rate in exact[15.0].items():
        assert abs(simulated[verdict] - rate) < 3 * np.sqrt(rate * (1 - rate) / 4000) + 1e-9
