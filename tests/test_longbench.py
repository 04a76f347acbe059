"""LongBench v1: loader, prompts, generation lengths (memrepro.data.longbench) and scoring
(memrepro.scoring.longbench), on the packaged fixtures and hand-computed golden values."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from memrepro.data.longbench import (
    LONGBENCH_REVISION,
    LONGBENCH_TASKS,
    load_longbench,
    max_new_tokens,
    parquet_url,
    prompt,
    question_for_memagent,
)
from memrepro.data.sources import fixture_path
from memrepro.scoring.longbench import (
    LONGBENCH_QA,
    LONGBENCH_SUM,
    qa_f1_score,
    rouge_scores,
    score_longbench,
)
from memrepro.scoring.metrics import f1 as hotpotqa_f1

REPO = Path(__file__).resolve().parents[1]
HF_SCHEMA = pa.schema(
    [
        ("input", pa.string()),
        ("context", pa.string()),
        ("answers", pa.list_(pa.string())),
        ("length", pa.int32()),
        ("dataset", pa.string()),
        ("language", pa.string()),
        ("all_classes", pa.null()),
        ("_id", pa.string()),
    ]
)


def fixture(task: str) -> Path:
    return fixture_path(f"longbench/{task}.parquet")


def raw_records(task: str) -> list[dict]:
    return pq.read_table(fixture(task)).to_pylist()


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# --- task lists, generation lengths, URLs --------------------------------------------------------


def test_task_lists():
    assert LONGBENCH_QA == ("2wikimqa", "hotpotqa", "musique", "narrativeqa", "qasper")
    assert LONGBENCH_SUM == ("gov_report", "qmsum")
    assert LONGBENCH_TASKS == LONGBENCH_QA + LONGBENCH_SUM


def test_max_new_tokens():
    budgets = {task: max_new_tokens(task) for task in LONGBENCH_TASKS}
    assert budgets == {
        "2wikimqa": 32,
        "hotpotqa": 32,
        "musique": 32,
        "narrativeqa": 128,
        "qasper": 128,
        "gov_report": 512,
        "qmsum": 512,
    }
    with pytest.raises(ValueError, match="unknown LongBench task 'trec'"):
        max_new_tokens("trec")


def test_parquet_url():
    assert re.fullmatch(r"[0-9a-f]{40}", LONGBENCH_REVISION)
    assert parquet_url("qmsum", "abc123") == (
        "https://huggingface.co/datasets/THUDM/LongBench/resolve/abc123/"
        "qmsum/test-00000-of-00001.parquet"
    )
    assert f"/resolve/{LONGBENCH_REVISION}/hotpotqa/" in parquet_url("hotpotqa")
    with pytest.raises(ValueError, match="unknown LongBench task"):
        parquet_url("hotpotqa_e")


# --- prompts -------------------------------------------------------------------------------------


@pytest.mark.parametrize("task", LONGBENCH_TASKS)
def test_prompt_fills_every_fixture_row(task):
    for row in load_longbench(fixture(task), task):
        assert (
            "{" not in row["context"] + row["input"]
        )  # so a leftover brace would be the template's
        text = prompt(task, row["context"], row["input"])
        assert "{" not in text and "}" not in text
        assert row["context"] in text
        assert row["input"] in text
        assert text.endswith("Summary:" if task == "gov_report" else "Answer:")


def test_prompt_templates_verbatim():
    multi_doc = (
        "Answer the question based on the given passages. Only give me the answer and do not "
        "output any other words.\n\nThe following are given passages.\nCTX\n\nAnswer the question "
        "based on the given passages. Only give me the answer and do not output any other words."
        "\n\nQuestion: Q?\nAnswer:"
    )
    for task in ("2wikimqa", "hotpotqa", "musique"):
        assert prompt(task, "CTX", "Q?") == multi_doc
    assert prompt("gov_report", "CTX", "ignored") == (
        "You are given a report by a government agency. Write a one-page summary of the report."
        "\n\nReport:\nCTX\n\nNow, write a one-page summary of the report.\n\nSummary:"
    )
    assert prompt("qmsum", "CTX", "Q?") == (
        "You are given a meeting transcript and a query containing a question or instruction. "
        "Answer the query in one or more sentences.\n\nTranscript:\nCTX\n\nNow, answer the query "
        "based on the above meeting transcript in one or more sentences.\n\nQuery: Q?\nAnswer:"
    )


def test_prompt_quirks_kept():
    narrative = prompt("narrativeqa", "CTX", "Q?")
    assert narrative.count("asconcisely") == 2  # LongBench's typo, verbatim
    assert narrative.startswith("You are given a story, which can be either a novel or a movie")
    assert "\n\nStory: CTX\n\nNow, answer the question based on the story" in narrative
    assert narrative.endswith("\n\nQuestion: Q?\n\nAnswer:")
    qasper = prompt("qasper", "CTX", "Q?")
    assert "\n\nArticle: CTX\n\n Answer the question based on the above article" in qasper
    assert qasper.count('write "unanswerable"') == 2
    assert qasper.endswith("\n\nQuestion: Q?\n\nAnswer:")


def test_prompt_keeps_braces_of_the_text():
    text = prompt("hotpotqa", "a {context} and {0} b", "what is {input}?")
    assert "a {context} and {0} b" in text
    assert "Question: what is {input}?\nAnswer:" in text


def test_question_for_memagent():
    row = {"input": "  Who built it?\n", "context": "..."}
    for task in ("hotpotqa", "qasper", "qmsum"):
        assert question_for_memagent(task, row) == "Who built it?"
    assert question_for_memagent("gov_report", {"input": "", "context": "..."}) == (
        "Write a one-page summary of the report."
    )


# --- loading -------------------------------------------------------------------------------------


@pytest.mark.parametrize("task", LONGBENCH_TASKS)
def test_fixture_schema_is_the_hub_schema(task):
    assert pq.read_schema(fixture(task)).remove_metadata() == HF_SCHEMA


@pytest.mark.parametrize("task", LONGBENCH_TASKS)
def test_load_fixture(task):
    rows = load_longbench(fixture(task), task)
    records = raw_records(task)
    assert 2 <= len(rows) <= 3
    for i, (row, record) in enumerate(zip(rows, records, strict=True)):
        assert list(row) == [
            "index",
            "task",
            "input",
            "context",
            "answers",
            "length",
            "_id",
            "num_tokens",
        ]
        assert row["index"] == i
        assert row["task"] == task
        assert row["num_tokens"] is None
        for key in ("input", "context", "answers", "length", "_id"):
            assert row[key] == record[key]
        assert record["dataset"] == task and record["language"] == "en"
        assert record["all_classes"] is None
        assert re.fullmatch(r"[0-9a-f]{48}", row["_id"])
        assert row["answers"] and all(a.strip() for a in row["answers"])
        assert (row["input"] == "") == (task == "gov_report")
    assert len({row["_id"] for row in rows}) == len(rows)


@pytest.mark.parametrize("task", LONGBENCH_TASKS)
def test_fixture_lengths(task):
    """`length` is LongBench's word count; each config has short rows and one long row (for
    middle-truncation tests), none too large for a quick CPU run."""
    rows = load_longbench(fixture(task), task)
    for row in rows:
        words = row["input"].split() + row["context"].split()
        words += [w for a in row["answers"] for w in a.split()]
        assert row["length"] == len(words)
        assert 100 <= row["length"] <= 1500
    lengths = sorted(row["length"] for row in rows)
    assert lengths[0] <= 250 and lengths[-1] >= 900


def test_fixture_multidoc_layout():
    for task in ("2wikimqa", "hotpotqa", "musique"):
        for row in load_longbench(fixture(task), task):
            assert row["context"].startswith("Passage 1:\n")
            numbers = [int(n) for n in re.findall(r"^Passage (\d+):$", row["context"], re.M)]
            assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 3


def test_jsonl_round_trip(tmp_path):
    """data.zip's `<config>.jsonl` has the same columns: both forms load to the same rows."""
    for task in ("hotpotqa", "gov_report"):
        path = write_jsonl(tmp_path / f"{task}.jsonl", raw_records(task))
        assert load_longbench(path, task) == load_longbench(fixture(task), task)


