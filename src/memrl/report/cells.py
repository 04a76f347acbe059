"""The machinery every paper table shares: metrics records, systems, and a table of `Cell`s.

A table is a DataFrame (rows = systems in config order, by display name) whose values are
`Cell`s: our score (failed requests count as wrong), the paper's number for the system's paper
row (None where the paper has none) and the difference. `assemble` builds one from columns
(`Column`: a metric of one benchmark/task/length) and averages (`Average`): an average is the
mean of the columns present; a partial mean is marked and its paper value is the paper's mean
over the same columns; the paper's own printed average is recomputed the same way, and a note
names every printed one that disagrees.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from memrl.benchmarks import registered
from memrl.data.io import read_json
from memrl.scoring.compare import (
    DEFAULT_MARGIN,
    FIXED_INSTANCES,
    INSTANCES_RESAMPLED,
    ITEMS,
    MIN_ITEMS,
    PERCENT,
    Comparison,
    compare_graded,
    compare_proportions,
    standard_error,
)
from memrl.scoring.intervals import Interval, mean_interval

BENCHMARK = "ruler_hqa"
# benchmarks without a length axis: their records have length 0
UNLENGTHED = tuple(name for name, found in registered().items() if not found.lengths)
DASH = "—"
FAILED_MARK = "†"  # empty outputs (failed requests among them) dropped, as the official eval
OVER_ALL = "over all"  # beside such a cell: ours with them counted wrong
PARTIAL_MARK = "*"
AVG = "avg"
MEM_LABEL = "Mem."
Key = tuple[str, str, str, int]  # a metrics record's (benchmark, task, system, length)
# The report settings' list of system dicts {"id", "display", "paper_row", "kind", ...}, or a
# mapping id -> spec.
Systems = Sequence[Mapping[str, Any]] | Mapping[str, Mapping[str, Any]]
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


@dataclass(frozen=True)
class Cell:
    """One (system, column) entry; percentages. `mark` flags a partial average, `extras` are
    scores shown beside ours (e.g. {"F1": 61.2}). The comparison with the paper's number
    (memrl.scoring.compare) needs our interval, the items behind ours and the paper's n."""

    ours: float | None
    paper: float | None
    delta: float | None
    n_items: int = 0
    n_dropped: int = 0  # items left out as the official evaluator does (FAILED_MARK)
    accuracy_official: float | None = None
    mean_tokens: float | None = None
    mark: str = ""
    extras: Mapping[str, float | None] = field(default_factory=dict)
    ci: Interval | None = None  # our 95 % interval (memrl.scoring.intervals)
    decimals: int = 1  # shown with this many decimals (0: a count)
    comparable: bool = True  # False: a model that cannot reproduce the papers (mark_machinery_only)
    n_scored: int = 0  # the items behind `ours` (the dropped ones left out where they are)
    n_questions: int | None = None  # the questions of its instances (Mem-α), where it has them
    right_wrong: bool = False  # every item 0 or 1: a proportion (Newcombe), else graded
    parts: tuple[Any, ...] = ()  # an average's columns (its paper n is theirs summed)
    derived: bool = False  # an average the paper never printed: shown, never judged
    paper_n: int | None = None  # the items behind the paper's number (None: unknown)
    margin: float = DEFAULT_MARGIN  # ±δ of `reproduced`, in points
    ci_fixed: Interval | None = None  # Mem-α: our 95 % interval with the instances held fixed
    scale: tuple[float, float] = PERCENT  # a difference of two scores: (-100, 100)

    @property
    def design(self) -> str:
        """How the comparison samples (memrl.scoring.compare): Mem-α's instances held fixed
        where the paper's n is ours (both sides answered the same released instances, and
        each has two or more questions), resampled where they differ; items otherwise."""
        if self.ci_fixed is not None and self.paper_n == self.n_scored:
            return FIXED_INSTANCES
        return INSTANCES_RESAMPLED if self.n_questions is not None else ITEMS

    @property
    def interval(self) -> Interval | None:
        """Our 95 % interval on the cell's design: the one shown and compared."""
        return self.ci_fixed if self.design == FIXED_INSTANCES else self.ci

    @property
    def sampled_units(self) -> int:
        """What the interval samples: a Mem-α cell's questions, else its items."""
        return self.n_questions if self.n_questions is not None else self.n_scored

    @property
    def too_few_items(self) -> bool:
        """Fewer than MIN_ITEMS sampled units, or an interval without width: no verdict."""
        bounds = self.interval
        return self.sampled_units < MIN_ITEMS or (bounds is not None and bounds[0] == bounds[1])

    @functools.cached_property
    def comparison(self) -> Comparison | None:
        """Ours − paper with both sampling errors; None where there is nothing to judge."""
        bounds = self.interval
        if self.ours is None or self.paper is None or bounds is None or not self.n_scored:
            return None
        if not self.comparable or self.derived or self.too_few_items:
            return None
        if self.right_wrong:
            successes = round(self.ours * self.n_scored / 100)
            return compare_proportions(
                successes, self.n_scored, self.paper, self.paper_n, self.margin
            )
        fixed = self.design == FIXED_INSTANCES
        return compare_graded(
            self.ours,
            standard_error(bounds),
            self.n_scored,
            self.paper,
            self.n_scored if fixed else self.paper_n,
            self.margin,
            scale=self.scale,
            design=self.design,
        )

    @property
    def verdict(self) -> str | None:
        """reproduced (within ±margin), consistent, differs above or below: None unjudged."""
        return None if self.comparison is None else self.comparison.outcome

    @property
    def unjudged(self) -> str | None:
        """Why a cell with ours and a paper number has no verdict (None: it has one, or it
        lacks either number)."""
        if self.ours is None or self.paper is None or self.verdict is not None:
            return None
        if not self.comparable:
            return NOT_COMPARABLE
        if self.derived:
            return DERIVED
        if self.interval is None or not self.n_scored:
            return NOT_SAMPLED
        return TOO_FEW_ITEMS


