import json
import random

import numpy as np
import pytest

from memrepro.data.hotpotqa import build_pool, load_hotpotqa, paragraph_text, question_records
from memrepro.data.ruler_hqa import (
    build_eval_sets,
    build_split,
    context_pieces,
    iter_context_pieces,
    render_context,
    sample_doc_ids,
    sample_rng,
)
from memrepro.data.sources import fixture_path

# The official gold slots (MemAgent's official code): 1-based documents of the question's docs.
OFFICIAL_SLOTS = {
    200: [7, 10, 17, 81, 88, 96, 109, 154, 177, 191],
    50: [11, 18, 27, 29, 37, 41, 42, 43, 44, 48],
}


class WhitespaceTokenizer:
    def encode(self, text, add_special_tokens=True):
        assert add_special_tokens is False
        return text.split()


@pytest.fixture(scope="module")
def train():
    records = load_hotpotqa(fixture_path("hotpot_train_fixture.json"))
    pool = build_pool(records)
    return records, pool, question_records(records, pool)


# --- the fixtures ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["hotpot_train_fixture.json", "hotpot_dev_fixture.json"])
def test_hotpot_fixture_is_consistent(name):
    records = load_hotpotqa(fixture_path(name))
    pool = build_pool(records)
    assert 10 <= len(records) <= 20
    assert 70 <= len(pool) < 200
    assert len(pool) < 10 * len(records)  # paragraphs are shared across questions
    assert len({r["_id"] for r in records}) == len(records)
    for r in records:
        assert r["type"] in ("bridge", "comparison") and r["level"] in ("easy", "medium", "hard")
        context = dict(r["context"])
        assert len(r["context"]) == len(context) == 10
        gold = {title for title, _ in r["supporting_facts"]}
        assert len(gold) == 2
        for title, sent_id in r["supporting_facts"]:
            assert 0 <= sent_id < len(context[title])
        for sentences in context.values():
            assert not sentences[0].startswith(" ")
            assert all(s.startswith(" ") for s in sentences[1:])
        if r["answer"] not in ("yes", "no"):
            gold_text = " ".join("".join(context[t]) for t in gold)
            assert r["answer"] in gold_text, r["question"]
        assert len(r["answer"].split()) <= 4


# --- hotpotqa.py -------------------------------------------------------------------------------


def test_pool_is_sorted_unique_and_ids_map_back(dev):
    records, pool, questions = dev
    assert pool == sorted(set(pool))
    assert len(questions) == len(records)
    for q, r in zip(questions, records, strict=True):
        assert q["question"] == r["question"] and q["answers"] == [r["answer"]]
        assert [pool[i] for i in q["doc_ids"]] == [paragraph_text(t, s) for t, s in r["context"]]
    title, sentences = records[0]["context"][0]
    assert f"{title}\n{sentences[0]}{sentences[1]}" in pool[questions[0]["doc_ids"][0]]


def _write(tmp_path, rows):
    path = tmp_path / "hotpot.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


def test_load_hotpotqa_errors_name_file_row_and_key(tmp_path, dev):
    records = dev[0]
    rows = [dict(records[0]), dict(records[1])]
    del rows[1]["answer"]
    with pytest.raises(ValueError, match=r"hotpot\.json: row 1: missing key 'answer'"):
        load_hotpotqa(_write(tmp_path, rows))
    rows = [dict(records[0], question=3)]
    with pytest.raises(ValueError, match=r"row 0: key 'question' must be str, got int"):
        load_hotpotqa(_write(tmp_path, rows))
    rows = [dict(records[0], context=[["title", "not a list"]])]
    with pytest.raises(ValueError, match=r"row 0: key 'context'\[0\]"):
        load_hotpotqa(_write(tmp_path, rows))
    rows = [dict(records[0], supporting_facts=[["title", "0"]])]
    with pytest.raises(ValueError, match=r"row 0: key 'supporting_facts'\[0\]"):
        load_hotpotqa(_write(tmp_path, rows))
    with pytest.raises(ValueError, match="expected a JSON list"):
        load_hotpotqa(_write(tmp_path, {"data": []}))


# --- sampling ----------------------------------------------------------------------------------


@pytest.mark.parametrize("n_docs", sorted(OFFICIAL_SLOTS))
def test_official_gold_slots(n_docs):
    question_ids = [903, 4, 512, 77, 250, 999, 13, 640, 321, 58]
    for seed in (0, 42):
        ids = sample_doc_ids(question_ids, 1000, n_docs, sample_rng(seed, n_docs, 3)).tolist()
        slots = sorted(i + 1 for i, d in enumerate(ids) if d in question_ids)
        assert slots == OFFICIAL_SLOTS[n_docs]
        assert len(ids) == len(set(ids)) == n_docs


