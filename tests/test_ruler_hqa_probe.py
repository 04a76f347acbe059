"""Table 4's probe: RULER-HQA samples whose two key-information groups sit at given depths."""

import hashlib
import json

import numpy as np
import pytest
from test_ruler_hqa import WhitespaceTokenizer

from memrepro.data.hotpotqa import build_pool, paragraph_text, question_records
from memrepro.data.hqa_probe import place_groups, probe_rows
from memrepro.data.ruler_hqa import (
    build_eval_sets,
    build_split,
    context_pieces,
    sample_doc_ids,
    sample_rng,
)

SETTINGS = [(0.0, 0.2), (0.0, 1.0), (0.2, 0.8), (0.4, 0.6), (0.8, 1.0)]  # Table 4's rows
# First slots (0-based) of groups of sizes (1, 1): round(depth * (N - 1)).
SLOTS_1_1 = {
    50: {
        (0.0, 0.2): (0, 10),
        (0.0, 1.0): (0, 49),
        (0.2, 0.8): (10, 39),
        (0.4, 0.6): (20, 29),
        (0.8, 1.0): (39, 49),
    },
    200: {
        (0.0, 0.2): (0, 40),
        (0.0, 1.0): (0, 199),
        (0.2, 0.8): (40, 159),
        (0.4, 0.6): (80, 119),
        (0.8, 1.0): (159, 199),
    },
}
# Sizes (1, 2) at N = 200: group 2 starts at round(depth * 198).
SLOTS_1_2 = {
    (0.0, 0.2): (0, 40),
    (0.0, 1.0): (0, 198),
    (0.2, 0.8): (40, 158),
    (0.4, 0.6): (80, 119),
    (0.8, 1.0): (159, 198),
}
OWN = [903, 4, 512, 77, 250, 999, 13, 640, 321, 58]  # a question's 10 paragraphs, pool of 1000
# Rows of the dev fixture (N = 10, 20, 40, whole pool; eval sets) before the probe existed.
STORE_IDS = 20  # the packaged released sets hold ids above 20 documents, as ours then do
RELEASED_INDICES = [0, 2, 3, 5, 6, 8, 9, 11]  # the questions of the packaged released sets
ROWS_DIGEST = "cbafc1bce6b777bfccc2a4047208c6ff864773435263d4978976e0e9f3312464"


def _sample(n_docs, seed=0, index=3):
    return sample_doc_ids(OWN, 1000, n_docs, sample_rng(seed, n_docs, index))


def _slots(ids, group):
    return [int(np.flatnonzero(ids == d)[0]) for d in group]


def _bodies(context):
    return [d.split("\n", 1)[1] for d in context.split("\n\n")]


# --- the key-information groups (hotpotqa.gold_groups) -----------------------------------------


def test_gold_groups_are_the_supporting_paragraphs_in_title_order(dev):
    records, pool, questions = dev
    for q, r in zip(questions, records, strict=True):
        first, second = dict.fromkeys(t for t, _ in r["supporting_facts"])
        context = dict(r["context"])
        assert [[pool[d] for d in g] for g in q["gold_doc_ids"]] == [
            [paragraph_text(first, context[first])],
            [paragraph_text(second, context[second])],
        ]


def _row(titles, supporting_facts):
    context = [[t, [f"{t} sentence.", f" More on {t}."]] for t in titles]
    return {
        "_id": "x",
        "question": "q?",
        "answer": "a",
        "context": context,
        "supporting_facts": supporting_facts,
    }


def test_three_supporting_titles_split_first_title_then_the_rest():
    titles = [f"T{i}" for i in range(10)]
    row = _row(titles, [["T7", 0], ["T2", 1], ["T7", 1], ["T5", 0]])
    row["context"].append(["T7", ["Another T7 paragraph."]])  # a title held twice
    pool = build_pool([row])
    [q] = question_records([row], pool)
    ids = {t: q["doc_ids"][i] for i, t in enumerate(titles)}
    # group 1: both T7 paragraphs (context order); group 2: T2 then T5 (supporting-facts order)
    assert q["gold_doc_ids"] == [[ids["T7"], q["doc_ids"][10]], [ids["T2"], ids["T5"]]]
    assert {k: q[k] for k in ("index", "question", "answers")} == {
        "index": 0,
        "question": "q?",
        "answers": ["a"],
    }
    assert len(q["doc_ids"]) == 11


