"""Verdicts in the words open reproductions use: verified, falsified, toy and inconclusive.

Hugging Face's and alphaXiv's open reproductions of ICML 2026 papers judge each claim in these
four words. Each cell's and claim's verdict maps to one:

| Word | A table cell | A claim |
|---|---|---|
| verified | reproduced within ±δ | holds |
| falsified | differs, above or below | does not hold |
| toy | not comparable: a model that cannot reproduce (smoke, mini) | checked on such a model |
| inconclusive | consistent: no difference and no agreement shown | undecided, or not checkable |

A cell without a verdict (no paper number, too few items) has no word.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from memrepro.report.cells import NOT_COMPARABLE
from memrepro.report.claims import FAILS, HOLDS
from memrepro.scoring.compare import CONSISTENT, DIFFERS_ABOVE, DIFFERS_BELOW, REPRODUCED

VERIFIED, FALSIFIED, TOY, INCONCLUSIVE = "verified", "falsified", "toy", "inconclusive"
WORDS = (VERIFIED, FALSIFIED, TOY, INCONCLUSIVE)
CELL_WORDS = {
    REPRODUCED: VERIFIED,
    DIFFERS_ABOVE: FALSIFIED,
    DIFFERS_BELOW: FALSIFIED,
    NOT_COMPARABLE: TOY,
    CONSISTENT: INCONCLUSIVE,
}
TOY_CLAIM = "not comparable (machinery check only): "  # memrepro.report.claims.not_comparable


def cell_word(verdict: str) -> str:
    """A table cell's verdict in the field's words; "" for a cell without a verdict."""
    return CELL_WORDS.get(verdict, "")


def claim_word(outcome: str, detail: str) -> str:
    """A claim check's outcome in the field's words."""
    if detail.startswith(TOY_CLAIM):
        return TOY
    return {HOLDS: VERIFIED, FAILS: FALSIFIED}.get(outcome, INCONCLUSIVE)


def word_counts(words: Iterable[str]) -> dict[str, int]:
    """How many of each word, in the order of WORDS (blanks left out)."""
    counted = Counter(words)
    return {word: counted[word] for word in WORDS}


def scope_text(tables: dict[str, int], figures: int) -> str:
    """Which tables and figures the run reports, by paper."""
    papers = ", ".join(f"{paper} {n}" for paper, n in tables.items() if n)
    return (
        f"{_count(sum(tables.values()), 'table')} ({papers or 'none'}), {_count(figures, 'figure')}"
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"


def summary_rows(cells: Iterable[str], claims: Iterable[tuple[str, str]]) -> list[list[str]]:
    """The replication summary's rows: table cells and claims, counted in the field's words."""
    cell_counts = word_counts(cell_word(verdict) for verdict in cells)
    claim_counts = word_counts(claim_word(outcome, detail) for outcome, detail in claims)
    return [
        ["table cells", *map(str, cell_counts.values())],
        ["claims", *map(str, claim_counts.values())],
    ]


SUMMARY_NOTE = (  # the summary's legend, one line a word
    "verified: reproduced within ±δ, or the claim holds",
    "falsified: differs, or the claim does not hold",
    "toy: a model that cannot reproduce the papers (the smoke and mini runs)",
    "inconclusive: neither shown",
    "not counted: cells without a verdict (no paper number, too few items)",
)
