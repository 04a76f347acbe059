"""A table's cell and its verdict: our score with its interval, the paper's number with its n,
and the comparison of the two (memrepro.scoring.compare) on the design the data has, or why a cell
has none (not comparable, derived, not sampled, too few items); the machinery-only banner of
systems that cannot reproduce. Tables of cells are assembled in memrepro.report.assemble from the
records of memrepro.report.records, with the rows of memrepro.report.rows.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from memrepro.report.rows import Systems, system_specs
from memrepro.scoring.compare import (
    DEFAULT_MARGIN,
    FIXED_INSTANCES,
    INSTANCES_RESAMPLED,
    ITEMS,
    MIN_INSTANCES,
    MIN_ITEMS,
    PERCENT,
    Comparison,
    check_paper_n,
    compare_graded,
    compare_proportions,
    standard_error,
    too_sparse,
)
from memrepro.scoring.intervals import Interval

BENCHMARK = "ruler_hqa"
DASH = "—"
FAILED_MARK = "†"  # empty outputs (failed requests among them) dropped, as the official eval
OVER_ALL = "over all"  # beside such a cell: ours with them counted wrong
PARTIAL_MARK = "*"
AVG = "avg"
MEM_LABEL = "Mem."


@dataclass(frozen=True)
class ControlGain:
    """A memory system's cell against a control that needs no memory (closed-book): ours − the
    control on the items both answered, its paired 95 % interval and their count
    (memrepro.report.control_gains), and the control's flag where it reaches ours."""

    label: str  # the control's (closed-book)
    system: str  # the control system's display name
    gain: float
    interval: Interval
    n: int
    flag: str | None = None

    @property
    def text(self) -> str:
        low, high = self.interval
        flag = f": {self.flag}" if self.flag else ""
        return f"vs {self.label} {self.gain:+.1f} [{low:+.1f}, {high:+.1f}]{flag}"


