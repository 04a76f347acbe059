"""Figure 1: accuracy against context length (log x axis), ours solid, the paper's dashed.

Drawn on a bare Agg canvas (no pyplot, no global backend switch), saved as PNG and PDF atomically.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import NullLocator

from memrl.data.io import atomic_path
from memrl.report.tables import build_table1, column_mean_tokens, length_label

# Deterministic files: no creation date in the PDF, no software stamp in the PNG.
_METADATA = {"png": {"Software": None}, "pdf": {"CreationDate": None, "Creator": None}}


@dataclass(frozen=True)
class Series:
    """What is drawn for one system: our points (x = measured mean tokens) and the paper's."""

    display: str
    xs: list[float]
    ys: list[float]
    paper_xs: list[float]
    paper_ys: list[float]


def figure_series(table: pd.DataFrame) -> tuple[list[Series], dict[int, float]]:
    """Per-system lines and the x position (mean tokens over systems) of every n_docs column.

    The paper has no token counts of its own, so its points sit at the column's x position.
    """
    column_x = {n: x for n in table.columns if (x := column_mean_tokens(table, n)) is not None}
    series = []
    for display, row in table.iterrows():
        ours = [(c.mean_tokens, c.ours) for c in row if c.ours is not None]
        paper = [
            (column_x[n], c.paper) for n, c in row.items() if c.paper is not None and n in column_x
        ]
        series.append(
            Series(
                display=str(display),
                xs=[x for x, _ in ours],
                ys=[y for _, y in ours],
                paper_xs=[x for x, _ in paper],
                paper_ys=[y for _, y in paper],
            )
        )
    return series, column_x


def _as_table(
    data: pd.DataFrame | Iterable[Mapping[str, Any]],
    systems: Mapping[str, Mapping[str, Any]] | None,
    paper: Mapping[str, Mapping[Any, Any]] | None,
    length_labels: Mapping[int, str] | None,
) -> pd.DataFrame:
    if isinstance(data, pd.DataFrame):
        return data
    metrics = list(data)
    if systems is None:
        names = sorted({m["system"] for m in metrics})
        systems = {name: {"display": name, "paper_row": None} for name in names}
    return build_table1(metrics, systems, paper or {}, length_labels or {})


def plot_accuracy_vs_length(
    data: pd.DataFrame | Iterable[Mapping[str, Any]],
    out_prefix: str | Path,
    title: str,
    *,
    systems: Mapping[str, Mapping[str, Any]] | None = None,
    paper: Mapping[str, Mapping[Any, Any]] | None = None,
    length_labels: Mapping[int, str] | None = None,
) -> list[Path]:
    """Plot a Table 1 DataFrame (or metrics records) to `<prefix>.png` and `<prefix>.pdf`.

    With metrics records, `systems`/`paper`/`length_labels` are passed to `build_table1`
    (default: every system under its own id, no paper lines).
    """
    table = _as_table(data, systems, paper, length_labels)
    series, column_x = figure_series(table)
    fig = Figure(figsize=(7.0, 5.0), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    palette = [f"C{i % 10}" for i in range(len(series))]
    for line, colour in zip(series, palette, strict=True):
        if line.xs:
            ax.plot(line.xs, line.ys, "-o", color=colour, label=line.display, markersize=4)
        if line.paper_xs:
            ax.plot(
                line.paper_xs,
                line.paper_ys,
                "--x",
                color=colour,
                markersize=4,
                label=None if line.xs else line.display,
            )
    ax.set_xscale("log")
    if column_x:
        ticks = sorted(column_x.items(), key=lambda item: item[1])
        ax.set_xticks([x for _, x in ticks], [length_label(table, n) for n, _ in ticks])
        ax.xaxis.set_minor_locator(NullLocator())
    ax.set_ylim(-2, 102)
    ax.set_xlabel("Context length (tokens, log scale)")
    ax.set_ylabel("Accuracy (%)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if any(line.paper_xs for line in series):
        handles += [
            Line2D([], [], color="black", linestyle="-", label="ours"),
            Line2D([], [], color="black", linestyle="--", label="paper"),
        ]
        labels += ["ours", "paper"]
    if handles:  # below the axes: curves that meet at high accuracy stay visible
        fig.legend(handles, labels, fontsize="small", loc="outside lower center", ncols=2)
    prefix = Path(out_prefix)
    written = []
    for ext in ("png", "pdf"):
        path = prefix.with_name(f"{prefix.name}.{ext}")
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=ext, dpi=200, metadata=_METADATA[ext])
        written.append(path)
    return written
