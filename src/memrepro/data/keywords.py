"""Mem-α's keyword golds rebuilt (its Figure 4): BookSum's and MemoryAgentBench's long-range
understanding (LRU) answers are summaries, which the released sets replace with keyword lists an
LLM extracted (GPT-4.1 at temperature 0.1). Here the same step runs on any model, and each
rebuilt list is set beside the released one.

The originals are read in their hubs' schemas:

    booksum  BookSum chapters (ubaada/booksum-complete-cleaned, config `chapters`): `text` (the
             chapter), `summary` (a list of {text, ...}; the first is the one Mem-α kept)
    mab      MemoryAgentBench's Long_Range_Understanding split (ai-hyz/MemoryAgentBench):
             `context` (the book), `answers` (lists of gold summaries), `metadata.source`

A released instance (Memalpha or Memalpha-Memoryagentbench, one data source) is matched to its
original by text: its first chunk's reading (between `<User>` and `<System>`) begins the
original's text, whitespace aside.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

# the focus list both prompts open with
FOCUS = """1. Character names (main and supporting characters)
2. Key events and plot points
3. Important locations/settings
4. Central themes and concepts
5. Significant objects or symbols
6. Time periods or dates mentioned
7. Key relationships between characters
8. Important actions or decisions"""

# Figure 4 of the Mem-α paper: the prompt of BookSum's (and, the paper says, InfBench-Sum's)
# keywords; the official extraction script sends it with this system message.
SUMMARY_SYSTEM = "You are an expert at identifying key information in text summaries."
SUMMARY_PROMPT = (
    """Analyze the following book summary and extract the most important keywords. Focus on:

"""
    + FOCUS
    + """

Example:
Summary: "Elizabeth Bennet meets Mr. Darcy at a ball in Hertfordshire. Initially, she finds him proud and disagreeable. After learning about his past with Wickham and his role in separating Jane and Bingley, her dislike intensifies. However, when Darcy proposes and she rejects him, he writes a letter explaining his actions. Elizabeth realizes her prejudices and eventually falls in love with him after visiting Pemberley."

Keywords: Elizabeth Bennet, Mr. Darcy, ball, Hertfordshire, proud, Wickham, Jane, Bingley, proposal, rejection, letter, prejudices, Pemberley, love, Pride and Prejudice themes, marriage, social class, first impressions, misunderstanding, character growth

Now analyze this summary:
{text}

Extract keywords/phrases that capture the essential information in this summary, make sure they are complete and cover all aspects of the story.
Return ONLY a comma-separated list of keywords, nothing else.
Focus on concrete, specific terms rather than generic words.
Include both single words and short phrases (2-3 words max).
Prioritize proper nouns, specific events, and unique concepts."""
)

# The official MemoryAgentBench script's variant (not printed in the paper): "answers" for
# "summary", a ninth focus, another example.
ANSWERS_SYSTEM = "You are an expert at identifying key information from text answers."
ANSWERS_PROMPT = (
    """Analyze the following answers and extract the most important keywords. Focus on:

"""
    + FOCUS
    + """
9. Specific facts, names, or details mentioned in the answers

Example:
Answers: "Elizabeth Bennet is the protagonist. Mr. Darcy is initially proud and disagreeable. The story takes place in Hertfordshire and later at Pemberley estate. The main themes include prejudice, social class, and marriage. Elizabeth initially rejects Darcy's proposal but later falls in love with him after understanding his true character."

Keywords: Elizabeth Bennet, Mr. Darcy, protagonist, proud, disagreeable, Hertfordshire, Pemberley estate, prejudice, social class, marriage, proposal, rejection, love, character development, misunderstanding

Now analyze these answers:
{text}

