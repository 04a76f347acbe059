"""The full-context control: the memory agent's own answer prompt (MemAgent's final step) with
the whole context where its memory would be, the prompt middle-truncated as the long-context
baseline's is, on the agent's model and answer budget. What the same model makes of the
context read at once, asked as the agent asks: the difference to the agent is what its memory
loop keeps or loses, with the prompt held fixed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memrepro.agents.driver import Workflow
from memrepro.agents.memagent import final_prompt_text
from memrepro.benchmarks import MEMAGENT_BENCHMARKS, Task
from memrepro.data.ruler_hqa import context_pieces
from memrepro.evaluation import WorkflowFactory, deferred, question
from memrepro.systems.base import Config, Control, Settings, SystemKind, one_answer
from memrepro.systems.memagent import agent_settings


def workflows(
    task: Task, s: Settings, tokenizer: Any, pool: Sequence[str] | None
) -> WorkflowFactory:
    from memrepro.baselines.longcontext import longcontext

    def start(row: dict[str, Any]) -> Workflow:
        context = "".join(context_pieces(row, pool))
        prompt = final_prompt_text(question(task, row), context, s["final_prompt"])
        return longcontext(prompt, tokenizer, s["max_input_tokens"], s["max_output_tokens"])

    return lambda row: deferred(start, row)


def job_settings(config: Config, system: Settings) -> Settings:
    """Its truncation and context extension as a long-context baseline's; its answer budget the
    agent's final step's unless the system sets one."""
    budget = system.get("max_output_tokens") or agent_settings(config, system)["final_tokens"]
    return {
        "max_input_tokens": system["max_input_tokens"],
        "max_output_tokens": budget,
        "context_extension": system.get("context_extension"),
    }


KIND = SystemKind(
    "fullcontext",
    asks_final_prompt=True,
    allowed=MEMAGENT_BENCHMARKS,
    allowed_why="MemAgent's benchmarks, where its answer prompt is asked per sample",
    qa_only=True,
    control=Control("full context", above="memory beats full context", below="full context higher"),
    job_settings=job_settings,
    workflows=workflows,
    calls=one_answer,  # over the whole context, middle-truncated
)
