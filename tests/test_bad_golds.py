"""Golds that cannot discriminate, released RULER-HQA rows that do not hold what they say, and
custom files that are not UTF-8 text: each refused by its reader, naming file, row and field."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from test_official_hqa import WhitespaceTokenizer, edited, pool  # noqa: F401 (a fixture)

from memrepro.data.custom import CustomDataError, read_custom_rows
from memrepro.data.io import read_json
from memrepro.data.longbench import load_longbench
from memrepro.data.official_hqa import convert_eval_rows, read_eval_file
from memrepro.data.ruler import build_task
from memrepro.data.ruler_hqa import build_eval_sets
from memrepro.data.sources import fixture_path
from memrepro.scoring.golds import bad_gold, gold_problem

GOOD = {
    "id": "a",
    "context": "Ada wrote the first program.",
    "question": "Who?",
    "answers": ["Ada"],
}


@pytest.mark.parametrize(
    ("metric", "gold", "refused"),
    [
        ("sub_em", "A", True),  # an article: normalises to ""
        ("sub_em", "…", True),
        ("sub_em", "B", True),  # a letter is inside almost any reply
        ("sub_em", "no", False),  # HotpotQA's yes/no golds
        ("sub_em", "3", False),  # HotpotQA's counts
        ("em", "The", True),  # nothing to match: always 0
        ("em", "B", False),  # exact match of a letter discriminates
        ("em", "no", False),
        ("f1", "?", True),
        ("string_match", "  ", True),
        ("string_match", "b", True),
        ("string_match", "4217795", False),  # RULER's needles
        ("rouge", "...", True),  # no word once split as pltrdy's ROUGE splits
        ("rouge", "A", False),
    ],
)
def test_a_gold_is_refused_exactly_where_its_metric_cannot_discriminate(metric, gold, refused):
    assert (gold_problem(metric, gold) is not None) is refused


def test_the_first_bad_gold_is_named_by_its_field():
    assert bad_gold(["Ada", "ok"], ["sub_em", "f1"]) is None
    problem = bad_gold(["Ada", "The"], ["sub_em"], field="reward")
    assert problem is not None and problem.startswith("field 'reward[1]': 'The' leaves nothing")


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.mark.parametrize(("metric", "gold"), [("sub_em", "B"), ("sub_em", "A"), ("em", "?")])
def test_a_custom_gold_that_cannot_discriminate_under_its_metric_is_refused(tmp_path, metric, gold):
    path = write_jsonl(tmp_path / "mc.jsonl", [GOOD, {**GOOD, "id": "b", "answers": ["x1", gold]}])
    with pytest.raises(CustomDataError, match=rf"^{path}:2: field 'answers\[1\]': '{gold}'"):
        read_custom_rows(path, metric=metric)


def test_a_letter_gold_passes_exact_match_and_the_yes_no_golds_pass_containment(tmp_path):
    path = write_jsonl(tmp_path / "ok.jsonl", [{**GOOD, "answers": ["B"]}])
    assert read_custom_rows(path, metric="em")[0]["answers"] == ["B"]
    path = write_jsonl(tmp_path / "yn.jsonl", [{**GOOD, "answers": ["no"]}])
    assert read_custom_rows(path, metric="sub_em")[0]["answers"] == ["no"]


def test_the_custom_set_job_stops_on_a_letter_gold_before_any_model_work(tmp_path):
    from argparse import Namespace

    from memrepro.jobs.data import cmd_custom_set

    path = write_jsonl(tmp_path / "mc.jsonl", [{**GOOD, "answers": ["C"]}])
    settings = {"dataset": "mc", "metric": "string_match", "max_context_words": None}
    args = Namespace(data=path, out=tmp_path / "out.jsonl", settings=settings)
    with pytest.raises(SystemExit, match=rf"custom dataset mc: {path}:1: field 'answers\[0\]'"):
        cmd_custom_set(args, run=None)
    assert not args.out.exists()


def test_a_custom_file_that_is_not_utf8_is_named_with_its_line_and_column(tmp_path):
    path = tmp_path / "latin1.jsonl"
    first = (json.dumps(GOOD) + "\n").encode()
    second = json.dumps({**GOOD, "id": "b", "question": "Qué?"}, ensure_ascii=False)
    path.write_bytes(first + second.encode("latin-1"))
    column = json.dumps({**GOOD, "id": "b"}).index('"question"') + len('"question": "Qu') + 1
    with pytest.raises(CustomDataError, match=rf"^{path}:2:{column}: not UTF-8 text"):
        read_custom_rows(path)


@pytest.mark.parametrize("field", ["question", "answers[0]", "context", "documents[1]"])
def test_a_lone_surrogate_in_a_custom_text_is_refused_naming_its_field(tmp_path, field):
    name, _, index = field.partition("[")
    row = {**GOOD, "documents": ["one", "two"]} if name == "documents" else dict(GOOD)
    row.pop("context") if name == "documents" else None
    if index:
        row[name] = [*row[name]]
        row[name][int(index[0])] = "x\ud800y"
    else:
        row[name] = "x\ud800y"
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(row) + "\n")  # json escapes it: "\ud800"
    with pytest.raises(CustomDataError, match=rf"^{path}:1: field {re.escape(field)} holds a lone"):
        read_custom_rows(path)


# --- the released RULER-HQA sets ------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda rows: rows[2].update(answers=[]), r"row 2: field 'answers': an empty list"),
        (lambda rows: rows[4].update(answers=["The"]), r"row 4: field 'answers\[0\]': 'The'"),
        (lambda rows: rows[1].update(context=[]), r"row 1: field 'context': 0 documents, not 50"),
        (
            lambda rows: rows[3].update(context=rows[3]["context"][:7]),
            r"row 3: field 'context': 7 documents, not 50",
        ),
    ],
)
def test_a_released_row_without_its_documents_or_golds_is_refused(tmp_path, change, message):
    with pytest.raises(ValueError, match=rf"eval_50\.json: {message}"):
        read_eval_file(edited(tmp_path, 50, change), 50, rows=8)


def test_a_released_text_context_cut_after_one_document_is_refused(tmp_path):
    def cut(rows):
        text = rows[5]["context"]
        rows[5]["context"] = text[: text.index("\n\nDocument 2:\n")]

    with pytest.raises(ValueError, match=r"row 5: field 'context': 1 documents, not 20"):
        read_eval_file(edited(tmp_path, 20, cut), 20, rows=8)


def repeat_text_document(rows):
    """Row 6's last document replaced by a copy of its first."""
    first, *rest = rows[6]["context"].split("\n\nDocument ")
    document = first.split(":\n", 1)[1]
    rest[-1] = f"{len(rest) + 1}:\n{document}"
    rows[6]["context"] = "\n\nDocument ".join([first, *rest])


