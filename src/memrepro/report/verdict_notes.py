"""A table's verdicts in words: how many cells have each, what chance alone gives among them,
one test of the whole table, the cells counted apart (averages, an unknown paper n), and what the
verdicts could see (the paper's n, the margin, the detectable differences, the cells not judged).
memrepro.report.render prints these under every table."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from memrepro.report.cells import (
    DERIVED,
    NOT_COMPARABLE,
    NOT_SAMPLED,
    TOO_FEW_INSTANCES,
    TOO_FEW_ITEMS,
    Cell,
)
from memrepro.report.diagnosis import from_table, table_anchor
from memrepro.scoring.compare import (
    ALPHA,
    CONSISTENT,
    DIFFERS_ABOVE,
    DIFFERS_BELOW,
    MIN_INSTANCES,
    MIN_ITEMS,
    MIN_NONZERO,
    REPRODUCED,
    Z90,
    Z_POWER80,
    ours_alone_differs_rate,
)
from memrepro.scoring.intervals import Z95
from memrepro.scoring.multiple import chance_range, table_test

VERDICT_MARKS = {REPRODUCED: "✓", CONSISTENT: "○", DIFFERS_ABOVE: "↑", DIFFERS_BELOW: "↓"}
VERDICTS_LINE = "Verdicts "  # how the verdict footnote begins


def judged_cells(table: pd.DataFrame) -> tuple[list[Cell], list[Cell], list[Cell]]:
    """The cells with a verdict: the table's own whose paper n is known, its averages, and its
    own with the paper's n unknown (these two counted apart: neither is a calibrated test)."""
    cells = [cell for _, row in table.iterrows() for cell in row if cell.verdict]
    own = [c for c in cells if not c.parts]
    return (
        [c for c in own if c.paper_n is not None],
        [c for c in cells if c.parts],
        [c for c in own if c.paper_n is None],
    )


def verdict_counts(table: pd.DataFrame) -> dict[str, int]:
    """How many of the table's own cells with a known paper n (averages and unknown n apart)
    have each verdict, and how many with both numbers are not comparable."""
    own = [cell for _, row in table.iterrows() for cell in row if not cell.parts]
    known = [cell for cell in own if not (cell.verdict and cell.paper_n is None)]
    return _counts(known) | {NOT_COMPARABLE: sum(c.unjudged == NOT_COMPARABLE for c in own)}


def _counts(cells: Sequence[Cell]) -> dict[str, int]:
    return {verdict: sum(c.verdict == verdict for c in cells) for verdict in VERDICT_MARKS}


def verdict_note(table: pd.DataFrame) -> str:
    """The verdicts counted: the cells, what chance alone gives among them, one test of the
    whole table; the averages and the cells whose paper n is unknown apart."""
    cells, averages, unknown = judged_cells(table)
    if not cells and not averages and not unknown:
        if any(c.unjudged == NOT_COMPARABLE for _, row in table.iterrows() for c in row):
            return f"{VERDICTS_LINE}none: the cells are not comparable (machinery check only)."
        return (
            f"{VERDICTS_LINE}none: no cell has a paper number, our interval and at least "
            f"{MIN_ITEMS} items."
        )
    parts = [f"{VERDICTS_LINE}({len(cells)} cells with a paper number and its n): {counted(cells)}"]
    if test := table_test([c.comparison.p_value for c in cells if c.comparison]):
        parts.append(test.text())
        if test.p_value < ALPHA and table.attrs.get("name"):
            link = from_table(table_anchor(table.attrs["name"]), ".html")
            parts.append(f"its cells worth a look, with their diagnoses: {link}")
    if averages:
        parts.append(f"averages, counted apart ({len(averages)}): {counted(averages)}")
    if unknown:
        parts.append(f"{UNKNOWN_N_APART} ({len(unknown)}): {counted_plainly(unknown)}")
    return "; ".join(parts) + "."


UNKNOWN_N_APART = (
    "cells whose paper n is unknown, judged on our error alone and counted apart (a perfect "
    f"reproduction reads differs in {100 * ours_alone_differs_rate():.1f} % of them where the "
    "paper's n equals ours, 5 % only where it is far larger; kept out of the chance range, the "
    "table test and Benjamini–Hochberg)"
)


