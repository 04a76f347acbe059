"""verl's MemAgent rows: the question in parquet, the documents in a SQLite store (no verl)."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from memrepro.data.ruler_hqa import DATA_SOURCE
from memrepro.verl import AGENT_NAME
from memrepro.verl.dataset import load_context, write_verl_dataset

MILL = "Document 1: The mill stands on the Ouse. Document 2: Bread is baked daily."
AGENT = {"query_tokens": 64, "chunk_tokens": 32, "memory_tokens": 8, "final_tokens": 6}
ROWS = [
    {
        "index": 7,
        "input": "Which river runs past the mill?",
        "answers": ["the Ouse", "Ouse"],
        "context": MILL,
    },
    {
        "index": 9,
        "input": "Who kept the bees?",
        "answers": ["Ada"],
        "context": "Document 1: Ada kept the bees behind the orchard wall.",
        "data_source": "docqa",
    },
    {  # the same document as row 0: stored once
        "index": 11,
        "input": "What is baked daily?",
        "answers": ["bread"],
        "context": MILL,
    },
]


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def test_rows_hold_the_question_and_a_context_id_not_the_document(tmp_path):
    summary = write_verl_dataset(
        ROWS, tmp_path / "train.parquet", tmp_path / "ctx.sqlite", AGENT, 3
    )
    assert summary["rows"] == 3 and summary["contexts"] == 2
    table = pq.read_table(tmp_path / "train.parquet")
    assert table.column_names == [
        "prompt",
        "data_source",
        "agent_name",
        "reward_model",
        "extra_info",
    ]
    records = table.to_pylist()
    for row, record in zip(ROWS, records, strict=True):
        assert not any(row["context"] in text for text in _strings(record))
        assert record["prompt"] == [{"role": "user", "content": row["input"]}]
        assert record["agent_name"] == AGENT_NAME
        assert record["reward_model"] == {"style": "rule", "ground_truth": row["answers"]}
        info = record["extra_info"]
        assert info["index"] == row["index"] and info["question"] == row["input"]
        assert info["answers"] == row["answers"]
        assert (info["chunk_tokens"], info["memory_tokens"], info["final_tokens"]) == (32, 8, 6)
        assert info["max_chunks"] == 3
        assert info["verifier"] == "official"  # the reward's verifier, by default the official
        assert info["context_store"] == str((tmp_path / "ctx.sqlite").resolve())
        assert load_context(info["context_store"], info["context_id"]) == row["context"]
    assert [r["data_source"] for r in records] == [
        DATA_SOURCE,
        "docqa",
        DATA_SOURCE,
    ]
    assert records[0]["extra_info"]["context_id"] == records[2]["extra_info"]["context_id"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ctx.sqlite", "train.parquet"]


def test_a_rewritten_store_is_read_anew(tmp_path):
    store = tmp_path / "ctx.sqlite"
    write_verl_dataset(ROWS[:1], tmp_path / "a.parquet", store, AGENT, 3)
    first = pq.read_table(tmp_path / "a.parquet").to_pylist()[0]["extra_info"]
    assert load_context(store, first["context_id"]) == ROWS[0]["context"]
    write_verl_dataset(ROWS[1:2], tmp_path / "b.parquet", store, AGENT, 3)
    second = pq.read_table(tmp_path / "b.parquet").to_pylist()[0]["extra_info"]
    assert load_context(store, second["context_id"]) == ROWS[1]["context"]
    with pytest.raises(KeyError, match="no context with id"):
        load_context(store, first["context_id"])


def test_missing_store_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nowhere\.sqlite"):
        load_context(tmp_path / "nowhere.sqlite", "abc")


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({**ROWS[0], "answers": []}, "training row 1 .*'answers'"),
        ({**ROWS[0], "context": None}, "training row 1 .*'context'"),
        ({**ROWS[0], "index": "7"}, "training row 1: 'index' must be an integer"),
        ({**ROWS[0], "data_source": ""}, "training row 1 .*'data_source'"),
    ],
)
def test_bad_rows_are_named_and_nothing_is_written(tmp_path, row, message):
    with pytest.raises(ValueError, match=message):
        write_verl_dataset([ROWS[1], row], tmp_path / "t.parquet", tmp_path / "c.sqlite", AGENT, 2)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("agent", "max_chunks", "key"),
    [
        ({**AGENT, "chunk_tokens": 0}, 2, "chunk_tokens"),
        ({k: v for k, v in AGENT.items() if k != "final_tokens"}, 2, "final_tokens"),
        (AGENT, 0, "max_chunks"),
    ],
)
def test_bad_budgets_are_named(tmp_path, agent, max_chunks, key):
    with pytest.raises(ValueError, match=key):
        write_verl_dataset(ROWS, tmp_path / "t.parquet", tmp_path / "c.sqlite", agent, max_chunks)


def test_no_rows_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="no training rows"):
        write_verl_dataset([], tmp_path / "t.parquet", tmp_path / "c.sqlite", AGENT, 2)


def test_rows_name_the_requested_verifier(tmp_path):
    write_verl_dataset(
        ROWS, tmp_path / "t.parquet", tmp_path / "c.sqlite", AGENT, 3, verifier="extended"
    )
    records = pq.read_table(tmp_path / "t.parquet").to_pylist()
    assert {record["extra_info"]["verifier"] for record in records} == {"extended"}
    with pytest.raises(ValueError, match="unknown verifier 'loose'"):
        write_verl_dataset(ROWS, tmp_path / "u.parquet", tmp_path / "d.sqlite", AGENT, 3, "loose")
    assert not (tmp_path / "u.parquet").exists()
