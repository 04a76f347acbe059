"""The Mem0 system kind (MemAgent's benchmarks): a memory built per chunk by mem0ai, the top-k
memories and one answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memrepro.agents.driver import Workflow
from memrepro.agents.memagent import FINAL_PROMPT_TOKENS
from memrepro.benchmarks import MEMAGENT_BENCHMARKS, Task
from memrepro.benchmarks.base import row_chunks
from memrepro.evaluation import WorkflowFactory, question
from memrepro.systems.base import QUESTION_TOKENS, Call, Config, Settings, SystemKind, Work
from memrepro.systems.memagent import agent_settings


def mem0_system(
    task: Task,
    tokenizer: Any,
    pool: Sequence[str] | None,
    store: Any,
    final_prompt: str,
    final_tokens: int,
) -> WorkflowFactory:
    """Mem0 (memrepro.baselines.mem0) over the row's context in its store's chunk size, each row
    its own Mem0 user."""
    from memrepro.baselines.mem0 import mem0_workflow

    def build(row: dict[str, Any]) -> Workflow:
        chunks = row_chunks(row, pool, tokenizer, store.settings.chunk_tokens)
        user = f"{task.task}-{row['index']}"
        return mem0_workflow(question(task, row), chunks, store, user, final_prompt, final_tokens)

    return build


def workflows(task: Task, s: Settings, tokenizer: Any, pool: list[str] | None) -> WorkflowFactory:
    from memrepro.baselines.mem0 import Mem0Settings, Mem0Store

    store = Mem0Store(Mem0Settings(**s["mem0"]))
    return mem0_system(task, tokenizer, pool, store, s["final_prompt"], s["agent"]["final_tokens"])


def job_settings(config: Config, system: Settings) -> Settings:
    """Its store's options, and the agent's budgets: Mem0 answers with its final budget."""
    return {"mem0": system.get("mem0"), "agent": agent_settings(config, system)}


# What mem0ai 2.2.1 asks per chunk it adds (`Memory.add`, one pass): its embedder embeds the chunk
# (to find the 10 existing memories nearest it); its LLM reads the additive extraction prompt with
# those memories, the chunk and the session's last 10 messages (the chunks added before, each cut
# to its first 300 characters) and writes the facts; the embedder embeds the facts. A search
# embeds the question.
EXTRACTION_PROMPT_TOKENS = 8459  # its system prompt and empty user prompt, about (a test counts)
LAST_MESSAGES = 10
PAST_MESSAGE_TOKENS = 75  # 300 characters
EXISTING_MEMORIES = 10
# Assumptions (the paper prints none): the facts one 5,000-token chunk of Wikipedia paragraphs
# yields, and one fact's tokens with its JSON
FACTS_PER_CHUNK = 20
FACT_TOKENS = 30


def calls(settings: Settings, context_tokens: int) -> list[Call]:
    """Its engine's one answer: MemAgent's final prompt over the top-k memories."""
    memories = settings["mem0"]["top_k"] * FACT_TOKENS
    return [(QUESTION_TOKENS + FINAL_PROMPT_TOKENS + memories, settings["agent"]["final_tokens"])]


def hosted_calls(settings: Settings, questions: list[tuple[int, int]]) -> list[tuple[str, Work]]:
    """Mem0's own LLM and embedder, per sample: each chunk added as above, then the question
    embedded; both on their `mem0` models (the config's hosted models of those served names)."""
    spec = settings["mem0"]
    llm: Work = []
    embedder: Work = []
    for count, context in questions:
        chunks = chunk_sizes(context, spec["chunk_tokens"])
        llm.append((count, [extraction_call(chunks, i) for i in range(len(chunks))]))
        facts = FACTS_PER_CHUNK * FACT_TOKENS
        embedder.append((count, [(c, 0) for c in chunks] + [(facts, 0)] * len(chunks)))
        embedder.append((count, [(QUESTION_TOKENS, 0)]))
    return [(spec["llm"], llm), (spec["embedder"], embedder)]


def chunk_sizes(context_tokens: int, chunk_tokens: int) -> list[int]:
    """A context's chunks, in tokens: full ones, then the rest."""
    full, rest = divmod(context_tokens, chunk_tokens)
    return [chunk_tokens] * full + ([rest] if rest else [])


def extraction_call(chunks: list[int], i: int) -> Call:
    """The LLM's extraction of chunk `i`: the prompt, the chunk, the beginnings of the chunks
    before it (the last LAST_MESSAGES), the existing memories nearest it; out, its facts."""
    before = sum(min(c, PAST_MESSAGE_TOKENS) for c in chunks[max(0, i - LAST_MESSAGES) : i])
    existing = min(i * FACTS_PER_CHUNK, EXISTING_MEMORIES) * FACT_TOKENS
    prompt = EXTRACTION_PROMPT_TOKENS + chunks[i] + before + existing
    return (prompt, FACTS_PER_CHUNK * FACT_TOKENS)


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
    calls=calls,
    hosted_calls=hosted_calls,
)
