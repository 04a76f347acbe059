"""LongMemEval-Train and PerLTQA as Mem-α's conversational training instances (Appendix A.1).

- **LME-Train** (`longmemeval_oracle.json` of `xiaowu0162/longmemeval`). The paper draws 200
  questions that MemoryAgentBench does not ask and joins their sessions into 50 contexts of
  10K-30K tokens, 4 questions each. Its combining script is not public. Here the questions are
  shuffled and taken 4 at a time; a context outside the token range is dropped. Sessions render
  as "[Dialogue at timestamp T]" and `<User>`/`<Assistant>` lines. They are cut into segments of
  at most 2,048 tokens, and the segments are merged into chunks that close at 1,800 tokens.
- **PerLTQA** (the release's `perltmem_en.json` and `perltqa_en.json`). One instance a
  character, one chunk an event with its dialogues, at most 30 chunks. The questions are those
  on events and dialogues (profile questions excluded), at most 100 a character. The official
  script first keeps those GPT-4.1 answers with the full context (`perltqa_kept`), needing 20.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from memrepro.data.memalpha_build.common import (
    MEMORY_PROMPT,
    SEPARATOR,
    Count,
    SourceError,
    capped,
    field,
    instance,
    pack_sentences,
)

LME_PROMPT = (
    "I will provide you with the conversation history between the user and the assistant and I "
    "need you to remember the details of the conversation for future reference."
)
# the official answerability filter's question (GPT-4.1, temperature 0)
ANSWERABILITY_PROMPT = (
    "Given the following context, please answer this question. Only output the answer without "
    "saying anything else.\n\nContext:\n{context}\n\nQuestion: {question}\n\nAnswer:"
)
LME_CONTEXT_TOKENS = (10_000, 30_000)
LME_CHUNK_TOKENS = 2048
# of a chunk's limit: a chunk this long is closed (1,800 of 2,048); a turn longer than the limit
# less the header's room (150 of 2,048) is cut between sentences
LME_CLOSE_SHARE, LME_ROOM_SHARE = 1800 / 2048, 150 / 2048
PERLTQA_MAX_CHUNKS = 30
PERLTQA_MIN_ANSWERABLE = 20
MAX_QUESTIONS = 100


def lme_train_instances(
    rows: Sequence[Mapping[str, Any]],
    count: Count,
    rng: random.Random,
    where: str,
    exclude: Collection[str] = (),
    samples: int = 50,
    per_sample: int = 4,
    context_tokens: tuple[int, int] = LME_CONTEXT_TOKENS,
    chunk_tokens: int = LME_CHUNK_TOKENS,
) -> list[dict[str, Any]]:
    """LongMemEval's oracle questions as `samples` contexts of `per_sample` questions each; a
    question whose id or text is in `exclude` (MemoryAgentBench's) is never drawn."""
    questions = [_lme_question(row, f"{where}: row {n}") for n, row in enumerate(rows)]
    pool = [q for q in questions if q["id"] not in exclude and q["question"] not in exclude]
    order = rng.sample(pool, len(pool))
    built = []
    for start in range(0, len(order) - per_sample + 1, per_sample):
        group = order[start : start + per_sample]
        sessions = _sessions(group)
        chunks = lme_chunks(sessions, count, chunk_tokens)
        tokens = sum(count(chunk) for chunk in chunks)
        if not context_tokens[0] <= tokens <= context_tokens[1]:
            continue
        pairs = [{"question": q["question"], "answer": q["answer"]} for q in group]
        metadata = {
            "question_ids": [q["id"] for q in group],
            "question_types": [q["type"] for q in group],
        }
        built.append(instance("lme_train", LME_PROMPT, chunks, pairs, metadata))
        if len(built) == samples:
            break
    return built


def _lme_question(row: Mapping[str, Any], where: str) -> dict[str, Any]:
    dates = field(row, "haystack_dates", where)
    sessions = field(row, "haystack_sessions", where)
    ids = row.get("haystack_session_ids") or [f"{where}#{k}" for k in range(len(sessions))]
    if not len(dates) == len(sessions) == len(ids):
        raise SourceError(f"{where}: haystack_dates, _sessions and _session_ids differ in length")
    return {
        "id": str(field(row, "question_id", where)),
        "type": str(row.get("question_type", "")),
        "question": str(field(row, "question", where)),
        "answer": str(field(row, "answer", where)),
        "sessions": [
            (str(date), str(sid), [_turn(t, f"{where}, haystack_sessions[{k}]") for t in turns])
            for k, (date, sid, turns) in enumerate(zip(dates, ids, sessions, strict=True))
        ],
    }


def _turn(turn: Mapping[str, Any], where: str) -> tuple[str, str]:
    return str(field(turn, "role", where)).capitalize(), str(field(turn, "content", where))


def _sessions(group: Iterable[Mapping[str, Any]]) -> list[tuple[str, list[tuple[str, str]]]]:
    """The group's sessions, each once, in date order."""
    seen: dict[str, tuple[str, list[tuple[str, str]]]] = {}
    for question in group:
        for date, sid, turns in question["sessions"]:
            seen.setdefault(sid, (date, turns))
    return sorted(seen.values(), key=lambda session: session[0])


def lme_chunks(
    sessions: Sequence[tuple[str, list[tuple[str, str]]]],
    count: Count,
    limit: int = LME_CHUNK_TOKENS,
) -> list[str]:
    """Sessions as chunks: each cut into segments of at most `limit` (2,048) tokens, the segments
    merged until a chunk reaches 1,800 tokens (never past 2,048)."""
    chunks: list[str] = []
    current = ""
    for date, turns in sessions:
        for segment in _segments(date, turns, count, limit):
            candidate = f"{current}{SEPARATOR}{segment}" if current else segment
            tokens = count(candidate)
            if tokens > limit:
                if current:
                    chunks.append(current)
                current = segment
            elif tokens >= limit * LME_CLOSE_SHARE:
                chunks.append(candidate)
                current = ""
            else:
                current = candidate
    if current:
        chunks.append(current)
    return chunks


def _segments(date: str, turns: Sequence[tuple[str, str]], count: Count, limit: int) -> list[str]:
    """One session rendered in segments of at most `limit` tokens, each under its header. A user
    turn that would end a segment opens the next one, beside the answer it asked for."""
    header = f"[Dialogue at timestamp {date}]"
    lines = [line for role, text in turns for line in _cut(role, text, count, limit)]
    segments: list[str] = []
    current: list[str] = []
    for line in lines:
        if current and count("\n".join([header, *current, line])) > limit:
            carried = (
                [current.pop()] if current[-1].startswith("<User>") and len(current) > 1 else []
            )
            segments.append("\n".join([header, *current]))
            current = carried
        current.append(line)
    if current:
        segments.append("\n".join([header, *current]))
    return segments


def _cut(role: str, text: str, count: Count, chunk_limit: int) -> list[str]:
    """A turn as `<Role>text` lines, a long turn cut between sentences, a long sentence between
    words."""
    limit = int(chunk_limit * (1 - LME_ROOM_SHARE))
    line = f"<{role}>{text}"
    if count(line) <= limit:
        return [line]
    pieces = []
    for piece in pack_sentences(text, count, limit):
        pieces += [piece] if count(piece) <= limit else _words(piece, count, limit)
    return [f"<{role}>{piece}" for piece in pieces]


def _words(text: str, count: Count, limit: int) -> list[str]:
    pieces: list[str] = []
    current: list[str] = []
    for word in text.split():
        if current and count(" ".join([*current, word])) > limit:
            pieces.append(" ".join(current))
            current = []
        current.append(word)
    return pieces + ([" ".join(current)] if current else [])


def perltqa_instances(
    memories: Sequence[Mapping[str, Any]],
    questions: Sequence[Mapping[str, Any]],
    where: str,
) -> list[dict[str, Any]]:
    """PerLTQA's characters as instances, before the filter: `memories` are perltmem's records,
    `questions` perltqa's."""
    built = []
    for n, memory in enumerate(memories):
        at = f"{where} (memories): row {n}"
        name = str(field(field(memory, "profile", at), "Protagonist", f"{at}, profile"))
        chunks = [
            _event_chunk(name, event_id, event, memory.get("dialogues") or {}, f"{at}, events")
            for event_id, event in (field(memory, "events", at) or {}).items()
        ]
        pairs = _perltqa_pairs(name, questions)
        if chunks and pairs and len(chunks) <= PERLTQA_MAX_CHUNKS:
            built.append(instance("perltqa", MEMORY_PROMPT, chunks, pairs, {"character": name}))
    return built


def perltqa_kept(
    instances: Sequence[Mapping[str, Any]],
    replies: Sequence[Mapping[str, str]] | None,
    rng: random.Random,
    min_answerable: int = PERLTQA_MIN_ANSWERABLE,
) -> list[dict[str, Any]]:
    """The instances after the answerability filter (`replies`: each instance's full-context
    replies by question; None: no filter), those with too few answerable questions dropped,
    each capped at 100 questions."""
    kept = []
    for n, row in enumerate(instances):
        pairs = row["questions_and_answers"]
        if replies is not None:
            pairs = [k for pair in pairs if (k := answerable_pair(pair, replies[n]))]
            if len(pairs) < min_answerable:
                continue
        pairs = capped(pairs, MAX_QUESTIONS, rng)
        kept.append({**row, "questions_and_answers": pairs})
    return kept


def _event_chunk(
    name: str, event_id: str, event: Mapping[str, Any], dialogues: Mapping[str, Any], where: str
) -> str:
    at = f"{where}[{event_id!r}]"
    text = (
        f"The following is the event happened about the user {name} on "
        f"{event.get('Creation Time', '')}:\nSummary: {field(event, 'summary', at)}\n"
        f"Content: {field(event, 'content', at)}{SEPARATOR}The following are the dialogues."
    )
    for dialogue_id, dialogue in dialogues.items():
        if not str(dialogue_id).startswith(str(event_id)):
            continue
        for stamp, messages in (dialogue.get("contents") or {}).items():
            lines = [f"Dialogue happened at {stamp}"]
            for message in messages:
                speaker, _, said = str(message).partition(": ")
                if said and ": " not in said:
                    lines.append(f"<{speaker}> {said}")
            text += SEPARATOR + "\n".join(lines)
    return text.strip()


def _perltqa_pairs(name: str, questions: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The character's questions on events and dialogues, in file order."""
    pairs = []
    for record in questions:
        for memory_type, items in (record.get(name) or {}).items():
            if memory_type == "profile" or not isinstance(items, list):
                continue
            for item in items:
                nested = [v for value in item.values() if isinstance(value, list) for v in value]
                for qa in nested or [item]:
                    if isinstance(qa, Mapping) and {"Question", "Answer"} <= set(qa):
                        pairs.append(
                            {
                                "question": str(qa["Question"]),
                                "answer": str(qa["Answer"]),
                                "memory_type": memory_type,
                            }
                        )
    return pairs


def answerable_pair(pair: Mapping[str, Any], replies: Mapping[str, str]) -> dict[str, Any] | None:
    """The pair as the official answerability filter keeps it, or None: a gold found in the
    full-context reply; of a ";"-separated gold, the parts found."""
    reply = replies.get(pair["question"])
    if reply is None:
        return None
    reply = reply.lower()
    parts = [part.strip() for part in str(pair["answer"]).split(";")]
    found = [part for part in parts if part and part.lower() in reply]
    if not found:
        return None
    return {**pair, "answer": ";".join(found)}
