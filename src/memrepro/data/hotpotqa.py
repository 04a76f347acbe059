"""HotpotQA in its official JSON layout: validation, the document pool, per-question records.

The pool follows RULER's `read_hotpotqa` as used by MemAgent (MemAgent's official code): a document
is title + "\\n" + "".join(sentences) (sentences carry their own leading spaces), duplicates are
dropped, and the pool is sorted lexicographically; a doc id is its index in the sorted pool.
"""

from __future__ import annotations

import os
from pathlib import Path

from memrepro.data.io import read_json

_FIELDS: dict[str, type] = {
    "_id": str,
    "question": str,
    "answer": str,
    "supporting_facts": list,
    "context": list,
    "type": str,
    "level": str,
}


def load_hotpotqa(path: str | os.PathLike[str]) -> list[dict]:
    """Read an official HotpotQA JSON file (train v1.1 / dev distractor) and validate every row."""
    path = Path(path)
    records = read_json(path)
    if not isinstance(records, list):
        raise ValueError(f"{path}: expected a JSON list of questions, got {type(records).__name__}")
    for i, row in enumerate(records):
        _validate(row, f"{path}: row {i}")
    return records


def _validate(row: object, where: str) -> None:
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected an object, got {type(row).__name__}")
    for key, kind in _FIELDS.items():
        if key not in row:
            raise ValueError(f"{where}: missing key {key!r}")
        if not isinstance(row[key], kind):
            raise ValueError(
                f"{where}: key {key!r} must be {kind.__name__}, got {type(row[key]).__name__}"
            )
    for j, paragraph in enumerate(row["context"]):
        if not (
            isinstance(paragraph, list)
            and len(paragraph) == 2
            and isinstance(paragraph[0], str)
            and isinstance(paragraph[1], list)
            and all(isinstance(s, str) for s in paragraph[1])
        ):
            raise ValueError(f"{where}: key 'context'[{j}] must be [title, [sentences...]]")
    for j, fact in enumerate(row["supporting_facts"]):
        if not (
            isinstance(fact, list)
            and len(fact) == 2
            and isinstance(fact[0], str)
            and isinstance(fact[1], int)
        ):
            raise ValueError(f"{where}: key 'supporting_facts'[{j}] must be [title, sent_id]")


def paragraph_text(title: str, sentences: list[str]) -> str:
    return title + "\n" + "".join(sentences)


def build_pool(records: list[dict]) -> list[str]:
    """Every paragraph of every question, de-duplicated and sorted; doc id = index."""
    return sorted(
        {paragraph_text(title, sentences) for row in records for title, sentences in row["context"]}
    )


def question_records(records: list[dict], pool: list[str]) -> list[dict]:
    """One record per question, in file order: {index, question, answers, doc_ids, gold_doc_ids}.

    `doc_ids` are the pool ids of the question's own paragraphs (all 10 in the distractor
    setting: the "golden" documents of RULER-HotpotQA), in the order of its `context`;
    `gold_doc_ids` its two key-information groups (`gold_groups`).
    """
    ids = {doc: i for i, doc in enumerate(pool)}
    out = []
    for index, row in enumerate(records):
        try:
            doc_ids = [ids[paragraph_text(t, s)] for t, s in row["context"]]
        except KeyError as e:
            raise ValueError(f"question {index} ({row['_id']}): paragraph not in the pool") from e
        out.append(
            {
                "index": index,
                "question": row["question"],
                "answers": [row["answer"]],
                "doc_ids": doc_ids,
                "gold_doc_ids": gold_groups(row, doc_ids),
            }
        )
    return out


def gold_groups(row: dict, doc_ids: list[int]) -> list[list[int]]:
    """The question's supporting paragraphs as two groups of pool ids (Table 4's probe): those
    titled by the first title of `supporting_facts`, then those of every later title, in the
    order the titles first appear there (a title's paragraphs in `context` order, each id once).

    A group is empty when the row names too few titles (or none of a title's paragraphs is in
    its `context`); `hqa_probe.place_groups` refuses such a question.
    """
    titles = list(dict.fromkeys(title for title, _ in row.get("supporting_facts", ())))
    return [_titled(row, doc_ids, titles[:1]), _titled(row, doc_ids, titles[1:])]


def _titled(row: dict, doc_ids: list[int], titles: list[str]) -> list[int]:
    context_titles = [title for title, _ in row["context"]]
    ids = [doc_ids[j] for t in titles for j, title in enumerate(context_titles) if title == t]
    return list(dict.fromkeys(ids))