def counted_plainly(cells: Sequence[Cell]) -> str:
    """'reproduced in 0, consistent in 4, differ above in 1, below in 0': no chance range."""
    counts = _counts(cells)
    return (
        f"reproduced in {counts[REPRODUCED]}, consistent in {counts[CONSISTENT]}, differ "
        f"above in {counts[DIFFERS_ABOVE]}, below in {counts[DIFFERS_BELOW]}"
    )


def counted(cells: Sequence[Cell]) -> str:
    """'reproduced in 4 (✓), consistent in 50 (○), 3 differ; 0.05 × 57 = 2.9 expected by
    chance …, above in 1 (↑), below in 2 (↓)'."""
    counts = _counts(cells)
    differ = counts[DIFFERS_ABOVE] + counts[DIFFERS_BELOW]
    return (
        f"reproduced within the margin in {counts[REPRODUCED]} ({VERDICT_MARKS[REPRODUCED]}), "
        f"consistent (neither a difference nor agreement shown) in {counts[CONSISTENT]} "
        f"({VERDICT_MARKS[CONSISTENT]}), {chance_range(len(cells)).text(differ)} (above in "
        f"{counts[DIFFERS_ABOVE]} {VERDICT_MARKS[DIFFERS_ABOVE]}, below in "
        f"{counts[DIFFERS_BELOW]} {VERDICT_MARKS[DIFFERS_BELOW]})"
    )


def comparison_note(table: pd.DataFrame) -> str:
    """What the verdicts could see: the paper's n, the margin, the range of detectable
    differences, and the cells judged on our error alone or not at all."""
    judged = [c.comparison for _, row in table.iterrows() for c in row if c.comparison]
    unjudged = [c.unjudged for _, row in table.iterrows() for c in row if c.unjudged]
    if not judged and not unjudged:
        return ""
    lines = []
    if judged:
        sizes = sorted({c.paper_n for c in judged if c.paper_n is not None})
        unknown = sum(c.paper_n is None for c in judged)
        detectable = sorted(c.detectable for c in judged)
        margins = sorted({c.delta for c in judged})
        said = f"the paper's n {_span(sizes)}" if sizes else "the paper's n unknown: ours alone"
        if sizes and unknown:
            said += f"; paper n unknown in {unknown} cells: ours alone"
        lines.append(
            f"Each verdict compares ours − paper with both sampling errors ({said}): "
            f"a difference shows only beyond {detectable[0]:.0f}–{detectable[-1]:.0f} points "
            f"(80 % power), and 'reproduced' needs the 90 % interval inside ±{_span(margins)} "
            "points, within reach only of a cell whose detectable difference is below about "
            f"{REACH:.1f} times the margin (CSV: diff_low, diff_high, detectable, margin, "
            "paper_n)."
        )
    for reason, meaning in (
        (DERIVED, "averages the paper does not print: no verdict"),
        (NOT_SAMPLED, "without an interval of ours (memory sizes): no verdict"),
        (
            TOO_FEW_ITEMS,
            f"with fewer than {MIN_ITEMS} sampled items, a graded score with fewer than "
            f"{MIN_NONZERO} of them above 0, or an interval without width: shown, "
            "no verdict",
        ),
        (
            TOO_FEW_INSTANCES,
            f"over fewer than {MIN_INSTANCES} instances that differ from the paper's (resampled): "
            "shown, no verdict",
        ),
    ):
        if count := unjudged.count(reason):
            lines.append(f"{count} cells {meaning} (CSV verdict '{reason}').")
    return " ".join(lines)


# the 90 % interval's half-width fits in ±δ only if the detectable difference (the 95 % and 80 %
# quantiles' sum of standard errors) is below this many δ
REACH = (Z95 + Z_POWER80) / Z90


def _span(values: Sequence[float]) -> str:
    low, high = values[0], values[-1]
    return f"{low:g}" if low == high else f"{low:g}–{high:g}"
