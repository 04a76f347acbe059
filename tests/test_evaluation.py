"""Evaluation: batching across samples, resume after a kill, failures counted, shards merged,
and every system kind scored by its benchmark's metric."""

from __future__ import annotations

import json

import pytest

from memrepro.agents.memagent import MemAgentConfig
from memrepro.benchmarks import Task
from memrepro.engines.base import Completion
from memrepro.evaluation import (
    evaluate,
    load_finished,
    merge_shards,
    requests_digest,
    shard_rows,
    summarize,
    workflow_runner,
)
from memrepro.systems.longcontext import longcontext_system
from memrepro.systems.memagent import memagent_system
from memrepro.systems.rag import rag_system


class CharTokenizer:
    """One token per character: chunk boundaries are easy to reason about."""

    def encode(self, text, add_special_tokens=False):
        return [ord(c) for c in text]

    def decode(self, ids, skip_special_tokens=False):
        return "".join(map(chr, ids))


class ScriptedEngine:
    """Memory turns echo a note; final turns answer "Paris" unless the question is poisoned.
    Every request is kept (`requests`)."""

    def __init__(self, fail_on: str | None = None, crash_after_calls: int | None = None):
        self.tokenizer = CharTokenizer()
        self.calls: list[int] = []
        self.requests: list = []
        self.fail_on, self.crash_after_calls = fail_on, crash_after_calls

    def chat(self, requests, sampling):
        if self.crash_after_calls is not None and len(self.calls) >= self.crash_after_calls:
            raise KeyboardInterrupt("killed")
        self.calls.append(len(requests))
        self.requests += requests
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
HQA = Task("ruler_hqa", "hqa")


def run(rows_, engine, path, batch_size, pool=None):
    """MemAgent on RULER-HQA rows."""
    system = memagent_system(HQA, engine.tokenizer, pool, AGENT)
    return evaluate(rows_, workflow_runner(HQA, system, engine, None), path, batch_size=batch_size)


def test_every_engine_call_carries_each_unfinished_sample(tmp_path):
    engine = ScriptedEngine()
    predictions = run(rows(4), engine, tmp_path / "p.jsonl", 4)
    # 25 characters in 10-token chunks: 3 memory turns + 1 final turn, all 4 samples each time
    assert engine.calls == [4, 4, 4, 4]
    assert [p["n_calls"] for p in predictions] == [4] * 4
    assert [p["sub_em"] for p in predictions] == [1.0, 0.0, 1.0, 0.0]
    summary = summarize(predictions, "ruler_hqa", "hqa", "s", 3)
    assert summary["accuracy"] == 50.0
    # the memory each answered from ("noted": 5 one-character tokens), the tables' Mem. column
    assert [p["memory_tokens"] for p in predictions] == [5] * 4
    assert summary["mean_memory_tokens"] == 5


def test_each_prediction_carries_the_digests_of_the_prompts_it_sent(tmp_path):
    engine = ScriptedEngine()
    predictions = run(rows(2), engine, tmp_path / "p.jsonl", 1)  # one sample at a time
    sent = [engine.requests[:4], engine.requests[4:]]  # 3 memory turns and the final one each
    assert [p["prompt_sha256"] for p in predictions] == [requests_digest(s[:1]) for s in sent]
    assert [p["prompts_sha256"] for p in predictions] == [requests_digest(s) for s in sent]
    assert predictions[0]["prompt_sha256"] != predictions[1]["prompt_sha256"]
    # the same first prompt with another budget is another prompt; a sample that sent nothing
    # has no digest
    budget = engine.requests[0].__class__(engine.requests[0].messages, max_tokens=9)
    assert requests_digest([budget]) != predictions[0]["prompt_sha256"]
    assert requests_digest([]) is None


def test_each_prediction_carries_its_rows_identity_and_the_digest_of_its_data():
    from memrepro.data.io import json_digest
    from memrepro.jobs.evaluate import with_row_identity

    row = {"index": 0, "id": "harbor-1", "task_label": "history", "input": "Who?",
           "context": "Ada wrote it.", "answers": ["Ada"], "num_tokens": 3}  # fmt: skip
    (record,) = with_row_identity([{"index": 0, "score": 1.0}], [row])
    assert (record["id"], record["task_label"], record["score"]) == ("harbor-1", "history", 1.0)
    data = {k: v for k, v in row.items() if k != "num_tokens"}
    assert record["row_sha256"] == json_digest(data)
    # another tokenizer's length or the memory another job wrote leave the row as it was
    same = with_row_identity([{"index": 0}], [{**row, "num_tokens": 9, "memorized": {"m": 1}}])
    changed = with_row_identity([{"index": 0}], [{**row, "context": "Ada Lovelace wrote it."}])
    assert same[0]["row_sha256"] == record["row_sha256"] != changed[0]["row_sha256"]


