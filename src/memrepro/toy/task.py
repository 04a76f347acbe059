"""The toy memory task: a key–value needle in a few short chunks over a tiny vocabulary.

A row asks "What is the number of the fox?". Its context is `n_chunks` chunks of exactly
`chunk_tokens` tokens each: one chunk holds the needle fact " fox is 7." and every other chunk
holds, with probability `distractor_prob`, a fact about another key (" owl is 3."); the rest of
each chunk is filler words. Every word is a single token of the toy tokenizer (`tokenizer_corpus`
makes it so, and `check_rows` verifies it), so MemAgent's token chunking cuts the context exactly
at the chunk boundaries and each engine call sees one chunk.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memrepro.agents.chunking import truncated_chunks
from memrepro.agents.memagent import FINAL_TEMPLATES, MEMORY_TEMPLATES, NO_MEMORY
from memrepro.models.tiny import DEFAULT_SYSTEM_PROMPT

KEYS = (
    "fox", "owl", "elk", "yak", "cod", "ant", "bee", "cat",
    "dog", "eel", "gnu", "hen", "pig", "ram", "bat", "emu",
)  # fmt: skip
VALUES = tuple(str(d) for d in range(10))  # single digits: "7" is one token everywhere
FILLER = ("so", "then", "and", "yet", "but", "or", "thus", "also")
FACT_TOKENS = 5  # " fox", " is", " ", "7", "."
QUESTION = "What is the number of the {key}?"
DATA_SOURCE = "toy_kv"
_FACT = re.compile(r"\b([a-z]+) is (\d)\.")
_QUESTION = re.compile(r"What is the number of the ([a-z]+)\?")


@dataclass(frozen=True)
class TaskSettings:
    n_keys: int = 12  # keys drawn from the first n_keys of KEYS
    n_chunks: int = 3
    chunk_tokens: int = 8  # >= FACT_TOKENS; the rest of a chunk is filler
    distractor_prob: float = 1.0  # chance that a non-needle chunk holds another key's fact

    def __post_init__(self) -> None:
        if not 2 <= self.n_keys <= len(KEYS):
            raise ValueError(f"task.n_keys must be in [2, {len(KEYS)}], got {self.n_keys}")
        if self.n_chunks < 1:
            raise ValueError(f"task.n_chunks must be >= 1, got {self.n_chunks}")
        if self.n_chunks > self.n_keys:
            raise ValueError(
                f"task.n_chunks ({self.n_chunks}) must be <= task.n_keys ({self.n_keys}): "
                "every fact of a row is about a different key"
            )
        if self.chunk_tokens < FACT_TOKENS:
            raise ValueError(
                f"task.chunk_tokens must be >= {FACT_TOKENS} (one fact), got {self.chunk_tokens}"
            )
        if not 0 <= self.distractor_prob <= 1:
            raise ValueError(f"task.distractor_prob must be in [0, 1], got {self.distractor_prob}")


def fact(key: str, value: str) -> str:
    """A fact as written in a chunk (leading space: mid-text) and, stripped, in memory."""
    return f" {key} is {value}."


def make_row(index: int, rng: random.Random, task: TaskSettings) -> dict[str, Any]:
    """One row {index, input, answers, context, data_source, needle_chunk}."""
    keys = rng.sample(KEYS[: task.n_keys], task.n_chunks)
    asked, others = keys[0], keys[1:]
    needle = rng.randrange(task.n_chunks)
    value = rng.choice(VALUES)
    chunks = []
    for position in range(task.n_chunks):
        if position == needle:
            chunks.append(chunk_text(fact(asked, value), rng, task.chunk_tokens))
            continue
        other = others.pop()
        holds_fact = rng.random() < task.distractor_prob
        text = fact(other, rng.choice(VALUES)) if holds_fact else ""
        chunks.append(chunk_text(text, rng, task.chunk_tokens))
    return {
        "index": index,
        "input": QUESTION.format(key=asked),
        "answers": [value],
        "context": "".join(chunks),
        "data_source": DATA_SOURCE,
        "needle_chunk": needle,
    }


def make_rows(n: int, seed: int, task: TaskSettings) -> list[dict[str, Any]]:
    """`n` rows from a generator seeded with `seed` (different seeds: different rows)."""
    rng = random.Random(seed)
    return [make_row(i, rng, task) for i in range(n)]


def chunk_text(text: str, rng: random.Random, chunk_tokens: int) -> str:
    """`text` (a fact, or nothing) at a random place among filler words, chunk_tokens in all."""
    n_filler = chunk_tokens - (FACT_TOKENS if text else 0)
    words = [f" {rng.choice(FILLER)}" for _ in range(n_filler)]
    if text:
        words.insert(rng.randint(0, n_filler), text)
    return "".join(words)


def parse_facts(text: str) -> list[tuple[str, str]]:
    """(key, value) of every fact in a text, in order."""
    return _FACT.findall(text)


def asked_key(question: str) -> str:
    match = _QUESTION.search(question)
    if match is None:
        raise ValueError(f"not a toy question: {question!r}")
    return match[1]


def tokenizer_corpus(task: TaskSettings) -> list[str]:
    """Texts that make every template word, task word and answer form a single BPE token."""
    corpus = [
        MEMORY_TEMPLATES["official"],
        FINAL_TEMPLATES["boxed"],
        NO_MEMORY,
        DEFAULT_SYSTEM_PROMPT,
        "system user assistant",
    ]
    keys = KEYS[: task.n_keys]
    corpus += [QUESTION.format(key=key) for key in keys]
    corpus += [fact(key, value).strip() + fact(key, value) for key in keys for value in VALUES]
    corpus += [f"\\boxed{{{value}}}" for value in VALUES]
    corpus += [" ".join(FILLER) + " " + " ".join(FILLER)]
    return corpus * 4  # repeated so that every merge clears BPE's frequency threshold


def check_rows(tokenizer: Any, rows: Sequence[dict[str, Any]], task: TaskSettings) -> None:
    """Raise unless MemAgent's chunking of each row gives its chunks: n_chunks of chunk_tokens,
    exactly one holding the needle fact, and none holding another fact of the asked key."""
    for row in rows:
        where = f"toy row {row['index']}"
        chunks = truncated_chunks(tokenizer, row["context"], task.chunk_tokens, task.n_chunks)
        sizes = [len(tokenizer.encode(c, add_special_tokens=False)) for c in chunks]
        if sizes != [task.chunk_tokens] * task.n_chunks:
            raise ValueError(f"{where}: chunk token counts {sizes}, expected {task.chunk_tokens}")
        key = asked_key(row["input"])
        hits = [i for i, c in enumerate(chunks) if (key, row["answers"][0]) in parse_facts(c)]
        same_key = [i for i, c in enumerate(chunks) for k, _ in parse_facts(c) if k == key]
        if hits != [row["needle_chunk"]] or same_key != hits:
            raise ValueError(f"{where}: needle in chunks {hits}, expected [{row['needle_chunk']}]")
