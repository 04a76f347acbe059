"""BookSum chapters as Mem-α's long-range-understanding training instances (Appendix A.1).

Source: `ubaada/booksum-complete-cleaned`, config `chapters`, train and test. A chapter longer
than 2,048 tokens is cut between sentences into chunks of at most 2,048 tokens. Each chunk is a
dated reading, the dates 1-3 days apart. The one question asks for a summary of what was read
between the first and the last date.

Chunks a chapter needs (`min_chunks`):
- the paper: 10-20 ("we segment each chapter into 10-20 conversational chunks");
- the official script, which made the released set: 5-20.

The gold is the chapter's first summary. Given the keyword rebuild's lists (Figure 4's prompt,
`memrepro.data.keywords`), it is the chapter's list, joined by ", " as the released set stores it,
and a chapter without one is left out: a summary gold cannot be scored by keyword hits.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from memrepro.data.memalpha_build.common import (
    BASE_DATE,
    Count,
    SourceError,
    field,
    instance,
    pack_sentences,
)

BOOKSUM_PROMPT = (
    "I will provide you with sequential chunks from a book chapter. Please analyze each chunk "
    "and decide what memory operations to perform to store this information effectively. Use "
    "memory_insert, memory_update, or memory_delete operations as needed."
)
CHUNK_TOKENS = 2048
MIN_CHUNKS = {"paper": 10, "official": 5}
MAX_CHUNKS = 20
DAYS_APART = (1, 3)
QUESTION = "Summarize the content of the book I read from {first} to {last}"


def booksum_instances(
    rows: Iterable[Mapping[str, Any]],
    count: Count,
    rng: random.Random,
    where: str,
    min_chunks: int = MIN_CHUNKS["official"],
    keywords: Mapping[str, Sequence[str]] | None = None,
    chunk_tokens: int = CHUNK_TOKENS,
) -> list[dict[str, Any]]:
    """BookSum's chapters (`text`, `summary`, `book_title`, `chapter_id`) as instances; `keywords`
    maps a summary to its keyword gold."""
    built = []
    for n, row in enumerate(rows):
        at = f"{where}: row {n}"
        text = str(field(row, "text", at))
        pieces = pack_sentences(text, count, chunk_tokens) if count(text) > chunk_tokens else [text]
        if not min_chunks <= len(pieces) <= MAX_CHUNKS:
            continue
        dates = _reading_dates(len(pieces), rng)
        chunks = [_reading(piece, date) for piece, date in zip(pieces, dates, strict=True)]
        summary = _summary(field(row, "summary", at), f"{at}, summary")
        if keywords is not None and summary not in keywords:
            continue
        keyworded = keywords is not None
        gold = ", ".join(keywords[summary]) if keyworded else summary
        pair = {"question": QUESTION.format(first=dates[0], last=dates[-1]), "answer": gold}
        metadata = {
            "book_title": str(row.get("book_title", "")),
            "chapter_id": str(row.get("chapter_id", "")),
            "gold": "keywords" if keyworded else "summary",
        }
        built.append(instance("booksum", BOOKSUM_PROMPT, chunks, [pair], metadata))
    return built


def _reading_dates(chunks: int, rng: random.Random) -> list[str]:
    day, dates = BASE_DATE, []
    for k in range(chunks):
        if k:
            day += timedelta(days=rng.randint(*DAYS_APART))
        dates.append(day.strftime("%Y-%m-%d"))
    return dates


def _reading(text: str, date: str) -> str:
    return (
        f"[Event happened on {date} The user is reading a book]\n<User> {text}\n\n<System> "
        f"Please remember what the user reads on {date}, save the details within the book, and "
        "retain a summary of the book the user has read so far."
    )


def _summary(value: Any, where: str) -> str:
    if hasattr(value, "tolist"):
        value = value.tolist()
    if not value or not isinstance(value[0], Mapping) or "text" not in value[0]:
        raise SourceError(f"{where}: expected a non-empty list of {{text, ...}}")
    return str(value[0]["text"])
