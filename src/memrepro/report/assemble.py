"""A paper table assembled from metrics records: a row per system (config order, by display
name), a `Cell` per column (`Column`: one metric of one benchmark/task/length) and per average
(`Average`: the mean of the columns present; a partial mean is marked and its paper value is
the paper's mean over the same columns; the paper's own printed average is recomputed the same
way, and a note names every printed one that disagrees), with the footnotes of failed requests,
lenient scoring and partial averages."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from memrepro.benchmarks import registered
from memrepro.report.cells import DASH, OVER_ALL, PARTIAL_MARK, Cell
from memrepro.report.records import Key, index_metrics, n_dropped, official_accuracy
from memrepro.report.rows import Systems, lookup, system_specs
from memrepro.scoring.intervals import Interval, mean_interval


@dataclass(frozen=True)
class Column:
    """A column read from one metrics field of one (benchmark, task, length) per system."""

    key: Any
    label: str
    benchmark: str
    task: str
    length: int
    metric: str
    paper: tuple[Any, ...] | None  # path of the paper's value in a paper row (None: not printed)
    extras: tuple[tuple[str, str], ...] = ()  # (label, metrics field) shown beside ours
    hidden: bool = False  # only feeds an average (the NIAH table's per-task scores)
    scale: float = 1.0  # ours = the field x scale (Mem-α's memory: tokens -> K tokens)


@dataclass(frozen=True)
class Average:
    """The mean of other columns of the same row; `paper` = path of the printed average."""

    key: Any
    label: str
    of: tuple[Any, ...]
    paper: tuple[Any, ...] | None


SCORE = "accuracy"  # the metric each prediction line's score is an item of


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def accuracy_cell(record: Mapping[str, Any], paper: float | None, table: str) -> Cell:
    """A record's accuracy (the official one where outputs were dropped) with its interval,
    beside the paper's number."""
    column = Column(
        "accuracy", "accuracy", record["benchmark"], record["task"], 0, "accuracy", None
    )
    return _column_cell(column, record, paper, table)


def _column_cell(
    column: Column, record: Mapping[str, Any] | None, paper: float | None, table: str
) -> Cell:
    if record is None:
        return Cell(ours=None, paper=paper, delta=None)
    if column.metric not in record:
        raise ValueError(f"{record.get('path', record['system'])}: no {column.metric!r} ({table})")
    if record[column.metric] is None:  # e.g. no memory size for this system
        return Cell(ours=None, paper=paper, delta=None)
    ours = float(record[column.metric]) * column.scale
    extras = {label: record.get(key) for label, key in column.extras}
    dropped = n_dropped(record)
    scored = column.metric
    if column.metric == "accuracy" and dropped:
        # the official figure (empty outputs dropped) beside the paper's; ours over all beside
        extras = {**extras, OVER_ALL: ours}
        ours = official_accuracy(record)
        scored = "accuracy_official"
    bounds, fixed = (
        (record.get(key, {}).get(scored) for key in ("ci95", "ci95_fixed_instances"))
        if column.scale == 1.0
        else (None, None)
    )
    n_scored = int(record["n_items"]) - (0 if scored == "accuracy" else dropped)
    right_wrong = scored in record.get("right_wrong", ())  # k/n, checked when it was read
    nonzero = record.get("n_nonzero", {}).get(scored) if column.scale == 1.0 else None
    return Cell(
        n_nonzero=nonzero,
        ci=_bounds(bounds),
        ci_fixed=_bounds(fixed),
        n_scored=n_scored,
        right_wrong=right_wrong,
        n_questions=record.get("n_questions"),
        ours=ours,
        paper=paper,
        delta=None if paper is None else ours - paper,
        n_items=int(record["n_items"]),
        n_dropped=dropped,
        accuracy_official=record["accuracy_official"] if column.metric == "accuracy" else None,
        mean_tokens=None if record["mean_tokens"] is None else float(record["mean_tokens"]),
        extras=extras,
    )


def _bounds(bounds: Sequence[float] | None) -> Interval | None:
    return None if bounds is None else (float(bounds[0]), float(bounds[1]))


