"""The papers' claims checked on our numbers: Mem-α's on a table's cells (the paper's own numbers
beside ours), MemAgent's figure claims against rivals; judged on intervals, never on a value."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from memrepro.report.cells import Cell
from memrepro.report.claims import FAILS, HOLDS, NOT_CHECKABLE, UNDECIDED, table_claims
from memrepro.report.memagent_claims import _check_claims
from memrepro.report.memalpha_tables import memalpha_paper_rows
from memrepro.scoring.intervals import clopper_pearson, wilson

PAPER = yaml.safe_load((Path(__file__).parents[1] / "config/paper/memalpha.yaml").read_text())
CLAIMS = {claim["id"]: claim for claim in PAPER["claims"]}


def table(column: str, rows: dict[str, tuple[float | None, float | None]]) -> pd.DataFrame:
    """One column; rows named by paper row: (ours, paper)."""
    cells = [Cell(ours=o, paper=p, delta=None) for o, p in rows.values()]
    frame = pd.DataFrame({column: cells}, index=[f"ours {r}" for r in rows], dtype=object)
    frame.attrs["paper_rows"] = {f"ours {r}": r for r in rows}
    return frame


def test_a_memory_claim_has_no_interval_so_it_is_not_checkable_but_keeps_its_numbers():
    # ours 5 / mean(10, 12) = 0.4545 <= 0.6; the paper's 7.9 / mean(10.8, 11.3) = 0.7149: our
    # memory sizes are not sampled per instance, so nothing says how far 0.45 is from 0.6
    cells = table(
        "avg.mem",
        {"Mem-α": (5.0, 7.9), "Long-Context": (10.0, 10.8), "RAG-Top2": (12.0, 11.3)},
    )
    [check] = table_claims(cells, [CLAIMS["memory_half"]], "memalpha_table1")
    assert check.outcome == NOT_CHECKABLE and check.value == pytest.approx(5 / 11)
    assert check.interval is None
    assert check.detail == (
        "not checkable, no interval: memory sizes are not sampled per instance in this run: "
        "ratio_to_mean 0.45× (claim: <= 0.6); on the paper's own numbers 0.71×"
    )
    assert table_claims(cells, [CLAIMS["memory_half"]], "memalpha_table3") == []  # not its table


def test_a_memory_claim_with_per_instance_intervals_is_judged_on_them():
    rows = {"Mem-α": (5.0, (4.5, 5.6)), "Long-Context": (10.0, (9.0, 11.0))}
    rows["RAG-Top2"] = (12.0, (11.0, 13.2))
    [check] = table_claims(
        interval_table("avg.mem", rows), [CLAIMS["memory_half"]], "memalpha_table1"
    )
    low, high = check.interval
    assert check.outcome == HOLDS and low < 5 / 11 < high < 0.6
    assert check.detail.startswith(f"ratio_to_mean 0.45× [{low:.2f}×, {high:.2f}×]")


def test_a_claim_with_one_unsampled_input_is_not_checkable():
    cells = {
        "Mem-α": Cell(ours=66.0, paper=None, delta=None, ci=(64.0, 68.0)),
        "gpt-4.1-mini": Cell(ours=60.0, paper=None, delta=None),  # no interval
        "Qwen3-4B": Cell(ours=30.0, paper=None, delta=None, ci=(28.0, 32.0)),
    }
    frame = pd.DataFrame({"avg": list(cells.values())}, index=list(cells), dtype=object)
    frame.attrs["paper_rows"] = {row: row for row in cells}
    [check] = table_claims(frame, [CLAIMS["rl_ordering"]], "memalpha_table3")
    assert check.outcome == NOT_CHECKABLE and check.value == pytest.approx(6.0)
    assert check.detail == (
        "not checkable, no interval: an input has none in this run: gap_in_order +6.0 (claim: > 0)"
    )


def test_a_ratio_over_no_memory_at_all_is_not_checkable_never_holds():
    # a model that wrote nothing has 0.00× the baselines' memory: not "about half"
    cells = table(
        "avg.mem",
        {"Mem-α": (0.0, 7.9), "Long-Context": (10.0, 10.8), "RAG-Top2": (12.0, 11.3)},
    )
    [check] = table_claims(cells, [CLAIMS["memory_half"]], "memalpha_table1")
    assert check.outcome == NOT_CHECKABLE and check.value is None
    assert check.detail.startswith("not checkable: this run has no (non-zero) avg.mem")


def test_a_claim_whose_rows_did_not_run_is_not_checked():
    cells = table("ruler_qa2_421K.perf", {"Mem-α": (60.0, 68.0), "RAG-Top2": (50.0, 45.0)})
    [check] = table_claims(cells, [CLAIMS["length_generalisation"]], "memalpha_table2")
    assert check.outcome == NOT_CHECKABLE and check.system is None
    assert "no (non-zero) ruler_qa2_421K.perf for Mem-α; Long-Context" in check.detail


@pytest.mark.parametrize(
    ("claim", "table_name", "column", "printed"),
    [
        ("memory_half", "table1", ("avg", "mem"), "0.71×"),
        ("memory_half", "table2", ("avg", "mem"), "1.07×"),  # its own Table 2: 129 vs 33 and 207
        ("length_generalisation", "table2", ("ruler_qa2_421K", "perf"), "+23.0"),
        ("gamma_zero", "table4", ("avg", "perf"), "-9.9"),
        ("gamma_zero", "table9", ("avg", "perf"), "-14.7"),
        ("outperforms_baselines", "table1", ("avg", "perf"), "+5.4"),
        ("flat_memory_limited", "table1", ("avg", "perf"), "+40.6"),
        ("rl_ordering", "table3", ("avg", "perf"), "+12.5"),
        ("beta_shorter_memory", "table4", ("avg", "mem"), "+1.1"),
        ("beta_lower_performance", "table4", ("avg", "perf"), "+1.6"),
    ],
)
def test_each_claim_on_the_papers_printed_numbers(claim, table_name, column, printed):
    spec = CLAIMS[claim]
    rows = memalpha_paper_rows(PAPER[table_name])
    key, field = column
    cells = table(
        spec["column"],
        {
            row: (rows[row][key][field], rows[row][key][field])
            for row in [spec["of"], *spec["against"]]
        },
    )
    [check] = table_claims(cells, [spec], f"memalpha_{table_name}")
    assert check.detail.endswith(f"on the paper's own numbers {printed}")


def interval_table(column: str, rows: dict[str, tuple[float, tuple[float, float]]]) -> pd.DataFrame:
    """One column of our cells with 95 % intervals; rows named by paper row."""
    cells = [Cell(ours=o, paper=None, delta=None, ci=ci) for o, ci in rows.values()]
    frame = pd.DataFrame({column: cells}, index=[f"ours {r}" for r in rows], dtype=object)
    frame.attrs["paper_rows"] = {f"ours {r}": r for r in rows}
    return frame


@pytest.mark.parametrize(
    ("spread", "outcome"),
    [(1.0, HOLDS), (12.0, UNDECIDED)],  # a 6-point margin: shown at ±1, not at ±12 a score
)
def test_a_claim_is_judged_on_the_interval_of_its_statistic(spread, outcome):
    rows = {"Mem-α": 66.0, "gpt-4.1-mini": 60.0, "Qwen3-4B": 40.0}
    cells = interval_table("avg", {r: (v, (v - spread, v + spread)) for r, v in rows.items()})
    [check] = table_claims(cells, [CLAIMS["rl_ordering"]], "memalpha_table3")
    assert check.outcome == outcome and check.value == pytest.approx(6.0)
    low, high = check.interval
    # the gap of two scores, each ±spread: about ±1.4·spread, so the interval crosses 0 at ±12
    assert low < 6.0 < high and (low < 0) == (outcome == UNDECIDED)
    assert check.detail.startswith(f"gap_in_order +6.0 [{low:+.1f}, {high:+.1f}]")


def test_a_claim_whose_whole_interval_is_on_the_wrong_side_does_not_hold():
    rows = {"Mem-α": 40.0, "gpt-4.1-mini": 60.0, "Qwen3-4B": 30.0}
    cells = interval_table("avg", {r: (v, (v - 2, v + 2)) for r, v in rows.items()})
    [check] = table_claims(cells, [CLAIMS["rl_ordering"]], "memalpha_table3")
    assert check.outcome == FAILS and check.interval[1] < 0


def rivals_table(ours: float, rivals: dict[str, float], spread: float = 3.0) -> pd.DataFrame:
    """Table 1's Avg. column: Mem-α at `ours`, the baselines at theirs, each ±`spread`."""
    rows = {"Mem-α": ours, **rivals}
    return interval_table("avg", {r: (v, (v - spread, v + spread)) for r, v in rows.items()})


