"""Mem-α's figure: the suites' average score against memory size (the frontier)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from memrepro.report.plots import error_bar, save
from memrepro.report.registry import MEMALPHA, PaperFigure
from memrepro.report.rows import Systems
from memrepro.report.tables import build_paper_table

FRONTIER_PANELS = (
    ("memalpha_table1", "Memalpha validation"),
    ("memalpha_table2", "MemoryAgentBench"),
)


def plot_memory_frontier(
    records: Sequence[Mapping[str, Any]],
    systems: Systems,
    paper: Mapping[str, Any],
    out_prefix: str | Path,
    title: str,
) -> list[Path]:
    """Each system's average score against its average memory (thousand QA-model tokens) on
    both Mem-α suites, from Tables 1 and 2's Avg. columns: ours filled with its 95 % interval
    as a bar, the paper's hollow, a line from one to the other."""
    fig = Figure(figsize=(11.0, 4.8), layout="constrained")
    FigureCanvasAgg(fig)
    colours: dict[str, str] = {}
    for n, (table_name, panel_title) in enumerate(FRONTIER_PANELS):
        ax = fig.add_subplot(1, len(FRONTIER_PANELS), n + 1)
        table = build_paper_table(table_name, records, systems, paper)
        for display, row in table.iterrows():
            perf, mem = row["avg"], row["avg.mem"]
            paper_row = table.attrs["paper_rows"].get(display)
            ours = (mem.ours, perf.ours) if None not in (mem.ours, perf.ours) else None
            theirs = (mem.paper, perf.paper) if None not in (mem.paper, perf.paper) else None
            if not (ours or theirs):
                continue  # nothing to draw: no legend entry either
            name = str(display) + (f" (paper row: {paper_row})" if paper_row else "")
            colour = colours.setdefault(name, f"C{len(colours) % 10}")
            if ours:  # our 95 % interval of the average score as a vertical bar
                bar = [[side] for side in error_bar(perf)]
                ax.errorbar(*ours, yerr=bar, fmt="o", color=colour, markersize=7, capsize=3)
            if theirs:  # the paper's point, named by the paper's own row
                ax.plot(*theirs, "o", color=colour, markersize=7, fillstyle="none")
                ax.annotate(
                    str(paper_row),
                    theirs,
                    xytext=(4, 4),
                    textcoords="offset points",
                    fontsize="x-small",
                    color=colour,
                )
            if ours and theirs:
                ax.plot(*zip(ours, theirs, strict=True), ":", color=colour, linewidth=0.8)
        ax.set_xlabel("Memory (thousand QA-model tokens)")
        ax.set_ylabel("Average score (%)")
        ax.set_title(panel_title)
        ax.grid(True, alpha=0.3)
    handles = [
        Line2D([], [], color=c, marker="o", linestyle="", label=d) for d, c in colours.items()
    ]
    handles += [
        Line2D([], [], color="black", marker="o", linestyle="", label="ours"),
        Line2D([], [], color="black", marker="o", fillstyle="none", linestyle="", label="paper"),
    ]
    fig.legend(handles=handles, fontsize="small", loc="outside lower center", ncols=2)
    fig.suptitle(title)
    return save(fig, out_prefix)


FRONTIER_FIGURES = {
    "memalpha_frontier": PaperFigure(
        lambda f, out, title, checks: plot_memory_frontier(
            f.records, f.systems, f.paper, out, title
        ),
        MEMALPHA,
    )
}
