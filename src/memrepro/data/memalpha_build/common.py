"""What every Mem-α training source shares: the chat wrappers of its chunks, packing texts into
chunks of a token budget, and the instance row (Mem-α's official processing script writes these
wrappers and targets; the template texts are data, reproduced verbatim)."""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

Count = Callable[[str], int]  # a text's token count (Qwen3-32B's tokenizer in the paper)

MEMORY_PROMPT = (
    "I will provide you with sequential information chunks. Please analyze each chunk and decide "
    "what memory operations to perform to store this information effectively. Use memory_insert, "
    "memory_update, or memory_delete operations as needed."
)
BASE_DATE = datetime(2024, 1, 1)  # chunk i is dated BASE_DATE + i days
SEPARATOR = "\n\n"  # between the texts packed into one chunk
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")

USER_TEMPLATES = (
    "Here are some new facts I learnt just now:",
    "Here are some news I learnt earlier:",
    "The following are some more news I learnt:",
    "The following are some new knowledge:",
    "I just discovered some interesting information:",
    "Let me share some additional facts I found:",
    "Here's some more information I came across:",
    "I want to tell you about some new discoveries:",
    "There are some important details I learned:",
    "I have some fresh insights to share:",
    "I'd like to tell you about some recent findings:",
    "Let me update you with some new information:",
    "I've gathered some additional data to share:",
    "Here's some valuable information I collected:",
    "I want to share some knowledge I just acquired:",
    "Let me provide you with some new details:",
    "I have some interesting updates for you:",
    "Here are some facts I recently discovered:",
    "I'd like to share some important information:",
    "Let me tell you about some new developments:",
)
CLASSIFICATION_TEMPLATES = (
    "Here are some classification examples to learn from. Please pay attention to the labels:",
    "I have some labeled classification examples for you to study:",
    "The following are classification examples with their corresponding labels:",
    "Please observe these classification examples and their associated labels:",
    "Here are training examples for classification. Note the labels carefully:",
    "I'm sharing some classification data with labels for you to learn:",
    "These are labeled examples for classification tasks:",
    "Please study these classification instances and their labels:",
    "Here are some examples with classification labels to remember:",
    "The following classification examples include important label information:",
    "I want you to learn from these classified examples:",
    "Here are categorized examples with their respective labels:",
    "Please memorize these classification examples and their labels:",
    "These labeled training examples are for classification:",
    "I'm providing classification data with labels for your reference:",
    "Study these classification examples and pay attention to the categories:",
    "Here are some annotated classification examples:",
    "Please learn from these labeled classification instances:",
    "The following are classification training examples with labels:",
    "These examples show different classes - please note the labels:",
)
ASSISTANT_TEMPLATES = (
    "Sure I will remember them.",
    "Got it. I will remember them.",
    "Thank you for sharing. I've noted this information.",
    "I understand. I'll keep this in mind.",
    "Thanks for the update. I've recorded these facts.",
    "Received. I'll store this information.",
    "Noted. I'll remember these details.",
    "I've processed this information and will remember it.",
    "Thanks for letting me know. I'll keep track of this.",
    "Perfect. I've stored this information in my memory.",
    "Understood. I'll keep these facts for future reference.",
    "Excellent. I've documented all of this information.",
    "Thanks for the information. I've saved it.",
    "Appreciated. I'll retain these important details.",
    "Great! I've added this to my knowledge base.",
    "I've successfully recorded all of this data.",
    "Wonderful. I'll remember these key points.",
    "Thanks for sharing. I've committed this to memory.",
    "I've captured all of this valuable information.",
)


class SourceError(ValueError):
    """A source file that cannot give what a builder needs: names the source, file and field."""


def field(row: Mapping[str, Any], key: str, where: str) -> Any:
    """`row[key]`, or a SourceError naming `where` (source, file, row) and the missing field."""
    if not isinstance(row, Mapping):
        raise SourceError(f"{where}: expected an object, got {type(row).__name__}")
    if key not in row:
        raise SourceError(f"{where}: no field {key!r}")
    return row[key]


def stamp(index: int, with_time: bool = True) -> str:
    """The date of chunk `index` as the wrappers print it."""
    day = BASE_DATE + timedelta(days=index)
    return day.strftime("%Y-%m-%d %H:%M" if with_time else "%Y-%m-%d")


def dialogue_chunk(
    text: str,
    index: int,
    rng: random.Random,
    templates: Sequence[str] = USER_TEMPLATES,
    gap: str = "\n",
) -> str:
    """A chunk as a dated exchange: the user shares `text`, the assistant acknowledges it."""
    user = rng.choice(templates)
    assistant = rng.choice(ASSISTANT_TEMPLATES)
    header = f"[Dialogue between User and Assistant on {stamp(index)}]"
    return f"{header}\n<User>{user}{gap}{text}\n<Assistant>{assistant}"


def pack(
    texts: Sequence[str], count: Count, rng: random.Random, low: int, high: int
) -> list[list[int]]:
    """The texts' indices, packed greedily in order into chunks joined by SEPARATOR.

    Each chunk's budget is drawn uniformly from [low, high] tokens. A text is never split: one
    longer than the budget opens a chunk of its own.
    """
    groups: list[list[int]] = []
    current: list[int] = []
    used, budget, gap = 0, rng.randint(low, high), count(SEPARATOR)
    for index, text in enumerate(texts):
        tokens = count(text)
        if current and used + gap + tokens > budget:
            groups.append(current)
            current, used, budget = [], 0, rng.randint(low, high)
        used += tokens + (gap if current else 0)
        current.append(index)
    if current:
        groups.append(current)
    return groups


def sentences(text: str) -> list[str]:
    """The text's sentences: split after ".", "!" or "?" and the spaces that follow."""
    return [part for part in _SENTENCE_END.split(text.strip()) if part]


def pack_sentences(text: str, count: Count, limit: int) -> list[str]:
    """The text cut between sentences into pieces of at most `limit` tokens (a longer sentence
    stands alone)."""
    pieces: list[str] = []
    current: list[str] = []
    used = 0
    for sentence in sentences(text):
        tokens = count(sentence)
        if current and used + 1 + tokens > limit:
            pieces.append(" ".join(current))
            current, used = [], 0
        used += tokens + (1 if current else 0)
        current.append(sentence)
    if current:
        pieces.append(" ".join(current))
    return pieces


def instance(
    source: str,
    prompt: str,
    chunks: Sequence[str],
    pairs: Sequence[Mapping[str, Any]],
    metadata: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One instance in the released parquet's schema (lists and dicts not yet JSON-encoded; the
    counts `num_chunks` and `num_questions` are derived when it is written)."""
    return {
        "prompt": prompt,
        "chunks": list(chunks),
        "questions_and_answers": [dict(pair) for pair in pairs],
        "data_source": source,
        "metadata": dict(metadata or {}),
    }


def capped(pairs: Sequence[Any], limit: int, rng: random.Random) -> list[Any]:
    """At most `limit` of the pairs: all of them, or a seeded sample in their own order."""
    if len(pairs) <= limit:
        return list(pairs)
    keep = sorted(rng.sample(range(len(pairs)), limit))
    return [pairs[i] for i in keep]
