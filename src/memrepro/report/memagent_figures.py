"""MemAgent's figures (seed 000): accuracy against context length (Figure 1: log x axis, ours
solid, the paper's dashed), the RULER heatmaps (Figure 5: NIAH; the OOD figure: RULER average
and SQuAD QA), the RL ablation (Figures 6, 7) and memory size (8, 9); FLOPs (10) in
memrepro.report.flops_figure.

The paper prints no numbers for its heatmaps, only claims ("over 95% at 512K"); those claims are
checked against our numbers and written under the heatmaps (memrepro.report.memagent_claims).
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import NullLocator

from memrepro.config import ABLATION_ROLES
from memrepro.data.ruler import RULER_TASKS
from memrepro.report.cells import DASH
from memrepro.report.claims import (
    ClaimCheck,
    claim_lines,
)
from memrepro.report.memagent_tables import NIAH_TASKS, token_label
from memrepro.report.plots import (
    OURS_STYLE,
    PAPER_STYLE,
    claims_footer,
    draw_band,
    error_bar,
    figure_legend,
    figure_series,
    interval_bounds,
    overlap_note,
    save,
    series_style,
)
from memrepro.report.records import Key, index_metrics, records_of
from memrepro.report.render import length_label
from memrepro.report.rows import Systems, system_specs
from memrepro.scoring.intervals import Interval, mean_interval


def plot_accuracy_vs_length(
    table: pd.DataFrame,
    out_prefix: str | Path,
    title: str,
    checks: Sequence[ClaimCheck] = (),
) -> list[Path]:
    """Plot a Table 1 DataFrame (`build_table1`) to `<prefix>.png` and `<prefix>.pdf`, the
    paper's claims and our checks beneath."""
    # the legend to the right of the axes (the claims fill the foot), room made for it
    fig = Figure(figsize=(11.0, 5.0 + 0.3 * len(claim_lines(checks))), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    paper_drawn = _draw_accuracy_vs_length(ax, table)
    ax.set_title(title)
    figure_legend(fig, ax, paper_drawn, "outside right center")
    claims_footer(fig, checks)
    return save(fig, out_prefix)


def _draw_accuracy_vs_length(ax: Any, table: pd.DataFrame) -> bool:
    """One line per row of a Table 1 DataFrame: ours solid at our measured mean tokens over the
    band of our 95 % intervals, the paper's dashed at the column's mean, a note where series
    coincide; whether any paper line was drawn."""
    series, column_x = figure_series(table)
    for i, line in enumerate(series):
        colour, style = f"C{i % 10}", series_style(i)
        if line.xs:
            draw_band(ax, line.xs, line.lows, line.highs, colour)
            ax.plot(line.xs, line.ys, OURS_STYLE, color=colour, label=line.display, **style)
        if line.paper_xs:
            label = None if line.xs else line.display
            ax.plot(line.paper_xs, line.paper_ys, PAPER_STYLE, color=colour, label=label, **style)
    overlap_note(ax, [(line.display, line.xs, line.ys) for line in series])
    ax.set_xscale("log")
    if column_x:
        ticks = sorted(column_x.items(), key=lambda item: item[1])
        ax.set_xticks([x for _, x in ticks], [length_label(table, n) for n, _ in ticks])
        ax.xaxis.set_minor_locator(NullLocator())
    ax.set_ylim(-2, 102)
    ax.set_xlabel("Context length (log scale, at our measured mean tokens)")
    ax.set_ylabel("Accuracy (%)")
    ax.grid(True, alpha=0.3)
    return any(line.paper_xs for line in series)


RULER = "ruler"
RULER_QA_TASKS = ("qa_1", "qa_2")
RULER_TASK_ORDER = RULER_TASKS  # the average panel lists its tasks in RULER's order
MISSING_COLOUR = "#d0d0d0"  # a cell we did not run: grey, never 0


@dataclass(frozen=True)
class Heatmap:
    """One panel: rows = systems (display names), columns = lengths, values in % (None =
    not run), `partial` = the mean covers fewer than all of its tasks."""

    title: str
    rows: list[str]
    lengths: list[int]
    values: list[list[float | None]]
    partial: list[list[bool]]


def ruler_records(
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    benchmark: str = RULER,
) -> tuple[dict[str, dict[str, Any]], dict[Key, Mapping[str, Any]]]:
    """The systems and the records of `benchmark` (RULER's, or RULER-HQA's for Figure 1) by
    (benchmark, task, system, length); records of an unconfigured system, or two of one key,
    are errors naming the file."""
    specs = system_specs(systems)
    return specs, index_metrics(records, specs, records_of(benchmark))


def task_mean(
    found: Mapping[Key, Mapping[str, Any]],
    system: str,
    tasks: Sequence[str],
    length: int,
    benchmark: str,
) -> tuple[float | None, Interval | None, bool]:
    """The mean accuracy over `tasks` at one length, its 95 % interval (None where a record has
    none) and whether it covers fewer than all of them."""
    records = [
        rec for task in tasks if (rec := found.get((benchmark, task, system, length))) is not None
    ]
    if not records:
        return None, None, False
    scores = [float(rec["accuracy"]) for rec in records]
    bounds = [rec.get("ci95", {}).get("accuracy") for rec in records]
    interval = None
    if None not in bounds:
        interval = mean_interval(scores, [(float(b[0]), float(b[1])) for b in bounds])
    return sum(scores) / len(scores), interval, len(records) < len(tasks)


def heatmap(
    found: Mapping[Key, Mapping[str, Any]],
    specs: Mapping[str, Mapping[str, Any]],
    tasks: Sequence[str],
    title: str,
    rows: Sequence[str] | None = None,
    lengths: Sequence[int] | None = None,
) -> Heatmap:
    """A panel of the mean accuracy over `tasks` for the system ids `rows` (default: those with
    a record of these tasks) at `lengths` (default: the lengths of these tasks' records)."""
    mine = [key for key in found if key[1] in tasks]
    if rows is None:
        rows = [sid for sid in specs if any(key[2] == sid for key in mine)]
    if lengths is None:
        lengths = sorted({key[3] for key in mine})
    values, partial = [], []
    for sid in rows:
        cells = [task_mean(found, sid, tasks, length, RULER) for length in lengths]
        values.append([value for value, _, _ in cells])
        partial.append([flag for _, _, flag in cells])
    return Heatmap(title, [specs[sid]["display"] for sid in rows], list(lengths), values, partial)


def _panel_rows(
    found: Mapping[Key, Mapping[str, Any]], specs: Mapping[str, Any], tasks: set[str]
) -> list[str]:
    """System ids (config order) with a record of any of `tasks`: the heatmap's rows."""
    return [sid for sid in specs if any(k[2] == sid and k[1] in tasks for k in found)]


def plot_niah_heatmaps(
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    out_prefix: str | Path,
    title: str,
    *,
    tasks: Sequence[str] = NIAH_TASKS,
    length_labels: Mapping[int, str] | None = None,
    checks: Sequence[ClaimCheck] = (),
) -> list[Path]:
    """Figure 5: one heatmap per NIAH task (rows = systems, columns = lengths, cell = accuracy),
    missing cells grey; the `checks` of the paper's claims (check_claims) printed below."""
    specs, found = ruler_records(records, systems)
    rows = _panel_rows(found, specs, set(tasks))
    if not rows:
        raise ValueError(f"no RULER metrics for {', '.join(tasks)}: nothing to plot")
    lengths = sorted({key[3] for key in found if key[1] in tasks})
    panels = [heatmap(found, specs, (task,), task, rows, lengths) for task in tasks]
    return _plot_heatmaps(panels, out_prefix, title, length_labels, claim_lines(checks))


def plot_ood_heatmaps(
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    out_prefix: str | Path,
    title: str,
    *,
    average_tasks: Sequence[str] | None = None,
    qa_task: str = "qa_1",
    length_labels: Mapping[int, str] | None = None,
    checks: Sequence[ClaimCheck] = (),
) -> list[Path]:
    """The OOD figure: (a) the mean over `average_tasks` (default: every RULER task present but
    qa_1/qa_2; the paper's 10 = 8 NIAH + vt + fwe), (b) `qa_task` (SQuAD). A mean lacking some
    of its tasks is marked '*'; missing cells are grey. The `checks` of the paper's claims
    (check_claims) are printed below."""
    specs, found = ruler_records(records, systems)
    average = average_panel_tasks(found, average_tasks)
    rows = _panel_rows(found, specs, {*average, qa_task})
    if not rows:
        raise ValueError(f"no RULER metrics for {', '.join([*average, qa_task])}: nothing to plot")
    lengths = sorted({key[3] for key in found if key[1] in {*average, qa_task}})
    panels = [
        heatmap(found, specs, average, f"(a) mean of {len(average)} RULER tasks", rows, lengths),
        heatmap(found, specs, (qa_task,), f"(b) {qa_task} (SQuAD)", rows, lengths),
    ]
    return _plot_heatmaps(panels, out_prefix, title, length_labels, claim_lines(checks))


def average_panel_tasks(
    found: Mapping[Key, Mapping[str, Any]], tasks: Sequence[str] | None
) -> tuple[str, ...]:
    if tasks is not None:
        return tuple(tasks)
    present = {key[1] for key in found} - set(RULER_QA_TASKS)
    order = {task: i for i, task in enumerate(RULER_TASK_ORDER)}
    return tuple(sorted(present, key=lambda task: (order.get(task, len(order)), task)))


def _plot_heatmaps(
    panels: Sequence[Heatmap],
    out_prefix: str | Path,
    title: str,
    length_labels: Mapping[int, str] | None,
    footer: Sequence[str],
) -> list[Path]:
    labels = {int(k): str(v) for k, v in (length_labels or {}).items()}
    n_rows = len(panels[0].rows)
    n_cols = len(panels[0].lengths)
    width = 2.5 + len(panels) * (0.8 + 0.55 * n_cols)
    notes = ["Grey: not run. * mean over fewer tasks than the panel's.", *footer]
    # ~18 characters of x-small text per inch: wrap the notes to the figure's width
    notes = [
        part
        for note in notes
        for part in textwrap.wrap(note, int(18 * width), subsequent_indent="    ")
    ]
    height = 1.6 + 0.35 * n_rows + 0.16 * len(notes)
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    cmap = colormaps["RdYlGn"].with_extremes(bad=MISSING_COLOUR)
    image = None
    for ax, panel in zip(axes, panels, strict=True):
        grid = np.ma.masked_invalid(
            np.array([[np.nan if v is None else v for v in row] for row in panel.values], float)
        )
        image = ax.imshow(grid, cmap=cmap, vmin=0, vmax=100, aspect="auto")
        for i, row in enumerate(panel.values):
            for j, value in enumerate(row):
                if value is None:
                    continue
                mark = "*" if panel.partial[i][j] else ""
                ax.text(
                    j,
                    i,
                    f"{value:.1f}{mark}" if n_cols <= 8 else f"{value:.0f}{mark}",
                    ha="center",
                    va="center",
                    fontsize="x-small",
                    color="white" if value < 20 or value > 85 else "black",
                )
        ax.set_xticks(
            range(n_cols), [labels.get(n, token_label(n)) for n in panel.lengths], fontsize="small"
        )
        ax.set_yticks(range(n_rows), panel.rows, fontsize="small")
        ax.set_title(panel.title, fontsize="medium")
        ax.set_xlabel("Context length (tokens)")
    fig.suptitle(title)
    if image is not None:
        fig.colorbar(image, ax=list(axes), shrink=0.9, label="Accuracy (%)")
    fig.supxlabel("\n".join(notes), x=0.0, ha="left", fontsize="x-small")
    return save(fig, out_prefix)


# Each group of `report.rl_ablation` names its three systems by role, drawn in this order.
ROLE_LABELS = dict(  # each report.rl_ablation role's row label, in the config's order
    zip(ABLATION_ROLES, ("Backbone (whole context)", "MemAgent w/o RL", "RL-MemAgent"), strict=True)
)


Groups = Mapping[str, Mapping[str, str]]  # group label -> role -> system id


def ablation_rows(table: pd.DataFrame, groups: Groups) -> dict[str, pd.DataFrame]:
    """Per group, the rows of its systems in `table` (a Table 1 or Table 3 DataFrame), indexed
    by role label. A system the table lacks (it does not run the table's benchmark) is an
    error naming it."""
    row_of = {sid: display for display, sid in table.attrs["system_ids"].items()}
    panels = {}
    for group, roles in groups.items():
        missing = [sid for sid in roles.values() if sid not in row_of]
        if missing:
            raise ValueError(
                f"RL ablation group {group!r}: system(s) {', '.join(missing)} not in the table "
                "(each must run the figure's benchmark)"
            )
        panel = table.loc[[row_of[roles[role]] for role in ROLE_LABELS]].copy()
        panel.index = pd.Index(list(ROLE_LABELS.values()), name="role")
        panel.attrs = dict(table.attrs)
        panels[group] = panel
    return panels


def plot_curve_panels(
    panels: Mapping[str, pd.DataFrame],
    out_prefix: str | Path,
    title: str,
    checks: Sequence[ClaimCheck] = (),
    draw: Callable[[Any, pd.DataFrame], bool] | None = None,
) -> list[Path]:
    """One panel of curves per group, a curve per row of its table (Figure 6: RULER-HQA
    accuracy against measured length per backbone size; Figure 8: NIAH per memory size), the
    paper's claims and our checks beneath. `draw` plots one panel (default: against tokens)."""
    draw = draw or _draw_accuracy_vs_length
    fig = Figure(figsize=(5.0 * max(1, len(panels)) + 4.0, 5.5), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, max(1, len(panels)), squeeze=False)[0]
    paper_drawn = False
    for ax, (group, panel) in zip(axes, panels.items(), strict=False):
        paper_drawn |= draw(ax, panel)
        ax.set_title(group)
    fig.suptitle(title)
    figure_legend(fig, axes[0], paper_drawn, loc="outside right center")
    claims_footer(fig, checks)
    return save(fig, out_prefix)


PAPER_MARK = {"color": "black", "marker": "D", "linestyle": "", "markersize": 5}  # on a bar


def plot_bar_panels(
    panels: Mapping[str, pd.DataFrame],
    out_prefix: str | Path,
    title: str,
    checks: Sequence[ClaimCheck] = (),
) -> list[Path]:
    """One panel per group, bars of our score per column (Figures 7 and 9: LongBench-QA per
    dataset and AVG) for each row of its table, each labelled with its value (a score of 0 is
    a bar of no height; "—" marks one not run); the paper's value, where it prints one, as a
    black-edged diamond filled in its row's colour, over the bar it belongs to."""
    fig = Figure(figsize=(6.0 * max(1, len(panels)) + 4.0, 5.5), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, max(1, len(panels)), squeeze=False)[0]
    paper_drawn = False
    for ax, (group, panel) in zip(axes, panels.items(), strict=False):
        columns = list(panel.columns)
        width = 0.8 / max(1, len(panel))
        for i, (role, row) in enumerate(panel.iterrows()):
            xs = np.arange(len(columns)) + (i - (len(panel) - 1) / 2) * width
            ours = [np.nan if c.ours is None else c.ours for c in row]
            heights = np.nan_to_num(ours)  # a bar of no height for one not run: its label says
            errors = [error_bar(c) for c in row]  # our 95 % intervals
            bars = ax.bar(
                xs,
                heights,
                width,
                color=f"C{i}",
                label=str(role),
                yerr=np.array(errors).T,
                error_kw={"elinewidth": 0.8, "capsize": 2, "ecolor": "dimgray"},
            )
            values = [DASH if np.isnan(v) else f"{v:.0f}" for v in ours]
            ax.bar_label(bars, labels=values, fontsize="x-small", padding=1)
            paper = [(x, c.paper) for x, c in zip(xs, row, strict=True) if c.paper is not None]
            if paper:
                paper_drawn = True
                ax.plot(*zip(*paper, strict=True), **PAPER_MARK, markerfacecolor=f"C{i}")
        ax.set_xticks(range(len(columns)), [length_label(panel, c) for c in columns])
        ax.set_ylim(0, 100)
        ax.set_ylabel("Score (%)")
        ax.set_title(group)
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(title)
    handles, labels = axes[0].get_legend_handles_labels()
    if paper_drawn:
        handles.append(Line2D([], [], **PAPER_MARK, markerfacecolor="white"))
        labels.append("paper (in its bar's colour)")
    fig.legend(handles, labels, fontsize="small", loc="outside right center")
    claims_footer(fig, checks)
    return save(fig, out_prefix)


def memory_panels(
    table: pd.DataFrame, systems: Systems, agent: Mapping[str, int]
) -> dict[str, pd.DataFrame]:
    """Per ablated system (titled by its display name), its rows and its variants' in `table`
    (a Table 8 or 9 DataFrame) by memory size, labelled "memory M" (`agent`: the budgets of the
    system itself)."""
    specs = system_specs(systems)
    row_of = {sid: display for display, sid in table.attrs["system_ids"].items()}
    groups: dict[str, list[tuple[int, str]]] = {}
    for sid, spec in specs.items():
        if sid in row_of:
            memory = {**agent, **spec.get("agent", {})}["memory_tokens"]
            groups.setdefault(spec.get("ablation_of", sid), []).append((memory, sid))
    panels = {}
    for base, members in groups.items():
        members.sort()
        panel = table.loc[[row_of[sid] for _, sid in members]].copy()
        panel.index = pd.Index([f"memory {memory}" for memory, _ in members], name="setting")
        panel.attrs = dict(table.attrs)
        panels[specs[base]["display"]] = panel
    return panels


def draw_by_column(ax: Any, panel: pd.DataFrame) -> bool:
    """One line per row over the table's columns in order (ours solid, the paper's dashed);
    whether any paper line was drawn."""
    columns = list(panel.columns)
    paper_drawn = False
    drawn = []
    for i, (label, row) in enumerate(panel.iterrows()):
        ours = [(x, c) for x, c in enumerate(row) if c.ours is not None]
        paper = [(x, c.paper) for x, c in enumerate(row) if c.paper is not None]
        colour, style = f"C{i}", series_style(i)
        if ours:
            xs, ys = [x for x, _ in ours], [c.ours for _, c in ours]
            draw_band(ax, xs, *interval_bounds([c for _, c in ours]), colour)
            ax.plot(xs, ys, OURS_STYLE, color=colour, label=str(label), **style)
            drawn.append((str(label), xs, ys))
        if paper:
            paper_drawn = True
            ax.plot(*zip(*paper, strict=True), PAPER_STYLE, color=colour, **style)
    overlap_note(ax, drawn)
    ax.set_xticks(range(len(columns)), [length_label(panel, c) for c in columns])
    ax.set_ylim(-2, 102)
    ax.set_xlabel("Context length (tokens)")
    ax.set_ylabel("Accuracy (%)")
    ax.grid(True, alpha=0.3)
    return paper_drawn
