"""How many MLflow traces a plan's evaluations make, and about how much store they take.

The traces (memrepro.tracking.traces) are one per chosen item of each evaluation: all of them, or
`traces.sample` of them (the failed ones come on top, and cannot be known before the run). A
trace's size is a fixed part, measured on the smoke run, and a span per call of its item with
the call's text: at most TEXT_CHARS characters, and at most the call's output budget in
characters. So the size is an upper bound for MemAgent, whose memory updates are its calls'
outputs, and an estimate for Mem-α, whose chunk's tool calls share one output.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from memrepro.cost.plan import PlannedJob
from memrepro.cost.pricing import Pricing
from memrepro.cost.work import inference_work
from memrepro.tracking.traces import TEXT_CHARS, policy_of

# On the smoke run of 2026-12-03 (the 2-core machine): 637 traces, 1.1 spans each, grew the
# SQLite store by 5.2 MB, about 8 KB a trace; its texts are a few hundred characters.
TRACE_BYTES = 8_000  # a trace's inputs, outputs, gold, six feedback rows and its root span
SPAN_BYTES = 1_000  # a span's row and attributes, before its text
CHARS_PER_TOKEN = 4  # English text in the Qwen tokenizers, about
EVALUATION_RULES = ("evaluate", "evaluate_shard")  # a sharded evaluation's items are its shards'
SPAN_RULES = (*EVALUATION_RULES, "memorize")  # whose calls are an item's spans


@dataclass
class Evaluation:
    items: int = 0
    calls: int = 0
    text_chars: int = 0


@dataclass(frozen=True)
class TraceEstimate:
    evaluations: int
    items: int
    traces: int
    megabytes: float

    def text(self, policy: dict[str, Any]) -> str:
        which = "every item" if policy["items"] == "all" else f"{policy['sample']} of each"
        return (
            f"MLflow traces: {self.traces:,} of {self.items:,} items in {self.evaluations:,} "
            f"evaluations ({which}, and their failed items), about {self.megabytes:,.0f} MB "
            "of store at most (config key `traces`)."
        )


def evaluations(jobs: Iterable[PlannedJob], pricing: Pricing) -> dict[tuple, Evaluation]:
    """Each evaluation's items, and its items' calls and their text, by (system, benchmark,
    length); the evaluations whose work is not modelled are left out."""
    found: dict[tuple, Evaluation] = {}
    for job in jobs:
        settings = job.settings or {}
        if job.rule not in SPAN_RULES or not settings:
            continue
        _, work = inference_work(job.rule, settings, pricing)
        if work is None:
            continue
        key = (settings["system"], settings["benchmark"], settings.get("length", 0))
        evaluation = found.setdefault(key, Evaluation())
        if job.rule in EVALUATION_RULES:
            evaluation.items += sum(count for count, _ in work)
        for count, calls in work:
            evaluation.calls += count * len(calls)
            evaluation.text_chars += count * sum(
                min(TEXT_CHARS, CHARS_PER_TOKEN * output) for _, output in calls
            )
    return {key: e for key, e in found.items() if e.items}


def trace_estimate(jobs: Iterable[PlannedJob], pricing: Pricing) -> TraceEstimate:
    """The traces the plan's evaluations make under the config's `traces`, and their size."""
    policy = policy_of(pricing.config)
    found = evaluations(jobs, pricing)
    traces, size = 0, 0.0
    for e in found.values():
        traced = e.items if policy["items"] == "all" else min(e.items, policy["sample"])
        per_item = TRACE_BYTES + (e.calls * SPAN_BYTES + e.text_chars) / e.items
        traces += traced
        size += traced * per_item
    items = sum(e.items for e in found.values())
    return TraceEstimate(len(found), items, traces, size / 1e6)
