"""RULER-HotpotQA as MemAgent's official code builds it (MemAgent's official code).

A sample for question q at N documents: q's own 10 HotpotQA paragraphs followed by N - 10 other
pool documents drawn uniformly without replacement, the list then shuffled by a *fresh*
`random.Random(4)`. Because that shuffle is the same permutation for every sample of a given N,
the question's paragraphs always land in the same slots (N=200: documents 7, 10, 17, 81, 88, 96,
109, 154, 177, 191). Documents are rendered "Document {i}:\n{doc}" (i from 1) and joined with
"\n\n".

When N >= the pool size the official code takes the whole pool in pool (sorted) order, not the
question's documents first, so the gold slots then depend on the question's doc ids. We do the
same. (RULER's code shuffles its global pool list in place there, so later samples of the same
worker see an already shuffled pool; that accident is not reproduced.)

The draws themselves differ from the official files by design. The official code calls
`random.sample` on the global `random` seeded 42, from forked process-pool workers that all start
from that state, so which distractors a sample gets depends on worker scheduling: no run, not even
the official one, reproduces the released files. We give every sample its own generator seeded
(seed, N, question index) (`sample_rng`): reproducible, independent of which other questions are
built or in what order, and one vectorised draw per sample instead of N Python-level draws.

Table 4's probe sets reorder these rows: `memrepro.data.hqa_probe`.
"""

from __future__ import annotations

import functools
import operator
import random
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np

from memrepro.data.tokens import count_tokens

DATA_SOURCE = "ruler_hqa"  # rows' data_source in training (official code: "hotpotqa")
SHUFFLE_SEED = 4  # the official constant: random.Random(4).shuffle for every sample
DEFAULT_SEED = 42  # the official random.seed(42) of processing.py / different_docs_eval.py
SEPARATOR = "\n\n"  # between rendered documents
STORE_IDS_ABOVE = 10000  # different_docs_eval.py stores doc ids instead of text above this N


class Tokenizer(Protocol):
    def encode(self, text: str, add_special_tokens: bool = ...) -> list[int]: ...


def sample_rng(seed: int, n_docs: int, index: int) -> np.random.Generator:
    """The generator of one sample: its draws depend on (seed, N, question) alone."""
    return np.random.default_rng([seed, n_docs, index])


def sample_doc_ids(
    question_doc_ids: Sequence[int], pool_size: int, n_docs: int, rng: np.random.Generator
) -> np.ndarray:
    """The shuffled doc ids of one sample (see the module docstring): the question's documents
    and N - 10 distinct others drawn uniformly from the rest of the pool, in shuffle order."""
    if n_docs < len(question_doc_ids):
        raise ValueError(f"n_docs={n_docs} is below the question's {len(question_doc_ids)} docs")
    if n_docs > pool_size:
        raise ValueError(
            f"n_docs={n_docs} exceeds the pool of {pool_size} documents (config key "
            "ruler_hqa.n_docs): a sample cannot hold more documents than there are"
        )
    if n_docs < pool_size:
        own = np.asarray(question_doc_ids, dtype=np.int64)
        excluded = np.unique(own)
        drawn = rng.choice(pool_size - len(excluded), n_docs - len(own), replace=False)
        # the j-th id of the complement: j plus the excluded ids at or below it
        others = drawn + np.searchsorted(excluded - np.arange(len(excluded)), drawn, side="right")
        doc_ids = np.concatenate([own, others])
    else:
        doc_ids = np.arange(pool_size, dtype=np.int64)
    return doc_ids[shuffle_order(len(doc_ids))]


@functools.lru_cache(maxsize=4)
def shuffle_order(n: int) -> np.ndarray:
    """The positions `random.Random(4).shuffle` moves into each slot of any n-element list: its
    swaps depend on n alone, so one shuffle of range(n) serves every sample of that length."""
    order = list(range(n))
    random.Random(SHUFFLE_SEED).shuffle(order)
    result = np.asarray(order, dtype=np.int64)
    result.flags.writeable = False
    return result


HEADER_END = ":\n"  # of a "Document i:" header, whatever i: a document follows it


def _header(i: int) -> str:
    return f"Document {i}{HEADER_END}"


def document_title(doc: str) -> str:
    """A pool document's first line: a HotpotQA paragraph's title."""
    return doc.split("\n", 1)[0]


def document_start(doc: str) -> str:
    """What begins `doc` in a rendered context wherever it sits: its header's end, its title."""
    return HEADER_END + document_title(doc)


def iter_context_pieces(doc_ids: Sequence[int], pool: Sequence[str]) -> Iterator[str]:
    """The rendered context in pieces (a header, then a document, alternately).

    "".join of the pieces equals `render_context`; use this for contexts too large to hold.
    """
    for i, doc_id in enumerate(doc_ids, start=1):
        yield (SEPARATOR if i > 1 else "") + _header(i)
        yield pool[doc_id]


