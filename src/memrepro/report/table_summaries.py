"""What the reproduction report reads of each table: its judged cells (verdict, p-value, whether
counted apart), its verdict counts, its largest misses and its footnotes, from the CSV and the
Markdown the table job wrote. A judged cell without a p-value in 0..1 stops the report, naming
the CSV and the row."""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from memrepro.config import report_plan
from memrepro.report.attribution import Source
from memrepro.report.cells import MACHINERY_ONLY
from memrepro.report.claims import CHECK_LINE, CLAIM_LINE
from memrepro.report.key_numbers import KeyNumber, key_numbers
from memrepro.report.render import MADE_BY_LINE, NOT_COMPARABLE
from memrepro.report.tables import paper_table
from memrepro.report.verdict_notes import VERDICT_MARKS, VERDICTS_LINE
from memrepro.scoring.compare import DIFFERS_ABOVE, DIFFERS_BELOW, OURS_ALONE

MISSES_SHOWN = 3
MISS_VERDICTS = (DIFFERS_ABOVE, DIFFERS_BELOW)
LEGEND_START = "Cells:"  # the legend line of a table's Markdown (not a footnote)


@dataclass(frozen=True)
class JudgedCell:
    """A cell with a verdict, as its table's CSV states it."""

    table: str
    system: str
    label: str
    verdict: str
    p_value: float
    average: bool  # counted apart: it repeats the cells it averages
    text: str  # ours, the paper's, the difference and its interval
    length: int = 0  # its evaluation's length (documents, tokens; 0: none)
    delta: float | None = None  # ours − paper
    memory: bool = False  # a memory size (Mem-α's "Mem."), not a score
    unknown_n: bool = False  # the paper's n unknown: judged on ours alone, counted apart
    gap_interval: tuple[float, float] | None = None  # of ours − paper
    source: Source | None = None  # the evaluation behind it (its items: the attribution's)

    @property
    def apart(self) -> bool:
        """Counted apart from the calibrated cells: an average, or a cell of unknown paper n."""
        return self.average or self.unknown_n

    @property
    def kind(self) -> str:
        """The judged-cells CSV's `kind`: cell, average or paper n unknown."""
        return "average" if self.average else "paper n unknown" if self.unknown_n else "cell"


@dataclass(frozen=True)
class TableSummary:
    name: str
    paper: str
    caption: str
    markdown: Path
    counts: Mapping[str, int]  # verdict (or NOT_COMPARABLE) -> cells, averages apart
    misses: Sequence[str]  # the largest, as text
    notes: Sequence[str]
    banner: str | None = None  # the table's machinery-only line
    judged: Sequence[JudgedCell] = ()
    gaps: Sequence[JudgedCell] = ()  # not comparable (machinery only), with a difference
    key_numbers: Sequence[KeyNumber] = ()  # its headline rows' (PaperTable.headline)

    @property
    def cells(self) -> list[JudgedCell]:
        """The calibrated cells: the table's own, with the paper's n known."""
        return [c for c in self.judged if not c.apart]

    @property
    def averages(self) -> list[JudgedCell]:
        return [c for c in self.judged if c.average]

    @property
    def unknown_n(self) -> list[JudgedCell]:
        """The table's own cells whose paper n is unknown (judged on ours alone)."""
        return [c for c in self.judged if c.unknown_n and not c.average]


def paper_of_table(name: str) -> str:
    """The section a table is shown in: the one it declares."""
    return paper_table(name).section


def summarize_table(markdown: Path) -> TableSummary:
    """A table's verdict counts, largest misses and footnotes, from its CSV and Markdown."""
    name = markdown.stem
    csv_path = markdown.with_suffix(".csv")
    with csv_path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    judged = [row for row in rows if row.get("verdict") in VERDICT_MARKS]
    own = [row for row in rows if row.get("kind") != "average" and not _unknown_n(row)]
    counts = {v: sum(r.get("verdict") == v for r in own) for v in [*VERDICT_MARKS, NOT_COMPARABLE]}
    text = markdown.read_text(encoding="utf-8")
    banner = next(
        (line[2:] for line in text.splitlines() if line.startswith("> " + MACHINERY_ONLY)), None
    )
    misses = sorted(
        (r for r in judged if r["verdict"] in (DIFFERS_ABOVE, DIFFERS_BELOW)),
        key=lambda r: -abs(float(r["delta"])),
    )
    gaps = [r for r in own if r.get("verdict") == NOT_COMPARABLE and r.get("delta")]
    return TableSummary(
        name=name,
        paper=paper_of_table(name),
        caption=report_plan(name).caption,
        markdown=markdown,
        counts=counts,
        misses=[_miss(row) for row in misses[:MISSES_SHOWN]],
        notes=footnotes(text),
        banner=banner,
        judged=[_judged(name, row, csv_path) for row in judged],
        gaps=[_judged(name, row, csv_path) for row in gaps],
        key_numbers=key_numbers(rows, paper_table(name).headline),
    )


def _unknown_n(row: Mapping[str, str]) -> bool:
    return row.get("design") == OURS_ALONE


def _judged(table: str, row: Mapping[str, str], path: Path) -> JudgedCell:
    return JudgedCell(
        table,
        row["system"],
        row["label"],
        row["verdict"],
        _p_value(row, path) if row["verdict"] in VERDICT_MARKS else math.nan,
        row.get("kind") == "average",
        _miss(row),
        int(row.get("n_docs") or row.get("length") or 0),
        float(row["delta"]) if row.get("delta") else None,
        row.get("column", "").endswith(".mem"),
        _unknown_n(row),
        (float(row["diff_low"]), float(row["diff_high"])) if row.get("diff_low") else None,
        _source(row),
    )


def _source(row: Mapping[str, str]) -> Source | None:
    if not row.get("source_benchmark"):
        return None
    length = int(float(row.get("source_length") or 0))
    return Source(row["source_benchmark"], row["source_task"], row["system_id"], length)


def _p_value(row: Mapping[str, str], path: Path) -> float:
    """A judged cell's p-value: a number in 0..1, or the table's CSV is refused, naming it."""
    text = row.get("p_value") or ""
    try:
        p = float(text)
    except ValueError:
        p = math.nan
    if not (math.isfinite(p) and 0 <= p <= 1):
        raise ValueError(
            f"{path}: row {row['system']!r} @ {row['label']!r} reads {row['verdict']!r} with "
            f"p_value {text!r}: a verdict needs a p-value in 0..1"
        )
    return p


def _miss(row: Mapping[str, str]) -> str:
    ours, paper, delta = (float(row[k]) for k in ("ours", "paper", "delta"))
    text = f"{row['system']} @ {row['label']}: ours {ours:.1f}, paper {paper:.1f}, {row['verdict']}"
    if not row.get("diff_low"):  # not comparable: no interval of the difference
        return f"{text}: ours − paper {delta:+.1f}"
    low, high = float(row["diff_low"]), float(row["diff_high"])
    return f"{text}: ours − paper {delta:+.1f} [{low:+.1f}, {high:+.1f}]"


def footnotes(markdown: str) -> list[str]:
    """The lines under a table's Markdown table: its notes, without what the report shows
    otherwise (the cell legend, the verdict count, the claims, the provenance line)."""
    lines = markdown.splitlines()
    last_row = max((i for i, line in enumerate(lines) if line.startswith("|")), default=-1)
    shown_elsewhere = (LEGEND_START, VERDICTS_LINE, MADE_BY_LINE, CLAIM_LINE, CHECK_LINE)
    return [
        line.strip()
        for line in lines[last_row + 1 :]
        if line.strip() and not line.startswith(shown_elsewhere)
    ]