def test_too_few_supporting_titles_leave_a_group_empty():
    titles = [f"T{i}" for i in range(10)]
    one = _row(titles, [["T3", 0], ["T3", 1]])
    missing = _row(titles, [["T3", 0], ["Elsewhere", 0]])
    bare = {k: v for k, v in _row(titles, []).items() if k != "supporting_facts"}  # ruler.py rows
    pool = build_pool([one])
    groups = [q["gold_doc_ids"] for q in question_records([one, missing, bare], pool)]
    t3 = pool.index(paragraph_text("T3", one["context"][3][1]))
    assert groups == [[[t3], []], [[t3], []], [[], []]]


# --- place_groups ------------------------------------------------------------------------------


@pytest.mark.parametrize("n_docs", sorted(SLOTS_1_1))
@pytest.mark.parametrize("depths", SETTINGS)
def test_groups_of_one_land_at_the_expected_slots(n_docs, depths):
    for seed in (0, 1):
        sample = _sample(n_docs, seed)
        placed = place_groups(sample, [[512], [58]], depths)
        assert (_slots(placed, [512])[0], _slots(placed, [58])[0]) == SLOTS_1_1[n_docs][depths]
        assert sorted(placed.tolist()) == sorted(sample.tolist())


@pytest.mark.parametrize("depths", SETTINGS)
def test_a_group_occupies_consecutive_slots(depths):
    placed = place_groups(_sample(200), [[77], [13, 903]], depths)
    start_1, start_2 = SLOTS_1_2[depths]
    assert _slots(placed, [77]) == [start_1]
    assert _slots(placed, [13, 903]) == [start_2, start_2 + 1]


@pytest.mark.parametrize("depths", SETTINGS)
def test_the_other_documents_keep_their_order(depths):
    sample = _sample(100)
    gold = {903, 250, 321}
    placed = place_groups(sample, [[903], [250, 321]], depths)
    rest = [d for d in placed.tolist() if d not in gold]
    assert rest == [d for d in sample.tolist() if d not in gold]
    assert len(placed) == 100


def test_depth_zero_and_one_are_the_ends_and_a_list_is_not_changed():
    sample = _sample(50)
    before = sample.copy()
    placed = place_groups(sample.tolist(), [[4, 77], [640]], (0.0, 1.0))
    assert placed[:2].tolist() == [4, 77] and placed[-1] == 640
    assert (sample == before).all()


@pytest.mark.parametrize(
    ("depths", "starts"),
    [
        ((0.5, 0.5), (5, 7)),  # both at slot 5: group 2 right after group 1
        ((1.0, 1.0), (8, 10)),  # both at the end: the pair ends at the last slot
        ((0.0, 0.0), (0, 2)),
        ((0.6, 0.5), (7, 5)),  # group 2 starts first: group 1 right after it
        ((0.4, 0.6), (4, 6)),  # adjacent, no overlap: as asked
    ],
)
def test_overlapping_groups_go_one_after_the_other(depths, starts):
    sample = np.arange(12)[::-1]
    placed = place_groups(sample, [[3, 9], [0, 6]], depths)
    assert (_slots(placed, [3, 9]), _slots(placed, [0, 6])) == (
        [starts[0], starts[0] + 1],
        [starts[1], starts[1] + 1],
    )


def test_a_repeated_paragraph_moves_once():
    sample = sample_doc_ids([5, 5, 7], 40, 12, sample_rng(0, 12, 0))
    placed = place_groups(sample, [[5], [7]], (0.0, 1.0))
    assert placed[0] == 5 and placed[-1] == 7 and placed.tolist().count(5) == 2


@pytest.mark.parametrize(
    ("groups", "depths", "message"),
    [
        ([[4], [58]], (1.5, 0.2), r"two depths in \[0, 1\].*got \[1.5, 0.2\]"),
        ([[4], [58]], (-0.1, 0.2), r"two depths in \[0, 1\]"),
        ([[4], [58]], (float("nan"), 0.2), r"two depths in \[0, 1\]"),
        ([[4], [58]], (0.2,), r"two depths in \[0, 1\].*got \[0.2\]"),
        ([[4], [58]], (0.2, 0.4, 0.6), r"two depths in \[0, 1\]"),
        ([[4], [2, 58]], (0.0, 1.0), r"doc ids \[2\] are not in the sample"),
        ([[], [58]], (0.0, 1.0), "key-information group 1 is empty"),
        ([[4], []], (0.0, 1.0), "key-information group 2 is empty"),
        ([[4], [58], [13]], (0.0, 1.0), "expected two key-information groups, got 3"),
        ([[4, 58], [58]], (0.0, 1.0), "groups repeat a doc id"),
    ],
)
def test_bad_inputs_name_the_problem(groups, depths, message):
    with pytest.raises(ValueError, match=message):
        place_groups(_sample(50), groups, depths)


