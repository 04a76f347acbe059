"""File I/O conventions: JSONL appended + flushed per sample, atomic whole-file writes.

Every reader names the file (and the line) when the content is bad, so a broken input is found fast.
Every writer stores any Python text (a lone surrogate from a model becomes U+FFFD) and never
writes a configured secret (memrepro.secrets).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memrepro.secrets import redact

log = logging.getLogger(__name__)

# Surrogate code points cannot be encoded as UTF-8; in a Python str they are always unpaired
# (json.loads joins a valid pair), e.g. from a model's "\\ud800" in a JSON response.
_SURROGATE = re.compile("[\ud800-\udfff]")


def storable(text: str) -> str:
    """`text` with every surrogate code point replaced by U+FFFD, so that it encodes as UTF-8."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


def _written(text: str) -> str:
    return redact(storable(text))


def _jsonl_line(row: dict) -> str:
    return _written(json.dumps(row, ensure_ascii=False)) + "\n"


def _decoded(path: Path, raw: bytes, lineno: int | None = None) -> str:
    """`raw` (a whole file, or its line `lineno`) as UTF-8; bad bytes fail naming the file, the
    line and the column."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line_start = 0 if lineno is not None else raw.rfind(b"\n", 0, e.start) + 1
        lineno = lineno if lineno is not None else raw.count(b"\n", 0, e.start) + 1
        raise ValueError(
            f"{path}:{lineno}:{e.start - line_start + 1}: not UTF-8 text "
            f"(byte {raw[e.start : e.end]!r})"
        ) from None


def read_text(path: str | Path) -> str:
    """A UTF-8 text file; a missing file or bad bytes fail naming the file (and the line)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError as e:
        raise FileNotFoundError(f"{path}: no such file") from e
    return _decoded(path, raw)


def iter_jsonl(path: str | Path, required: Sequence[str] = ()) -> Iterator[dict]:
    """Yield the objects of a JSONL file; blank lines are skipped.

    A line that is not a JSON object (e.g. a truncated last line of a killed job), not UTF-8, or
    without one of the `required` fields raises ValueError naming the file and the 1-based line.
    """
    path = Path(path)
    with path.open("rb") as f:
        for lineno, raw in enumerate(f, start=1):
            if (row := jsonl_row(path, lineno, raw, required)) is not None:
                yield row


def iter_appended_jsonl(
    path: str | Path, required: Sequence[str] = ()
) -> Iterator[tuple[int, dict]]:
    """(line number, object) of a JSONL file a job appends to (training metrics, verl's logs):
    a last line cut before its newline (a killed job's write) is left out with a warning; any
    other bad line is a ValueError naming the file and line."""
    path = Path(path)
    with path.open("rb") as f:
        for lineno, raw in enumerate(f, start=1):
            try:
                row = jsonl_row(path, lineno, raw, required)
            except ValueError:
                if raw.endswith(b"\n"):
                    raise
                log.warning(
                    "%s:%d: a torn last line (a killed job's cut write), left out", path, lineno
                )
                return
            if row is not None:
                yield lineno, row


def jsonl_row(path: Path, lineno: int, raw: bytes, required: Sequence[str] = ()) -> dict | None:
    """Line `lineno` of a JSONL file as an object, None if blank; ValueError naming the file and
    line if it is not UTF-8, not a JSON object, or lacks one of the `required` fields."""
    line = _decoded(path, raw, lineno)
    if not line.strip():
        return None
    try:
        row = json.loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{lineno}: invalid JSON line ({e.msg})") from e
    if not isinstance(row, dict):
        raise ValueError(f"{path}:{lineno}: expected a JSON object, got {type(row).__name__}")
    if missing := [key for key in required if key not in row]:
        raise ValueError(f"{path}:{lineno}: missing field(s) {', '.join(missing)}")
    if "\\u" in line and (field := surrogate_field(row)) is not None:
        raise ValueError(
            f"{path}:{lineno}: field {field} holds a lone surrogate (a \\ud800-\\udfff escape "
            "without its pair): not text any tokenizer can read"
        )
    return row