def render_context(doc_ids: Sequence[int], pool: Sequence[str]) -> str:
    docs = map(pool.__getitem__, np.asarray(doc_ids, dtype=np.int64).tolist())
    return SEPARATOR.join(map(operator.add, _headers(len(doc_ids)), docs))


@functools.lru_cache(maxsize=4)
def _headers(n: int) -> tuple[str, ...]:
    return tuple(_header(i) for i in range(1, n + 1))


def context_pieces(row: dict, pool: Sequence[str]) -> Iterable[str]:
    """The context of a built row: its stored text, or the pieces rebuilt from its doc ids."""
    if "context" in row:
        return [row["context"]]
    return iter_context_pieces(row["doc_ids"], pool)


class ContextTokens:
    """Token counts of rendered contexts, from counts of their parts: each document counted once.

    A context "Document 1:\\n{d1}\\n\\nDocument 2:\\n{d2}…" is cut right after its newline runs
    into `Document i:\\n`, `{d}\\n\\n` and the last `{d}`: with Qwen's pre-tokenizer no token spans
    such a cut (`agents.chunking.newline_pieces`), so the parts' counts add up to the count of
    the whole text. A document that is empty or starts with whitespace breaks that (its newline
    run joins the header's); samples holding one are counted whole. `prepare` counts everything
    a set of samples needs in batched tokenizer calls.
    """

    def __init__(
        self, tokenizer: Tokenizer, pool: Sequence[str], doc_tokens: np.ndarray | None = None
    ) -> None:
        """`doc_tokens`: the pool's counts of "{doc}\\n\\n" when known (`DocPool.tokens`)."""
        self._tokenizer = tokenizer
        self._pool = pool
        self._unsafe = np.array([not doc[:1].strip() for doc in pool], dtype=bool)
        self._header_sums = np.zeros(1, dtype=np.int64)  # [n]: tokens of headers 1..n
        self._docs = (  # tokens of "{doc}\\n\\n"
            np.full(len(pool), -1, dtype=np.int64) if doc_tokens is None else doc_tokens.copy()
        )
        self._last_docs = np.full(len(pool), -1, dtype=np.int64)  # tokens of "{doc}"

    def prepare(self, samples: Sequence[Sequence[int]]) -> None:
        samples = [np.asarray(ids, dtype=np.int64) for ids in samples if len(ids)]
        if not samples:
            return
        n_max = max(len(ids) for ids in samples)
        if n_max >= len(self._header_sums):
            numbers = range(len(self._header_sums), n_max + 1)
            counts = np.cumsum(self._count([_header(i) for i in numbers]))
            self._header_sums = np.concatenate([self._header_sums, self._header_sums[-1] + counts])
        self._fill(self._docs, np.concatenate([ids[:-1] for ids in samples]), SEPARATOR)
        self._fill(self._last_docs, np.array([ids[-1] for ids in samples]), "")

    def __call__(self, doc_ids: Sequence[int]) -> int:
        if not len(doc_ids):
            return 0
        ids = np.asarray(doc_ids, dtype=np.int64)
        if self._unsafe[ids].any():
            return self._count(["".join(iter_context_pieces(doc_ids, self._pool))])[0]
        if (self._docs[ids[:-1]] < 0).any() or self._last_docs[ids[-1]] < 0:
            self.prepare([doc_ids])
        return int(
            self._header_sums[len(ids)] + self._docs[ids[:-1]].sum() + self._last_docs[ids[-1]]
        )

    def _fill(self, counts: np.ndarray, doc_ids: np.ndarray, suffix: str) -> None:
        todo = np.unique(doc_ids[counts[doc_ids] < 0])
        counts[todo] = self._count([self._pool[d] + suffix for d in todo.tolist()])

    def _count(self, texts: list[str]) -> list[int]:
        return count_tokens(self._tokenizer, texts)


class DocPool(NamedTuple):
    """A split's document pool with what every eval set needs, built once (`write_pool`): the
    documents in pool order (doc id = position), their "{doc}\\n\\n" token counts, and the
    questions with the ids of their own documents and key-information groups
    (`hotpotqa.question_records`)."""

    docs: list[str]
    tokens: np.ndarray
    questions: list[dict]


POOL_DOC_COLUMNS = ("doc", "tokens")
POOL_QUESTION_COLUMNS = ("index", "question", "answers", "doc_ids")
POOL_OPTIONAL_QUESTION_COLUMNS = ("gold_doc_ids",)  # pools written before the probe lack it


def write_pool(docs_path: Path, questions_path: Path, pool: DocPool) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from memrepro.data.io import atomic_path

    docs = pa.table({"doc": pool.docs, "tokens": pa.array(pool.tokens, pa.int64())})
    questions = pa.Table.from_pylist(pool.questions)
    for table, path in ((docs, docs_path), (questions, questions_path)):
        with atomic_path(path) as tmp:
            pq.write_table(table, tmp)