BAD_ROWS = [
    (lambda r: r.pop("context"), "missing key 'context'"),
    (lambda r: r.pop("_id"), "missing key '_id'"),
    (lambda r: r.update(length="214"), "'length' must be int, got str"),
    (lambda r: r.update(length=True), "'length' must be int, got bool"),
    (lambda r: r.update(input=None), "'input' must be str, got NoneType"),
    (lambda r: r.update(context=" \n "), "empty 'context'"),
    (lambda r: r.update(answers="Dunvale"), "'answers' must be list, got str"),
    (lambda r: r.update(answers=[]), "'answers' is empty"),
    (lambda r: r.update(answers=["ok", 3]), r"answers\[1\] must be str, got int"),
    (lambda r: r.update(answers=["ok", "  "]), r"answers\[1\] is blank"),
    (lambda r: r.update(dataset="hotpotqa_e"), "'dataset' is 'hotpotqa_e', expected 'hotpotqa'"),
    (lambda r: r.update(input="  "), "empty 'input'"),
]


@pytest.mark.parametrize(("mutate", "message"), BAD_ROWS)
def test_bad_row_names_file_and_row(tmp_path, mutate, message):
    records = raw_records("hotpotqa")
    mutate(records[1])
    path = write_jsonl(tmp_path / "hotpotqa.jsonl", records)
    with pytest.raises(ValueError, match=rf"hotpotqa\.jsonl: row 1: {message}") as err:
        load_longbench(path, "hotpotqa")
    assert str(path) in str(err.value)


