"""Mem-α's claims checked on a table's cells, and on the paper's own numbers beside ours."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from memrl.report.cells import Cell
from memrl.report.claims import FAILS, HOLDS, NOT_CHECKABLE, UNDECIDED, table_claims
from memrl.report.memalpha_tables import memalpha_paper_rows

PAPER = yaml.safe_load((Path(__file__).parents[1] / "config/paper/memalpha.yaml").read_text())
CLAIMS = {claim["id"]: claim for claim in PAPER["claims"]}


def table(column: str, rows: dict[str, tuple[float | None, float | None]]) -> pd.DataFrame:
    """One column; rows named by paper row: (ours, paper)."""
    cells = [Cell(ours=o, paper=p, delta=None) for o, p in rows.values()]
    frame = pd.DataFrame({column: cells}, index=[f"ours {r}" for r in rows], dtype=object)
    frame.attrs["paper_rows"] = {f"ours {r}": r for r in rows}
    return frame


def test_memory_half_is_our_ratio_to_the_baselines_mean_and_the_papers_own():
    # ours 5 / mean(10, 12) = 0.4545 <= 0.6; the paper's 7.9 / mean(10.8, 11.3) = 0.7149
    cells = table(
        "avg.mem",
        {"Mem-α": (5.0, 7.9), "Long-Context": (10.0, 10.8), "RAG-Top2": (12.0, 11.3)},
    )
    [check] = table_claims(cells, [CLAIMS["memory_half"]], "memalpha_table1")
    assert check.outcome == HOLDS and check.value == pytest.approx(5 / 11)
    assert check.detail == (
        "ratio_to_mean 0.45×, no interval: no sampled input (claim: <= 0.6); "
        "on the paper's own numbers 0.71×"
    )
    assert table_claims(cells, [CLAIMS["memory_half"]], "memalpha_table3") == []  # not its table


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