def _average_cell(
    average: Average,
    parts: Mapping[Any, Cell],
    printed: float | None,
    labels: Mapping[Any, str],
) -> tuple[Cell, str | None]:
    """The mean of the parts present, with the paper's mean over the same parts (or the printed
    average when the paper prints no parts and ours covers all of them), and a partial-mean note."""
    present = {key: parts[key].ours for key in average.of if parts[key].ours is not None}
    covered = list(present) or list(average.of)
    paper_parts = [parts[key].paper for key in covered]
    if all(value is not None for value in paper_parts):
        paper = _mean([float(v) for v in paper_parts if v is not None])
    elif len(covered) == len(average.of):
        paper = printed
    else:
        paper = None
    if not present:
        return Cell(ours=None, paper=paper, delta=None), None
    ours = sum(float(v) for v in present.values() if v is not None) / len(present)
    extra_labels = dict.fromkeys(label for key in present for label in parts[key].extras)
    extras = {
        label: _mean([v for key in present if (v := parts[key].extras.get(label)) is not None])
        for label in extra_labels
    }
    partial = len(present) < len(average.of)
    means = [float(v) for v in present.values() if v is not None]
    intervals = [parts[key].ci for key in present]
    fixed = [parts[key].ci_fixed for key in present]
    questions = [parts[key].n_questions for key in present]
    nonzero = [parts[key].n_nonzero for key in present]
    cell = Cell(
        ci=None if None in intervals else mean_interval(means, intervals),  # type: ignore[arg-type]
        ci_fixed=None if None in fixed else mean_interval(means, fixed),  # type: ignore[arg-type]
        ours=ours,
        paper=paper,
        delta=None if paper is None else ours - paper,
        n_items=sum(parts[key].n_items for key in present),
        n_dropped=sum(parts[key].n_dropped for key in present),
        n_scored=sum(parts[key].n_scored for key in present),
        n_questions=None if None in questions else sum(q for q in questions if q is not None),
        n_nonzero=None if None in nonzero else sum(k for k in nonzero if k is not None),
        parts=tuple(present),
        derived=average.paper is None,
        mark=PARTIAL_MARK if partial else "",
        extras=extras,
    )
    note = None
    if partial:
        missing = ", ".join(labels[key] for key in average.of if key not in present)
        note = (
            f"{average.label} over {len(present)} of {len(average.of)} columns "
            f"(missing: {missing}); its paper value is the paper's mean over the same columns"
        )
    return cell, note


def assemble(
    found: Mapping[Key, Mapping[str, Any]],
    selected: Mapping[str, Mapping[str, Any]],
    rows: Mapping[str, str | None],
    paper_rows: Mapping[str, Any],
    columns: Sequence[Column],
    averages: Sequence[Average],
    *,
    column_name: str,
    table: str,
    notes: Sequence[str] = (),
) -> pd.DataFrame:
    """Cells of every selected system x column (+ averages), notes in `attrs`."""
    by_key = {column.key: column for column in columns}
    labels = {c.key: c.label for c in columns} | {a.key: a.label for a in averages}
    shown = [c.key for c in columns if not c.hidden] + [a.key for a in averages]
    order = _display_order(columns, averages)
    data: dict[Any, list[Cell]] = {key: [] for key in order if key in shown}
    partial_notes: list[str] = []
    failure_notes: list[str] = []
    scoring_notes: list[str] = []
    paper_notes: list[str] = []
    for sid, spec in selected.items():
        row = rows[sid]
        paper_cells = paper_rows.get(row) if row is not None else None
        cells: dict[Any, Cell] = {}
        noted: set[int] = set()
        for column in columns:
            record = found.get((column.benchmark, column.task, sid, column.length))
            paper = lookup(paper_cells, column.paper) if column.paper is not None else None
            cell = _column_cell(column, record, paper, table)
            if record is not None and column.metric == SCORE:  # its items' own score
                cell = replace(cell, source=(column.benchmark, column.task, sid, column.length))
            cells[column.key] = cell
            if record is not None and id(record) not in noted:
                noted.add(id(record))
                if n_dropped(record):
                    failure_notes.append(_failure_note(spec["display"], column, record))
                if record.get("n_lenient_sub_em"):
                    scoring_notes.append(_lenient_note(spec["display"], column, record))
                if record.get("n_inside_gold_sub_em"):
                    scoring_notes.append(_inside_gold_note(spec["display"], column, record))
        for average in averages:
            printed = lookup(paper_cells, average.paper) if average.paper is not None else None
            parts = {key: cells[key] for key in average.of}
            cells[average.key], note = _average_cell(average, parts, printed, labels)
            if note:
                partial_notes.append(f"{spec['display']}: {note}.")
            if row is not None and paper_cells is not None:
                paper_note = _printed_average_note_for(row, average, paper_cells, by_key)
                if paper_note and paper_note not in paper_notes:
                    paper_notes.append(paper_note)
        for key in data:
            data[key].append(cells[key])
    displays = [spec["display"] for spec in selected.values()]
    frame = pd.DataFrame(
        data, index=pd.Index(displays, name="system"), columns=list(data), dtype=object
    )
    frame.columns.name = column_name
    frame.attrs = {
        "column_labels": {key: labels[key] for key in data},
        # where each column's number sits in a paper row (the CSV's paper_at)
        "paper_paths": {c.key: c.paper for c in columns} | {a.key: a.paper for a in averages},
        "system_ids": {spec["display"]: sid for sid, spec in selected.items()},
        "paper_rows": {selected[sid]["display"]: row for sid, row in rows.items()},
        "notes": [*notes, *paper_notes],
        "partial_notes": partial_notes,
        "failure_notes": failure_notes,
        "scoring_notes": scoring_notes,
    }
    return frame


