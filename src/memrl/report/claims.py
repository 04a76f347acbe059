"""The papers' claims checked on our numbers: one `ClaimCheck` per claim and system, printed
under a figure or a table and written beside it (`<name>.claims.json`) for the reproduction
report. MemAgent's are checked by its figures (memagent_figures), Mem-α's by its tables
(`table_claims`, on the built table's cells)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from memrl.data.io import write_json_atomic

CLAIMS_SUFFIX = ".claims.json"
CLAIM_LINE, CHECK_LINE = "Paper claim: ", "    ours, "  # how claim_lines begin its lines


@dataclass(frozen=True)
class ClaimCheck:
    """One paper claim against one of our systems (or alone, when it has no number)."""

    claim_id: str
    text: str
    system: str | None  # display name
    value: float | None  # our statistic
    holds: bool | None  # None: not checkable (no number, or lengths not run)
    detail: str


OPS = {
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
}


def claim_lines(checks: Sequence[ClaimCheck]) -> list[str]:
    """Footer lines: each claim once, then our check per system (wrapped by the figure)."""
    lines: list[str] = []
    seen: set[str] = set()
    verdicts = {True: "holds", False: "does NOT hold", None: "not checked"}
    for check in checks:
        if check.claim_id not in seen:
            seen.add(check.claim_id)
            lines.append(f'{CLAIM_LINE}"{check.text}"')
        if check.system is not None:
            lines.append(f"{CHECK_LINE}{check.system}: {check.detail} -> {verdicts[check.holds]}")
    return lines


def not_comparable(checks: Sequence[ClaimCheck]) -> list[ClaimCheck]:
    """The checks of a table or figure whose systems cannot reproduce: none holds or fails."""
    prefix = "not comparable (machinery check only): "
    return [replace(check, holds=None, detail=prefix + check.detail) for check in checks]


def write_claims(checks: Sequence[ClaimCheck], path: Path) -> Path:
    write_json_atomic(path, [asdict(check) for check in checks])
    return path


# How a table claim's statistic combines the `of` row's cell with the `against` rows' cells
STATISTICS = {
    "ratio_to_mean": (lambda of, against: of / (sum(against) / len(against)), "{:.2f}×"),
    "margin_over_best": (lambda of, against: of - max(against), "{:+.1f}"),
}


def table_claims(
    table: pd.DataFrame, claims: Sequence[Mapping[str, Any]], name: str
) -> list[ClaimCheck]:
    """The claims (a paper file's `claims`) that name table `name`, on its cells: the mean of
    `column` over our rows compared with the paper row `of` and those of `against`, combined by
    `statistic`, judged by `op` against `value`; the same on the paper's own numbers beside."""
    checks = []
    for claim in (c for c in claims if name in c["tables"]):
        text = " ".join(str(claim["text"]).split())
        statistic, style = STATISTICS[claim["statistic"]]
        ours, paper = _row_values(table, claim, "ours"), _row_values(table, claim, "paper")
        value = _combine(statistic, ours)
        if value is None:
            rows = "; ".join([claim["of"], *claim["against"]])
            detail = f"not checkable: this run has no (non-zero) {claim['column']} for {rows}"
            checks.append(ClaimCheck(str(claim["id"]), text, None, None, None, detail))
            continue
        holds = OPS[claim["op"]](value, float(claim["value"]))
        detail = (
            f"{claim['statistic']} {style.format(value)} (claim: {claim['op']} {claim['value']})"
        )
        if (printed := _combine(statistic, paper)) is not None:
            detail += f"; on the paper's own numbers {style.format(printed)}"
        checks.append(ClaimCheck(str(claim["id"]), text, claim["of"], value, holds, detail))
    return checks


def _combine(statistic, values: tuple[float, list[float]] | None) -> float | None:
    """The statistic, or None where it says nothing: a ratio whose numerator is 0 (ours wrote no
    memory at all: 0.00× is not "half the memory") or whose denominator is."""
    if values is None:
        return None
    if statistic is STATISTICS["ratio_to_mean"][0] and values[0] == 0:
        return None
    try:
        return statistic(*values)
    except ZeroDivisionError:  # a ratio to baselines without memory
        return None


def _row_values(
    table: pd.DataFrame, claim: Mapping[str, Any], side: str
) -> tuple[float, list[float]] | None:
    """(`of`'s value, `against`'s values) in `claim['column']`, from our cells or the paper's;
    a paper row shown by several of our systems gives their mean; None if one is missing."""
    rows = table.attrs["paper_rows"]
    values = {}
    for row in [claim["of"], *claim["against"]]:
        cells = [table.loc[display, claim["column"]] for display, r in rows.items() if r == row]
        found = [v for cell in cells if (v := getattr(cell, side)) is not None]
        if not found:
            return None
        values[row] = sum(found) / len(found)
    return values[claim["of"]], [values[row] for row in claim["against"]]
