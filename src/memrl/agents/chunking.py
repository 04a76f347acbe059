"""Token-space chunking of (possibly huge, streamed) contexts with the model's own tokenizer."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

PIECE_CHARS = 1 << 16  # long texts are tokenized in pieces of about this many characters


def token_chunks(tokenizer: Any, pieces: Iterable[str], chunk_tokens: int) -> Iterator[str]:
    """Yield consecutive `chunk_tokens`-token slices of the concatenated pieces, decoded to text.

    A context given as one piece is cut as the official evaluator cuts it (tokenize the whole
    text, slice, decode): a long piece is tokenized in `newline_pieces`, which give the same ids
    with Qwen's pre-tokenizer. Streaming many pieces (documents rebuilt from ids) tokenizes each
    piece on its own, so memory stays flat however long the context is; token boundaries can then
    differ from whole-text tokenization at piece joins only.
    """
    if chunk_tokens <= 0:
        raise ValueError(f"chunk_tokens must be positive, got {chunk_tokens}")
    buffer: list[int] = []
    for piece in (part for text in pieces for part in newline_pieces(text)):
        buffer.extend(tokenizer.encode(piece, add_special_tokens=False))
        while len(buffer) >= chunk_tokens:
            yield tokenizer.decode(buffer[:chunk_tokens])
            del buffer[:chunk_tokens]
    if buffer:
        yield tokenizer.decode(buffer)


def newline_pieces(text: str, max_chars: int = PIECE_CHARS) -> Iterator[str]:
    """Cut a long text into pieces of at most ~max_chars, each cut right after a run of newlines
    that a non-space character follows.

    Qwen2's pre-tokenizer (GPT-4 style: newline runs end a pre-token, and a letter, digit or
    punctuation mark starts one) never merges tokens across such a point, so the pieces tokenize
    to exactly the ids of the whole text, while the ids of a 3.5M-token context never exist at
    once. Text without such a point within a window stays in one piece.
    """
    start = 0
    while len(text) - start > max_chars:
        cut = _cut_after_newlines(text, start + max_chars // 2, start + max_chars)
        if cut is None:
            break
        yield text[start:cut]
        start = cut
    yield text[start:]


def _cut_after_newlines(text: str, low: int, high: int) -> int | None:
    end = high
    while (newline := text.rfind("\n", low, end)) >= 0:
        cut = newline + 1
        if cut < len(text) and not text[cut].isspace():
            return cut
        end = newline
    return None


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
