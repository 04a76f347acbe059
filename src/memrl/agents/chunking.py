"""Token-space chunking of (possibly huge, streamed) contexts with the model's own tokenizer."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

PIECE_CHARS = 1 << 16  # long texts are tokenized in pieces of about this many characters
COUNT_BATCH = 4096  # texts per batched tokenizer call


def token_chunks(tokenizer: Any, pieces: Iterable[str], chunk_tokens: int) -> Iterator[str]:
    """Yield consecutive `chunk_tokens`-token slices of the concatenated pieces, decoded to text.

    This is how the official evaluator cuts a context (tokenize the whole text, slice, decode),
    done in `newline_pieces` of the concatenation, which give the same ids with Qwen's
    pre-tokenizer: a context streamed as many pieces (documents rebuilt from ids) is chunked
    exactly as its text would be, and memory stays flat however long it is.
    """
    if chunk_tokens <= 0:
        raise ValueError(f"chunk_tokens must be positive, got {chunk_tokens}")
    buffer: list[int] = []
    for piece in newline_pieces(pieces):
        buffer.extend(tokenizer.encode(piece, add_special_tokens=False))
        while len(buffer) >= chunk_tokens:
            yield tokenizer.decode(buffer[:chunk_tokens])
            del buffer[:chunk_tokens]
    if buffer:
        yield tokenizer.decode(buffer)


def newline_pieces(texts: str | Iterable[str], max_chars: int = PIECE_CHARS) -> Iterator[str]:
    """Re-cut a text, or the concatenation of a stream of texts, into pieces of at most
    ~max_chars, each cut right after a run of newlines that a non-space character follows.

    Qwen2's pre-tokenizer (GPT-4 style: newline runs end a pre-token, and a letter, digit or
    punctuation mark starts one) never merges tokens across such a point, so the pieces tokenize
    to exactly the ids of the whole text, while the ids of a 3.5M-token context never exist at
    once. Where a window holds no such point, everything pending becomes one piece.
    """
    parts: list[str] = []
    size = 0
    for text in [texts] if isinstance(texts, str) else texts:
        parts.append(text)
        size += len(text)
        if size <= max_chars:
            continue
        pending = "".join(parts)
        start = 0
        while len(pending) - start > max_chars:
            cut = _cut_after_newlines(pending, start + max_chars // 2, start + max_chars)
            if cut is None:
                break
            yield pending[start:cut]
            start = cut
        rest = pending[start:]
        if len(rest) > max_chars:  # no safe cut in the window
            yield rest
            rest = ""
        parts, size = [rest], len(rest)
    tail = "".join(parts)
    if tail:
        yield tail


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
