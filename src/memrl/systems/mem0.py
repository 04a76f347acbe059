"""The Mem0 system kind (MemAgent's benchmarks): a memory built per chunk by mem0ai, the top-k
memories and one answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memrl.agents.driver import Workflow
from memrl.benchmarks import MEMAGENT_BENCHMARKS, Task
from memrl.benchmarks.base import row_chunks
from memrl.evaluation import WorkflowFactory, question
from memrl.systems.base import Config, Settings, SystemKind
from memrl.systems.memagent import agent_settings


def mem0_system(
    task: Task,
    tokenizer: Any,
    pool: Sequence[str] | None,
    store: Any,
    final_prompt: str,
    final_tokens: int,
) -> WorkflowFactory:
    """Mem0 (memrl.baselines.mem0) over the row's context in its store's chunk size, each row
    its own Mem0 user."""
    from memrl.baselines.mem0 import mem0_workflow

    def build(row: dict[str, Any]) -> Workflow:
        chunks = row_chunks(row, pool, tokenizer, store.settings.chunk_tokens)
        user = f"{task.task}-{row['index']}"
        return mem0_workflow(question(task, row), chunks, store, user, final_prompt, final_tokens)

    return build


def workflows(task: Task, s: Settings, tokenizer: Any, pool: list[str] | None) -> WorkflowFactory:
    from memrl.baselines.mem0 import Mem0Settings, Mem0Store

    store = Mem0Store(Mem0Settings(**s["mem0"]))
    return mem0_system(task, tokenizer, pool, store, s["final_prompt"], s["agent"]["final_tokens"])


def job_settings(config: Config, system: Settings) -> Settings:
    """Its store's options, and the agent's budgets: Mem0 answers with its final budget."""
    return {"mem0": system.get("mem0"), "agent": agent_settings(config, system)}


# D.2's agent baselines: RULER-HQA and LongBench's QA tasks
KIND = SystemKind(
    "mem0",
    asks_final_prompt=True,
    memory=True,
    benchmarks=("ruler_hqa", "longbench"),
    allowed=MEMAGENT_BENCHMARKS,
    qa_only=True,
    job_settings=job_settings,
    workflows=workflows,
)
