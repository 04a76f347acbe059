"""Evaluation of one system on one benchmark set: batched, sharded, resumable, failures counted.

A *system* is a workflow over the engine (memrl.agents.driver): the memory agent, direct
long-context generation, or RAG top-K followed by direct generation. The benchmark decides what
the system is asked (`question`, `direct_prompt`), how much it may answer (`output_tokens`) and
how the answer is scored (`score`). Samples run in waves of `batch_size`; within a wave every
engine call carries the current step of every unfinished sample. Each finished sample is appended
(and flushed) to the predictions JSONL, so a killed job resumes with the samples it has not
written yet; metrics come from the merged JSONL, so a resumed or sharded run scores exactly like
one uninterrupted job.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from memrl.agents.chunking import token_chunks
from memrl.agents.driver import Rollout, Workflow, run_batched
from memrl.agents.memagent import MemAgentConfig, memagent
from memrl.data.io import append_jsonl, read_jsonl
from memrl.data.ruler_hqa import context_pieces
from memrl.engines.base import ChatEngine, SamplingParams

log = logging.getLogger(__name__)

RULER_HQA_OUTPUT_TOKENS = 10000  # the official direct-generation MAX_OUTPUT_LEN


@dataclass(frozen=True)
class Task:
    """What is evaluated: a benchmark's task (RULER's `variant` decides its scoring)."""

    benchmark: str
    task: str
    variant: str = "memagent"


# --- what the benchmark asks and how it scores --------------------------------------------------


def question(task: Task, row: dict[str, Any]) -> str:
    """The problem a memory agent (or a retriever) gets: the question without its context."""
    if task.benchmark == "longbench":
        from memrl.data.longbench import question_for_memagent

        return question_for_memagent(task.task, row)
    return row["input"]


def direct_prompt(task: Task, row: dict[str, Any], context: str) -> str:
    """The whole prompt of direct generation: LongBench's own template, else the official one.

    RULER's upstream rows get RULER's own prompt (context inside the task template, answer prefix
    last); MemAgent's fork (and so the paper) asks them the official way, without the prefix.
    """
    if task.benchmark == "longbench":
        from memrl.data.longbench import prompt

        return prompt(task.task, context, row["input"])
    if task.benchmark == "ruler" and task.variant == "upstream":
        from memrl.data.ruler import ruler_prompt

        return ruler_prompt({**row, "context": context})
    from memrl.baselines.longcontext import official_prompt

    return official_prompt(context, row["input"])


def output_tokens(task: Task, configured: int | None) -> int:
    """A direct-generation budget: the configured one, else the benchmark's own."""
    if configured is not None:
        return configured
    if task.benchmark == "longbench":
        from memrl.data.longbench import max_new_tokens

        return max_new_tokens(task.task)
    if task.benchmark == "ruler":
        from memrl.data.ruler import tokens_to_generate

        return tokens_to_generate(task.task)
    return RULER_HQA_OUTPUT_TOKENS


def score(task: Task, row: dict[str, Any], response: str) -> dict[str, Any]:
    """Per-sample scores; `score` in [0, 1] is the paper's metric, the rest are reported beside."""
    if task.benchmark == "ruler_hqa":
        from memrl.scoring.metrics import score_answer_is

        scores = score_answer_is(response, row["answers"][0])
        return {**scores, "score": scores["sub_em"]}
    if task.benchmark == "ruler":
        from memrl.scoring.ruler import score_ruler

        return score_ruler(task.task, response, row["answers"], task.variant)
    from memrl.scoring.longbench import score_longbench

    return score_longbench(task.task, response, row["answers"])


def failed_scores(task: Task, row: dict[str, Any]) -> dict[str, Any]:
    """A failed request scores 0 on every metric (a real score's keys: means stay aligned)."""
    scores = score(task, row, "")
    return {k: (0.0 if isinstance(v, float) else None) for k, v in scores.items()}


# --- systems: a workflow per row -----------------------------------------------------------------


WorkflowFactory = Callable[[dict[str, Any]], Workflow]


def memagent_system(
    task: Task, tokenizer: Any, pool: Sequence[str] | None, agent: MemAgentConfig
) -> WorkflowFactory:
    def build(row: dict[str, Any]) -> Workflow:
        chunks = token_chunks(tokenizer, context_pieces(row, pool), agent.chunk_tokens)
        return memagent(question(task, row), chunks, agent)

    return build


def longcontext_system(
    task: Task,
    tokenizer: Any,
    pool: Sequence[str] | None,
    max_input_tokens: int,
    max_output_tokens: int | None,
) -> WorkflowFactory:
    from memrl.baselines.longcontext import longcontext

    budget = output_tokens(task, max_output_tokens)

    def start(row: dict[str, Any]) -> Workflow:
        context = "".join(context_pieces(row, pool))
        return longcontext(direct_prompt(task, row, context), tokenizer, max_input_tokens, budget)

    return lambda row: _deferred(start, row)


