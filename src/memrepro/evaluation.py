"""Evaluation of one system on one benchmark set: batched, sharded, resumable, failures counted.

A *system* is a workflow over the engine (memrepro.agents.driver): the memory agent, direct
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
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepro.agents.driver import Rollout, Workflow, run_batched
from memrepro.benchmarks import Task, benchmark
from memrepro.data.io import append_jsonl, json_digest, jsonl_row
from memrepro.engines.base import ChatEngine, ChatRequest, SamplingParams
from memrepro.progress import on_engine_call, progress
from memrepro.scoring.evidence import pattern_counts
from memrepro.scoring.intervals import fixed_instances_interval, interval, nested_interval
from memrepro.scoring.metrics import dropped_officially
from memrepro.secrets import redact

log = logging.getLogger(__name__)


def question(task: Task, row: dict[str, Any]) -> str:
    """The problem a memory agent (or a retriever) gets: the question without its context."""
    return benchmark(task.benchmark).question(task, row)


def direct_prompt(task: Task, row: dict[str, Any], context: str) -> str:
    """The whole prompt of direct generation, as the benchmark asks it."""
    return benchmark(task.benchmark).direct_prompt(task, row, context)


def output_tokens(task: Task, configured: int | None) -> int:
    """A direct-generation budget: the configured one, else the benchmark's own."""
    return configured if configured is not None else benchmark(task.benchmark).output_tokens(task)


def score(task: Task, row: dict[str, Any], response: str) -> dict[str, Any]:
    """Per-sample scores; `score` in [0, 1] is the paper's metric, the rest are reported beside."""
    return benchmark(task.benchmark).score(task, row, response)


def failed_scores(task: Task, row: dict[str, Any]) -> dict[str, Any]:
    """A failed request scores 0 on every metric (a real score's keys: means stay aligned)."""
    scores = score(task, row, "")
    return {k: (0.0 if isinstance(v, float) else None) for k, v in scores.items()}


@dataclass(frozen=True)
class Traced:
    """A workflow with what it records while it runs: `fields()`, called once it has finished,
    gives the fields added to its prediction record."""

    workflow: Workflow
    fields: Callable[[], dict[str, Any]]


WorkflowFactory = Callable[[dict[str, Any]], Workflow | Traced]


def deferred(start: Callable[[dict[str, Any]], Workflow], row: dict[str, Any]) -> Workflow:
    """`start(row)`'s workflow, created only when first driven: a wave of samples never holds
    every sample's whole context at once (the inner workflows drop it before their request)."""
    return (yield from start(row))


@dataclass(frozen=True)
class MemoryQA:
    """Mem-α's frozen QA step (on the QA model)."""

    sampling: SamplingParams
    top_k: int
    prompt_cap: int
    max_tokens: int

    @classmethod
    def from_settings(cls, qa: dict[str, Any]) -> MemoryQA:
        """From a job's `qa` settings (memalpha.qa)."""
        sampling = SamplingParams(**qa["sampling"])
        return cls(sampling, qa["top_k"], qa["prompt_cap"], qa["max_tokens"])


@dataclass(frozen=True)
class Question:
    """One question of an instance, ready for the QA model: exactly one of a request to answer
    it, the answer the system already gave (MemAgent answers in its own job), or why it cannot
    be asked."""

    request: ChatRequest | None = None
    response: str | None = None
    error: str | None = None

    def __post_init__(self) -> None:
        if sum(v is not None for v in (self.request, self.response, self.error)) != 1:
            raise ValueError(f"a Question needs exactly one of request/response/error: {self}")


@dataclass(frozen=True)
class Prepared:
    """An instance's questions and its memory size (the papers' "Mem.", in QA-model tokens);
    a failed instance (its memorisation failed) asks nothing and scores 0."""

    questions: tuple[Question, ...]
    memory_tokens: int | None
    failed: bool = False
    error: str | None = None
    counts: dict[str, int] = field(default_factory=dict)  # n_calls, tool_calls, ...


