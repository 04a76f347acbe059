"""Each evaluated item as an MLflow trace, under its evaluation's run: what a reader opens in the
trace view to see how one answer came about.

A trace holds:
- its inputs: the task, the item's index, the question (an instance's questions);
- its outputs: the answer (an instance's answers) and its scores;
- the gold, as an expectation; each score, as feedback from the code that scored it; each judge's
  verdict, as feedback from the judge model, its reply the rationale;
- a span per memory update that changed the memory (MemAgent: the memory after each chunk), or
  per tool call (Mem-α: each call the agent made on a chunk, with its result), with the chunk's
  index.

Which items (`traces` in the config): every item, or the failed items plus a sample of `sample`
more per evaluation, drawn with the config's seed. The pipeline does not time each step, so
every span carries its job's start time: the trace view's timeline has no durations.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TRACED_RULES = ("evaluate", "merge_eval")  # the jobs whose predictions are the items
PREDICTIONS = ".predictions.jsonl"  # memrepro.report.records.PREDICTIONS
MEMORIES = ".memories.jsonl"  # a Mem-α memorize job's output: its instances' steps
TRACES_TAG = "memrepro.traces"  # on an evaluation's run: how many traces it holds
DEFAULT_POLICY = {"items": "sample", "sample": 8}
TEXT_CHARS = 4000  # a span's or an answer's text is cut there (a memory, a tool result)


@dataclass(frozen=True)
class Span:
    name: str
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Feedback:
    """A score or a verdict: its name, value, who gave it (CODE or LLM_JUDGE, and its id) and
    why (a judge's reply)."""

    name: str
    value: float
    source: tuple[str, str]
    rationale: str | None = None


@dataclass(frozen=True)
class ItemTrace:
    name: str
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    gold: Any
    feedback: tuple[Feedback, ...]
    spans: tuple[Span, ...]
    tags: dict[str, str]


def policy_of(config: Mapping[str, Any]) -> dict[str, Any]:
    """The invocation config's `traces` block, its defaults filled in."""
    return {**DEFAULT_POLICY, **config.get("traces", {}), "seed": config.get("seed", 0)}


def chosen(lines: Sequence[Mapping[str, Any]], policy: Mapping[str, Any], key: str) -> list[int]:
    """The lines to trace, by position: all; or the failed ones and `sample` of the others,
    drawn by a generator seeded with the config's seed and `key` (the predictions file)."""
    if policy["items"] == "all":
        return list(range(len(lines)))
    failed = [i for i, line in enumerate(lines) if line.get("failed")]
    others = [i for i, line in enumerate(lines) if not line.get("failed")]
    drawn = random.Random(f"{policy['seed']}:{key}").sample(
        others, min(policy["sample"], len(others))
    )
    return sorted([*failed, *drawn])


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= TEXT_CHARS else text[:TEXT_CHARS] + " …"


def memory_updates(trace: Sequence[Mapping[str, Any]]) -> Iterator[Span]:
    """A span per chunk after which MemAgent's memory differs from before it."""
    before = ""
    for step in trace:
        memory = str(step.get("memory", ""))
        if memory != before:
            chunk = int(step["chunk"])
            yield Span(
                f"memory update (chunk {chunk})",
                {"chunk_index": chunk},
                {"memory": _text(memory)},
                {"chunk_index": chunk},
            )
        before = memory


def tool_calls(steps: Sequence[Mapping[str, Any]]) -> Iterator[Span]:
    """A span per tool call Mem-α's agent made, chunk by chunk (a memorize job's `steps`: calls
    as [name, arguments, malformed], results as [ok, message]), with its result."""
    for chunk, step in enumerate(steps):
        results = list(step.get("results", []))
        for n, (name, arguments, malformed) in enumerate(step.get("calls", [])):
            ok, message = results[n] if n < len(results) else (False, malformed or "not run")
            yield Span(
                f"{name} (chunk {chunk})",
                {"chunk_index": chunk, "arguments": _text(arguments)},
                {"ok": bool(ok), "result": _text(message)},
                {"chunk_index": chunk, "tool": str(name)},
            )


def item_trace(
    line: Mapping[str, Any], where: str, scorer: str, judge: str, steps: Sequence[Any] = ()
) -> ItemTrace:
    """One prediction line as a trace: a row's question and answer, or an instance's."""
    task, index = str(line.get("task", "")), line["index"]
    tags = {"memrepro.item": str(index), "memrepro.task": task, "memrepro.predictions": where}
    code = ("CODE", scorer)
    if "questions" in line:  # a Mem-α instance: its questions, one score and verdict each
        scores = line.get("scores", [])
        feedback = [Feedback(f"score q{j}", float(s), code) for j, s in enumerate(scores)]
        feedback += [
            Feedback(f"judge q{j}", _verdict(reply), ("LLM_JUDGE", judge), _text(reply))
            for j, reply in sorted(line.get("judge_replies", {}).items(), key=lambda kv: int(kv[0]))
        ]
        return ItemTrace(
            f"{task} #{index}",
            {"task": task, "index": index, "questions": list(line["questions"])},
            {"answers": [_text(r) for r in line["responses"]], "score": line.get("score")},
            list(line.get("answers", [])),
            (Feedback("score", float(line["score"]), code), *feedback),
            tuple(tool_calls(steps)),
            tags,
        )
    scores = {k: v for k, v in line.items() if isinstance(v, float)}
    return ItemTrace(
        f"{task} #{index}",
        {"task": task, "index": index, "question": line.get("input")},
        {"answer": _text(line.get("response", "")), "failed": bool(line.get("failed"))},
        list(line.get("answers", [])),
        tuple(Feedback(k, float(v), code) for k, v in sorted(scores.items())),
        tuple(memory_updates(line.get("memory_trace", []))),
        tags,
    )


def _verdict(reply: str) -> float:
    from memrepro.scoring.memalpha import judge_verdict

    return float(judge_verdict(reply))


def predictions_of(record: Mapping[str, Any]) -> Path | None:
    """The predictions file an evaluation record wrote (None: a shard, or another job)."""
    if record.get("rule") not in TRACED_RULES:
        return None
    written = [Path(p) for p in record.get("outputs", {}) if p.endswith(PREDICTIONS)]
    return written[0] if written else None


def instance_steps(record: Mapping[str, Any]) -> dict[tuple[str, int], list[Any]]:
    """The steps of each instance a memorize job wrote for the evaluation, by (task, index)."""
    from memrepro.data.io import iter_jsonl

    steps: dict[tuple[str, int], list[Any]] = {}
    for path in record.get("inputs", {}):
        if path.endswith(MEMORIES) and Path(path).is_file():
            for line in iter_jsonl(path):
                steps[(str(line.get("task")), int(line["index"]))] = list(line.get("steps", []))
    return steps


def evaluation_traces(
    record: Mapping[str, Any], policy: Mapping[str, Any], shown: str
) -> list[ItemTrace]:
    """The chosen items of an evaluation record's predictions, as traces."""
    from memrepro.data.io import read_jsonl

    predictions = predictions_of(record)
    if predictions is None or not predictions.is_file():
        return []
    lines = read_jsonl(predictions, ("index",))
    steps = instance_steps(record)
    wildcards = record.get("wildcards", {})
    scorer = f"memrepro's {wildcards.get('benchmark', 'benchmark')} scorer"
    judge = Path(str(record.get("arguments", {}).get("model", "judge"))).name
    return [
        item_trace(
            lines[i],
            shown,
            scorer,
            judge,
            steps.get((str(lines[i].get("task")), int(lines[i]["index"])), ()),
        )
        for i in chosen(lines, policy, shown)
    ]


def run_traces(client: Any, experiment: str, run_id: str) -> Iterator[str]:
    """The ids of every trace the run holds, a page at a time."""
    token = None
    while True:
        page = client.search_traces(
            locations=[experiment], run_id=run_id, max_results=1000, page_token=token
        )
        yield from (trace.info.trace_id for trace in page)
        token = page.token
        if not token:
            return


def log_traces(
    client: Any, experiment: str, run_id: str, traces: Sequence[ItemTrace], start_ms: int
) -> int:
    """The traces under the run (any it held before replaced: a killed load's half), each
    with its gold and feedback; the run is tagged with their count."""
    import mlflow
    from mlflow.entities import AssessmentSource, Expectation
    from mlflow.entities import Feedback as MlflowFeedback
    from mlflow.tracing.client import TracingClient

    # stored as each trace ends (not queued), so that its gold and feedback can name it, and in
    # the client's store: MLflow's tracer exports to the tracking URI it was set up with
    os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = "false"
    # (a relative SQLite URI names another store from another folder: set up afresh each time)
    mlflow.set_tracking_uri(client.tracking_uri)
    mlflow.tracing.reset()
    earlier = list(run_traces(client, experiment, run_id))
    if earlier:
        client.delete_traces(experiment, trace_ids=earlier)
    at = int(start_ms) * 1_000_000
    ids = []
    for trace in traces:
        root = client.start_trace(
            trace.name,
            span_type="AGENT",
            inputs=trace.inputs,
            tags=trace.tags,
            experiment_id=experiment,
            start_time_ns=at,
            run_id=run_id,
        )
        for span in trace.spans:
            child = client.start_span(
                span.name,
                root.trace_id,
                root.span_id,
                span_type="TOOL" if "tool" in span.attributes else "MEMORY",
                inputs=span.inputs,
                attributes=span.attributes,
                start_time_ns=at,
            )
            client.end_span(root.trace_id, child.span_id, outputs=span.outputs, end_time_ns=at)
        client.end_trace(root.trace_id, outputs=trace.outputs, end_time_ns=at)
        ids.append(root.trace_id)
    store = TracingClient(client.tracking_uri)
    for trace_id, trace in zip(ids, traces, strict=True):
        gold = AssessmentSource("HUMAN", "the benchmark's gold")
        store.log_assessment(trace_id, Expectation(name="gold", value=trace.gold, source=gold))
        for given in trace.feedback:
            source = AssessmentSource(*given.source)
            store.log_assessment(
                trace_id,
                MlflowFeedback(
                    name=given.name, value=given.value, source=source, rationale=given.rationale
                ),
            )
    client.set_tag(run_id, TRACES_TAG, str(len(ids)))
    return len(ids)


def trace_evaluation(
    client: Any,
    experiment: str,
    run_id: str,
    record: Mapping[str, Any],
    results: Path,
    config: Mapping[str, Any],
) -> int:
    """An evaluation's chosen items as traces under its run, as its invocation's config chose
    them; none where its predictions changed since its job wrote them (a rerun's run has them)."""
    from memrepro.digests import file_digest
    from memrepro.mlflow_notes import shown_path

    predictions = predictions_of(record)
    if predictions is None or not predictions.is_file():
        return 0
    if file_digest(predictions) != record["outputs"][str(predictions)]:
        client.set_tag(run_id, TRACES_TAG, "0 (its predictions were written again since)")
        return 0
    traces = evaluation_traces(record, policy_of(config), shown_path(str(predictions), results))
    return log_traces(client, experiment, run_id, traces, int(record["start_ms"]))
