"""Model builders for offline runs (a tiny randomly initialised Qwen2 and its tokenizer), and
loading that names what it could not load."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from memrepro.data.io import staging_directory

T = TypeVar("T")

TINY_CONTEXT = 4096  # a tiny model's max_position_embeddings unless the config sets it


@contextlib.contextmanager
def model_directory(out: Path) -> Iterator[Path]:
    """A model directory written whole or not at all: the caller fills the staging folder this
    yields beside `out`, which then replaces `out` (an existing one is swapped out first and
    deleted after the rename); on an error nothing changes."""
    tmp = staging_directory(out)
    try:
        yield tmp
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            out.rename(old / out.name)
            tmp.rename(out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def load_tokenizer(path: str | os.PathLike[str]) -> Any:
    """A Hugging Face tokenizer from a local directory, failing naming it (`load_named`)."""
    from transformers import AutoTokenizer

    return load_named("tokenizer", path, AutoTokenizer.from_pretrained)


def load_counting_tokenizer(path: str | os.PathLike[str]) -> Any:
    """For jobs that only count tokens: the model's `tokenizer.json` through `tokenizers` (the
    encoder a transformers fast tokenizer wraps: the same ids, without importing transformers)."""
    path = Path(path)
    if not (path / "tokenizer.json").is_file():
        return load_tokenizer(path)
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(path / "tokenizer.json"))


def load_named(
    what: str, path: str | os.PathLike[str], load: Callable[..., T], **options: Any
) -> T:
    """`load(str(path), **options)` (a `from_pretrained`); a damaged file (a truncated
    tokenizer.json or model.safetensors, whose errors name no file) fails naming the directory."""
    try:
        return load(str(path), **options)
    except Exception as e:  # tokenizers and safetensors raise their own kinds, naming nothing
        raise ValueError(f"{path}: cannot load the {what} ({type(e).__name__}: {e})") from e
