"""SQuAD and HotpotQA as Mem-α's accurate-retrieval training instances (paper Appendix A.1).

Both pack documents into chunks of a random budget of 100-2,048 tokens and wrap each chunk as a
dated exchange. An instance keeps the questions whose documents it holds.

- **SQuAD** (`rajpurkar/squad`, train): its unique contexts, in order; every 10 chunks form one
  instance, kept if it holds at least 50 questions.
- **HotpotQA** (the train set, official JSON layout): its articles, deduplicated by title. The
  questions are grouped in order while their supporting articles fit in k articles, where k is
  10,000 tokens over the mean article length. An instance needs at least 30 questions.

The official script then drops every question that Qwen3-32B answers closed-book, or whose gold
is 5 tokens or longer (`closed_book_keeps`). The paper does not mention this filter: `replies=None`
builds the paper's sets, a mapping of the model's closed-book replies the official ones.
Both keep at most 100 questions an instance (a seeded sample), and instances of at most 20 chunks.
The official script matches a question to a chunk by substring search; we use the packing's own
record of which document went where.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memrepro.data.memalpha_build.common import (
    MEMORY_PROMPT,
    SEPARATOR,
    Count,
    SourceError,
    capped,
    dialogue_chunk,
    field,
    instance,
    pack,
)

# the official filter's closed-book question, with thinking on (its replies' </think> cut off)
CLOSED_BOOK_SYSTEM = (
    "You are a helpful assistant. Answer the question as accurately as possible. Be brief, only "
    "output the answer without any other text."
)
CHUNK_TOKENS = (100, 2048)  # each chunk's budget, drawn uniformly
SHORT_GOLD = 5  # closed-book filter: golds of fewer tokens are asked; longer ones are dropped
MAX_QUESTIONS = 100
MAX_CHUNKS = 20
QUESTION_TOKENS = 2048  # SQuAD: longer questions are dropped
HOTPOT_INSTANCE_TOKENS = 10_000  # HotpotQA: the articles an instance holds, in tokens
MIN_KEPT = {"squad": 30, "hotpotqa": 10}  # the questions an instance needs after the filter


def squad_instances(
    rows: Iterable[Mapping[str, Any]],
    count: Count,
    rng: random.Random,
    where: str,
    chunks_per_instance: int = 10,
    min_questions: int = 50,
    chunk_tokens: tuple[int, int] = CHUNK_TOKENS,
) -> list[dict[str, Any]]:
    """SQuAD's rows (`context`, `question`, `answers.text`) as instances, before the filter."""
    by_context: dict[str, list[dict[str, Any]]] = {}
    for n, row in enumerate(rows):
        at = f"{where}: row {n}"
        answers = field(field(row, "answers", at), "text", f"{at}, answers")
        if not len(answers):
            raise SourceError(f"{at}, answers.text: no answer")
        pair = {"question": str(field(row, "question", at)), "answer": str(answers[0])}
        by_context.setdefault(str(field(row, "context", at)), []).append(pair)
    texts = list(by_context)
    groups = pack(texts, count, rng, *chunk_tokens)
    built = []
    for start in range(0, len(groups), chunks_per_instance):
        batch = groups[start : start + chunks_per_instance]
        chunks = [
            dialogue_chunk(SEPARATOR.join(texts[i] for i in group), k, rng)
            for k, group in enumerate(batch)
        ]
        pairs = [
            {**pair, "evidence_idx": k}
            for k, group in enumerate(batch)
            for i in group
            for pair in by_context[texts[i]]
            if count(pair["question"]) < QUESTION_TOKENS
        ]
        if len(pairs) >= min_questions:
            built.append(instance("squad", MEMORY_PROMPT, chunks, pairs))
    return built