# A row's questions ready for the QA model (a row after a memorize job carries its `memorized`
# record; one whose memorisation failed never reaches `prepare`).
Prepare = Callable[[dict[str, Any]], Prepared]


@dataclass(frozen=True)
class Judge:
    """How LongMemEval answers are judged: on the job's engine (the QA model)."""

    sampling: SamplingParams
    max_tokens: int

    @classmethod
    def from_settings(cls, qa: dict[str, Any]) -> Judge:
        """From a job's `qa` settings (memalpha.qa: judge_sampling, judge_max_tokens)."""
        return cls(SamplingParams(**qa["judge_sampling"]), qa["judge_max_tokens"])

    def request(self, prompt: str) -> ChatRequest:
        """The judge's request for one prompt: a user message, thinking off (Mem-α's judge)."""
        message = {"role": "user", "content": prompt}
        return ChatRequest((message,), self.max_tokens, enable_thinking=False)


def instance_qa_runner(
    engine: ChatEngine,
    sampling: SamplingParams,
    judge: Judge,
    prepare: Prepare,
    protocol: str = "agent",
) -> WaveRunner:
    """A wave of Mem-α-style instances (several questions each): `prepare` turns each row into
    its questions, they are answered together, LongMemEval answers are judged, the rest scored
    per source (`protocol`: "agent" = evaluate_agent_results.py, "baseline" =
    long_context_eval.py, "train" = GRPO's r1). A question whose request or judge fails, or that
    cannot be asked, scores 0, is counted in `failed_questions` and fails its instance (a failed
    sample, as a failed MemAgent request: allow_failures, retried on a rerun, † in the tables);
    an instance whose memorize job failed asks nothing and scores 0."""
    from memrepro.agents.memalpha import answer
    from memrepro.scoring import memalpha as metrics

    def one(row: dict[str, Any]) -> Prepared:
        memorized = row.get("memorized")
        if memorized is not None and memorized["failed"]:
            return Prepared((), None, failed=True, error=memorized["error"], counts=counts(row))
        return prepare(row)

    def run(wave: list[dict[str, Any]]) -> list[dict[str, Any]]:
        prepared = [one(row) for row in wave]
        errors: dict[tuple[int, int], str] = {}
        responses: dict[tuple[int, int], str] = {}
        asked: list[tuple[int, int, ChatRequest]] = []
        for i, instance in enumerate(prepared):
            for j, q in enumerate(instance.questions):
                if q.error is not None:
                    errors[(i, j)] = q.error
                elif q.response is not None:
                    responses[(i, j)] = q.response
                else:
                    asked.append((i, j, q.request))
        replies = drive([answer(r) for _, _, r in asked], engine, sampling)
        for (i, j, _), rollout in zip(asked, replies, strict=True):
            if rollout.failed:
                errors[(i, j)] = rollout.final.completion.error or "failed"
            else:
                responses[(i, j)] = rollout.answer
        judged = [(i, j) for (i, j) in responses if metrics.is_judged(wave[i]["task"])]

        def prompt(i: int, j: int) -> str:
            row = wave[i]
            return metrics.judge_prompt(row["questions"][j], row["answers"][j], responses[(i, j)])

        requests = [answer(judge.request(prompt(i, j))) for i, j in judged]
        verdicts = drive(requests, engine, judge.sampling)
        judge_replies: dict[tuple[int, int], str] = {}
        for key, rollout in zip(judged, verdicts, strict=True):
            if rollout.failed:
                errors[key] = rollout.final.completion.error or "judge failed"
            else:
                judge_replies[key] = rollout.answer
        sent: list[list[ChatRequest]] = [[] for _ in wave]
        for i, _, request in asked:
            sent[i].append(request)
        calls = [len(requests) for requests in sent]
        for i, _ in judged:
            calls[i] += 1
        answered = Answered(responses, judge_replies, errors)
        return [
            _qa_record(row, instance, i, answered, protocol, calls[i], sent[i])
            for i, (row, instance) in enumerate(zip(wave, prepared, strict=True))
        ]

    return run


