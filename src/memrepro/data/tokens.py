"""Counting a tokenizer's tokens over many texts at once (the sets' lengths, the memories'
sizes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

COUNT_BATCH = 4096  # texts per batched tokenizer call


def count_tokens(tokenizer: Any, texts: Sequence[str]) -> list[int]:
    """Token counts (no special tokens) of many texts: batched through a fast tokenizer's Rust
    encoder (a transformers tokenizer's backend, or a `tokenizers.Tokenizer`), which spreads a
    batch over every core; one `encode` per text otherwise."""
    backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
    encode = getattr(backend, "encode_batch_fast", None)
    if encode is None:
        return [len(tokenizer.encode(text, add_special_tokens=False)) for text in texts]
    counts: list[int] = []
    for start in range(0, len(texts), COUNT_BATCH):
        batch = list(texts[start : start + COUNT_BATCH])
        counts += [len(encoding) for encoding in encode(batch, add_special_tokens=False)]
    return counts
