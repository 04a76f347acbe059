"""MemAgent's figures (seed 000): accuracy against context length (Figure 1: log x axis, ours
solid, the paper's dashed), the RULER heatmaps (Figure 5: NIAH; the OOD figure: RULER average
and SQuAD QA), the RL ablation (Figures 6, 7), memory size (8, 9) and FLOPs (10).

The paper prints no numbers for its heatmaps, only claims ("over 95% at 512K"); those claims are
checked against our numbers and written under the heatmaps (`check_claims`).
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

from memrl.benchmarks import benchmark as benchmark_of
from memrl.config import ABLATION_ROLES
from memrl.data.ruler import RULER_TASKS
from memrl.report.cells import (
    AVG,
    BENCHMARK,
    DASH,
    Key,
    Systems,
    index_metrics,
    records_of,
    system_specs,
)
from memrl.report.claims import (
    NOT_CHECKABLE,
    ClaimCheck,
    Estimate,
    Named,
    claim_lines,
    described,
    difference,
    estimate,
    judge,
    judge_lowest,
    lone,
    lowest,
    lowest_note,
    parts_of,
)
from memrl.report.memagent_tables import NIAH_TASKS, token_label
from memrl.report.plots import (
    OURS_STYLE,
    PAPER_STYLE,
    claims_footer,
    draw_band,
    error_bar,
    figure_legend,
    figure_series,
    interval_bounds,
    overlap_note,
    plain_log_ticks,
    save,
    series_style,
)
from memrl.report.render import length_label
from memrl.scoring.intervals import Interval, mean_interval


def plot_accuracy_vs_length(
    table: pd.DataFrame,
    out_prefix: str | Path,
    title: str,
    checks: Sequence[ClaimCheck] = (),
) -> list[Path]:
    """Plot a Table 1 DataFrame (`build_table1`) to `<prefix>.png` and `<prefix>.pdf`, the
    paper's claims and our checks beneath."""
    fig = Figure(figsize=(7.0, 5.0 + 0.25 * len(claim_lines(checks))), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    paper_drawn = _draw_accuracy_vs_length(ax, table)
    ax.set_title(title)
    figure_legend(
        fig, ax, paper_drawn, "outside right center" if checks else "outside lower center"
    )
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
on_hqa = records_of(BENCHMARK)  # Figure 10's measured cost: RULER-HQA's evaluations
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


def _task_mean(
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
        cells = [_task_mean(found, sid, tasks, length, RULER) for length in lengths]
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
    average = _average_tasks(found, average_tasks)
    rows = _panel_rows(found, specs, {*average, qa_task})
    if not rows:
        raise ValueError(f"no RULER metrics for {', '.join([*average, qa_task])}: nothing to plot")
    lengths = sorted({key[3] for key in found if key[1] in {*average, qa_task}})
    panels = [
        heatmap(found, specs, average, f"(a) mean of {len(average)} RULER tasks", rows, lengths),
        heatmap(found, specs, (qa_task,), f"(b) {qa_task} (SQuAD)", rows, lengths),
    ]
    return _plot_heatmaps(panels, out_prefix, title, length_labels, claim_lines(checks))


def _average_tasks(
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


def check_claims(
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    claims: Sequence[Mapping[str, Any]],
    *,
    average_tasks: Sequence[str] | None = None,
    niah_tasks: Sequence[str] = NIAH_TASKS,
    benchmark: str = RULER,
) -> list[ClaimCheck]:
    """Check the paper's claims on our metrics records of `benchmark` (RULER's, or RULER-HQA's
    for Figure 1: see `_check_claims`); the "average" panel is over `average_tasks` (default:
    as the OOD figure's)."""
    specs, found = ruler_records(records, systems, benchmark)
    average = _average_tasks(found, average_tasks)
    return _check_claims(
        found, specs, claims, average_tasks=average, niah_tasks=niah_tasks, benchmark=benchmark
    )


# A records claim's statistic over the per-length means, on draws x lengths. "min" is judged
# length by length (memrl.report.claims.judge_lowest), and is the only one against rivals: the
# smallest of our margins over each rival at each length, over the best rival at the worst one.
LENGTH_STATISTICS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "min": lambda x: x.min(axis=1),
    "drop": lambda x: x[:, 0] - x[:, -1],  # the first length minus the last
}


def _check_claims(
    found: Mapping[Key, Mapping[str, Any]],
    specs: Mapping[str, Mapping[str, Any]],
    claims: Sequence[Mapping[str, Any]],
    *,
    average_tasks: Sequence[str] = (),
    niah_tasks: Sequence[str] = NIAH_TASKS,
    benchmark: str = RULER,
) -> list[ClaimCheck]:
    """Check each claim (config/paper/memagent.yaml `niah.claims`, `ood.claims`,
    `figure1.claims`) on every system whose paper_row is among the claim's `rows`: the
    per-length mean over the claim's `panel` ("average" = `average_tasks`, "niah_mean" =
    `niah_tasks`, else one task), then `statistic` ("min" over the lengths in range, "drop" =
    first minus last) with its 95 % interval, judged by `op` against `value` on that interval
    (memrl.report.claims.judge: not checkable without one). "min" is judged length by length
    (memrl.report.claims.judge_lowest: "> 95" holds only if it does at every length) and reports
    the 95 % interval at its lowest length. With `against` ("min" only), on our margin over each
    system of those paper rows at each length: the value is the smallest, over the best rival at
    the worst length, with that margin's interval; it holds only if every margin does."""
    checks = []
    for claim in claims:
        claim_id, text = str(claim["id"]), " ".join(str(claim["text"]).split())
        if "statistic" not in claim:
            checks.append(ClaimCheck(claim_id, text, None, None, NOT_CHECKABLE, NO_NUMBER))
            continue
        if claim["statistic"] not in LENGTH_STATISTICS:
            raise ValueError(
                f"claim {claim_id!r}: unknown statistic {claim['statistic']!r} "
                f"({', '.join(LENGTH_STATISTICS)})"
            )
        if claim.get("against") and claim["statistic"] != "min":
            raise ValueError(
                f"claim {claim_id!r}: a claim against rivals takes statistic 'min' "
                f"(the margin over the best rival at the worst length), not {claim['statistic']!r}"
            )
        panel = claim["panel"]
        tasks = {"average": tuple(average_tasks), "niah_mean": tuple(niah_tasks)}.get(
            panel, (panel,)
        )
        matched = [sid for sid, spec in specs.items() if spec.get("paper_row") in claim["rows"]]
        for sid in matched:
            checks.append(_check_one(claim, claim_id, text, found, specs, sid, tasks, benchmark))
        if not matched:
            checks.append(
                ClaimCheck(claim_id, text, None, None, NOT_CHECKABLE, "no system of its rows")
            )
    return checks


NO_NUMBER = "no number to check"


def _check_one(
    claim: Mapping[str, Any],
    claim_id: str,
    text: str,
    found: Mapping[Key, Mapping[str, Any]],
    specs: Mapping[str, Mapping[str, Any]],
    sid: str,
    tasks: Sequence[str],
    benchmark: str,
) -> ClaimCheck:
    low, high = (int(n) for n in claim["lengths"])
    name = token_label if benchmark_of(benchmark).length_unit == "tokens" else str
    span = f"{name(low)}–{name(high)}" if low != high else name(low)
    display = specs[sid]["display"]
    rivals = [s for s, spec in specs.items() if spec.get("paper_row") in claim.get("against", ())]
    if claim.get("against") and not rivals:
        rows = ", ".join(claim["against"])
        return ClaimCheck(claim_id, text, display, None, NOT_CHECKABLE, f"no system of {rows}")
    series = [_length_series(found, s, tasks, low, high, benchmark) for s in [sid, *rivals]]
    if any(s is None for s in series):
        detail = f"not all of {span} run on {len(tasks)} task(s)"
        return ClaimCheck(claim_id, text, display, None, NOT_CHECKABLE, detail)
    ours, *others = [s for s in series if s is not None]
    lengths = [n for n, _ in ours]
    if any([n for n, _ in other] != lengths for other in others):
        detail = f"the rivals do not run the same lengths of {span}"
        return ClaimCheck(claim_id, text, display, None, NOT_CHECKABLE, detail)
    op, threshold = claim["op"], float(claim["value"])
    if claim["statistic"] == "min":
        theirs = [(specs[r]["display"], o) for r, o in zip(rivals, others, strict=True)]
        parts = parts_of(_min_parts(ours, theirs, name))
        least = lowest(parts)
        value, interval = least.value, least.interval
        outcome = judge_lowest(op, threshold, parts)
        of = lowest_note(least, parts)
    else:  # no rivals: checked by _check_claims
        statistic = LENGTH_STATISTICS[claim["statistic"]]
        value, interval = estimate(statistic, [e for _, e in ours])
        outcome, of = judge(op, threshold, interval), ""
    over = f" of the margin over {', '.join(claim['against'])}" if others else ""
    detail = (
        f"{claim['statistic']}{over} over {span} = {described(value, interval)}{of} "
        f"(claim: {op} {threshold:g})"
    )
    return ClaimCheck(claim_id, text, display, value, outcome, detail, interval)


Series = list[tuple[int, Estimate]]  # a system's per-length means with their intervals


def _min_parts(
    ours: Series, theirs: Sequence[tuple[str, Series]], label: Callable[[int], str]
) -> Named:
    """The parts of a "min" claim (memrl.report.claims.judge_lowest): our mean at each length,
    or, against rivals, our margin over each rival at each length."""
    if not theirs:
        return {f"at {label(n)}": (lone, [mean]) for n, mean in ours}
    return {
        f"over {rival} at {label(n)}": (difference, [mean, other])
        for rival, series in theirs
        for (n, mean), (_, other) in zip(ours, series, strict=True)
    }


def _length_series(
    found: Mapping[Key, Mapping[str, Any]],
    sid: str,
    tasks: Sequence[str],
    low: int,
    high: int,
    benchmark: str,
) -> Series | None:
    """The system's complete per-length means over `tasks` from `low` to `high`, with their
    intervals; None unless both ends and every length between are complete."""
    lengths = sorted({k[3] for k in found if k[2] == sid and k[1] in tasks and low <= k[3] <= high})
    if not lengths or lengths[0] != low or lengths[-1] != high:
        return None
    series = []
    for n in lengths:
        value, interval, partial = _task_mean(found, sid, tasks, n, benchmark)
        if value is None or partial:
            return None
        series.append((n, (value, interval)))
    return series


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


def check_ablation_claims(
    panels: Mapping[str, pd.DataFrame], claims: Sequence[Mapping[str, Any]]
) -> list[ClaimCheck]:
    """Each claim (config/paper/memagent.yaml `rl_ablation.claims`) on every group: `gain` = the
    mean over the columns both have of `of[0]` minus `of[1]` (roles), `drop` = `of[0]` at its
    first column minus its last, each with its 95 % interval from the cells'; judged by `op`
    against `value` when the claim has a number, else only reported. Average columns (AVG) are
    left out: they are means of the others."""
    checks = []
    for claim in claims:
        claim_id, text = str(claim["id"]), " ".join(str(claim["text"]).split())
        for group, panel in panels.items():
            value, interval, detail = _ablation_statistic(claim, panel)
            outcome = NOT_CHECKABLE
            if value is not None and "op" in claim:
                outcome = judge(claim["op"], float(claim["value"]), interval)
                detail += f" (claim: {claim['op']} {float(claim['value']):g})"
            elif value is not None:
                detail += " (the paper gives no number: reported, not judged)"
            checks.append(ClaimCheck(claim_id, text, group, value, outcome, detail, interval))
    return checks


def _ablation_statistic(
    claim: Mapping[str, Any], panel: pd.DataFrame
) -> tuple[float | None, Interval | None, str]:
    roles = [ROLE_LABELS[role] for role in claim["of"]]
    columns = [c for c in panel.columns if c != AVG]
    cells = {role: {c: panel.loc[role, c] for c in columns} for role in roles}
    if claim["statistic"] == "gain":
        first, second = roles
        shared = [c for c in columns if None not in (cells[first][c].ours, cells[second][c].ours)]
        if not shared:
            return None, None, f"{first} and {second} share no column"
        inputs = [_estimate(cells[role][c]) for role in (first, second) for c in shared]
        k = len(shared)

        def gain(x: np.ndarray) -> np.ndarray:
            return (x[:, :k] - x[:, k:]).mean(axis=1)

        value, interval = estimate(gain, inputs)
        mean = f"mean over {k} column(s) = {described(value, interval, '{:+.1f}')}"
        return value, interval, f"{first} minus {second}, {mean}"
    if claim["statistic"] == "drop":
        (role,) = roles
        present = [c for c in columns if cells[role][c].ours is not None]
        if len(present) < 2:
            return None, None, f"{role}: fewer than two columns"
        inputs = [_estimate(cells[role][c]) for c in (present[0], present[-1])]
        value, interval = estimate(LENGTH_STATISTICS["drop"], inputs)
        span = f"{length_label(panel, present[0])} to {length_label(panel, present[-1])}"
        return value, interval, f"{role}: {span} drop = {described(value, interval)}"
    raise ValueError(f"claim {claim['id']!r}: unknown statistic {claim['statistic']!r}")


def _estimate(cell: Any) -> Estimate:
    return float(cell.ours), cell.ci


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


FLOPS_METHODS = {"backbone": "long_context", "rl": "memagent"}  # role -> flops.predicted_flops
FLOPS_LABELS = {"backbone": "long-context model", "rl": "MemAgent"}


def model_shape(model_dir: str | Path) -> Any:
    """The Qwen2 shape in a model directory's config.json (the downloaded model's own)."""
    from memrl.data.io import read_json
    from memrl.report.flops import Qwen2Shape

    path = Path(model_dir) / "config.json"
    config = read_json(path)
    missing = [key for key in SHAPE_KEYS if key not in config]
    if missing:
        raise ValueError(f"{path}: no {', '.join(missing)} (not a Qwen2-style config)")
    return Qwen2Shape.from_config(config)


SHAPE_KEYS = (
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "vocab_size",
)


def read_wall_seconds(paths: Sequence[str | Path]) -> float:
    """The wall time of one evaluation: the `s` column of Snakemake's benchmark file of each job
    that ran it (each shard), the mean of its repeats, summed over the jobs."""
    total = 0.0
    for path in paths:
        frame = pd.read_csv(path, sep="\t")
        if "s" not in frame.columns or frame.empty:
            raise ValueError(f"{path}: not a Snakemake benchmark file (no `s` column or row)")
        total += float(frame["s"].mean())
    return total


@dataclass(frozen=True)
class Measured:
    """One system's RULER-HQA jobs: mean context tokens and wall seconds per sample, by length."""

    tokens: list[float]
    seconds: list[float]


def measured_costs(
    records: Iterable[Mapping[str, Any]], flops: Mapping[str, Any]
) -> dict[str, dict[str, Measured]]:
    """Per group and role (backbone, rl) of `flops` (settings: `groups`, `benchmarks` by
    "system/length"), the jobs' wall seconds per sample against their mean context tokens."""
    by_key = {
        f"{r['system']}/{int(r['length'])}": r
        for r in records
        if on_hqa(r) and r["mean_tokens"] is not None and r["n_items"]
    }
    measured: dict[str, dict[str, Measured]] = {}
    for group, roles in flops["groups"].items():
        measured[group] = {}
        for role in FLOPS_METHODS:
            points = sorted(
                (float(record["mean_tokens"]), read_wall_seconds(paths) / record["n_items"])
                for key, paths in flops["benchmarks"].items()
                if key.split("/")[0] == roles[role] and (record := by_key.get(key)) is not None
            )
            measured[group][role] = Measured([t for t, _ in points], [w for _, w in points])
    return measured


def plot_flops(
    shapes: Mapping[str, Any],
    measured: Mapping[str, Mapping[str, Measured]],
    flops: Mapping[str, Any],
    out_prefix: str | Path,
    title: str,
) -> list[Path]:
    """Figure 10. (a) Appendix B: FLOPs of the long-context model and of MemAgent from 8K to 4M
    tokens per group's model shape, with the fitted exponent p (cost ~ n^p). (b) Beyond the
    paper: our RULER-HQA jobs' wall seconds per sample against their mean context tokens
    (solid), and the FLOPs predicted at those tokens scaled to the first point (dotted)."""
    from memrl.report.flops import (
        FIGURE_LENGTHS,
        attention_coefficient,
        fitted_exponent,
        predicted_flops,
    )

    attention = flops["attention"]

    fig = Figure(figsize=(12.0, 5.5), layout="constrained")
    FigureCanvasAgg(fig)
    predicted_ax, measured_ax = fig.subplots(1, 2)
    notes = []
    for g, (group, shape) in enumerate(shapes.items()):
        spec = flops["groups"][group]
        for role, method in FLOPS_METHODS.items():
            colour, style = f"C{2 * g + (role == 'rl')}", "-" if role == "rl" else "--"
            costs = predicted_flops(
                shape, FIGURE_LENGTHS, method, flops["agent"], attention=attention
            )
            p = fitted_exponent(FIGURE_LENGTHS, costs)
            label = f"{FLOPS_LABELS[role]}, {group} (p = {p:.2f})"
            predicted_ax.plot(FIGURE_LENGTHS, costs, style, color=colour, marker="o", label=label)
            ours = measured.get(group, {}).get(role)
            if ours is None or not ours.tokens:
                notes.append(f"{group} {FLOPS_LABELS[role]}: no measured job")
                continue
            cap = spec["backbone_max_input"] if role == "backbone" else None
            at = predicted_flops(
                shape, ours.tokens, method, flops["agent"], cap, attention=attention
            )
            scaled = [c * ours.seconds[0] / at[0] for c in at]
            fit = (
                f"p = {fitted_exponent(ours.tokens, ours.seconds):.2f}"
                if len(ours.tokens) > 1
                else "one length"
            )
            label = f"{FLOPS_LABELS[role]}, {group} ({spec[role]}, {fit})"
            measured_ax.plot(
                ours.tokens, ours.seconds, style, color=colour, marker="o", label=label
            )
            measured_ax.plot(ours.tokens, scaled, ":", color=colour)
            if cap is not None:
                notes.append(f"{group} {FLOPS_LABELS[role]}: input truncated to {cap:,} tokens")
    agent = flops["agent"]
    source = "the paper's verl fork" if attention == "fork" else "verl 0.9.1"
    predicted_ax.set_title(
        f"(a) Predicted, verl's Qwen2 estimate (q = {agent['query_tokens']}, "
        f"N = {agent['chunk_tokens']}, o = {agent['final_tokens']};\n"
        f"attention {attention_coefficient(attention)}·n²·d per layer, as {source})",
        fontsize="medium",
    )
    predicted_ax.set_ylabel("FLOPs (forward + backward)")
    measured_ax.set_title(
        "(b) Measured: evaluation wall time (dotted: predicted, scaled)", fontsize="medium"
    )
    measured_ax.set_ylabel("Wall seconds per sample")
    for ax in (predicted_ax, measured_ax):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("Context length (tokens, log scale)")
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="x-small", loc="upper left")
    plain_log_ticks(measured_ax)
    fig.suptitle(title)
    if notes:
        fig.supxlabel("\n".join(notes), x=0.0, ha="left", fontsize="x-small")
    return save(fig, out_prefix)
