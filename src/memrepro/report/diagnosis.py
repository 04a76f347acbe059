"""Why a number differs: a cell's diagnosis.

It opens with the attribution (memrepro.report.attribution): the gap, each factor's measured effect
on the cell's items, the verdict, and what would measure more. Then the cell's setup:
- its model's recipe: trained here, and which keys differ from the recipe behind the printed
  numbers (the recipes tables), or not trained here;
- its protocol: whether the memory is written for the question;
- chance: its table's count of verdicts and its one test of "every cell reproduced"."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memrepro.config import MEMAGENT_RECIPES_TABLE, MEMALPHA_RECIPES_TABLE
from memrepro.report.attribution import Attribution, Evidence, Gap, attribute
from memrepro.report.recipes import MARKS, VERDICT_ROW
from memrepro.systems import system_kind
from memrepro.train.recipes import SIDES

TextTable = dict[str, dict[str, str]]  # row label -> column -> cell
# the reproduction report from a table's files (<run>/tables/<name>.*; it is <run>/reproduction.*)
REPORT_FROM_TABLES = "../reproduction"
# how a recipes table marks a key that differs from each side
DRIFT = {side: tuple(m for sides, m in MARKS.items() if side in sides) for side in SIDES}
SIDE = {"paper": "the paper's stated recipe", "official": "the official script's"}
PIPE = re.compile(r"(?<!\\)\|")


def cell_anchor(table: str, system: str, label: str) -> str:
    """The id of a cell's diagnosis on the reproduction report, from what the table and the
    report both know of the cell: the table's name, the row's display name, the column's label
    (as the table's CSV writes them)."""
    return "diagnosis-" + _slug(f"{table} {system} {label}")


def table_anchor(table: str) -> str:
    """The id of a table's section on the reproduction report."""
    return "table-" + _slug(table)


def from_table(anchor: str, suffix: str) -> str:
    """The link from a table's `suffix` file (.md, .html) to an anchor of the report's."""
    return f"{REPORT_FROM_TABLES}{suffix}#{anchor}"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9_]+", "-", text.lower()).strip("-")


def parse_markdown_table(markdown: str) -> TextTable:
    """The first pipe table of a Markdown text, by row label (its first column) and header; a
    repeated row label keeps its first row."""
    lines = [line.strip() for line in markdown.splitlines() if line.strip().startswith("|")]
    if len(lines) < 2:
        return {}
    header = [cell.strip() for cell in PIPE.split(lines[0].strip("|"))]
    rows: TextTable = {}
    for line in lines[2:]:
        cells = [cell.strip() for cell in PIPE.split(line.strip("|"))]
        rows.setdefault(cells[0], dict(zip(header[1:], cells[1:], strict=False)))
    return rows


TEXT_TABLES = (MEMAGENT_RECIPES_TABLE, MEMALPHA_RECIPES_TABLE)  # the tables a diagnosis reads


@dataclass(frozen=True)
class Cell:
    """A cell to diagnose: its table, system (display), column label and gap (ours − paper with
    its interval, and the evaluation behind it; None where the CSV gives none)."""

    table: str
    system: str
    label: str
    gap: Gap | None = None
    text: str = ""  # as its table's largest misses name it


@dataclass(frozen=True)
class Context:
    """What every diagnosis reads: the systems by display name, the recipes tables by name, each
    table's verdicts and test line, which recipe produced each paper's printed numbers (by
    recipes table), and the evaluations' items (None: no attribution)."""

    systems: Mapping[str, Mapping[str, Any]]
    tables: Mapping[str, TextTable]
    chance: Mapping[str, str] = field(default_factory=dict)
    printed_by: Mapping[str, str] = field(default_factory=dict)
    evidence: Evidence | None = None


@dataclass(frozen=True)
class Diagnosis:
    cell: Cell
    attribution: Attribution | None
    lines: list[str]  # the setup: recipe, protocol, chance

    @property
    def unexplained(self) -> float:
        """What ranks it: the gap no measured factor accounts for (the whole gap without any)."""
        if self.attribution is not None:
            return self.attribution.unexplained
        return abs(self.cell.gap.delta) if self.cell.gap else 0.0


def diagnose(cell: Cell, context: Context) -> Diagnosis:
    """A cell's attribution, then the lines of its setup, each headed by what it is about."""
    system = context.systems.get(cell.system, {})
    found = None
    if cell.gap is not None and context.evidence is not None:
        found = attribute(cell.gap, context.evidence)
    lines = [
        f"Recipe: {_recipe(system, context)}",
        f"Protocol: {_protocol(cell, system)}",
        f"Chance: {context.chance.get(cell.table, 'no table-level test')}",
    ]
    return Diagnosis(cell, found, lines)


def _recipe(system: Mapping[str, Any], context: Context) -> str:
    """Trained here: the keys of each of its jobs that differ from the recipe behind the printed
    numbers (the recipes table's `recipe.printed_by`; the paper's where it names none)."""
    if "memagent_recipe" in system:
        named, table = f"training.recipe: {system['memagent_recipe']}", MEMAGENT_RECIPES_TABLE
    elif "training" in system:
        named, table = "memalpha.training.recipe", MEMALPHA_RECIPES_TABLE
    else:
        return "not trained here (a released checkpoint, a base or a hosted model)"
    rows = {k: v for k, v in context.tables.get(table, {}).items() if k != VERDICT_ROW}
    jobs = sorted({c for row in rows.values() for c in row if c.startswith(f"{system['model']} ")})
    if not jobs:
        return f"trained here ({named}); the {table} table is not part of this run"
    side = context.printed_by.get(table, "paper")
    drifts = []
    for job in jobs:
        keys = [key for key, row in rows.items() if any(m in row.get(job, "") for m in DRIFT[side])]
        listed = f": {', '.join(keys)}" if keys else ""
        drifts.append(f"{job}: {len(keys)} of {len(rows)} keys differ from {SIDE[side]}{listed}")
    behind = f"{SIDE[side]} is the recipe behind the printed numbers"
    return f"trained here ({named}); " + "; ".join(drifts) + f" ({table}; {behind})"


def _protocol(cell: Cell, system: Mapping[str, Any]) -> str:
    kind = system_kind(system["kind"]) if "kind" in system else None
    benchmark = cell.gap.source.benchmark if cell.gap else None
    if kind is None:
        return "not among this run's systems"
    if not kind.memory:
        return "no memory: the model reads the context (or its retrieval) with the question"
    if system.get("question_blind"):
        return "its memory is written without the question (MemoryAgentBench's protocol)"
    if system.get("question_aware"):
        return "its memory is written for each question (MemAgent's protocol on the instances)"
    if benchmark is not None and kind.reads_instances(benchmark):
        return "its memory is written before the questions are asked (MemoryAgentBench's)"
    if system["kind"] == "memagent":
        return "its memory is written for the question (MemAgent's protocol)"
    return "its memory is written while it reads, before the question"
