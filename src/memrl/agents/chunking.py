"""Token-space chunking of (possibly huge, streamed) contexts with the model's own tokenizer."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any


def token_chunks(tokenizer: Any, pieces: Iterable[str], chunk_tokens: int) -> Iterator[str]:
    """Yield consecutive `chunk_tokens`-token slices of the concatenated pieces, decoded to text.

    A context given as one piece is cut exactly as the official evaluator cuts it (tokenize the
    whole text, slice, decode). Streaming many pieces (documents rebuilt from ids) tokenizes each
    piece on its own, so memory stays flat however long the context is; token boundaries can then
    differ from whole-text tokenization at piece joins only.
    """
    if chunk_tokens <= 0:
        raise ValueError(f"chunk_tokens must be positive, got {chunk_tokens}")
    buffer: list[int] = []
    for piece in pieces:
        buffer.extend(tokenizer.encode(piece, add_special_tokens=False))
        while len(buffer) >= chunk_tokens:
            yield tokenizer.decode(buffer[:chunk_tokens])
            del buffer[:chunk_tokens]
    if buffer:
        yield tokenizer.decode(buffer)


def truncated_chunks(tokenizer: Any, context: str, chunk_tokens: int, max_chunks: int) -> list[str]:
    """The training loader's chunks: the context tokenized, center-truncated to max_chunks ×
    chunk_tokens (first half + last half), cut into chunk_tokens slices, each decoded."""
    if chunk_tokens <= 0 or max_chunks <= 0:
        raise ValueError(f"chunk_tokens and max_chunks must be > 0: {chunk_tokens}, {max_chunks}")
    ids = center_truncate(
        tokenizer.encode(context, add_special_tokens=False), max_chunks * chunk_tokens
    )
    return [tokenizer.decode(ids[i : i + chunk_tokens]) for i in range(0, len(ids), chunk_tokens)]


def center_truncate(ids: list[int], max_tokens: int) -> list[int]:
    """Keep the first and last max_tokens/2 tokens (the training loader's 'center' truncation)."""
    if len(ids) <= max_tokens:
        return ids
    head = max_tokens // 2
    return ids[:head] + ids[len(ids) - (max_tokens - head) :]
