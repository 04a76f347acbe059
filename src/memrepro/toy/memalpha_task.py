"""The Mem-α toy task: memorise a few short chunks, each holding one key–value fact, into a
structured memory through tool calls; then every fact's key is asked.

An instance (the Mem-α training loader's schema: task, chunks, questions, answers) has
`n_chunks` chunks of exactly `chunk_tokens` tokens: one fact (" fox is 7.", the MemAgent toy's
vocabulary) among filler words. Its questions ask every fact's key ("What is the number of the
fox?"); the memory policy never sees them. The best write per chunk is one insert of the bare
fact into semantic memory:

    ✿FUNCTION✿: new_memory_insert
    ✿ARGS✿: {"memory_type": "semantic_memory", "content": "fox is 7."}

and each way of falling short costs a different reward term (`ACTIONS`): no call loses the fact
(r1) and the chunk's tool-call reward (r2); the whole chunk stored verbatim keeps the fact but
makes memory longer (r3, compression); the fact filed as episodic keeps it too but is judged
invalid episodic memory, having no time (r4, content).

The official memorisation prompt is ~3,100 tokens of this tokenizer; the toy words the same
state (visible memory items with ids, the new chunk, the call format) compactly (`TOY_PROMPTS`),
through the same workflow (`memrepro.agents.memalpha.memorize`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memrepro.agents.memalpha import MemorizePrompts
from memrepro.agents.memalpha_tools import ARGS, FUNCTION, ToolCall, parse_arguments
from memrepro.agents.structured_memory import EPISODIC, SEMANTIC, StructuredMemory
from memrepro.models.tiny import DEFAULT_SYSTEM_PROMPT
from memrepro.toy.task import FACT_TOKENS, KEYS, QUESTION, VALUES, chunk_text, fact, parse_facts

# Scored as SQuAD answers are (the gold value contained in the QA reply; no query prompt).
TASK = "squad"
INSERT = "new_memory_insert"
# What a memorisation step did with its chunk's fact (`classify_step`); the first is the best.
ACTIONS = ("concise", "skip", "verbatim", "episodic", "other")


@dataclass(frozen=True)
class MemAlphaTaskSettings:
    n_keys: int = 12  # keys drawn from the first n_keys of KEYS
    n_chunks: int = 3  # one fact each, all about different keys
    chunk_tokens: int = 12  # the fact (5 tokens) among filler words

    def __post_init__(self) -> None:
        if not 2 <= self.n_keys <= len(KEYS):
            raise ValueError(f"task.n_keys must be in [2, {len(KEYS)}], got {self.n_keys}")
        if not 1 <= self.n_chunks <= self.n_keys:
            raise ValueError(
                f"task.n_chunks must be in [1, task.n_keys = {self.n_keys}], got {self.n_chunks}"
            )
        if self.chunk_tokens < FACT_TOKENS:
            raise ValueError(
                f"task.chunk_tokens must be >= {FACT_TOKENS} (one fact), got {self.chunk_tokens}"
            )


def make_instance(index: int, rng: random.Random, task: MemAlphaTaskSettings) -> dict[str, Any]:
    """One instance {index, task, chunks, questions, answers}: every chunk's key is asked."""
    keys = rng.sample(KEYS[: task.n_keys], task.n_chunks)
    values = [rng.choice(VALUES) for _ in keys]
    facts = [fact(key, value) for key, value in zip(keys, values, strict=True)]
    chunks = [chunk_text(text, rng, task.chunk_tokens) for text in facts]
    return {
        "index": index,
        "task": TASK,
        "chunks": chunks,
        "questions": [QUESTION.format(key=key) for key in keys],
        "answers": values,
    }


def make_instances(n: int, seed: int, task: MemAlphaTaskSettings) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [make_instance(i, rng, task) for i in range(n)]


def context_of(instance: dict[str, Any]) -> str:
    """What makes two instances the same (held-out rows never repeat a training one)."""
    return "".join(instance["chunks"])


# --- the compact prompts ---------------------------------------------------------------------


