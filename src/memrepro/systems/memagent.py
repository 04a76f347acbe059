"""The MemAgent system kind: on MemAgent's benchmarks a memory agent per sample; on Mem-α's,
a memorize job that reads each instance and answers its questions, the QA model then judging
where the source needs it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memrepro.agents.driver import Rollout
from memrepro.agents.memagent import (
    DEFAULT_WORDING,
    FINAL_PROMPT_TOKENS,
    WORKFLOW_PROMPT_TOKENS,
    MemAgentConfig,
    MemoryTrace,
    memagent,
)
from memrepro.benchmarks import Task
from memrepro.benchmarks.base import row_chunks
from memrepro.engines.base import ChatEngine, SamplingParams
from memrepro.evaluation import (
    Judge,
    Prepare,
    Prepared,
    Question,
    Traced,
    WaveRunner,
    WorkflowFactory,
    counts,
    drive,
    question,
)
from memrepro.scoring.evidence import GoldChunks, evidence_strings
from memrepro.systems.base import (
    QUESTION_TOKENS,
    Call,
    Config,
    InstanceShape,
    Settings,
    SystemKind,
    baseline_protocol,
)


def memagent_system(
    task: Task,
    tokenizer: Any,
    pool: Sequence[str] | None,
    agent: MemAgentConfig,
    reading: str | None = None,
) -> WorkflowFactory:
    """MemAgent over the row's context in `agent.chunk_tokens`-token chunks (its memory written
    for the question, or, given `reading`, for that task description alone); its record gains
    the memory after every chunk and the chunks holding a gold answer (`trace_fields`)."""

    def build(row: dict[str, Any]) -> Traced:
        strings = evidence_strings(row.get("answers") or [])
        chunks = GoldChunks(row_chunks(row, pool, tokenizer, agent.chunk_tokens), strings)
        trace = MemoryTrace()
        return Traced(
            memagent(question(task, row), chunks, agent, trace, reading),
            lambda: trace_fields(trace, chunks.found, tokenizer),
        )

    return build


def trace_fields(trace: MemoryTrace, evidence_chunks: list[int], tokenizer: Any) -> dict[str, Any]:
    """A MemAgent record's `memory_trace` ({chunk, memory} for each chunk, from 0, after which
    the memory changed; "No previous memory" before chunk 0 is implicit), `n_chunks` (the
    chunks read: all of them unless the sample failed), `evidence_chunks` (those read that
    hold a gold answer) and `memory_tokens` (the memory it answered from, in `tokenizer`'s
    tokens; 0 when it never wrote one). memrepro.report.trace renders them;
    memrepro.scoring.evidence classifies what the memory did with the evidence."""
    from memrepro.agents.chunking import text_tokens

    return {
        "memory_trace": [{"chunk": i, "memory": memory} for i, memory in trace.changes],
        "n_chunks": trace.n_chunks,
        "evidence_chunks": list(evidence_chunks),
        "memory_tokens": text_tokens(tokenizer, trace.memory) if trace.changes else 0,
    }


def memagent_memorize_runner(
    engine: ChatEngine,
    sampling: SamplingParams,
    memory_tokens: int,
    final_tokens: int,
    question_aware: bool = False,
) -> WaveRunner:
    """MemAgent on a Mem-α benchmark, as long_context_eval.py runs it: the memory loop over the
    instance's chunks with its task `prompt` as the problem, then every (query-prompted)
    question answered over the final memory in \\boxed{}; `question_aware`: MemAgent's own
    protocol instead, a memory loop per question with the question as the problem, each
    question answered over its own memory. One record per instance; the evaluate job judges and
    scores the answers."""
    from memrepro.agents.memagent import final_request, read_chunks
    from memrepro.agents.memalpha import answer
    from memrepro.data.memalpha import query

    def run(wave: list[dict[str, Any]]) -> list[dict[str, Any]]:
        loops = {
            (i, j): read_chunks(problem, row["chunks"], memory_tokens)
            for i, row in enumerate(wave)
            for j, problem in _problems(row, question_aware)
        }
        memories = dict(zip(loops, drive(list(loops.values()), engine, sampling), strict=True))

        def memory_of(i: int, j: int) -> Rollout:
            return memories[(i, j if question_aware else None)]

        asked = [
            (
                i,
                j,
                final_request(query(row["task"], q), memory_of(i, j).answer, "boxed", final_tokens),
            )
            for i, row in enumerate(wave)
            for j, q in enumerate(row["questions"])
            if not memory_of(i, j).failed
        ]
        replies = drive([answer(r) for _, _, r in asked], engine, sampling)
        by_instance: dict[int, list[tuple[int, Rollout]]] = {}
        for (i, j, _), reply in zip(asked, replies, strict=True):
            by_instance.setdefault(i, []).append((j, reply))
        return [
            _instance_record(
                row,
                {j: loop for (k, j), loop in memories.items() if k == i},
                by_instance.get(i, []),
            )
            for i, row in enumerate(wave)
        ]

    return run


def _problems(row: dict[str, Any], question_aware: bool) -> list[tuple[int | None, str]]:
    """What each memory loop of an instance is written for: its task prompt (one loop), or each
    query-prompted question (a loop per question, by its number)."""
    from memrepro.data.memalpha import query

    if not question_aware:
        return [(None, row["prompt"])]
    return [(j, query(row["task"], q)) for j, q in enumerate(row["questions"])]


def _instance_record(
    row: dict[str, Any], loops: dict[int | None, Rollout], replies: list[tuple[int, Rollout]]
) -> dict[str, Any]:
    """An instance's record: its memory (question-aware: each question's, by number, and the
    first as `memory`), each answer or why it has none (its reply's or its own memory loop's
    error), the calls made; failed where every memory loop failed."""
    written = {j: loop for j, loop in loops.items() if not loop.failed}
    lost = {j: loop for j, loop in loops.items() if loop.failed and j is not None}
    record = {
        "index": row["index"],
        "memory": next(iter(written.values())).answer if written else "",
        "responses": {str(j): r.answer for j, r in replies if not r.failed},
        "question_errors": {
            **{str(j): loop.final.completion.error or "failed" for j, loop in lost.items()},
            **{str(j): r.final.completion.error or "failed" for j, r in replies if r.failed},
        },
        "n_calls": sum(len(loop.conversations) for loop in loops.values()) + len(replies),
        "failed": not written,
        "error": None if written else next(iter(loops.values())).final.completion.error,
    }
    if None not in loops:
        record["memories"] = {str(j): loop.answer for j, loop in written.items()}
    return record


def answered_questions(engine: ChatEngine) -> Prepare:
    """A MemAgent instance after its memorize job: its answers are given (the QA model only
    judges LongMemEval's), its memory measured in the QA model's tokens (question-aware: the
    mean over its questions' memories)."""
    from memrepro.data.tokens import count_tokens

    def one(row: dict[str, Any]) -> Prepared:
        memorized = row["memorized"]
        questions = tuple(
            Question(error=memorized["question_errors"][str(j)])
            if str(j) in memorized["question_errors"]
            else Question(response=memorized["responses"][str(j)])
            for j in range(len(row["questions"]))
        )
        texts = list(memorized.get("memories", {}).values()) or [memorized["memory"]]
        tokens = round(sum(count_tokens(engine.tokenizer, texts)) / len(texts))  # a count
        return Prepared(questions, tokens, counts=counts(row))

    return one


def workflows(task: Task, s: Settings, tokenizer: Any, pool: list[str] | None) -> WorkflowFactory:
    agent = MemAgentConfig(
        chunk_tokens=s["agent"]["chunk_tokens"],
        memory_tokens=s["agent"]["memory_tokens"],
        final_tokens=s["agent"]["final_tokens"],
        final_prompt=s["final_prompt"],
        wording=s["agent"].get("wording", DEFAULT_WORDING),
    )
    return memagent_system(task, tokenizer, pool, agent, s.get("reading"))


def memorizer(
    s: Settings, engine: ChatEngine, sampling: SamplingParams, counter: Path | None
) -> WaveRunner:
    return memagent_memorize_runner(
        engine, sampling, s["memory_tokens"], s["final_tokens"], s.get("question_aware", False)
    )


def questions(s: Settings, engine: ChatEngine, judge: Judge) -> tuple[Prepare, SamplingParams, str]:
    """Its answers are given: the QA model only judges (nothing is asked)."""
    return answered_questions(engine), judge.sampling, s["protocol"]


def agent_settings(config: Config, spec: Settings) -> dict[str, int]:
    """The agent's budgets for a system or training run: `agent`, with the spec's override."""
    return {**config["agent"], **spec.get("agent", {})}


def job_settings(config: Config, system: Settings) -> Settings:
    """Its budgets and, question-blind, the task description its memory is written for."""
    if not system.get("question_blind"):
        return {"agent": agent_settings(config, system)}
    return {"agent": agent_settings(config, system), "reading": blind_reading(config)}


def blind_reading(config: Config) -> str:
    """What a question-blind MemAgent reads for: MemoryAgentBench's task description of its
    RULER-QA sources (Mem-α's `memalpha.ruler_hqa.prompt`), as Mem-α ran MemAgent there."""
    return config["memalpha"]["ruler_hqa"]["prompt"]


def memorize_settings(config: Config, system: Settings) -> Settings:
    """Mem-α's MemAgent baseline settings; question-aware, a memory loop per question."""
    aware = {"question_aware": True} if system.get("question_aware") else {}
    return {**config["memalpha"]["baselines"]["memagent"], **aware}


def calls(settings: Settings, context_tokens: int) -> list[Call]:
    """A memory update per chunk (query, chunk and memory in, the memory out), then the final
    answer over the memory; each at its budget."""
    agent = settings["agent"]
    query, chunk, memory = agent["query_tokens"], agent["chunk_tokens"], agent["memory_tokens"]
    update = (query + WORKFLOW_PROMPT_TOKENS + chunk + memory, memory)
    final = (query + FINAL_PROMPT_TOKENS + memory, agent["final_tokens"])
    return [update] * math.ceil(context_tokens / chunk) + [final]


def memorize_calls(settings: Settings, instance: InstanceShape) -> list[Call]:
    """On a Mem-α instance: a memory update per chunk with the task prompt as the problem (a
    loop per question, question-aware), then each question answered over its memory; each at
    its budget."""
    memory = settings["memory_tokens"]
    update = (QUESTION_TOKENS + WORKFLOW_PROMPT_TOKENS + instance.chunk_tokens + memory, memory)
    final = (QUESTION_TOKENS + FINAL_PROMPT_TOKENS + memory, settings["final_tokens"])
    loops = instance.questions if settings.get("question_aware") else 1
    return [update] * instance.chunks * loops + [final] * instance.questions


def judged_only(settings: Settings, instance: InstanceShape) -> list[Call]:
    """Its evaluate job asks nothing: the answers are given (the QA model only judges)."""
    return []


KIND = SystemKind(
    "memagent",
    asks_final_prompt=True,
    memory=True,
    job_settings=job_settings,
    instance_settings=lambda config, system: baseline_protocol(config),
    memorize_settings=memorize_settings,
    workflows=workflows,
    memorizer=memorizer,
    questions=questions,
    calls=calls,
    memorize_calls=memorize_calls,
    instance_calls=judged_only,
)
