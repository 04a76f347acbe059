"""The paper's tables rebuilt from our metrics files, each cell beside the published number.

Every builder returns a DataFrame (rows = systems in config order, by display name) whose values
are `Cell`s: our score (failed requests count as wrong), the paper's number for the system's
paper row (None where the paper has none) and the difference. `write_table` writes any of them as
tidy CSV, Markdown and LaTeX (booktabs), with the table's notes as footnotes.

- Table 1 (`build_table1`): RULER-HQA accuracy per number of documents.
- Table 2 (`build_longbench_sum_table`): LongBench-SUM ROUGE-1/2/L recall and their mean.
- Table 3 (`build_longbench_qa_table`): LongBench-QA (the paper's per-item binary score, our
  `accuracy` = sub_em), with LongBench's own qa_f1 beside each cell.
- Table 10 (`build_rag_ruler_hqa_table`): RAG over whole documents vs MemAgent on RULER-HQA.
- Table 11 (`build_rag_longbench_table`): RAG over fixed-size chunks vs MemAgent on LongBench-QA.
- NIAH (`build_niah_table`): mean of niah_single_1/2/3 per length, against Table 8's MemAgent rows.

AVG columns are the mean of the columns present. A partial mean is marked and its paper value is
the paper's mean over the same columns; the paper's own AVG is recomputed from its columns the
same way, and a note names every printed AVG that disagrees (Table 11 divides by 6, not 5).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from memrl.config import (
    ABLATION_TABLES,
    MEMALPHA_BENCHMARKS,
    MEMALPHA_ONLY_KINDS,
    MEMALPHA_SCORE_TABLES,
    NIAH_CONFIG_TABLE,
    NIAH_FIGURE_TASKS,
    RULER_HQA_TASK,
    STATS_TABLES,
    SUITES_TABLE,
    TRACE_TABLE,
)
from memrl.data.io import atomic_path, read_json, write_text_atomic
from memrl.data.longbench import LONGBENCH_QA, LONGBENCH_SUM

BENCHMARK = "ruler_hqa"
UNLENGTHED = ("longbench", *MEMALPHA_BENCHMARKS)  # benchmarks whose records have length 0
DASH = "—"
FAILED_MARK = "†"  # empty outputs (failed requests among them) dropped, as the official eval
OVER_ALL = "over all"  # beside such a cell: ours with them counted wrong
PARTIAL_MARK = "*"
AVG = "avg"

NIAH_TASKS = NIAH_FIGURE_TASKS
# The paper's column headers (Tables 2, 3, 9, 11).
TASK_LABELS = {
    "2wikimqa": "2Wiki",
    "hotpotqa": "HQA",
    "musique": "MuSiQue",
    "narrativeqa": "NQA",
    "qasper": "Qasper",
    "gov_report": "GovReport",
    "qmsum": "QMSum",
}
# Table 2: (paper key, metrics-file field, header)
ROUGE_RECALLS = (
    ("rouge_1", "rouge_1_recall", "R-1"),
    ("rouge_2", "rouge_2_recall", "R-2"),
    ("rouge_l", "rouge_l_recall", "R-L"),
)
QA_F1 = ("F1", "qa_f1")  # shown beside Table 3/11 cells: (label, metrics-file field)

Key = tuple[str, str, str, int]  # a metrics record's (benchmark, task, system, length)
# The report settings' list of system dicts {"id", "display", "paper_row", "kind", ...}, or a
# mapping id -> spec.
Systems = Sequence[Mapping[str, Any]] | Mapping[str, Mapping[str, Any]]

RETRIEVER_NOTE = (
    "The paper's RAG used OpenAI text-embedding-3-large (dense); ours uses BM25 or "
    "all-MiniLM-L6-v2 (dense), so a RAG delta compares different retrievers."
)

_NUMBER = (int, float)
# key -> accepted types; bool is rejected separately (it is an int subclass).
_METRIC_FIELDS: dict[str, tuple[type, ...]] = {
    "benchmark": (str,),
    "task": (str,),
    "system": (str,),
    "length": (int,),
    "n_items": (int,),
    "n_failed": (int,),
    "accuracy": _NUMBER,
    "accuracy_official": (*_NUMBER, type(None)),
    "mean_tokens": (*_NUMBER, type(None)),
}
# Percentages checked when present (the builders read them).
_SCORE_FIELDS = (
    "sub_em",
    "sub_em_strict",
    "em",
    "f1",
    "qa_f1",
    "string_match",
    "rouge_1_recall",
    "rouge_2_recall",
    "rouge_l_recall",
    "rouge_l_f",
)
CSV_COLUMNS = [
    "system",
    "column",  # renamed to the table's column name (n_docs, length, ...)
    "label",
    "ours",
    "paper",
    "delta",
    "system_id",
    "paper_row",
    "mean_tokens",
    "n_items",
    "n_dropped",
    "accuracy_official",
]


@dataclass(frozen=True)
class Cell:
    """One (system, column) entry; percentages. `mark` flags a partial average, `extras` are
    scores shown beside ours (e.g. {"F1": 61.2})."""

    ours: float | None
    paper: float | None
    delta: float | None
    n_items: int = 0
    n_dropped: int = 0  # items left out as the official evaluator does (FAILED_MARK)
    accuracy_official: float | None = None
    mean_tokens: float | None = None
    mark: str = ""
    extras: Mapping[str, float | None] = field(default_factory=dict)


# --- loading ---------------------------------------------------------------------------------


def _check_metrics(data: Any, path: Path) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ValueError(
            f"{path}: a metrics record must be a JSON object, got {type(data).__name__}"
        )
    for key, types in _METRIC_FIELDS.items():
        if key not in data:
            raise ValueError(f"{path}: missing key {key!r}")
        _check_type(path, key, data[key], types)
    for key in _SCORE_FIELDS:
        if key in data:
            _check_type(path, key, data[key], _NUMBER)
    if data["length"] < 0 or (data["benchmark"] not in UNLENGTHED and data["length"] == 0):
        raise ValueError(f"{path}: length={data['length']} (0 only for {', '.join(UNLENGTHED)})")
    memory = data.get("mean_memory_tokens")
    if memory is not None:
        _check_type(path, "mean_memory_tokens", memory, _NUMBER)
        if memory < 0:
            raise ValueError(f"{path}: mean_memory_tokens must be >= 0, got {memory}")
    if data["mean_tokens"] is not None and data["mean_tokens"] <= 0:
        raise ValueError(f"{path}: mean_tokens must be positive, got {data['mean_tokens']}")
    if "n_dropped" in data:
        _check_type(path, "n_dropped", data["n_dropped"], (int,))
    if data["n_items"] < 1:  # an empty evaluation set has no accuracy, not 0.0
        raise ValueError(f"{path}: n_items={data['n_items']}: no sample was evaluated")
    for key in ("n_failed", "n_dropped"):
        if key in data and not 0 <= data[key] <= data["n_items"]:
            raise ValueError(f"{path}: {key}={data[key]} not within 0..n_items")
    for key in ("accuracy", "accuracy_official", *_SCORE_FIELDS):
        if data.get(key) is not None and not 0 <= data[key] <= 100:
            raise ValueError(f"{path}: {key}={data[key]} is not a percentage")
    return data


def _check_type(path: Path, key: str, value: Any, types: tuple[type, ...]) -> None:
    if isinstance(value, bool) or not isinstance(value, types):
        raise ValueError(f"{path}: key {key!r} has invalid value {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{path}: key {key!r} is not finite: {value!r}")


def load_metrics(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Read evaluation jobs' metrics files (each a JSON list of records, one per task); each
    record gains `path`. Raises an error naming the file when it is missing, not JSON, not a
    list, or a record lacks a field."""
    records = []
    for raw in paths:
        path = Path(raw)
        data = read_json(path)
        if not isinstance(data, list):
            raise ValueError(
                f"{path}: expected a list of metrics records, got {type(data).__name__}"
            )
        records += [{**_check_metrics(record, path), "path": str(path)} for record in data]
    return records


# --- systems ---------------------------------------------------------------------------------


def system_specs(
    systems: Systems,
) -> dict[str, dict[str, Any]]:
    """{system id: spec} from the report settings' list of {"id", "display", ...} or a mapping.

    Display names must be unique: they are the tables' row labels.
    """
    if isinstance(systems, Mapping):
        specs = {str(sid): dict(spec) for sid, spec in systems.items()}
    else:
        specs = {}
        for i, spec in enumerate(systems):
            if "id" not in spec:
                raise ValueError(f"systems[{i}]: missing 'id' ({dict(spec)})")
            specs[spec["id"]] = dict(spec)
    for sid, spec in specs.items():
        if "display" not in spec:
            raise ValueError(f"system {sid!r}: missing 'display'")
    displays = [spec["display"] for spec in specs.values()]
    if len(set(displays)) != len(displays):
        raise ValueError(f"system display names must be unique: {displays}")
    return specs


def system_kind(system_id: str, spec: Mapping[str, Any]) -> str:
    """The system's `kind` (memrl.config.eval_systems gives every system one)."""
    if not spec.get("kind"):
        raise ValueError(f"system {system_id!r}: no 'kind' in its report settings")
    return str(spec["kind"])


