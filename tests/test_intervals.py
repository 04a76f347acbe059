"""95 % intervals and verdicts: hand-computed cases, then through a metrics record to a table."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml

from memrepro.evaluation import summarize
from memrepro.report.cells import NOT_SAMPLED, Cell
from memrepro.report.records import load_metrics
from memrepro.report.render import (
    NOT_COMPARABLE,
    format_cell,
    tidy,
    to_markdown,
    write_table,
)
from memrepro.report.tables import build_paper_table
from memrepro.report.verdict_notes import verdict_counts
from memrepro.scoring.compare import (
    CONSISTENT,
    DIFFERS_ABOVE,
    DIFFERS_BELOW,
    REPRODUCED,
    compare_graded,
    compare_proportions,
    detectable_difference,
    standard_error,
)
from memrepro.scoring.intervals import (
    bootstrap,
    fixed_instances_interval,
    interval,
    mean_interval,
    nested_interval,
    wilson,
    wilson_bounds,
)


def test_wilson_matches_the_hand_computed_interval():
    # 8/10: centre (0.8 + z²/20) / (1 + z²/10) = 0.71674, half-width 0.22658
    assert wilson(8, 10) == pytest.approx((49.016, 94.332), abs=1e-3)
    assert wilson(0, 4) == pytest.approx((0.0, 48.99), abs=1e-2)  # never below 0
    assert wilson(4, 4) == pytest.approx((51.01, 100.0), abs=1e-2)
    low, high = wilson(102, 128)  # the papers' 128 questions at 80 %: about ±7 points
    assert (high - low) / 2 == pytest.approx(6.9, abs=0.1)
    with pytest.raises(ValueError):
        wilson(0, 0)


def test_bootstrap_is_seeded_and_hand_checkable():
    # resampling [0, 0.5] twice: means 0, 0.25, 0.5 with probabilities 1/4, 1/2, 1/4
    assert bootstrap([0.0, 0.5]) == (0.0, 50.0)
    assert bootstrap([0.3] * 7) == (30.0, 30.0)
    values = [0.1, 0.9, 0.4, 0.55, 0.7, 0.2]
    assert bootstrap(values) == bootstrap(values)  # a rerun writes the same interval
    low, high = bootstrap(values)
    assert low < 100 * sum(values) / len(values) < high


def test_right_or_wrong_items_get_wilson_and_graded_items_the_bootstrap():
    assert interval([1.0, 0.0, 1.0, 1.0]) == wilson(3, 4)
    assert interval([0.0, 0.5]) == bootstrap([0.0, 0.5])
    assert interval([]) is None


def test_the_mean_of_scores_combines_their_intervals_side_by_side():
    # distances 10 and 10 on each side: sqrt(10² + 10²) / 2 = 7.0711 around the mean 60
    assert mean_interval([50.0, 70.0], [(40.0, 60.0), (60.0, 80.0)]) == pytest.approx(
        (52.9289, 67.0711)
    )
    # three items each 0 of 1 right, Wilson [0, 79.35]: the mean's interval keeps its asymmetry
    high = wilson(0, 1)[1]
    assert mean_interval([0.0] * 3, [wilson(0, 1)] * 3) == pytest.approx(
        (0.0, high / 3**0.5), abs=1e-3
    )


def prediction(score: float, f1: float, failed: bool = False) -> dict:
    return {"score": score, "f1": f1, "failed": failed, "response": "x", "n_calls": 1}


def test_a_metrics_record_carries_each_scores_interval_over_its_items():
    predictions = [prediction(1.0, 1.0), prediction(0.0, 0.5), prediction(1.0, 0.25)]
    predictions.append(prediction(0.0, 0.0, failed=True))
    record = summarize(predictions, "ruler_hqa", "hqa", "s", 50)
    assert record["ci95"]["accuracy"] == pytest.approx(list(wilson(2, 4)))
    assert record["ci95"]["accuracy_official"] == pytest.approx(list(wilson(2, 3)))
    assert record["ci95"]["f1"] == pytest.approx(list(bootstrap([1.0, 0.5, 0.25])))
    assert record["right_wrong"] == ["accuracy", "accuracy_official"]  # f1 is graded


def test_instances_of_questions_get_a_two_level_interval_never_of_zero_width():
    # one instance (7 of MemoryAgentBench's 9 sources): its questions' spread, not [73, 73]
    one = nested_interval([[1.0] * 73 + [0.0] * 27])
    assert one[0] < 73 < one[1] and one[1] - one[0] > 10
    assert one == nested_interval([[1.0] * 73 + [0.0] * 27])  # seeded
    # every question of the instance wrong: the pooled Wilson interval, not [0, 0]
    assert nested_interval([[0.0] * 20]) == wilson(0, 20)
    # several instances: their spread too (wider than the questions alone, pooled)
    spread = nested_interval([[1.0] * 10, [0.0] * 10, [1.0] * 5 + [0.0] * 5])
    assert spread[1] - spread[0] > wilson(15, 30)[1] - wilson(15, 30)[0]
    with pytest.raises(ValueError, match="at least one item in every group"):
        nested_interval([[1.0], []])


def test_a_memalpha_record_takes_the_interval_over_instances_and_their_questions():
    instances = [
        {"score": 0.73, "scores": [1.0] * 73 + [0.0] * 27, "failed": False, "n_calls": 1},
    ]
    record = summarize(instances, "mab", "banking77", "s", 0)
    low, high = record["ci95"]["accuracy"]
    assert record["accuracy"] == pytest.approx(73.0) and low < 73 < high and high - low > 10
    assert record["right_wrong"] == []  # an instance's mean is graded
    assert record["n_items"] == 1 and record["n_questions"] == 100


SYSTEMS = {
    "ours": {
        "display": "RL-MemAgent-14B (ours)",
        "paper_row": "RL-MEMAGENT-14B",
        "kind": "memagent",
    }
}
PAPER = {
    "ruler_hqa": {"RL-MEMAGENT-14B": {50: 80.47, 100: 83.59, 200: 25.0, 400: 95.0}},
    "sources": {"ruler_hqa": {"items": 128}},
}


def record(n_docs: int, right: int, n: int = 128) -> dict:
    return {
        "benchmark": "ruler_hqa",
        "task": "hqa",
        "system": "ours",
        "length": n_docs,
        "mean_tokens": 140.0 * n_docs,
        "n_items": n,
        "n_failed": 0,
        "accuracy": 100 * right / n,
        "accuracy_official": 100 * right / n,
        "ci95": {"accuracy": list(wilson(right, n))},
        "right_wrong": ["accuracy", "accuracy_official"],
    }


def test_each_cell_is_compared_with_both_sampling_errors_and_the_table_counts_them(tmp_path):
    path = tmp_path / "metrics.json"
    # 103/128 = 80.5 against 80.47 and 107/128 against 83.59: no difference shown, and 128 items
    # a side cannot show agreement within ±5; 64/128 = 50.0 is far above 25.0, 100/128 below 95
    path.write_text(
        json.dumps([record(50, 103), record(100, 107), record(200, 64), record(400, 100)])
    )
    table = build_paper_table("table1", load_metrics([path]), SYSTEMS, PAPER)
    cells = table.loc["RL-MemAgent-14B (ours)"]
    verdicts = [CONSISTENT, CONSISTENT, DIFFERS_ABOVE, DIFFERS_BELOW]
    assert [cells[n].verdict for n in (50, 100, 200, 400)] == verdicts
    assert cells[200].comparison == compare_proportions(64, 128, 25.0, 128, 5.0)
    counts = {CONSISTENT: 2, DIFFERS_ABOVE: 1, DIFFERS_BELOW: 1, REPRODUCED: 0}
    assert verdict_counts(table) == {**counts, NOT_COMPARABLE: 0}
    assert format_cell(cells[50]) == "80.5 [73–86] (paper 80.5, +0.0 ○)"
    assert format_cell(cells[200]) == "50.0 [41–59] (paper 25.0, +25.0 ↑)"
    markdown = to_markdown(table, "Table 1")
    assert (
        "Verdicts (4 cells with a paper number and its n): reproduced within the margin in 0 (✓), "
        "consistent (neither a difference nor agreement shown) in 2 (○), 2 differ; 0.05 × 4 = "
        "0.2 expected by chance in a perfect reproduction, 95 % range 0–1 (above in 1 ↑, below "
        "in 1 ↓); one test of 'every cell reproduced' (Σz² = " in markdown
    )
    assert "(the paper's n 128): a difference shows only beyond " in markdown
    assert "Paper rows compared: RL-MemAgent-14B (ours) ← RL-MEMAGENT-14B." in markdown
    csv_path, _, tex_path, html_path = write_table(table, tmp_path / "table1", "Table 1")
    rows = list(csv.DictReader(csv_path.open()))
    assert [row["verdict"] for row in rows[:4]] == verdicts
    p_values = [cells[n].comparison.p_value for n in (50, 100, 200, 400)]
    assert [float(row["p_value"]) for row in rows[:4]] == p_values
    assert float(rows[2]["ci_low"]) == pytest.approx(wilson(64, 128)[0])
    compared = cells[200].comparison
    assert (float(rows[2]["diff_low"]), float(rows[2]["diff_high"])) == compared.ci95
    assert float(rows[2]["detectable"]) == compared.detectable and rows[2]["paper_n"] == "128"
    assert rows[2]["margin"] == "5.0" and rows[2]["comparison_note"] == ""
    assert rows[2]["design"] == "items" and rows[2]["kind"] == "cell"
    tex = tex_path.read_text()
    assert r"$\uparrow$" in tex and r"$\circ$" in tex
    page = html_path.read_text()  # what the Snakemake report shows: cells and every footnote
    assert '<td class="differs-above" title="ours − paper +25.0, 95 % interval [' in page
    # a cell that differs links its diagnosis on the reproduction report
    diagnosis = "../reproduction.html#diagnosis-table1-rl-memagent-14b-ours-28k"
    assert f'<a href="{diagnosis}">50.0 [41–59]<br>(paper 25.0, +25.0 differs ↑)</a></td>' in page
    assert "(paper 80.5, +0.0 consistent)" in page and "<p>Verdicts (" in page
    # its title names the table; a wide table scrolls inside the page, the system column fixed
    assert "<title>table1: Table 1</title>" in page and '<div class="scroll"><table>' in page
    assert "td:first-child{text-align:left;white-space:nowrap;position:sticky;left:0" in page


def test_reproduced_needs_agreement_shown_within_the_margin():
    ours = {"ci": wilson(5000, 10000), "n_scored": 10000, "right_wrong": True}
    assert Cell(50.0, 50.3, -0.3, **ours, paper_n=128).verdict == CONSISTENT  # the paper's 128
    big = Cell(50.0, 50.3, -0.3, **ours, paper_n=10000, margin=2.0)
    assert big.verdict == REPRODUCED and big.comparison.ci90[1] < 2
    alone = Cell(50.0, 50.3, -0.3, **ours, margin=2.0).comparison  # paper n unknown: ours alone
    assert alone.note == "paper n unknown: our sampling error alone" and alone.outcome == REPRODUCED
    graded = Cell(60.0, 55.0, 5.0, ci=(50.0, 70.0), n_scored=40, paper_n=40)
    expected = compare_graded(60.0, standard_error((50.0, 70.0)), 40, 55.0, 40, 5.0)
    assert graded.comparison == expected and graded.verdict == CONSISTENT
    memory = Cell(3.1, 2.2, 0.9, n_scored=4)  # no interval of ours: not sampled, no verdict
    assert memory.verdict is None and memory.unjudged == NOT_SAMPLED


def test_a_record_with_a_bad_interval_is_named(tmp_path):
    path = tmp_path / "m.json"
    bad = record(50, 10)
    bad["ci95"] = {"accuracy": [30.0, 20.0]}
    path.write_text(json.dumps([bad]))
    with pytest.raises(ValueError, match=r"m.json: ci95\['accuracy'\]=\[30.0, 20.0\]"):
        load_metrics([path])


def test_the_papers_n_comes_from_the_items_it_counts(tmp_path):
    """Table 1's numbers are k/128 (config/paper/memagent.yaml `sources.ruler_hqa.items`)."""
    paper = yaml.safe_load((Path(__file__).parents[1] / "config/paper/memagent.yaml").read_text())
    path = tmp_path / "metrics.json"
    path.write_text(json.dumps([record(50, 103)]))
    table = build_paper_table("table1", load_metrics([path]), SYSTEMS, paper)
    [row] = tidy(table).to_dict("records")
    printed = paper["ruler_hqa"]["RL-MEMAGENT-14B"][50]  # 80.47 = 103/128
    assert row["paper"] == printed and row["paper_n"] == 128
    expected = 100 * detectable_difference(0.8047, 128, 128)
    assert row["detectable"] == pytest.approx(expected, abs=1e-3)


def test_an_interval_without_spread_centres_on_the_score_the_mean_of_instance_means():
    """Instances all right or all wrong, of unequal sizes: the score is the mean of their means
    (1/3 here), not the pooled questions' rate (20/24); the interval must hold the score."""
    groups = [[1.0] * 20, [0.0, 0.0], [0.0, 0.0]]
    low, high = fixed_instances_interval(groups)
    assert low < 100 / 3 < high
    assert (low, high) == pytest.approx([100 * b for b in wilson_bounds(24 / 3, 24)])
    graded = fixed_instances_interval([[0.2, 0.2], [0.6, 0.6, 0.6]])
    assert graded == pytest.approx((40.0, 40.0))