def surrogate_field(value: Any, where: str = "") -> str | None:
    """The first field (dotted path, `[i]` for list items) of a JSON value whose text holds a
    lone surrogate code point, else None."""
    if isinstance(value, str):
        return where or "<value>" if _SURROGATE.search(value) else None
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, item in items:
        name = (
            f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}" if where else str(key)
        )
        if (found := surrogate_field(item, name)) is not None:
            return found
    return None


def read_jsonl(path: str | Path, required: Sequence[str] = ()) -> list[dict]:
    return list(iter_jsonl(path, required))


def append_jsonl(path: str | Path, rows: Iterable[dict]) -> None:
    """Append rows and fsync: what was written survives a killed job (resume by re-reading)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        for row in rows:
            f.write(_jsonl_line(row))
        f.flush()
        os.fsync(f.fileno())


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path next to `path`, moved onto it (fsynced) only if the body succeeds.

    The one way this project writes whole files: a crash never leaves a half-written output.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the usual permissions
    try:
        yield Path(tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)


def staging_directory(out: str | Path) -> Path:
    """An empty directory beside `out` to build it in (then `publish_directory`), with the
    usual permissions: mkdtemp's 0700 would stay on the published directory."""
    out = Path(out)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    staging.chmod(0o777 & ~_umask())
    return staging


def publish_directory(staging: str | Path, out: str | Path) -> None:
    """Rename a finished staging directory onto `out` (an existing `out` is swapped out first)."""
    staging, out = Path(staging), Path(out)
    if not out.exists():
        staging.rename(out)
        return
    old = out.parent / f".{out.name}.old"
    shutil.rmtree(old, ignore_errors=True)
    out.rename(old)
    staging.rename(out)
    shutil.rmtree(old)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def write_text_atomic(path: str | Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(_written(text), encoding="utf-8")


def write_jsonl_atomic(path: str | Path, rows: Iterable[dict]) -> None:
    with atomic_path(path) as tmp, tmp.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(_jsonl_line(row))


def json_text(obj: Any) -> str:
    """`obj` as every JSON file here is written (write_json_atomic)."""
    return json.dumps(obj, ensure_ascii=False, indent=1) + "\n"


def json_digest(obj: Any) -> str:
    """The sha256 of `obj`'s canonical JSON (keys sorted): the same value, the same digest."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def write_json_atomic(path: str | Path, obj: Any) -> None:
    write_text_atomic(path, json_text(obj))


def read_json(path: str | Path) -> Any:
    path = Path(path)
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{e.lineno}:{e.colno}: invalid JSON ({e.msg})") from e


def sha256_file(path: str | Path, chunk_size: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as f:
        while chunk := f.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def read_parquet(path: str | Path, columns: Iterable[str]) -> Any:
    """A parquet file as a pyarrow Table that has (at least) `columns`; a missing file, a damaged
    one or one without a column fails naming the file."""
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    try:  # ParquetFile, not read_table: that imports pyarrow.dataset (0.3 s) for one file
        table = pq.ParquetFile(path).read()
    except Exception as e:  # pyarrow raises several types for a damaged file
        raise ValueError(f"{path}: not a readable parquet file ({e})") from e
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing}; it has {table.column_names}")
    return table


def read_table_records(path: str | Path, columns: Iterable[str], what: str) -> list[dict]:
    """The rows of a `what` data file, .parquet (Hugging Face's layout) or .jsonl, as dicts.

    A missing file, another format, an unreadable parquet file or one without `columns` fails
    with a message naming the file.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    if path.suffix == ".jsonl":
        return list(iter_jsonl(path))
    if path.suffix != ".parquet":
        raise ValueError(f"{path}: expected a .parquet or .jsonl {what} file")
    return read_parquet(path, columns).to_pylist()
