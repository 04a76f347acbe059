"""Token-space chunking of (possibly huge, streamed) contexts with the model's own tokenizer."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

PIECE_CHARS = 1 << 16  # long texts are tokenized in pieces of about this many characters


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


def window_ids(
    tokenizer: Any,
    text: str,
    head: int,
    tail: int,
    *,
    add_special_tokens: bool = False,
    max_chars: int = PIECE_CHARS,
) -> tuple[list[int], bool]:
    """The ids of `text` and False if it has at most `head` + `tail` of them, else its first
    `head` and last `tail` ids and True: what slicing the whole text's ids gives (special tokens
    included with `add_special_tokens`), with only about the window's worth of text tokenized.

    The text is tokenized from the start, in pieces of at most ~max_chars cut where
    `newline_pieces` cuts, until `head` ids are in, then from the end backwards in pieces cut
    the same way until `tail` ids are in. Every cut lies right after a run of newlines that a
    non-space character follows, where Qwen2's pre-tokenizer always ends a pre-token and BPE
    never merges across one: the pieces' ids are the whole text's ids, piece by piece. So both
    ends are exactly the whole tokenization's ends, not merely up to a token at the cut, and the
    window's own cut is a slice of those same ids, as upstream slices them. Text left between
    the two scans holds at least one more token: the text is over the window. Where the scans
    meet, their ids are the whole text's. Memory: the ids of about head + tail tokens and one
    piece more at each end, however long the text. Where max_chars of text hold no such cut,
    the piece runs to the nearest one (a text without line breaks is tokenized whole, as by
    `newline_pieces`).
    """
    if head < 0 or tail < 0:
        raise ValueError(f"head and tail must be >= 0, got {head}, {tail}")
    prefix, suffix = _special_ids(tokenizer) if add_special_tokens else ([], [])
    front = prefix
    start = 0
    for cut in _cuts_forward(text, max_chars):
        if len(front) >= head:
            break
        front += tokenizer.encode(text[start:cut], add_special_tokens=False)
        start = cut
    back_pieces = [suffix]
    back_count = len(suffix)
    end = len(text)
    for cut in _cuts_backward(text, start, max_chars):
        if back_count >= tail:
            break
        back_pieces.append(tokenizer.encode(text[cut:end], add_special_tokens=False))
        back_count += len(back_pieces[-1])
        end = cut
    back = [i for ids in reversed(back_pieces) for i in ids]
    if end > start:  # text between the scans: over the window
        return front[:head] + back[len(back) - tail :], True
    ids = front + back  # the scans met: the whole text's ids
    if len(ids) <= head + tail:
        return ids, False
    return ids[:head] + ids[len(ids) - tail :], True


def _cuts_forward(text: str, max_chars: int) -> Iterator[int]:
    """Where `text`'s pieces end, from the start: `newline_pieces`' cuts, pieces of at most
    max_chars (up to the nearest cut beyond where a window holds none)."""
    start = 0
    while len(text) - start > max_chars:
        cut = _cut_after_newlines(text, start + max_chars // 2, start + max_chars)
        cut = cut or _next_cut_after_newlines(text, start + max_chars)
        if cut is None:
            break
        yield cut
        start = cut
    if start < len(text):
        yield len(text)


def _cuts_backward(text: str, start: int, max_chars: int) -> Iterator[int]:
    """Where `text[start:]`'s pieces begin, from the end backwards: cuts as `newline_pieces`'
    (pieces of at most max_chars, up to the nearest cut below where a window holds none)."""
    end = len(text)
    while end - start > max_chars:
        cut = _cut_after_newlines(text, start, end - max_chars // 2)
        if cut is None:
            break
        yield cut
        end = cut
    if end > start:
        yield start


def _special_ids(tokenizer: Any) -> tuple[list[int], list[int]]:
    """The special ids the tokenizer puts before and after a text (a BOS, an EOS)."""
    plain = tokenizer.encode("a", add_special_tokens=False)
    marked = tokenizer.encode("a", add_special_tokens=True)
    for k in range(len(marked) - len(plain) + 1):
        if marked[k : k + len(plain)] == plain:
            return marked[:k], marked[k + len(plain) :]
    raise ValueError(f"the tokenizer's special tokens do not wrap a text: {marked} for {plain}")


def text_tokens(tokenizer: Any, text: str) -> int:
    """The token count (no special tokens) of one text of any length: the sum over its
    `newline_pieces`, which tokenize to the whole text's ids, so memory is one piece's."""
    return sum(len(tokenizer.encode(p, add_special_tokens=False)) for p in newline_pieces(text))


def _cut_after_newlines(text: str, low: int, high: int) -> int | None:
    end = high
    while (newline := text.rfind("\n", low, end)) >= 0:
        cut = newline + 1
        if cut < len(text) and not text[cut].isspace():
            return cut
        end = newline
    return None


def _next_cut_after_newlines(text: str, low: int) -> int | None:
    """The first cut of `_cut_after_newlines`' kind at or after `low + 1`."""
    while (newline := text.find("\n", low)) >= 0:
        cut = newline + 1
        if cut < len(text) and not text[cut].isspace():
            return cut
        low = cut
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
