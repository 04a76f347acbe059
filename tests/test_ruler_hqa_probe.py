"""Table 4's probe: RULER-HQA samples whose two key-information groups sit at given depths."""

import hashlib
import json

import numpy as np
import pytest
from test_ruler_hqa import WhitespaceTokenizer

from memrl.data.hotpotqa import build_pool, paragraph_text, question_records
from memrl.data.ruler_hqa import (
    build_eval_sets,
    build_split,
    context_pieces,
    place_groups,
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


# --- build_split / build_eval_sets with a placement --------------------------------------------


def _digest(questions, pool, **kwargs):
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
            **kwargs,
        )
        digest.update(json.dumps(rows).encode())
    sets = build_eval_sets(questions, pool, [10, 50], [7, 2, 9], seed=3, **kwargs)
    digest.update(json.dumps(sets).encode())
    return digest.hexdigest()


def test_no_placement_gives_the_rows_of_before_byte_for_byte(dev):
    _, pool, questions = dev
    assert _digest(questions, pool) == _digest(questions, pool, placement=None) == ROWS_DIGEST
    # questions without gold_doc_ids (an old pool file) give the same rows too
    old = [{k: v for k, v in q.items() if k != "gold_doc_ids"} for q in questions]
    assert _digest(old, pool) == ROWS_DIGEST


@pytest.mark.parametrize("n_docs", [10, 20, 40, None])  # None: the whole pool
def test_first_and_last_documents_hold_the_groups_at_0_and_100(dev, n_docs):
    _, pool, questions = dev
    n_docs = n_docs or len(pool)
    rows = build_split(questions, pool, n_docs, limit=None, seed=42, placement=(0.0, 1.0))
    for row, q in zip(rows, questions, strict=True):
        [first], [last] = q["gold_doc_ids"]
        docs = row["context"].split("\n\n")
        assert docs[0] == f"Document 1:\n{pool[first]}"
        assert docs[-1] == f"Document {n_docs}:\n{pool[last]}" and len(docs) == n_docs
        assert row["placement"] == [0.0, 1.0]


@pytest.mark.parametrize("depths", SETTINGS)
def test_probe_rows_are_the_random_rows_reordered(dev, depths):
    _, pool, questions = dev
    tok = WhitespaceTokenizer()
    base = build_split(questions, pool, 40, limit=None, seed=42, tokenizer=tok)
    probe = build_split(questions, pool, 40, limit=None, seed=42, tokenizer=tok, placement=depths)
    assert probe == build_split(
        questions, pool, 40, limit=None, seed=42, tokenizer=tok, placement=depths
    )
    for b, p, q in zip(base, probe, questions, strict=True):
        assert set(p) == set(b) | {"placement"} and p["placement"] == list(depths)
        assert {k: p[k] for k in b if k != "context"} == {k: b[k] for k in b if k != "context"}
        bodies = _bodies(p["context"])
        assert sorted(bodies) == sorted(_bodies(b["context"]))
        gold = [pool[d] for g in q["gold_doc_ids"] for d in g]
        assert [x for x in bodies if x not in gold] == [
            x for x in _bodies(b["context"]) if x not in gold
        ]
        for group, depth in zip(q["gold_doc_ids"], depths, strict=True):
            assert bodies.index(pool[group[0]]) == round(depth * (40 - len(group)))


def test_probe_rows_above_store_ids_above_hold_the_placed_ids(dev):
    _, pool, questions = dev
    tok = WhitespaceTokenizer()
    kwargs = {"limit": 3, "seed": 42, "tokenizer": tok, "placement": (0.4, 0.6)}
    text_rows = build_split(questions, pool, 40, **kwargs)
    id_rows = build_split(questions, pool, 40, store_ids_above=30, **kwargs)
    for text_row, id_row, q in zip(text_rows, id_rows, questions[:3], strict=True):
        assert set(id_row) == {
            "index",
            "input",
            "answers",
            "num_docs",
            "doc_ids",
            "num_tokens",
            "placement",
        }
        assert "".join(context_pieces(id_row, pool)) == text_row["context"]
        assert id_row["num_tokens"] == text_row["num_tokens"] == len(text_row["context"].split())
        assert id_row["doc_ids"][round(0.4 * 39)] == q["gold_doc_ids"][0][0]


def test_build_eval_sets_passes_the_placement_on(dev):
    _, pool, questions = dev
    indices = [7, 2, 9]
    sets = build_eval_sets(questions, pool, [10, 40], indices, seed=42, placement=(0.2, 0.8))
    selected = [questions[i] for i in indices]
    for n, rows in sets.items():
        assert rows == build_split(selected, pool, n, limit=None, seed=42, placement=(0.2, 0.8))


def test_bad_placements_and_questions_fail_naming_the_problem(dev):
    _, pool, questions = dev
    with pytest.raises(ValueError, match=r"two depths in \[0, 1\].*got \[0.0, 2.0\]"):
        build_split(questions, pool, 20, limit=2, placement=(0.0, 2.0))
    old = [{k: v for k, v in q.items() if k != "gold_doc_ids"} for q in questions]
    with pytest.raises(ValueError, match=r"question 0: no gold_doc_ids .*rebuild it"):
        build_split(old, pool, 20, limit=2, placement=(0.0, 1.0))
    one_title = [
        dict(questions[0]),
        dict(questions[1], gold_doc_ids=[questions[1]["doc_ids"][:1], []]),
    ]
    with pytest.raises(ValueError, match="question 1: key-information group 2 is empty"):
        build_split(one_title, pool, 20, limit=None, placement=(0.0, 1.0))


# --- the pool file -----------------------------------------------------------------------------


def test_the_pool_file_keeps_the_groups_and_an_old_one_still_loads(dev, tmp_path):
    import pyarrow.parquet as pq

    from memrl.data.ruler_hqa import build_doc_pool, read_pool, write_pool

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
