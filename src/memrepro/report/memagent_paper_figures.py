"""MemAgent's figures, each declared (`PaperFigure`): Figure 1 (Table 1's cells against length),
Figure 5 (the NIAH heatmaps), the OOD heatmaps, Figures 6/7 (the RL ablation: Table 1/Table 3
rows of each `report.rl_ablation` group) and Figures 8/9 (Table 8/9 rows of each memory-ablated
system by memory size). The drawing lives in `memagent_figures`, the claims in
`memagent_claims`; Figure 10 in `flops_figure`."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from memrepro.report.cells import BENCHMARK
from memrepro.report.claims import ClaimCheck
from memrepro.report.memagent_claims import check_ablation_claims, check_claims
from memrepro.report.memagent_figures import (
    ablation_rows,
    draw_by_column,
    memory_panels,
    plot_accuracy_vs_length,
    plot_bar_panels,
    plot_curve_panels,
    plot_niah_heatmaps,
    plot_ood_heatmaps,
)
from memrepro.report.registry import MEMAGENT, FigureInput, PaperFigure
from memrepro.report.tables import build_paper_table, paper_table


def _figure1(f: FigureInput, out: str | Path, title: str, checks: Sequence[ClaimCheck]):
    table = build_paper_table("table1", f.records, f.systems, f.paper, f.length_labels)
    return plot_accuracy_vs_length(table, out, title, checks)


def _figure5(f: FigureInput, out: str | Path, title: str, checks: Sequence[ClaimCheck]):
    tasks = tuple(f.paper["niah"]["tasks"])
    return plot_niah_heatmaps(
        f.records, f.systems, out, title, tasks=tasks, length_labels=f.ruler_length_labels,
        checks=checks,
    )  # fmt: skip


def _ood(f: FigureInput, out: str | Path, title: str, checks: Sequence[ClaimCheck]):
    qa_task = f.paper["ood"]["qa_task"]
    return plot_ood_heatmaps(
        f.records, f.systems, out, title, qa_task=qa_task, length_labels=f.ruler_length_labels,
        checks=checks,
    )  # fmt: skip


def _niah_claims(f: FigureInput) -> list[ClaimCheck]:
    niah = f.paper["niah"]
    return check_claims(f.records, f.systems, niah["claims"], niah_tasks=tuple(niah["tasks"]))


def _ablation_panels(table: str, f: FigureInput) -> Mapping[str, Any]:
    """The rows of each `report.rl_ablation` group in `table` (Table 1 or 3)."""
    built = build_paper_table(table, f.records, f.systems, f.paper, f.length_labels)
    return ablation_rows(built, f.rl_ablation or {})


def _rl_ablation(name: str, table: str, plot: Callable[..., list[Path]]) -> PaperFigure:
    """Figure 6 or 7: the RL ablation's groups in `table`, with the claims of figure `name`."""

    def claims(f: FigureInput) -> list[ClaimCheck]:
        mine = [c for c in f.paper["rl_ablation"]["claims"] if c["figure"] == name]
        return check_ablation_claims(_ablation_panels(table, f), mine)

    def draw(f: FigureInput, out: str | Path, title: str, checks: Sequence[ClaimCheck]):
        return plot(_ablation_panels(table, f), out, title, checks)

    return PaperFigure(draw, MEMAGENT, claims)


def _memory_ablation(name: str, table: str, plot: Callable[..., list[Path]]) -> PaperFigure:
    """Figure 8 or 9: `table`'s rows of each memory-ablated system by memory size."""

    def draw(f: FigureInput, out: str | Path, title: str, checks: Sequence[ClaimCheck]):
        if f.agent is None:
            raise ValueError(f"{name}: the figures need the agent's budgets (agent)")
        ruler = paper_table(table).ruler_lengths
        labels = f.ruler_length_labels if ruler else f.length_labels
        built = build_paper_table(table, f.records, f.systems, f.paper, labels)
        return plot(memory_panels(built, f.systems, f.agent), out, title)

    return PaperFigure(draw, MEMAGENT)


MEMAGENT_FIGURES = {
    "figure1": PaperFigure(
        _figure1,
        MEMAGENT,
        lambda f: check_claims(
            f.records, f.systems, f.paper["figure1"]["claims"], benchmark=BENCHMARK
        ),
    ),
    "figure5": PaperFigure(_figure5, MEMAGENT, _niah_claims),
    "figure_ood": PaperFigure(
        _ood,
        MEMAGENT,
        lambda f: check_claims(f.records, f.systems, f.paper["ood"]["claims"]),
    ),
    "figure6": _rl_ablation("figure6", "table1", plot_curve_panels),
    "figure7": _rl_ablation("figure7", "table3", plot_bar_panels),
    "figure8": _memory_ablation(
        "figure8", "table8", functools.partial(plot_curve_panels, draw=draw_by_column)
    ),
    "figure9": _memory_ablation("figure9", "table9", plot_bar_panels),
}
