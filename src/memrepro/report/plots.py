"""What every figure shares: a bare Agg canvas (no pyplot, no global backend switch), series
and legends, the paper's claims written under a figure, and deterministic PNG and PDF files
saved atomically.
"""

from __future__ import annotations

import logging
import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from memrepro.data.io import atomic_path
from memrepro.report.claims import ClaimCheck, claim_lines
from memrepro.report.render import column_mean_tokens

# Deterministic files: no creation date in the PDF, no software stamp in the PNG.
_METADATA = {"png": {"Software": None}, "pdf": {"CreationDate": None, "Creator": None}}
CLIPPED_KEY = "Clipped"  # a PNG's note of text the layout cut off (none: no such key)
CHARS_PER_INCH = 15  # x-small text (about 7 pt) per inch of width, with a margin
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Series:
    """What is drawn for one system: our points (x = measured mean tokens) and the paper's."""

    display: str
    xs: list[float]
    ys: list[float]
    paper_xs: list[float]
    paper_ys: list[float]
    lows: list[float] = field(default_factory=list)  # our 95 % interval per point (NaN: none)
    highs: list[float] = field(default_factory=list)


def figure_series(table: pd.DataFrame) -> tuple[list[Series], dict[int, float]]:
    """Per-system lines and the x position (mean tokens over systems) of every n_docs column.

    The paper has no token counts of its own, so its points sit at the column's x position.
    """
    column_x = {n: x for n in table.columns if (x := column_mean_tokens(table, n)) is not None}
    series = []
    for display, row in table.iterrows():
        ours = [c for c in row if c.ours is not None and c.mean_tokens is not None]
        lows, highs = interval_bounds(ours)
        paper = [
            (column_x[n], c.paper) for n, c in row.items() if c.paper is not None and n in column_x
        ]
        series.append(
            Series(
                display=str(display),
                xs=[c.mean_tokens for c in ours],
                ys=[c.ours for c in ours],
                lows=lows,
                highs=highs,
                paper_xs=[x for x, _ in paper],
                paper_ys=[y for _, y in paper],
            )
        )
    return series, column_x


OURS_STYLE, PAPER_STYLE = "-o", "--x"  # how ours and the paper's numbers are drawn as lines


def series_style(i: int) -> dict[str, Any]:
    """Series i's marker size and width, shrinking with i: a later series drawn exactly over an
    earlier one (equal scores) leaves the earlier visible around it."""
    return {"markersize": max(3.0, 7.0 - 1.5 * i), "linewidth": max(1.0, 2.6 - 0.5 * i)}


def interval_bounds(cells: Sequence[Any]) -> tuple[list[float], list[float]]:
    """Our 95 % interval's lows and highs of these cells (NaN where a cell has none)."""
    lows = [math.nan if c.ci is None else c.ci[0] for c in cells]
    return lows, [math.nan if c.ci is None else c.ci[1] for c in cells]


def error_bar(cell: Any) -> list[float]:
    """Our score's error bar, below and above it: its 95 % interval (none: a bar of zero)."""
    if cell.ci is None or cell.ours is None:
        return [0.0, 0.0]
    return [cell.ours - cell.ci[0], cell.ci[1] - cell.ours]


def draw_band(
    ax: Any, xs: Sequence[float], lows: Sequence[float], highs: Sequence[float], colour: str
) -> None:
    """Our 95 % intervals as a light band under a line (points without one leave a gap)."""
    if any(not math.isnan(low) for low in lows):
        ax.fill_between(xs, lows, highs, color=colour, alpha=0.15, linewidth=0)


def overlap_note(ax: Any, lines: Sequence[tuple[str, Sequence[float], Sequence[float]]]) -> None:
    """A note in the axes when series coincide point for point (equal scores: one is drawn over
    the other), e.g. "3 series overlap at 0"."""
    groups: dict[tuple[tuple[float, ...], tuple[float, ...]], list[str]] = {}
    for name, xs, ys in lines:
        if xs:
            groups.setdefault((tuple(xs), tuple(ys)), []).append(name)
    notes, low = [], True
    for (_, ys), names in groups.items():
        if len(names) > 1:
            at = f" at {ys[0]:g}" if len(set(ys)) == 1 else ""
            notes.append(f"{len(names)} series overlap{at} ({', '.join(names)})")
            low = low and sum(ys) / len(ys) < 50
    if notes:  # wrapped to the axes, on the side away from the series it names
        width = max(30, int(ax.get_position().width * ax.figure.get_figwidth() * CHARS_PER_INCH))
        ax.text(
            0.01,
            0.99 if low else 0.01,
            "\n".join(textwrap.fill(note, width) for note in notes),
            transform=ax.transAxes,
            fontsize="x-small",
            va="top" if low else "bottom",
            ha="left",
            color="dimgray",
        )