NOT_COMPARABLE = "not comparable"  # a system that cannot reproduce the papers
DERIVED = "derived"  # an average the paper does not print: no verdict
NOT_SAMPLED = "not sampled"  # no interval of ours (a memory size): no verdict
TOO_FEW_ITEMS = "too few items"  # below MIN_ITEMS, or an interval without width: no verdict
PaperSizes = int | Mapping[Any, int] | None  # the paper's n: per table, per column, unknown


class PaperNumberError(ValueError):
    """A paper file's number that cannot be a score (the table job names the file)."""


def attach_paper_n(
    table: pd.DataFrame, sizes: PaperSizes, margin: float, name: str = "table"
) -> None:
    """In place: each cell learns the paper's n (an average: its columns' summed; None where
    any is unknown) and the margin ±δ its verdict uses. A paper number off its cell's scale
    (not finite, or outside 0..100) raises PaperNumberError naming the table and cell."""

    def size(key: Any) -> int | None:
        if sizes is None or isinstance(sizes, int):
            return sizes
        return sizes.get(key)

    for column in table.columns:
        cells = []
        for row, cell in zip(table.index, table[column], strict=True):
            if isinstance(cell, Cell):
                _check_paper_number(cell, name, row, column)
                counts = [size(key) for key in cell.parts or (column,)]
                n = None if None in counts else sum(c for c in counts if c is not None)
                cell = replace(cell, paper_n=n, margin=margin)
            cells.append(cell)
        table[column] = cells


def _check_paper_number(cell: Cell, name: str, row: Any, column: Any) -> None:
    """A score's paper number lies on its scale (memory sizes, which have no interval of ours
    and no scale, are not checked)."""
    paper, (low, high) = cell.paper, cell.scale
    if paper is None or cell.ci is None:
        return
    number = isinstance(paper, int | float) and not isinstance(paper, bool)
    if number and math.isfinite(paper) and low <= paper <= high:
        return
    raise PaperNumberError(
        f"{name}, row {row!r}, column {column!r}: the paper's number {paper!r} is not a "
        f"score within {low:g}..{high:g}"
    )


MACHINERY_ONLY = "Machinery check only: "  # how a table's, figure's or report's banner begins


def machinery_banner(names: Sequence[str], everything: bool) -> str:
    """The line a table, figure or report opens with when systems in it cannot reproduce."""
    who = "every system here runs" if everything else f"{', '.join(names)} run"
    return (
        f"{MACHINERY_ONLY}{who} a model that cannot reproduce the papers (random weights, or "
        "marked `reproduces: false`): beside the paper's numbers they test the pipeline, not the "
        "method; their cells are not comparable and count in no verdict."
    )


def not_reproducing(systems: Systems) -> list[str]:
    """The display names of the report systems whose model cannot reproduce the papers."""
    specs = system_specs(systems).values()
    return [spec["display"] for spec in specs if not spec.get("reproduces", True)]