@dataclass(frozen=True)
class Answered:
    """A wave's answers by (instance, question): the responses, the judge's replies, the errors."""

    responses: dict[tuple[int, int], str]
    judge_replies: dict[tuple[int, int], str]
    errors: dict[tuple[int, int], str]


def _qa_record(
    row: dict[str, Any],
    instance: Prepared,
    i: int,
    answered: Answered,
    protocol: str,
    calls: int,
    asked: Sequence[ChatRequest],
) -> dict[str, Any]:
    """Instance `i`'s record: per-question responses, the judge's replies, the protocol and (one's
    own data) the metric, so its scores derive from the line alone (`instance_scores`); their
    mean; the failures; the digests of the questions' requests (`asked`; a judge's are not the
    system's prompts). `n_calls` counts this job's requests and the memorize job's."""
    from memrepro.scoring.rescore import instance_scores

    n = len(row["questions"])
    errors = answered.errors
    question_errors = {str(j): errors[(i, j)] for j in range(n) if (i, j) in errors}
    error = instance.error
    if not instance.failed and question_errors:
        first = next(iter(question_errors.values()))
        error = f"{len(question_errors)} of {n} questions failed; the first: {first}"
    line = {
        "index": row["index"],
        "n_questions": n,
        "questions": row["questions"],  # with the golds: to rescore without asking again
        "answers": row["answers"],
        "responses": [answered.responses.get((i, j), "") for j in range(n)],
        "judge_replies": {str(j): r for (k, j), r in answered.judge_replies.items() if k == i},
        "protocol": protocol,
        **({"metric": row["metric"]} if "metric" in row else {}),
        "failed": instance.failed or bool(question_errors),
        "error": error,
        "failed_questions": len(question_errors),
        "question_errors": question_errors,
    }
    scores = instance_scores({**line, "task": row["task"]})
    line |= {"scores": scores, "score": sum(scores) / n}
    return {
        **line,
        "memory_tokens": instance.memory_tokens,
        "num_tokens": row["num_tokens"],
        **prompt_digests(asked),
        **instance.counts,
        "n_calls": instance.counts.get("n_calls", 0) + calls,
    }


def counts(row: dict[str, Any]) -> dict[str, int]:
    """The memorize job's call counts of a row (none for a one-job system)."""
    memorized = row.get("memorized", {})
    keys = ("n_calls", "tool_calls", "tool_successes")
    return {key: memorized[key] for key in keys if key in memorized}


def context_questions(
    engine: ChatEngine,
    cap: int,
    max_tokens: int,
    retriever: Any = None,
    top_k: int = 0,
) -> Prepare:
    """Long-context (every chunk) or, with a `retriever` (memrepro.baselines.rag), RAG (the top-k
    chunks for the raw question, best first) on a Mem-α benchmark: each question in one prompt
    of at most `cap` tokens. "Mem." is the context the model could read, as the paper reports
    it: the instance's whole context for RAG, at most the cap for long context."""
    from memrepro.baselines.context_qa import tail

    tokenizer = engine.tokenizer

    def ask(row: dict[str, Any], context: str | list[str], question: str) -> Question:
        if retriever is not None:
            chunks = row["chunks"]
            context = [chunks[i] for i in retriever.top_k(question, chunks, top_k)]
        return context_question(tokenizer, row, context, question, cap, max_tokens)

    def one(row: dict[str, Any]) -> Prepared:
        size = row["num_tokens"]  # the chunks in this tokenizer, measured when loaded
        if retriever is not None:
            return Prepared(tuple(ask(row, [], q) for q in row["questions"]), size)
        context = tail(tokenizer, row["chunks"], cap)
        return Prepared(tuple(ask(row, context, q) for q in row["questions"]), min(size, cap))

    return one


def context_question(
    tokenizer: Any,
    row: dict[str, Any],
    context: str | list[str],
    question: str,
    cap: int,
    max_tokens: int,
) -> Question:
    """A question in the official long-context prompt, or why it cannot be asked."""
    from memrepro.baselines.context_qa import context_request

    try:
        request = context_request(
            tokenizer, row["task"], row["prompt"], context, question, cap, max_tokens
        )
    except ValueError as exc:
        return Question(error=str(exc))
    return Question(request=request)


