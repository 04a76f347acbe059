"""The registry of the papers' figures: their names (the Snakefile's targets) and how each is
drawn from the records it reads. MemAgent's live in `memagent_figures`, Mem-α's in
`memalpha_figures`, the training curves in `training_curves`; the shared drawing in `plots`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from memrl.config import CAPTIONS, FIGURES
from memrl.report.cells import BENCHMARK
from memrl.report.claims import ClaimCheck
from memrl.report.flops_figure import measured_costs, model_shape, plot_flops
from memrl.report.memagent_claims import check_ablation_claims, check_claims
from memrl.report.memagent_figures import (
    Groups,
    ablation_rows,
    draw_by_column,
    memory_panels,
    plot_accuracy_vs_length,
    plot_bar_panels,
    plot_curve_panels,
    plot_niah_heatmaps,
    plot_ood_heatmaps,
)
from memrl.report.memalpha_figures import plot_memory_frontier
from memrl.report.rows import Systems
from memrl.report.tables import PAPER_TABLES, build_paper_table

PAPER_FIGURES = {name: CAPTIONS[name] for name in FIGURES}


ABLATION_FIGURES = {
    "figure6": ("table1", plot_curve_panels),
    "figure7": ("table3", plot_bar_panels),
}


MEMORY_FIGURES = {  # figure -> the table it draws, and how
    "figure8": ("table8", functools.partial(plot_curve_panels, draw=draw_by_column)),
    "figure9": ("table9", plot_bar_panels),
}


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
    """Plot `name` (a PAPER_FIGURES key) from metrics records and the whole paper file.

    figure1: Table 1's cells against length (`length_labels` override the paper's n_docs
    labels); figure5: the NIAH heatmaps; ood: the RULER average over the tasks present but
    qa_1/qa_2, and qa_1. The heatmaps take `ruler_length_labels` and print the paper's claims.
    figure6/figure7: Table 1/Table 3 rows of each `rl_ablation` group, with the claims checked.
    figure8/figure9: Table 8/9 rows of each memory-ablated system by memory size (`agent`: the
    system's own budgets). figure10: `flops` (settings: agent, groups, models, benchmarks).
    """
    records = list(records)
    if name in MEMORY_FIGURES:
        table_name, plot = MEMORY_FIGURES[name]
        labels = ruler_length_labels if PAPER_TABLES[table_name].ruler_lengths else length_labels
        if agent is None:
            raise ValueError(f"{name}: the figures need the agent's budgets (agent)")
        table = build_paper_table(table_name, records, systems, paper, labels)
        return plot(memory_panels(table, systems, agent), out_prefix, title)
    if name == "figure10":
        if flops is None:
            raise ValueError("figure10 needs its settings (flops): agent, groups, models")
        shapes = {group: model_shape(path) for group, path in flops["models"].items()}
        return plot_flops(shapes, measured_costs(records, flops), flops, out_prefix, title)
    if checks is None:  # the figure job computes them once, for the footer and its claims file
        checks = figure_claims(name, records, systems, paper, length_labels, rl_ablation)
    if name in ABLATION_FIGURES:
        _, plot = ABLATION_FIGURES[name]
        panels = _ablation_panels(name, records, systems, paper, length_labels, rl_ablation)
        return plot(panels, out_prefix, title, checks)
    if name == "figure1":
        table = build_paper_table("table1", records, systems, paper, length_labels)
        return plot_accuracy_vs_length(table, out_prefix, title, checks)
    if name == "figure5":
        niah = paper["niah"]
        return plot_niah_heatmaps(
            records,
            systems,
            out_prefix,
            title,
            tasks=tuple(niah["tasks"]),
            length_labels=ruler_length_labels,
            checks=checks,
        )
    if name == "figure_ood":
        ood = paper["ood"]
        return plot_ood_heatmaps(
            records,
            systems,
            out_prefix,
            title,
            qa_task=ood["qa_task"],
            length_labels=ruler_length_labels,
            checks=checks,
        )
    if name == "memalpha_frontier":
        return plot_memory_frontier(records, systems, paper, out_prefix, title)
    raise ValueError(f"unknown figure {name!r}; expected one of {', '.join(PAPER_FIGURES)}")


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
    records = list(records)
    if name == "figure1":
        return check_claims(records, systems, paper["figure1"]["claims"], benchmark=BENCHMARK)
    if name == "figure5":
        niah = paper["niah"]
        return check_claims(records, systems, niah["claims"], niah_tasks=tuple(niah["tasks"]))
    if name == "figure_ood":
        return check_claims(records, systems, paper["ood"]["claims"])
    if name in ABLATION_FIGURES:
        panels = _ablation_panels(name, records, systems, paper, length_labels, rl_ablation)
        claims = [c for c in paper["rl_ablation"]["claims"] if c["figure"] == name]
        return check_ablation_claims(panels, claims)
    return []


def _ablation_panels(
    name: str,
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper: Mapping[str, Any],
    length_labels: Mapping[int, str] | None,
    rl_ablation: Groups | None,
) -> Mapping[str, Any]:
    table = build_paper_table(ABLATION_FIGURES[name][0], records, systems, paper, length_labels)
    return ablation_rows(table, rl_ablation or {})
