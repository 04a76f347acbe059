"""`memrepro verify-predictions`: someone else's file read in its official format, matched to the
released set item by item, and refused at the first break. The whole command on the smoke run is
in test_workflow.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memrepro.verify.predictions import (
    Refused,
    file_format,
    matched,
    memagent_items,
    memalpha_items,
    own_items,
)

RELEASED_ROWS = [
    {"index": 4, "input": "Where was Ada Kell born?", "answers": ["Varn"], "task": "hqa"},
    {"index": 9, "input": "Who built the Copper Bell?", "answers": ["Orla"], "task": "hqa"},
]
RELEASED_INSTANCES = [
    {"index": 0, "task": "squad", "questions": ["Q1?", "Q2?"], "answers": ["a", "b"]},
    {"index": 1, "task": "lme_train", "questions": ["Q3?"], "answers": ["rubric"]},
]
DATA = Path("data/ruler_hqa/eval_50.jsonl")


def _official_line(row: dict, _id: int, response: str = "the answer is Varn") -> dict:
    """A line as MemAgent's ruler_hqa.py appends it: the row without its context, then its own
    fields."""
    return {
        "input": row["input"],
        "answers": row["answers"],
        "num_docs": 50,
        "index": row["index"],
        "_id": _id,
        "response": response,
        "answer": response.rpartition("the answer is")[2].strip(),
        "pred": response.rpartition("the answer is")[2].strip(),
        "judge_f1": 1.0,
        "judge_em": 1.0,
        "judge_sub_em": 1.0,
    }


def _jsonl(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _agents_dir(root: Path, instances: list[dict], source_of=lambda row: row["task"]) -> Path:
    """Mem-α's main.py output: <instance>/results.json and data_instance_info.json."""
    for row in instances:
        folder = root / str(row["index"])
        folder.mkdir(parents=True)
        results = [
            {"question": q, "response": f"reply {j}", "answer": a, "step_info": {"step": 3}}
            for j, (q, a) in enumerate(zip(row["questions"], row["answers"], strict=True))
        ]
        (folder / "results.json").write_text(json.dumps(results, indent=2))
        (folder / "data_instance_info.json").write_text(json.dumps({"data_source": source_of(row)}))
    return root


def test_each_official_format_is_recognised_from_its_shape(tmp_path):
    official = _jsonl(tmp_path / "a.jsonl", [_official_line(RELEASED_ROWS[0], 0)])
    own = _jsonl(tmp_path / "b.jsonl", [{"index": 4, "task": "hqa", "score": 1.0, "response": "x"}])
    agents = _agents_dir(tmp_path / "agents", RELEASED_INSTANCES)
    assert [file_format(p) for p in (official, own, agents)] == ["memagent", "memrepro", "memalpha"]


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ('{"question": "q", "prediction": "p"}\n', "its first line has ['prediction', 'question']"),
        ("not json\n", "not a JSONL file of objects"),
        ("[1, 2]\n", "not a JSONL file of objects"),
    ],
)
def test_an_unknown_format_is_one_sentence_naming_the_file_and_what_was_expected(
    tmp_path, content, said
):
    path = tmp_path / "theirs.jsonl"
    path.write_text(content)
    with pytest.raises(Refused) as refused:
        file_format(path)
    assert str(refused.value).startswith(f"{path}: {said}")
    assert "official MemAgent JSONL" in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_directory_without_instances_is_refused(tmp_path):
    with pytest.raises(Refused, match=r"a directory without <instance>/results\.json"):
        file_format(tmp_path)


def test_official_memagent_lines_match_the_released_rows_in_their_order(tmp_path):
    lines = [_official_line(RELEASED_ROWS[1], 0), _official_line(RELEASED_ROWS[0], 1)]
    given = memagent_items(_jsonl(tmp_path / "x.jsonl", lines))
    pairs = matched(given, RELEASED_ROWS, DATA)
    assert [(row["index"], item.where.rsplit(":")[1]) for row, item in pairs] == [
        (4, "2"),
        (9, "1"),
    ]
    assert pairs[0][1].their_scores == (1.0,)


def test_official_memalpha_instances_keep_their_questions_and_source(tmp_path):
    given = memalpha_items(_agents_dir(tmp_path / "agents", RELEASED_INSTANCES))
    pairs = matched(given, RELEASED_INSTANCES, DATA)
    assert [item.responses for _, item in pairs] == [("reply 0", "reply 1"), ("reply 0",)]
    assert [item.source for _, item in pairs] == ["squad", "lme_train"]


def _refusal(given, released=RELEASED_ROWS) -> str:
    with pytest.raises(Refused) as refused:
        matched(given, released, DATA)
    return str(refused.value)


def test_an_item_outside_the_released_set_is_named(tmp_path):
    stray = {**_official_line(RELEASED_ROWS[0], 0), "index": 77}
    given = memagent_items(_jsonl(tmp_path / "x.jsonl", [stray]))
    assert _refusal(given) == f"{tmp_path}/x.jsonl:1: item 77 is not in the released set ({DATA})"


def test_another_question_is_named_with_both_texts(tmp_path):
    edited = {**_official_line(RELEASED_ROWS[0], 0), "input": "Where did Ada Kell die?"}
    given = memagent_items(_jsonl(tmp_path / "x.jsonl", [edited]))
    assert _refusal(given) == (
        f"{tmp_path}/x.jsonl:1: item 4, its question reads 'Where did Ada Kell die?'; the "
        f"released set's reads 'Where was Ada Kell born?' ({DATA})"
    )


def test_a_repeated_item_names_both_lines(tmp_path):
    twice = [_official_line(RELEASED_ROWS[0], 0), _official_line(RELEASED_ROWS[0], 1)]
    given = memagent_items(_jsonl(tmp_path / "x.jsonl", twice))
    assert _refusal(given) == f"{tmp_path}/x.jsonl:2: item 4 again (first at {tmp_path}/x.jsonl:1)"


def test_a_missing_item_is_counted_and_the_first_named(tmp_path):
    given = memagent_items(_jsonl(tmp_path / "x.jsonl", [_official_line(RELEASED_ROWS[0], 0)]))
    assert _refusal(given) == (
        f"{tmp_path}/x.jsonl:1: 1 of the released set's 2 items has no prediction; the first: "
        "item 9 ('Who built the Copper Bell?')"
    )


def test_an_instance_of_another_source_or_with_other_questions_is_named(tmp_path):
    swapped = memalpha_items(
        _agents_dir(tmp_path / "a", RELEASED_INSTANCES, source_of=lambda row: "hotpotqa")
    )
    assert "item 0 is from 'hotpotqa'; the released set's is from 'squad'" in _refusal(
        swapped, RELEASED_INSTANCES
    )
    fewer = [{**RELEASED_INSTANCES[0], "questions": ["Q1?"], "answers": ["a"]}]
    short = memalpha_items(_agents_dir(tmp_path / "b", [*fewer, RELEASED_INSTANCES[1]]))
    assert "item 0 answers 1 questions; the released set asks 2" in _refusal(
        short, RELEASED_INSTANCES
    )


def test_own_lines_keep_the_judges_replies(tmp_path):
    line = {
        "index": 1,
        "task": "lme_train",
        "questions": ["Q3?"],
        "responses": ["yes it is"],
        "scores": [1.0],
        "score": 1.0,
        "judge_replies": {"0": "yes"},
    }
    (item,) = own_items(_jsonl(tmp_path / "own.jsonl", [line]))
    assert item.line["judge_replies"] == {"0": "yes"} and item.their_scores == (1.0,)
