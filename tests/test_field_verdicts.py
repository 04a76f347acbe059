"""Every verdict a cell or claim can have maps to one word of open reproductions, or to none."""

from __future__ import annotations

from memrl.report import cells, claims
from memrl.report.field_verdicts import (
    FALSIFIED,
    INCONCLUSIVE,
    TOY,
    VERIFIED,
    cell_word,
    claim_word,
    summary_rows,
)
from memrl.scoring import compare


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