def rag_system(
    task: Task,
    tokenizer: Any,
    pool: Sequence[str] | None,
    retriever: Any,
    top_k: int,
    unit_tokens: int | None,
    max_input_tokens: int,
    max_output_tokens: int | None,
) -> WorkflowFactory:
    """RAG top-K over whole documents (`unit_tokens` None) or `unit_tokens`-token chunks, answered
    by direct generation with the benchmark's prompt (memrl.baselines.rag)."""
    from memrl.baselines.rag import document_units, rag, token_units

    budget = output_tokens(task, max_output_tokens)

    def units(row: dict[str, Any]) -> list[str]:
        pieces = context_pieces(row, pool)
        if unit_tokens is None:
            return document_units(pieces)
        return token_units(tokenizer, pieces, unit_tokens)

    def start(row: dict[str, Any]) -> Workflow:
        def render(context: str) -> str:
            return direct_prompt(task, row, context)

        return rag(
            question(task, row),
            units(row),
            retriever,
            top_k,
            render,
            tokenizer,
            max_input_tokens,
            budget,
        )

    return lambda row: _deferred(start, row)


def _deferred(start: Callable[[dict[str, Any]], Workflow], row: dict[str, Any]) -> Workflow:
    """`start(row)`'s workflow, created only when first driven: a wave of samples never holds
    every sample's whole context at once (the inner workflows drop it before their request)."""
    return (yield from start(row))


# --- Mem-α: memorise with the policy model, then answer from memory with the QA model --------


def memorize_runner(
    agent: Any,
    engine: ChatEngine,
    sampling: SamplingParams,
    new_memory: Callable[[dict[str, Any]], Any],
) -> WaveRunner:
    """A wave of Mem-α memorisations (`agent`: MemAlphaConfig; `new_memory(row)`: the row's
    empty StructuredMemory): one record per instance with the final memory and every step."""
    from memrl.agents.memalpha import memorize

    def run(wave: list[dict[str, Any]]) -> list[dict[str, Any]]:
        memories = [new_memory(row) for row in wave]
        traces: list[list[Any]] = [[] for _ in wave]
        workflows = [
            memorize(row["chunks"], memory, agent, trace)
            for row, memory, trace in zip(wave, memories, traces, strict=True)
        ]
        rollouts = drive(workflows, engine, sampling)
        return [
            memory_record(row, memory, trace, rollout)
            for row, memory, trace, rollout in zip(wave, memories, traces, rollouts, strict=True)
        ]

    return run


def memory_record(row: dict[str, Any], memory: Any, trace: list[Any], rollout: Rollout) -> dict:
    """An instance's memorisation: the final memory (the official agent_state layout), each
    chunk's response, calls and results, and the tool-call counts."""
    results = [result for step in trace for result in step.results]
    return {
        "index": row["index"],
        "memory": memory.snapshot(),
        "steps": [
            {
                "response": step.response,
                "visible_items": step.visible_items,
                "calls": [[c.name, c.arguments, c.malformed] for c in step.calls],
                "results": [[r.ok, r.message] for r in step.results],
            }
            for step in trace
        ],
        "n_calls": len(rollout.conversations),
        "tool_calls": len(results),
        "tool_successes": sum(r.succeeded for r in results),
        "failed": rollout.failed,
        "error": rollout.final.completion.error if rollout.failed else None,
    }


@dataclass(frozen=True)
class MemoryQA:
    """The frozen QA step and the judge of LongMemEval answers (both on the QA model)."""

    sampling: SamplingParams
    judge_sampling: SamplingParams
    top_k: int
    prompt_cap: int
    max_tokens: int
    judge_max_tokens: int


