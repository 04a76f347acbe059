"""The oracle control: each question over its gold evidence alone (RULER-HQA: the two supporting
paragraphs HotpotQA marks), in the benchmark's own direct-generation prompt. What the model makes
of exactly the evidence, with nothing to find: the level a memory system's score is read
against from above (how much of what the evidence gives its memory keeps).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memrepro.benchmarks import Task, benchmark
from memrepro.benchmarks.registry import REGISTRY
from memrepro.evaluation import WorkflowFactory, direct_prompt, output_tokens
from memrepro.systems.base import Call, Control, Settings, SystemKind, one_answer
from memrepro.systems.closedbook import job_settings  # the same budgets: one direct answer

EVIDENCE = "gold_evidence"  # the row field the evaluate job fills from the benchmark's marks
EVIDENCE_TOKENS = 300  # RULER-HQA's two supporting paragraphs, about 140 tokens each
MARKED = tuple(name for name, found in REGISTRY.items() if found.evidence is not None)


def workflows(
    task: Task, s: Settings, tokenizer: Any, pool: Sequence[str] | None
) -> WorkflowFactory:
    from memrepro.baselines.longcontext import longcontext

    budget = output_tokens(task, s["max_output_tokens"])
    prompt = s["max_input_tokens"]

    def start(row: dict[str, Any]) -> Any:
        if EVIDENCE not in row:
            raise ValueError(f"sample {row['index']}: no {EVIDENCE} (evaluate needs --evidence)")
        return longcontext(direct_prompt(task, row, row[EVIDENCE]), tokenizer, prompt, budget)

    return start


def marks_evidence(system: Settings, name: str) -> bool:
    """Where a benchmark a system is not listed for (one's own datasets) has marks to read."""
    return benchmark(name).evidence is not None


def calls(settings: Settings, context_tokens: int) -> list[Call]:
    """One answer over the evidence, whatever the context's length."""
    return one_answer(settings, EVIDENCE_TOKENS)


KIND = SystemKind(
    "oracle",
    allowed=MARKED,
    allowed_why=(
        "the benchmarks that mark each question's gold evidence; LongBench, RULER's synthetic "
        "tasks and Mem-α's released instances mark none"
    ),
    qa_only=True,
    sharded=False,  # a question's evidence, whatever the length: one job a length
    control=Control("oracle", above="above the oracle", below="oracle higher"),
    reads_evidence=True,
    runs=marks_evidence,
    job_settings=job_settings,
    workflows=workflows,
    calls=calls,
)
