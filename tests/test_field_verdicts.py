"""Every verdict a cell or claim can have maps to one word of open reproductions, or to none."""

from __future__ import annotations

from memrepro.report import cells, claims
from memrepro.report.field_verdicts import (
    FALSIFIED,
    INCONCLUSIVE,
    TOY,
    VERIFIED,
    cell_word,
    claim_word,
    summary_rows,
)
from memrepro.scoring import compare


def test_each_cell_verdict_has_its_word_and_an_unjudged_cell_none():
    assert [cell_word(v) for v in compare.OUTCOMES] == [
        VERIFIED, INCONCLUSIVE, FALSIFIED, FALSIFIED,
    ]  # fmt: skip
    assert cell_word(cells.NOT_COMPARABLE) == TOY
    for unjudged in (cells.TOO_FEW_ITEMS, cells.NOT_SAMPLED, "no paper number", ""):
        assert cell_word(unjudged) == ""


def test_a_claim_on_a_model_that_cannot_reproduce_is_toy_whatever_it_found():
    assert [claim_word(o, "") for o in claims.OUTCOMES] == [
        VERIFIED, FALSIFIED, INCONCLUSIVE, INCONCLUSIVE,
    ]  # fmt: skip
    [toy] = claims.not_comparable([claims.ClaimCheck("c", "RL helps", None, 1.0, claims.HOLDS, "")])
    assert claim_word(toy.outcome, toy.detail) == TOY


def test_the_summary_counts_cells_and_claims_and_leaves_unjudged_cells_out():
    rows = summary_rows(
        [compare.REPRODUCED, compare.DIFFERS_BELOW, cells.NOT_COMPARABLE, cells.TOO_FEW_ITEMS],
        [(claims.HOLDS, ""), (claims.UNDECIDED, "")],
    )
    assert rows == [["table cells", "1", "1", "1", "0"], ["claims", "1", "0", "0", "1"]]


def test_each_table_csv_row_carries_its_word_a_machinery_only_row_toy(tmp_path):
    """The word reaches the CSV (and so run.json): inconclusive where the interval is wider than
    ±δ, toy where the row's model cannot reproduce (no verdict, only the reason it has none)."""
    import json
    from pathlib import Path

    import yaml
    from test_intervals import SYSTEMS, record

    from memrepro.report.cells import mark_machinery_only
    from memrepro.report.records import load_metrics
    from memrepro.report.render import tidy
    from memrepro.report.tables import build_paper_table

    paper = yaml.safe_load((Path(__file__).parents[1] / "config/paper/memagent.yaml").read_text())
    path = tmp_path / "metrics.json"
    path.write_text(json.dumps([record(50, 103)]))  # 103/128 = the paper's 80.47, at its n
    table = build_paper_table("table1", load_metrics([path]), SYSTEMS, paper)
    [row] = tidy(table).to_dict("records")
    assert (row["verdict"], row["field_verdict"]) == (compare.CONSISTENT, INCONCLUSIVE)
    mark_machinery_only(table, {"ours": {**SYSTEMS["ours"], "reproduces": False}})
    [row] = tidy(table).to_dict("records")
    assert (row["verdict"], row["field_verdict"]) == (cells.NOT_COMPARABLE, TOY)
