"""Each evaluated item as an MLflow trace: which items, what a trace holds, and the load that
writes them into a real MLflow store (SQLite) under their evaluation's run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from test_tracking import INVOKED, mark_ended, tracked_results

from memrepro.tracking.invocation import start_invocation
from memrepro.tracking.loader import load
from memrepro.tracking.record import job_run
from memrepro.tracking.traces import (
    TRACES_TAG,
    chosen,
    item_trace,
    memory_updates,
    policy_of,
    tool_calls,
)

ROW = {
    "task": "hqa",
    "index": 7,
    "input": "Where was Ada Kell born?",
    "answers": ["Varn"],
    "response": "So the answer is Varn",
    "failed": False,
    "score": 1.0,
    "sub_em": 1.0,
    "memory_trace": [
        {"chunk": 0, "memory": ""},
        {"chunk": 1, "memory": "Ada Kell: born in Varn"},
        {"chunk": 2, "memory": "Ada Kell: born in Varn"},
        {"chunk": 3, "memory": "Ada Kell: born in Varn, 1901"},
    ],
}
INSTANCE = {
    "task": "longmemeval_s*",
    "index": 2,
    "questions": ["What does the user drink?"],
    "answers": ["tea, no sugar"],
    "responses": ["Tea."],
    "judge_replies": {"0": "yes"},
    "scores": [1.0],
    "score": 1.0,
    "failed": False,
}
STEPS = [
    {"calls": [["new_core_memory", '{"content": "likes tea"}', None]], "results": [[True, "ok"]]},
    {"calls": [], "results": []},
    {"calls": [["semantic_memory_insert", "{bad", "not JSON"]], "results": []},
]


def test_every_item_or_the_failed_ones_and_a_seeded_sample():
    lines = [{"index": i, "failed": i in (3, 8)} for i in range(20)]
    every = policy_of({"traces": {"items": "all"}, "seed": 1})
    assert chosen(lines, every, "a") == list(range(20))
    sampled = policy_of({"traces": {"items": "sample", "sample": 4}, "seed": 1})
    first = chosen(lines, sampled, "eval/hqa/x/50.predictions.jsonl")
    assert {3, 8} <= set(first) and len(first) == 6
    assert chosen(lines, sampled, "eval/hqa/x/50.predictions.jsonl") == first  # seeded
    other = chosen(lines, sampled, "eval/hqa/x/100.predictions.jsonl")
    assert set(other) - {3, 8} != set(first) - {3, 8}  # each evaluation draws its own
    assert policy_of({})["sample"] == 8  # the default


def test_a_span_per_memory_update_that_changed_the_memory():
    spans = list(memory_updates(ROW["memory_trace"]))
    assert [s.name for s in spans] == ["memory update (chunk 1)", "memory update (chunk 3)"]
    assert spans[1].outputs["memory"] == "Ada Kell: born in Varn, 1901"
    assert spans[1].attributes == {"chunk_index": 3}


def test_a_span_per_tool_call_with_its_chunk_and_result():
    spans = list(tool_calls(STEPS))
    assert [(s.name, s.attributes["chunk_index"]) for s in spans] == [
        ("new_core_memory (chunk 0)", 0),
        ("semantic_memory_insert (chunk 2)", 2),
    ]
    assert spans[0].outputs == {"ok": True, "result": "ok"}
    assert spans[1].outputs == {"ok": False, "result": "not JSON"}  # never run: why


def test_a_row_and_an_instance_as_traces_with_gold_scores_and_the_judges_verdict():
    row = item_trace(ROW, "eval/p.jsonl", "memrepro ruler_hqa scorer", "qwen3-32b")
    assert row.inputs["question"] == ROW["input"] and row.gold == ["Varn"]
    assert {(f.name, f.value, f.source[0]) for f in row.feedback} == {
        ("score", 1.0, "CODE"),
        ("sub_em", 1.0, "CODE"),
    }
    instance = item_trace(INSTANCE, "eval/p.jsonl", "memrepro mab scorer", "qwen3-32b", STEPS)
    [verdict] = [f for f in instance.feedback if f.source[0] == "LLM_JUDGE"]
    assert (verdict.name, verdict.value, verdict.source[1], verdict.rationale) == (
        "judge q0",
        1.0,
        "qwen3-32b",
        "yes",
    )
    assert len(instance.spans) == 2 and instance.outputs["answers"] == ["Tea."]


def _evaluation(results: Path) -> Path:
    """An evaluate job's record and predictions, as the workflow writes them."""
    log = results / "logs/evaluate/ruler_hqa/sys/50.log"
    log.parent.mkdir(parents=True)
    log.write_text("job log\n")
    out = results / "eval/ruler_hqa/sys/50.predictions.jsonl"
    out.parent.mkdir(parents=True)
    lines = [ROW, {**ROW, "index": 8, "failed": True, "score": 0.0, "sub_em": 0.0}]
    wildcards = {"benchmark": "ruler_hqa", "system": "sys", "length": "50"}
    with job_run("evaluate", wildcards, {"k": 1}, [log], [out], log):
        out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return out


def _loaded(tmp_path: Path, monkeypatch) -> tuple[Path, Any, str, Any]:
    """An invocation of one evaluation, every item traced, loaded once: (results, client,
    experiment, the evaluation's run)."""
    from mlflow import MlflowClient

    results = tracked_results(tmp_path, monkeypatch)
    config = {"run": "t", "seed": 1, "traces": {"items": "all"}}
    start_invocation(results, "sqlite:///results/t/mlflow.db", config, "9.0", **INVOKED)
    _evaluation(results)
    mark_ended(results)
    assert load(results)["traces"] == 2
    client = MlflowClient(f"sqlite:///{results / 'mlflow.db'}")
    [experiment] = [e.experiment_id for e in client.search_experiments() if e.name != "Default"]
    [run] = client.search_runs([experiment], filter_string="attributes.run_name LIKE 'evaluate%'")
    return results, client, experiment, run


def test_the_load_writes_each_items_trace_under_its_evaluations_run_once(tmp_path, monkeypatch):
    results, client, experiment, run = _loaded(tmp_path, monkeypatch)
    assert load(results)["traces"] == 0  # loaded: nothing more
    assert run.data.tags[TRACES_TAG] == "2"
    traces = client.search_traces(locations=[experiment], run_id=run.info.run_id)
    assert sorted(t.info.tags["memrepro.item"] for t in traces) == ["7", "8"]
    [seven] = [t for t in traces if t.info.tags["memrepro.item"] == "7"]
    spans = sorted(s.name for s in seven.data.spans)
    assert spans == ["hqa #7", "memory update (chunk 1)", "memory update (chunk 3)"]
    assessed = {a.name: a for a in seven.info.assessments}
    assert assessed["gold"].expectation.value == ["Varn"]
    assert assessed["sub_em"].feedback.value == 1.0


def test_a_load_killed_before_it_tagged_the_run_makes_its_traces_again_once(tmp_path, monkeypatch):
    results, client, experiment, run = _loaded(tmp_path, monkeypatch)
    client.delete_tag(run.info.run_id, TRACES_TAG)  # the traces written, the tag not yet
    assert load(results)["traces"] == 2
    again = client.search_traces(locations=[experiment], run_id=run.info.run_id)
    assert len(again) == 2  # replaced, not doubled