def repeat_doc_id(rows):
    rows[6]["context"][-1] = rows[6]["context"][0]


@pytest.mark.parametrize(("n_docs", "repeat"), [(20, repeat_text_document), (50, repeat_doc_id)])
def test_a_released_row_repeating_a_document_is_refused(tmp_path, pool, n_docs, repeat):  # noqa: F811
    path = edited(tmp_path, n_docs, repeat)
    released = read_eval_file(path, n_docs, rows=8)
    message = r"row 6 \(question \d+\): field 'context': doc id \d+ appears 2 times"
    with pytest.raises(ValueError, match=message):
        convert_eval_rows(released, pool, WhitespaceTokenizer(), 20, str(path))


def test_a_document_its_question_holds_twice_may_appear_twice(tmp_path, pool):  # noqa: F811
    released = read_eval_file(edited(tmp_path, 50, lambda rows: None), 50, rows=8)
    row = released[6]
    question = next(q for q in pool.questions if q["index"] == row["index"])
    doc_id = question["doc_ids"][0]
    distractor = next(d for d in row["context"] if d not in question["doc_ids"])
    row["context"][row["context"].index(distractor)] = doc_id  # the row now holds it twice
    with pytest.raises(ValueError, match=rf"doc id {doc_id} appears 2 times"):
        convert_eval_rows(released, pool, WhitespaceTokenizer(), 20, "eval_50.json")
    questions = copy.deepcopy(pool.questions)
    for q in questions:
        if q["index"] == row["index"]:
            q["doc_ids"] = [*q["doc_ids"], doc_id]  # its own paragraphs hold it twice
    rows = convert_eval_rows(
        released, pool._replace(questions=questions), WhitespaceTokenizer(), 20, "eval_50.json"
    )
    assert rows[6]["doc_ids"].count(doc_id) == 2


# --- the synthesized sets ---------------------------------------------------------------------


def test_a_synthesized_ruler_hqa_set_refuses_a_gold_that_normalises_to_nothing(
    pool,  # noqa: F811
):
    questions = copy.deepcopy(pool.questions)
    questions[3]["answers"] = ["The"]
    indices = [q["index"] for q in questions]
    build_eval_sets(pool.questions, pool.docs, [20], indices, tokenizer=None)  # the real golds
    with pytest.raises(ValueError, match=r"question 3: field 'answers\[0\]': 'The' leaves"):
        build_eval_sets(questions, pool.docs, [20], indices, tokenizer=None)


@pytest.mark.parametrize(("variant", "gold"), [("memagent", "The"), ("upstream", " ")])
def test_a_ruler_qa_set_refuses_a_gold_with_nothing_to_compare(variant, gold):
    squad = read_json(fixture_path("squad_dev_fixture.json"))
    squad["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["text"] = gold
    kwargs = {"variant": variant, "tokenizer": WhitespaceTokenizer(), "seed": 42}
    with pytest.raises(ValueError, match=r"RULER qa_1 @ 2048: sample 0: field 'answers\[0\]'"):
        build_task("qa_1", 2048, 2, squad=squad, **kwargs)


def test_a_published_sets_letter_gold_is_scored_as_its_paper_scored_it():
    """SQuAD holds golds such as "P" (complexity theory): the set is the benchmark's own, kept."""
    squad = read_json(fixture_path("squad_dev_fixture.json"))
    squad["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["text"] = "P"
    kwargs = {"variant": "memagent", "tokenizer": WhitespaceTokenizer(), "seed": 42}
    rows = build_task("qa_1", 2048, 2, squad=squad, **kwargs)
    assert any(row["answers"][0] == "P" for row in rows)
    assert bad_gold(["P"], ("sub_em",), published=True) is None
    assert "one character" in bad_gold(["P"], ("sub_em",))


@pytest.mark.parametrize(("task", "gold"), [("hotpotqa", "An"), ("gov_report", ". .")])
def test_a_longbench_gold_that_cannot_discriminate_is_refused(tmp_path, task, gold):
    import pyarrow.parquet as pq

    table = pq.read_table(fixture_path(f"longbench/{task}.parquet")).to_pylist()
    table[1]["answers"] = [*table[1]["answers"], gold]
    path = tmp_path / f"{task}.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in table))
    with pytest.raises(ValueError, match=rf"{path}: row 1: field 'answers\[\d\]': '{gold}'"):
        load_longbench(path, task)