# --- probe_rows: the evaluation rows of one length, reordered -----------------------------------


def _digest(questions, pool):
    digest = hashlib.sha256()
    for n in (10, 20, 40, len(pool)):
        rows = build_split(
            questions,
            pool,
            n,
            limit=None,
            seed=42,
            tokenizer=WhitespaceTokenizer(),
            store_ids_above=30,
        )
        digest.update(json.dumps(rows).encode())
    sets = build_eval_sets(questions, pool, [10, 50], [7, 2, 9], seed=3)
    digest.update(json.dumps(sets).encode())
    return digest.hexdigest()


def test_the_random_rows_are_those_of_before_byte_for_byte(dev):
    _, pool, questions = dev
    assert _digest(questions, pool) == ROWS_DIGEST
    # questions without gold_doc_ids (an old pool file) give the same rows too
    old = [{k: v for k, v in q.items() if k != "gold_doc_ids"} for q in questions]
    assert _digest(old, pool) == ROWS_DIGEST


@pytest.fixture(scope="module")
def doc_pool():
    from memrepro.data.hotpotqa import load_hotpotqa
    from memrepro.data.ruler_hqa import build_doc_pool
    from memrepro.data.sources import fixture_path

    records = load_hotpotqa(fixture_path("hotpot_dev_fixture.json"))
    return build_doc_pool(records, WhitespaceTokenizer())


def _random_rows(doc_pool, eval_sets, n_docs, store_ids_above=STORE_IDS):
    """The rows the random placement evaluates under `ruler_hqa.eval_sets`: synthesized here,
    or the released set converted (the packaged miniature of MemAgent's files)."""
    if eval_sets == "official":
        from test_official_hqa import converted

        return converted(doc_pool, n_docs, store_ids_above)[1]
    questions = {q["index"]: q for q in doc_pool.questions}
    return build_split(
        [questions[i] for i in RELEASED_INDICES],
        doc_pool.docs,
        n_docs,
        limit=None,
        seed=42,
        tokenizer=WhitespaceTokenizer(),
        store_ids_above=store_ids_above,
        doc_tokens=doc_pool.tokens,
    )


def _probe(doc_pool, rows, depths, store_ids_above=STORE_IDS):
    return probe_rows(
        rows,
        doc_pool,
        depths,
        tokenizer=WhitespaceTokenizer(),
        store_ids_above=store_ids_above,
        where="eval.jsonl",
    )


def _ids(row, pool):
    from memrepro.data.hqa_probe import row_doc_ids

    return row_doc_ids(row, {doc: i for i, doc in enumerate(pool.docs)}, "row")


@pytest.mark.parametrize("eval_sets", ["synthesized", "official"])
@pytest.mark.parametrize("n_docs", [10, 20, 50])
@pytest.mark.parametrize("depths", SETTINGS)
def test_a_probe_row_is_its_random_row_reordered(doc_pool, eval_sets, n_docs, depths):
    """Paired under either eval_sets: the same question and documents, the gold groups at the
    probe's slots, every other document in the random row's order."""
    random = _random_rows(doc_pool, eval_sets, n_docs)
    probe = _probe(doc_pool, random, depths)
    questions = {q["index"]: q for q in doc_pool.questions}
    assert len(probe) == len(random) == len(RELEASED_INDICES)
    for b, p in zip(random, probe, strict=True):
        q = questions[b["index"]]
        assert set(p) == set(b) | {"placement"} and p["placement"] == list(depths)
        same = ("index", "input", "answers", "num_docs")
        assert {k: p[k] for k in same} == {k: b[k] for k in same}
        placed, base = _ids(p, doc_pool), _ids(b, doc_pool)
        assert sorted(placed) == sorted(base) and len(placed) == n_docs
        gold = {d for g in q["gold_doc_ids"] for d in g}
        assert [d for d in placed if d not in gold] == [d for d in base if d not in gold]
        for group in q["gold_doc_ids"]:  # consecutive (their slots: test_groups_of_one_...)
            start = placed.index(group[0])
            assert placed[start : start + len(group)] == group
        text = "".join(context_pieces(p, doc_pool.docs))
        assert p["num_tokens"] == len(text.split())  # counted again, in its own order
    assert probe == _probe(doc_pool, random, depths)  # deterministic


