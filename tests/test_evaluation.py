"""MemAgent evaluation: batching across samples, resume after a kill, failures counted."""

from __future__ import annotations

import json

import pytest

from memrl.agents.memagent import MemAgentConfig
from memrl.engines.base import Completion
from memrl.evaluation import evaluate, load_finished, summarize


class CharTokenizer:
    """One token per character: chunk boundaries are easy to reason about."""

    def encode(self, text, add_special_tokens=False):
        return [ord(c) for c in text]

    def decode(self, ids):
        return "".join(map(chr, ids))


class ScriptedEngine:
    """Memory turns echo a note; final turns answer "Paris" unless the question is poisoned."""

    def __init__(self, fail_on: str | None = None, crash_after_calls: int | None = None):
        self.tokenizer = CharTokenizer()
        self.calls: list[int] = []
        self.fail_on, self.crash_after_calls = fail_on, crash_after_calls

    def chat(self, requests, sampling):
        if self.crash_after_calls is not None and len(self.calls) >= self.crash_after_calls:
            raise KeyboardInterrupt("killed")
        self.calls.append(len(requests))
        out = []
        for request in requests:
            content = request.messages[-1]["content"]
            if self.fail_on and self.fail_on in content:
                out.append(Completion(text="", error="HTTP 500"))
            elif content.rstrip().endswith("Updated memory:"):
                out.append(Completion(text="noted"))
            else:
                out.append(Completion(text="Therefore, the answer is Paris."))
        return out


def rows(n: int, context_chars: int = 25) -> list[dict]:
    return [
        {
            "index": i,
            "input": f"question {i}?",
            "answers": ["Paris" if i % 2 == 0 else "Rome"],
            "num_docs": 3,
            "num_tokens": context_chars,
            "context": "x" * context_chars,
        }
        for i in range(n)
    ]


AGENT = MemAgentConfig(chunk_tokens=10, memory_tokens=8, final_tokens=8)


def test_every_engine_call_carries_each_unfinished_sample(tmp_path):
    engine = ScriptedEngine()
    predictions = evaluate(rows(4), None, engine, AGENT, None, tmp_path / "p.jsonl", batch_size=4)
    # 25 characters in 10-token chunks: 3 memory turns + 1 final turn, all 4 samples each time
    assert engine.calls == [4, 4, 4, 4]
    assert [p["n_calls"] for p in predictions] == [4] * 4
    assert [p["sub_em"] for p in predictions] == [1.0, 0.0, 1.0, 0.0]
    assert summarize(predictions, "s", 3)["accuracy"] == 50.0


def test_a_killed_job_resumes_after_its_last_finished_wave(tmp_path):
    path = tmp_path / "p.jsonl"
    with pytest.raises(KeyboardInterrupt):
        evaluate(
            rows(6), None, ScriptedEngine(crash_after_calls=5), AGENT, None, path, batch_size=2
        )
    assert [r["index"] for r in load_finished(path)] == [0, 1]
    with open(path, "a") as handle:  # a write torn by the kill
        handle.write('{"index": 2, "inp')
    engine = ScriptedEngine()
    predictions = evaluate(rows(6), None, engine, AGENT, None, path, batch_size=2)
    assert sorted(p["index"] for p in predictions) == list(range(6))
    assert engine.calls == [2] * 8  # only the two remaining waves ran
    assert [json.loads(line)["index"] for line in path.read_text().splitlines()] == list(range(6))


def test_failed_requests_count_as_wrong_and_the_official_rate_drops_them(tmp_path):
    engine = ScriptedEngine(fail_on="question 2?")
    predictions = evaluate(rows(4), None, engine, AGENT, None, tmp_path / "p.jsonl", batch_size=4)
    failed = [p for p in predictions if p["failed"]]
    assert [p["index"] for p in failed] == [2] and failed[0]["error"] == "HTTP 500"
    metrics = summarize(predictions, "s", 3)
    assert metrics["n_failed"] == 1
    assert metrics["accuracy"] == 25.0  # 1 of 4
    assert metrics["accuracy_official"] == pytest.approx(100 / 3)  # 1 of the 3 answered


def test_streamed_doc_id_contexts_are_chunked_like_text(tmp_path):
    pool = ["alpha", "beta", "gamma"]
    row = rows(1)[0]
    del row["context"]
    row["doc_ids"] = [2, 0]
    engine = ScriptedEngine()
    evaluate([row], pool, engine, AGENT, None, tmp_path / "p.jsonl", batch_size=1)
    # "Document 1:\ngamma\n\nDocument 2:\nalpha" is 36 characters: 4 chunks + the final turn
    assert len(engine.calls) == 5
