"""Verdicts at the outcomes a real reproduction lands on: a far miss, a paper without its n, a
difference without spread, a p-value that is no number, a paper n that is no count."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats
from test_derived_numbers import prediction

from memrepro.evaluation import summarize
from memrepro.report.cells import TOO_FEW_INSTANCES, Cell, PaperNumberError, attach_paper_n
from memrepro.report.records import load_metrics
from memrepro.report.render import write_table
from memrepro.report.reproduction import write_reproduction
from memrepro.report.table_summaries import summarize_table
from memrepro.report.tables import build_paper_table
from memrepro.report.verdict_notes import UNKNOWN_N_APART, verdict_counts, verdict_note
from memrepro.scoring.compare import (
    DIFFERS_ABOVE,
    DIFFERS_BELOW,
    INSTANCES_RESAMPLED,
    OURS_ALONE,
    compare_graded,
    ours_alone_differs_rate,
    standard_error,
)
from memrepro.scoring.intervals import bootstrap
from memrepro.scoring.multiple import Z_CAP, bh_q_values, table_test, z_score

REPO = Path(__file__).resolve().parents[1]
PAPER = yaml.safe_load((REPO / "config/paper/memagent.yaml").read_text())
SYSTEMS = {
    "rl-14b": {
        "display": "RL-MemAgent-14B (ours)",
        "paper_row": "RL-MEMAGENT-14B",
        "kind": "memagent",
    }
}


# --- the far tail -----------------------------------------------------------------------------


@pytest.mark.parametrize("p", [0.5, 0.05, 1e-10, 1e-17, 1e-100, 1e-300])
def test_z_score_is_exact_far_into_the_tail(p):
    assert z_score(p) == pytest.approx(stats.norm.isf(p / 2), rel=1e-9)


def test_a_p_value_beyond_double_precision_counts_as_the_cap():
    assert z_score(0.0) == z_score(5e-324) == Z_CAP
    test = table_test([1e-17, 0.5])
    assert test.statistic == pytest.approx(stats.norm.isf(5e-18) ** 2 + stats.norm.isf(0.25) ** 2)
    assert test.p_value == pytest.approx(stats.chi2.sf(test.statistic, 2), rel=1e-6)


@pytest.mark.parametrize("bad", [math.nan, -0.1, 1.5, True, math.inf])
def test_a_p_value_that_is_no_probability_is_refused(bad):
    with pytest.raises(ValueError, match=r"a p-value must be a finite number in 0\.\.1"):
        z_score(bad)


def write_evaluation(results: Path, name: str, record: dict) -> Path:
    path = results / f"eval/{name}.metrics.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([record]))
    return path


def test_a_far_miss_renders_its_table_its_footnote_and_the_report(tmp_path):
    """13/128 right against the paper's 82.03 of 128 (p ~ 1e-31): the table job and the
    reproduction report run, the cell reads differs below, the table test rejects."""
    predictions = [prediction(i, float(i < 13)) for i in range(128)]
    record = summarize(predictions, "ruler_hqa", "hqa", "rl-14b", 50)
    hqa = write_evaluation(tmp_path, "ruler_hqa", record)
    # a graded cell far off: ROUGE-1 recall 12 ± 1 against the paper's 37.16 (GovReport)
    rng = np.random.default_rng(0)
    rouge = np.clip(rng.normal(0.12, 0.07, 200), 0.01, 1.0)
    graded = [
        prediction(i, 0.0, rouge_1_recall=r, rouge_2_recall=r / 3, rouge_l_recall=r / 2)
        for i, r in enumerate(rouge.tolist())
    ]
    summary = summarize(graded, "longbench", "gov_report", "rl-14b", 0)
    longbench = write_evaluation(tmp_path, "longbench", summary)
    tables = []
    for name, path in (("table1", hqa), ("table2", longbench)):
        table = build_paper_table(name, load_metrics([path]), SYSTEMS, PAPER)
        write_table(table, tmp_path / f"tables/{name}", name)
        tables.append(tmp_path / f"tables/{name}.md")
    hqa_cell = build_paper_table("table1", load_metrics([hqa]), SYSTEMS, PAPER).iloc[0, 0]
    assert hqa_cell.verdict == DIFFERS_BELOW and hqa_cell.comparison.p_value < 1e-25
    sum_cell = build_paper_table("table2", load_metrics([longbench]), SYSTEMS, PAPER)
    rouge_cell = sum_cell.loc["RL-MemAgent-14B (ours)", "gov_report.rouge_1"]
    assert rouge_cell.paper_n == 200 and rouge_cell.verdict == DIFFERS_BELOW
    markdown = tables[0].read_text()
    assert "one test of 'every cell reproduced' (Σz² = " in markdown and "p = <0.001" in markdown
    md, _, cells, _ = write_reproduction({"run": "far"}, tables, [], [], [], tmp_path / "report")
    assert "differs below" in md.read_text()
    rows = list(csv.DictReader(cells.open()))
    assert {r["table"] for r in rows} == {"table1", "table2"}
    assert all(0 <= float(r["q_value"]) <= 1 for r in rows if r["kind"] == "cell")


# --- q-values, the paper's n ------------------------------------------------------------------


def test_q_values_are_for_finite_p_values_only():
    q = bh_q_values([0.01, math.nan, 0.04])
    assert q[0] == pytest.approx(0.02) and math.isnan(q[1]) and q[2] == pytest.approx(0.04)
    assert bh_q_values([0.01, 0.04]) == pytest.approx([0.02, 0.04])  # m counts the finite ones


@pytest.mark.parametrize("bad", [True, 2.5, 0, -3, "128"])
def test_a_paper_n_that_is_no_count_is_refused_naming_table_row_and_column(bad):
    table = pd.DataFrame({"7K": [Cell(50.0, 60.0, -10.0, ci=(41.0, 59.0), n_scored=128)]})
    table.index = ["RL-MemAgent-14B (ours)"]
    with pytest.raises(PaperNumberError, match=r"table1, row 'RL-MemAgent-14B \(ours\)', "):
        attach_paper_n(table, {"7K": bad}, 5.0, "table1")


def test_a_judged_cell_without_a_p_value_stops_the_report_naming_the_csv(tmp_path):
    predictions = [prediction(i, float(i < 60)) for i in range(128)]
    path = write_evaluation(
        tmp_path, "hqa", summarize(predictions, "ruler_hqa", "hqa", "rl-14b", 50)
    )
    table = build_paper_table("table1", load_metrics([path]), SYSTEMS, PAPER)
    write_table(table, tmp_path / "tables/table1", "Table 1")
    csv_path = tmp_path / "tables/table1.csv"
    rows = list(csv.DictReader(csv_path.open()))
    judged = next(r for r in rows if r["verdict"].startswith("differs"))
    judged["p_value"] = "nan"
    with csv_path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(ValueError, match=rf"{csv_path}: row .* with p_value 'nan'"):
        summarize_table(tmp_path / "tables/table1.md")


def test_every_printed_niah_value_is_three_tasks_of_128():
    """Table 8's n (sources.memory_ablation.items.niah) read off its numbers: each is a k/384
    within the 0.01 that averaging three rounded task percentages leaves."""
    assert PAPER["sources"]["memory_ablation"]["items"]["niah"] == 128
    for row, values in PAPER["memory_ablation"]["niah"].items():
        for length, value in values.items():
            nearest = round(value * 384 / 100)
            assert abs(100 * nearest / 384 - value) <= 0.01 + 1e-9, (row, length, value)


# --- a paper without its n --------------------------------------------------------------------

UNKNOWN_TRIALS = 2000


def test_a_perfect_reproduction_judged_on_ours_alone_differs_as_stated():
    """Both sides 200 graded items of the same distribution, the paper's n unknown: the rate
    of *differs* is 2Φ(−1.96/√2) = 16.6 %, not 5 % (seeded, within three Monte-Carlo errors)."""
    rng = np.random.default_rng(3)
    differ = 0
    for trial in range(UNKNOWN_TRIALS):
        ours, paper = (rng.beta(2, 5, 200) for _ in range(2))
        ci = bootstrap(ours.tolist(), seed=trial, resamples=300)
        compared = compare_graded(
            100 * ours.mean(), standard_error(ci), 200, 100 * paper.mean(), None, 5.0
        )
        assert compared.design == OURS_ALONE
        differ += compared.outcome in (DIFFERS_ABOVE, DIFFERS_BELOW)
    rate, expected = differ / UNKNOWN_TRIALS, ours_alone_differs_rate(1.0)
    assert expected == pytest.approx(2 * stats.norm.cdf(-1.959963984540054 / math.sqrt(2)))
    assert abs(rate - expected) < 3 * math.sqrt(expected * (1 - expected) / UNKNOWN_TRIALS)
    assert ours_alone_differs_rate(0.0) == pytest.approx(0.05)


def test_cells_of_unknown_paper_n_are_counted_apart(tmp_path):
    known = Cell(20.0, 60.0, -40.0, ci=(13.8, 28.0), n_scored=128, right_wrong=True)
    cells = {"7K": replace(known, paper_n=128), "14K": replace(known, paper_n=None)}
    table = pd.DataFrame({k: [v] for k, v in cells.items()}, index=["RL-MemAgent-14B (ours)"])
    assert all(cell.verdict == DIFFERS_BELOW for cell in cells.values())
    assert verdict_counts(table)[DIFFERS_BELOW] == 1  # the unknown-n cell counted apart
    note = verdict_note(table)
    assert "(1 cells with a paper number and its n)" in note
    assert f"{UNKNOWN_N_APART} (1): reproduced in 0, consistent in 0, differ above in 0" in note
    assert "16.6 %" in UNKNOWN_N_APART
    # through the table job and the report: Table 1 of a paper file without its n
    unknown = {**PAPER, "sources": {**PAPER["sources"], "ruler_hqa": {}}}
    predictions = [prediction(i, float(i < 26)) for i in range(128)]
    path = write_evaluation(
        tmp_path, "hqa", summarize(predictions, "ruler_hqa", "hqa", "rl-14b", 50)
    )
    table = build_paper_table("table1", load_metrics([path]), SYSTEMS, unknown)
    write_table(table, tmp_path / "tables/table1", "Table 1")
    summary = summarize_table(tmp_path / "tables/table1.md")
    assert summary.cells == [] and [c.verdict for c in summary.unknown_n] == [DIFFERS_BELOW]
    md, _, listed, _ = write_reproduction(
        {"run": "n"}, [summary.markdown], [], [], [], tmp_path / "r"
    )
    assert "paper n unknown, counted apart: 1 of 1 differ (16.6 % expected" in md.read_text()
    assert [row["kind"] for row in csv.DictReader(listed.open())] == ["paper n unknown"]


# --- a difference without spread --------------------------------------------------------------


def test_a_paper_mean_beyond_what_our_items_reach_still_gets_an_interval_of_width():
    """Ours 100 items of 0 and 100 of 0.3 (15 %) against the paper's 60 of 200: the pooled
    variance model has nothing left (c = 0.3 < the pooled 0.375); our own spread floors it."""
    items = [0.0] * 100 + [0.3] * 100
    ci = bootstrap(items)
    compared = compare_graded(15.0, standard_error(ci), 200, 60.0, 200, 5.0)
    low, high = compared.ci95
    assert high - low > 5 and compared.detectable > 0 and compared.outcome == DIFFERS_BELOW
    cell = Cell(15.0, 60.0, -45.0, ci=ci, n_scored=200, paper_n=200, n_nonzero=100)
    assert cell.verdict == DIFFERS_BELOW


# --- Mem-α's instances -------------------------------------------------------------------------


def test_a_memalpha_cell_over_two_resampled_instances_is_not_judged():
    two = Cell(60.0, 40.0, 20.0, ci=(45.0, 75.0), n_scored=2, n_questions=200, paper_n=2)
    assert two.design == INSTANCES_RESAMPLED
    assert two.verdict is None and two.unjudged == TOO_FEW_INSTANCES
    assert replace(two, n_scored=3, paper_n=3).verdict is not None


def test_a_printed_instance_count_other_than_ours_is_said_not_silently_resampled():
    cell = Cell(60.0, 55.0, 5.0, ci=(40.0, 80.0), ci_fixed=(50.0, 70.0), n_scored=4)
    cell = replace(cell, n_questions=400, paper_n=5)
    assert cell.design == INSTANCES_RESAMPLED
    assert "the paper prints 5 instances, ours 4: compared as different" in cell.comparison.note
    assert replace(cell, paper_n=4).comparison.note == ""  # the same count: fixed, no note


# --- non-zero counts in a metrics record -------------------------------------------------------


@pytest.mark.parametrize(
    ("counts", "message"),
    [
        ({"f1": 129}, r"n_nonzero\['f1'\]=129 is no whole count within 0\.\.128"),
        ({"f1": 2.5}, r"n_nonzero\['f1'\]=2\.5 is no whole count"),
        ({"f1": 0}, r"n_nonzero\['f1'\]=0 disagrees with its score f1="),
    ],
)
def test_a_non_zero_count_that_cannot_be_is_refused_naming_the_file(tmp_path, counts, message):
    predictions = [prediction(i, float(i < 60), f1=0.5 * (i < 80)) for i in range(128)]
    record = summarize(predictions, "ruler_hqa", "hqa", "rl-14b", 50)
    assert record["n_nonzero"]["f1"] == 80 and record["n_nonzero"]["accuracy"] == 60
    path = write_evaluation(tmp_path, "hqa", {**record, "n_nonzero": counts})
    with pytest.raises(ValueError, match=rf"{path}: {message}"):
        load_metrics([path])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"right_wrong": []},
            r"accuracy=46\.875 is 60/128 items right \(n_nonzero\), yet 'right_wrong' does not",
        ),
        ({"right_wrong": ["accuracy", "f1"]}, r"ci95\['f1'\]=\[26\.9531, 35\.1562\] disagrees"),
        (
            {"right_wrong": ["accuracy", "f1"], "ci95": {}},
            r"'right_wrong' lists 'f1', but f1=31\.25 over 128 items is not its 80 non-zero",
        ),
        ({"n_lenient_sub_em": 500}, r"n_lenient_sub_em=500 not within 0\.\.n_items"),
        ({"n_inside_gold_sub_em": -1}, r"n_inside_gold_sub_em=-1 not within 0\.\.n_items"),
        ({"n_lenient_sub_em": 2.0}, r"key 'n_lenient_sub_em' has invalid value 2\.0"),
    ],
)
def test_a_count_or_right_wrong_list_the_scores_cannot_give_is_refused(tmp_path, change, message):
    """A proportion not listed as right/wrong would have its Wilson interval read as a
    bootstrap one; a count of items above n_items is no count of them."""
    predictions = [prediction(i, float(i < 60), f1=0.5 * (i < 80)) for i in range(128)]
    record = summarize(predictions, "ruler_hqa", "hqa", "rl-14b", 50)
    assert record["right_wrong"] == ["accuracy", "accuracy_official"]
    load_metrics([write_evaluation(tmp_path, "good", record)])  # as written, it passes
    path = write_evaluation(tmp_path, "hqa", {**record, **change})
    with pytest.raises(ValueError, match=rf"{path}: {message}"):
        load_metrics([path])
