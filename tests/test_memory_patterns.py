"""MemAgent's failure patterns: the gold chunks found while the agent reads, each sample's
pattern from its trace, the counts in the metrics record and the table over runs."""

from __future__ import annotations

import json

import pytest

from memrepro.evaluation import summarize
from memrepro.report.memory_patterns import build_pattern_table
from memrepro.report.records import load_metrics
from memrepro.report.render import to_markdown
from memrepro.scoring.evidence import GoldChunks, memory_pattern, pattern_counts
from memrepro.scoring.intervals import wilson


def test_gold_chunks_are_noted_as_the_agent_reads_them():
    chunks = GoldChunks(iter(["a b", "the answer is PARIS", "c", "paris again"]), ["Paris"])
    read = []
    for chunk in chunks:
        read.append(chunk)
        if len(read) == 2:
            assert chunks.found == [1]  # noted when read, not before
    assert read[1] == "the answer is PARIS" and chunks.found == [1, 3]


@pytest.mark.parametrize(
    ("answer", "text", "found"),
    [
        ("no", "it is not there", False),
        ("no", "The answer: No.", True),
        ("2", "in 2014", False),
        ("2", "room 2, floor 3", True),
        ("New York", "new york city", True),
        ("New York", "New Yorker", False),
        ("$5", "it costs $5 now", True),
    ],
)
def test_evidence_is_matched_as_a_whole_word(answer, text, found):
    chunks = GoldChunks([text], [answer])
    list(chunks)
    assert (chunks.found == [0]) is found


def prediction(trace, evidence, n_chunks=5, pred="Paris", score=1.0, answers=("Paris",)):
    return {
        "answers": list(answers),
        "pred": pred,
        "score": score,
        "failed": False,
        "response": pred,
        "n_calls": n_chunks + 1,
        "n_chunks": n_chunks,
        "memory_trace": [{"chunk": c, "memory": m} for c, m in trace],
        "evidence_chunks": evidence,
    }


@pytest.mark.parametrize(
    ("trace", "evidence", "expected"),
    [
        ([(1, "capital: Paris")], [1], ("kept", False)),
        # entered after gold chunk 1, dropped after chunk 3 (F.1)
        ([(1, "capital: Paris"), (3, "nothing useful")], [1], ("overwritten", False)),
        ([(0, "notes"), (2, "more notes")], [2], ("never_entered", False)),  # F.2
        ([(0, "notes")], [], ("unlocated", False)),
    ],
)
def test_a_samples_pattern(trace, evidence, expected):
    assert memory_pattern(prediction(trace, evidence)) == expected


def test_evidence_in_a_chunk_the_failed_sample_never_finished_is_not_located():
    # gold chunk 4 was handed to the agent, whose request then failed: 4 chunks read
    assert memory_pattern(prediction([(0, "x")], [4], n_chunks=4)) == ("unlocated", False)


def test_primacy_is_a_wrong_answer_held_before_the_first_gold_chunk_and_at_the_end():
    # "Lyon" in memory after chunk 0, gold chunk 2 read, "Lyon" still there at the end (F.3)
    trace = [(0, "maybe Lyon"), (2, "Lyon; also Paris mentioned"), (3, "answer Lyon")]
    early = prediction(trace, [2], pred="Lyon", score=0.0)
    assert memory_pattern(early) == ("overwritten", True)
    right = prediction(trace, [2], pred="Lyon", score=1.0)
    assert memory_pattern(right) == ("overwritten", False)  # a right answer is no bias
    late = prediction([(3, "answer Lyon")], [2], pred="Lyon", score=0.0)
    assert memory_pattern(late) == ("never_entered", False)  # not held before the evidence


def test_counts_go_into_the_metrics_record_only_for_traced_predictions():
    traced = [
        prediction([(1, "Paris")], [1]),
        prediction([(1, "Paris"), (2, "gone")], [1], score=0.0, pred="x"),
        prediction([(0, "notes")], []),
    ]
    record = summarize(traced, "ruler_hqa", "hqa", "s", 50)
    assert record["memory_patterns"] == {
        "kept": 1,
        "overwritten": 1,
        "never_entered": 0,
        "unlocated": 1,
        "primacy": 0,
    }
    untraced = [{k: v for k, v in p.items() if k != "evidence_chunks"} for p in traced]
    assert pattern_counts(untraced) is None
    assert "memory_patterns" not in summarize(untraced, "ruler_hqa", "hqa", "s", 50)


def test_the_table_has_a_row_per_system_and_length_with_wilson_intervals(tmp_path):
    def record(system, length, kept, overwritten):
        return {
            "benchmark": "ruler_hqa",
            "task": "hqa",
            "system": system,
            "length": length,
            "mean_tokens": 100.0,
            "n_items": 8,
            "n_failed": 0,
            "accuracy": 50.0,
            "accuracy_official": 50.0,
            "memory_patterns": {
                "kept": kept,
                "overwritten": overwritten,
                "never_entered": 8 - kept - overwritten,
                "unlocated": 0,
                "primacy": 1,
            },
        }

    path = tmp_path / "m.json"
    path.write_text(
        json.dumps([record("rl", 50, 6, 1), record("rl", 100, 2, 4), record("rag", 50, 0, 0)])
    )
    del_patterns = json.loads(path.read_text())
    del del_patterns[2]["memory_patterns"]  # a RAG system records none: no row
    path.write_text(json.dumps(del_patterns))
    systems = {
        "rl": {"display": "RL-MemAgent", "kind": "memagent"},
        "rag": {"display": "RAG", "kind": "rag"},
    }
    table = build_pattern_table(load_metrics([path]), systems, {50: "7K"})
    assert list(table.index) == ["RL-MemAgent @ 7K", "RL-MemAgent @ 100 docs"]
    kept = table.loc["RL-MemAgent @ 7K", "kept"]
    assert kept.ours == 75.0 and kept.n_items == 8 and kept.ci == wilson(6, 8)
    markdown = to_markdown(table, "Failure patterns")
    assert "Verdicts" not in markdown and "Paper rows compared" not in markdown  # none printed
    assert (
        "| RL-MemAgent @ 7K | 75.0 [41–93] |" in markdown and "paper" not in markdown.split("\n")[4]
    )
    with pytest.raises(ValueError, match="no RULER-HQA metrics record counts memory patterns"):
        build_pattern_table([], systems)