def load_finished(path: Path, required: Sequence[str] = ("index",)) -> list[dict[str, Any]]:
    """Rows already written to a resumable JSONL (predictions; rows with the `required` fields),
    up to the first line that is not one: a torn last line (the job was killed mid-write) or a
    damaged line is cut off with everything after it, which is then recomputed."""
    if not path.exists():
        return []
    raw = path.read_bytes()
    rows: list[dict[str, Any]] = []
    kept = 0
    for lineno, line in enumerate(raw.splitlines(keepends=True), start=1):
        if not line.endswith(b"\n"):
            log.warning("%s:%d: a torn last line (a killed job): dropped, done again", path, lineno)
            break
        try:
            row = jsonl_row(path, lineno, line, required)
        except ValueError as e:
            log.warning("%s; it and every later line are dropped, their work done again", e)
            break
        if row is not None:
            rows.append(row)
        kept += len(line)
    if kept < len(raw):
        with path.open("r+b") as f:
            f.truncate(kept)
    return rows


def shard_rows(rows: Sequence[dict[str, Any]], shard: int, shards: int) -> list[dict[str, Any]]:
    """Rows of one shard (round robin, so long and short samples spread evenly)."""
    if not 0 <= shard < shards:
        raise ValueError(f"shard {shard} is not in 0..{shards - 1}")
    return [row for i, row in enumerate(rows) if i % shards == shard]


def requests_digest(requests: Sequence[ChatRequest]) -> str | None:
    """The sha256 of exactly what `requests` sent (messages, token limit, template switches), in
    order; None when nothing was sent."""
    if not requests:
        return None
    return json_digest(
        [[r.messages, r.max_tokens, r.enable_thinking, r.continue_final] for r in requests]
    )


def prompt_digests(requests: Sequence[ChatRequest]) -> dict[str, str | None]:
    """A prediction's prompt identity: `prompt_sha256`, its first request (fixed by the input, the
    prompt template and the settings alone, so two runs' items compare on it), and
    `prompts_sha256`, every request it sent (later ones carry the model's own replies)."""
    return {
        "prompt_sha256": requests_digest(requests[:1]),
        "prompts_sha256": requests_digest(requests),
    }


