"""Mem-α's structured memory: core, semantic and episodic (Mem-α's official code).

- core: one string, at most `CORE_MAX_TOKENS` tokens; a longer update is cut word by word and
  the official suffix appended. None when the core store is disabled.
- semantic, episodic: ordered lists of (id, content), ids of 4 hex characters.

The operations keep the official quirks: inserting content already in the store is `skipped`;
updating a missing id is an error; deleting a missing id reports `ok`; core cannot be inserted
into, and deleting core clears it. Store names are the tools' `<type>_memory` values; the bare
names (`semantic`) are accepted too, as the official delete accepts them (the tools' argument
checks are in `memalpha_tools`).

Ids: the official code takes the first 4 characters of `uuid4()` and never checks collisions. We
draw them from a generator seeded per memory (reproducible rollouts) and redraw on a collision, so
an id always names one item.

Bounds the official code lacks, so that no model output means unbounded work: a store holds at
most MAX_STORE_ITEMS items (an insert into a full store fails, as that call's failure; the
official runs' memories hold tens), and with every 4-hex id taken an insert fails the same way.

`total_length` (the compression reward's l_m) and the core cap count tokens with the configured
counter: tiktoken's o200k_base in the official code (`memalpha.load_memory_counter`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

CORE, SEMANTIC, EPISODIC = "core", "semantic", "episodic"
STORES = (CORE, SEMANTIC, EPISODIC)
LIST_STORES = (SEMANTIC, EPISODIC)
CORE_MAX_TOKENS = 512
TRUNCATION_SUFFIX = " [content exceeds 512 tokens, truncated]"
SKIPPED_MESSAGE = "Memory content already exists in the memory pool, insertion skipped."
SEARCH_TOP_K = 20  # the official Memory.TOPK: search_memory and the QA step's top-k per store
MAX_STORE_ITEMS = 4096  # per store: inserts are O(items), and two full stores use 1/8 of the ids
ID_SPACE = 16**4  # 4 hex characters

TokenCounter = Callable[[str], int]


class MemoryOperationError(ValueError):
    """An operation the memory refuses (the tool reports it as an invalid argument value)."""


def store_name(memory_type: str) -> str:
    """`semantic_memory` or `semantic` -> `semantic`; anything else is an error."""
    name = memory_type.removesuffix("_memory") if isinstance(memory_type, str) else memory_type
    if name not in STORES:
        raise MemoryOperationError(f"unknown memory type {memory_type!r}")
    return name


@dataclass
class StructuredMemory:
    """One agent's memory. `disabled`: stores switched off (the memory-type ablation)."""

    count_tokens: TokenCounter
    disabled: frozenset[str] = frozenset()
    seed: int = 0
    core: str | None = None
    semantic: list[tuple[str, str]] = field(default_factory=list)
    episodic: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        unknown = set(self.disabled) - set(STORES)
        if unknown:
            raise ValueError(f"unknown memory types to disable: {sorted(unknown)}")
        if self.core is None and CORE not in self.disabled:
            self.core = ""
        self._rng = random.Random(self.seed)

    @property
    def enabled(self) -> tuple[str, ...]:
        return tuple(s for s in STORES if s not in self.disabled)

    # --- the three operations --------------------------------------------------------------

    def insert(self, memory_type: str, content: str) -> dict[str, Any]:
        store = self._store(memory_type)
        if store == CORE:
            raise MemoryOperationError("Core memory cannot be inserted into; use memory_update")
        items = self._items(store)
        if any(existing == content for _, existing in items):
            return {"status": "skipped", "message": SKIPPED_MESSAGE}
        if len(items) >= MAX_STORE_ITEMS:
            raise MemoryOperationError(f"{store} memory is full ({MAX_STORE_ITEMS} items)")
        memory_id = self._new_id()
        items.append((memory_id, content))
        return {"status": "ok", "new_memory": {memory_id: content}}

    def update(self, memory_type: str, new_content: str, memory_id: str | None = None) -> dict:
        store = self._store(memory_type)
        if store == CORE:
            self.core = self.cap_core(new_content)
            return {"status": "ok", "updated_memory": self.core}
        items = self._items(store)
        for i, (existing_id, _) in enumerate(items):
            if existing_id == memory_id:
                items[i] = (existing_id, new_content)
                return {"status": "ok", "updated_memory": {existing_id: new_content}}
        raise MemoryOperationError(f"no {store} memory with id {memory_id!r}")

    def delete(self, memory_type: str, memory_id: str | None = None) -> dict[str, Any]:
        store = self._store(memory_type)
        if store == CORE:
            self.core = ""
        else:
            items = self._items(store)
            items[:] = [(i, c) for i, c in items if i != memory_id]  # a missing id: still ok
        return {"status": "ok"}

    def search(self, memory_type: str, query: str, top_k: int = SEARCH_TOP_K) -> list[dict]:
        """The store's top-k items for `query`, best first, as [{id: content}]: BM25 over
        lower-cased words, the official tokenisation and rank-bm25's defaults (the RAG
        baseline's retriever)."""
        from memrepro.agents.retrieval import BM25Retriever

        store = self._store(memory_type)
        if store == CORE:
            raise MemoryOperationError(
                "core memory is always in the prompt; search semantic or episodic"
            )
        items = self._items(store)
        best = BM25Retriever().top_k(query, [c for _, c in items], top_k) if items else []
        return [{items[i][0]: items[i][1]} for i in best]

    # --- measuring and snapshots ---------------------------------------------------------

    def cap_core(self, text: str) -> str:
        """`text` if it fits in 512 tokens; else its longest word prefix that fits with the
        suffix, then the suffix (the official pop-words-until-it-fits, by bisection). The
        official loop pops a word before it first measures, so at least one word goes even
        when the words re-joined by single spaces would fit whole."""
        if self.count_tokens(text) <= CORE_MAX_TOKENS:
            return text
        budget = CORE_MAX_TOKENS - self.count_tokens(TRUNCATION_SUFFIX)
        words = text.split()
        low, high = 0, max(len(words) - 1, 0)  # the longest prefix of `low` words fits
        while low < high:
            middle = (low + high + 1) // 2
            if self.count_tokens(" ".join(words[:middle])) <= budget:
                low = middle
            else:
                high = middle - 1
        return " ".join(words[:low]) + TRUNCATION_SUFFIX

    def texts(self) -> list[str]:
        """Every non-empty stored text: core, then semantic and episodic contents (no ids)."""
        texts = [self.core or "", *(c for _, c in self.semantic), *(c for _, c in self.episodic)]
        return [text for text in texts if text]

    def total_length(self) -> int:
        """Tokens of core plus every semantic and episodic content (ids excluded)."""
        return sum(self.count_tokens(text) for text in self.texts())

    def snapshot(self) -> dict[str, Any]:
        """The memory as JSON: {core, semantic: [{id: content}], episodic: [...]}, the
        official agent_state layout."""
        return {
            "core": self.core,
            "semantic": [{i: c} for i, c in self.semantic],
            "episodic": [{i: c} for i, c in self.episodic],
        }

    # --- internals -----------------------------------------------------------------------

    def _store(self, memory_type: str) -> str:
        store = store_name(memory_type)
        if store in self.disabled:
            raise MemoryOperationError(f"{store} memory is disabled")
        return store

    def _items(self, store: str) -> list[tuple[str, str]]:
        return self.semantic if store == SEMANTIC else self.episodic

    def _new_id(self) -> str:
        taken = {i for i, _ in self.semantic} | {i for i, _ in self.episodic}
        if len(taken) >= ID_SPACE:
            raise MemoryOperationError(f"every one of the {ID_SPACE} memory ids is taken")
        while (memory_id := f"{self._rng.getrandbits(16):04x}") in taken:
            pass
        return memory_id


def from_snapshot(
    snapshot: dict[str, Any], count_tokens: TokenCounter, disabled: Iterable[str] = ()
) -> StructuredMemory:
    """A memory from `snapshot()`'s layout (an official agent_state.json too)."""

    def items(key: str) -> list[tuple[str, str]]:
        entries = snapshot.get(key) or []
        for entry in entries:
            if not isinstance(entry, dict) or len(entry) != 1:
                raise ValueError(f"{key} memory: expected {{id: content}} items, got {entry!r}")
        return [next(iter(entry.items())) for entry in entries]

    return StructuredMemory(
        count_tokens,
        frozenset(disabled),
        core=snapshot.get("core"),
        semantic=items(SEMANTIC),
        episodic=items(EPISODIC),
    )