def hotpotqa_instances(
    rows: Iterable[Mapping[str, Any]],
    count: Count,
    rng: random.Random,
    where: str,
    min_questions: int = 30,
    instance_tokens: int = HOTPOT_INSTANCE_TOKENS,
    chunk_tokens: tuple[int, int] = CHUNK_TOKENS,
) -> list[dict[str, Any]]:
    """HotpotQA's rows (`question`, `answer`, `context`, `supporting_facts`) as instances, before
    the filter."""
    articles: dict[str, str] = {}
    questions = []
    for n, row in enumerate(rows):
        at = f"{where}: row {n}"
        context = field(row, "context", at)
        for title, sentences in context:
            articles.setdefault(str(title), " ".join(sentences))
        titles = {str(title) for title, _ in context}
        supporting = [str(title) for title, _ in field(row, "supporting_facts", at)]
        questions.append(
            {
                "question": str(field(row, "question", at)),
                "answer": str(field(row, "answer", at)),
                "titles": list(dict.fromkeys(t for t in supporting if t in titles)),
            }
        )
    if not articles:
        raise SourceError(f"{where}: no articles")
    mean = sum(count(_article(t, x)) for t, x in articles.items()) / len(articles)
    k = max(1, int(instance_tokens / mean))
    built = []
    for titles, group in _question_groups(questions, k):
        if len(group) >= min_questions:
            built.append(_hotpot_instance(titles, group, articles, count, rng, chunk_tokens))
    return built


def _article(title: str, text: str) -> str:
    return f"Title: {title}\n{text}"


def _question_groups(
    questions: Sequence[dict[str, Any]], k: int
) -> list[tuple[list[str], list[dict[str, Any]]]]:
    """Questions grouped in order while their articles fit in k (a group opens with the articles
    of its first question, however many)."""
    groups: list[tuple[list[str], list[dict[str, Any]]]] = []
    titles: list[str] = []
    group: list[dict[str, Any]] = []
    for question in questions:
        new = [t for t in question["titles"] if t not in titles]
        if titles and len(titles) + len(new) > k:
            groups.append((titles, group))
            titles, group = list(question["titles"]), [question]
        else:
            titles += new
            group.append(question)
    if titles and group:
        groups.append((titles, group))
    return groups


def _hotpot_instance(
    titles: list[str],
    group: list[dict[str, Any]],
    articles: Mapping[str, str],
    count: Count,
    rng: random.Random,
    chunk_tokens: tuple[int, int],
) -> dict[str, Any]:
    texts = [_article(title, articles[title]) for title in titles]
    packed = pack(texts, count, rng, *chunk_tokens)
    chunk_of = {titles[i]: k for k, indices in enumerate(packed) for i in indices}
    chunks = [
        dialogue_chunk(SEPARATOR.join(texts[i] for i in indices), k, rng)
        for k, indices in enumerate(packed)
    ]
    pairs = [
        {
            "question": q["question"],
            "answer": q["answer"],
            "evidence_idx": sorted({chunk_of[t] for t in q["titles"]}) or [0],
        }
        for q in group
    ]
    return instance("hotpotqa", MEMORY_PROMPT, chunks, pairs)


def closed_book_questions(instances: Iterable[Mapping[str, Any]], count: Count) -> list[str]:
    """The questions the official filter asks the model closed-book: those with a short gold."""
    asked = {
        pair["question"]: None
        for row in instances
        for pair in row["questions_and_answers"]
        if count(str(pair["answer"]).strip()) < SHORT_GOLD
    }
    return list(asked)


def closed_book_keeps(gold: str, reply: str | None, count: Count) -> bool:
    """Whether the official filter keeps a question: its gold is short and not in the model's
    closed-book reply (an empty gold or reply is kept; a question never asked is dropped)."""
    if reply is None:
        return False
    gold, reply = str(gold).strip(), str(reply).strip()
    if not gold or not reply:
        return True
    return count(gold) < SHORT_GOLD and gold.lower() not in reply.lower()


def filtered(
    instances: Iterable[Mapping[str, Any]],
    replies: Mapping[str, str] | None,
    count: Count,
    rng: random.Random,
    min_questions: int,
) -> list[dict[str, Any]]:
    """The instances after the closed-book filter (`replies=None`: none), each capped at 100
    questions; those left with fewer than `min_questions` or more than 20 chunks are dropped."""
    kept = []
    for row in instances:
        pairs = [
            pair
            for pair in row["questions_and_answers"]
            if replies is None
            or closed_book_keeps(pair["answer"], replies.get(pair["question"]), count)
        ]
        pairs = capped(pairs, MAX_QUESTIONS, rng)
        if len(pairs) >= min_questions and len(row["chunks"]) <= MAX_CHUNKS:
            kept.append({**row, "questions_and_answers": pairs})
    return kept
