"""Throughput of the CPU reference trainer (memrepro.train.cpu_trainer), timed with its own
functions.

Builds the tiny offline model (or loads --model), makes RULER-HotpotQA-style training rows from the
packaged HotpotQA fixture, then times, per repeat after one warm-up repeat:

- rollouts: the trainer's `step_rollouts` with an HFEngine over the policy (response tokens
  generated and prompt tokens processed per wall second);
- experience: `build_experience` (old log-probs of the policy + reference log-probs, no grad);
- update: `update_policy` on the first mini-batch (forward, backward, clip, one AdamW step).

It prints a table (mean and best of the repeats) and asserts nothing about time.

    python scripts/bench_trainer.py                      # defaults: < 1 min on 2 cores
    python scripts/bench_trainer.py --hidden-size 256 --layers 4 --group-size 8 --threads 2
"""

from __future__ import annotations

import argparse
import copy
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from memrepro.data.hotpotqa import build_pool, load_hotpotqa, question_records
from memrepro.data.ruler_hqa import build_split
from memrepro.data.sources import fixture_corpus, fixture_path
from memrepro.engines.hf import HFEngine
from memrepro.models.tiny import build_tiny_model
from memrepro.train.cpu_trainer import (
    TrainSettings,
    build_experience,
    mini_batches,
    step_rollouts,
    update_policy,
)

FIXTURE = "hotpot_train_fixture.json"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    model = parser.add_argument_group("model (the tiny Qwen2; ignored with --model)")
    model.add_argument(
        "--model", type=Path, help="an existing HF checkpoint instead of the tiny one"
    )
    model.add_argument("--vocab-size", type=int, default=2048)
    model.add_argument("--hidden-size", type=int, default=64)
    model.add_argument("--layers", type=int, default=2)
    model.add_argument("--heads", type=int, default=4)
    model.add_argument("--kv-heads", type=int, default=2)
    model.add_argument("--intermediate-size", type=int, default=128)
    work = parser.add_argument_group("work per repeat (one training step's shape)")
    work.add_argument("--rows", type=int, default=4, help="questions per step")
    work.add_argument("--docs", type=int, default=20, help="paragraphs per context (>= 10)")
    work.add_argument("--group-size", type=int, default=4, help="rollouts per question")
    work.add_argument("--chunk-tokens", type=int, default=256)
    work.add_argument("--max-chunks", type=int, default=2)
    work.add_argument("--memory-tokens", type=int, default=64)
    work.add_argument("--final-tokens", type=int, default=16)
    work.add_argument("--mini-batches", type=int, default=4, help="updates per step (timed: 1)")
    work.add_argument("--generation-batch", type=int, default=8)
    work.add_argument("--micro-batch-rows", type=int, default=8)
    run = parser.add_argument_group("measurement")
    run.add_argument("--repeats", type=int, default=3, help="timed repeats after one warm-up")
    run.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    run.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.threads < 1:
        parser.error("--repeats and --threads must be >= 1")
    return args


def training_rows(n_rows: int, n_docs: int, seed: int) -> list[dict]:
    """Training rows {index, input, answers, context} from the packaged HotpotQA fixture."""
    records = load_hotpotqa(fixture_path(FIXTURE))
    pool = build_pool(records)
    questions = question_records(records, pool)
    if n_rows > len(questions):
        raise SystemExit(f"--rows {n_rows}: the fixture {FIXTURE} has {len(questions)} questions")
    return build_split(questions, pool, n_docs, limit=n_rows, seed=seed)


def timed(action: Callable[[], Any]) -> tuple[Any, float]:
    began = time.perf_counter()
    result = action()
    return result, time.perf_counter() - began


def measure_step(
    repeat: int,
    rows: list[dict],
    policy: Any,
    reference: Any,
    engine: HFEngine,
    optimizer: torch.optim.Optimizer,
    settings: TrainSettings,
) -> dict[str, float]:
    """One training step's phases, timed: rollouts, experience, the first mini-batch update."""
    batch, rollout_s = timed(lambda: step_rollouts(repeat, rows, engine, settings))
    (experience, _, _), experience_s = timed(
        lambda: build_experience(batch, policy, reference, engine.pad_id, settings)
    )
    part = mini_batches(batch.n_conversations, settings.mini_batches_per_step)[0]
    result, update_s = timed(
        lambda: update_policy(policy, optimizer, experience, part, engine.pad_id, settings)
    )
    response_tokens = sum(len(r) for r in batch.response_ids)
    return {
        "conversations": batch.n_conversations,
        "prompt_tokens": sum(len(p) for p in batch.prompt_ids),
        "response_tokens": response_tokens,
        "rollout_s": rollout_s,
        "experience_s": experience_s,
        "update_s": update_s,
        "update_conversations": len(part),
        "update_tokens": result["tokens"] if result else 0.0,
    }