Extract keywords/phrases that capture the essential information in these answers, make sure they are complete and cover all aspects mentioned.
Return ONLY a comma-separated list of keywords, nothing else.
Focus on concrete, specific terms rather than generic words.
Include both single words and short phrases (2-3 words max).
Prioritize proper nouns, specific events, and unique concepts mentioned in the answers."""
)

KINDS = ("booksum", "mab")  # the originals' schemas (module docstring)
# kind -> (system, prompt): the official scripts use the answers variant on MemoryAgentBench;
# the paper prints Figure 4 as the prompt of both
PROMPTS = {
    "official": {
        "booksum": (SUMMARY_SYSTEM, SUMMARY_PROMPT),
        "mab": (ANSWERS_SYSTEM, ANSWERS_PROMPT),
    },
    "paper": {
        "booksum": (SUMMARY_SYSTEM, SUMMARY_PROMPT),
        "mab": (SUMMARY_SYSTEM, SUMMARY_PROMPT),
    },
}
# Both prompts ask for "ONLY a comma-separated list of keywords, nothing else" of "single words
# and short phrases (2-3 words max)"; a reply that is not such a list is refused (reply_problem)
MAX_KEYWORD_WORDS = 6  # twice the prompts' 3: a longer item is a clause, not a phrase
# ".", "!" or "?" closing an item, unless the "." ends a one-letter word (an initial: D.C.)
_SENTENCE_END = re.compile(r"(?:[!?]|(?<!\b\w)\.)$")
MATCH_CHARS = 300  # of the first chunk's reading that must begin the original's text
_READING = re.compile(r"<User>\s?(.*?)\n\n<System>", re.DOTALL)
_SUMMARIZE = "summarize"  # the question whose answer is the keyword gold (official: its text)


def messages(wording: str, kind: str, summary: str) -> tuple[dict[str, str], ...]:
    """The chat of one extraction: the system message and the prompt around `summary`."""
    system, prompt = PROMPTS[wording][kind]
    return (
        {"role": "system", "content": system},
        {"role": "user", "content": prompt.replace("{text}", summary)},
    )


def keyword_list(reply: str) -> list[str]:
    """The keywords of a reply: split on commas, stripped, empty ones and repeats (ignoring
    case) dropped, in order (the official scripts' parsing)."""
    seen: set[str] = set()
    keywords = []
    for keyword in (part.strip() for part in reply.strip().split(",")):
        if keyword and keyword.lower() not in seen:
            seen.add(keyword.lower())
            keywords.append(keyword)
    return keywords


def reply_problem(reply: str | None) -> str | None:
    """Why a reply is not the keyword list the prompts ask for (keywords_problem of its keywords),
    else None."""
    return keywords_problem(keyword_list(reply or ""))


def keywords_problem(keywords: Sequence[str]) -> str | None:
    """Why a reply's keywords are not a comma-separated list of keywords and short phrases, else
    None: none at all (an empty reply, or commas only), an item that spans lines (a list of
    another form), ends a sentence (a refusal, a remark) or is longer than MAX_KEYWORD_WORDS."""
    if not keywords:
        return "no keywords (an empty reply, or commas only)"
    for keyword in keywords:
        if len(keyword.splitlines()) > 1:
            return f"a line break in {keyword!r}: the prompt asks for one comma-separated list"
        if _SENTENCE_END.search(keyword):
            return f"{keyword!r} ends a sentence: the prompt asks for keywords, nothing else"
        if (words := len(keyword.split())) > MAX_KEYWORD_WORDS:
            return f"{keyword!r} has {words} words: the prompt asks for phrases of 2-3"
    return None


def _flat(text: str) -> str:
    return " ".join(text.split())


def read_originals(kind: str, path: str | Path, source: str) -> list[dict[str, Any]]:
    """The original texts with their summaries ({key, text, summary}) of one file of `kind`;
    a MemoryAgentBench file's rows of data source `source` only."""
    from memrepro.data.io import read_table_records

    path = Path(path)
    if kind == "booksum":
        rows = read_table_records(path, ("text", "summary"), "BookSum chapters")
        return [_booksum(row, f"{path.name}#{n}", f"{path}: row {n}") for n, row in enumerate(rows)]
    if kind == "mab":
        rows = read_table_records(path, ("context", "answers", "metadata"), "MemoryAgentBench")
        return [
            _mab(row, f"{path.name}#{n}", f"{path}: row {n}")
            for n, row in enumerate(rows)
            if _metadata(row.get("metadata"), f"{path}: row {n}").get("source") == source
        ]
    raise ValueError(f"unknown kind of originals {kind!r}; expected one of {', '.join(KINDS)}")


def _booksum(row: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    summaries = _decoded(row["summary"], f"{where}, summary")
    if not summaries or not isinstance(summaries[0], Mapping) or "text" not in summaries[0]:
        raise ValueError(f"{where}, summary: expected a non-empty list of {{text, ...}}")
    return {"key": key, "text": str(row["text"]), "summary": str(summaries[0]["text"])}


def _mab(row: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    golds = [str(g) for answer in row["answers"] or [] for g in _listed(answer)]
    if not golds:
        raise ValueError(f"{where}, answers: no gold summary")
    # the official script passed pandas' repr of the nested array; here the summaries themselves
    return {"key": key, "text": str(row["context"]), "summary": "\n\n".join(golds)}


def _listed(value: Any) -> list[Any]:
    return [value] if isinstance(value, str) else list(value)


def _decoded(value: Any, where: str) -> Any:
    """A field as stored: parquet's own value, or the JSON text of one."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not valid JSON ({exc})") from exc


def _metadata(value: Any, where: str) -> dict[str, Any]:
    value = _decoded(value, f"{where}, metadata")
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}, metadata: expected an object with `source`")
    return dict(value)


def released_instances(path: str | Path, split: str, source: str) -> list[dict[str, Any]]:
    """The released instances of data source `source` in a Mem-α parquet: {split, index,
    instance_id, reading (the first chunk's text), released (its keyword gold)}."""
    from memrepro.data.memalpha import instances_by_source
    from memrepro.scoring.memalpha import gold_keywords

    instances = []
    for row in instances_by_source(path).get(source, []):
        where = f"{path}: row {row['index']}"
        golds = [a for q, a in zip(row["questions"], row["answers"], strict=True) if _asks(q)]
        if len(golds) != 1:
            raise ValueError(f"{where}: expected one summarize question, found {len(golds)}")
        instances.append(
            {
                "split": split,
                "index": row["index"],
                "instance_id": row["instance_id"],
                "reading": reading(row["chunks"][0]),
                "released": gold_keywords(golds[0]),
            }
        )
    return instances


def _asks(question: str) -> bool:
    return _SUMMARIZE in question.lower()


def reading(chunk: str) -> str:
    """What the user reads in a chunk of the reading wrapper (else the whole chunk), flattened."""
    found = _READING.search(chunk)
    return _flat(found.group(1) if found else chunk)


def match(
    instances: Sequence[Mapping[str, Any]], originals: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any] | None]:
    """Each instance's original (the one whose text its reading begins), or None when no
    original, or several with different summaries, do."""
    by_start: dict[str, list[Mapping[str, Any]]] = {}
    for original in originals:
        by_start.setdefault(_flat(original["text"])[:MATCH_CHARS], []).append(original)
    found: list[dict[str, Any] | None] = []
    for instance in instances:
        start = instance["reading"][:MATCH_CHARS]
        candidates = (
            by_start.get(start, []) if len(start) == MATCH_CHARS else _prefixed(by_start, start)
        )
        summaries = {c["summary"] for c in candidates}
        found.append(dict(candidates[0]) if len(summaries) == 1 else None)
    return found


def _prefixed(
    by_start: Mapping[str, list[Mapping[str, Any]]], start: str
) -> list[Mapping[str, Any]]:
    """The originals whose text begins with a reading shorter than MATCH_CHARS."""
    if not start:
        return []
    return [o for key, group in by_start.items() if key.startswith(start) for o in group]


def agreement(released: Sequence[str], rebuilt: Sequence[str]) -> dict[str, Any]:
    """How a rebuilt list compares with the released one, ignoring case and order: the same
    set or not, Jaccard overlap, and the share of released keywords rebuilt."""
    ours, theirs = {k.lower() for k in rebuilt}, {k.lower() for k in released}
    union = ours | theirs
    return {
        "same": ours == theirs,
        "jaccard": len(ours & theirs) / len(union) if union else 1.0,
        "recall": len(ours & theirs) / len(theirs) if theirs else 1.0,
    }
