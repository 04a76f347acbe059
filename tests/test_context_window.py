"""Long contexts cut to a model's window (the long-context baselines): only about the window's
worth of text reaches the tokenizer, and the cut text is exactly what tokenizing the whole
context, slicing its ids and decoding them gives."""

from __future__ import annotations

import pytest

from memrepro.agents.chunking import (
    PIECE_CHARS,
    center_truncate,
    newline_pieces,
    text_tokens,
    window_ids,
)
from memrepro.baselines.context_qa import tail
from memrepro.baselines.longcontext import middle_truncate


@pytest.fixture(scope="module")
def tokenizer():
    """The tiny model's byte-level BPE: Qwen2's normaliser and pre-tokeniser."""
    from memrepro.data.sources import fixture_corpus
    from memrepro.models.tiny import build_tokenizer

    return build_tokenizer(fixture_corpus(), 2048, 1 << 30)


class Recording:
    """The tiny tokenizer, with the special tokens a BOS- (or EOS-) adding tokenizer puts around
    a text when asked to, recording the length of every text it is given."""

    def __init__(self, inner, prefix=(), suffix=()) -> None:
        self.inner, self.prefix, self.suffix = inner, list(prefix), list(suffix)
        self.lengths: list[int] = []

    def encode(self, text, add_special_tokens=True):
        self.lengths.append(len(text))
        ids = self.inner.encode(text, add_special_tokens=False)
        return [*self.prefix, *ids, *self.suffix] if add_special_tokens else ids

    def decode(self, ids, skip_special_tokens=False):
        return self.inner.decode(ids, skip_special_tokens=skip_special_tokens)


def document(i: int) -> str:
    """Line breaks of every kind (before a space, a combining accent, a letter), multi-byte
    characters, rare words the tiny vocabulary splits into several tokens."""
    return (
        f"Document {i}:\nThe river Vell runs {i} miles.  It floods\n in spring;\n"
        f"\u0301naïve cafés by 東京 — 🚣 ünïcödé, Zwölf Boxkämpfer.\n\n"
    )