@pytest.mark.parametrize("n_docs", [10, 20, 40, None])  # None: the whole pool
def test_first_and_last_documents_hold_the_groups_at_0_and_100(doc_pool, n_docs):
    n_docs = n_docs or len(doc_pool.docs)
    probe = _probe(doc_pool, _random_rows(doc_pool, "synthesized", n_docs), (0.0, 1.0), n_docs)
    questions = {q["index"]: q for q in doc_pool.questions}
    for row in probe:
        [first], [last] = questions[row["index"]]["gold_doc_ids"]
        docs = row["context"].split("\n\n")
        assert docs[0] == f"Document 1:\n{doc_pool.docs[first]}"
        assert docs[-1] == f"Document {n_docs}:\n{doc_pool.docs[last]}" and len(docs) == n_docs


def test_probe_rows_keep_the_random_rows_form(doc_pool):
    """Text up to store_ids_above documents, ids above: the same context either way."""
    random = _random_rows(doc_pool, "synthesized", 40, store_ids_above=100)
    text_rows = _probe(doc_pool, random, (0.4, 0.6), store_ids_above=100)
    id_rows = _probe(doc_pool, random, (0.4, 0.6), store_ids_above=30)
    for text_row, id_row in zip(text_rows, id_rows, strict=True):
        assert "doc_ids" in id_row and "context" not in id_row and "context" in text_row
        assert "".join(context_pieces(id_row, doc_pool.docs)) == text_row["context"]
        assert id_row["num_tokens"] == text_row["num_tokens"]


def test_bad_placements_and_rows_fail_naming_the_problem(doc_pool):
    from memrepro.data.ruler_hqa import DocPool

    random = _random_rows(doc_pool, "synthesized", 20)
    with pytest.raises(ValueError, match=r"two depths in \[0, 1\].*got \[0.0, 2.0\]"):
        _probe(doc_pool, random, (0.0, 2.0))
    old = DocPool(
        doc_pool.docs,
        doc_pool.tokens,
        [{k: v for k, v in q.items() if k != "gold_doc_ids"} for q in doc_pool.questions],
    )
    with pytest.raises(ValueError, match=r"eval.jsonl: row 0 \(question 0\): .*rebuild it"):
        _probe(old, random, (0.0, 1.0))
    one_title = [dict(q) for q in doc_pool.questions]
    second = next(q for q in one_title if q["index"] == random[1]["index"])
    second["gold_doc_ids"] = [second["doc_ids"][:1], []]
    with pytest.raises(ValueError, match=r"row 1 \(question 2\): key-information group 2"):
        _probe(DocPool(doc_pool.docs, doc_pool.tokens, one_title), random, (0.0, 1.0))
    unknown = [dict(random[0], index=10_000)]
    with pytest.raises(ValueError, match="names no question of the dev pool"):
        _probe(doc_pool, unknown, (0.0, 1.0))
    without_gold = dict(random[0], context=random[0]["context"])
    q = {x["index"]: x for x in doc_pool.questions}[without_gold["index"]]
    stranger = next(i for i in range(len(doc_pool.docs)) if i not in _ids(random[0], doc_pool))
    ids = [stranger if d == q["gold_doc_ids"][0][0] else d for d in _ids(random[0], doc_pool)]
    from memrepro.data.ruler_hqa import render_context

    without_gold["context"] = render_context(ids, doc_pool.docs)
    with pytest.raises(ValueError, match=r"row 0 .*key-information doc ids .* not in the sample"):
        _probe(doc_pool, [without_gold], (0.0, 1.0))


# --- the pool file -----------------------------------------------------------------------------


def test_the_pool_file_keeps_the_groups_and_an_old_one_still_loads(dev, tmp_path):
    import pyarrow.parquet as pq

    from memrepro.data.ruler_hqa import build_doc_pool, read_pool, write_pool

    records, _, questions = dev
    docs, path = tmp_path / "docs.parquet", tmp_path / "questions.parquet"
    write_pool(docs, path, build_doc_pool(records, WhitespaceTokenizer()))
    assert read_pool(docs, path).questions == questions
    pq.write_table(pq.read_table(path).drop_columns(["gold_doc_ids"]), path)
    old = read_pool(docs, path)
    assert old.questions == [{k: v for k, v in q.items() if k != "gold_doc_ids"} for q in questions]
    assert build_split(old.questions, old.docs, 20, limit=3) == build_split(
        questions, old.docs, 20, limit=3
    )