def test_bad_parquet_row_names_file_and_row(tmp_path):
    records = raw_records("qmsum")
    records[0]["dataset"] = "gov_report"
    path = tmp_path / "qmsum.parquet"
    pq.write_table(pa.Table.from_pylist(records, schema=HF_SCHEMA), path)
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))}: row 0: 'dataset' is"):
        load_longbench(path, "qmsum")


def test_gov_report_needs_no_input(tmp_path):
    records = raw_records("gov_report")
    assert all(r["input"] == "" for r in records)
    assert len(load_longbench(write_jsonl(tmp_path / "g.jsonl", records), "gov_report")) == 2


def test_bad_files(tmp_path):
    table = pq.read_table(fixture("musique")).drop_columns(["answers"])
    missing = tmp_path / "musique.parquet"
    pq.write_table(table, missing)
    with pytest.raises(ValueError, match=rf"{re.escape(str(missing))}: missing column\(s\)"):
        load_longbench(missing, "musique")
    garbage = tmp_path / "broken.parquet"
    garbage.write_bytes(b"not a parquet file")
    with pytest.raises(ValueError, match=r"broken\.parquet: not a readable parquet file"):
        load_longbench(garbage, "musique")
    with pytest.raises(ValueError, match=r"data\.csv: expected a \.parquet or \.jsonl"):
        (tmp_path / "data.csv").write_text("x\n")
        load_longbench(tmp_path / "data.csv", "musique")
    with pytest.raises(FileNotFoundError, match=r"nope\.parquet: no such file"):
        load_longbench(tmp_path / "nope.parquet", "musique")
    with pytest.raises(ValueError, match=r"empty\.jsonl: no rows"):
        (tmp_path / "empty.jsonl").write_text("\n")
        load_longbench(tmp_path / "empty.jsonl", "musique")
    with pytest.raises(ValueError, match="unknown LongBench task 'musique_e'"):
        load_longbench(fixture("musique"), "musique_e")


