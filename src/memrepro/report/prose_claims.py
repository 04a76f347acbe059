"""The `paper_claims` table: the papers' headline sentences, each quoted with its source, computed
on the paper's own printed numbers (the arithmetic shown, and whether those numbers support the
sentence) and, where a table or figure of ours checks it, that check's outcome on our numbers.
Where a paper's own numbers do not support its sentence, the cell says so with the arithmetic."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from memrepro.config import PAPER_CLAIMS_TABLE
from memrepro.report.claims import CLAIMS_SUFFIX
from memrepro.report.prose_ours import Cells, on_our_cells
from memrepro.report.registry import BOTH_PAPERS, PaperTable, TableInput

Numbers = Sequence[float]
# a case's result from its numbers (the first `of` are the claimed side), and how it is written
COMPUTE: dict[str, tuple[Callable[[Numbers, int], float], Callable[[Numbers, int, float], str]]] = {
    "difference": (lambda x, of: x[0] - x[1], lambda x, of, r: f"{x[0]:g} − {x[1]:g} = {r:+.3g}"),
    "relative_drop": (
        lambda x, of: 100 * (x[0] - x[1]) / x[0],
        lambda x, of, r: f"({x[0]:g} − {x[1]:g}) / {x[0]:g} = {r:.1f} %",
    ),
    "ratio": (lambda x, of: x[0] / x[1], lambda x, of, r: f"{x[0]:g} / {x[1]:g} = {r:.3g}"),
    "value": (lambda x, of: x[0], lambda x, of, r: f"{r:g}"),
    "margin": (
        lambda x, of: max(x[:of]) - max(x[of:]),
        lambda x, of, r: f"{max(x[:of]):g} − {max(x[of:]):g} = {r:+.3g}",
    ),
}
OPS: dict[str, Callable[[float, Any], bool]] = {
    "<": lambda r, v: r < v,
    "<=": lambda r, v: r <= v,
    ">": lambda r, v: r > v,
    ">=": lambda r, v: r >= v,
    "==": lambda r, v: abs(r - v) < 1e-9,
    "!=": lambda r, v: abs(r - v) >= 1e-9,
    "within": lambda r, v: v[0] <= r <= v[1],
}
SUPPORTED, NOT_SUPPORTED, REPORTED = "supported", "**not supported**", "reported"


def cases_of(claim: Mapping[str, Any]) -> list[tuple[str, bool | None]]:
    """Each case's arithmetic ('A: 80 − 70 = +10') and whether it meets `op` `value` (None
    where the sentence states no bound)."""
    compute, write = COMPUTE[claim["compute"]]
    found = []
    for case in claim["cases"]:
        numbers, of = case["numbers"], case["of"]
        result = compute(numbers, of)
        passed = OPS[claim["op"]](result, claim["value"]) if "op" in claim else None
        found.append((f"{case['label']}: {write(numbers, of, result)}", passed))
    return found


def on_the_papers_numbers(claim: Mapping[str, Any]) -> str:
    """Each case's arithmetic, then whether the paper's numbers support the sentence: every case
    (or the share `holds_in` of them: "almost all") meets `op` `value`; without `op` (no number
    in the sentence) reported, not judged; without cases, the claim's own `paper` note."""
    if not claim["cases"]:
        return str(claim.get("paper", "no printed number"))
    cases = cases_of(claim)
    parts = "; ".join(text for text, _ in cases)
    if "op" not in claim:
        return parts + f" → {REPORTED} (the sentence states no bound)"
    return parts + f" → {_verdict(claim, cases)} ({_share(claim, cases)})"


def _verdict(claim: Mapping[str, Any], cases: Sequence[tuple[str, bool | None]]) -> str:
    needed = float(claim.get("holds_in", 1.0)) * len(cases)
    return SUPPORTED if _passed(cases) >= needed else NOT_SUPPORTED


def _passed(cases: Sequence[tuple[str, bool | None]]) -> int:
    return sum(bool(ok) for _, ok in cases)


def _share(claim: Mapping[str, Any], cases: Sequence[tuple[str, bool | None]]) -> str:
    needed = float(claim.get("holds_in", 1.0))
    passed = _passed(cases)
    share = f"{passed} of {len(cases)} pass {claim['op']} {claim['value']}"
    return share + (f", {needed:.0%} needed" if needed < 1 else "")


def unsupported_lines(claims: Sequence[Mapping[str, Any]]) -> list[str]:
    """A Markdown list item per sentence its own paper's numbers do not support: its id, the
    version of the paper it quotes, the share of cases that pass and the arithmetic of those
    that fail (docs/evaluation.md prints these, and a test checks them)."""
    lines = []
    for claim, cases in _judged_claims(claims, NOT_SUPPORTED):
        failing = "; ".join(text for text, ok in cases if not ok)
        lines.append(
            f"- `{claim['id']}` ({claim['version']}): {_share(claim, cases)}; fails at {failing}"
        )
    return lines