@dataclass(frozen=True)
class Cell:
    """One (system, column) entry; percentages. `mark` flags a partial average, `extras` are
    scores shown beside ours (e.g. {"F1": 61.2}). The comparison with the paper's number
    (memrepro.scoring.compare) needs our interval, the items behind ours and the paper's n."""

    ours: float | None
    paper: float | None
    delta: float | None
    n_items: int = 0
    n_dropped: int = 0  # items left out as the official evaluator does (FAILED_MARK)
    accuracy_official: float | None = None
    mean_tokens: float | None = None
    mark: str = ""
    extras: Mapping[str, float | None] = field(default_factory=dict)
    ci: Interval | None = None  # our 95 % interval (memrepro.scoring.intervals)
    decimals: int = 1  # shown with this many decimals (0: a count)
    comparable: bool = True  # False: a model that cannot reproduce the papers (mark_machinery_only)
    n_scored: int = 0  # the items behind `ours` (the dropped ones left out where they are)
    n_questions: int | None = None  # the questions of its instances (Mem-α), where it has them
    right_wrong: bool = False  # every item 0 or 1: a proportion (Newcombe), else graded
    parts: tuple[Any, ...] = ()  # an average's columns (its paper n is theirs summed)
    derived: bool = False  # an average the paper never printed: shown, never judged
    paper_n: int | None = None  # the items behind the paper's number (None: unknown)
    margin: float = DEFAULT_MARGIN  # ±δ of `reproduced`, in points
    ci_fixed: Interval | None = None  # Mem-α: our 95 % interval with the instances held fixed
    scale: tuple[float, float] = PERCENT  # a difference of two scores: (-100, 100)
    source: tuple[str, str, str, int] | None = None  # (benchmark, task, system id, length)
    gain: ControlGain | None = None  # ours against a control (memrepro.report.control_gains)
    n_nonzero: int | None = None  # the sampled units above 0 (None: not recorded)

    @property
    def design(self) -> str:
        """How the comparison samples (memrepro.scoring.compare): Mem-α's instances held fixed
        where the paper's n is ours (both sides answered the same released instances, and
        each has two or more questions), resampled where they differ; items otherwise."""
        if self.ci_fixed is not None and self.paper_n == self.n_scored:
            return FIXED_INSTANCES
        return INSTANCES_RESAMPLED if self.n_questions is not None else ITEMS

    @property
    def interval(self) -> Interval | None:
        """Our 95 % interval on the cell's design: the one shown and compared."""
        return self.ci_fixed if self.design == FIXED_INSTANCES else self.ci

    @property
    def sampled_units(self) -> int:
        """What the interval samples: a Mem-α cell's questions, else its items."""
        return self.n_questions if self.n_questions is not None else self.n_scored

    @property
    def too_few_items(self) -> bool:
        """Fewer than MIN_ITEMS sampled units, a graded score with fewer than MIN_NONZERO of
        them above 0, or an interval without width (ours; the difference's, `comparison`): no
        verdict."""
        bounds = self.interval
        return (
            self.sampled_units < MIN_ITEMS
            or too_sparse(self.right_wrong, self.n_nonzero)
            or (bounds is not None and bounds[0] == bounds[1])
        )

    @property
    def too_few_instances(self) -> bool:
        """Instances resampled (they differ from the paper's) but fewer than MIN_INSTANCES of
        them: the spread between instances cannot be read from one or two."""
        return self.design == INSTANCES_RESAMPLED and self.n_scored < MIN_INSTANCES

    @functools.cached_property
    def comparison(self) -> Comparison | None:
        """Ours − paper with both sampling errors; None where there is nothing to judge."""
        bounds = self.interval
        if self.ours is None or self.paper is None or bounds is None or not self.n_scored:
            return None
        if not self.comparable or self.derived or self.too_few_items or self.too_few_instances:
            return None
        compared = replace(self._compared(bounds), design_note=self._design_note)
        low, high = compared.ci95
        return compared if high > low else None  # a difference without spread judges nothing

    @property
    def _design_note(self) -> str:
        """Where ours could have been compared on fixed instances but the paper prints another
        count of them: said, not silently resampled."""
        if self.ci_fixed is None or self.paper_n in (None, self.n_scored):
            return ""
        return (
            f"the paper prints {self.paper_n} instances, ours {self.n_scored}: compared as "
            "different instances (resampled)"
        )

    def _compared(self, bounds: Interval) -> Comparison:
        if self.right_wrong:
            successes = round(self.ours * self.n_scored / 100)
            return compare_proportions(
                successes, self.n_scored, self.paper, self.paper_n, self.margin
            )
        fixed = self.design == FIXED_INSTANCES
        return compare_graded(
            self.ours,
            standard_error(bounds),
            self.n_scored,
            self.paper,
            self.n_scored if fixed else self.paper_n,
            self.margin,
            scale=self.scale,
            design=self.design,
        )

    @property
    def verdict(self) -> str | None:
        """reproduced (within ±margin), consistent, differs above or below: None unjudged."""
        return None if self.comparison is None else self.comparison.outcome

    @property
    def unjudged(self) -> str | None:
        """Why a cell with ours and a paper number has no verdict (None: it has one, or it
        lacks either number)."""
        if self.ours is None or self.paper is None or self.verdict is not None:
            return None
        if not self.comparable:
            return NOT_COMPARABLE
        if self.derived:
            return DERIVED
        if self.interval is None or not self.n_scored:
            return NOT_SAMPLED
        return TOO_FEW_INSTANCES if self.too_few_instances else TOO_FEW_ITEMS


NOT_COMPARABLE = "not comparable"  # a system that cannot reproduce the papers
DERIVED = "derived"  # an average the paper does not print: no verdict
NOT_SAMPLED = "not sampled"  # no interval of ours (a memory size): no verdict
TOO_FEW_ITEMS = "too few items"  # below MIN_ITEMS, or an interval without width: no verdict
TOO_FEW_INSTANCES = "too few instances"  # resampled instances, below MIN_INSTANCES: no verdict
PaperSizes = int | Mapping[Any, int] | None  # the paper's n: per table, per column, unknown


class PaperNumberError(ValueError):
    """A paper file's number that cannot be a score (the table job names the file)."""


