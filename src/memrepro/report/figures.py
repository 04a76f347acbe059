"""The registry of the papers' figures: each is declared (`PaperFigure`: caption, drawing, the
claims it checks, its section) in its own module and gathered here by name (the Snakefile's
targets). MemAgent's live in `memagent_paper_figures` (Figure 10 in `flops_figure`), Mem-α's in
`memalpha_figures`, the training curves in `training_curves`; the shared drawing in `plots`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from memrepro.config import FIGURES
from memrepro.report.claims import ClaimCheck
from memrepro.report.flops_figure import FLOPS_FIGURES
from memrepro.report.memagent_figures import Groups
from memrepro.report.memagent_paper_figures import MEMAGENT_FIGURES
from memrepro.report.memalpha_figures import FRONTIER_FIGURES
from memrepro.report.registry import FigureInput, PaperFigure, gathered
from memrepro.report.rows import Systems

# name -> PaperFigure, each declared in its own module, in the plan's order
# (memrepro.config.FIGURES)
PAPER_FIGURES = gathered("figure", FIGURES, MEMAGENT_FIGURES, FLOPS_FIGURES, FRONTIER_FIGURES)


def paper_figure(name: str) -> PaperFigure:
    if name not in PAPER_FIGURES:
        raise ValueError(f"unknown figure {name!r}; expected one of {', '.join(PAPER_FIGURES)}")
    return PAPER_FIGURES[name]


def plot_paper_figure(
    name: str,
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper: Mapping[str, Any],
    out_prefix: str | Path,
    title: str,
    *,
    length_labels: Mapping[int, str] | None = None,
    ruler_length_labels: Mapping[int, str] | None = None,
    rl_ablation: Groups | None = None,
    flops: Mapping[str, Any] | None = None,
    agent: Mapping[str, int] | None = None,
    checks: Sequence[ClaimCheck] | None = None,
) -> list[Path]:
    """Plot `name` (a PAPER_FIGURES key) from metrics records and the whole paper file, as it
    declares: `length_labels` override the paper's n_docs labels, the heatmaps take
    `ruler_length_labels`; `rl_ablation` (Figures 6/7's groups), `flops` (Figure 10's settings)
    and `agent` (the memory ablation's budgets) where a figure needs them. `checks`: its claims
    as the figure job computed them (else computed here)."""
    figure = paper_figure(name)
    inputs = FigureInput(
        list(records), systems, paper, length_labels, ruler_length_labels, rl_ablation, flops,
        agent,
    )  # fmt: skip
    found = figure.claims(inputs) if checks is None else checks
    return figure.plot(inputs, out_prefix, title, found)


def figure_claims(
    name: str,
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper: Mapping[str, Any],
    length_labels: Mapping[int, str] | None = None,
    rl_ablation: Groups | None = None,
) -> list[ClaimCheck]:
    """The paper's claims that figure `name` checks, on our records: printed under the figure
    and written beside it for the reproduction report (none for a figure without claims)."""
    inputs = FigureInput(list(records), systems, paper, length_labels, rl_ablation=rl_ablation)
    return paper_figure(name).claims(inputs)
