"""Table 1: RULER-HQA accuracy per system and context length, ours beside the paper's.

Each cell holds our accuracy (failed requests counted as wrong), the published number for the
system's `paper_row` (None where the paper has none) and the difference. Written as tidy CSV,
Markdown and LaTeX (booktabs). The paper's official evaluation dropped failed requests from the
denominator instead; when any of our cells had failures, a footnote gives both numbers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from memrl.data.io import atomic_path, read_json, write_text_atomic

BENCHMARK = "ruler_hqa"
DASH = "—"
FAILED_MARK = "†"

_NUMBER = (int, float)
# key -> accepted types; bool is rejected separately (it is an int subclass).
_METRIC_FIELDS: dict[str, tuple[type, ...]] = {
    "benchmark": (str,),
    "system": (str,),
    "n_docs": (int,),
    "mean_tokens": _NUMBER,
    "n_items": (int,),
    "n_failed": (int,),
    "accuracy": _NUMBER,
    "accuracy_official": (*_NUMBER, type(None)),
}
CSV_COLUMNS = [
    "system",
    "n_docs",
    "length",
    "ours",
    "paper",
    "delta",
    "system_id",
    "paper_row",
    "mean_tokens",
    "n_items",
    "n_failed",
    "accuracy_official",
]


@dataclass(frozen=True)
class Cell:
    """One (system, length) entry of Table 1; percentages."""

    ours: float | None
    paper: float | None
    delta: float | None
    n_items: int = 0
    n_failed: int = 0
    accuracy_official: float | None = None
    mean_tokens: float | None = None


# --- loading ---------------------------------------------------------------------------------


def _check_metrics(data: Any, path: Path) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ValueError(f"{path}: metrics must be a JSON object, got {type(data).__name__}")
    for key, types in _METRIC_FIELDS.items():
        if key not in data:
            raise ValueError(f"{path}: missing key {key!r}")
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, types):
            raise ValueError(f"{path}: key {key!r} has invalid value {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{path}: key {key!r} is not finite: {value!r}")
    if data["n_docs"] <= 0 or data["mean_tokens"] <= 0:
        raise ValueError(f"{path}: n_docs and mean_tokens must be positive")
    if not 0 <= data["n_failed"] <= data["n_items"]:
        raise ValueError(f"{path}: n_failed={data['n_failed']} not within 0..n_items")
    for key in ("accuracy", "accuracy_official"):
        if data[key] is not None and not 0 <= data[key] <= 100:
            raise ValueError(f"{path}: {key}={data[key]} is not a percentage")
    return data


def load_metrics(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Read metrics JSON files (one per system x length); each record gains `path`.

    Raises an error naming the file when it is missing, not JSON, or lacks a field.
    """
    records = []
    for raw in paths:
        path = Path(raw)
        records.append({**_check_metrics(read_json(path), path), "path": str(path)})
    return records


# --- building --------------------------------------------------------------------------------


def _normalise_paper(paper: Mapping[str, Mapping[Any, Any]]) -> dict[str, dict[int, float | None]]:
    return {row: {int(n): value for n, value in cells.items()} for row, cells in paper.items()}


def _index_metrics(
    metrics: Iterable[Mapping[str, Any]], systems: Mapping[str, Any], benchmark: str
) -> dict[tuple[str, int], Mapping[str, Any]]:
    found: dict[tuple[str, int], Mapping[str, Any]] = {}
    for record in metrics:
        if record["benchmark"] != benchmark:
            continue
        where = record.get("path", f"metrics of {record['system']!r}")
        if record["system"] not in systems:
            raise ValueError(
                f"{where}: system {record['system']!r} is not configured "
                f"(configured: {', '.join(systems)})"
            )
        key = (record["system"], int(record["n_docs"]))
        if key in found:
            other = found[key].get("path", "another record")
            raise ValueError(f"{where}: duplicate metrics for {key} (also in {other})")
        found[key] = record
    return found


def _cell(record: Mapping[str, Any] | None, paper_value: float | None) -> Cell:
    if record is None:
        return Cell(ours=None, paper=paper_value, delta=None)
    ours = float(record["accuracy"])
    return Cell(
        ours=ours,
        paper=paper_value,
        delta=None if paper_value is None else ours - float(paper_value),
        n_items=int(record["n_items"]),
        n_failed=int(record["n_failed"]),
        accuracy_official=record["accuracy_official"],
        mean_tokens=float(record["mean_tokens"]),
    )


def build_table1(
    metrics: Iterable[Mapping[str, Any]],
    systems: Mapping[str, Mapping[str, Any]],
    paper: Mapping[str, Mapping[Any, Any]],
    length_labels: Mapping[int, str],
    benchmark: str = BENCHMARK,
) -> pd.DataFrame:
    """Rows = systems in config order (display names), columns = n_docs ascending, values = Cell.

    `systems` maps system id -> {"display": ..., "paper_row": paper row name or None};
    `paper` maps paper row name -> {n_docs: accuracy or None}. Metrics of other benchmarks
    are ignored; metrics of an unconfigured system are an error.
    """
    paper_rows = _normalise_paper(paper)
    displays = [spec["display"] for spec in systems.values()]
    if len(set(displays)) != len(displays):
        raise ValueError(f"system display names must be unique: {displays}")
    for system, spec in systems.items():
        row = spec.get("paper_row")
        if row is not None and row not in paper_rows:
            raise ValueError(
                f"system {system!r}: paper_row {row!r} is not in the paper table "
                f"(rows: {', '.join(paper_rows)})"
            )
    found = _index_metrics(metrics, systems, benchmark)
    columns = sorted({n_docs for _, n_docs in found})
    data = {}
    for n_docs in columns:
        data[n_docs] = [
            _cell(
                found.get((system, n_docs)),
                paper_rows.get(spec.get("paper_row") or "", {}).get(n_docs),
            )
            for system, spec in systems.items()
        ]
    table = pd.DataFrame(
        data, index=pd.Index(displays, name="system"), columns=columns, dtype=object
    )
    table.columns.name = "n_docs"
    table.attrs = {
        "length_labels": {int(n): str(label) for n, label in length_labels.items()},
        "system_ids": {spec["display"]: system for system, spec in systems.items()},
        "paper_rows": {spec["display"]: spec.get("paper_row") for spec in systems.values()},
    }
    return table