def supported_lines(claims: Sequence[Mapping[str, Any]]) -> list[str]:
    """A Markdown list item per sentence its own paper's numbers support: its id, the version
    it quotes, the share of cases that pass and the passing case nearest the bound (its margin),
    as docs/evaluation.md prints them."""
    lines = []
    for claim, cases in _judged_claims(claims, SUPPORTED):
        results = zip(cases, _results(claim), strict=True)
        passing = [(text, result) for (text, ok), result in results if ok]
        nearest = min(passing, key=lambda found: _distance(claim["value"], found[1]))[0]
        lines.append(
            f"- `{claim['id']}` ({claim['version']}): {_share(claim, cases)}; "
            f"nearest the bound at {nearest}"
        )
    return lines


def _judged_claims(
    claims: Sequence[Mapping[str, Any]], verdict: str
) -> list[tuple[Mapping[str, Any], list[tuple[str, bool | None]]]]:
    """The claims with a bound and cases whose paper's numbers give `verdict`, with their cases."""
    found = []
    for claim in claims:
        if not claim["cases"] or "op" not in claim:
            continue
        cases = cases_of(claim)
        if _verdict(claim, cases) == verdict:
            found.append((claim, cases))
    return found


def _results(claim: Mapping[str, Any]) -> list[float]:
    compute = COMPUTE[claim["compute"]][0]
    return [compute(case["numbers"], case["of"]) for case in claim["cases"]]


def _distance(bound: Any, result: float) -> float:
    ends = bound if isinstance(bound, list | tuple) else [bound]
    return min(abs(result - float(end)) for end in ends)


def on_ours(
    claim: Mapping[str, Any], checks: Mapping[str, list[Mapping[str, Any]]], cells: Cells
) -> str:
    """The outcome of our check of the claim per system: its table's or figure's (`ours`: [that
    report, the claim's id]) where this run makes that report, else the sentence's arithmetic
    on our score tables' cells (memrepro.report.prose_ours)."""
    if "ours" not in claim:
        return on_our_cells(claim, cells)
    report, claim_id = claim["ours"]
    if report not in checks:
        return f"{report} is not part of this run"
    found = [c for c in checks[report] if c["claim_id"] == claim_id]
    if not found:
        return f"{report} makes no check {claim_id!r}"
    return "; ".join(f"{c['system'] or report}: {c['outcome']}" for c in found) + f" ({report})"


def load_checks(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Each table's or figure's claim checks and each score table's cells (its CSV) among the
    inputs (the paper files beside them are inputs only so that an edit reruns the table)."""
    records = []
    for path in map(Path, paths):
        if path.name.endswith(CLAIMS_SUFFIX):
            name = path.name.removesuffix(CLAIMS_SUFFIX)
            records.append({"report": name, "checks": json.loads(path.read_text())})
        elif path.suffix == ".csv":
            with path.open(newline="", encoding="utf-8") as handle:
                records.append({"report": path.stem, "cells": list(csv.DictReader(handle))})
    return records


def build_paper_claims_table(
    claims: Sequence[Mapping[str, Any]], records: Sequence[Mapping[str, Any]]
) -> pd.DataFrame:
    """A row per claim: the sentence and its source, how it is read, the paper's arithmetic and
    whether it supports the sentence, and our check."""
    checks = {r["report"]: r["checks"] for r in records if "checks" in r}
    cells = {r["report"]: r["cells"] for r in records if "cells" in r}
    rows = {
        claim["id"]: {
            "Sentence (source)": f"“{claim['text']}” ({claim['where']}; {claim['version']})",
            "Read as": claim.get("reading", ""),
            "On the paper's own numbers": on_the_papers_numbers(claim),
            "On ours": on_ours(claim, checks, cells),
        }
        for claim in claims
    }
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "Claim id"
    unsupported = [c["id"] for c in claims if NOT_SUPPORTED in on_the_papers_numbers(c)]
    frame.attrs["notes"] = [
        "On the paper's own numbers: the printed numbers each sentence rests on, the arithmetic, "
        "and whether they meet the sentence read as stated; on ours: the outcome of the table's or "
        "figure's check of the same sentence on this run's numbers, with its 95 % interval there, "
        "or the same arithmetic on the cells of ours that stand for those numbers (each case's "
        "interval wholly on the claimed side for holds, Bonferroni-corrected over the cases).",
        f"{len(unsupported)} of {len(claims)} sentences are not supported by their own paper's "
        f"numbers{': ' + ', '.join(unsupported) if unsupported else ''}.",
    ]
    return frame


def _build(table: TableInput) -> pd.DataFrame:
    return build_paper_claims_table(table.settings["prose_claims"], table.records)


PAPER_CLAIMS_TABLES = {
    PAPER_CLAIMS_TABLE: PaperTable(_build, BOTH_PAPERS, load=load_checks, text=True)
}
