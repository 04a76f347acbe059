"""File I/O conventions: JSONL appended + flushed per sample, atomic whole-file writes.

Every reader names the file (and the line) when the content is bad, so a broken input is found fast.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any


def iter_jsonl(path: str | Path) -> Iterator[dict]:
    """Yield the objects of a JSONL file; blank lines are skipped.

    A line that is not a JSON object (e.g. a truncated last line of a killed job) raises ValueError
    naming the file and the 1-based line number.
    """
    path = Path(path)
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{lineno}: invalid JSON line ({e.msg})") from e
            if not isinstance(row, dict):
                raise ValueError(
                    f"{path}:{lineno}: expected a JSON object, got {type(row).__name__}"
                )
            yield row


def read_jsonl(path: str | Path) -> list[dict]:
    return list(iter_jsonl(path))


def append_jsonl(path: str | Path, rows: Iterable[dict]) -> None:
    """Append rows and fsync: what was written survives a killed job (resume by re-reading)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())


def _write_text_atomic(path: Path, write: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_jsonl_atomic(path: str | Path, rows: Iterable[dict]) -> None:
    def write(f: Any) -> None:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")

    _write_text_atomic(Path(path), write)


def write_json_atomic(path: str | Path, obj: Any) -> None:
    def write(f: Any) -> None:
        json.dump(obj, f, ensure_ascii=False, indent=1)
        f.write("\n")

    _write_text_atomic(Path(path), write)


def read_json(path: str | Path) -> Any:
    path = Path(path)
    try:
        with path.open(encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError as e:
        raise FileNotFoundError(f"{path}: no such file") from e
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{e.lineno}:{e.colno}: invalid JSON ({e.msg})") from e


def sha256_file(path: str | Path, chunk_size: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as f:
        while chunk := f.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()
