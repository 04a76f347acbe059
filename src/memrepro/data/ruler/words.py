"""The word lists RULER draws keys and values from: wonderwords' nouns and adjectives, and their
sorted "adjective-noun" pairs."""

from __future__ import annotations

import bisect
import operator
import random
import uuid
from array import array
from collections.abc import Sequence
from functools import cache, lru_cache
from importlib import resources


@cache
def wonderwords_list(name: str) -> tuple[str, ...]:
    """A word list shipped with the `wonderwords` package (pin 3.0.1 for RULER's exact lists)."""
    try:
        root = resources.files("wonderwords.assets")
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError("RULER's word lists need the `wonderwords` package") from e
    text = (root / f"{name}list.txt").read_text(encoding="utf-8")
    return tuple(line.rstrip() for line in text.splitlines(keepends=True))


class _PairWords(Sequence[str]):
    """RULER's word keys by index: ``sorted(set(f"{adj}-{noun}" for adj in adjs for noun in
    nouns))`` (niah.py:90-94 in the fork, niah.py:96-128 at HEAD), without its 6.2M strings.

    Every key starts with its adjective + "-". Group each adjective under its *root*, the
    shortest adjective r with ``adj.startswith(r + "-")`` (itself if none; "old-fashioned" goes
    under "old"). Two roots' ``root + "-"`` are not prefixes of one another, so they differ
    before either ends and all keys of one group sort on the same side of all keys of another:
    the sorted set is the groups one after the other in ``root + "-"`` order. A group of one
    adjective is that adjective before each noun, nouns in sorted order. Keys of a larger group
    interleave (every "old-fashioned-X" sorts among the "old-Y"), and two pairs may join to the
    same string, so such a group is joined, de-duplicated and sorted once and kept as an array
    of (adjective, noun) codes. For wonderwords 3.0.1: 6,171,620 keys (no two pairs alike), 5
    groups of two adjectives, 67,820 codes (0.5 MB), built in about 20 ms; sorting the 6.2M
    strings as RULER does takes about 6 s and 750 MB.
    """

    def __init__(self, adjectives: Sequence[str], nouns: Sequence[str]) -> None:
        self._adjs = sorted(set(adjectives))
        self._nouns = sorted(set(nouns))
        known = set(self._adjs)
        groups: dict[str, list[int]] = {}
        for i, adj in enumerate(self._adjs):
            cuts = (j for j, ch in enumerate(adj) if ch == "-" and adj[:j] in known)
            groups.setdefault(adj[: next(cuts, len(adj))], []).append(i)
        self._starts: list[int] = []  # the first index of each group
        self._groups: list[int | array] = []  # its one adjective, or its sorted pair codes
        total = 0
        for root in sorted(groups, key=lambda r: r + "-"):
            members = groups[root]
            self._starts.append(total)
            if len(members) == 1:
                self._groups.append(members[0])
                total += len(self._nouns)
                continue
            codes = {
                f"{self._adjs[a]}-{noun}": a * len(self._nouns) + n
                for a in members  # pairs that join to the same key keep one code (same string)
                for n, noun in enumerate(self._nouns)
            }
            self._groups.append(array("q", (codes[key] for key in sorted(codes))))
            total += len(codes)
        self._len = total

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, i: int) -> str:  # type: ignore[override]
        i = operator.index(i)
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError(i)
        g = bisect.bisect_right(self._starts, i) - 1
        group, offset = self._groups[g], i - self._starts[g]
        if isinstance(group, int):
            return f"{self._adjs[group]}-{self._nouns[offset]}"
        adj, noun = divmod(group[offset], len(self._nouns))
        return f"{self._adjs[adj]}-{self._nouns[noun]}"


@lru_cache(maxsize=1)
def _pair_words() -> _PairWords:
    return _PairWords(wonderwords_list("adjective"), wonderwords_list("noun"))


def random_value(kind: str, rng: random.Random) -> str:
    if kind == "numbers":
        return str(rng.randint(10**6, 10**7 - 1))
    if kind == "words":
        return rng.choice(_pair_words())
    if kind == "uuids":
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    raise ValueError(f"unknown needle type {kind!r} (numbers, words, uuids)")


def random_letters(rng: random.Random, k: int, alphabet: str) -> str:
    return "".join(rng.choices(alphabet, k=k))