def rag_setting(system_id: str, spec: Mapping[str, Any]) -> tuple[int, str]:
    """(top_k, unit) of a RAG system, from its report settings."""
    if spec.get("top_k") is None or spec.get("unit") is None:
        raise ValueError(f"RAG system {system_id!r}: no top_k/unit in its report settings")
    return int(spec["top_k"]), str(spec["unit"])


def rag_paper_row(model: str, top_k: int, unit: str) -> str:
    """The paper's row name of a RAG setting: Table 10 "RAG + Qwen2.5-14B K=4" (unit "doc"),
    Table 11 "Qwen2.5-14B + RAG C=1024 K=4" (unit "c1024")."""
    if unit == "doc":
        return f"RAG + {model} K={top_k}"
    chunk = re.fullmatch(r"c(\d+)", unit)
    if chunk is None:
        raise ValueError(f"RAG unit must be 'doc' or 'c<tokens>', got {unit!r}")
    return f"{model} + RAG C={chunk[1]} K={top_k}"


def rag_model(paper_row: str) -> str:
    """The base model of a RAG group name: "RAG + Qwen2.5-14B" (Table 10's header) and
    "Qwen2.5-14B + RAG" (Table 11's) -> "Qwen2.5-14B"; a bare model name is returned as is."""
    return re.sub(r"^RAG \+ |\s\+ RAG$", "", paper_row.strip())


def _is_rag_unit(system_id: str, spec: Mapping[str, Any], doc: bool) -> bool:
    """A RAG system over whole documents (doc=True, Table 10) or over chunks (Table 11)."""
    if system_kind(system_id, spec) != "rag":
        return False
    return (rag_setting(system_id, spec)[1] == "doc") == doc


# --- building --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Column:
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
class _Average:
    """The mean of other columns of the same row; `paper` = path of the printed average."""

    key: Any
    label: str
    of: tuple[Any, ...]
    paper: tuple[Any, ...] | None


def index_metrics(
    metrics: Iterable[Mapping[str, Any]],
    systems: Mapping[str, Any],
    in_scope: Callable[[Mapping[str, Any]], bool],
) -> dict[Key, Mapping[str, Any]]:
    """Records in scope by (benchmark, task, system, length); an unconfigured system or two
    records of one key are errors naming the file."""
    found: dict[Key, Mapping[str, Any]] = {}
    for record in metrics:
        if not in_scope(record):
            continue
        where = record.get("path", f"metrics of {record['system']!r}")
        if record["system"] not in systems:
            raise ValueError(
                f"{where}: system {record['system']!r} is not configured "
                f"(configured: {', '.join(systems)})"
            )
        key = (record["benchmark"], record["task"], record["system"], int(record["length"]))
        if key in found:
            other = found[key].get("path", "another record")
            raise ValueError(f"{where}: duplicate metrics for {key} (also in {other})")
        found[key] = record
    return found


def _lookup(cells: Any, path: Sequence[Any]) -> float | None:
    """A paper value by path (None where the paper has none); YAML may key a number as int
    or str."""
    for key in path:
        if not isinstance(cells, Mapping):
            return None
        for candidate in (key, str(key), int(key) if str(key).isdigit() else None):
            if candidate is not None and candidate in cells:
                cells = cells[candidate]
                break
        else:
            return None
    if isinstance(cells, bool) or not isinstance(cells, int | float):
        return None
    return float(cells)