def test_a_killed_job_resumes_after_its_last_finished_wave(tmp_path):
    path = tmp_path / "p.jsonl"
    with pytest.raises(KeyboardInterrupt):
        run(rows(6), ScriptedEngine(crash_after_calls=5), path, 2)
    assert [r["index"] for r in load_finished(path)] == [0, 1]
    with open(path, "a") as handle:  # a write torn by the kill
        handle.write('{"index": 2, "inp')
    engine = ScriptedEngine()
    predictions = run(rows(6), engine, path, 2)
    assert sorted(p["index"] for p in predictions) == list(range(6))
    assert engine.calls == [2] * 8  # only the two remaining waves ran
    assert [json.loads(line)["index"] for line in path.read_text().splitlines()] == list(range(6))


def test_failed_requests_count_as_wrong_and_the_official_rate_drops_them(tmp_path):
    engine = ScriptedEngine(fail_on="question 2?")
    predictions = run(rows(4), engine, tmp_path / "p.jsonl", 4)
    failed = [p for p in predictions if p["failed"]]
    assert [p["index"] for p in failed] == [2] and failed[0]["error"] == "HTTP 500"
    metrics = summarize(predictions, "ruler_hqa", "hqa", "s", 3)
    assert metrics["n_failed"] == 1
    assert metrics["accuracy"] == 25.0  # 1 of 4
    assert metrics["accuracy_official"] == pytest.approx(100 / 3)  # 1 of the 3 answered
    assert metrics["n_dropped"] == 1


def test_the_official_rate_also_drops_empty_outputs_as_the_official_evaluator_does():
    def prediction(index, response, score, failed=False):
        return {
            "index": index,
            "response": response,
            "failed": failed,
            "score": score,
            "sub_em": score,
            "n_calls": 1,
        }

    predictions = [
        prediction(0, "Therefore, the answer is Paris.", 1.0),
        prediction(1, "", 0.0),  # the model wrote nothing: skipped officially
        prediction(2, "", 0.0, failed=True),  # a failed request: skipped too
        prediction(3, "the answer is Lyon", 0.0),
    ]
    metrics = summarize(predictions, "ruler_hqa", "hqa", "s", 10)
    assert (metrics["n_failed"], metrics["n_dropped"]) == (1, 2)
    assert metrics["accuracy"] == 25.0 and metrics["accuracy_official"] == 50.0


def test_streamed_doc_id_contexts_are_chunked_like_text(tmp_path):
    pool = ["alpha", "beta", "gamma"]
    row = rows(1)[0]
    del row["context"]
    row["doc_ids"] = [2, 0]
    engine = ScriptedEngine()
    run([row], engine, tmp_path / "p.jsonl", 1, pool)
    # "Document 1:\ngamma\n\nDocument 2:\nalpha" is 36 characters: 4 chunks + the final turn
    assert len(engine.calls) == 5


def test_shards_partition_the_rows_and_merge_back_in_index_order(tmp_path):
    data = rows(7)
    parts = [shard_rows(data, k, 3) for k in range(3)]
    assert sorted(r["index"] for part in parts for r in part) == list(range(7))
    assert [len(part) for part in parts] == [3, 2, 2]
    predictions = [
        run(part, ScriptedEngine(), tmp_path / f"s{k}.jsonl", 2) for k, part in enumerate(parts)
    ]
    merged = merge_shards(reversed(predictions))
    assert [p["index"] for p in merged] == list(range(7))
    whole = run(data, ScriptedEngine(), tmp_path / "whole.jsonl", 7)
    drop = ("n_calls",)  # identical anyway; compare every scored field
    assert [{k: v for k, v in p.items() if k not in drop} for p in merged] == [
        {k: v for k, v in p.items() if k not in drop} for p in whole
    ]
    with pytest.raises(ValueError, match="appears in two shards"):
        merge_shards([predictions[0], predictions[0]])
    with pytest.raises(ValueError, match=r"shard 3 is not in 0\.\.2"):
        shard_rows(data, 3, 3)


def test_summary_reports_every_metric_and_the_paper_metric_as_accuracy(tmp_path):
    predictions = run(rows(4), ScriptedEngine(fail_on="question 1?"), tmp_path / "p.jsonl", 4)
    metrics = summarize(predictions, "ruler_hqa", "hqa", "s", 50)
    assert {k: metrics[k] for k in ("benchmark", "task", "system", "length")} == {
        "benchmark": "ruler_hqa",
        "task": "hqa",
        "system": "s",
        "length": 50,
    }
    assert metrics["accuracy"] == 50.0  # samples 0 and 2; 1 failed, 3 answers Rome
    # the side metrics leave the failed sample out, as the official evaluator does
    assert metrics["accuracy_official"] == metrics["sub_em"] == pytest.approx(200 / 3)
    assert metrics["em"] == metrics["f1"] == pytest.approx(200 / 3)
    assert metrics["mean_tokens"] == 25
    assert metrics["mean_calls"] == 3.25  # the failed sample stopped after its first call