def context(chars: int) -> str:
    return "".join(document(i) for i in range(chars // len(document(0)) + 1))


def cut_as_before(tokenizer, text: str, ids: list, max_tokens: int, middle: bool) -> str:
    """What the whole text's `ids` give: middle_truncate's halves (ids with the tokenizer's
    special tokens, skipped when decoding) or tail's last tokens; the text if it fits."""
    if len(ids) <= max_tokens:
        return text
    if middle:
        return tokenizer.decode(center_truncate(ids, max_tokens), skip_special_tokens=True)
    return tokenizer.decode(ids[-max_tokens:])


@pytest.fixture(scope="module")
def large(tokenizer):
    """A 1 MB context and its whole tokenization (the reference, computed once)."""
    text = context(16 * PIECE_CHARS)
    return text, tokenizer.encode(text, add_special_tokens=False)


@pytest.mark.parametrize("cap", [1000, 60_000])
def test_a_large_context_reaches_the_tokenizer_only_as_far_as_the_window(tokenizer, large, cap):
    text, ids = large
    recording = Recording(tokenizer, prefix=[tokenizer.pad_token_id])  # a BOS-like special
    middle = middle_truncate(recording, text, cap)
    assert middle == cut_as_before(tokenizer, text, [tokenizer.pad_token_id, *ids], cap, True)
    assert max(recording.lengths) <= PIECE_CHARS
    # the window's own text, and at most a piece more at either end
    assert sum(recording.lengths) <= len(middle) + 2 * PIECE_CHARS + 8 < len(text) / 2

    recording.lengths.clear()
    split = text.index("\n\n", 1000) + 2  # parts joined by blank lines: the same text
    kept = tail(recording, [text[: split - 2], text[split:]], cap)
    assert kept == cut_as_before(tokenizer, text, ids, cap, False)
    assert max(recording.lengths) <= PIECE_CHARS
    assert sum(recording.lengths) <= len(kept) + PIECE_CHARS + 8 < len(text) / 2


def test_a_large_context_is_counted_piece_by_piece(tokenizer, large):
    """The rows' `num_tokens` (own data, LongBench): the whole text's count, one piece at a
    time."""
    text, ids = large
    recording = Recording(tokenizer)
    assert text_tokens(recording, text) == len(ids)
    assert max(recording.lengths) <= PIECE_CHARS and sum(recording.lengths) == len(text)
    assert text_tokens(tokenizer, "") == 0


def sliced(tokenizer, text: str, head: int, tail: int, add_special_tokens: bool):
    """The window of the whole text's ids: all of them, or the first `head` and last `tail`."""
    ids = tokenizer.encode(text, add_special_tokens=add_special_tokens)
    if len(ids) <= head + tail:
        return ids, False
    return ids[:head] + ids[len(ids) - tail :], True


TEXT = context(3000)
MAX_CHARS = 120  # ~40 pieces of TEXT, cut after newlines


def windows(n_tokens: int) -> list[tuple[int, int]]:
    """(head, tail) windows: tiny, at the text's size, one under and over it, far over it; a
    middle truncation's halves and a tail's."""
    caps = [1, 2, 3, 7, 50, 333, n_tokens // 2, n_tokens - 1, n_tokens, n_tokens + 1]
    caps.append(10 * n_tokens)
    return [(cap // 2, cap - cap // 2) for cap in caps] + [(0, cap) for cap in caps] + [(5, 0)]


@pytest.mark.parametrize("special", ["none", "bos", "eos"])
def test_window_ids_equal_the_whole_texts_sliced_ids(tokenizer, special):
    wrapped = Recording(
        tokenizer,
        prefix=[tokenizer.pad_token_id] if special == "bos" else [],
        suffix=[tokenizer.eos_token_id] if special == "eos" else [],
    )
    assert len(list(newline_pieces(TEXT, MAX_CHARS))) > 20
    whole = tokenizer.encode(TEXT, add_special_tokens=False)
    for head, tail_ in windows(len(whole)):
        for marked in (False, True):
            got = window_ids(
                wrapped, TEXT, head, tail_, add_special_tokens=marked, max_chars=MAX_CHARS
            )
            assert got == sliced(wrapped, TEXT, head, tail_, marked), (head, tail_, marked)


def test_window_ids_of_short_and_empty_texts_and_of_texts_without_cuts(tokenizer):
    texts = ["", "a", "Zwölf Boxkämpfer\n\nDocument 1:\n🚣", "x y " * 100]
    texts.append(TEXT.replace("\n", " "))
    for text in texts:
        for head, tail_ in [(0, 1), (1, 1), (3, 4), (0, 1000), (600, 600)]:
            got = window_ids(tokenizer, text, head, tail_, max_chars=MAX_CHARS)
            assert got == sliced(tokenizer, text, head, tail_, False)
    with pytest.raises(ValueError, match="head and tail"):
        window_ids(tokenizer, "a", -1, 2)


def test_a_stretch_without_cuts_is_one_piece_up_to_the_nearest_cut(tokenizer):
    stretch = "x y " * 300  # 1200 characters without a line break
    base = context(20_000)
    text = base[:1000] + stretch + base[1000:-1000] + stretch + base[-1000:]
    recording = Recording(tokenizer)
    for head, tail_ in [(800, 800), (0, 800), (800, 0)]:
        recording.lengths.clear()
        got = window_ids(recording, text, head, tail_, max_chars=MAX_CHARS)
        assert got == sliced(tokenizer, text, head, tail_, False)
        assert len(stretch) < max(recording.lengths) < len(stretch) + 2 * MAX_CHARS
        assert sum(recording.lengths) < len(text) / 2


def test_the_cut_text_equals_the_whole_texts_cut_text(tokenizer):
    """middle_truncate and tail over a text of several real pieces: the same text as before,
    for windows ending inside a word and inside a multi-byte character's bytes."""
    text = context(5 * PIECE_CHARS)
    ids = tokenizer.encode(text, add_special_tokens=False)
    caps = [1, 2, 301, 123_457, len(ids) - 1, len(ids), len(ids) + 1, *range(4001, 4041, 3)]
    heads = set()
    for cap in caps:
        middle = middle_truncate(tokenizer, text, cap)
        assert middle == cut_as_before(tokenizer, text, ids, cap, True), cap
        assert tail(tokenizer, [text], cap) == cut_as_before(tokenizer, text, ids, cap, False)
        head = tokenizer.decode(ids[: cap // 2])
        heads.add("word" if head[-1:].isalpha() and text[len(head)].isalpha() else head[-1:])
    assert {"word", "\ufffd"} <= heads  # some windows end inside a word, some inside a byte run
    assert middle_truncate(tokenizer, text, len(ids)) is text  # exactly at the cap: untouched
