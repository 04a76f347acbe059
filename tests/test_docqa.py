"""DocQA-RL-1.6K loading and the stage-II mix (memrepro.data.docqa) and `memrepro stage2-data`."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from memrepro.data.docqa import (
    load_docqa,
    mix_stage2,
    parse_ground_truth,
    split_prompt,
)
from memrepro.data.io import read_jsonl, write_jsonl_atomic
from memrepro.data.ruler_hqa import DATA_SOURCE
from memrepro.data.sources import fixture_corpus, fixture_path

FIXTURE = "docqa_rl_fixture.parquet"
HEAD = "Please read the following text and answer the question below."
FORMAT = 'Format your response as follows: "Therefore, the answer is (insert answer here)".'


class WhitespaceTokenizer:
    def encode(self, text, add_special_tokens=True):
        assert add_special_tokens is False
        return text.split()


def qwenlong_prompt(document: str, question: str, fmt: str = FORMAT) -> str:
    return f"{HEAD}\n\n<text>\n{document}\n</text>\n\n{question}\n\n{fmt}"


def verl_row(document="Alpha beta.", question="Which letter?", truth="Therefore, the answer is b."):
    return {
        "data_source": "musique_0_20000",
        "prompt": [{"role": "user", "content": qwenlong_prompt(document, question)}],
        "ability": "doc-qa",
        "reward_model": {"style": "rule", "ground_truth": truth},
        "extra_info": {"index": 7},
    }


def write_parquet(path: Path, records: list[dict]) -> Path:
    pq.write_table(pa.Table.from_pylist(records), path)
    return path


# --- loading -----------------------------------------------------------------------------------


def test_fixture_rows():
    rows = load_docqa(fixture_path(FIXTURE))
    assert [r["index"] for r in rows] == list(range(7))
    assert [r["data_source"] for r in rows] == [
        "docmath_0_20000",
        "docmath_0_20000",
        "long_toc_choices_0_20000",
        "long_toc_choices_0_20000",
        "multihoprag_0_20000",
        "musique_0_20000",
        "docmath_20000_40000",
    ]
    assert [r["answers"] for r in rows] == [
        ["8.35"],
        ["12.0"],
        ["C"],
        ["B"],
        ["Ilse Marrow"],
        ["1699"],
        ["1107"],
    ]
    for row in rows:
        assert set(row) == {"index", "input", "answers", "context", "data_source"}
        # the template's scaffolding is gone from both halves
        for marker in ("<text>", "</text>", "Format your response", HEAD):
            assert marker not in row["input"] and marker not in row["context"]
    mc = rows[2]
    assert mc["input"].startswith("What is the correct answer to this question: Under the lease")
    assert mc["input"].endswith("(C) Three months\n(D) Six months")
    assert "three months' notice" in mc["context"]
    assert "第二期工程" in rows[3]["input"] and "2023年6月30日" in rows[3]["context"]
    assert "| Total income | 2,000 | 2,167 |" in rows[0]["context"]  # tables survive verbatim


def test_split_prompt_round_trip(tmp_path: Path):
    document = "Line one.\n\n| a | b |\n|---|---|\n| 1 | 2 |\nA literal </text> inside."
    question = "What is the correct answer to this question: which?\nChoices:\n(A) x\n(B) y"
    fmt = 'Format your response as follows: "The correct answer is (insert answer here)".'
    assert split_prompt(qwenlong_prompt(document, question, fmt)) == (document, question)
    # no format instruction: everything after the document is the question
    assert split_prompt(f"<text>\n{document}\n</text>\n\n{question}\n") == (document, question)
    record = verl_row(document, question, "The correct answer is (B)")
    [row] = load_docqa(write_parquet(tmp_path / "one.parquet", [record]))
    assert (row["context"], row["input"], row["answers"]) == (document, question, ["B"])


@pytest.mark.parametrize(
    ("truth", "answer"),
    [
        ("Therefore, the answer is 6.4492577269408615.", "6.4492577269408615"),
        ("The correct answer is (D)", "D"),
        ("The correct answer is A.", "A"),
        ("The correct answer is Apple Street.", "Apple Street"),  # a name, not an option
        ("So the answer is Brenwick Harbour Trust.", "Brenwick Harbour Trust"),
        ("  42  ", "42"),  # a mirror that stores the bare answer
    ],
)
def test_parse_ground_truth(truth, answer):
    assert parse_ground_truth(truth) == answer


def test_load_jsonl_and_list_ground_truth(tmp_path: Path):
    record = verl_row(truth=["Therefore, the answer is b.", "Therefore, the answer is B"])
    path = tmp_path / "docqa.jsonl"
    write_jsonl_atomic(path, [record])
    [row] = load_docqa(path)
    assert row["answers"] == ["b", "B"] and row["context"] == "Alpha beta."


def _with(**changes):
    return {**verl_row(), **changes}


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (
            {k: v for k, v in verl_row().items() if k != "reward_model"},
            "missing key 'reward_model'",
        ),
        (_with(data_source=""), "'data_source' must be a non-empty string"),
        (_with(prompt=[{"role": "system", "content": "x"}]), "with a user message"),
        (_with(prompt=[{"role": "user", "content": "no document here"}]), "no <text>"),
        (_with(prompt=[{"role": "user", "content": "<text>\n\n</text>\nQ?"}]), "document"),
        (_with(prompt=[{"role": "user", "content": f"<text>d</text>\n{FORMAT}"}]), "no question"),
        (_with(reward_model={"style": "rule"}), "ground_truth' must be a string"),
        (_with(reward_model={"ground_truth": True}), "ground_truth' must be a string"),
        (_with(reward_model={"ground_truth": "The answer is ."}), "empty answer"),
        (_with(reward_model={"ground_truth": []}), "is empty"),
    ],
)
def test_bad_row_names_file_and_row(tmp_path: Path, record, message):
    path = tmp_path / "bad.jsonl"
    write_jsonl_atomic(path, [verl_row(), record])
    with pytest.raises(ValueError, match=message) as info:
        load_docqa(path)
    assert f"{path}: row 1" in str(info.value)


def test_bad_files(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_docqa(tmp_path / "absent.parquet")
    csv = tmp_path / "docqa.csv"
    csv.write_text("a,b\n")
    with pytest.raises(ValueError, match=r"expected a \.parquet or \.jsonl"):
        load_docqa(csv)
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 not really")
    with pytest.raises(ValueError, match="not a readable parquet file"):
        load_docqa(broken)
    columns = write_parquet(tmp_path / "columns.parquet", [{"data_source": "x", "prompt": "p"}])
    with pytest.raises(ValueError, match=r"missing column\(s\) \['reward_model'\]"):
        load_docqa(columns)


# --- the stage-II mix --------------------------------------------------------------------------


def docqa_rows(lengths: list[int]) -> list[dict]:
    return [
        {
            "index": i,
            "input": f"doc question {i}?",
            "answers": [f"d{i}"],
            "context": " ".join(["w"] * n),
            "data_source": f"src{i % 2}",
        }
        for i, n in enumerate(lengths)
    ]


def hqa_rows(n: int) -> list[dict]:
    return [
        {
            "index": 100 + i,
            "input": f"hqa question {i}?",
            "answers": [f"h{i}"],
            "num_docs": 20,
            "context": f"Document 1:\nhqa text {i}",
            "num_tokens": 4,
        }
        for i in range(n)
    ]


def test_mix_counts_and_length_filter():
    docqa = docqa_rows([5, 50, 10, 11, 3])  # 50 and 11 are longer than 10 tokens
    rows, report = mix_stage2(hqa_rows(6), docqa, 8, 10, WhitespaceTokenizer(), seed=0)
    assert [r["index"] for r in rows] == list(range(8))
    assert report == {
        "n_rows": 8,
        "docqa_in": 5,
        "docqa_too_long": 2,
        "docqa_used": 3,
        "docqa_max_tokens": 50,
        "stage1_in": 6,
        "stage1_used": 5,
        "by_source": {DATA_SOURCE: 5, "src0": 3},
    }
    docqa_used = sorted(r["source_index"] for r in rows if r["data_source"] != DATA_SOURCE)
    assert docqa_used == [0, 2, 4]  # every row that fits, none that does not
    for row in rows:
        assert set(row) == {
            "index",
            "input",
            "answers",
            "context",
            "data_source",
            "num_tokens",
            "source_index",
        }
        if row["data_source"] == DATA_SOURCE:
            assert row["input"] == f"hqa question {row['source_index'] - 100}?"
            assert row["num_tokens"] == 4
        else:
            assert row["num_tokens"] == len(row["context"].split()) <= 10
            assert row["answers"] == [f"d{row['source_index']}"]


def test_mix_is_deterministic_and_seeded():
    def mix(seed):
        return mix_stage2(hqa_rows(20), docqa_rows([1] * 6), 12, 10, WhitespaceTokenizer(), seed)

    assert mix(3) == mix(3)
    first, second = mix(3)[0], mix(4)[0]
    assert [r["input"] for r in first] != [r["input"] for r in second]
    # whatever the seed, all fitting DocQA rows are in, and stage-I rows are drawn, not the head
    assert sum(r["data_source"] != DATA_SOURCE for r in second) == 6
    stage1 = {r["source_index"] for r in first if r["data_source"] == DATA_SOURCE}
    assert len(stage1) == 6 and stage1 != set(range(100, 106))


def test_mix_keeps_given_data_source_and_samples_docqa_down():
    hqa = [dict(row, data_source="ruler_hqa_custom") for row in hqa_rows(2)]
    rows, report = mix_stage2(hqa, docqa_rows([1] * 5), 3, 10, WhitespaceTokenizer(), seed=0)
    assert report["docqa_used"] == 3 and report["stage1_used"] == 0
    assert len(rows) == 3 and all(r["data_source"] in ("src0", "src1") for r in rows)
    rows, _ = mix_stage2(hqa, [], 2, 10, WhitespaceTokenizer(), seed=0)
    assert {r["data_source"] for r in rows} == {"ruler_hqa_custom"}


def test_mix_errors():
    tok = WhitespaceTokenizer()
    with pytest.raises(ValueError, match=r"needs 4 stage-I rows .* only 3 are given"):
        mix_stage2(hqa_rows(3), docqa_rows([1, 99]), 5, 10, tok, seed=0)
    id_row = {k: v for k, v in hqa_rows(1)[0].items() if k != "context"} | {"doc_ids": [1]}
    with pytest.raises(ValueError, match=r"stage-I row 0 \(index 100\): no 'context' text"):
        mix_stage2([id_row], [], 1, 10, tok, seed=0)
    with pytest.raises(ValueError, match="must be > 0"):
        mix_stage2(hqa_rows(3), [], 0, 10, tok, seed=0)


# --- the CLI -----------------------------------------------------------------------------------


def test_cli_stage2_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from memrepro import cli
    from memrepro.models.tiny import build_tokenizer

    monkeypatch.setenv("MEMREPRO_TRACKING", "off")
    tokenizer_dir = tmp_path / "tokenizer"
    build_tokenizer(fixture_corpus(), 2048, 4096).save_pretrained(tokenizer_dir)
    hqa = tmp_path / "train.jsonl"
    write_jsonl_atomic(hqa, hqa_rows(16))
    out = tmp_path / "stage2" / "train.jsonl"
    settings = {"n_rows": 10, "max_context_tokens": 768, "seed": 42, "source": "docqa_rl"}
    argv = ["stage2-data", "--settings", json.dumps(settings), "--hqa", str(hqa)]
    argv += ["--docqa", str(fixture_path(FIXTURE)), "--tokenizer", str(tokenizer_dir)]
    cli.main([*argv, "--out", str(out)])
    rows = read_jsonl(out)
    assert [r["index"] for r in rows] == list(range(10))
    sources = [r["data_source"] for r in rows]
    # the long docmath row (thousands of tiny-tokenizer tokens) is dropped, the 6 others kept
    assert "docmath_20000_40000" not in sources
    assert sources.count(DATA_SOURCE) == 4 and len(set(sources)) == 5
    assert all(r["num_tokens"] <= 768 for r in rows)
    cli.main([*argv, "--out", str(tmp_path / "again.jsonl")])
    assert (tmp_path / "again.jsonl").read_bytes() == out.read_bytes()
