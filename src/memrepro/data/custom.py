"""A user's own long-context QA data: one row per question, as JSONL (a JSON object per line) or
parquet (one row per question), with the fields

    id        a string or an integer, unique in the file (every id of one type)
    context   the text the question is about                    } exactly one of the two
    documents a non-empty list of texts (retrieved one by one)  }
    question  the question, without its context
    answers   a non-empty list of gold answers (strings), each one the dataset's metric can
              tell a right reply by (`memrepro.scoring.golds`: not "A", "?" or, for sub_em and
              string_match, one letter)
    task      optional: a label of your own, kept with the row

Every problem stops the read naming the file, the line (JSONL) or row (parquet) and the field;
a JSONL file must be UTF-8 text, and a text holding a lone surrogate escape ("\\ud800") is
refused rather than altered.
Rows are written for the evaluation as the benchmarks' rows (`index`: the row's place in the
file from 0, `id`, `input`, `answers`, and `context` or `documents`). Read back
(`with_context`), a row has both: `documents` rendered as RULER-HQA renders its documents
("Document i:" headers), a `context` as one document, so that a RAG baseline over whole
documents retrieves a row's own documents.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memrepro.data.io import jsonl_row
from memrepro.scoring.golds import bad_gold

FIELDS = ("id", "context", "documents", "question", "answers", "task")
FORMATS = (".jsonl", ".parquet")


class CustomDataError(ValueError):
    """A row that breaks the schema: the message names the file, line or row, and field."""


def read_custom_rows(
    path: str | Path, max_context_words: int | None = None, metric: str | None = None
) -> list[dict[str, Any]]:
    """The checked rows of one file, in the evaluation's row format (module docstring); with a
    `metric`, every gold must be one it can score (without, as for sizing, golds are not)."""
    path = Path(path)
    rows: list[dict[str, Any]] = []
    ids: dict[tuple[str, Any], str] = {}
    for where, raw in _raw_rows(path):
        row = {"index": len(rows), **_checked(raw, where, max_context_words)}
        problem = None if metric is None else bad_gold(row["answers"], (metric,))
        if problem is not None:
            raise CustomDataError(f"{where}: {problem}")
        key = (type(row["id"]).__name__, row["id"])
        if key in ids:
            raise CustomDataError(f"{where}: field 'id': {row['id']!r} is already at {ids[key]}")
        ids[key] = where
        rows.append(row)
    if not rows:
        raise CustomDataError(f"{path}: no rows")
    if len({type(row["id"]) for row in rows}) > 1:
        raise CustomDataError(f"{path}: field 'id': mixes strings and integers; use one type")
    return rows


def _raw_rows(path: Path) -> Iterator[tuple[str, Any]]:
    """(where, the raw row) of a JSONL file by line or a parquet file by row."""
    if path.suffix not in FORMATS:
        raise CustomDataError(f"{path}: expected one of {', '.join(FORMATS)}, got {path.suffix!r}")
    if not path.is_file():
        raise CustomDataError(f"{path}: no such file")
    if path.suffix == ".parquet":
        from memrepro.data.io import read_parquet

        try:
            table = read_parquet(path, ())
        except ValueError as exc:  # cut short, or not parquet at all: named, not pyarrow's
            raise CustomDataError(str(exc)) from None
        for number, raw in enumerate(table.to_pylist(), 1):
            yield f"{path}: row {number}", raw
        return
    with path.open("rb") as handle:  # UTF-8, JSON and lone surrogates checked as every reader does
        for number, raw in enumerate(handle, 1):
            try:
                row = jsonl_row(path, number, raw)
            except ValueError as exc:
                raise CustomDataError(str(exc)) from None
            if row is not None:
                yield f"{path}:{number}", row


def _checked(raw: Any, where: str, max_context_words: int | None) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise CustomDataError(f"{where}: expected an object with {FIELDS}, got {raw!r:.60}")
    unknown = sorted(set(raw) - set(FIELDS))
    if unknown:
        raise CustomDataError(f"{where}: unknown field {unknown[0]!r}; the fields are {FIELDS}")
    present = {key: value for key, value in raw.items() if value is not None}
    for key in ("id", "question", "answers"):
        if key not in present:
            raise CustomDataError(f"{where}: field {key!r} is missing")
    given = present["id"]
    if isinstance(given, bool) or not isinstance(given, (str, int)) or given == "":
        raise CustomDataError(f"{where}: field 'id': expected a string or an integer")
    row = {
        "id": given,
        "input": _text(present["question"], where, "question"),
        "answers": _answers(present["answers"], where),
        **_context(present, where),
    }
    if max_context_words is not None:
        words = _words(row)
        if words > max_context_words:
            field = "documents" if "documents" in present else "context"
            raise CustomDataError(
                f"{where}: field {field!r}: {words} words, over the cap of {max_context_words} "
                "(custom.datasets.<name>.max_context_words)"
            )
    if "task" in present:
        row["task_label"] = _text(present["task"], where, "task")
    return row


def _context(raw: dict[str, Any], where: str) -> dict[str, Any]:
    if ("context" in raw) == ("documents" in raw):
        raise CustomDataError(f"{where}: give exactly one of the fields 'context' and 'documents'")
    if "context" in raw:
        return {"context": _text(raw["context"], where, "context")}
    documents = _list(raw["documents"])
    if not documents:
        raise CustomDataError(f"{where}: field 'documents': an empty list")
    return {"documents": [_text(doc, where, f"documents[{i}]") for i, doc in enumerate(documents)]}


def with_context(row: dict[str, Any]) -> dict[str, Any]:
    """A written row with both its `context` (documents rendered with their headers) and its
    `documents` (a context is one)."""
    if "documents" not in row:
        return {**row, "documents": [row["context"]]}
    from memrepro.data.ruler_hqa import iter_context_pieces

    documents = row["documents"]
    return {**row, "context": "".join(iter_context_pieces(range(len(documents)), documents))}


def _words(row: dict[str, Any]) -> int:
    return sum(len(text.split()) for text in row.get("documents", [row.get("context", "")]))


def _answers(value: Any, where: str) -> list[str]:
    answers = _list(value)
    if answers is None:
        raise CustomDataError(f"{where}: field 'answers': expected a list of strings")
    if not answers:
        raise CustomDataError(f"{where}: field 'answers': an empty list (give at least one)")
    return [_text(answer, where, f"answers[{i}]") for i, answer in enumerate(answers)]


def _list(value: Any) -> list[Any] | None:
    if hasattr(value, "tolist"):  # a parquet list column read as an array
        value = value.tolist()
    return value if isinstance(value, list) else None


def _text(value: Any, where: str, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise CustomDataError(f"{where}: field {field!r}: expected a non-empty string")
    return value


def context_words(rows: list[dict[str, Any]]) -> float:
    """The mean words of the rows' contexts (for `memrepro cost`)."""
    return sum(_words(row) for row in rows) / len(rows)


def group_by_context(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The rows grouped by their context (or documents), in the order each first appears: one
    group per context, its questions asked after it is read (as MemoryAgentBench's instances)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        key = json.dumps(row.get("documents", row.get("context")))
        groups.setdefault(key, []).append(row)
    return list(groups.values())
