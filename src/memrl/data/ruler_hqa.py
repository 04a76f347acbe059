"""RULER-HotpotQA as MemAgent's official code builds it (memagent_official.md §1.2–1.4).

A sample for question q at N documents: q's own 10 HotpotQA paragraphs followed by N - 10 other
pool documents drawn with `rng.sample`, the list then shuffled by a *fresh* `random.Random(4)`.
Because that shuffle is the same permutation for every sample of a given N, the question's
paragraphs always land in the same slots (N=200: documents 7, 10, 17, 81, 88, 96, 109, 154, 177,
191). Documents are rendered "Document {i}:\\n{doc}" (i from 1) and joined with "\\n\\n".

When N >= the pool size the official code takes the whole pool in pool (sorted) order, not the
question's documents first, so the gold slots then depend on the question's doc ids. We do the
same. (RULER's code shuffles its global pool list in place there, so later samples of the same
worker see an already shuffled pool; that accident is not reproduced.)
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

DATA_SOURCE = "ruler_hqa"  # rows' data_source in training (official code: "hotpotqa")
SHUFFLE_SEED = 4  # the official constant: random.Random(4).shuffle for every sample
DEFAULT_SEED = 42  # the official random.seed(42) of processing.py / different_docs_eval.py
STORE_IDS_ABOVE = 10000  # different_docs_eval.py stores doc ids instead of text above this N


class Tokenizer(Protocol):
    def encode(self, text: str, add_special_tokens: bool = ...) -> list[int]: ...


class _Complement(Sequence[int]):
    """range(size) minus `excluded`, indexable without materialising it.

    `rng.sample` over this view draws exactly what it draws over the equivalent list (it only uses
    len(), indexing and, for small populations, iteration), which keeps the official draws while
    avoiding an O(pool) list per sample (the train pool has hundreds of thousands of documents).
    """

    def __init__(self, size: int, excluded: Iterable[int]) -> None:
        self._excluded = sorted(set(excluded))
        self._len = size - len(self._excluded)

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[int]:  # rng.sample copies small populations with list()
        excluded = set(self._excluded)
        return (i for i in range(self._len + len(excluded)) if i not in excluded)

    def __getitem__(self, j: int) -> int:  # type: ignore[override]
        if not 0 <= j < self._len:
            raise IndexError(j)
        for e in self._excluded:
            if e > j:
                break
            j += 1
        return j


def sample_doc_ids(
    question_doc_ids: Sequence[int], pool_size: int, n_docs: int, rng: random.Random
) -> list[int]:
    """The shuffled doc ids of one sample (see the module docstring)."""
    if n_docs < len(question_doc_ids):
        raise ValueError(f"n_docs={n_docs} is below the question's {len(question_doc_ids)} docs")
    if n_docs < pool_size:
        others = _Complement(pool_size, question_doc_ids)
        extra = rng.sample(others, n_docs - len(question_doc_ids))
        doc_ids = list(question_doc_ids) + extra
    else:
        doc_ids = list(range(pool_size))
    random.Random(SHUFFLE_SEED).shuffle(doc_ids)
    return doc_ids


def _header(i: int) -> str:
    return f"Document {i}:\n"


def iter_context_pieces(doc_ids: Sequence[int], pool: Sequence[str]) -> Iterator[str]:
    """The rendered context in pieces (a header, then a document, alternately).

    "".join of the pieces equals `render_context`; use this for contexts too large to hold.
    """
    for i, doc_id in enumerate(doc_ids, start=1):
        yield ("\n\n" if i > 1 else "") + _header(i)
        yield pool[doc_id]


def render_context(doc_ids: Sequence[int], pool: Sequence[str]) -> str:
    return "\n\n".join(_header(i) + pool[d] for i, d in enumerate(doc_ids, start=1))


def context_pieces(row: dict, pool: Sequence[str]) -> Iterable[str]:
    """The context of a built row: its stored text, or the pieces rebuilt from its doc ids."""
    if "context" in row:
        return [row["context"]]
    return iter_context_pieces(row["doc_ids"], pool)


class _TokenCounter:
    """Approximate token count of an id-list context: the sum of its pieces' counts.

    Tokenising piece by piece ignores merges across piece boundaries (a few tokens per document
    at most: pieces split at newlines), which is accurate enough for reporting the length of
    multi-million-token contexts that are never materialised. Counts are cached per doc id and
    per header position.
    """

    def __init__(self, tokenizer: Tokenizer, pool: Sequence[str]) -> None:
        self._tokenizer = tokenizer
        self._pool = pool
        self._docs: dict[int, int] = {}
        self._headers: dict[int, int] = {}

    def _count(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False))

    def __call__(self, doc_ids: Sequence[int]) -> int:
        total = 0
        for i, doc_id in enumerate(doc_ids, start=1):
            if i not in self._headers:
                self._headers[i] = self._count(("\n\n" if i > 1 else "") + _header(i))
            if doc_id not in self._docs:
                self._docs[doc_id] = self._count(self._pool[doc_id])
            total += self._headers[i] + self._docs[doc_id]
        return total


def build_split(
    questions: Sequence[dict],
    pool: Sequence[str],
    n_docs: int,
    *,
    limit: int | None,
    rng: random.Random,
    tokenizer: Tokenizer | None = None,
    store_ids_above: int = STORE_IDS_ABOVE,
) -> list[dict]:
    """Rows {index, input, answers, num_docs, context | doc_ids, num_tokens} for the first
    `limit` questions (all when None), from `hotpotqa.question_records`.

    RNG: the official code seeds the global `random` with 42 and shares it sequentially across
    samples, but runs them in a process pool whose forked workers each start from the same state,
    which makes its draws scheduling-dependent and correlated across workers. We consume one
    `random.Random(seed)` in question order instead: reproducible, and identical to the official
    code run with a single worker (pass `random.Random(42)`).

    Above `store_ids_above` documents the row holds `doc_ids` (the shuffled list) instead of the
    text, as the official files do; rebuild it with `context_pieces`. `num_tokens` is exact for
    text rows and the per-piece approximation of `_TokenCounter` for id rows (None without a
    tokenizer); `num_docs` is the requested N, as in the official rows.
    """
    counter = _TokenCounter(tokenizer, pool) if tokenizer is not None else None
    selected = questions if limit is None else questions[:limit]
    rows = []
    for q in selected:
        doc_ids = sample_doc_ids(q["doc_ids"], len(pool), n_docs, rng)
        row: dict[str, Any] = {
            "index": q["index"],
            "input": q["question"],
            "answers": list(q["answers"]),
            "num_docs": n_docs,
        }
        if n_docs > store_ids_above:
            row["doc_ids"] = doc_ids
            row["num_tokens"] = counter(doc_ids) if counter else None
        else:
            context = render_context(doc_ids, pool)
            row["context"] = context
            row["num_tokens"] = (
                len(tokenizer.encode(context, add_special_tokens=False)) if tokenizer else None
            )
        rows.append(row)
    return rows


def build_eval_sets(
    questions: Sequence[dict],
    pool: Sequence[str],
    n_docs_list: Iterable[int],
    indices: Sequence[int],
    *,
    seed: int = DEFAULT_SEED,
    tokenizer: Tokenizer | None = None,
    store_ids_above: int = STORE_IDS_ABOVE,
) -> dict[int, list[dict]]:
    """The RULER-HQA evaluation sets: for every N, rows for the same question `indices`.

    As in different_docs_eval.py, every N restarts from a fresh `Random(seed)` and the samples
    are drawn in the order of `indices` (the filtered dev questions of eval_200).
    """
    by_index = {q["index"]: q for q in questions}
    missing = [i for i in indices if i not in by_index]
    if missing:
        raise ValueError(f"question indices not in the split: {missing[:10]}")
    selected = [by_index[i] for i in indices]
    return {
        n: build_split(
            selected,
            pool,
            n,
            limit=None,
            rng=random.Random(seed),
            tokenizer=tokenizer,
            store_ids_above=store_ids_above,
        )
        for n in n_docs_list
    }