def figures(samples: list[dict[str, float]]) -> list[tuple[str, list[float], str]]:
    """(name, per-repeat values, unit) of every reported figure."""

    def per(key: str, seconds: str) -> list[float]:
        return [s[key] / s[seconds] for s in samples]

    return [
        ("rollout: response tokens generated / s", per("response_tokens", "rollout_s"), "tok/s"),
        ("rollout: prompt tokens / s", per("prompt_tokens", "rollout_s"), "tok/s"),
        ("rollout: wall time", [s["rollout_s"] for s in samples], "s"),
        ("experience (old + ref log-probs)", [s["experience_s"] for s in samples], "s"),
        (
            "experience: prompt+response tokens / s",
            [(s["prompt_tokens"] + s["response_tokens"]) / s["experience_s"] for s in samples],
            "tok/s",
        ),
        ("optimizer step (1 mini-batch update)", [s["update_s"] for s in samples], "s"),
        ("optimizer step: response tokens / s", per("update_tokens", "update_s"), "tok/s"),
    ]


def format_table(rows: list[tuple[str, list[float], str]]) -> str:
    """Mean and best repeat (shortest time, highest rate) of every figure."""
    width = max(len(name) for name, _, _ in rows)
    lines = [f"{'figure':<{width}}  {'mean':>10}  {'best':>10}  unit"]
    for name, values, unit in rows:
        best = min(values) if unit == "s" else max(values)
        lines.append(f"{name:<{width}}  {statistics.fmean(values):>10.3f}  {best:>10.3f}  {unit}")
    return "\n".join(lines)


def load_model(args: argparse.Namespace, workdir: Path) -> Path:
    if args.model is not None:
        return args.model
    return build_tiny_model(
        workdir / "tiny",
        fixture_corpus(),
        vocab_size=args.vocab_size,
        hidden_size=args.hidden_size,
        num_layers=args.layers,
        num_heads=args.heads,
        num_kv_heads=args.kv_heads,
        intermediate_size=args.intermediate_size,
        seed=args.seed,
    )


def main(argv: Sequence[str] | None = None) -> list[tuple[str, list[float], str]]:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    settings = TrainSettings(
        steps=1,
        rollout_batch=args.rows,
        group_size=args.group_size,
        mini_batches_per_step=args.mini_batches,
        lr=1e-6,
        warmup_steps=0,
        chunk_tokens=args.chunk_tokens,
        memory_tokens=args.memory_tokens,
        final_tokens=args.final_tokens,
        max_chunks=args.max_chunks,
        seed=args.seed,
        generation_batch=args.generation_batch,
        micro_batch_rows=args.micro_batch_rows,
    )
    rows = training_rows(args.rows, args.docs, args.seed)
    with tempfile.TemporaryDirectory(prefix="bench_trainer.") as workdir:
        model_dir = load_model(args, Path(workdir))
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
        policy = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).eval()
    reference = copy.deepcopy(policy).requires_grad_(False)
    engine = HFEngine(policy, tokenizer, batch_size=settings.generation_batch)
    optimizer = torch.optim.AdamW(policy.parameters(), lr=settings.lr, weight_decay=0.01)
    n_params = sum(p.numel() for p in policy.parameters())
    print(
        f"model: {n_params / 1e6:.2f}M parameters; {args.rows} questions x {args.group_size} "
        f"rollouts, {args.docs} docs, chunks {args.max_chunks} x {args.chunk_tokens} tokens, "
        f"memory {args.memory_tokens} / final {args.final_tokens} tokens; "
        f"torch threads {torch.get_num_threads()}; 1 warm-up + {args.repeats} repeats"
    )
    samples = []
    for repeat in range(args.repeats + 1):
        sample = measure_step(repeat, rows, policy, reference, engine, optimizer, settings)
        if repeat > 0:  # repeat 0 warms up (allocator, kernels, tokenizer caches)
            samples.append(sample)
    last = samples[-1]
    print(
        f"per step: {last['conversations']} conversations, {last['prompt_tokens']} prompt + "
        f"{last['response_tokens']} response tokens; timed update: "
        f"{last['update_conversations']} conversations, {last['update_tokens']:.0f} tokens"
    )
    table = figures(samples)
    print(format_table(table))
    return table


if __name__ == "__main__":
    main()