def read_pool(docs_path: Path, questions_path: Path) -> DocPool:
    from memrepro.data.io import read_parquet

    docs = read_parquet(docs_path, POOL_DOC_COLUMNS)
    questions = read_parquet(questions_path, POOL_QUESTION_COLUMNS)
    optional = [c for c in POOL_OPTIONAL_QUESTION_COLUMNS if c in questions.column_names]
    return DocPool(
        docs=docs["doc"].to_pylist(),
        tokens=np.asarray(docs["tokens"].to_pylist(), dtype=np.int64),  # to_numpy imports pandas
        questions=questions.select([*POOL_QUESTION_COLUMNS, *optional]).to_pylist(),
    )


def build_doc_pool(records: list[dict], tokenizer: Tokenizer) -> DocPool:
    """The pool of HotpotQA `records` with every document counted once, in batches."""
    from memrepro.data.hotpotqa import build_pool, question_records

    docs = build_pool(records)
    tokens = np.asarray(count_tokens(tokenizer, [doc + SEPARATOR for doc in docs]), dtype=np.int64)
    return DocPool(docs, tokens, question_records(records, docs))


def build_split(
    questions: Sequence[dict],
    pool: Sequence[str],
    n_docs: int,
    *,
    limit: int | None,
    seed: int = DEFAULT_SEED,
    tokenizer: Tokenizer | None = None,
    store_ids_above: int = STORE_IDS_ABOVE,
    doc_tokens: np.ndarray | None = None,
) -> list[dict]:
    """Rows {index, input, answers, num_docs, context | doc_ids, num_tokens} for the first
    `limit` questions (all when None), from `hotpotqa.question_records`; each sample drawn by
    `sample_rng(seed, n_docs, index)`.

    Above `store_ids_above` documents the row holds `doc_ids` (the shuffled list) instead of the
    text, as the official files do above 10,000; rebuild it with `context_pieces`. `num_tokens`
    (None without a tokenizer) is the count of the rendered context, from per-document counts
    (`ContextTokens`); `num_docs` is the requested N, as in the official rows.
    """
    selected = questions if limit is None else questions[:limit]
    samples = [
        sample_doc_ids(q["doc_ids"], len(pool), n_docs, sample_rng(seed, n_docs, q["index"]))
        for q in selected
    ]
    counter = ContextTokens(tokenizer, pool, doc_tokens) if tokenizer is not None else None
    if counter is not None:
        counter.prepare(samples)
    rows = []
    for q, doc_ids in zip(selected, samples, strict=True):
        question = {"index": q["index"], "input": q["question"], "answers": q["answers"]}
        rows.append(sample_row(question, n_docs, doc_ids, pool, store_ids_above, counter))
    return rows


def sample_row(
    question: dict,
    n_docs: int,
    doc_ids: Sequence[int],
    pool: Sequence[str],
    store_ids_above: int,
    counter: ContextTokens | None,
) -> dict[str, Any]:
    """One eval/train row {index, input, answers, num_docs, context | doc_ids, num_tokens} of a
    question ({index, input, answers}) at n_docs: the text up to `store_ids_above` documents,
    the doc ids above; `num_tokens` from `counter` (None without one)."""
    row: dict[str, Any] = {
        "index": question["index"],
        "input": question["input"],
        "answers": list(question["answers"]),
        "num_docs": n_docs,
    }
    if n_docs > store_ids_above:
        row["doc_ids"] = np.asarray(doc_ids, dtype=np.int64).tolist()
    else:
        row["context"] = render_context(doc_ids, pool)
    row["num_tokens"] = counter(doc_ids) if counter is not None else None
    return row


def build_eval_sets(
    questions: Sequence[dict],
    pool: Sequence[str],
    n_docs_list: Iterable[int],
    indices: Sequence[int],
    *,
    seed: int = DEFAULT_SEED,
    tokenizer: Tokenizer | None = None,
    store_ids_above: int = STORE_IDS_ABOVE,
    doc_tokens: np.ndarray | None = None,
) -> dict[int, list[dict]]:
    """The RULER-HQA evaluation sets: for every N, rows for the same question `indices` (the
    filtered dev questions of eval_200, as in different_docs_eval.py), in that order. A question
    whose first answer (the one scored) the official metrics cannot score (`memrepro.scoring.golds`)
    stops the build, named by its index (its row in the HotpotQA file)."""
    from memrepro.scoring.golds import bad_gold
    from memrepro.scoring.metrics import ANSWER_IS_METRICS

    by_index = {q["index"]: q for q in questions}
    missing = [i for i in indices if i not in by_index]
    if missing:
        raise ValueError(f"question indices not in the split: {missing[:10]}")
    selected = [by_index[i] for i in indices]
    for q in selected:
        problem = bad_gold(q["answers"][:1], ANSWER_IS_METRICS, published=True)
        if problem is not None:
            raise ValueError(f"question {q['index']}: {problem}")
    return {
        n: build_split(
            selected,
            pool,
            n,
            limit=None,
            seed=seed,
            tokenizer=tokenizer,
            store_ids_above=store_ids_above,
            doc_tokens=doc_tokens,
        )
        for n in n_docs_list
    }