def record(task: Task, row: dict[str, Any], rollout: Rollout) -> dict[str, Any]:
    """One prediction line: the row without its context (with its `metric` on one's own data),
    the response, its scores and the digests of the prompts sent."""
    out = {key: row.get(key) for key in ("index", "input", "answers", "num_tokens")}
    if "metric" in row:  # one's own data: the line says what scored it
        out["metric"] = row["metric"]
    out.update(
        prompt_digests([c.request for c in rollout.conversations]),
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
        built = [build_workflow(row) for row in wave]
        workflows = [b.workflow if isinstance(b, Traced) else b for b in built]
        rollouts = drive(workflows, engine, sampling)
        return [
            {**record(task, row, r), **(b.fields() if isinstance(b, Traced) else {})}
            for row, r, b in zip(wave, rollouts, built, strict=True)
        ]

    return run


def drive(workflows: Sequence[Workflow], engine: ChatEngine, sampling: Any) -> list[Rollout]:
    """`run_batched`, its engine calls counted in the running loop's progress line."""
    return run_batched(workflows, engine, sampling, on_step=on_engine_call)


def evaluate(
    rows: Sequence[dict[str, Any]],
    run_wave: WaveRunner,
    predictions: Path,
    batch_size: int,
    on_wave: Callable[[dict[str, float]], None] | None = None,
    label: str = "samples",
) -> list[dict[str, Any]]:
    """Evaluate the rows not yet in `predictions`, `batch_size` at a time through `run_wave`
    (one record per row, its `index` kept), a progress line headed `label` on the console and in
    the log; return all predictions (old and new)."""
    wanted = {row["index"] for row in rows}
    latest = {r["index"]: r for r in load_finished(predictions) if r["index"] in wanted}
    finished = [r for r in latest.values() if not r.get("failed")]
    done = {r["index"] for r in finished}
    todo = [row for row in rows if row["index"] not in done]
    if latest:
        log.info(
            "resuming: %d of %d samples already evaluated; %d failed ones are tried again",
            len(done),
            len(rows),
            len(latest) - len(done),
        )
    with progress(label, total=len(rows), done=len(rows) - len(todo)) as shown:
        for start in range(0, len(todo), batch_size):
            wave = todo[start : start + batch_size]
            began = time.perf_counter()
            records = run_wave(wave)
            append_jsonl(predictions, records)
            finished += records
            seconds = time.perf_counter() - began
            n_tokens = sum(row.get("num_tokens") or 0 for row in wave)
            log.info(
                "wave of %d samples: %.1f s, %.0f context tokens/s",
                len(wave),
                seconds,
                n_tokens / seconds,
            )
            shown.advance(len(wave))
            if on_wave is not None:
                on_wave({"wave_seconds": seconds, "context_tokens_per_s": n_tokens / seconds})
    return finished


def check_failures(records: Sequence[dict[str, Any]], allowed: float, what: str) -> None:
    """Fail (naming the causes) when more than the fraction `allowed` of `records` failed: a
    dead or refusing endpoint must not pass for a model that answers wrongly."""
    failed = [r for r in records if r.get("failed")]
    if len(failed) <= allowed * len(records):
        return
    causes = Counter(redact(r.get("error") or "no error recorded")[:300] for r in failed)
    lines = "\n".join(f"  {n} x {cause}" for cause, n in causes.most_common(3))
    raise SystemExit(
        f"{what}: {len(failed)} of {len(records)} samples failed, more than allow_failures = "
        f"{allowed} allows; most common causes:\n{lines}\n"
        "The finished samples are kept: rerunning the same command retries only the failed ones."
    )


def merge_shards(shards: Iterable[Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    """All shards' predictions by index; a sample predicted twice is an error, not a vote."""
    merged: dict[Any, dict[str, Any]] = {}
    for predictions in shards:
        for prediction in predictions:
            if prediction["index"] in merged:
                raise ValueError(f"sample {prediction['index']!r} appears in two shards")
            merged[prediction["index"]] = prediction
    return [merged[i] for i in sorted(merged)]


def _nested(items: Sequence[dict[str, Any]], key: str) -> bool:
    """Whether the items are instances of several questions (Mem-α: each record's `scores`)."""
    return key == "score" and bool(items) and all(p.get("scores") for p in items)


def _interval(items: Sequence[dict[str, Any]], key: str) -> tuple[float, float] | None:
    """A score's 95 % interval over the items; for instances of questions the two-level
    bootstrap over instances and their questions, so that a source of one instance still gets
    the spread of its questions."""
    if _nested(items, key):
        return nested_interval([p["scores"] for p in items])
    return interval([p[key] for p in items])


def _fixed_instances_interval(
    items: Sequence[dict[str, Any]], key: str
) -> tuple[float, float] | None:
    """For instances of two or more questions each (Mem-α), the interval with the instances
    held fixed (questions resampled within each): the design of a comparison on the same
    released instances. None otherwise: an instance of one question has no spread within."""
    if not _nested(items, key) or any(len(p["scores"]) < 2 for p in items):
        return None
    return fixed_instances_interval([p["scores"] for p in items])


def _nonzero(items: Sequence[dict[str, Any]], key: str) -> int:
    """How many sampled units score above 0: items, or the questions of Mem-α's instances. A
    graded score's spread rests on these alone (memrepro.scoring.compare.MIN_NONZERO)."""
    if _nested(items, key):
        return sum(score > 0 for p in items for score in p["scores"])
    return sum(p[key] > 0 for p in items)


def _right_wrong(items: Sequence[dict[str, Any]], key: str) -> bool:
    """Whether every item scores 0 or 1 (a proportion: the comparison with the paper uses
    Newcombe's interval), not a graded score or instances' means."""
    return bool(items) and not _nested(items, key) and all(p[key] in (0.0, 1.0) for p in items)


def summarize(
    predictions: Sequence[dict[str, Any]], benchmark: str, task: str, system: str, length: int
) -> dict[str, Any]:
    """Means x100 of the per-sample metrics. `accuracy` (the paper's metric) counts failures and
    empty outputs as wrong; `accuracy_official` and every side metric (sub_em, em, f1, ...) drop
    them from the denominator as the official evaluator does (it skips every item whose raw
    output is ""); `n_dropped` counts them. `ci95`: each score's 95 % interval over its items
    (memrepro.scoring.intervals), and `ci95_fixed_instances` the same with Mem-α's instances held
    fixed (`_fixed_instances_interval`); `right_wrong`: the scores whose items are all 0 or 1;
    `n_nonzero`: each score's sampled units above 0 (`_nonzero`);
    `n_questions`: the questions of instances (Mem-α: each prediction an instance);
    `memory_patterns`: what a MemAgent's memory did with the gold evidence, in samples
    (memrepro.scoring.evidence), where the predictions carry its traces."""
    n = len(predictions)
    answered = [p for p in predictions if not dropped_officially(p)]
    metric_keys = sorted(
        {k for p in predictions for k, v in p.items() if isinstance(v, float) and k != "score"}
    )

    def pct(items: Sequence[dict[str, Any]], key: str) -> float:
        return 100.0 * sum(p[key] for p in items) / len(items) if items else 0.0

    lenient = {}  # answers normalising to "" that the official sub_em counts as correct
    if "sub_em_strict" in metric_keys:
        lenient["n_lenient_sub_em"] = sum(p["sub_em"] != p["sub_em_strict"] for p in predictions)
    if any("sub_em_inside_gold" in p for p in predictions):  # one's own data: `p in g` alone
        lenient["n_inside_gold_sub_em"] = sum(bool(p.get("sub_em_inside_gold")) for p in answered)
    nested = _nested(predictions, "score")  # instances of questions (Mem-α)
    tokens = [p["num_tokens"] for p in predictions if p.get("num_tokens") is not None]
    memory = [p["memory_tokens"] for p in predictions if p.get("memory_tokens") is not None]
    scored = {"accuracy": predictions, "accuracy_official": answered}
    scored |= dict.fromkeys(metric_keys, answered)
    field = {key: "score" if key.startswith("accuracy") else key for key in scored}  # per item
    ci95 = {key: _interval(items, field[key]) for key, items in scored.items()}
    fixed = {key: _fixed_instances_interval(items, field[key]) for key, items in scored.items()}
    return {
        "benchmark": benchmark,
        "task": task,
        "system": system,
        "length": length,
        "n_items": n,
        "n_failed": sum(p["failed"] for p in predictions),
        "n_dropped": n - len(answered),
        "accuracy": pct(predictions, "score"),
        "accuracy_official": pct(answered, "score"),
        **{key: pct(answered, key) for key in metric_keys},
        **lenient,
        "mean_tokens": sum(tokens) / len(tokens) if tokens else None,
        "mean_memory_tokens": sum(memory) / len(memory) if memory else None,
        "mean_calls": sum(p["n_calls"] for p in predictions) / n if n else 0.0,
        "ci95": {key: list(bounds) for key, bounds in ci95.items() if bounds is not None},
        **(
            {"ci95_fixed_instances": {k: list(b) for k, b in fixed.items() if b is not None}}
            if any(fixed.values())
            else {}
        ),
        **({"n_questions": sum(len(p["scores"]) for p in predictions)} if nested else {}),
        "right_wrong": sorted(k for k, items in scored.items() if _right_wrong(items, field[k])),
        "n_nonzero": {key: _nonzero(items, field[key]) for key, items in scored.items()},
        **({"memory_patterns": patterns} if (patterns := pattern_counts(predictions)) else {}),
    }
