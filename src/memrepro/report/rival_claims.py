"""MemAgent's claim over the agent baselines of its §D.2 ("The results show that MEMAGENT
outperforms these methods": Mem0 and RAG) checked on our tables: per claimed row (the paper's
RL-MemAgent rows), its margin over every rival row (the systems a claim's `rivals` describes:
Mem0's rows in Tables 1 and 3, RAG's with the paper's retriever in Tables 10 and 11) in every
column both have, judged part by part (`judge_lowest`: every margin's interval above 0 for
*holds*); the same smallest margin on the paper's printed cells beside, where both print one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from memrepro.report.cells import AVG
from memrepro.report.claims import (
    NOT_CHECKABLE,
    ClaimCheck,
    described,
    difference,
    judge_lowest,
    lowest,
    lowest_note,
    parts_of,
)
from memrepro.report.rows import Systems, system_specs


def rival_claims(
    table: pd.DataFrame, systems: Systems, claims: Sequence[Mapping[str, Any]], name: str
) -> list[ClaimCheck]:
    """The claims (a paper file's `rival_claims`) that name table `name`, one check per row
    whose paper row is one of a claim's `of`."""
    checks = []
    for claim in (c for c in claims if name in c["tables"]):
        specs = system_specs(systems)
        ids, paper_rows = table.attrs["system_ids"], table.attrs["paper_rows"]
        text = " ".join(str(claim["text"]).split())
        rivals = [label for label, sid in ids.items() if _matches(specs[sid], claim["rivals"])]
        for label in (label for label, row in paper_rows.items() if row in claim["of"]):
            checks.append(_check(table, claim, text, label, rivals))
    return checks


def _matches(spec: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """A system is a rival when its spec has every value `wanted` names (`kind: rag`, ...)."""
    return all(spec.get(key) == value for key, value in wanted.items())


def _check(
    table: pd.DataFrame, claim: Mapping[str, Any], text: str, label: str, rivals: list[str]
) -> ClaimCheck:
    labels = table.attrs.get("column_labels", {})
    columns = [c for c in table.columns if c != AVG]
    named, printed = {}, []
    for rival in rivals:
        for column in columns:
            ours, theirs = table.loc[label, column], table.loc[rival, column]
            where = f"over {rival} @ {labels.get(column, column)}"
            if ours.ours is not None and theirs.ours is not None:
                named[where] = (difference, [(ours.ours, ours.ci), (theirs.ours, theirs.ci)])
            if ours.paper is not None and theirs.paper is not None:
                printed.append(ours.paper - theirs.paper)
    bound = f"(claim: {claim['op']} {claim['value']})"
    paper = f"; on the paper's own numbers {min(printed):+.1f}" if printed else ""
    if not named:
        detail = f"not checkable: this run has no cell of {label} beside a rival's{paper}"
        return ClaimCheck(str(claim["id"]), text, label, None, NOT_CHECKABLE, detail)
    parts = parts_of(named)
    least = lowest(parts)
    detail = f"smallest margin {described(least.value, least.interval, '{:+.1f}')} points"
    detail += f"{lowest_note(least, parts)} {bound}{paper}"
    outcome = judge_lowest(claim["op"], float(claim["value"]), parts)
    return ClaimCheck(str(claim["id"]), text, label, least.value, outcome, detail, least.interval)
