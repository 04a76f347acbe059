"""The papers' claims as the reproduction report lists them: the checks each figure and table
wrote (`.claims.json`: memrepro.report.claims), counted per paper, then listed, those judged first
and those this run cannot check collapsed below them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from memrepro.data.io import read_json
from memrepro.report.claims import CLAIMS_SUFFIX, FAILS, HOLDS, NOT_CHECKABLE
from memrepro.report.html_page import prose


@dataclass(frozen=True)
class Claim:
    """A paper claim checked on one of our systems (a figure's or table's `.claims.json`)."""

    paper: str
    source: str  # the figure or table that checks it
    text: str
    system: str | None
    outcome: str  # memrepro.report.claims.OUTCOMES
    detail: str


def read_claims(path: Path, paper: str) -> list[Claim]:
    """The checks a figure or table wrote (memrepro.report.claims.ClaimCheck as JSON)."""
    source = path.name.removesuffix(CLAIMS_SUFFIX)
    return [
        Claim(paper, source, c["text"], c["system"], c["outcome"], c["detail"])
        for c in read_json(path)
    ]


def claims_text(claims: Sequence[Claim]) -> str:
    """How many checks hold, fail or stay undecided, and how many could not be judged."""
    judged, _ = split_claims(claims)
    if not claims:
        return "no claim checked"
    if not judged:
        return f"no claim judged ({len(claims)} checks not checkable or not comparable)"
    counts = {outcome: sum(c.outcome == outcome for c in judged) for outcome in (HOLDS, FAILS)}
    undecided = len(judged) - counts[HOLDS] - counts[FAILS]
    return (
        f"{counts[HOLDS]} of {len(judged)} claim checks hold, {counts[FAILS]} do not, "
        f"{undecided} undecided (the 95 % interval across the claim's bound)"
    )


def split_claims(claims: Sequence[Claim]) -> tuple[list[Claim], list[Claim]]:
    """The claims judged here, then those that cannot be (shown collapsed)."""
    return (
        [c for c in claims if c.outcome != NOT_CHECKABLE],
        [c for c in claims if c.outcome == NOT_CHECKABLE],
    )


def claim_line(claim: Claim) -> str:
    ours = f"ours, {claim.system}: " if claim.system else ""
    return f"[{claim.outcome}] {claim.text} ({claim.source}) {ours}{claim.detail}"


def collapsed_summary(unchecked: Sequence[Claim]) -> str:
    return f"<summary>{len(unchecked)} not checkable here</summary>"


def markdown_claims(claims: Sequence[Claim]) -> list[str]:
    judged, unchecked = split_claims(claims)
    lines = ["### Claims", "", *(f"- {claim_line(c)}" for c in judged)]
    if unchecked:
        lines += [
            *([""] if judged else []),
            f"<details>{collapsed_summary(unchecked)}",
            "",
            *(f"- {claim_line(c)}" for c in unchecked),
            "",
            "</details>",
        ]
    return [*lines, ""]


def html_claims(claims: Sequence[Claim]) -> str:
    judged, unchecked = split_claims(claims)
    items = "".join(f"<li>{prose(claim_line(c))}</li>" for c in judged)
    text = f"<h3>Claims</h3><ul>{items}</ul>"
    if unchecked:
        rest = "".join(f"<li>{prose(claim_line(c))}</li>" for c in unchecked)
        text += f"<details>{collapsed_summary(unchecked)}<ul>{rest}</ul></details>"
    return text