BASELINES = ("Long-Context", "RAG-Top2", "MemAgent", "MEM1")


@pytest.mark.parametrize(
    ("scores", "outcome", "closest"),
    [
        ((40.0, 69.0, 35.0, 30.0), UNDECIDED, "RAG-Top2"),  # one baseline within the noise
        ((40.0, 50.0, 35.0, 30.0), HOLDS, "RAG-Top2"),  # clear of every one
        ((40.0, 50.0, 35.0, 90.0), FAILS, "MEM1"),  # one clearly ahead of ours
    ],
)
def test_beating_every_baseline_is_judged_baseline_by_baseline(scores, outcome, closest):
    cells = rivals_table(70.0, dict(zip(BASELINES, scores, strict=True)))
    [check] = table_claims(cells, [CLAIMS["outperforms_baselines"]], "memalpha_table1")
    margin = 70.0 - max(scores)
    assert check.outcome == outcome and check.value == pytest.approx(margin)
    low, high = check.interval  # the pairwise margin over the closest: two scores, each ±3
    assert low < margin < high and high - low == pytest.approx(2 * 3 * 2**0.5, abs=0.3)
    assert check.detail.startswith(
        f"margin_over_best {margin:+.1f} [{low:+.1f}, {high:+.1f}] (the interval: over {closest}, "
        "the lowest of 4) (claim: > 0)"
    )