def _resolve_paper_rows(
    selected: Mapping[str, Mapping[str, Any]],
    paper_rows: Mapping[str, Any],
    table: str,
    strict: bool,
) -> tuple[dict[str, str | None], list[str]]:
    """Each system's row of this table, and notes. A RAG system's `paper_row` may name a whole
    row, or only the paper's RAG group ("RAG + Qwen2.5-14B", "Qwen2.5-14B + RAG" or
    "Qwen2.5-14B"): its row is then derived from its K (and C), and a setting the paper did not
    run gets no row (noted). Other unknown rows are errors when `strict`."""
    rows: dict[str, str | None] = {}
    notes = []
    for sid, spec in selected.items():
        row = spec.get("paper_row")
        if row is None or row in paper_rows:
            rows[sid] = row
            continue
        if system_kind(sid, spec) == "rag":
            model, (top_k, unit) = rag_model(row), rag_setting(sid, spec)
            derived = rag_paper_row(model, top_k, unit)
            group = f"RAG + {model} " if unit == "doc" else f"{model} + RAG "
            if derived in paper_rows:
                rows[sid] = derived
                continue
            if any(str(name).startswith(group) for name in paper_rows):
                rows[sid] = None
                notes.append(f"{spec['display']}: the paper did not run {derived!r}.")
                continue
        if strict:
            raise ValueError(
                f"system {sid!r}: paper_row {row!r} is not in the paper's {table} "
                f"(rows: {', '.join(map(str, paper_rows))})"
            )
        rows[sid] = None
    return rows, notes


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _column_cell(
    column: _Column, record: Mapping[str, Any] | None, paper: float | None, table: str
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
    if column.metric == "accuracy" and dropped:
        # the official figure (empty outputs dropped) beside the paper's; ours over all beside
        extras = {**extras, OVER_ALL: ours}
        ours = official_accuracy(record)
    return Cell(
        ours=ours,
        paper=paper,
        delta=None if paper is None else ours - paper,
        n_items=int(record["n_items"]),
        n_dropped=dropped,
        accuracy_official=record["accuracy_official"] if column.metric == "accuracy" else None,
        mean_tokens=None if record["mean_tokens"] is None else float(record["mean_tokens"]),
        extras=extras,
    )


def _average_cell(
    average: _Average,
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
    cell = Cell(
        ours=ours,
        paper=paper,
        delta=None if paper is None else ours - paper,
        n_items=sum(parts[key].n_items for key in present),
        n_dropped=sum(parts[key].n_dropped for key in present),
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


def _assemble(
    found: Mapping[Key, Mapping[str, Any]],
    selected: Mapping[str, Mapping[str, Any]],
    rows: Mapping[str, str | None],
    paper_rows: Mapping[str, Any],
    columns: Sequence[_Column],
    averages: Sequence[_Average],
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
            paper = _lookup(paper_cells, column.paper) if column.paper is not None else None
            cells[column.key] = _column_cell(column, record, paper, table)
            if record is not None and id(record) not in noted:
                noted.add(id(record))
                if n_dropped(record):
                    failure_notes.append(_failure_note(spec["display"], column, record))
                if record.get("n_lenient_sub_em"):
                    scoring_notes.append(_lenient_note(spec["display"], column, record))
        for average in averages:
            printed = _lookup(paper_cells, average.paper) if average.paper is not None else None
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
        "system_ids": {spec["display"]: sid for sid, spec in selected.items()},
        "paper_rows": {selected[sid]["display"]: row for sid, row in rows.items()},
        "notes": [*notes, *paper_notes],
        "partial_notes": partial_notes,
        "failure_notes": failure_notes,
        "scoring_notes": scoring_notes,
    }
    return frame


def _display_order(columns: Sequence[_Column], averages: Sequence[_Average]) -> list[Any]:
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
    row: str, average: _Average, paper_cells: Any, by_key: Mapping[Any, _Column]
) -> str | None:
    """A note when the paper's printed average is not the mean of its printed columns."""
    if average.paper is None:
        return None
    printed = _lookup(paper_cells, average.paper)
    parts = [_lookup(paper_cells, by_key[key].paper or ()) for key in average.of]
    if printed is None or not parts or any(v is None for v in parts):
        return None
    recomputed = sum(float(v) for v in parts if v is not None) / len(parts)
    if abs(recomputed - printed) <= 0.051:  # printed to 1 or 2 decimals
        return None
    return (
        f"Paper row {row!r}: {average.label} is printed as {printed:.2f}, but the mean of its "
        f"{len(parts)} columns is {recomputed:.2f}; the paper column shows the mean."
    )


def official_accuracy(record: Mapping[str, Any]) -> float:
    """The accuracy the official evaluator reports: empty outputs left out when there are any."""
    official = record["accuracy_official"]
    return float(official if n_dropped(record) and official is not None else record["accuracy"])


def n_dropped(record: Mapping[str, Any]) -> int:
    """Items the official evaluator leaves out: failed requests and empty outputs (a metrics
    file written before `n_dropped` existed counted the failed ones only)."""
    return int(record.get("n_dropped", record["n_failed"]))


def _failure_note(display: str, column: _Column, record: Mapping[str, Any]) -> str:
    official = record["accuracy_official"]
    official_text = DASH if official is None else f"{official:.2f}"
    return (
        f"{_cell_name(display, column)}: {n_dropped(record)}/{record['n_items']} outputs empty "
        f"({record['n_failed']} failed requests), dropped as the official evaluator does: "
        f"{official_text} (shown beside the paper's); {record['accuracy']:.2f} counting them "
        f"wrong ({OVER_ALL!r})"
    )


def _lenient_note(display: str, column: _Column, record: Mapping[str, Any]) -> str:
    return (
        f"{_cell_name(display, column)}: {record['n_lenient_sub_em']}/{record['n_items']} "
        "answers normalise to nothing (e.g. '???') and score sub_em 1, as in the official "
        f"scorer; strict sub_em {record['sub_em_strict']:.2f}"
    )


def _cell_name(display: str, column: _Column) -> str:
    """'<system> @ <column>' in a footnote (a LongBench column by its dataset's label)."""
    where = column.label if column.benchmark != "longbench" else TASK_LABELS.get(column.task)
    return f"{display} @ {where or column.task}"


def _select(
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


def _length_columns(
    found: Mapping[Key, Mapping[str, Any]],
    benchmark: str,
    task: str,
    labels: Callable[[int, list[float]], str],
) -> list[_Column]:
    lengths = sorted({key[3] for key in found if key[0] == benchmark and key[1] == task})
    columns = []
    for length in lengths:
        tokens = [
            float(rec["mean_tokens"])
            for key, rec in found.items()
            if key[3] == length and key[1] == task and rec["mean_tokens"] is not None
        ]
        columns.append(
            _Column(length, labels(length, tokens), benchmark, task, length, "accuracy", (length,))
        )
    return columns


def _hqa_label(length_labels: Mapping[int, str]) -> Callable[[int, list[float]], str]:
    """The paper's label for a document count, else our measured mean length, else 'N docs'."""
    named = {int(n): str(label) for n, label in length_labels.items()}

    def label(n_docs: int, tokens: list[float]) -> str:
        if n_docs in named:
            return named[n_docs]
        return format_tokens(sum(tokens) / len(tokens)) if tokens else f"{n_docs} docs"

    return label


def _ruler_hqa_length_table(
    metrics: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper: Mapping[str, Any],
    length_labels: Mapping[int, str],
    include: Callable[[str, Mapping[str, Any]], bool],
    table: str,
    benchmark: str = BENCHMARK,
    notes: Sequence[str] = (),
) -> pd.DataFrame:
    selected, found = _select(
        metrics,
        systems,
        include,
        lambda r: r["benchmark"] == benchmark and r["task"] == RULER_HQA_TASK,
        benchmark,
    )
    rows, row_notes = _resolve_paper_rows(selected, paper, table, strict=True)
    columns = _length_columns(found, benchmark, RULER_HQA_TASK, _hqa_label(length_labels))
    frame = _assemble(
        found,
        selected,
        rows,
        paper,
        columns,
        (),
        column_name="n_docs",
        table=table,
        notes=[*notes, *row_notes],
    )
    frame.attrs["length_labels"] = {int(n): str(label) for n, label in length_labels.items()}
    return frame


def build_table1(
    metrics: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper: Mapping[str, Mapping[Any, Any]],
    length_labels: Mapping[int, str],
    benchmark: str = BENCHMARK,
) -> pd.DataFrame:
    """Table 1: RULER-HQA accuracy; columns = n_docs (the records' `length`) ascending.

    `systems`: the report settings' list of {"id", "display", "paper_row", "kind", ...} (or a
    mapping id -> spec); RAG systems are left out (Table 10). `paper` maps paper row name ->
    {n_docs: accuracy or None}. Metrics of other benchmarks are ignored; metrics of an
    unconfigured system are an error, and so is a paper_row that Table 1 does not have.
    """
    return _ruler_hqa_length_table(
        metrics,
        systems,
        paper,
        length_labels,
        include=lambda sid, spec: system_kind(sid, spec) not in ("rag", *MEMALPHA_ONLY_KINDS),
        table="Table 1",
        benchmark=benchmark,
    )


def build_rag_ruler_hqa_table(
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper_rows: Mapping[str, Mapping[Any, Any]],
    length_labels: Mapping[int, str],
) -> pd.DataFrame:
    """Table 10: RULER-HQA accuracy of the memory agents and of RAG over whole documents.

    Rows: memagent systems and RAG systems with unit "doc", in config order. A RAG system's
    `paper_row` is a row of Table 10, or its group ("RAG + Qwen2.5-14B" or "Qwen2.5-14B"), from
    which the row follows with the system's K: "RAG + Qwen2.5-14B K=4".
    """
    return _ruler_hqa_length_table(
        records,
        systems,
        paper_rows,
        length_labels,
        include=lambda sid, spec: (
            system_kind(sid, spec) == "memagent" or _is_rag_unit(sid, spec, doc=True)
        ),
        table="Table 10",
        notes=_retriever_notes(systems),
    )


def _retriever_notes(
    systems: Systems,
) -> list[str]:
    specs = system_specs(systems)
    return [RETRIEVER_NOTE] if any(system_kind(s, p) == "rag" for s, p in specs.items()) else []


def _qa_columns() -> tuple[list[_Column], list[_Average]]:
    """LongBench-QA: our accuracy (sub_em) per dataset with qa_f1 beside it, and their AVG."""
    columns = [
        _Column(
            task,
            TASK_LABELS[task],
            "longbench",
            task,
            0,
            "accuracy",
            (task,),
            extras=(QA_F1,),
        )
        for task in LONGBENCH_QA
    ]
    return columns, [_Average(AVG, "AVG", LONGBENCH_QA, (AVG,))]


def _longbench_table(
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper_rows: Mapping[str, Any],
    columns: Sequence[_Column],
    averages: Sequence[_Average],
    include: Callable[[str, Mapping[str, Any]], bool],
    table: str,
    notes: Sequence[str],
    strict: bool = True,
) -> pd.DataFrame:
    tasks = {column.task for column in columns}
    selected, found = _select(
        records,
        systems,
        include,
        lambda r: r["benchmark"] == "longbench" and r["task"] in tasks,
        "longbench",
    )
    rows, row_notes = _resolve_paper_rows(selected, paper_rows, table, strict=strict)
    return _assemble(
        found,
        selected,
        rows,
        paper_rows,
        columns,
        averages,
        column_name="column",
        table=table,
        notes=[*notes, *row_notes],
    )


def build_longbench_qa_table(
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper_rows: Mapping[str, Mapping[str, Any]],
) -> pd.DataFrame:
    """Table 3: LongBench-QA, the paper's score (our `accuracy` = sub_em) with qa_f1 beside.

    Rows: memagent and long-context systems. Columns: 2wikimqa, hotpotqa, musique, narrativeqa,
    qasper (paper headers 2Wiki ... Qasper) and "avg", the mean of the five.
    """
    columns, averages = _qa_columns()
    return _longbench_table(
        records,
        systems,
        paper_rows,
        columns,
        averages,
        include=lambda sid, spec: system_kind(sid, spec) != "rag",
        table="Table 3",
        notes=[
            "The paper's LongBench-QA scores are k/200 (a binary score per item); ours is sub_em "
            "of the answer after 'the answer is'. F1 = LongBench's own qa_f1, ours only."
        ],
    )


def build_rag_longbench_table(
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper_rows: Mapping[str, Mapping[str, Any]],
) -> pd.DataFrame:
    """Table 11: LongBench-QA of the memory agents and of RAG over fixed-size chunks.

    Rows: memagent systems and RAG systems with a chunk unit ("c1024", ...). A RAG system's
    `paper_row` is a row of Table 11, or its group ("RAG + Qwen2.5-14B", "Qwen2.5-14B + RAG" or
    "Qwen2.5-14B"), from which the row follows with its C and K: "Qwen2.5-14B + RAG C=1024 K=4".
    """
    columns, averages = _qa_columns()
    return _longbench_table(
        records,
        systems,
        paper_rows,
        columns,
        averages,
        include=lambda sid, spec: (
            system_kind(sid, spec) == "memagent" or _is_rag_unit(sid, spec, doc=False)
        ),
        table="Table 11",
        notes=[*_retriever_notes(systems), "F1 = LongBench's own qa_f1, ours only."],
    )


def build_longbench_sum_table(
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper_rows: Mapping[str, Mapping[str, Any]],
) -> pd.DataFrame:
    """Table 2: LongBench-SUM ROUGE-1/2/L recall per dataset and their mean (AVG).

    Rows: memagent and long-context systems. Columns "gov_report.rouge_1", ...,
    "gov_report.avg", "qmsum.rouge_1", ... (headers "GovReport R-1", ...).
    """
    columns = [
        _Column(
            f"{task}.{key}",
            f"{TASK_LABELS[task]} {header}",
            "longbench",
            task,
            0,
            field_name,
            (task, key),
        )
        for task in LONGBENCH_SUM
        for key, field_name, header in ROUGE_RECALLS
    ]
    averages = [
        _Average(
            f"{task}.{AVG}",
            f"{TASK_LABELS[task]} AVG",
            tuple(f"{task}.{key}" for key, _, _ in ROUGE_RECALLS),
            (task, AVG),
        )
        for task in LONGBENCH_SUM
    ]
    return _longbench_table(
        records,
        systems,
        paper_rows,
        columns,
        averages,
        include=lambda sid, spec: system_kind(sid, spec) not in ("rag", "mem0"),  # QA only
        table="Table 2",
        notes=["ROUGE recall (pltrdy rouge 1.0.1), failed requests scored 0."],
    )


def token_label(tokens: int) -> str:
    """RULER's length names: 8192 -> '8K', 524288 -> '512K', 1048576 -> '1M'."""
    if tokens >= 1 << 20 and tokens % (1 << 20) == 0:
        return f"{tokens >> 20}M"
    if tokens % 1024 == 0:
        return f"{tokens >> 10}K"
    return format_tokens(tokens)


def niah_paper_rows(paper: Mapping[str, Any]) -> dict[str, Mapping[Any, Any]]:
    """{Table 1 row name: Table 8 row} for the rows named in `niah.default_rows` (the paper's
    default m1024-c5000 configuration): the only NIAH numbers the paper prints."""
    ablation = paper["memory_ablation"]["niah"]
    return {row: ablation[printed] for row, printed in paper["niah"]["default_rows"].items()}


def build_niah_table(
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper_rows: Mapping[str, Mapping[Any, Any]],
    tasks: Sequence[str] = NIAH_TASKS,
    length_labels: Mapping[int, str] | None = None,
) -> pd.DataFrame:
    """NIAH: per RULER length, the mean accuracy over `tasks` (Table 8's "average of level 1-3").

    Rows: memagent and long-context systems. `paper_rows` = `niah_paper_rows(paper)`; systems
    whose row Table 8 lacks (the baselines: Figure 5 only) get no paper value.
    """
    labels = {int(k): str(v) for k, v in (length_labels or {}).items()}
    selected, found = _select(
        records,
        systems,
        lambda sid, spec: system_kind(sid, spec) != "rag",
        lambda r: r["benchmark"] == "ruler" and r["task"] in tasks,
        "ruler",
    )
    rows, row_notes = _resolve_paper_rows(selected, paper_rows, "Table 8", strict=False)
    lengths = sorted({key[3] for key in found})
    columns = [
        _Column(
            (task, length),
            f"{task} @ {labels.get(length, token_label(length))}",
            "ruler",
            task,
            length,
            "accuracy",
            None,  # the paper prints only the mean
            hidden=True,
        )
        for length in lengths
        for task in tasks
    ]
    averages = [
        _Average(
            length,
            labels.get(length, token_label(length)),
            tuple((task, length) for task in tasks),
            (length,),
        )
        for length in lengths
    ]
    return _assemble(
        found,
        selected,
        rows,
        paper_rows,
        columns,
        averages,
        column_name="length",
        table="NIAH",
        notes=[f"Mean accuracy over {', '.join(tasks)} (the paper's Table 8).", *row_notes],
    )


# --- Tables 8 and 9: memory and chunk sizes ------------------------------------------------------


def memory_ablation_rows(paper: Mapping[str, Any], part: str) -> dict[str, Mapping[Any, Any]]:
    """Table 8 (`niah`) or 9 (`longbench_qa`) rows by printed name, and Table 1's names of the
    default configuration (`niah.default_rows`: RL-MEMAGENT-14B is 14B-m1024-c5000)."""
    printed = paper["memory_ablation"][part]
    aliases = paper["niah"]["default_rows"]
    return {**printed, **{row: printed[name] for row, name in aliases.items()}}


def _unprinted_notes(systems: Systems, paper_rows: Mapping[str, Any], table: str) -> list[str]:
    return [
        f"{spec['display']}: the paper prints no row {spec['paper_row']!r} in {table}."
        for spec in system_specs(systems).values()
        if spec.get("paper_row") is not None and spec["paper_row"] not in paper_rows
    ]


def build_memory_ablation_niah_table(
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper: Mapping[str, Any],
    length_labels: Mapping[int, str] | None = None,
) -> pd.DataFrame:
    """Table 8: the NIAH mean (niah_single_1/2/3) per length of each memory/chunk setting."""
    rows = memory_ablation_rows(paper, "niah")
    table = build_niah_table(records, systems, rows, tuple(paper["niah"]["tasks"]), length_labels)
    table.attrs["notes"] += _unprinted_notes(systems, rows, "Table 8")
    return table


def build_memory_ablation_qa_table(
    records: Iterable[Mapping[str, Any]], systems: Systems, paper: Mapping[str, Any]
) -> pd.DataFrame:
    """Table 9: LongBench-QA (Table 3's columns) of each memory/chunk setting."""
    rows = memory_ablation_rows(paper, "longbench_qa")
    columns, averages = _qa_columns()
    return _longbench_table(
        records,
        systems,
        rows,
        columns,
        averages,
        include=lambda sid, spec: system_kind(sid, spec) == "memagent",
        table="Table 9",
        notes=[
            "Scores as Table 3: ours is sub_em after 'the answer is', the paper's k/200.",
            *_unprinted_notes(systems, rows, "Table 9"),
        ],
        strict=False,
    )


# --- Table 4: the context-distribution probe -----------------------------------------------------

PROBE_AVG_NOTE = (
    "The paper's column headed AVG is its 3,200-document (448K) column: both random rows equal "
    "Table 1's 448K cells (14B 79.69, 7B 76.56) and every difference lies on the k/128 grid; it "
    "is compared as such. AVG here: the mean of our columns, which the paper does not print."
)


def build_probe_table(
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper: Mapping[str, Any],
    probe: Mapping[str, Any],
    length_labels: Mapping[int, str] | None = None,
) -> pd.DataFrame:
    """Table 4: per probe system (`probe.systems`: id -> the paper's row group), its RULER-HQA
    accuracy with the random placement, then per placement (`probe.placements`, [A, B] percent)
    its probe accuracy minus the random one at the same length, as the paper prints them."""
    from memrl.config import PROBE_BENCHMARK, probe_task

    specs = system_specs(systems)
    found = {
        (r["benchmark"], r["task"], r["system"], int(r["length"])): r
        for r in records
        if r["system"] in probe["systems"]
    }
    lengths = sorted({key[3] for key in found if key[0] == PROBE_BENCHMARK})
    labels = {int(n): str(label) for n, label in (length_labels or {}).items()}
    printed = paper["probe"]["rows"]
    rows: dict[str, list[Cell]] = {}
    system_ids, paper_rows, failures = {}, {}, []
    for sid, group in probe["systems"].items():
        display = specs[sid]["display"] if sid in specs else sid
        random = {n: found.get(("ruler_hqa", RULER_HQA_TASK, sid, n)) for n in lengths}
        settings = [("random", None, "random")]
        settings += [(f"{a}% {b}%", probe_task((a, b)), f"{a}-{b}") for a, b in probe["placements"]]
        for label, task, key in settings:
            row_label = f"{display}: {label}"
            paper_cells = printed.get(group, {}).get(key, {})
            cells = []
            for n in lengths:
                base = random[n]
                record = base if task is None else found.get((PROBE_BENCHMARK, task, sid, n))
                cells.append(_probe_cell(record, base, paper_cells, n, task is not None))
                if record is not None and n_dropped(record):
                    failures.append(
                        f"{row_label} @ {labels.get(n, n)}: {n_dropped(record)} of "
                        f"{record['n_items']} outputs empty, dropped as the official evaluator does"
                    )
            present = [c.ours for c in cells if c.ours is not None]
            mark = PARTIAL_MARK if 0 < len(present) < len(cells) else ""
            ours = sum(present) / len(present) if present else None
            cells.append(Cell(ours, None, None, mark=mark))
            rows[row_label] = cells
            system_ids[row_label], paper_rows[row_label] = sid, f"{group} {key}"
    columns = [*lengths, AVG]
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=columns, dtype=object)
    frame.index.name, frame.columns.name = "system", "n_docs"
    frame.attrs = {
        "column_labels": {**{n: labels.get(n, f"{n} docs") for n in lengths}, AVG: "AVG"},
        "system_ids": system_ids,
        "paper_rows": paper_rows,
        "notes": [
            "random: accuracy (%) of the main experiment's placement (the RULER-HQA evaluation); "
            "A% B%: the two key-information groups at those depths, accuracy minus random.",
            PROBE_AVG_NOTE,
        ],
        "partial_notes": [],
        "failure_notes": failures,
    }
    return frame


def _probe_cell(
    record: Mapping[str, Any] | None,
    random: Mapping[str, Any] | None,
    paper_cells: Mapping[Any, Any],
    n_docs: int,
    difference: bool,
) -> Cell:
    """One length of a probe row: the accuracy, or (`difference`) its difference from random."""
    paper = _lookup(paper_cells, (n_docs,))
    if record is None or (difference and random is None):
        return Cell(None, paper, None)
    ours = official_accuracy(record) - (official_accuracy(random) if difference else 0.0)
    return Cell(
        ours,
        paper,
        None if paper is None else ours - paper,
        n_items=int(record["n_items"]),
        n_dropped=n_dropped(record),
        mean_tokens=record.get("mean_tokens"),
    )


# --- Mem-α (seed 004): Tables 1-3 -----------------------------------------------------------

CONTAMINATED_MARK = "‡"
MEM_LABEL = "Mem."
MEMALPHA_NOTES = (
    "Perf. = the source's metric x 100 (per question, mean per instance, then per source); "
    "Mem. = memory in thousands of the QA model's tokens. For Long-Context and RAG, Mem. is the "
    "context the model could read (the paper's convention), not what was retrieved.",
)


CHECKPOINT_WORDS = {"last": "the last checkpoint", "best": "the best checkpoint by validation"}
PAPER_RECIPE_NOTE = (
    "The paper's trained rows: 205 steps without a KL term, the best checkpoint by validation "
    "(its §4.1); its official script trains 85 steps with a KL loss of 0.001."
)


def training_recipe_notes(selected: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Which recipe (memalpha.training.recipe) trained the table's Mem-α runs of ours, beside
    the paper's; none without such a run."""
    recipes = sorted(
        {
            (r["recipe"], r["steps"], r["kl_coef"], r["checkpoint"])
            for spec in selected.values()
            if (r := spec.get("training")) is not None
        }
    )
    if not recipes:
        return []
    described = "; ".join(
        f"{name!r}: {steps} step{'' if steps == 1 else 's'}, "
        + (f"a KL loss of {kl:g}" if kl else "no KL term")
        + f", {CHECKPOINT_WORDS[checkpoint]}"
        for name, steps, kl, checkpoint in recipes
    )
    plural = "s" if len(recipes) > 1 else ""
    return [f"Our Mem-α runs were trained with the recipe{plural} {described}.", PAPER_RECIPE_NOTE]


def memalpha_paper_rows(spec: Mapping[str, Any]) -> dict[str, dict[str, dict[str, float]]]:
    """{row: {source: {"perf": %, "mem": K tokens}, "avg": {...}}} from a table of
    config/paper/memalpha.yaml (scores printed 0-1, shown x100)."""
    columns = list(spec["columns"])
    rows: dict[str, dict[str, dict[str, float]]] = {}
    for name, row in spec["rows"].items():
        for key in ("perf", "mem"):
            if len(row[key]) != len(columns):
                raise ValueError(
                    f"paper row {name!r}: {len(row[key])} {key} values for {len(columns)} columns"
                )
        cells = {
            source: {"perf": 100 * float(perf), "mem": float(mem)}
            for source, perf, mem in zip(columns, row["perf"], row["mem"], strict=True)
        }
        cells[AVG] = {"perf": 100 * float(row["avg"]["perf"]), "mem": float(row["avg"]["mem"])}
        rows[str(name)] = cells
    return rows


def ablation_rows(
    selected: Mapping[str, Mapping[str, Any]], spec: Mapping[str, Any]
) -> dict[str, str | None]:
    """Each ablation system's row: the paper row printed for its run's (β, γ)."""
    by_weights = {
        (float(row["beta"]), float(row["gamma"])): str(name) for name, row in spec["rows"].items()
    }
    return {
        sid: by_weights.get(tuple(float(w) for w in sys["reward_weights"]))
        for sid, sys in selected.items()
    }


def _memalpha_rows(
    selected: Mapping[str, Mapping[str, Any]],
    paper: Mapping[str, Any],
    table_rows: Mapping[str, Any],
) -> tuple[dict[str, str | None], list[str]]:
    """Each system's row of this table: its paper_row, through the aliases that name
    MemAgent-paper rows here. A memalpha or MEM1 system's row must be a row of some Mem-α table
    (a typo otherwise); others (MemAgent-paper rows) may have none here."""
    aliases = paper.get("aliases", {})
    known = {
        str(row)
        for key in MEMALPHA_SCORE_TABLES
        for row in paper[PAPER_TABLES[key].paper_key]["rows"]
    }
    rows: dict[str, str | None] = {}
    notes = []
    for sid, spec in selected.items():
        row = spec.get("paper_row")
        row = aliases.get(row, row)
        if row is not None and row not in known and system_kind(sid, spec) in MEMALPHA_ONLY_KINDS:
            raise ValueError(
                f"system {sid!r}: paper_row {row!r} is in no Mem-α table "
                f"(rows: {', '.join(sorted(known))})"
            )
        rows[sid] = row if row in table_rows else None
        if spec.get("paper_row") in aliases:
            notes.append(f"{spec['display']} is the paper's {row!r} row.")
    return rows, notes


def build_memalpha_table(
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper: Mapping[str, Any],
    name: str,
) -> pd.DataFrame:
    """Mem-α's Table 1 (validation), 2 (MemoryAgentBench), 3 (memalpha systems only) or the
    (β, γ) ablation 4 / 9 (systems of our Mem-α runs, a row per reward weights): Perf. and Mem.
    per data source, per-category (AR/TTL/LRU) and overall averages. Columns of sources whose
    test questions leaked into training are marked (‡). An ablation system without a paper row
    of its own is left out of Tables 1-3."""
    spec = paper[PAPER_TABLES[name].paper_key]
    benchmark, columns = spec["benchmark"], list(spec["columns"])
    info = paper["sources"]
    ablation = name in ABLATION_TABLES

    def wanted(sid: str, sys: Mapping[str, Any]) -> bool:
        if ablation:
            return "reward_weights" in sys
        if name == "memalpha_table3" and system_kind(sid, sys) != "memalpha":
            return False
        return "reward_weights" not in sys or sys.get("paper_row") is not None

    selected, found = _select(
        records,
        systems,
        wanted,
        lambda r: r["benchmark"] == benchmark and r["task"] in columns,
        benchmark,
    )
    paper_rows = memalpha_paper_rows(spec)
    if ablation:
        rows, row_notes = ablation_rows(selected, spec), []
    else:
        rows, row_notes = _memalpha_rows(selected, paper, paper_rows)
    contaminated = set(paper.get("contaminated", {}).get(benchmark, ()))
    labels = {
        s: info[s]["label"] + (CONTAMINATED_MARK if s in contaminated else "") for s in columns
    }
    table_columns = [
        _Column(f"{s}.perf", labels[s], benchmark, s, 0, "accuracy", (s, "perf")) for s in columns
    ] + [
        _Column(
            f"{s}.mem",
            f"{labels[s]} {MEM_LABEL}",
            benchmark,
            s,
            0,
            "mean_memory_tokens",
            (s, "mem"),
            scale=1e-3,
        )
        for s in columns
    ]
    categories = list(dict.fromkeys(info[source]["category"] for source in columns))
    averages = [
        _Average(
            category,
            f"{category} avg.",
            tuple(f"{s}.perf" for s in columns if info[s]["category"] == category),
            None,
        )
        for category in categories
    ]
    averages += [
        _Average(AVG, "Avg.", tuple(f"{s}.perf" for s in columns), (AVG, "perf")),
        _Average(
            f"{AVG}.mem",
            f"Avg. {MEM_LABEL}",
            tuple(f"{s}.mem" for s in columns),
            (AVG, "mem"),
        ),
    ]
    notes = list(MEMALPHA_NOTES)
    if contaminated:
        names = ", ".join(info[s]["label"] for s in columns if s in contaminated)
        notes.append(
            f"{CONTAMINATED_MARK} {names}: Mem-α's TTL training rows reuse these test questions "
            "(memalpha_official.md §6), so trained systems' scores there are inflated."
        )
    for row, printed in spec.get("printed_names", {}).items():
        notes.append(f"The paper prints the row {row!r} as {printed!r} in this table.")
    notes += training_recipe_notes(selected)
    return _assemble(
        found,
        selected,
        rows,
        paper_rows,
        table_columns,
        averages,
        column_name="column",
        table=spec["caption"].split(":")[0],
        notes=[*notes, *row_notes],
    )


# --- beyond the papers: every system on both suites ------------------------------------------

MAB = "mab"


def build_suites_table(
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper: Mapping[str, Any],
    length_labels: Mapping[int, str],
) -> pd.DataFrame:
    """Every system of both papers that ran either suite: RULER-HQA accuracy at each length
    (MemAgent's suite) and the MemoryAgentBench average score and memory over Mem-α Table 2's
    sources (`paper`: Mem-α's numbers). Ours only: each paper's own tables hold its numbers."""
    mab_sources = tuple(paper["table2"]["columns"])
    specs = system_specs(systems)
    selected = {
        sid: spec
        for sid, spec in specs.items()
        if {BENCHMARK, MAB} & set(spec.get("benchmarks", (BENCHMARK, MAB)))
        and (system_kind(sid, spec) != "rag" or _is_rag_unit(sid, spec, doc=True))
    }
    found = index_metrics(
        records,
        specs,
        lambda r: (
            (r["benchmark"] == BENCHMARK and r["task"] == RULER_HQA_TASK)
            or (r["benchmark"] == MAB and r["task"] in mab_sources)
        ),
    )
    found = {key: record for key, record in found.items() if key[2] in selected}
    columns = _length_columns(found, BENCHMARK, RULER_HQA_TASK, _hqa_label(length_labels))
    columns = [replace(c, label=f"RULER-HQA {c.label}", paper=None) for c in columns]
    for metric, suffix, scale in (("accuracy", "perf", 1.0), ("mean_memory_tokens", "mem", 1e-3)):
        columns += [
            _Column(f"{MAB}.{s}.{suffix}", s, MAB, s, 0, metric, None, hidden=True, scale=scale)
            for s in mab_sources
        ]
    averages = [
        _Average(f"{MAB}.{suffix}", label, tuple(f"{MAB}.{s}.{suffix}" for s in mab_sources), None)
        for suffix, label in (("perf", "MemoryAgentBench Avg."), ("mem", f"MAB {MEM_LABEL} (K)"))
    ]
    frame = _assemble(
        found,
        selected,
        dict.fromkeys(selected),
        {},  # ours only
        columns,
        averages,
        column_name="column",
        table="Both suites",
        notes=[
            "RULER-HQA: accuracy (%) at each length. MemoryAgentBench: the mean score (%) over "
            "its nine sources and the mean memory (thousand QA-model tokens; for long context "
            "and RAG, the context read).",
        ],
    )
    frame.attrs["legend"] = (
        f"Cells: ours; each paper's numbers are in its own tables. {DASH} = not run here."
    )
    return frame


# --- Mem-α's dataset statistics (Tables 6-8) -----------------------------------------------------

STAT_FIELDS = {  # record key -> the paper's header
    "instances": "Ins.",
    "chunks_per_instance": "Ch/Ins",
    "tokens_per_chunk": "Tok/Ch",
    "questions_per_instance": "Q/Ins",
}
STATS_LEGEND = (
    "Cells: ours (paper value, ours − paper), measured on the downloaded split with the QA "
    f"model's tokenizer (Qwen3-32B at paper scale). {DASH} = not in the data / not in the paper."
)
TOTAL = "Total"


def load_stats(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """The dataset-stats records of several files (lists of {split, task, <STAT_FIELDS>})."""
    records = []
    for path in paths:
        data = read_json(Path(path))
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a list of dataset-stats records")
        for n, record in enumerate(data):
            if not isinstance(record, dict):
                raise ValueError(f"{path}: record {n} is not an object")
            missing = {"split", "task", *STAT_FIELDS} - set(record)
            if missing:
                raise ValueError(f"{path}: record {n} lacks {', '.join(sorted(missing))}")
            records.append(record)
    return records


def build_memalpha_stats_table(
    records: Iterable[Mapping[str, Any]], paper: Mapping[str, Any], name: str
) -> pd.DataFrame:
    """Mem-α's Table 6, 7 or 8: per data source, the statistics of each split the table shows
    (its paper spec's `splits`), ours beside the printed ones, and the instances in total (the
    paper's printed total where it gives one)."""
    spec = paper[PAPER_TABLES[name].paper_key]
    splits = spec["splits"]
    found = {(r["split"], r["task"]): r for r in records if r["split"] in splits}
    printed_sources = [source for part in splits.values() for source in part["stats"]]
    sources = list(dict.fromkeys(printed_sources + [task for _, task in found]))
    keys = [(split, stat) for split in splits for stat in STAT_FIELDS]
    data: dict[str, list[Cell]] = {f"{split}.{stat}": [] for split, stat in keys}
    for source in sources:
        for split, stat in keys:
            record = found.get((split, source))
            printed = splits[split]["stats"].get(source)
            ours = None if record is None else float(record[stat])
            theirs = None if printed is None else float(printed[list(STAT_FIELDS).index(stat)])
            n = 0 if record is None else record["instances"]
            data[f"{split}.{stat}"].append(_stat_cell(ours, theirs, n))
    for split, stat in keys:  # the total row: instances only
        ours = theirs = None
        if stat == "instances":
            counts = [r["instances"] for (s, _), r in found.items() if s == split]
            printed = splits[split]["stats"].values()
            ours = float(sum(counts)) if counts else None
            theirs = float(splits[split].get("total", sum(v[0] for v in printed)))
        data[f"{split}.{stat}"].append(_stat_cell(ours, theirs, int(ours or 0)))
    labels = [paper["sources"].get(s, {}).get("label", s) for s in sources] + [TOTAL]
    frame = pd.DataFrame(data, index=pd.Index(labels, name="source"), dtype=object)
    frame.columns.name = "column"
    ids = dict(zip(labels, [*sources, TOTAL], strict=True))
    frame.attrs = {
        "column_labels": {
            f"{split}.{stat}": f"{splits[split]['label']} {STAT_FIELDS[stat]}".strip()
            for split, stat in keys
        },
        "system_ids": ids,
        "paper_rows": ids,
        "notes": list(spec.get("notes", [])),
        "legend": STATS_LEGEND,
    }
    return frame


def _stat_cell(ours: float | None, paper: float | None, n_items: int) -> Cell:
    delta = None if ours is None or paper is None else ours - paper
    return Cell(ours, paper, delta, n_items=n_items)


# --- Mem-α's case study (Table 5): final memories side by side -------------------------------

MEMORY_STORES = ("core", "semantic", "episodic")
TRACE_ITEMS = 8  # items per store shown in Markdown/LaTeX (the CSV keeps every item)
TRACE_CHARS = 300  # characters per item shown there
EMPTY = "∅"


def load_memories(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Memorize jobs' records (JSONL, one per instance, each naming its system and source)."""
    from memrl.data.io import read_jsonl

    records = []
    for path in paths:
        for n, record in enumerate(read_jsonl(Path(path))):
            missing = {"system", "task", "index", "memory", "failed"} - set(record)
            if missing:
                raise ValueError(f"{path}: line {n + 1} lacks {', '.join(sorted(missing))}")
            records.append(record)
    return records


def build_memory_traces(
    records: Iterable[Mapping[str, Any]], systems: Systems, paper: Mapping[str, Any]
) -> pd.DataFrame:
    """Mem-α's Table 5: for the configured instance, each system's final core, semantic and
    episodic memory (a column per system whose paper_row is one of the table's columns, in the
    paper's order; every item, one per line). The paper's verdicts become notes."""
    spec = paper["table5"]
    by_system: dict[str, list[Mapping[str, Any]]] = {}
    for record in records:
        if record["task"] == spec["source"]:
            by_system.setdefault(record["system"], []).append(record)
    wanted = {row: n for n, row in enumerate(spec["columns"])}
    chosen = [
        (wanted[system.get("paper_row")], sid, system)
        for sid, system in system_specs(systems).items()
        if system.get("paper_row") in wanted and sid in by_system
    ]
    data: dict[str, list[str]] = {}
    for _, sid, system in sorted(chosen, key=lambda c: c[0]):
        instances = sorted(by_system[sid], key=lambda r: r["index"])
        if spec["instance"] >= len(instances):
            raise ValueError(
                f"{sid}: no instance {spec['instance']} of {spec['source']} "
                f"({len(instances)} memorised)"
            )
        record = instances[spec["instance"]]
        data[system["display"]] = (
            ["(memorisation failed)"] * 3
            if record["failed"]
            else [_store_text(record["memory"], store) for store in MEMORY_STORES]
        )
    frame = pd.DataFrame(data, index=pd.Index([s.capitalize() for s in MEMORY_STORES]))
    frame.index.name, frame.columns.name = "memory", "system"
    frame.attrs = {
        "notes": [f"The paper on {row}: {verdict}" for row, verdict in spec["paper"].items()],
        "instance": f"{spec['benchmark']} / {spec['source']} #{spec['instance']}",
    }
    return frame


def _store_text(memory: Mapping[str, Any], store: str) -> str:
    if store == "core":
        return memory.get("core") or EMPTY
    items = [content for item in memory.get(store, []) for content in item.values()]
    return "\n".join(f"- {content}" for content in items) or EMPTY


def write_text_table(table: pd.DataFrame, out_prefix: str | Path, caption: str) -> list[Path]:
    """A table of text cells (Table 5's memories, Table 7's settings) as `<prefix>.csv` (row,
    column, the whole content: named by the index's and the columns' names), `.md` and `.tex`
    (at most TRACE_ITEMS lines of TRACE_CHARS characters per cell)."""
    prefix = Path(out_prefix)
    csv_path, md_path, tex_path = (
        prefix.with_name(prefix.name + ext) for ext in (".csv", ".md", ".tex")
    )
    if "instance" in table.attrs:
        caption = f"{caption} ({table.attrs['instance']})"
    row_name, column_name = table.index.name, table.columns.name
    rows = [
        {row_name: row, column_name: column, "content": table.loc[row, column]}
        for row in table.index
        for column in table.columns
    ]
    with atomic_path(csv_path) as tmp:
        pd.DataFrame(rows, columns=[row_name, column_name, "content"]).to_csv(tmp, index=False)
    shown = table.map(_shorten)
    header = [row_name.capitalize(), *table.columns]
    md = [f"**{caption}**", "", "| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    for label, row in shown.iterrows():
        cells = [str(label), *(c.replace("|", "\\|").replace("\n", "<br>") for c in row)]
        md.append("| " + " | ".join(cells) + " |")
    write_text_atomic(md_path, "\n".join([*md, "", *table.attrs["notes"]]) + "\n")
    width = f"p{{{0.8 / max(1, len(table.columns)):.2f}\\linewidth}}"
    tex = [
        r"% Generated by memrl.report.tables.",
        r"\begin{table}[t]",
        r"\centering",
        rf"\caption{{{latex_escape(caption)}}}",
        rf"\label{{tab:{prefix.name}}}",
        r"\scriptsize",
        r"\begin{tabular}{l" + width * len(table.columns) + "}",
        r"\toprule",
        " & ".join(latex_escape(h) for h in header) + r" \\",
        r"\midrule",
    ]
    for label, row in shown.iterrows():
        cells = [latex_escape(str(c)).replace("\n", r"\newline ") for c in row]
        tex.append(" & ".join([latex_escape(str(label)), *cells]) + r" \\")
    tex += [r"\bottomrule", r"\end{tabular}", r"\par\smallskip\footnotesize"]
    tex += [r" \\ ".join(latex_escape(note) for note in table.attrs["notes"]), r"\end{table}"]
    write_text_atomic(tex_path, "\n".join(tex) + "\n")
    return [csv_path, md_path, tex_path]


def _shorten(text: str) -> str:
    lines = text.split("\n")
    kept = [line if len(line) <= TRACE_CHARS else line[:TRACE_CHARS] + "…" for line in lines]
    more = len(lines) - TRACE_ITEMS
    return "\n".join(kept[:TRACE_ITEMS] + ([f"(+{more} more)"] if more > 0 else []))


# --- Table 7: the NIAH synthetic configuration ---------------------------------------------------

NIAH_CONFIG_COLUMNS = {  # RULER task config key -> Table 7's header
    "type_haystack": "Haystack",
    "type_needle_k": "Key",
    "type_needle_v": "Value",
}


def load_ruler_sets(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Table 7's records: per RULER set file, its task, target length, sample count and the
    measured prompt tokens (mean, max)."""
    from memrl.data.io import iter_jsonl

    records = []
    for path in paths:
        first: dict[str, Any] = {}
        tokens = []  # streamed: a 512K-token set is hundreds of MB of text
        for row in iter_jsonl(Path(path), required=("task", "length", "num_tokens")):
            first = first or {"task": row["task"], "length": int(row["length"])}
            tokens.append(int(row["num_tokens"]))
        if not tokens:
            raise ValueError(f"{path}: no samples")
        records.append(
            {
                **first,
                "n_samples": len(tokens),
                "mean_tokens": sum(tokens) / len(tokens),
                "max_tokens": max(tokens),
                "path": str(path),
            }
        )
    return records


def _set_size(found: Mapping[str, Any]) -> str:
    return f"{found['n_samples']} x {found['mean_tokens']:,.0f} (max {found['max_tokens']:,})"


NIAH_COUNT_KEYS = ("num_needle_k", "num_needle_v", "num_needle_q")


def _differs(ours: Any, printed: Any) -> bool:
    """A configuration value the paper prints otherwise (None: it prints none)."""
    return printed is not None and str(printed) != str(ours)


def _config_cell(ours: Any, printed: Any) -> str:
    """A configuration value, with the paper's beside it where the two differ."""
    return f"{ours} (paper: {printed})" if _differs(ours, printed) else str(ours)


def build_niah_config_table(
    sets: Iterable[Mapping[str, Any]],
    niah_config: Mapping[str, Any],
    paper: Mapping[str, Any],
    length_labels: Mapping[int, str] | None = None,
) -> pd.DataFrame:
    """Table 7: per NIAH task that ran, its haystack, key and value types, needle counts and
    answer budget (RULER's task definition in the variant that ran), each compared with the
    paper's printed YAML (`paper["tasks"]`: a differing cell shows both), then per target length
    the samples and their measured prompt tokens (`load_ruler_sets`)."""
    from memrl.data.ruler import RULER_TASKS, task_config

    printed_tasks = paper["tasks"]
    differing = 0
    by_task: dict[str, dict[int, Mapping[str, Any]]] = {}
    for record in sets:
        by_task.setdefault(record["task"], {})[int(record["length"])] = record
    lengths = sorted({n for found in by_task.values() for n in found})
    labels = {int(n): str(label) for n, label in (length_labels or {}).items()}
    data: dict[str, list[str]] = {}
    for task in sorted(by_task, key=RULER_TASKS.index):
        spec = task_config(task, niah_config["variant"])
        printed = printed_tasks.get(task, {})
        compared = {  # header -> (ours, the paper's or None)
            header: (spec[key], printed.get(key)) for key, header in NIAH_CONFIG_COLUMNS.items()
        }
        compared["Keys / values / queries"] = (
            " / ".join(str(spec[key]) for key in NIAH_COUNT_KEYS),
            " / ".join(str(printed[key]) for key in NIAH_COUNT_KEYS) if printed else None,
        )
        differing += sum(_differs(*pair) for pair in compared.values())
        cells = {header: _config_cell(*pair) for header, pair in compared.items()}
        cells["Answer tokens"] = str(spec["tokens_to_generate"])
        for n in lengths:
            found = by_task[task].get(n)
            cells[labels.get(n, token_label(n))] = DASH if found is None else _set_size(found)
        data[task] = list(cells.values())
    headers = [*NIAH_CONFIG_COLUMNS.values(), "Keys / values / queries", "Answer tokens"]
    headers += [labels.get(n, token_label(n)) for n in lengths]
    frame = pd.DataFrame.from_dict(data, orient="index", columns=headers, dtype=object)
    frame.index.name, frame.columns.name = "task", "setting"
    frame.attrs = {
        "notes": [
            f"RULER variant {niah_config['variant']}, tokenizer {niah_config['tokenizer']}, "
            f"seed {niah_config['seed']}; a length column is a target length: samples x the "
            "measured mean prompt tokens (max) of the set that ran.",
            _niah_config_verdict(printed_tasks, list(data), differing),
        ]
    }
    return frame


def _niah_config_verdict(printed: Mapping[str, Any], tasks: Sequence[str], differing: int) -> str:
    """Table 7's note: how the configuration that ran compares with the paper's YAML."""
    compared = [task for task in tasks if task in printed]
    if not compared:
        return f"The paper's Table 7 lists {', '.join(printed)} only: nothing here to compare."
    verdict = (
        "every cell matches it"
        if not differing
        else f"{differing} cell(s) differ, each shown as 'ours (paper: printed)'"
    )
    return (
        f"Compared cell by cell with the paper's Table 7 (its RULER YAML, seed 000 Appendix A.4) "
        f"for {', '.join(compared)}: {verdict}. The paper prints no answer budget or lengths."
    )


# --- one entry point for the CLI -----------------------------------------------------------------


@dataclass(frozen=True)
class PaperTable:
    """How the CLI builds one of the paper's tables: its builder and its numbers' YAML key."""

    paper_key: str
    caption: str
    ruler_lengths: bool = False  # columns are RULER lengths (its labels), not RULER-HQA's


PAPER_TABLES = {
    "table1": PaperTable("ruler_hqa", "RULER-HQA accuracy (%)"),
    "table2": PaperTable("longbench_sum", "LongBench-SUM, ROUGE recall (%)"),
    "table3": PaperTable("longbench_qa", "LongBench-QA (%)"),
    "table4": PaperTable(
        "probe", "Table 4: the context-distribution probe, differences from random"
    ),
    "table8": PaperTable(
        "memory_ablation", "Table 8: NIAH (mean of levels 1-3) by memory/chunk", ruler_lengths=True
    ),
    "table9": PaperTable("memory_ablation", "Table 9: LongBench-QA by memory/chunk size"),
    NIAH_CONFIG_TABLE: PaperTable(
        "", "Table 7: the NIAH synthetic configuration that ran", ruler_lengths=True
    ),
    "table10": PaperTable("rag_ruler_hqa", "RULER-HQA: MemAgent vs RAG over whole documents (%)"),
    "table11": PaperTable("rag_longbench_qa", "LongBench-QA: MemAgent vs RAG over chunks (%)"),
    "table_niah": PaperTable(
        "memory_ablation", "NIAH: mean of niah_single_1/2/3 (%)", ruler_lengths=True
    ),
    "memalpha_table1": PaperTable("table1", "Mem-α Table 1: validation, Perf. (%) and Mem. (K)"),
    "memalpha_table2": PaperTable("table2", "Mem-α Table 2: MemoryAgentBench, Perf. and Mem."),
    "memalpha_table3": PaperTable("table3", "Mem-α Table 3: the framework with three policies"),
    "memalpha_table4": PaperTable("table4", "Mem-α Table 4: the (β, γ) ablation, validation"),
    "memalpha_table9": PaperTable("table9", "Mem-α Table 9: the (β, γ) ablation, MemoryAgentBench"),
    TRACE_TABLE: PaperTable("table5", "Mem-α Table 5: final memories side by side"),
    SUITES_TABLE: PaperTable("", "Every system on RULER-HQA and MemoryAgentBench"),
    "memalpha_table6": PaperTable("table6", "Mem-α Table 6: dataset statistics (validation)"),
    "memalpha_table7": PaperTable("table7", "Mem-α Table 7: dataset statistics (train, valid.)"),
    "memalpha_table8": PaperTable("table8", "Mem-α Table 8: MemoryAgentBench statistics"),
}


def build_paper_table(
    name: str,
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper: Mapping[str, Any],
    length_labels: Mapping[int, str] | None = None,
    niah_config: Mapping[str, Any] | None = None,
    probe: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Build `name` (a PAPER_TABLES key) from metrics records and the whole paper file.

    `length_labels` override the paper's (RULER-HQA n_docs labels for table1/table10, RULER
    token labels for niah and table7). Table 7 reads RULER set records (`load_ruler_sets`) and
    the RULER settings that built them (`niah_config`).
    """
    if name not in PAPER_TABLES:
        raise ValueError(f"unknown table {name!r}; expected one of {', '.join(PAPER_TABLES)}")
    if name == SUITES_TABLE:
        return build_suites_table(records, systems, paper, length_labels or {})
    if name == NIAH_CONFIG_TABLE:
        if niah_config is None:
            raise ValueError("table7 needs the RULER settings it describes (niah_config)")
        return build_niah_config_table(records, niah_config, paper["niah_config"], length_labels)
    if name in STATS_TABLES:
        return build_memalpha_stats_table(records, paper, name)
    if name == TRACE_TABLE:
        return build_memory_traces(records, systems, paper)
    if name in MEMALPHA_SCORE_TABLES or name in ABLATION_TABLES:
        return build_memalpha_table(records, systems, paper, name)
    if name in ("table1", "table10"):
        labels = {int(k): v for k, v in paper.get("length_labels", {}).items()}
        labels.update({int(k): v for k, v in (length_labels or {}).items()})
        builder = build_table1 if name == "table1" else build_rag_ruler_hqa_table
        return builder(records, systems, paper[PAPER_TABLES[name].paper_key], labels)
    if name == "table4":
        if probe is None:
            raise ValueError("table4 needs the probe's systems and placements (probe)")
        return build_probe_table(records, systems, paper, probe, length_labels)
    if name == "table8":
        return build_memory_ablation_niah_table(records, systems, paper, length_labels)
    if name == "table9":
        return build_memory_ablation_qa_table(records, systems, paper)
    if name == "table_niah":
        return build_niah_table(
            records, systems, niah_paper_rows(paper), tuple(paper["niah"]["tasks"]), length_labels
        )
    builders = {
        "table2": build_longbench_sum_table,
        "table3": build_longbench_qa_table,
        "table11": build_rag_longbench_table,
    }
    return builders[name](records, systems, paper[PAPER_TABLES[name].paper_key])


# --- formatting ------------------------------------------------------------------------------


def format_tokens(tokens: float) -> str:
    """1234 -> '1.2K', 28012 -> '28K', 1.75e6 -> '1.75M' (for lengths the paper does not name)."""
    if tokens >= 1e6:
        return f"{tokens / 1e6:.3g}M"
    if tokens >= 1e3:
        return f"{tokens / 1e3:.2g}K" if tokens < 1e4 else f"{tokens / 1e3:.0f}K"
    return f"{tokens:.0f}"


def column_mean_tokens(table: pd.DataFrame, column: Any) -> float | None:
    values = [c.mean_tokens for c in table[column] if c.mean_tokens is not None]
    return sum(values) / len(values) if values else None


def length_label(table: pd.DataFrame, column: Any) -> str:
    """A column's header: the label its builder chose (for RULER-HQA: the paper's name of the
    length, else our measured mean length, else the document count)."""
    label = table.attrs.get("column_labels", {}).get(column)
    return str(label) if label is not None else str(column)


def _signed(value: float) -> str:
    rounded = round(value, 1)
    return f"{0.0 if rounded == 0 else rounded:+.1f}"


def format_cell(cell: Cell) -> str:
    """'81.2 (paper 80.5, +0.8)', '12.5 (paper —)', '— (paper 80.5)', '—';
    with extras: '72.5 (paper 79.0, -6.5; F1 60.1)'."""
    if cell.ours is None:
        return DASH if cell.paper is None else f"{DASH} (paper {cell.paper:.1f})"
    ours = f"{cell.ours:.1f}{FAILED_MARK if cell.n_dropped else ''}{cell.mark}"
    if cell.paper is None or cell.delta is None:
        inside = f"paper {DASH}"
    else:
        inside = f"paper {cell.paper:.1f}, {_signed(cell.delta)}"
    extras = [f"{label} {value:.1f}" for label, value in cell.extras.items() if value is not None]
    return f"{ours} ({'; '.join([inside, *extras])})"


def failure_notes(table: pd.DataFrame) -> list[str]:
    """One line per metrics file with failed requests, giving both accuracies."""
    return list(table.attrs.get("failure_notes", []))


def _notes(table: pd.DataFrame) -> list[str]:
    """Every footnote: the table's notes, partial averages (*), failed requests (†)."""
    lines = list(table.attrs.get("notes", []))
    if table.columns.name == "n_docs" and len(table.columns):
        lengths = [n for n in table.columns if isinstance(n, int)]  # not AVG
        docs = ", ".join(f"{length_label(table, n)} = {n} docs" for n in lengths)
        lines.append(f"Lengths: {docs}.")
    lines += [f"{PARTIAL_MARK} {note}" for note in table.attrs.get("partial_notes", [])]
    lines += [f"{FAILED_MARK} {note}" for note in failure_notes(table)]
    lines += table.attrs.get("scoring_notes", [])
    return lines


def tidy(table: pd.DataFrame) -> pd.DataFrame:
    """Long format, one row per (system, column): the CSV content. The second column is named
    after the table's columns (n_docs, length, column); extras (e.g. F1) follow the base ones."""
    key_name = table.columns.name or "column"
    extra_names = list(
        dict.fromkeys(label for _, row in table.iterrows() for cell in row for label in cell.extras)
    )
    rows = []
    for display, row in table.iterrows():
        for key, cell in row.items():
            rows.append(
                {
                    "system": display,
                    key_name: key,
                    "label": length_label(table, key),
                    "ours": cell.ours,
                    "paper": cell.paper,
                    "delta": None if cell.delta is None else round(cell.delta, 4),
                    "system_id": table.attrs["system_ids"][display],
                    "paper_row": table.attrs["paper_rows"][display],
                    "mean_tokens": cell.mean_tokens,
                    "n_items": cell.n_items if cell.ours is not None else None,
                    "n_dropped": cell.n_dropped if cell.ours is not None else None,
                    "accuracy_official": cell.accuracy_official,
                    "partial": bool(cell.mark),
                    **{name: cell.extras.get(name) for name in extra_names},
                }
            )
    header = [key_name if c == "column" else c for c in CSV_COLUMNS]
    return pd.DataFrame(rows, columns=[*header, "partial", *extra_names])


_LEGEND = (
    "Cells: ours (paper value, ours − paper), scores in %; failed requests count as wrong. "
    f"{DASH} = not run here / not reported in the paper."
)


def _row_header(table: pd.DataFrame) -> str:
    return str(table.index.name or "system").capitalize()


def to_markdown(table: pd.DataFrame, caption: str) -> str:
    headers = [_row_header(table), *(length_label(table, n) for n in table.columns)]
    lines = [
        f"**{caption}**",
        "",
        "| " + " | ".join(h.replace("|", "\\|") for h in headers) + " |",
        "|" + "|".join([":---", *("---:" for _ in table.columns)]) + "|",
    ]
    for display, row in table.iterrows():
        cells = [str(display).replace("|", "\\|"), *(format_cell(c) for c in row)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", table.attrs.get("legend", _LEGEND), *_notes(table)]
    return "\n".join(lines) + "\n"


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    DASH: "---",
    "−": "--",
    FAILED_MARK: r"$^\dagger$",
    PARTIAL_MARK: r"$^{*}$",
}


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def _latex_cell(cell: Cell) -> str:
    text = format_cell(cell)
    value, sep, rest = text.partition(" (")
    if not sep:
        return latex_escape(value)
    return latex_escape(value) + r" {\scriptsize(" + latex_escape(rest) + "}"


def to_latex(table: pd.DataFrame, caption: str, label: str) -> str:
    headers = [_row_header(table), *(length_label(table, n) for n in table.columns)]
    lines = [
        r"% Generated by memrl.report.tables; needs \usepackage{booktabs}.",
        r"\begin{table}[t]",
        r"\centering",
        rf"\caption{{{latex_escape(caption)}}}",
        rf"\label{{{label}}}",
        r"\small",
        r"\begin{tabular}{l" + "r" * len(table.columns) + "}",
        r"\toprule",
        " & ".join(latex_escape(h) for h in headers) + r" \\",
        r"\midrule",
    ]
    for display, row in table.iterrows():
        cells = [latex_escape(str(display)), *(_latex_cell(c) for c in row)]
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\par\smallskip\footnotesize"]
    legend = table.attrs.get("legend", _LEGEND)
    lines.append(r" \\ ".join(latex_escape(note) for note in [legend, *_notes(table)]))
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


def load_table_records(name: str, paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """What a table reads: dataset statistics, memorize records (Table 5) or metrics."""
    if name in STATS_TABLES:
        return load_stats(paths)
    if name == NIAH_CONFIG_TABLE:
        return load_ruler_sets(paths)
    return load_memories(paths) if name == TRACE_TABLE else load_metrics(paths)


def write_paper_table(
    name: str, table: pd.DataFrame, out_prefix: str | Path, caption: str
) -> list[Path]:
    """CSV, Markdown and LaTeX of a built table (Table 5's cells are text, the others scores)."""
    writer = write_text_table if name in (TRACE_TABLE, NIAH_CONFIG_TABLE) else write_table
    return writer(table, out_prefix, caption)


def write_table(table: pd.DataFrame, out_prefix: str | Path, caption: str) -> list[Path]:
    """Write `<prefix>.csv` (tidy), `<prefix>.md` and `<prefix>.tex`, each atomically."""
    prefix = Path(out_prefix)
    csv_path, md_path, tex_path = (
        prefix.with_name(prefix.name + ext) for ext in (".csv", ".md", ".tex")
    )
    with atomic_path(csv_path) as tmp:
        tidy(table).to_csv(tmp, index=False)
    write_text_atomic(md_path, to_markdown(table, caption))
    write_text_atomic(tex_path, to_latex(table, caption, label=f"tab:{prefix.name}"))
    return [csv_path, md_path, tex_path]
