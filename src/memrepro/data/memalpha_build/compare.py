"""The rebuilt Mem-α sets beside the released ones (the memalpha_data table's numbers).

- **Matching by text.** An instance's content is its chunks' lines without the chat wrappers
  (headers, template lines, acknowledgements), lowercased. A rebuilt instance matches the
  released instance of its source that shares most of its content lines, if they share at least
  half of either's. It agrees exactly when its chunks and questions are the released ones.
- **Overlap.** The questions of one set also asked by MemoryAgentBench, compared by their text
  (a classification question by its sentence).
- **Lengths.** The paper trains on contexts of at most 30K tokens, under 20K on average
  (abstract, §4.2): each training instance's context is counted whole.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from statistics import fmean
from typing import Any

from memrepro.data.memalpha_build.common import (
    ASSISTANT_TEMPLATES,
    CLASSIFICATION_TEMPLATES,
    USER_TEMPLATES,
)

MATCH_SHARE = 0.5
MAX_CONTEXT, MEAN_CONTEXT = 30_000, 20_000  # the paper's "≤ 30K, < 20K on average"
_WRAPPERS = tuple(f"<User>{t}" for t in (*USER_TEMPLATES, *CLASSIFICATION_TEMPLATES)) + tuple(
    f"<Assistant>{t}" for t in ASSISTANT_TEMPLATES
)
_HEADER = re.compile(r"^\[(Dialogue between User and Assistant on|Event happened on) ")
_SENTENCE = re.compile(r"^Sentence: (.*?)\nWhat are the labels", re.DOTALL)
_SPACE = re.compile(r"\s+")


def content(chunks: Sequence[str]) -> frozenset[str]:
    """An instance's content lines: its chunks' lines less the wrappers, lowercased."""
    lines = set()
    for chunk in chunks:
        for line in chunk.split("\n"):
            line = line.strip()
            if not line or _HEADER.match(line) or line in _WRAPPERS:
                continue
            if line.startswith("<System> Please remember what the user reads on"):
                continue
            lines.add(_SPACE.sub(" ", line.removeprefix("<User> ")).lower())
    return frozenset(lines)


def matches(
    rebuilt: Sequence[Mapping[str, Any]], released: Sequence[Mapping[str, Any]]
) -> dict[str, dict[str, int]]:
    """Per data source: {rebuilt, matched, exact} counts (rows as memrepro.data.memalpha reads)."""
    found: dict[str, dict[str, int]] = {}
    by_source: dict[str, list[Mapping[str, Any]]] = {}
    for row in released:
        by_source.setdefault(row["task"], []).append(row)
    for source in dict.fromkeys(row["task"] for row in rebuilt):
        ours = [row for row in rebuilt if row["task"] == source]
        theirs = by_source.get(source, [])
        index: dict[str, list[int]] = {}
        contents = [content(row["chunks"]) for row in theirs]
        for k, lines in enumerate(contents):
            for line in lines:
                index.setdefault(line, []).append(k)
        counts = {"rebuilt": len(ours), "matched": 0, "exact": 0}
        for row in ours:
            lines = content(row["chunks"])
            shared = Counter(k for line in lines for k in index.get(line, ()))
            if not shared:
                continue
            k, n = shared.most_common(1)[0]
            if n >= MATCH_SHARE * max(len(lines), len(contents[k])):
                counts["matched"] += 1
                counts["exact"] += _same(row, theirs[k])
        found[source] = counts
    return found


def _same(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> bool:
    return (
        list(ours["chunks"]) == list(theirs["chunks"])
        and list(ours["questions"]) == list(theirs["questions"])
        and [_gold(a) for a in ours["answers"]] == [_gold(a) for a in theirs["answers"]]
    )


def _gold(answer: Any) -> Any:
    return answer if isinstance(answer, str) else list(answer)


def asked(question: str) -> str:
    """A question's text as compared across sets: a classification question by its sentence."""
    found = _SENTENCE.match(question)
    return _SPACE.sub(" ", found.group(1) if found else question).strip().lower()


def overlap(questions: Sequence[str], benchmark: Sequence[str]) -> dict[str, int]:
    """How many of the questions (distinct, by text) the benchmark also asks."""
    ours = {asked(q) for q in questions}
    return {"questions": len(ours), "shared": len(ours & {asked(q) for q in benchmark})}


def context_lengths(
    rows: Sequence[Mapping[str, Any]], count: Callable[[list[str]], list[int]]
) -> dict[str, Any]:
    """The training contexts' lengths (all chunks of an instance, in tokens) against the
    paper's "≤ 30K, < 20K on average"."""
    lengths = [sum(count(list(row["chunks"]))) for row in rows]
    if not lengths:
        return {"instances": 0, "max": None, "mean": None, "holds": None}
    longest, mean = max(lengths), fmean(lengths)
    return {
        "instances": len(lengths),
        "max": longest,
        "mean": mean,
        "over_max": sum(n > MAX_CONTEXT for n in lengths),
        "holds": longest <= MAX_CONTEXT and mean < MEAN_CONTEXT,
    }