# --- formatting ------------------------------------------------------------------------------


def format_tokens(tokens: float) -> str:
    """1234 -> '1.2K', 28012 -> '28K', 1.75e6 -> '1.75M' (for lengths the paper does not name)."""
    if tokens >= 1e6:
        return f"{tokens / 1e6:.3g}M"
    if tokens >= 1e3:
        return f"{tokens / 1e3:.2g}K" if tokens < 1e4 else f"{tokens / 1e3:.0f}K"
    return f"{tokens:.0f}"


def column_mean_tokens(table: pd.DataFrame, n_docs: int) -> float | None:
    values = [c.mean_tokens for c in table[n_docs] if c.mean_tokens is not None]
    return sum(values) / len(values) if values else None


def length_label(table: pd.DataFrame, n_docs: int) -> str:
    """The paper's label for this length, else our measured mean length, else the doc count."""
    label = table.attrs.get("length_labels", {}).get(n_docs)
    if label:
        return label
    tokens = column_mean_tokens(table, n_docs)
    return format_tokens(tokens) if tokens is not None else f"{n_docs} docs"


def _signed(value: float) -> str:
    rounded = round(value, 1)
    return f"{0.0 if rounded == 0 else rounded:+.1f}"


def format_cell(cell: Cell) -> str:
    """'81.2 (paper 80.5, +0.8)', '12.5 (paper —)', '— (paper 80.5)' or '—'."""
    if cell.ours is None:
        return DASH if cell.paper is None else f"{DASH} (paper {cell.paper:.1f})"
    ours = f"{cell.ours:.1f}{FAILED_MARK if cell.n_failed else ''}"
    if cell.paper is None or cell.delta is None:
        return f"{ours} (paper {DASH})"
    return f"{ours} (paper {cell.paper:.1f}, {_signed(cell.delta)})"


def failure_notes(table: pd.DataFrame) -> list[str]:
    """One line per cell with failed requests, giving both accuracies."""
    notes = []
    for display, row in table.iterrows():
        for n_docs, cell in row.items():
            if cell.ours is None or not cell.n_failed:
                continue
            official = DASH if cell.accuracy_official is None else f"{cell.accuracy_official:.2f}"
            notes.append(
                f"{display} @ {length_label(table, n_docs)}: {cell.n_failed}/{cell.n_items} "
                f"requests failed; accuracy {cell.ours:.2f} (failed = wrong, shown) vs "
                f"{official} (failed dropped, official eval)"
            )
    return notes


def tidy(table: pd.DataFrame) -> pd.DataFrame:
    """Long format, one row per (system, n_docs): the CSV content."""
    rows = []
    for display, row in table.iterrows():
        for n_docs, cell in row.items():
            rows.append(
                {
                    "system": display,
                    "n_docs": n_docs,
                    "length": length_label(table, n_docs),
                    "ours": cell.ours,
                    "paper": cell.paper,
                    "delta": None if cell.delta is None else round(cell.delta, 4),
                    "system_id": table.attrs["system_ids"][display],
                    "paper_row": table.attrs["paper_rows"][display],
                    "mean_tokens": cell.mean_tokens,
                    "n_items": cell.n_items if cell.ours is not None else None,
                    "n_failed": cell.n_failed if cell.ours is not None else None,
                    "accuracy_official": cell.accuracy_official,
                }
            )
    return pd.DataFrame(rows, columns=CSV_COLUMNS)


_LEGEND = (
    "Cells: ours (paper value, ours − paper), accuracy in %; failed requests count as wrong. "
    f"{DASH} = not run here / not reported in the paper."
)


def to_markdown(table: pd.DataFrame, caption: str) -> str:
    headers = ["System", *(length_label(table, n) for n in table.columns)]
    lines = [
        f"**{caption}**",
        "",
        "| " + " | ".join(headers) + " |",
        "|" + "|".join([":---", *("---:" for _ in table.columns)]) + "|",
    ]
    for display, row in table.iterrows():
        cells = [str(display).replace("|", "\\|"), *(format_cell(c) for c in row)]
        lines.append("| " + " | ".join(cells) + " |")
    docs = ", ".join(f"{length_label(table, n)} = {n} docs" for n in table.columns)
    lines += ["", _LEGEND, f"Lengths: {docs}."]
    lines += [f"{FAILED_MARK} {note}" for note in failure_notes(table)]
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
    headers = ["System", *(length_label(table, n) for n in table.columns)]
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
    notes = [_LEGEND, *(f"{FAILED_MARK} {note}" for note in failure_notes(table))]
    lines.append(r" \\ ".join(latex_escape(note) for note in notes))
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


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
