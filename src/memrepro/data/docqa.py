"""DocQA-RL-1.6K (QwenLong-L1's RL set) and the stage-II training mix of MemAgent.

Seed 000 §2.2 / A.3: stage II trains on "2,560 instances with a maximum length of 60K tokens ...
from DocQA-RL-1.6K, mixed with data from the first stage". No official code or artifact exists
(MemAgent's official code), so this module is our design; the decisions are stated where made.

The raw file is verl RL format (parquet, one row per problem): `data_source` (e.g.
"docmath_0_20000", "long_toc_choices_20000_40000", "multihoprag_0_20000", "musique_0_20000"),
`prompt` (one user message), `ability` (doc-math / doc-mc / doc-qa), `reward_model`
{style, ground_truth} and `extra_info`. The user message is QwenLong-L1's template

    Please read the following text and answer the question below.

    <text>
    {document}
    </text>

    {question}

    Format your response as follows: "Therefore, the answer is (insert answer here)".

(multiple-choice rows ask for "The correct answer is (insert answer here)" and carry the choices
in the question). The ground truth is an answer sentence in the same style ("Therefore, the
answer is 8.35.", "The correct answer is (B)"), which QwenLong-L1's verifiers parse before
comparing; we store the parsed answer ("8.35", "B") in `answers`. (Layout taken from QwenLong-L1's
training script, README template and verifiers; the released file itself could not be opened
offline, so the loader fails loudly, naming file and row, on anything else.)
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

from memrepro.data.io import read_table_records
from memrepro.data.ruler_hqa import DATA_SOURCE

COLUMNS = ("data_source", "prompt", "reward_model")
TEXT_OPEN, TEXT_CLOSE = "<text>", "</text>"
FORMAT_LINE = "Format your response as follows:"
_CHOICE = re.compile(r"[Tt]he correct answer is \(?([A-Z])\)?(?!\w)")  # a capital option letter
_ANSWER_IS = re.compile(r"answer is", re.IGNORECASE)


class Tokenizer(Protocol):
    def encode(self, text: str, add_special_tokens: bool = ...) -> list[int]: ...


# --- loading -------------------------------------------------------------------------------------


def load_docqa(path: str | Path) -> list[dict]:
    """Training rows {index, input, answers, context, data_source} of a DocQA-RL file.

    `.parquet` (the published format) or `.jsonl` (the same columns, one JSON object a line).
    `index` is the row's position in the file. A malformed row raises ValueError naming the
    file and the row.
    """
    path = Path(path)
    records = read_table_records(path, COLUMNS, "DocQA-RL")
    return [_parse(record, f"{path}: row {i}", i) for i, record in enumerate(records)]


def _parse(record: dict, where: str, index: int) -> dict:
    for key in COLUMNS:
        if key not in record:
            raise ValueError(f"{where}: missing key {key!r}")
    source = record["data_source"]
    if not isinstance(source, str) or not source:
        raise ValueError(f"{where}: 'data_source' must be a non-empty string")
    where = f"{where} ({source})"
    context, question = split_prompt(_user_message(record["prompt"], where), where)
    return {
        "index": index,
        "input": question,
        "answers": _answers(record["reward_model"], where),
        "context": context,
        "data_source": source,
    }


def _user_message(prompt: Any, where: str) -> str:
    """The content of the prompt's (last) user message."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list):
        users = [m for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        if users and isinstance(users[-1].get("content"), str):
            return users[-1]["content"]
    raise ValueError(f"{where}: 'prompt' must be a list of messages with a user message")


def split_prompt(content: str, where: str = "prompt") -> tuple[str, str]:
    """(document, question) of a QwenLong-L1 prompt: the text between <text> and the last
    </text>, and what follows it up to the answer-format instruction (which is dropped: the
    MemAgent templates ask for the answer in their own form)."""
    start = content.find(TEXT_OPEN)
    end = content.rfind(TEXT_CLOSE)
    if start < 0 or end < start:
        raise ValueError(f"{where}: the prompt has no <text>...</text> document")
    context = content[start + len(TEXT_OPEN) : end].strip()
    rest = content[end + len(TEXT_CLOSE) :]
    question = rest.rpartition(FORMAT_LINE)[0] if FORMAT_LINE in rest else rest
    question = question.strip()
    if not context:
        raise ValueError(f"{where}: the document between <text> and </text> is empty")
    if not question:
        raise ValueError(f"{where}: no question after </text>")
    return context, question


def _answers(reward_model: Any, where: str) -> list[str]:
    truth = reward_model.get("ground_truth") if isinstance(reward_model, dict) else None
    truths = truth if isinstance(truth, list) else [truth]
    answers = []
    for t in truths:
        if isinstance(t, bool) or not isinstance(t, str | int | float):
            raise ValueError(f"{where}: 'reward_model.ground_truth' must be a string (or list)")
        answer = parse_ground_truth(str(t))
        if not answer:
            raise ValueError(f"{where}: empty answer in ground truth {t!r}")
        answers.append(answer)
    if not answers:
        raise ValueError(f"{where}: 'reward_model.ground_truth' is empty")
    return answers


def parse_ground_truth(truth: str) -> str:
    """The answer inside a ground-truth sentence, parsed as QwenLong-L1's verifiers parse it:
    the letter of "The correct answer is (B)"; what follows the last "answer is" ("Therefore,
    the answer is 8.35." -> "8.35"; trailing periods dropped); otherwise the stripped text itself
    (mirrors that store bare answers)."""
    choices = _CHOICE.findall(truth)
    if choices:
        return choices[-1]
    phrases = list(_ANSWER_IS.finditer(truth))
    if phrases:
        return truth[phrases[-1].end() :].strip().rstrip(".").strip()
    return truth.strip()


# --- the stage-II mix ----------------------------------------------------------------------------


def mix_stage2(
    hqa_rows: Sequence[dict],
    docqa_rows: Sequence[dict],
    n_rows: int,
    max_context_tokens: int,
    tokenizer: Tokenizer,
    seed: int,
) -> tuple[list[dict], dict]:
    """The stage-II training rows and a report of what went in.

    1. Every DocQA row whose document is at most `max_context_tokens` tokens (the policy's
       tokenizer, no special tokens: what the training loader center-truncates) is kept; longer
       ones are DROPPED, not truncated. The paper's set has "a maximum length of 60K tokens",
       and center truncation would cut a real document's middle, often the evidence, leaving an
       unanswerable question (a wasted, all-zero-reward group). Set max_context_tokens to at
       most max_chunks × chunk_tokens of stage II so kept rows are never truncated.
    2. Stage-I RULER-HQA rows, drawn at random, fill the set up to `n_rows` (not length-filtered:
       they are built at a fixed document count). More fitting DocQA rows than `n_rows` are
       sampled down instead.
    3. The mix is shuffled; every row gets a fresh `index` (its position: unique across both
       sources), keeps its origin in `source_index` and its `data_source` (stage-I rows without
       one get DATA_SOURCE) and `num_tokens`.

    One `random.Random(seed)` drives the draws, so the same inputs give the same file.
    """
    if n_rows <= 0 or max_context_tokens <= 0:
        raise ValueError(
            f"n_rows and max_context_tokens must be > 0: {n_rows}, {max_context_tokens}"
        )
    rng = random.Random(seed)
    lengths = [count_tokens(tokenizer, row["context"]) for row in docqa_rows]
    fitting = [
        {**row, "num_tokens": n}
        for row, n in zip(docqa_rows, lengths, strict=True)
        if n <= max_context_tokens
    ]
    docqa = rng.sample(fitting, min(len(fitting), n_rows))
    n_hqa = n_rows - len(docqa)
    if n_hqa > len(hqa_rows):
        raise ValueError(
            f"stage II needs {n_hqa} stage-I rows to reach n_rows={n_rows} "
            f"({len(docqa)} DocQA rows fit {max_context_tokens} tokens), "
            f"but only {len(hqa_rows)} are given"
        )
    hqa = [_stage1_row(row, i) for i, row in enumerate(hqa_rows)]
    mixed = [_stage2_row(row) for row in docqa + rng.sample(hqa, n_hqa)]
    rng.shuffle(mixed)
    for index, row in enumerate(mixed):
        row["index"] = index
    report = {
        "n_rows": len(mixed),
        "docqa_in": len(docqa_rows),
        "docqa_too_long": len(docqa_rows) - len(fitting),
        "docqa_used": len(docqa),
        "docqa_max_tokens": max(lengths, default=0),
        "stage1_in": len(hqa_rows),
        "stage1_used": n_hqa,
        "by_source": count_by_source(mixed),
    }
    return mixed, report


def count_tokens(tokenizer: Tokenizer, text: str) -> int:
    return len(tokenizer.encode(text, add_special_tokens=False))


def count_by_source(rows: Iterable[dict]) -> dict[str, int]:
    return dict(sorted(Counter(row["data_source"] for row in rows).items()))


def _stage1_row(row: dict, position: int) -> dict:
    if not isinstance(row.get("context"), str):
        raise ValueError(
            f"stage-I row {position} (index {row.get('index')!r}): no 'context' text (rows "
            "holding only doc_ids are evaluation rows; training rows store the text)"
        )
    return {"data_source": DATA_SOURCE, **row}


def _stage2_row(row: dict) -> dict:
    return {
        "index": None,  # set after the shuffle
        "input": row["input"],
        "answers": list(row["answers"]),
        "context": row["context"],
        "data_source": row["data_source"],
        "num_tokens": row.get("num_tokens"),
        "source_index": row["index"],
    }