def mark_machinery_only(table: pd.DataFrame, systems: Systems) -> None:
    """In place: the rows of systems that cannot reproduce (a memory-ablation variant's row too)
    get cells compared with nothing, and the table its banner (attrs `banner`)."""
    names = not_reproducing(systems)

    def machinery(label: Any) -> bool:  # the system's row, or one of its rows ("X: random")
        text = str(label)
        return any(
            text.startswith(name) and not text[len(name) : len(name) + 1].isalnum()
            for name in names
        )

    rows = [machinery(label) for label in table.index]
    if not any(rows):
        return
    for column in table.columns:
        table[column] = [
            replace(cell, comparable=False) if hit and isinstance(cell, Cell) else cell
            for cell, hit in zip(table[column], rows, strict=True)
        ]
    shown = [str(label) for label, hit in zip(table.index, rows, strict=True) if hit]
    table.attrs["banner"] = machinery_banner(shown, all(rows))


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
    for key in ("n_dropped", "n_questions"):
        if key in data:
            _check_type(path, key, data[key], (int,))
    _check_intervals(path, data.get("ci95", {}))
    _check_intervals(path, data.get("ci95_fixed_instances", {}), "ci95_fixed_instances")
    right_wrong = data.get("right_wrong", [])
    if not (isinstance(right_wrong, list) and all(isinstance(k, str) for k in right_wrong)):
        raise ValueError(f"{path}: key 'right_wrong' must list score names, got {right_wrong!r}")
    patterns = data.get("memory_patterns", {})
    if not isinstance(patterns, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in patterns.values()
    ):
        raise ValueError(f"{path}: key 'memory_patterns' must map patterns to sample counts")
    if data["n_items"] < 1:  # an empty evaluation set has no accuracy, not 0.0
        raise ValueError(f"{path}: n_items={data['n_items']}: no sample was evaluated")
    if data.get("n_questions") is not None and data["n_questions"] < data["n_items"]:
        raise ValueError(
            f"{path}: n_questions={data['n_questions']} is below n_items={data['n_items']} "
            "(every instance has a question)"
        )
    for key in ("n_failed", "n_dropped"):
        if key in data and not 0 <= data[key] <= data["n_items"]:
            raise ValueError(f"{path}: {key}={data[key]} not within 0..n_items")
    for key in ("accuracy", "accuracy_official", *_SCORE_FIELDS):
        if data.get(key) is not None and not 0 <= data[key] <= 100:
            raise ValueError(f"{path}: {key}={data[key]} is not a percentage")
    return data


def _check_intervals(path: Path, intervals: Any, name: str = "ci95") -> None:
    """`ci95`: {score: [low, high]} in %, low <= high (a record written before it had none)."""
    if not isinstance(intervals, dict):
        raise ValueError(f"{path}: key {name!r} must map scores to [low, high], got {intervals!r}")
    for key, bounds in intervals.items():
        if not (isinstance(bounds, list) and len(bounds) == 2):
            raise ValueError(f"{path}: {name}[{key!r}] must be [low, high], got {bounds!r}")
        for bound in bounds:
            _check_type(path, f"{name}[{key!r}]", bound, _NUMBER)
        if not 0 <= bounds[0] <= bounds[1] <= 100:
            raise ValueError(f"{path}: {name}[{key!r}]={bounds} is not an interval within 0..100")


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


def reads_instances(system_id: str, spec: Mapping[str, Any]) -> bool:
    """Whether the system's kind reads every benchmark as Mem-α instances (Mem-α's framework)."""
    from memrl.systems import system_kind as registered_kind

    return registered_kind(system_kind(system_id, spec)).instances_only


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


def is_rag_unit(system_id: str, spec: Mapping[str, Any], doc: bool) -> bool:
    """A RAG system over whole documents (doc=True, Table 10) or over chunks (Table 11)."""
    if system_kind(system_id, spec) != "rag":
        return False
    return (rag_setting(system_id, spec)[1] == "doc") == doc


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


def records_of(
    benchmark: str, tasks: Collection[str] | None = None
) -> Callable[[Mapping[str, Any]], bool]:
    """Which metrics records a table reads: those of `benchmark` (of `tasks` only, if given)."""

    def wanted(record: Mapping[str, Any]) -> bool:
        return record["benchmark"] == benchmark and (tasks is None or record["task"] in tasks)

    return wanted


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


def lookup(cells: Any, path: Sequence[Any]) -> float | None:
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


def resolve_paper_rows(
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
    right_wrong = scored in record.get("right_wrong", ())
    if right_wrong and column.scale == 1.0:
        _check_right_wrong(record, scored, ours, n_scored)
    return Cell(
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


def _check_right_wrong(record: Mapping[str, Any], key: str, score: float, n: int) -> None:
    """A score its record lists as right/wrong is k/n of its items: else the file is wrong."""
    successes = score * n / 100
    if n < 1 or abs(successes - round(successes)) > 1e-6 * max(1, n):
        raise ValueError(
            f"{record.get('path', record['system'])}: {key}={score} over {n} items is no k/{n}, "
            "yet 'right_wrong' lists it as right/wrong"
        )


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
            cells[column.key] = _column_cell(column, record, paper, table)
            if record is not None and id(record) not in noted:
                noted.add(id(record))
                if n_dropped(record):
                    failure_notes.append(_failure_note(spec["display"], column, record))
                if record.get("n_lenient_sub_em"):
                    scoring_notes.append(_lenient_note(spec["display"], column, record))
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


def official_accuracy(record: Mapping[str, Any]) -> float:
    """The accuracy the official evaluator reports: empty outputs left out when there are any."""
    official = record["accuracy_official"]
    return float(official if n_dropped(record) and official is not None else record["accuracy"])


def n_dropped(record: Mapping[str, Any]) -> int:
    """Items the official evaluator leaves out: failed requests and empty outputs (a metrics
    file written before `n_dropped` existed counted the failed ones only)."""
    return int(record.get("n_dropped", record["n_failed"]))


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


@dataclass(frozen=True)
class PaperTable:
    """How the CLI builds one of the paper's tables: its builder and its numbers' YAML key."""

    paper_key: str
    caption: str
    ruler_lengths: bool = False  # columns are RULER lengths (its labels), not RULER-HQA's


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