def _display_order(columns: Sequence[Column], averages: Sequence[Average]) -> list[Any]:
    """Columns in order, each average right after the last column it averages."""
    order: list[Any] = []
    pending = list(averages)
    for column in columns:
        order.append(column.key)
        for average in list(pending):
            if average.of and average.of[-1] == column.key:
                order.append(average.key)
                pending.remove(average)
    return order + [a.key for a in pending]


def _printed_average_note_for(
    row: str, average: Average, paper_cells: Any, by_key: Mapping[Any, Column]
) -> str | None:
    """A note when the paper's printed average is not the mean of its printed columns."""
    if average.paper is None:
        return None
    printed = lookup(paper_cells, average.paper)
    parts = [lookup(paper_cells, by_key[key].paper or ()) for key in average.of]
    if printed is None or not parts or any(v is None for v in parts):
        return None
    recomputed = sum(float(v) for v in parts if v is not None) / len(parts)
    if abs(recomputed - printed) <= 0.051:  # printed to 1 or 2 decimals
        return None
    return (
        f"Paper row {row!r}: {average.label} is printed as {printed:.2f}, but the mean of its "
        f"{len(parts)} columns is {recomputed:.2f}; the paper column shows the mean."
    )


def _failure_note(display: str, column: Column, record: Mapping[str, Any]) -> str:
    official = record["accuracy_official"]
    official_text = DASH if official is None else f"{official:.2f}"
    return (
        f"{_cell_name(display, column)}: {n_dropped(record)}/{record['n_items']} outputs empty "
        f"({record['n_failed']} failed requests), dropped as the official evaluator does: "
        f"{official_text} (shown beside the paper's); {record['accuracy']:.2f} counting them "
        f"wrong ({OVER_ALL!r})"
    )


def _lenient_note(display: str, column: Column, record: Mapping[str, Any]) -> str:
    return (
        f"{_cell_name(display, column)}: {record['n_lenient_sub_em']}/{record['n_items']} "
        "answers normalise to nothing (e.g. '???') and score sub_em 1, as in the official "
        f"scorer; strict sub_em {record['sub_em_strict']:.2f}"
    )


def _inside_gold_note(display: str, column: Column, record: Mapping[str, Any]) -> str:
    return (
        f"{_cell_name(display, column)}: {record['n_inside_gold_sub_em']}/{record['n_items']} "
        "answers score sub_em 1 only as part of a gold ('Ada' in 'Ada Lovelace'); "
        "exact match would score them 0"
    )


def _cell_name(display: str, column: Column) -> str:
    """'<system> @ <column>' in a footnote (a column of a benchmark whose tasks have labels,
    LongBench's datasets, by its task's label)."""
    found = registered().get(column.benchmark)
    where = found.task_labels.get(column.task) if found and found.task_labels else column.label
    return f"{display} @ {where or column.task}"


def select(
    metrics: Iterable[Mapping[str, Any]],
    systems: Systems,
    include: Callable[[str, Mapping[str, Any]], bool],
    in_scope: Callable[[Mapping[str, Any]], bool],
    benchmark: str,
) -> tuple[dict[str, dict[str, Any]], dict[Key, Mapping[str, Any]]]:
    """The systems this table shows (those `include`d that run `benchmark`), and their records
    in scope (other systems' records in scope belong to other tables and are dropped;
    unconfigured systems are errors)."""
    specs = system_specs(systems)
    selected = {
        sid: spec
        for sid, spec in specs.items()
        if include(sid, spec) and benchmark in spec.get("benchmarks", (benchmark,))
    }
    found = index_metrics(metrics, specs, in_scope)
    return selected, {key: rec for key, rec in found.items() if key[2] in selected}


def length_columns(
    found: Mapping[Key, Mapping[str, Any]],
    benchmark: str,
    task: str,
    labels: Callable[[int, list[float]], str],
) -> list[Column]:
    lengths = sorted({key[3] for key in found if key[0] == benchmark and key[1] == task})
    columns = []
    for length in lengths:
        tokens = [
            float(rec["mean_tokens"])
            for key, rec in found.items()
            if key[3] == length and key[1] == task and rec["mean_tokens"] is not None
        ]
        columns.append(
            Column(length, labels(length, tokens), benchmark, task, length, "accuracy", (length,))
        )
    return columns


def hqa_label(length_labels: Mapping[int, str]) -> Callable[[int, list[float]], str]:
    """The paper's label for a document count, else our measured mean length, else 'N docs'."""
    named = {int(n): str(label) for n, label in length_labels.items()}

    def label(n_docs: int, tokens: list[float]) -> str:
        if n_docs in named:
            return named[n_docs]
        return format_tokens(sum(tokens) / len(tokens)) if tokens else f"{n_docs} docs"

    return label


def format_tokens(tokens: float) -> str:
    """1234 -> '1.2K', 28012 -> '28K', 1.75e6 -> '1.75M' (for lengths the paper does not name)."""
    if tokens >= 1e6:
        return f"{tokens / 1e6:.3g}M"
    if tokens >= 1e3:
        return f"{tokens / 1e3:.2g}K" if tokens < 1e4 else f"{tokens / 1e3:.0f}K"
    return f"{tokens:.0f}"