def memory_qa_runner(engine: ChatEngine, qa: MemoryQA) -> WaveRunner:
    """A wave of instances whose `memorized` record is attached: every question answered from
    the final memory, judged where the source needs the judge, scored per source. An instance
    whose memorisation failed is failed (scores 0); a question whose QA or judge request fails,
    or whose prompt cannot fit, scores 0 and is counted in `failed_questions`."""
    from memrl.agents.memalpha import QAPromptTooLong, answer, qa_request
    from memrl.agents.structured_memory import from_snapshot
    from memrl.data.memalpha import query
    from memrl.engines.base import ChatRequest
    from memrl.scoring import memalpha as metrics

    def count(text: str) -> int:
        return len(engine.tokenizer.encode(text, add_special_tokens=False))

    def run(wave: list[dict[str, Any]]) -> list[dict[str, Any]]:
        asked: list[tuple[int, int, ChatRequest]] = []
        errors: dict[tuple[int, int], str] = {}
        memories = [from_snapshot(row["memorized"]["memory"], count) for row in wave]
        for i, (row, memory) in enumerate(zip(wave, memories, strict=True)):
            if row["memorized"]["failed"]:
                continue
            for j, question in enumerate(row["questions"]):
                text = query(row["task"], question)
                try:
                    request = qa_request(
                        memory, text, count, qa.top_k, qa.prompt_cap, qa.max_tokens
                    )
                except QAPromptTooLong as exc:
                    errors[(i, j)] = str(exc)
                    continue
                asked.append((i, j, request))
        replies = drive([answer(r) for _, _, r in asked], engine, qa.sampling)
        responses: dict[tuple[int, int], str] = {}
        for (i, j, _), rollout in zip(asked, replies, strict=True):
            if rollout.failed:
                errors[(i, j)] = rollout.final.completion.error or "failed"
            else:
                responses[(i, j)] = rollout.answer
        judged = [(i, j) for (i, j) in responses if metrics.is_judged(wave[i]["task"])]

        def judge(i: int, j: int) -> ChatRequest:
            row = wave[i]
            prompt = metrics.judge_prompt(row["questions"][j], row["answers"][j], responses[(i, j)])
            message = {"role": "user", "content": prompt}
            return ChatRequest((message,), qa.judge_max_tokens, enable_thinking=False)

        verdicts = drive([answer(judge(i, j)) for i, j in judged], engine, qa.judge_sampling)
        scores: dict[tuple[int, int], float] = {}
        for key, rollout in zip(judged, verdicts, strict=True):
            if rollout.failed:
                errors[key] = rollout.final.completion.error or "judge failed"
            else:
                scores[key] = metrics.judge_verdict(rollout.answer)
        for (i, j), response in responses.items():
            if (i, j) not in scores and (i, j) not in errors:
                row = wave[i]
                scores[(i, j)] = metrics.score_answer(row["task"], response, row["answers"][j])
        return [
            _qa_record(row, memory, i, responses, scores, errors, engine.tokenizer)
            for i, (row, memory) in enumerate(zip(wave, memories, strict=True))
        ]

    return run


def _qa_record(
    row: dict[str, Any],
    memory: Any,
    i: int,
    responses: dict[tuple[int, int], str],
    scores: dict[tuple[int, int], float],
    errors: dict[tuple[int, int], str],
    tokenizer: Any,
) -> dict[str, Any]:
    """Instance `i`'s record: per-question responses and scores, its mean, the failures, and
    the memory's size in the QA model's tokens (the papers' "Mem.")."""
    from memrl.agents.chunking import count_tokens

    memorized = row["memorized"]
    n = len(row["questions"])
    per_question = [scores.get((i, j), 0.0) for j in range(n)]
    return {
        "index": row["index"],
        "n_questions": n,
        "responses": [responses.get((i, j), "") for j in range(n)],
        "scores": per_question,
        "score": sum(per_question) / n,
        "failed": memorized["failed"],
        "error": memorized["error"],
        "failed_questions": sum((i, j) in errors for j in range(n)),
        "question_errors": {str(j): errors[(i, j)] for j in range(n) if (i, j) in errors},
        "memory_tokens": sum(count_tokens(tokenizer, memory.texts())),
        "num_tokens": row["num_tokens"],
        **{key: memorized[key] for key in ("n_calls", "tool_calls", "tool_successes")},
    }


# --- running and summarising ---------------------------------------------------------------------


def load_finished(path: Path) -> list[dict[str, Any]]:
    """Predictions already written; a torn last line (the job was killed mid-write) is cut off."""
    if not path.exists():
        return []
    raw = path.read_bytes()
    if raw and not raw.endswith(b"\n"):
        log.warning("%s: dropping a partial last line left by an interrupted run", path)
        path.write_bytes(raw[: raw.rfind(b"\n") + 1])
    return read_jsonl(path)


def shard_rows(rows: Sequence[dict[str, Any]], shard: int, shards: int) -> list[dict[str, Any]]:
    """Rows of one shard (round robin, so long and short samples spread evenly)."""
    if not 0 <= shard < shards:
        raise ValueError(f"shard {shard} is not in 0..{shards - 1}")
    return [row for i, row in enumerate(rows) if i % shards == shard]


def record(task: Task, row: dict[str, Any], rollout: Rollout) -> dict[str, Any]:
    """One prediction line: the row without its context, the response, and its scores."""
    out = {key: row.get(key) for key in ("index", "input", "answers", "num_tokens")}
    out.update(
        n_calls=len(rollout.conversations),
        response=rollout.answer,
        failed=rollout.failed,
        error=rollout.final.completion.error if rollout.failed else None,
    )
    out.update(failed_scores(task, row) if rollout.failed else score(task, row, rollout.answer))
    return out


