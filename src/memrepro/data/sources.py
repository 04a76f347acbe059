"""Get raw inputs into the run directory: downloads with checksums, local copies, packaged fixtures.

Every fetch returns a manifest entry (what came from where, its sha256 and size, and for a
Hugging Face download the commit `main` resolved to), so a run records exactly which bytes it
used. Files appear atomically: they are written to a temporary sibling and renamed into place only
after the checksum matched.
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any, BinaryIO

from tqdm import tqdm

from memrepro.data.io import atomic_path, sha256_file

FIXTURE_PREFIX = "fixture:"
HUB_COMMIT_HEADER = "X-Repo-Commit"  # the commit a Hugging Face `resolve/<revision>` URL served
ESSAYS_PREFIX = "pg-essays:"  # RULER's Paul Graham essays, assembled from their URL list
_CHUNK = 1 << 20
_SKIPPED_KEYS = {"_id", "id"}  # identifiers are not text worth training a tokenizer on


class ChecksumError(ValueError):
    pass


def fetch_file(source: str, dest: str | os.PathLike[str], sha256: str | None = None) -> dict:
    """Copy `source` (http(s) URL, `fixture:NAME`, local path, or `pg-essays:` for RULER's
    essays) to `dest`; verify `sha256`.

    On a checksum mismatch nothing is left at `dest` (a previous file there is untouched): the
    file that could not be verified is kept beside it (`unverified(dest)`) for inspection, and
    ChecksumError names the source, the expected and the actual digest and where that file is.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if source.startswith(ESSAYS_PREFIX):
        return _fetch_essays(dest, sha256)
    headers: dict[str, str] = {}
    with atomic_path(dest) as tmp:  # renamed onto dest only if the checksum matched
        with tmp.open("wb") as out:
            _open_source(source, headers)(out)
        actual = sha256_file(tmp)
        if sha256 is not None and actual != sha256.lower():
            kept = unverified(dest)
            tmp.replace(kept)
            raise ChecksumError(
                f"checksum mismatch for {source}: expected sha256 {sha256}, got {actual} "
                f"(the file is kept for inspection at {kept})"
            )
    entry = {"source": source, "path": str(dest), "sha256": actual, "bytes": dest.stat().st_size}
    if HUB_COMMIT_HEADER in headers:  # pin it: replace `main` in the url by this commit
        entry["revision"] = headers[HUB_COMMIT_HEADER]
    return entry


def unverified(dest: Path) -> Path:
    """Where a file whose checksum did not match is kept: beside `dest`, never read by a job."""
    return dest.with_name(f"{dest.name}.unverified")


def _fetch_essays(dest: Path, sha256: str | None) -> dict:
    """The essay haystack JSON from the packaged URL list (memrepro.data.essays), then checked."""
    from memrepro.data.essays import essay_urls, fetch_essays

    entry = fetch_essays(essay_urls(), dest)
    if sha256 is not None and entry["sha256"] != sha256.lower():
        kept = unverified(dest)
        dest.replace(kept)
        raise ChecksumError(
            f"checksum mismatch for the essays: expected sha256 {sha256}, got {entry['sha256']} "
            f"(the file is kept for inspection at {kept})"
        )
    return entry


def local_path(source: str) -> Path | None:
    """The file a source names on this machine (not a URL, a fixture or the essays), else None."""
    if source.startswith(("http://", "https://", FIXTURE_PREFIX, ESSAYS_PREFIX)):
        return None
    return Path(source)


def _open_source(source: str, headers: dict[str, str]) -> Callable[[BinaryIO], None]:
    """A function that writes the bytes of `source` to a binary file object (and, for a
    Hugging Face download, the commit it served into `headers`)."""
    if source.startswith(("http://", "https://")):
        return lambda out: _download(source, out, headers)
    path = fixture_path(source) if source.startswith(FIXTURE_PREFIX) else Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"source {source}: no such file ({path})")

    def copy(out: BinaryIO) -> None:
        with path.open("rb") as f:
            shutil.copyfileobj(f, out, _CHUNK)

    return copy


def _download(url: str, out: BinaryIO, headers: dict[str, str]) -> None:
    request = urllib.request.Request(url, headers={"User-Agent": "memrepro"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            if (commit := response.headers.get(HUB_COMMIT_HEADER)) is not None:
                headers[HUB_COMMIT_HEADER] = commit  # header names are case-insensitive
            total = int(response.headers.get("Content-Length") or 0) or None
            name = url.rsplit("/", 1)[-1]
            with tqdm(total=total, unit="B", unit_scale=True, desc=name, mininterval=1.0) as bar:
                while chunk := response.read(_CHUNK):
                    out.write(chunk)
                    bar.update(len(chunk))
    except urllib.error.URLError as e:
        raise RuntimeError(f"download of {url} failed: {e}") from e


def fixture_path(source: str) -> Path:
    """The packaged file named by `fixture:NAME` (or a bare NAME)."""
    name = source.removeprefix(FIXTURE_PREFIX)
    root = resources.files("memrepro") / "fixtures"
    path = Path(str(root / name))
    if not name or not path.is_file():
        available = ", ".join(sorted(p.name for p in _fixture_files()))
        raise FileNotFoundError(f"no packaged fixture {name!r}; available: {available}")
    return path


def _fixture_files() -> list[Path]:
    root = Path(str(resources.files("memrepro") / "fixtures"))
    return sorted(p for p in root.iterdir() if p.is_file() and not p.name.startswith("."))


def fixture_corpus() -> list[str]:
    """Every text of the packaged fixtures, to train the tiny model's tokenizer on.

    Walks all packaged .json/.jsonl/.txt fixtures (sorted by name) and collects their string
    values (paragraphs, titles, questions, answers, ...), skipping id fields; HotpotQA paragraphs
    ([title, [sentences]]) are taken whole, as the pipeline renders them. Duplicates are dropped,
    first occurrence kept, so the result is deterministic for a given package.
    """
    texts: dict[str, None] = {}
    for path in _fixture_files():
        if path.suffix == ".txt":
            texts[path.read_text(encoding="utf-8")] = None
        elif path.suffix == ".json":
            texts.update(dict.fromkeys(_strings(json.loads(path.read_text(encoding="utf-8")))))
        elif path.suffix == ".jsonl":
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    texts.update(dict.fromkeys(_strings(json.loads(line))))
    return [t for t in texts if t.strip()]


def _strings(obj: Any) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for key, value in obj.items():
            if key not in _SKIPPED_KEYS:
                yield from _strings(value)
    elif isinstance(obj, list):
        if _is_hotpot_paragraph(obj):
            yield obj[0] + "\n" + "".join(obj[1])
            return
        for item in obj:
            yield from _strings(item)


def _is_hotpot_paragraph(obj: list) -> bool:
    return (
        len(obj) == 2
        and isinstance(obj[0], str)
        and isinstance(obj[1], list)
        and all(isinstance(s, str) for s in obj[1])
    )
