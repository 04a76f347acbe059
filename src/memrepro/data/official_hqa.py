"""MemAgent's released RULER-HotpotQA files, read, checked and converted to this pipeline's rows.

MemAgent's README downloads them from the Hugging Face dataset `BytedTsinghua-SIA/hotpotqa`:

- `hotpotqa_train.parquet`, `hotpotqa_dev.parquet`: the questions that survived the official
  "answerable without context" filter, each at 200 documents, in verl's row layout
  {data_source, prompt: [{role, content}], context, ability, reward_model: {style,
  ground_truth: [answers]}, extra_info: {index, question, num_docs}} (the filter's own columns
  beside them are ignored); `extra_info.index` is the question's position in HotpotQA's dev
  (or train) file;
- `eval_{N}.json`: the evaluation set at N documents, a JSON list of {context, input, answers,
  num_docs, index}; up to 10,000 documents `context` is the rendered text, above it the
  shuffled list of dev-pool doc ids (the official evaluator renders it at evaluation).

Our rows are `ruler_hqa.build_split`'s {index, input, answers, num_docs, context | doc_ids,
num_tokens}. A text context is parsed back into dev-pool doc ids: each "Document i:" section,
up to the next header, must be a document of the pool, so the ids render the released text byte
for byte and a converted row evaluates exactly as the released one (tested); `num_tokens` is
counted from the pool's per-document counts (`ruler_hqa.ContextTokens`). A file whose checksum (the
download checks it), fields or row count differ from the released ones stops the job, naming
the file, the row and the field; so does a row that does not hold what it says: `num_docs`
documents (ids, or "Document i:" sections), distinct but for the paragraphs its own question
repeats (checked against the dev pool), every gold paragraph of its question, each question
once, and a first answer, the one scored, that the official
metrics can score (`memrepro.scoring.golds`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from memrepro.data.io import read_json
from memrepro.data.ruler_hqa import (
    SEPARATOR,
    ContextTokens,
    DocPool,
    Tokenizer,
    sample_row,
)
from memrepro.scoring.golds import bad_gold
from memrepro.scoring.metrics import ANSWER_IS_METRICS

EVAL_FIELDS: dict[str, tuple[type, ...]] = {
    "context": (str, list),
    "input": (str,),
    "answers": (list,),
    "num_docs": (int,),
    "index": (int,),
}
QUESTION_COLUMNS = ("context", "reward_model", "extra_info")


def eval_file_name(n_docs: int) -> str:
    """The released evaluation set at n_docs documents."""
    return f"eval_{n_docs}.json"


def read_eval_file(path: Path, n_docs: int, rows: int) -> list[dict[str, Any]]:
    """A released `eval_{N}.json`, every row checked: the fields and their types, `num_docs`
    equal to N, N documents in its context, a first answer that can be scored, each question
    once, and `rows` rows (the released count: the paper's 128 questions)."""
    data = read_json(path)
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of rows, got {type(data).__name__}")
    first_row: dict[int, int] = {}
    for i, row in enumerate(data):
        _check_eval_row(row, f"{path}: row {i}", n_docs)
        seen = first_row.setdefault(row["index"], i)
        if seen != i:
            raise ValueError(
                f"{path}: row {i} repeats row {seen} (question {row['index']}); "
                "the released set holds each question once"
            )
    if len(data) != rows:
        raise ValueError(f"{path}: {len(data)} rows; the released set has {rows} (one a question)")
    return data


def _check_eval_row(row: Any, where: str, n_docs: int) -> None:
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected an object, got {type(row).__name__}")
    for key, kinds in EVAL_FIELDS.items():
        if key not in row:
            raise ValueError(f"{where}: missing field {key!r}")
        if isinstance(row[key], bool) or not isinstance(row[key], kinds):
            names = " or ".join(kind.__name__ for kind in kinds)
            raise ValueError(f"{where}: field {key!r} must be {names}, got {row[key]!r:.60}")
    if not all(isinstance(a, str) for a in row["answers"]):
        raise ValueError(f"{where}: field 'answers' must list strings")
    if not row["answers"]:
        raise ValueError(f"{where}: field 'answers': an empty list (the first answer is scored)")
    problem = bad_gold(row["answers"][:1], ANSWER_IS_METRICS, published=True)  # the one scored
    if problem is not None:
        raise ValueError(f"{where}: {problem}")
    if row["num_docs"] != n_docs:
        raise ValueError(f"{where}: field 'num_docs' is {row['num_docs']}, the file's N {n_docs}")
    context = row["context"]
    if isinstance(context, list):
        if not all(isinstance(d, int) and not isinstance(d, bool) for d in context):
            raise ValueError(f"{where}: field 'context' must be text or a list of doc ids")
        documents = len(context)
    else:
        documents = len(split_documents(context, where))
    if documents != n_docs:
        raise ValueError(f"{where}: field 'context': {documents} documents, not {n_docs}")


def convert_eval_rows(
    rows: Sequence[Mapping[str, Any]],
    pool: DocPool,
    tokenizer: Tokenizer,
    store_ids_above: int,
    where: str,
) -> list[dict[str, Any]]:
    """Released rows as ours: their doc ids in the dev pool (parsed from a text context), text
    up to `store_ids_above` documents and doc ids above, `num_tokens` counted; each row's
    question must be the pool's question of that index."""
    lookup = {doc: i for i, doc in enumerate(pool.docs)}
    samples = []
    for at, row, question in rows_with_questions(rows, pool, where):
        if row["input"] != question["question"]:
            raise ValueError(f"{at}: field 'input' is not the dev file's question of that index")
        doc_ids = _doc_ids(row["context"], lookup, pool.docs, at)
        _check_repeats(doc_ids, question["doc_ids"], at)
        _check_gold_paragraphs(doc_ids, supporting_ids(question), at)
        samples.append(doc_ids)
    counter = ContextTokens(tokenizer, pool.docs, pool.tokens)
    counter.prepare(samples)
    return [
        sample_row(row, row["num_docs"], doc_ids, pool.docs, store_ids_above, counter)
        for row, doc_ids in zip(rows, samples, strict=True)
    ]


def rows_with_questions(
    rows: Sequence[Mapping[str, Any]], pool: DocPool, where: str
) -> Iterator[tuple[str, Mapping[str, Any], dict[str, Any]]]:
    """Each RULER-HQA row with where it is (`where`: its file; for errors) and the dev pool's
    question of its index; a row whose index names none stops, naming it."""
    questions = {q["index"]: q for q in pool.questions}
    for i, row in enumerate(rows):
        at = f"{where}: row {i} (question {row['index']})"
        if row["index"] not in questions:
            raise ValueError(f"{at}: field 'index' names no question of the dev pool")
        yield at, row, questions[row["index"]]


def _doc_ids(
    context: str | list[int], lookup: Mapping[str, int], docs: Sequence[str], at: str
) -> list[int]:
    if isinstance(context, list):
        bad = [d for d in context if not 0 <= d < len(docs)]
        if bad:
            raise ValueError(f"{at}: field 'context' holds doc ids outside the pool: {bad[:5]}")
        return list(context)
    return parse_context(context, lookup, at)


def _check_repeats(doc_ids: Sequence[int], own: Sequence[int], at: str) -> None:
    """A sample's documents are distinct, but for a paragraph its question itself holds more
    than once (the official sample then holds it as often: `ruler_hqa.sample_doc_ids`)."""
    allowed = Counter(own)
    for doc_id, times in Counter(doc_ids).items():
        if times > max(1, allowed[doc_id]):
            raise ValueError(
                f"{at}: field 'context': doc id {doc_id} appears {times} times; a row's "
                "documents are distinct but for those its question repeats"
            )


def supporting_ids(question: Mapping[str, Any]) -> list[int]:
    """A pool question's supporting paragraphs (its two key-information groups). A pool written
    before they were stored gives all its own paragraphs, which an official sample holds too."""
    groups = question.get("gold_doc_ids")
    return question["doc_ids"] if groups is None else [d for group in groups for d in group]


def _check_gold_paragraphs(doc_ids: Sequence[int], gold: Sequence[int], at: str) -> None:
    """A sample holds every supporting paragraph of its question: without them the question
    cannot be answered from the context, and a wrong answer would measure nothing."""
    missing = sorted(set(gold) - set(doc_ids))
    if missing:
        raise ValueError(
            f"{at}: field 'context' lacks {len(missing)} of its question's "
            f"{len(set(gold))} gold paragraphs (dev-pool doc ids {missing[:5]})"
        )


def parse_context(text: str, lookup: Mapping[str, int], at: str) -> list[int]:
    """The pool doc ids of a rendered context (`split_documents`)."""
    ids = []
    for number, document in enumerate(split_documents(text, at), start=1):
        if document not in lookup:
            raise ValueError(
                f"{at}: field 'context', document {number}: not a document of the dev pool"
            )
        ids.append(lookup[document])
    return ids


def split_documents(text: str, at: str) -> list[str]:
    """The documents of a rendered context "Document 1:\\n{d}\\n\\nDocument 2:\\n{d}…": each
    section up to the next header of the following number."""
    documents = []
    position, number = 0, 1
    while True:
        header = f"Document {number}:\n"
        if not text.startswith(header, position):
            raise ValueError(f"{at}: field 'context' lacks the header {header.strip()!r}")
        start = position + len(header)
        following = text.find(f"{SEPARATOR}Document {number + 1}:\n", start)
        documents.append(text[start : len(text) if following < 0 else following])
        if following < 0:
            return documents
        position, number = following + len(SEPARATOR), number + 1


def read_question_rows(path: Path, rows: int | None) -> list[dict[str, Any]]:
    """A released `hotpotqa_{train,dev}.parquet` as our question rows {index, input, answers,
    num_docs, context, num_tokens: None}, in file order; `rows`: the count it must have (dev:
    the paper's 128; None: any)."""
    from memrepro.data.io import read_parquet

    table = read_parquet(path, QUESTION_COLUMNS)
    out = []
    for i, row in enumerate(table.select(list(QUESTION_COLUMNS)).to_pylist()):
        out.append(_question_row(row, f"{path}: row {i}"))
    if rows is not None and len(out) != rows:
        raise ValueError(f"{path}: {len(out)} rows; the released file has {rows}")
    if not out:
        raise ValueError(f"{path}: no rows")
    return out


def _question_row(row: Mapping[str, Any], at: str) -> dict[str, Any]:
    info, reward = row["extra_info"], row["reward_model"]
    if not isinstance(info, dict) or not isinstance(reward, dict):
        raise ValueError(f"{at}: fields 'extra_info' and 'reward_model' must be structs")
    fields = {
        "extra_info.index": (info.get("index"), int),
        "extra_info.question": (info.get("question"), str),
        "extra_info.num_docs": (info.get("num_docs"), int),
        "reward_model.ground_truth": (reward.get("ground_truth"), list),
        "context": (row["context"], str),
    }
    for name, (value, kind) in fields.items():
        if isinstance(value, bool) or not isinstance(value, kind):
            raise ValueError(f"{at}: field {name!r} must be {kind.__name__}, got {value!r:.60}")
    answers = reward["ground_truth"]
    if not answers or not all(isinstance(a, str) for a in answers):
        raise ValueError(f"{at}: field 'reward_model.ground_truth' must list answer strings")
    return {
        "index": info["index"],
        "input": info["question"],
        "answers": list(answers),
        "num_docs": info["num_docs"],
        "context": row["context"],
        "num_tokens": None,
    }