def test_fixture_generator_reproduces_the_files(tmp_path):
    script = REPO / "scripts" / "fixtures" / "make_longbench.py"
    subprocess.run(
        [sys.executable, script.name, str(tmp_path)],
        cwd=script.parent,
        check=True,
        capture_output=True,
    )
    for task in LONGBENCH_TASKS:
        assert pq.read_table(tmp_path / f"{task}.parquet").equals(pq.read_table(fixture(task)))


# --- qa_f1_score (LongBench metrics.py) ----------------------------------------------------------


def test_qa_f1_normalisation():
    assert qa_f1_score("The Eiffel Tower!", "eiffel tower") == 1.0
    assert qa_f1_score("an apple, the pear", "Apple  pear") == 1.0
    # punctuation is deleted, not replaced by a space: "well-known" is one token "wellknown"
    assert qa_f1_score("well-known author", "well known author") == pytest.approx(0.4)
    # "a"/"an"/"the" go only as whole words
    assert qa_f1_score("theatre", "the atre") == 0.0


def test_qa_f1_bag_of_tokens():
    # common = {y: 2}: precision 2/4, recall 2/3, F1 = 4/7
    assert qa_f1_score("x y y z", "y y w") == pytest.approx(4 / 7)
    assert qa_f1_score("z y x", "x y z") == 1.0  # order does not matter
    assert qa_f1_score("", "x") == 0.0
    assert qa_f1_score("x", "") == 0.0


def test_qa_f1_has_no_yes_no_rule():
    assert qa_f1_score("yes", "yes it is") == pytest.approx(0.5)
    assert hotpotqa_f1("yes", "yes it is") == 0.0  # HotpotQA's F1 differs exactly here
    assert qa_f1_score("no", "yes") == 0.0


# --- rouge_scores (pltrdy rouge 1.0.1) -----------------------------------------------------------


def test_rouge_by_hand():
    """hyp words the cat sat the dog ran (5 unique), ref the cat ran a dog sat (6 unique).
    ROUGE-1: 5 common / 6. ROUGE-2 flattens the sentences: hyp bigrams (the cat) (cat sat)
    (sat the) (the dog) (dog ran), ref (the cat) (cat ran) (ran a) (a dog) (dog sat): 1 / 5.
    ROUGE-L, union LCS per reference sentence: "the cat ran" gets {the, cat} from hyp
    sentence 1 and {the, ran} from hyp sentence 2 (3 words); "a dog sat" gets {sat} and {dog}
    (2): recall 5/6, precision 5/5, F = 2PR / (P + R + 1e-8)."""
    scores = rouge_scores("the cat sat. the dog ran", "the cat ran. a dog sat")
    r, p = 5 / 6, 1.0
    assert scores == pytest.approx(
        {
            "rouge_1_recall": r,
            "rouge_2_recall": 1 / 5,
            "rouge_l_recall": r,
            "rouge_l_f": 2 * p * r / (p + r + 1e-8),
        }
    )


def test_rouge_counts_unique_ngrams():
    # hyp {a, b} vs ref {a, b, c}; LCS a b; with counted n-grams precision would be 2/3 not 1
    scores = rouge_scores("x x y", "x y z")
    assert scores == pytest.approx(
        {
            "rouge_1_recall": 2 / 3,
            "rouge_2_recall": 1 / 2,
            "rouge_l_recall": 2 / 3,
            "rouge_l_f": 0.8,
        }
    )


def test_rouge_splits_sentences_on_periods():
    # one sentence: the LCS of "c b a" and "a b c" is one word; split on ".", each hyp
    # sentence contributes its word to the union LCS of the reference sentence
    assert rouge_scores("c b a", "a b c")["rouge_l_recall"] == pytest.approx(1 / 3)
    assert rouge_scores("c. b. a", "a b c")["rouge_l_recall"] == pytest.approx(1.0)
    assert rouge_scores("c. b. a", "a b c")["rouge_1_recall"] == pytest.approx(1.0)


