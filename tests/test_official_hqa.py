"""MemAgent's released RULER-HotpotQA files: read in their exact layout (the packaged miniature,
scripts/fixtures/make_official_hqa.py), checked, and converted to rows that evaluate as the
released ones."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from memrepro.data.hotpotqa import load_hotpotqa
from memrepro.data.official_hqa import (
    convert_eval_rows,
    eval_file_name,
    read_eval_file,
    read_question_rows,
    supporting_ids,
)
from memrepro.data.ruler_hqa import build_doc_pool, context_pieces, render_context
from memrepro.data.sources import fixture_path


class WhitespaceTokenizer:
    def encode(self, text, add_special_tokens=True):
        return text.split()


OFFICIAL = fixture_path("memagent_hotpotqa/hotpotqa_dev.parquet").parent
KEPT = [0, 2, 3, 5, 6, 8, 9, 11]


@pytest.fixture(scope="module")
def pool():
    return build_doc_pool(
        load_hotpotqa(fixture_path("hotpot_dev_fixture.json")), WhitespaceTokenizer()
    )


def converted(pool, n_docs: int, store_ids_above: int = 20) -> tuple[list[dict], list[dict]]:
    path = OFFICIAL / eval_file_name(n_docs)
    released = read_eval_file(path, n_docs, rows=8)
    rows = convert_eval_rows(released, pool, WhitespaceTokenizer(), store_ids_above, str(path))
    return released, rows


@pytest.mark.parametrize(("n_docs", "form"), [(10, "context"), (20, "context"), (50, "doc_ids")])
def test_a_converted_row_renders_the_released_context_byte_for_byte(pool, n_docs, form):
    released, rows = converted(pool, n_docs)
    assert [row["index"] for row in rows] == KEPT
    for theirs, ours in zip(released, rows, strict=True):
        text = theirs["context"]
        if isinstance(text, list):  # the id-list form: the official evaluator renders it so
            text = render_context(text, pool.docs)
        assert form in ours and "".join(context_pieces(ours, pool.docs)) == text
        assert (ours["input"], ours["answers"], ours["num_docs"]) == (
            theirs["input"],
            theirs["answers"],
            n_docs,
        )
        assert ours["num_tokens"] == len(text.split())  # counted from the pool's documents


def test_the_released_questions_become_question_rows():
    rows = read_question_rows(OFFICIAL / "hotpotqa_dev.parquet", rows=8)
    assert [row["index"] for row in rows] == KEPT and all(row["num_docs"] == 20 for row in rows)
    dev = load_hotpotqa(fixture_path("hotpot_dev_fixture.json"))
    assert [row["input"] for row in rows] == [dev[i]["question"] for i in KEPT]
    assert [row["answers"] for row in rows] == [[dev[i]["answer"]] for i in KEPT]
    assert rows[0]["context"].startswith("Document 1:\n")
    assert len(read_question_rows(OFFICIAL / "hotpotqa_train.parquet", rows=None)) == 10


def edited(tmp_path: Path, n_docs: int, change) -> Path:
    rows = json.loads((OFFICIAL / eval_file_name(n_docs)).read_text())
    change(rows)
    path = tmp_path / eval_file_name(n_docs)
    path.write_text(json.dumps(rows))
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda rows: rows.pop(), r"eval_10.json: 7 rows; the released set has 8"),
        (lambda rows: rows[3].pop("answers"), r"eval_10.json: row 3: missing field 'answers'"),
        (
            lambda rows: rows[1].update(num_docs=20),
            r"row 1: field 'num_docs' is 20, the file's N 10",
        ),
        (lambda rows: rows[2].update(index="5"), r"row 2: field 'index' must be int, got '5'"),
    ],
)
def test_a_released_file_that_differs_stops_naming_file_row_and_field(tmp_path, change, message):
    with pytest.raises(ValueError, match=message):
        read_eval_file(edited(tmp_path, 10, change), 10, rows=8)


def test_a_context_not_made_of_the_dev_pool_is_refused(tmp_path, pool):
    def corrupt(rows):
        rows[0]["context"] = rows[0]["context"].replace("Document 2:\n", "Document 2:\nX", 1)

    path = edited(tmp_path, 10, corrupt)
    released = read_eval_file(path, 10, rows=8)
    with pytest.raises(ValueError, match=r"row 0 \(question 0\): field 'context', document 2: not"):
        convert_eval_rows(released, pool, WhitespaceTokenizer(), 20, str(path))


def test_a_row_whose_question_is_not_the_dev_files_is_refused(tmp_path, pool):
    path = edited(tmp_path, 50, lambda rows: rows[4].update(index=1))
    released = read_eval_file(path, 50, rows=8)
    with pytest.raises(ValueError, match=r"row 4 \(question 1\): field 'input' is not the dev"):
        convert_eval_rows(released, pool, WhitespaceTokenizer(), 20, str(path))


def test_a_released_question_file_missing_a_field_is_named(tmp_path):
    table = pq.read_table(OFFICIAL / "hotpotqa_dev.parquet").drop_columns(["reward_model"])
    path = tmp_path / "hotpotqa_dev.parquet"
    pq.write_table(table, path)
    with pytest.raises(ValueError, match=r"hotpotqa_dev.parquet.*reward_model"):
        read_question_rows(path, rows=8)
    shutil.copy(OFFICIAL / "hotpotqa_dev.parquet", path)
    with pytest.raises(
        ValueError, match=r"hotpotqa_dev.parquet: 8 rows; the released file has 128"
    ):
        read_question_rows(path, rows=128)


def test_a_repeated_released_row_stops_the_reader_before_any_evaluation(tmp_path):
    path = edited(tmp_path, 10, lambda rows: rows.__setitem__(3, dict(rows[2])))
    with pytest.raises(ValueError, match=r"eval_10.json: row 3 repeats row 2 \(question 3\)"):
        read_eval_file(path, 10, rows=8)


def test_a_row_without_its_questions_gold_paragraphs_is_refused(tmp_path, pool):
    """50 distinct documents of the pool, but the question's supporting paragraphs swapped
    for others: unanswerable from its context, so it must not score as a plain wrong answer."""
    gold = supporting_ids(next(q for q in pool.questions if q["index"] == 0))

    def drop_gold(rows):
        ids = rows[0]["context"]
        spare = [d for d in range(len(pool.docs)) if d not in ids and d not in gold]
        rows[0]["context"] = [spare.pop() if d in gold else d for d in ids]

    path = edited(tmp_path, 50, drop_gold)
    released = read_eval_file(path, 50, rows=8)
    lacks = r"row 0 \(question 0\): field 'context' lacks 2 of its question's 2 gold"
    with pytest.raises(ValueError, match=lacks):
        convert_eval_rows(released, pool, WhitespaceTokenizer(), 20, str(path))