def figure_legend(
    fig: Figure, ax: Any, paper_drawn: bool, loc: str = "outside lower center"
) -> None:
    """The axes' legend, by default below them (curves that meet at high accuracy stay
    visible; to the right when claims fill the foot), with the ours/paper styles as drawn
    (OURS_STYLE, PAPER_STYLE) when the paper's values are drawn."""
    handles, labels = ax.get_legend_handles_labels()
    if paper_drawn:
        handles += [
            Line2D([], [], color="black", linestyle="-", marker="o", label="ours"),
            Line2D([], [], color="black", linestyle="--", marker="x", label="paper"),
        ]
        labels += ["ours", "paper"]
    if handles:
        fig.legend(handles, labels, fontsize="small", loc=loc, ncols=2 if "lower" in loc else 1)


def claims_footer(fig: Figure, checks: Sequence[ClaimCheck]) -> None:
    """The paper's claims and our checks under the figure, wrapped to its width."""
    if checks:
        width = int(fig.get_figwidth() * CHARS_PER_INCH)
        lines = [textwrap.fill(line, width) for line in claim_lines(checks)]
        fig.supxlabel("\n".join(lines), x=0.01, ha="left", fontsize="x-small")


def number(value: Any, where: str) -> float:
    """A JSON number as float (NaN allowed: a gap in the line); anything else is an error."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{where} must be a number, got {value!r}")
    return float(value)


def save(fig: Figure, out_prefix: str | Path) -> list[Path]:
    """Write `<prefix>.png` and `<prefix>.pdf` atomically; return their paths. Text that the
    layout left outside the canvas (cut off in the image) is warned about and named in the
    PNG's `Clipped` metadata, which the tests read for every figure of the smoke run."""
    prefix = Path(out_prefix)
    clipped = outside_canvas(fig)
    if clipped:
        log.warning("%s: text outside the figure: %s", prefix.name, "; ".join(clipped))
    metadata = {**_METADATA, "png": {**_METADATA["png"], CLIPPED_KEY: "; ".join(clipped) or None}}
    written = []
    for ext in ("png", "pdf"):
        path = prefix.with_name(f"{prefix.name}.{ext}")
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=ext, dpi=200, metadata=metadata[ext])
        written.append(path)
    return written


def outside_canvas(fig: Figure) -> list[str]:
    """The visible texts of a laid-out figure (titles, labels, notes, legends) that reach past
    its edges, each as its first 60 characters."""
    from matplotlib.axis import Tick
    from matplotlib.text import Text

    fig.canvas.draw()  # the layout engine places everything
    renderer = fig.canvas.get_renderer()
    ticks = {id(t) for tick in fig.findobj(Tick) for t in (tick.label1, tick.label2)}
    cut = [
        " ".join(text.get_text().split())[:60]
        for text in fig.findobj(Text)
        if id(text) not in ticks  # those outside the axis' range are not drawn: checked below
        and text.get_visible()
        and text.get_text().strip()
        and not _inside(text.get_window_extent(renderer), fig)
    ]
    if not cut and not _inside(fig.get_tightbbox(renderer).transformed(fig.dpi_scale_trans), fig):
        cut.append("tick labels")  # the drawn ones: the tight box holds only what is drawn
    return cut


def _inside(box: Any, fig: Figure, slack: float = 1.0) -> bool:
    return (
        box.x0 >= -slack
        and box.y0 >= -slack
        and box.x1 <= fig.bbox.width + slack
        and box.y1 <= fig.bbox.height + slack
    )


def plain_log_ticks(ax: Any) -> None:
    """Log axes labelled 600, 1,000, 2 and 0.6 rather than 6×10², 10³, 2×10⁰ (a log axis over
    less than a decade or two, as measured times are)."""
    from matplotlib.ticker import LogFormatter

    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(LogFormatter())
        axis.set_minor_formatter(LogFormatter(minor_thresholds=(2, 0.5)))