def test_rouge_is_case_sensitive():
    assert rouge_scores("The Cat", "the cat") == dict.fromkeys(
        ("rouge_1_recall", "rouge_2_recall", "rouge_l_recall", "rouge_l_f"), 0.0
    )
    assert rouge_scores("the cat", "the cat")["rouge_l_f"] == pytest.approx(1.0)


@pytest.mark.parametrize("pred", ["", ".", "..."])
def test_rouge_empty_prediction_scores_zero(pred):
    assert set(rouge_scores(pred, "the cat sat").values()) == {0.0}


# --- score_longbench -----------------------------------------------------------------------------


def test_score_qa_answer_is():
    result = score_longbench("2wikimqa", "Therefore, the answer is Dunvale.", ["Dunvale"])
    assert result["pred"] == "Dunvale"
    assert result["score"] == result["sub_em"] == 1.0
    # qa_f1 scores the raw reply: "therefore answer is dunvale" against "dunvale" = 2*(1/4)/(5/4)
    assert result["qa_f1"] == pytest.approx(0.4)


def test_score_qa_bare_answer_and_think():
    assert score_longbench("hotpotqa", " Corrin Lighthouse\n", ["Corrin Lighthouse"]) == {
        "pred": "Corrin Lighthouse",
        "score": 1.0,
        "sub_em": 1.0,
        "qa_f1": 1.0,
    }
    # the marker is looked for after </think> only; the reasoning's "answer" is not the answer
    result = score_longbench("musique", "<think>the answer is 1799</think>\n1788", ["1788"])
    assert result["pred"] == "1788" and result["sub_em"] == 1.0
    # sub_em is bidirectional containment; max over golds
    assert score_longbench("hotpotqa", "Corrin", ["Tamsford", "Corrin Lighthouse"])["score"] == 1.0
    assert score_longbench("hotpotqa", "Tamsford Bridge", ["Corrin Lighthouse"])["score"] == 0.0


@pytest.mark.parametrize("reply", ["", "the answer is .", "The", "  "])
def test_score_qa_empty_prediction_is_zero(reply):
    result = score_longbench("qasper", reply, ["the Marlow Ferry Corpus"])
    assert result["sub_em"] == result["score"] == 0.0


def test_score_sum():
    gold = "the cat ran. a dog sat"
    reply = "<think>draft notes</think>the cat sat. the dog ran"
    raw = score_longbench("gov_report", reply, [gold])  # as LongBench: the whole output
    result = score_longbench("gov_report", reply, [gold], strip_think=True)
    assert raw["pred"] == reply and raw["rouge_l_f"] < result["rouge_l_f"]  # the draft's words
    assert result["pred"] == "the cat sat. the dog ran"
    assert result["rouge_1_recall"] == pytest.approx(5 / 6)
    assert result["score"] == pytest.approx((5 / 6 + 1 / 5 + 5 / 6) / 3)
    assert set(result) == {
        "pred",
        "score",
        "rouge_1_recall",
        "rouge_2_recall",
        "rouge_l_recall",
        "rouge_l_f",
    }
    # each metric takes its own maximum over the golds
    # "q z": ROUGE-1 1/2, ROUGE-2 0; "x x y w v u": ROUGE-1 2/5, ROUGE-2 2/5
    two = score_longbench("qmsum", "x x y q", ["q z", "x x y w v u"])
    assert two["rouge_1_recall"] == pytest.approx(1 / 2)
    assert two["rouge_2_recall"] == pytest.approx(2 / 5)
    assert score_longbench("qmsum", "", [gold])["score"] == 0.0


@pytest.mark.parametrize("task", LONGBENCH_TASKS)
def test_gold_replies_score_one(task):
    for row in load_longbench(fixture(task), task):
        result = score_longbench(task, row["answers"][-1], row["answers"])
        assert result["score"] == pytest.approx(1.0)
        assert all(0.0 <= v <= 1.0 + 1e-9 for k, v in result.items() if k != "pred")


def test_score_unknown_task():
    with pytest.raises(ValueError, match="unknown LongBench task 'lcc'"):
        score_longbench("lcc", "x", ["x"])
