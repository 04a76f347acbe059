"""Figures: accuracy against context length (Figure 1: log x axis, ours solid, the paper's
dashed) and the training curve (reward, KL and clip fraction per step).

Drawn on a bare Agg canvas (no pyplot, no global backend switch), saved as PNG and PDF atomically.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import NullLocator

from memrl.data.io import atomic_path, iter_jsonl
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
    return _save(fig, out_prefix)


TRAIN_METRICS_FILE = "train_metrics.jsonl"  # what a trainer writes into its output directory
# The training curve's panels: (metrics key, y label); each file must have these keys.
CURVE_PANELS = (
    ("reward_mean", "Reward (mean)"),
    ("kl", "KL to reference"),
    ("pg_clipfrac", "Clip fraction"),
)
CLIPFRAC_LOWER = "pg_clipfrac_lower"  # drawn dotted in the clip-fraction panel when present


def read_training_curve(path: str | Path) -> dict[str, list[float]]:
    """Per-step columns of a `train_metrics.jsonl` (one JSON object per training step).

    Returns "step" (the record's `step`, else its 0-based position), the CURVE_PANELS keys and
    CLIPFRAC_LOWER when every record has it. Steps must increase. Errors name the file and the
    line (counted over non-blank lines, as iter_jsonl reads them).
    """
    path = Path(path)
    keys = [key for key, _ in CURVE_PANELS]
    columns: dict[str, list[float]] = {"step": [], **{key: [] for key in keys}}
    lower: list[float] = []
    for line, record in enumerate(iter_jsonl(path), start=1):
        where = f"{path}: line {line}"
        missing = [key for key in keys if key not in record]
        if missing:
            raise ValueError(f"{where}: missing training metric(s) {', '.join(missing)}")
        step = _number(record.get("step", line - 1), f"{where}: 'step'")
        if columns["step"] and step <= columns["step"][-1]:
            raise ValueError(
                f"{where}: step {step:g} does not follow step {columns['step'][-1]:g} "
                "(two runs in one file?)"
            )
        columns["step"].append(step)
        for key in keys:
            columns[key].append(_number(record[key], f"{where}: {key!r}"))
        if CLIPFRAC_LOWER in record:
            lower.append(_number(record[CLIPFRAC_LOWER], f"{where}: {CLIPFRAC_LOWER!r}"))
    if not columns["step"]:
        raise ValueError(f"{path}: no training step recorded (empty metrics file)")
    if len(lower) == len(columns["step"]):
        columns[CLIPFRAC_LOWER] = lower
    return columns


def training_metrics_files(
    paths: Sequence[str | Path], labels: Sequence[str] | None = None
) -> dict[str, Path]:
    """{label: metrics file} for `paths` (metrics files, or training output directories holding
    TRAIN_METRICS_FILE). Without labels, each is named by the shortest trailing part of its
    directory that tells it apart from the others (`stage1`, or `seed1/stage1`)."""
    files = [Path(p) / TRAIN_METRICS_FILE if Path(p).is_dir() else Path(p) for p in paths]
    if labels is None:
        parts = [file.parent.resolve().parts for file in files]
        depth = 1
        while depth < max(map(len, parts), default=1) and len(
            {part[-depth:] for part in parts}
        ) < len(parts):
            depth += 1
        labels = ["/".join(part[-depth:]) for part in parts]
    if len(labels) != len(files):
        raise ValueError(f"{len(labels)} labels for {len(files)} metrics files")
    if len(set(labels)) != len(labels):
        raise ValueError(f"training-curve labels must be distinct, got {list(labels)}")
    return dict(zip(labels, files, strict=True))


def plot_training_curve(
    metrics_files: Mapping[str, str | Path], out_prefix: str | Path, title: str
) -> list[Path]:
    """Reward, KL and clip fraction per training step, one line per label ({label: metrics file}),
    in three panels sharing the step axis; written to `<prefix>.png` and `<prefix>.pdf`."""
    if not metrics_files:
        raise ValueError("plot_training_curve: no metrics file given")
    curves = {label: read_training_curve(path) for label, path in metrics_files.items()}
    fig = Figure(figsize=(7.0, 7.5), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(CURVE_PANELS), 1, sharex=True)
    for i, (label, curve) in enumerate(curves.items()):
        colour = f"C{i % 10}"
        marker = "o" if len(curve["step"]) <= 50 else None
        for ax, (key, _) in zip(axes, CURVE_PANELS, strict=True):
            ax.plot(
                curve["step"],
                curve[key],
                "-",
                marker=marker,
                markersize=3,
                color=colour,
                label=label,
            )
        if CLIPFRAC_LOWER in curve:
            axes[-1].plot(curve["step"], curve[CLIPFRAC_LOWER], ":", color=colour)
    for ax, (_, ylabel) in zip(axes, CURVE_PANELS, strict=True):
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
    axes[0].set_title(title)
    axes[-1].set_xlabel("Training step")
    handles, labels = axes[0].get_legend_handles_labels()
    if any(CLIPFRAC_LOWER in curve for curve in curves.values()):
        handles += [
            Line2D([], [], color="black", linestyle="-", label="clip fraction"),
            Line2D([], [], color="black", linestyle=":", label="dual-clip (lower) fraction"),
        ]
        labels += ["clip fraction", "dual-clip (lower) fraction"]
    fig.legend(handles, labels, fontsize="small", loc="outside lower center", ncols=3)
    return _save(fig, out_prefix)


def _number(value: Any, where: str) -> float:
    """A JSON number as float (NaN allowed: a gap in the line); anything else is an error."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{where} must be a number, got {value!r}")
    return float(value)


def _save(fig: Figure, out_prefix: str | Path) -> list[Path]:
    """Write `<prefix>.png` and `<prefix>.pdf` atomically; return their paths."""
    prefix = Path(out_prefix)
    written = []
    for ext in ("png", "pdf"):
        path = prefix.with_name(f"{prefix.name}.{ext}")
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=ext, dpi=200, metadata=_METADATA[ext])
        written.append(path)
    return written