def attach_paper_n(
    table: pd.DataFrame, sizes: PaperSizes, margin: float, name: str = "table"
) -> None:
    """In place: each cell learns the paper's n (an average: its columns' summed; None where
    any is unknown) and the margin ±δ its verdict uses. A paper number off its cell's scale
    (not finite, or outside 0..100), or a paper n that is no whole number >= 1 (True, 2.5),
    raises PaperNumberError naming the table, row and column."""

    def size(key: Any) -> object:
        return sizes.get(key) if isinstance(sizes, Mapping) else sizes

    for column in table.columns:
        cells = []
        for row, cell in zip(table.index, table[column], strict=True):
            if isinstance(cell, Cell):
                _check_paper_number(cell, name, row, column)
                counts = [_paper_n(size(key), name, row, key) for key in cell.parts or (column,)]
                n = None if None in counts else sum(c for c in counts if c is not None)
                cell = replace(cell, paper_n=n, margin=margin)
            cells.append(cell)
        table[column] = cells


def _paper_n(size: object, name: str, row: Any, column: Any) -> int | None:
    """A paper file's item count for one column: a whole number >= 1, or None (unknown)."""
    if size is None:
        return None
    try:
        return check_paper_n(size)
    except ValueError as error:
        raise PaperNumberError(f"{name}, row {row!r}, column {column!r}: {error}") from None


def _check_paper_number(cell: Cell, name: str, row: Any, column: Any) -> None:
    """A score's paper number lies on its scale (memory sizes, which have no interval of ours
    and no scale, are not checked)."""
    paper, (low, high) = cell.paper, cell.scale
    if paper is None or cell.ci is None:
        return
    number = isinstance(paper, int | float) and not isinstance(paper, bool)
    if number and math.isfinite(paper) and low <= paper <= high:
        return
    raise PaperNumberError(
        f"{name}, row {row!r}, column {column!r}: the paper's number {paper!r} is not a "
        f"score within {low:g}..{high:g}"
    )


MACHINERY_ONLY = "Machinery check only: "  # how a table's, figure's or report's banner begins


def machinery_banner(names: Sequence[str], everything: bool) -> str:
    """The line a table, figure or report opens with when systems in it cannot reproduce."""
    who = "every system here runs" if everything else f"{', '.join(names)} run"
    return (
        f"{MACHINERY_ONLY}{who} a model that cannot reproduce the papers (random weights, or "
        "marked `reproduces: false`): beside the paper's numbers they test the pipeline, not the "
        "method; their cells are not comparable and count in no verdict."
    )


def machinery_line(what: str) -> str:
    """The line a case study or a training curve opens with when its model cannot reproduce."""
    return (
        f"{MACHINERY_ONLY}{what} a model that cannot reproduce the papers (random weights, or "
        "marked `reproduces: false`): it shows the pipeline at work, not the method."
    )


def not_reproducing(systems: Systems) -> list[str]:
    """The display names of the report systems whose model cannot reproduce the papers."""
    specs = system_specs(systems).values()
    return [spec["display"] for spec in specs if not spec.get("reproduces", True)]


def mark_machinery_only(table: pd.DataFrame, systems: Systems) -> None:
    """In place: the rows of systems that cannot reproduce (a memory-ablation variant's row too)
    get cells compared with nothing, and the table its banner (attrs `banner`)."""
    names = not_reproducing(systems)

    def machinery(label: Any) -> bool:  # the system's row, one of its rows ("X: random"), or
        text = str(label)  # a row of it under a scorer's or a protocol's name ("whole-reply: X")
        starts = [0] + ([text.index(": ") + 2] if ": " in text else [])
        return any(
            text.startswith(name, start)
            and not text[start + len(name) : start + len(name) + 1].isalnum()
            for name in names
            for start in starts
        )

    rows = [machinery(label) for label in table.index]
    if not any(rows):
        return
    for column in table.columns:
        table[column] = [
            replace(cell, comparable=False) if hit and isinstance(cell, Cell) else cell
            for cell, hit in zip(table[column], rows, strict=True)
        ]
    shown = [str(label) for label, hit in zip(table.index, rows, strict=True) if hit]
    table.attrs["banner"] = machinery_banner(shown, all(rows))


def text_frame(
    rows: Mapping[str, Mapping[str, str]], index: str, notes: Sequence[str]
) -> pd.DataFrame:
    """A table of text cells by row label and column (DASH where a row has none), its index
    named and its footnotes attached (the controls, scorers and seeds tables)."""
    frame = pd.DataFrame.from_dict(rows, orient="index").fillna(DASH)
    frame.index.name = index
    frame.attrs["notes"] = list(notes)
    return frame