def test_long_context_baseline_gets_the_official_prompt_middle_truncated(tmp_path):
    from memrepro.baselines.longcontext import official_prompt

    row = rows(1, context_chars=400)[0]
    engine = ScriptedEngine()
    system = longcontext_system(HQA, engine.tokenizer, None, 300, None)
    [prediction] = evaluate(
        [row], workflow_runner(HQA, system, engine, None), tmp_path / "p.jsonl", 1
    )
    [request] = engine.requests
    full = official_prompt(row["context"], row["input"])
    prompt = request.messages[0]["content"]
    assert len(full) > 300 and prompt == full[:150] + full[-150:]  # 1 char = 1 token
    assert request.max_tokens == 10000  # the official MAX_OUTPUT_LEN when none is configured
    assert prediction["sub_em"] == 1.0 and prediction["n_calls"] == 1


class FirstUnits:
    def top_k(self, query, units, k):
        return list(range(len(units)))[::-1][:k]  # the last k units, best first


def test_rag_answers_from_the_top_k_documents_in_context_order(tmp_path):
    pool = ["alpha", "beta", "gamma", "delta"]
    row = {**rows(1)[0], "doc_ids": [3, 1, 0, 2]}
    del row["context"]
    engine = ScriptedEngine()
    system = rag_system(HQA, engine.tokenizer, pool, FirstUnits(), 2, None, 10**6, 7)
    evaluate([row], workflow_runner(HQA, system, engine, None), tmp_path / "p.jsonl", 1)
    [request] = engine.requests
    assert (
        "<text>\nDocument 3:\nalpha\n\nDocument 4:\ngamma\n</text>"
        in (request.messages[0]["content"])
    )
    assert request.max_tokens == 7


def test_longbench_prompts_budgets_and_metrics(tmp_path):
    from memrepro.data.longbench import SUMMARY_PROBLEM, load_longbench, max_new_tokens, prompt
    from memrepro.data.sources import fixture_path

    task = Task("longbench", "gov_report")
    data = load_longbench(fixture_path("longbench/gov_report.parquet"), "gov_report")[:1]
    engine = ScriptedEngine()
    direct = longcontext_system(task, engine.tokenizer, None, 10**6, None)
    [prediction] = evaluate(
        data, workflow_runner(task, direct, engine, None), tmp_path / "d.jsonl", 1
    )
    [request] = engine.requests
    assert request.messages[0]["content"] == prompt("gov_report", data[0]["context"], "")
    assert request.max_tokens == max_new_tokens("gov_report") == 512
    assert {"rouge_1_recall", "rouge_2_recall", "rouge_l_recall", "rouge_l_f"} <= set(prediction)
    agent = MemAgentConfig(chunk_tokens=10**6, memory_tokens=8, final_tokens=8)
    engine = ScriptedEngine()
    memory = memagent_system(task, engine.tokenizer, None, agent)
    evaluate(data, workflow_runner(task, memory, engine, None), tmp_path / "m.jsonl", 1)
    assert f"<problem> \n{SUMMARY_PROBLEM}\n</problem>" in engine.requests[0].messages[0]["content"]


def test_instances_of_questions_get_both_designs_intervals():
    """Mem-α's predictions (an instance per record, its questions' `scores`): the two-level
    interval and the fixed-instances one, narrower where the instances differ, which both
    sides of a comparison on the same released instances share."""
    scores = [[1.0] * 18 + [0.0] * 2, [1.0] * 4 + [0.0] * 16, [1.0] * 10 + [0.0] * 10]
    predictions = [
        {"index": i, "failed": False, "response": "x", "score": sum(s) / len(s), "scores": s,
         "n_calls": 1}
        for i, s in enumerate(scores)
    ]  # fmt: skip
    metrics = summarize(predictions, "memoryagentbench", "ar", "s", 0)
    (low, high), (fixed_low, fixed_high) = (
        metrics[key]["accuracy"] for key in ("ci95", "ci95_fixed_instances")
    )
    assert metrics["n_questions"] == 60 and metrics["accuracy"] == pytest.approx(53.3333, 1e-4)
    assert low < fixed_low < metrics["accuracy"] < fixed_high < high
    one_question = [{**p, "scores": p["scores"][:1]} for p in predictions]
    assert "ci95_fixed_instances" not in summarize(one_question, "memoryagentbench", "ar", "s", 0)
