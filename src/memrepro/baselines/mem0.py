"""Mem0 baseline (seed 000 §D.2): Mem0's own memory, built and searched with the `mem0ai`
package, then one answer from the retrieved memories.

The paper ran Mem0 with GPT-5.1 and text-embedding-3-large "following the official GitHub
repository for memory updating and retrieval": at creation the whole context is split into
5000-token chunks, each added to the memory (Mem0's LLM extracts facts, its embedder indexes
them); at retrieval the top 30 memories for the question are selected. The paper does not print
its answer prompt; ours is MemAgent's final prompt with the memories, one per line, as the
memory (the same "Therefore, the answer is" the other systems are scored on).

Mem0's LLM and embedder reach any OpenAI-compatible endpoint (`base_url`; key OPENAI_API_KEY);
its vector store is a local Qdrant in memory, its history a SQLite file, both in a job-private
directory; each sample is its own Mem0 user, so no memory leaks between samples. Mem0's
telemetry is switched off before it is imported.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memrepro.agents.driver import Workflow
from memrepro.agents.memagent import FinalPrompt, final_request

NO_MEMORIES = "No memories"  # what the answer prompt shows when the search finds none
# Mem0 reads this once, when it is first imported: no telemetry from an evaluation job (offline
# runs would otherwise retry an upload at exit).
os.environ.setdefault("MEM0_TELEMETRY", "False")


@dataclass(frozen=True)
class Mem0Settings:
    """Mem0's models and the paper's budgets (a system's `mem0` block)."""

    llm: str = "gpt-5.1"  # the model Mem0 extracts and updates facts with
    embedder: str = "text-embedding-3-large"
    embedding_dims: int = 3072
    base_url: str | None = None  # None: MEMREPRO_OPENAI_BASE_URL, else OpenAI's
    chunk_tokens: int = 5000  # creation: the context in chunks of this size
    top_k: int = 30  # retrieval: memories per question


def mem0_config(settings: Mem0Settings, store: Path, api_key: str | None) -> dict[str, Any]:
    """`Memory.from_config`'s dict: OpenAI-compatible LLM and embedder, local Qdrant in memory
    and a SQLite history under `store`."""
    from memrepro.engines.openai import API_KEY_ENV, BASE_URL_ENV

    endpoint = {
        "api_key": api_key or os.environ.get(API_KEY_ENV) or "EMPTY",
        "openai_base_url": settings.base_url or os.environ.get(BASE_URL_ENV),
    }
    return {
        "llm": {"provider": "openai", "config": {"model": settings.llm, **endpoint}},
        "embedder": {
            "provider": "openai",
            "config": {
                "model": settings.embedder,
                "embedding_dims": settings.embedding_dims,
                **endpoint,
            },
        },
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "collection_name": "memrepro",
                "embedding_model_dims": settings.embedding_dims,
                "path": str(store / "qdrant"),
                "on_disk": False,
            },
        },
        "history_db_path": str(store / "history.db"),
    }


class Mem0Store:
    """One Mem0 memory for a job; `user` keeps each sample's memories apart."""

    def __init__(
        self, settings: Mem0Settings, api_key: str | None = None, store: Path | None = None
    ) -> None:
        try:
            from mem0 import Memory
        except ImportError as exc:
            raise ImportError("the mem0 baseline needs the `mem0ai` package (extra mem0)") from exc
        self.settings = settings
        self._dir = None if store is not None else tempfile.TemporaryDirectory(prefix="mem0-")
        root = store if store is not None else Path(self._dir.name)
        self.memory = Memory.from_config(mem0_config(settings, root, api_key))

    def memorize(self, user: str, chunks: Iterable[str]) -> int:
        """Add every chunk to `user`'s memory (Mem0 extracts and updates facts); the chunks."""
        n = 0
        for chunk in chunks:
            self.memory.add([{"role": "user", "content": chunk}], user_id=user)
            n += 1
        return n

    def recall(self, user: str, question: str) -> list[str]:
        """`user`'s top-k memories for the question, best first."""
        found = self.memory.search(question, filters={"user_id": user}, top_k=self.settings.top_k)
        return [item["memory"] for item in found.get("results", [])]


def render_memories(memories: list[str]) -> str:
    """The memories as the answer prompt's memory: one per line, or NO_MEMORIES."""
    return "\n".join(f"- {memory}" for memory in memories) if memories else NO_MEMORIES


def mem0_workflow(
    question: str,
    chunks: Iterable[str],
    store: Mem0Store,
    user: str,
    final_prompt: FinalPrompt,
    final_tokens: int,
) -> Workflow:
    """One Mem0 sample: build `user`'s memory from the chunks, retrieve the top-k memories for
    the question, then one answer over them; returns the answer text. Mem0's own LLM calls go
    to its endpoint, the answer to the evaluated engine."""
    problem = question.strip()
    store.memorize(user, chunks)
    memory = render_memories(store.recall(user, problem))
    completion = yield final_request(problem, memory, final_prompt, final_tokens)
    return completion.text
