"""RULER-HQA evaluation of a memory agent: batched, resumable, every failure counted.

Samples run in waves of `batch_size`; within a wave every engine call carries the current step of
every unfinished sample. Each finished sample is appended (and flushed) to the predictions JSONL,
so a killed job resumes with the samples it has not written yet. Metrics are computed from the
whole JSONL, so a resumed run scores exactly like an uninterrupted one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from memrl.agents.chunking import token_chunks
from memrl.agents.driver import Rollout, run_batched
from memrl.agents.memagent import MemAgentConfig, memagent
from memrl.data.io import append_jsonl, read_jsonl
from memrl.data.ruler_hqa import context_pieces
from memrl.engines.base import ChatEngine, SamplingParams
from memrl.scoring.metrics import score_answer_is

log = logging.getLogger(__name__)


def load_finished(path: Path) -> list[dict[str, Any]]:
    """Predictions already written; a torn last line (the job was killed mid-write) is cut off."""
    if not path.exists():
        return []
    raw = path.read_bytes()
    if raw and not raw.endswith(b"\n"):
        log.warning("%s: dropping a partial last line left by an interrupted run", path)
        path.write_bytes(raw[: raw.rfind(b"\n") + 1])
    return read_jsonl(path)


def score_rollout(row: dict[str, Any], rollout: Rollout, final_prompt: str) -> dict[str, Any]:
    gold = row["answers"][0]
    scores = score_answer_is(rollout.answer, gold) if not rollout.failed else None
    record = {key: row[key] for key in ("index", "input", "answers", "num_docs", "num_tokens")}
    record.update(
        n_calls=len(rollout.conversations),
        response=rollout.answer,
        failed=rollout.failed,
        error=rollout.final.completion.error if rollout.failed else None,
        final_prompt=final_prompt,
    )
    if scores is None:
        record.update(pred=None, sub_em=0.0, em=0.0, f1=0.0)
    else:
        record.update(scores)
    return record


def evaluate(
    rows: Sequence[dict[str, Any]],
    pool: Sequence[str] | None,
    engine: ChatEngine,
    agent: MemAgentConfig,
    sampling: SamplingParams,
    predictions: Path,
    batch_size: int,
    on_wave: Callable[[dict[str, float]], None] | None = None,
) -> list[dict[str, Any]]:
    """Evaluate the rows not yet in `predictions`; return all predictions (old and new)."""
    wanted = {row["index"] for row in rows}
    finished = [record for record in load_finished(predictions) if record["index"] in wanted]
    done = {record["index"] for record in finished}
    todo = [row for row in rows if row["index"] not in done]
    if done:
        log.info("resuming: %d of %d samples already evaluated", len(done), len(rows))
    bar = tqdm(total=len(rows), initial=len(rows) - len(todo), desc="samples", unit="sample")
    for start in range(0, len(todo), batch_size):
        wave = todo[start : start + batch_size]
        began = time.perf_counter()
        workflows = [
            memagent(
                row["input"],
                token_chunks(engine.tokenizer, context_pieces(row, pool), agent.chunk_tokens),
                agent,
            )
            for row in wave
        ]
        with tqdm(desc="engine calls", unit="call", leave=False) as calls:
            rollouts = run_batched(workflows, engine, sampling, on_step=_ticker(calls))
        records = [
            score_rollout(row, r, agent.final_prompt) for row, r in zip(wave, rollouts, strict=True)
        ]
        append_jsonl(predictions, records)
        finished += records
        bar.update(len(wave))
        seconds = time.perf_counter() - began
        n_tokens = sum(row["num_tokens"] for row in wave)
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


def summarize(predictions: Sequence[dict[str, Any]], system: str, n_docs: int) -> dict[str, Any]:
    """Accuracy with failures counted as wrong, and as the official evaluator reports it."""
    n = len(predictions)
    answered = [p for p in predictions if not p["failed"]]

    def pct(values: list[float]) -> float:
        return 100.0 * sum(values) / len(values) if values else 0.0

    return {
        "benchmark": "ruler_hqa",
        "system": system,
        "n_docs": n_docs,
        "mean_tokens": sum(p["num_tokens"] for p in predictions) / n if n else 0.0,
        "n_items": n,
        "n_failed": n - len(answered),
        "accuracy": pct([p["sub_em"] for p in predictions]),
        "accuracy_official": pct([p["sub_em"] for p in answered]),
        "em": pct([p["em"] for p in predictions]),
        "f1": pct([p["f1"] for p in predictions]),
        "mean_calls": sum(p["n_calls"] for p in predictions) / n if n else 0.0,
    }
