"""What a table or a figure declares, in its own module: `PaperTable`, `PaperFigure`. The
registries (`memrepro.report.tables.PAPER_TABLES`, `memrepro.report.figures.PAPER_FIGURES`) gather
the declarations by name; the jobs, the writers and the reproduction report read them and name no
table or figure to choose what to do."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from memrepro.report.cells import PaperSizes
from memrepro.report.claims import ClaimCheck
from memrepro.report.records import load_metrics
from memrepro.report.rows import Systems

# the reproduction report's sections, one per paper, then beyond them
MEMAGENT, MEMALPHA, BOTH_PAPERS, OWN_DATA = "MemAgent", "Mem-α", "Both papers", "Your datasets"


@dataclass(frozen=True)
class TableInput:
    """What a table's builder reads: its records, the systems shown, the whole paper file, the
    length labels its job passes, and the settings only some tables have (Table 7's RULER
    settings, Table 4's probe; any other in its job's `settings`, which its plan's `settings`
    fills)."""

    records: list[Mapping[str, Any]]
    systems: Systems
    paper: Mapping[str, Any]
    length_labels: Mapping[int, str] | None = None
    niah_config: Mapping[str, Any] | None = None
    probe: Mapping[str, Any] | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)  # its job's, whole

    def merged_labels(self) -> dict[int, str]:
        """The paper's length labels, overridden by the job's (RULER-HQA's document counts)."""
        labels = {int(k): v for k, v in self.paper.get("length_labels", {}).items()}
        labels.update({int(k): v for k, v in (self.length_labels or {}).items()})
        return labels


@dataclass(frozen=True)
class PaperTable:
    """One table's build, declared in its own module: its builder and how its job reads and
    writes it (its caption, paper key and evaluations are its plan's: memrepro.config.REPORTS).
    `memrepro.report.tables.PAPER_TABLES` gathers them by name; nothing else names a table to
    choose what to do with it."""

    build: Callable[[TableInput], pd.DataFrame]
    section: str  # of the reproduction report: MEMAGENT, MEMALPHA, BOTH_PAPERS or OWN_DATA
    ruler_lengths: bool = False  # columns are RULER lengths (its labels), not RULER-HQA's
    load: Callable[[Iterable[Any]], list[dict[str, Any]]] = load_metrics  # its job's inputs
    text: bool = False  # its cells are text (settings, memories, keywords), not scores
    # the items behind the paper's numbers (memrepro.report.cells.attach_paper_n); default: the
    # paper file's `sources.<its paper key>.items`
    sizes: Callable[[Mapping[str, Any]], PaperSizes] | None = None
    # the paper's own rows (its file's names) whose numbers open the reproduction report: their
    # averages where the table has them, else every cell
    headline: tuple[str, ...] = ()

    def paper_sizes(self, paper: Mapping[str, Any], paper_key: str | None) -> PaperSizes:
        if self.sizes is not None:
            return self.sizes(paper)
        return paper.get("sources", {}).get(paper_key or "", {}).get("items")


@dataclass(frozen=True)
class FigureInput:
    """What a figure reads: its metrics records, the systems shown, the whole paper file, the
    length labels (RULER-HQA's and RULER's) and the settings only some figures have (Figures
    6/7's groups, Figure 10's, the memory ablation's agent budgets)."""

    records: list[Mapping[str, Any]]
    systems: Systems
    paper: Mapping[str, Any]
    length_labels: Mapping[int, str] | None = None
    ruler_length_labels: Mapping[int, str] | None = None
    rl_ablation: Mapping[str, Mapping[str, str]] | None = None
    flops: Mapping[str, Any] | None = None
    agent: Mapping[str, int] | None = None


Plot = Callable[[FigureInput, str | Path, str, Sequence[ClaimCheck]], list[Path]]


def no_claims(figure: FigureInput) -> list[ClaimCheck]:
    return []


@dataclass(frozen=True)
class PaperFigure:
    """One figure's drawing, declared in its own module: how it is drawn (from its input, the
    output prefix, the title and its checked claims) and the paper claims it checks (its
    caption and evaluations are its plan's: memrepro.config.REPORTS)."""

    plot: Plot
    section: str  # of the reproduction report: MEMAGENT or MEMALPHA
    claims: Callable[[FigureInput], list[ClaimCheck]] = no_claims


def gathered(kind: str, planned: Sequence[str], *registries: Mapping[str, Any]) -> dict[str, Any]:
    """One name -> declaration mapping in the plan's order (`planned`: memrepro.config.TABLES or
    FIGURES); a name declared twice, or one the plan names without a declaration (or the
    reverse), is an error naming it, when the registry is imported."""
    found: dict[str, Any] = {}
    for registry in registries:
        for name, declared in registry.items():
            if name in found:
                raise ValueError(f"{kind} {name!r} is declared twice")
            found[name] = declared
    if unplanned := sorted(set(found) - set(planned)):
        raise ValueError(f"{kind}s declared but not planned (memrepro.config): {unplanned}")
    if undeclared := [name for name in planned if name not in found]:
        raise ValueError(f"{kind}s planned (memrepro.config) that no module declares: {undeclared}")
    return {name: found[name] for name in planned}