def test_question_docs_keep_their_relative_slots():
    # The same permutation for every sample: the k-th question doc always lands in one slot.
    a = sample_doc_ids(list(range(10)), 500, 200, sample_rng(1, 200, 0)).tolist()
    b = sample_doc_ids(list(range(100, 110)), 500, 200, sample_rng(2, 200, 1)).tolist()
    assert [a.index(k) for k in range(10)] == [b.index(100 + k) for k in range(10)]


@pytest.mark.parametrize("size", [12, 40, 5000])
def test_distractors_are_the_rest_of_the_pool(size):
    # All but one of the other documents: distinct, in range, never one of the question's own
    # (docs at both ends of the pool included); a question's duplicate doc stays duplicated.
    own = [size - 1, 0, 7, size // 2]
    for seed in range(5):
        ids = sample_doc_ids(own, size, size - 1, sample_rng(seed, size - 1, 0)).tolist()
        others = [i for i in ids if i not in own]
        assert sorted(ids) == sorted(set(ids)) and len(ids) == size - 1
        assert set(own) <= set(ids) and set(others) < set(range(size)) - set(own)
    twice = sample_doc_ids([3, 3], size, 6, sample_rng(0, 6, 0)).tolist()
    assert twice.count(3) == 2 and len(set(twice)) == 5


def test_draws_are_uniform_over_the_rest_of_the_pool():
    counts = np.zeros(30, dtype=int)
    for index in range(3000):
        ids = sample_doc_ids([0, 1], 30, 5, sample_rng(42, 5, index))
        counts[ids] += 1
    assert counts[:2].tolist() == [3000, 3000]
    assert counts[2:].min() > 250 and counts[2:].max() < 400  # 321 each, sd 17


def test_a_sample_depends_on_seed_n_and_question_only():
    draw = lambda seed, n, index: sample_doc_ids([1, 2], 1000, n, sample_rng(seed, n, index))  # noqa: E731
    assert (draw(42, 50, 7) == draw(42, 50, 7)).all()
    for other in ((43, 50, 7), (42, 50, 8)):
        assert (draw(42, 50, 7) != draw(*other)).any()
    assert not np.isin(draw(42, 50, 7), draw(42, 60, 7)).all()


def test_whole_pool_when_n_reaches_pool_size():
    expected = list(range(60))
    random.Random(4).shuffle(expected)
    rng = sample_rng(0, 60, 0)
    state = rng.bit_generator.state
    assert sample_doc_ids([5, 17, 30], 60, 60, rng).tolist() == expected
    assert rng.bit_generator.state == state  # no distractor draw consumed


def test_more_docs_than_the_pool_is_an_error():
    # The official code silently keeps the whole pool and still says num_docs = N.
    with pytest.raises(ValueError, match=r"n_docs=200 exceeds the pool of 60 .*ruler_hqa.n_docs"):
        sample_doc_ids([5, 17, 30], 60, 200, sample_rng(0, 200, 0))


def test_too_few_docs_is_an_error():
    with pytest.raises(ValueError, match="below the question's 10 docs"):
        sample_doc_ids(list(range(10)), 100, 5, sample_rng(0, 5, 0))


# --- rendering ---------------------------------------------------------------------------------


def test_render_context_and_pieces():
    pool = ["Alpha\nfirst doc.", "Beta\n second.", "Gamma\nthird"]
    text = render_context([2, 0], pool)
    assert text == "Document 1:\nGamma\nthird\n\nDocument 2:\nAlpha\nfirst doc."
    assert "".join(iter_context_pieces([2, 0], pool)) == text
    assert "".join(iter_context_pieces([], pool)) == render_context([], pool) == ""


# --- building splits ---------------------------------------------------------------------------


def test_build_split_rows(dev):
    _, pool, questions = dev
    rows = build_split(questions, pool, 20, limit=5, seed=42)
    assert len(rows) == 5
    for row, q in zip(rows, questions[:5], strict=True):
        assert set(row) == {"index", "input", "answers", "num_docs", "context", "num_tokens"}
        assert (row["index"], row["input"], row["answers"]) == (
            q["index"],
            q["question"],
            q["answers"],
        )
        assert row["num_docs"] == 20 and row["num_tokens"] is None
        docs = row["context"].split("\n\n")
        assert [d.split("\n", 1)[0] for d in docs] == [f"Document {i}:" for i in range(1, 21)]
        bodies = [d.split("\n", 1)[1] for d in docs]
        assert len(set(bodies)) == 20
        assert all(pool[i] in bodies for i in q["doc_ids"])


def test_build_split_is_reproducible_and_independent_of_other_questions(train):
    _, pool, questions = train
    full = build_split(questions, pool, 40, limit=None, seed=42)
    assert len(full) == len(questions)
    assert build_split(questions, pool, 40, limit=None, seed=42) == full
    assert build_split(questions, pool, 40, limit=4, seed=42) == full[:4]
    assert build_split(questions[2:5], pool, 40, limit=None, seed=42) == full[2:5]
    other = build_split(questions, pool, 40, limit=None, seed=7)
    assert [r["context"] for r in other] != [r["context"] for r in full]


def test_id_rows_rebuild_the_same_text_and_token_count(dev):
    _, pool, questions = dev
    tok = WhitespaceTokenizer()
    text_rows = build_split(questions, pool, 40, limit=3, seed=42, tokenizer=tok)
    id_rows = build_split(questions, pool, 40, limit=3, seed=42, tokenizer=tok, store_ids_above=30)
    for text_row, id_row in zip(text_rows, id_rows, strict=True):
        assert "context" not in id_row and len(id_row["doc_ids"]) == 40
        assert "".join(context_pieces(id_row, pool)) == text_row["context"]
        assert list(context_pieces(text_row, pool)) == [text_row["context"]]
        # Whitespace tokens never cross a piece boundary, so the approximation is exact here.
        assert id_row["num_tokens"] == text_row["num_tokens"] == len(text_row["context"].split())


def test_n_at_pool_size_takes_the_whole_pool_and_above_it_fails(dev):
    _, pool, questions = dev
    rows = build_split(questions, pool, len(pool), limit=2, seed=42)
    for row in rows:
        assert row["num_docs"] == len(pool)
        assert row["context"].count("Document ") >= len(pool)
        assert row["context"] == rows[0]["context"]  # the same (whole, shuffled) pool
    with pytest.raises(ValueError, match=r"ruler_hqa\.n_docs"):
        build_split(questions, pool, len(pool) + 1, limit=2, seed=42)


def test_build_eval_sets(dev):
    _, pool, questions = dev
    indices = [7, 2, 9, 4]
    sets = build_eval_sets(questions, pool, [10, 20, 40], indices, seed=42)
    assert sorted(sets) == [10, 20, 40]
    selected = [questions[i] for i in indices]
    for n, rows in sets.items():
        assert [r["index"] for r in rows] == indices
        assert rows == build_split(selected, pool, n, limit=None, seed=42)
    # N = 10 is exactly the question's own documents, in the fixed Random(4) order.
    for row, q in zip(sets[10], selected, strict=True):
        expected = list(q["doc_ids"])
        random.Random(4).shuffle(expected)
        assert row["context"] == render_context(expected, pool)
    with pytest.raises(ValueError, match="not in the split"):
        build_eval_sets(questions, pool, [10], [0, 99])


# --- the shared document pool (hqa-pool → eval-set, evaluate) ----------------------------------


def test_the_pool_file_builds_the_same_eval_sets_as_the_raw_dev_file(dev, tmp_path):
    from memrepro.data.ruler_hqa import build_doc_pool, read_pool, write_pool

    records, pool, questions = dev
    tok = WhitespaceTokenizer()
    built = build_doc_pool(records, tok)
    assert built.docs == pool and built.questions == questions
    assert list(built.tokens) == [len((doc + "\n\n").split()) for doc in pool]
    write_pool(tmp_path / "docs.parquet", tmp_path / "questions.parquet", built)
    read = read_pool(tmp_path / "docs.parquet", tmp_path / "questions.parquet")
    assert read.docs == pool and read.questions == questions
    assert list(read.tokens) == list(built.tokens)
    indices = [7, 2, 9]
    for store_ids_above in (10, 1000):
        kwargs = {"seed": 42, "tokenizer": tok, "store_ids_above": store_ids_above}
        from_raw = build_eval_sets(questions, pool, [10, 40], indices, **kwargs)
        from_pool = build_eval_sets(
            read.questions, read.docs, [10, 40], indices, doc_tokens=read.tokens, **kwargs
        )
        assert from_pool == from_raw
        for rows in from_pool.values():
            for row in rows:
                assert row["num_tokens"] == len("".join(context_pieces(row, pool)).split())


def test_a_pool_file_without_its_columns_names_itself(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from memrepro.data.ruler_hqa import read_pool

    pq.write_table(pa.table({"doc": ["a"]}), tmp_path / "docs.parquet")
    with pytest.raises(ValueError, match=r"docs\.parquet: missing column\(s\) \['tokens'\]"):
        read_pool(tmp_path / "docs.parquet", tmp_path / "questions.parquet")
    (tmp_path / "bad.parquet").write_text("not parquet")
    with pytest.raises(ValueError, match=r"bad\.parquet: not a readable parquet file"):
        read_pool(tmp_path / "bad.parquet", tmp_path / "questions.parquet")
