"""Lexical retrieval: the `Retriever` protocol and BM25 over the units of one context, shared by
Mem-α's memory (its semantic and episodic searches) and the RAG baselines (memrepro.baselines.rag,
which adds the dense retrievers)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np


class Retriever(Protocol):
    """Ranks units for a query: the indices of the k best, best first (k > len(units): all)."""

    def top_k(self, query: str, units: Sequence[str], k: int) -> list[int]: ...


def check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise ValueError(f"k must be a positive integer, got {k!r}")


def best(scores: Any, k: int) -> list[int]:
    """Indices of the k highest scores; a stable sort breaks ties by unit index."""
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    return [int(i) for i in order[:k]]


def words(text: str) -> list[str]:
    """BM25 tokens: lower-cased runs of Unicode word characters (letters, digits, underscore);
    no stemming, no stop-word list (BM25's idf discounts common words)."""
    return re.findall(r"\w+", text.lower())


class BM25Retriever:
    """Okapi BM25 over the units of one context (rank-bm25 0.2.2 `BM25Okapi`, its defaults)."""

    def __init__(self, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25) -> None:
        self.k1, self.b, self.epsilon = k1, b, epsilon

    def top_k(self, query: str, units: Sequence[str], k: int) -> list[int]:
        check_k(k)
        corpus = [words(unit) for unit in units]
        if not any(corpus):  # nothing to match; BM25Okapi would divide by a zero mean length
            return list(range(min(k, len(units))))
        try:
            from rank_bm25 import BM25Okapi
        except ImportError as exc:
            raise ImportError("the bm25 retriever needs the `rank-bm25` package") from exc
        index = BM25Okapi(corpus, k1=self.k1, b=self.b, epsilon=self.epsilon)
        return best(index.get_scores(words(query)), k)
