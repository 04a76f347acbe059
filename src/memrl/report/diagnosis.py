"""Why a number differs: a short diagnosis of a cell, gathered from what the run measured beside
it. For each cell worth a look (a *differs*; in a machinery-only run, each table's largest gaps):
- its model's recipe: trained here (and which of its keys differ from the paper's, from the
  recipes tables), or not trained here;
- its protocol: whether the memory is written for the question, and the protocols table's rows;
- what the context and memory add: the controls table's rows at its benchmark and length;
- whether its scorer explains it: the scorers table's rows there;
- seeds: the seeds table's mean, each seed and best-of-N, or how many samples per question the
  cell rests on;
- chance: its table's count of verdicts and its one test of "every cell reproduced".
It reads the text tables the reproduction report already reads (their Markdown), nothing else."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memrl.config import (
    CONTROLS_TABLE,
    MEMAGENT_RECIPES_TABLE,
    MEMALPHA_RECIPES_TABLE,
    PROTOCOLS_TABLE,
    SCORERS_TABLE,
    SEEDS_TABLE,
)
from memrl.report.seeds import SAMPLINGS, TRAININGS, row_label
from memrl.systems import system_kind

TextTable = dict[str, dict[str, str]]  # row label -> column -> cell
# the reproduction report from a table's files (<run>/tables/<name>.*; it is <run>/reproduction.*)
REPORT_FROM_TABLES = "../reproduction"
DRIFT = ("≠ paper", "≠ both")  # how a recipes table marks a key that differs from the paper's
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


TEXT_TABLES = (
    MEMAGENT_RECIPES_TABLE,
    MEMALPHA_RECIPES_TABLE,
    CONTROLS_TABLE,
    PROTOCOLS_TABLE,
    SCORERS_TABLE,
    SEEDS_TABLE,
)  # the tables a diagnosis reads


@dataclass(frozen=True)
class Cell:
    """A cell to diagnose: its table, system (display), column label, and the benchmarks and
    length of its evaluation (the controls' and scorers' columns)."""

    table: str
    system: str
    label: str
    benchmarks: Sequence[str]
    length: int


@dataclass(frozen=True)
class Context:
    """What every diagnosis reads: the systems by display name, the text tables (TEXT_TABLES)
    by name, each table's verdicts and test line, the benchmarks behind each table's cells, and
    how many samples a question's score rests on."""

    systems: Mapping[str, Mapping[str, Any]]
    tables: Mapping[str, TextTable]
    chance: Mapping[str, str] = field(default_factory=dict)
    benchmarks: Mapping[str, Sequence[str]] = field(default_factory=dict)
    samples: str = "one sample per question"


def columns_of(cell: Cell) -> list[str]:
    """The controls' and scorers' column names of the cell's evaluation."""
    return [f"{b}@{cell.length}" if cell.length else b for b in cell.benchmarks]


def diagnose(cell: Cell, context: Context) -> list[str]:
    """The diagnosis lines of one cell, each headed by what it is about."""
    system = context.systems.get(cell.system, {})
    return [
        f"Recipe: {_recipe(system, context.tables)}",
        f"Protocol: {_protocol(cell, system, context.tables)}",
        f"Without memory: {_controls(cell, system, context.tables)}",
        f"Scorers: {_rows(cell, context.tables.get(SCORERS_TABLE, {}), prefix=False)}",
        f"Seeds: {_seeds(cell, context)}",
        f"Chance: {context.chance.get(cell.table, 'no table-level test')}",
    ]


def _recipe(system: Mapping[str, Any], tables: Mapping[str, TextTable]) -> str:
    """Trained here: the keys of each of its jobs that differ from the paper's recipe."""
    if "memagent_recipe" in system:
        named, table = f"training.recipe: {system['memagent_recipe']}", MEMAGENT_RECIPES_TABLE
    elif "training" in system:
        named, table = "memalpha.training.recipe", MEMALPHA_RECIPES_TABLE
    else:
        return "not trained here (a released checkpoint, a base or a hosted model)"
    rows = tables.get(table, {})
    jobs = sorted({c for row in rows.values() for c in row if c.startswith(f"{system['model']} ")})
    if not jobs:
        return f"trained here ({named}); the {table} table is not part of this run"
    drifts = []
    for job in jobs:
        keys = [key for key, row in rows.items() if any(m in row.get(job, "") for m in DRIFT)]
        listed = f": {', '.join(keys)}" if keys else ""
        drifts.append(f"{job}: {len(keys)} of {len(rows)} keys differ from the paper's{listed}")
    return f"trained here ({named}); " + "; ".join(drifts) + f" ({table})"


def _seeds(cell: Cell, context: Context) -> str:
    """The seeds table's row of the system at the cell's columns, where it ran several."""
    labels = {row_label(cell.system, varies) for varies in (SAMPLINGS, TRAININGS)}
    found = _found(cell, context.tables.get(SEEDS_TABLE, {}), lambda label: label in labels)
    return found or f"{context.samples}; no spread over sampling or training seeds is measured here"


def _controls(cell: Cell, system: Mapping[str, Any], tables: Mapping[str, TextTable]) -> str:
    if "kind" in system and not system_kind(system["kind"]).memory:
        return "not a memory system (the controls table pairs memory systems with the controls)"
    return _rows(cell, tables.get(CONTROLS_TABLE, {}), prefix=True)


def _protocol(cell: Cell, system: Mapping[str, Any], tables: Mapping[str, TextTable]) -> str:
    kind = system_kind(system["kind"]) if "kind" in system else None
    if kind is None:
        said = "not among this run's systems"
    elif not kind.memory:
        said = "no memory: the model reads the context (or its retrieval) with the question"
    elif system.get("question_blind"):
        said = "its memory is written without the question (MemoryAgentBench's protocol)"
    elif system.get("question_aware"):
        said = "its memory is written for each question (MemAgent's protocol on the instances)"
    elif any(kind.reads_instances(benchmark) for benchmark in cell.benchmarks):
        said = "its memory is written before the questions are asked (MemoryAgentBench's)"
    elif system["kind"] == "memagent":
        said = "its memory is written for the question (MemAgent's protocol)"
    else:
        said = "its memory is written while it reads, before the question"
    found = _found(cell, tables.get(PROTOCOLS_TABLE, {}), _either_side(cell.system))
    return said + (f"; {PROTOCOLS_TABLE}: {found}" if found else "")


def _rows(cell: Cell, table: TextTable, prefix: bool) -> str:
    """The table's cells at the cell's columns in the rows of its system (`prefix`: rows
    "<system> vs <control>"; else rows "<scorer>: <system>")."""

    def mine(label: str) -> bool:
        return (
            label.startswith(f"{cell.system} vs ") if prefix else label.endswith(f": {cell.system}")
        )

    return _found(cell, table, mine) or "none run at this benchmark and length"


def _either_side(system: str) -> Callable[[str], bool]:
    return lambda label: label.startswith(f"{system} vs ") or label.endswith(f" vs {system}")


def _found(cell: Cell, table: TextTable, mine: Callable[[str], bool]) -> str:
    """The cells of the rows `mine` picks, at the cell's columns (and at its benchmark's own
    columns, as the protocols table's "mab: <source>")."""
    columns = columns_of(cell)
    own = tuple(f"{b}: " for b in cell.benchmarks)
    found = [
        f"{label} @ {column}: {text}"
        for label, row in table.items()
        if mine(label)
        for column, text in row.items()
        if text != "—" and (column in columns or column.startswith(own))
    ]
    return " | ".join(found)
