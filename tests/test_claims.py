"""Mem-α's claims checked on a table's cells, and on the paper's own numbers beside ours."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from memrl.report.cells import Cell
from memrl.report.claims import table_claims
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
    assert check.holds is True and check.value == pytest.approx(5 / 11)
    assert check.detail == "ratio_to_mean 0.45× (claim: <= 0.6); on the paper's own numbers 0.71×"
    assert table_claims(cells, [CLAIMS["memory_half"]], "memalpha_table3") == []  # not its table


def test_a_ratio_over_no_memory_at_all_is_not_checkable_never_holds():
    # a model that wrote nothing has 0.00× the baselines' memory: not "about half"
    cells = table(
        "avg.mem",
        {"Mem-α": (0.0, 7.9), "Long-Context": (10.0, 10.8), "RAG-Top2": (12.0, 11.3)},
    )
    [check] = table_claims(cells, [CLAIMS["memory_half"]], "memalpha_table1")
    assert check.holds is None and check.value is None
    assert check.detail.startswith("not checkable: this run has no (non-zero) avg.mem")


def test_a_claim_whose_rows_did_not_run_is_not_checked():
    cells = table("ruler_qa2_421K.perf", {"Mem-α": (60.0, 68.0), "RAG-Top2": (50.0, 45.0)})
    [check] = table_claims(cells, [CLAIMS["length_generalisation"]], "memalpha_table2")
    assert check.holds is None and check.system is None
    assert "no (non-zero) ruler_qa2_421K.perf for Mem-α; Long-Context" in check.detail


@pytest.mark.parametrize(
    ("claim", "table_name", "column", "printed"),
    [
        ("memory_half", "table1", ("avg", "mem"), "0.71×"),
        ("memory_half", "table2", ("avg", "mem"), "1.07×"),  # its own Table 2: 129 vs 33 and 207
        ("length_generalisation", "table2", ("ruler_qa2_421K", "perf"), "+23.0"),
        ("gamma_zero", "table4", ("avg", "perf"), "-9.9"),
        ("gamma_zero", "table9", ("avg", "perf"), "-14.7"),
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
