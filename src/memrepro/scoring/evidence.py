"""Where a sample's gold evidence lies, and what the memory did with it (MemAgent's Appendix F).

Evidence is marked by strings: the caller's for the sample, else its gold answers, found
case-insensitively as whole words ("no" is not in "not", "2" not in "2014"). A chunk holding
one is a gold chunk; the memory after each chunk read comes from the run's trace. From these a
MemAgent sample falls into one pattern:

- `kept`: the evidence entered the memory and is in the final memory;
- `overwritten`: it entered, then a later update dropped it (F.1, information overwritten);
- `never_entered`: a gold chunk was read but the memory never held the evidence (F.2, missing
  critical information);
- `unlocated`: no chunk read holds the evidence (cut by a chunk boundary, paraphrased, or the
  sample failed first): nothing to say.

`primacy` is counted beside them (F.3, primacy bias): a wrong answer that the memory already
held before the first gold chunk was read, and still held at the end.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

PATTERNS = ("kept", "overwritten", "never_entered", "unlocated")


def evidence_strings(answers: Iterable[str], given: Iterable[str] | None = None) -> tuple[str, ...]:
    """What marks a chunk as holding gold evidence: the caller's strings for the sample if given,
    else its gold answers; blanks dropped, duplicates (ignoring case) once."""
    chosen = answers if given is None else given
    seen: dict[str, str] = {}
    for text in chosen:
        text = str(text).strip()
        if text and text.casefold() not in seen:
            seen[text.casefold()] = text
    return tuple(seen.values())


def evidence_pattern(strings: Sequence[str]) -> re.Pattern[str] | None:
    """One case-insensitive pattern for any of `strings` as a whole word (no word character
    right before or after it), longest first (None for none)."""
    if not strings:
        return None
    ordered = sorted(strings, key=len, reverse=True)
    return re.compile(rf"(?<!\w)(?:{'|'.join(map(re.escape, ordered))})(?!\w)", re.IGNORECASE)


class GoldChunks:
    """Chunks passed through unchanged while the indices of those holding evidence are noted
    (the evaluation streams a context once: this sees each chunk as the agent reads it)."""

    def __init__(self, chunks: Iterable[str], strings: Sequence[str]) -> None:
        self.chunks, self.pattern, self.found = chunks, evidence_pattern(strings), []

    def __iter__(self) -> Iterator[str]:
        for i, chunk in enumerate(self.chunks):
            if self.pattern is not None and self.pattern.search(chunk):
                self.found.append(i)
            yield chunk


def replay(changes: Mapping[int, str], n_chunks: int, before: str = "") -> list[str]:
    """The memory after each of `n_chunks` chunks read, from its changes ({chunk: memory after
    it}); `before` until the first change."""
    out, memory = [], before
    for chunk in range(n_chunks):
        memory = changes.get(chunk, memory)
        out.append(memory)
    return out


def memory_pattern(prediction: Mapping[str, Any]) -> tuple[str, bool] | None:
    """(pattern, primacy) of a MemAgent prediction with `memory_trace`, `n_chunks` and
    `evidence_chunks`; None for a record without them (another system)."""
    if "evidence_chunks" not in prediction or "memory_trace" not in prediction:
        return None
    n_read = int(prediction["n_chunks"])
    changes = {entry["chunk"]: entry["memory"] for entry in prediction["memory_trace"]}
    after = replay(changes, n_read)
    gold = [c for c in prediction["evidence_chunks"] if c < n_read]
    pattern = evidence_pattern(evidence_strings(prediction.get("answers") or []))
    if not gold or pattern is None:
        return "unlocated", _primacy(prediction, after, gold)
    held = [bool(pattern.search(memory)) for memory in after[gold[0] :]]
    if held[-1]:
        kind = "kept"
    elif any(held):
        kind = "overwritten"
    else:
        kind = "never_entered"
    return kind, _primacy(prediction, after, gold)


def _primacy(prediction: Mapping[str, Any], after: Sequence[str], gold: Sequence[int]) -> bool:
    """A wrong answer the memory held before the first gold chunk and still holds at the end."""
    answer = str(prediction.get("pred") or "").strip()
    if not answer or not gold or gold[0] == 0 or float(prediction.get("score") or 0) >= 1:
        return False
    early = evidence_pattern([answer])
    assert early is not None
    return any(early.search(m) for m in after[: gold[0]]) and bool(early.search(after[-1]))


def pattern_counts(predictions: Iterable[Mapping[str, Any]]) -> dict[str, int] | None:
    """How many samples fall into each pattern, and `primacy`; None if none has a trace."""
    counts = dict.fromkeys([*PATTERNS, "primacy"], 0)
    seen = False
    for prediction in predictions:
        found = memory_pattern(prediction)
        if found is None:
            continue
        seen = True
        kind, primacy = found
        counts[kind] += 1
        counts["primacy"] += primacy
    return counts if seen else None