WaveRunner = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


def workflow_runner(
    task: Task, build_workflow: WorkflowFactory, engine: ChatEngine, sampling: SamplingParams
) -> WaveRunner:
    """A wave of a one-engine system: every row's workflow driven together, then scored."""

    def run(wave: list[dict[str, Any]]) -> list[dict[str, Any]]:
        workflows = [build_workflow(row) for row in wave]
        rollouts = drive(workflows, engine, sampling)
        return [record(task, row, r) for row, r in zip(wave, rollouts, strict=True)]

    return run


def drive(workflows: Sequence[Workflow], engine: ChatEngine, sampling: Any) -> list[Rollout]:
    """`run_batched` with a progress bar of engine calls."""
    with tqdm(desc="engine calls", unit="call", leave=False) as calls:
        return run_batched(workflows, engine, sampling, on_step=_ticker(calls))


def evaluate(
    rows: Sequence[dict[str, Any]],
    run_wave: WaveRunner,
    predictions: Path,
    batch_size: int,
    on_wave: Callable[[dict[str, float]], None] | None = None,
) -> list[dict[str, Any]]:
    """Evaluate the rows not yet in `predictions`, `batch_size` at a time through `run_wave`
    (one record per row, its `index` kept); return all predictions (old and new)."""
    wanted = {row["index"] for row in rows}
    finished = [r for r in load_finished(predictions) if r["index"] in wanted]
    done = {r["index"] for r in finished}
    todo = [row for row in rows if row["index"] not in done]
    if done:
        log.info("resuming: %d of %d samples already evaluated", len(done), len(rows))
    bar = tqdm(total=len(rows), initial=len(rows) - len(todo), desc="samples", unit="sample")
    for start in range(0, len(todo), batch_size):
        wave = todo[start : start + batch_size]
        began = time.perf_counter()
        records = run_wave(wave)
        append_jsonl(predictions, records)
        finished += records
        bar.update(len(wave))
        seconds = time.perf_counter() - began
        n_tokens = sum(row.get("num_tokens") or 0 for row in wave)
        log.info(
            "wave of %d samples: %.1f s, %.0f context tokens/s",
            len(wave),
            seconds,
            n_tokens / seconds,
        )
        if on_wave is not None:
            on_wave({"wave_seconds": seconds, "context_tokens_per_s": n_tokens / seconds})
    bar.close()
    return finished


def _ticker(bar: tqdm) -> Callable[[int, int], None]:
    def tick(n_requests: int, n_unfinished: int) -> None:
        bar.update()
        bar.set_postfix(requests=n_requests, unfinished=n_unfinished)

    return tick


def merge_shards(shards: Iterable[Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    """All shards' predictions by index; a sample predicted twice is an error, not a vote."""
    merged: dict[Any, dict[str, Any]] = {}
    for predictions in shards:
        for prediction in predictions:
            if prediction["index"] in merged:
                raise ValueError(f"sample {prediction['index']!r} appears in two shards")
            merged[prediction["index"]] = prediction
    return [merged[i] for i in sorted(merged)]


def summarize(
    predictions: Sequence[dict[str, Any]], benchmark: str, task: str, system: str, length: int
) -> dict[str, Any]:
    """Means x100 of every per-sample metric; `accuracy` (the paper's metric) counts failures as
    wrong, `accuracy_official` drops them from the denominator as the official evaluator does."""
    n = len(predictions)
    answered = [p for p in predictions if not p["failed"]]
    metric_keys = sorted(
        {k for p in predictions for k, v in p.items() if isinstance(v, float) and k != "score"}
    )

    def pct(items: Sequence[dict[str, Any]], key: str) -> float:
        return 100.0 * sum(p[key] for p in items) / len(items) if items else 0.0

    tokens = [p["num_tokens"] for p in predictions if p.get("num_tokens") is not None]
    memory = [p["memory_tokens"] for p in predictions if p.get("memory_tokens") is not None]
    return {
        "benchmark": benchmark,
        "task": task,
        "system": system,
        "length": length,
        "n_items": n,
        "n_failed": n - len(answered),
        "accuracy": pct(predictions, "score"),
        "accuracy_official": pct(answered, "score"),
        **{key: pct(predictions, key) for key in metric_keys},
        "mean_tokens": sum(tokens) / len(tokens) if tokens else None,
        "mean_memory_tokens": sum(memory) / len(memory) if memory else None,
        "mean_calls": sum(p["n_calls"] for p in predictions) / n if n else 0.0,
    }