def test_four_baselines_tied_with_ours_leave_the_claim_undecided_not_failed():
    # the max of four noisy baselines sits above each: judged on it, a tie read as a loss
    cells = rivals_table(60.0, dict.fromkeys(BASELINES, 60.0), spread=5.0)
    [check] = table_claims(cells, [CLAIMS["outperforms_baselines"]], "memalpha_table1")
    assert check.outcome == UNDECIDED and check.value == 0.0
    low, high = check.interval
    assert low == pytest.approx(-high, abs=0.3)  # centred on the tie, not below it


def test_a_margin_under_one_rival_is_that_margin_judged_alone():
    # γ = 0 below the default: "<" on the margin over its one row, no lowest part to name
    rows = {"β=0.05, γ=0": 50.0, "β=0.05, γ=0.1": 64.0}
    cells = interval_table("avg", {r: (v, (v - 3, v + 3)) for r, v in rows.items()})
    [check] = table_claims(cells, [CLAIMS["gamma_zero"]], "memalpha_table4")
    assert check.outcome == HOLDS and check.value == pytest.approx(-14.0)
    assert check.detail.startswith("margin_over_best -14.0 [")
    assert "the interval:" not in check.detail


def ruler_found(scores: dict[str, float], n: int = 500) -> dict:
    """MemAgent's RULER records by key, one task at 8K and 512K: each system k/n right."""
    found = {}
    for sid, score in scores.items():
        k = round(score * n / 100)
        record = {"accuracy": 100 * k / n, "ci95": {"accuracy": list(wilson(k, n))}}
        for length in (8192, 524288):
            found[("ruler", "niah_single_1", sid, length)] = record
    return found


SPECS = {
    "rl": {"display": "RL", "paper_row": "RL"},
    "b1": {"display": "Base 1", "paper_row": "BASE"},
    "b2": {"display": "Base 2", "paper_row": "BASE"},
}
AGAINST = {"id": "beats", "text": "RL beats the baselines", "rows": ["RL"], "against": ["BASE"]}
AGAINST |= {"panel": "niah_single_1", "lengths": [8192, 524288], "statistic": "min"}
AGAINST |= {"op": ">", "value": 0.0}


@pytest.mark.parametrize(("close", "outcome"), [(89.0, UNDECIDED), (70.0, HOLDS)])
def test_a_figure_claim_against_rivals_is_judged_rival_by_rival(close, outcome):
    found = ruler_found({"rl": 90.0, "b1": close, "b2": 50.0})
    [check] = _check_claims(found, SPECS, [AGAINST])
    assert check.outcome == outcome and check.value == pytest.approx(90.0 - close)
    low, high = check.interval  # the margin over Base 1 at one length (both the same here)
    assert check.detail == (
        f"min of the margin over BASE over 8K–512K = {90 - close:.1f} [{low:.1f}, {high:.1f}] "
        "(the interval: over Base 1 at 8K, the lowest of 4) (claim: > 0)"
    )
    two = {sid: SPECS[sid] for sid in ("rl", "b1")}
    [alone] = _check_claims(ruler_found({"rl": 90.0, "b1": close}), two, [AGAINST])
    assert alone.interval == check.interval  # the margin over Base 1 alone


def test_a_figure_claim_against_rivals_takes_the_min():
    with pytest.raises(ValueError, match="against rivals takes statistic 'min'"):
        _check_claims(ruler_found({"rl": 90.0}), SPECS, [{**AGAINST, "statistic": "drop"}])


def test_a_figure_claim_without_intervals_is_not_checkable():
    found = {k: {"accuracy": r["accuracy"]} for k, r in ruler_found({"rl": 99.0}).items()}
    claim = {**AGAINST, "against": [], "op": ">", "value": 95.0}
    [check] = _check_claims(found, SPECS, [claim])
    assert check.outcome == NOT_CHECKABLE and check.value == pytest.approx(99.0)
    assert check.detail == "min over 8K–512K = 99.0, no interval: no sampled input (claim: > 95)"


def test_a_claim_on_right_wrong_tasks_reads_their_pooled_exact_bounds():
    """Three NIAH tasks of 128 items each (MemAgent's n), 122, 123 and 120 right at 512K: the
    claim's interval is Clopper–Pearson's of 365/384, not the tasks' Wilson bounds combined."""
    found = {}
    tasks = ("niah_single_1", "niah_single_2", "niah_single_3")
    for task, right in zip(tasks, (122, 123, 120), strict=True):
        found[("ruler", task, "rl", 524288)] = {
            "accuracy": 100 * right / 128,
            "n_items": 128,
            "ci95": {"accuracy": list(wilson(right, 128))},
            "right_wrong": ["accuracy"],
        }
    claim = {**AGAINST, "against": [], "panel": "niah_mean", "lengths": [524288, 524288]}
    [check] = _check_claims(found, SPECS, [{**claim, "value": 95.0}])
    low, high = clopper_pearson(365, 384, 0.025)
    assert check.value == pytest.approx(100 * 365 / 384)
    assert check.interval == pytest.approx((100 * low, 100 * high), abs=1e-4)
    assert check.outcome == UNDECIDED