def toy_system_prompt(memory: StructuredMemory, visible_items: int) -> str:
    """The memory state (the last `visible_items` of each store, with ids) and the call format."""
    blocks = []
    for store in (SEMANTIC, EPISODIC):
        items = memory.semantic if store == SEMANTIC else memory.episodic
        shown = items[-visible_items:] if visible_items > 0 else []
        body = "\n".join(f"[{i}] {c}" for i, c in shown) or "Empty."
        blocks.append(f"<{store}_memory>\n{body}\n</{store}_memory>")
    return (
        "Memorize the new chunk.\n"
        + "\n".join(blocks)
        + f"\nTool: {INSERT}(memory_type, content)\n{FUNCTION}: name\n{ARGS}: JSON"
    )


def toy_user_prompt(chunk: str, max_new_tokens: int) -> str:
    return f"<new_chunk>\n{chunk.strip()}\n</new_chunk>"


TOY_PROMPTS = MemorizePrompts(toy_system_prompt, toy_user_prompt)


def insert_call(store: str, content: str) -> str:
    """One insert call in the official (Qwen-Agent) call format."""
    arguments = json.dumps({"memory_type": f"{store}_memory", "content": content})
    return f"{FUNCTION}: {INSERT}\n{ARGS}: {arguments}"


def tokenizer_corpus(task: MemAlphaTaskSettings) -> list[str]:
    """Texts that make the prompts' words, the calls and every fact few, whole tokens."""
    keys = KEYS[: task.n_keys]
    facts = [fact(key, value) for key in keys for value in VALUES]
    corpus = [
        toy_system_prompt(StructuredMemory(len), 0),
        toy_user_prompt(" ".join(facts[:4]), 0),
        DEFAULT_SYSTEM_PROMPT,
        "system user assistant Done",
        *(insert_call(store, f.strip()) for store in (SEMANTIC, EPISODIC) for f in facts),
        *(QUESTION.format(key=key) for key in keys),
        "so then and yet but or thus also " * 2,
        "[0123] [4567] [89ab] [cdef]",
    ]
    return corpus * 4  # repeated so that every merge clears BPE's frequency threshold


def check_instances(
    tokenizer: Any, instances: Sequence[dict[str, Any]], task: MemAlphaTaskSettings
) -> None:
    """Raise unless every chunk is `chunk_tokens` tokens holding exactly its one fact."""
    for instance in instances:
        for c, chunk in enumerate(instance["chunks"]):
            where = f"toy instance {instance['index']}, chunk {c}"
            size = len(tokenizer.encode(chunk, add_special_tokens=False))
            if size != task.chunk_tokens:
                raise ValueError(f"{where}: {size} tokens, expected {task.chunk_tokens}")
            if len(parse_facts(chunk)) != 1:
                raise ValueError(f"{where}: expected one fact, got {chunk!r}")


# --- what a step did -------------------------------------------------------------------------


def classify_step(chunk: str, calls: Sequence[ToolCall]) -> str:
    """One of ACTIONS for a memorisation step on `chunk`: `concise` (exactly one insert of the
    bare fact into semantic memory), `skip` (no call), `verbatim` (one semantic insert holding
    the fact among other words), `episodic` (one episodic insert holding the fact), else
    `other` (several calls, a malformed one, or content without the fact)."""
    if not calls:
        return "skip"
    if len(calls) > 1 or calls[0].name != INSERT or calls[0].malformed is not None:
        return "other"
    try:
        arguments = parse_arguments(calls[0])
    except ValueError:
        return "other"
    if not isinstance(arguments, dict) or not isinstance(arguments.get("content"), str):
        return "other"
    content, store = arguments["content"], arguments.get("memory_type")
    (key, value), *_ = parse_facts(chunk)
    if (key, value) not in parse_facts(content):
        return "other"
    if store == f"{EPISODIC}_memory":
        return "episodic"
    if store != f"{SEMANTIC}_memory":
        return "other"
    return "concise" if content.strip() == fact(key, value).strip() else "verbatim"
