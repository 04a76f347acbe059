"""The toy experiment: per seed, build → SFT warm start → evaluate → Multi-Conv DAPO → evaluate.

Everything of a seed derives from that seed (the model's initialisation, the tokenizer is the
same for all), and the three row sets come from separate generators: SFT rows, RL rows and the
held-out evaluation rows (from which any context seen in training is dropped). A seed's outputs:

    <out>/seed<N>/init/             the randomly initialised tiny model (+ tokenizer)
    <out>/seed<N>/sft/              the warm start, with sft_metrics.jsonl (loss per step)
    <out>/seed<N>/rl/               the RL policy, with train_metrics.jsonl (cpu_trainer's)
    <out>/seed<N>/result.json       accuracies before/after, error breakdowns, timings

A finished seed (its result.json exists) is not rerun. The summary (summary.json, summary.md,
training_curve.png/pdf) is rebuilt from every seed's result at the end.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import statistics
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm
from transformers import AutoModelForCausalLM, AutoTokenizer

from memrl.agents.memagent import MemAgentConfig
from memrl.data.io import atomic_path, read_json, write_json_atomic, write_text_atomic
from memrl.models.tiny import build_tiny_model
from memrl.toy.config import ToyConfig
from memrl.toy.evaluate import evaluate, expert_accuracy
from memrl.toy.sft import scripted_traces, sft
from memrl.toy.task import check_rows, make_rows, tokenizer_corpus
from memrl.train.cpu_trainer import METRICS_FILE, train

log = logging.getLogger(__name__)

RESULT_FILE = "result.json"
SFT_METRICS_FILE = "sft_metrics.jsonl"
# row generators: seed * ROW_SEED_STRIDE + offset, one stream per use
ROW_SEED_STRIDE = 1000
ROW_STREAMS = {"sft": 1, "rl": 2, "eval": 3}
LOG_EVERY = 100  # SFT steps between log lines


def row_sets(config: ToyConfig, seed: int) -> dict[str, list[dict[str, Any]]]:
    """{"sft", "rl", "eval"} rows of a seed; eval rows whose context a training row has are
    replaced by further fresh rows, so the held-out set never repeats a training context."""
    stream = {name: seed * ROW_SEED_STRIDE + offset for name, offset in ROW_STREAMS.items()}
    sets = {
        "sft": make_rows(config.sft.rows, stream["sft"], config.task),
        "rl": make_rows(config.rl.rows, stream["rl"], config.task),
    }
    seen = {row["context"] for rows in sets.values() for row in rows}
    extra = config.eval.rows
    while True:  # draw a few more than needed; the overlap is (almost always) empty
        candidates = make_rows(config.eval.rows + extra, stream["eval"], config.task)
        fresh = [row for row in candidates if row["context"] not in seen][: config.eval.rows]
        if len(fresh) == config.eval.rows:
            sets["eval"] = [{**row, "index": i} for i, row in enumerate(fresh)]
            return sets
        extra *= 2


def agent_config(config: ToyConfig) -> MemAgentConfig:
    return MemAgentConfig(
        chunk_tokens=config.task.chunk_tokens,
        memory_tokens=config.agent.memory_tokens,
        final_tokens=config.agent.final_tokens,
        final_prompt="boxed",
    )


def run_seed(config: ToyConfig, seed: int, out: str | os.PathLike[str]) -> dict[str, Any]:
    """The whole pipeline for one seed; returns (and writes) its result."""
    seed_dir = Path(out) / f"seed{seed}"
    result_path = seed_dir / RESULT_FILE
    if result_path.exists():
        log.info("seed %d: already done (%s)", seed, result_path)
        return read_json(result_path)
    torch.set_num_threads(config.threads_per_worker)
    began = time.perf_counter()
    timings: dict[str, float] = {}
    agent = agent_config(config)
    n_chunks = config.task.n_chunks

    def lap(name: str, since: float) -> float:
        timings[name] = round(time.perf_counter() - since, 2)
        return time.perf_counter()

    t = time.perf_counter()
    init_dir = build_tiny_model(
        seed_dir / "init", tokenizer_corpus(config.task), **asdict(config.model), seed=seed
    )
    tokenizer = AutoTokenizer.from_pretrained(str(init_dir))
    rows = row_sets(config, seed)
    for name, subset in rows.items():
        try:
            check_rows(tokenizer, subset, config.task)
        except ValueError as exc:
            raise ValueError(f"seed {seed}, {name} rows: {exc}") from exc
    t = lap("build", t)

    log.info("seed %d: scripted traces on %d SFT rows", seed, len(rows["sft"]))
    expert = {"eps": config.sft.expert_eps, "noise": config.sft.expert_noise}
    traces = scripted_traces(tokenizer, rows["sft"], agent, n_chunks, **expert, seed=seed)
    model = AutoModelForCausalLM.from_pretrained(str(init_dir), dtype=torch.float32).eval()
    losses = sft(model, traces, tokenizer.pad_token_id, config.sft, seed, _sft_logger(seed))
    sft_dir = seed_dir / "sft"
    _save(model, tokenizer, sft_dir, losses)
    t = lap("sft", t)

    sampling = {
        "samples": config.eval.samples,
        "temperature": config.eval.temperature,
        "top_p": config.eval.top_p,
    }
    eval_args = {**sampling, "seed": seed, "batch_size": config.eval.batch_size}
    before = evaluate(model, tokenizer, rows["eval"], agent, n_chunks, **eval_args)
    log.info("seed %d: warm start %s", seed, _brief(before))
    t = lap("eval_warm_start", t)

    settings = config.rl.train_settings(config.task, config.agent, seed)
    rl_dir = seed_dir / "rl"
    summary = train(sft_dir, rl_dir, rows["rl"], settings, _rl_logger(seed, settings.steps))
    t = lap("rl", t)

    policy = AutoModelForCausalLM.from_pretrained(str(rl_dir), dtype=torch.float32).eval()
    after = evaluate(policy, tokenizer, rows["eval"], agent, n_chunks, **eval_args)
    log.info("seed %d: after RL %s", seed, _brief(after))
    lap("eval_rl", t)

    result = {
        "seed": seed,
        "warm_start": before,
        "after_rl": after,
        "delta": {mode: after[mode]["accuracy"] - before[mode]["accuracy"] for mode in before},
        "expert": {
            **expert,
            "accuracy": expert_accuracy(
                tokenizer, rows["eval"], agent, n_chunks, **expert, seed=seed
            ),
            "sft_traces_accuracy": traces.expert_accuracy,
        },
        "evaluation": {"rows": len(rows["eval"]), **sampling},
        "sft": {"steps": len(losses), "first_loss": losses[0], "final_loss": _tail(losses)},
        "rl": {k: v for k, v in summary.items() if k not in ("settings", "out_dir")},
        "rl_settings": summary["settings"],
        "threads": config.threads_per_worker,
        "seconds": {**timings, "total": round(time.perf_counter() - began, 2)},
    }
    write_json_atomic(result_path, result)
    return result


def run(config: ToyConfig, out: str | os.PathLike[str]) -> dict[str, Any]:
    """Run every seed (in `workers` processes), then write the summary; returns it."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    results: dict[int, dict[str, Any]] = {}
    progress = tqdm(total=len(config.seeds), desc="toy seeds", unit="seed")
    if config.workers == 1:
        for seed in config.seeds:
            results[seed] = run_seed(config, seed, out)
            progress.update()
    else:
        previous = os.environ.get("TQDM_DISABLE")
        os.environ["TQDM_DISABLE"] = "1"  # workers log lines instead of interleaved bars
        try:
            with ProcessPoolExecutor(
                max_workers=config.workers,
                mp_context=get_context("spawn"),
                initializer=_init_worker,
            ) as pool:
                futures = {pool.submit(run_seed, config, s, out): s for s in config.seeds}
                for future in as_completed(futures):
                    results[futures[future]] = future.result()
                    progress.update()
        finally:
            if previous is None:
                os.environ.pop("TQDM_DISABLE", None)
            else:
                os.environ["TQDM_DISABLE"] = previous
    progress.close()
    ordered = [results[seed] for seed in config.seeds]
    summary = summarize(ordered, config, time.perf_counter() - began)
    write_json_atomic(out / "summary.json", summary)
    write_text_atomic(out / "summary.md", summary_markdown(summary))
    _plot(out, config.seeds)
    return summary


def summarize(
    results: Sequence[dict[str, Any]], config: ToyConfig, seconds: float
) -> dict[str, Any]:
    """Per-seed accuracies and their mean ± sample std, for both evaluation modes."""
    modes = ("sampled", "greedy")
    per_seed = [
        {
            "seed": r["seed"],
            **{
                f"{mode}_{when}": r[key][mode]["accuracy"]
                for mode in modes
                for when, key in (("warm_start", "warm_start"), ("after_rl", "after_rl"))
            },
            **{f"{mode}_delta": r["delta"][mode] for mode in modes},
            "expert_accuracy": r["expert"]["accuracy"],
            "seconds": r["seconds"]["total"],
        }
        for r in results
    ]
    columns = [key for key in per_seed[0] if key not in ("seed", "seconds")]
    return {
        "seeds": [r["seed"] for r in results],
        "per_seed": per_seed,
        "mean": {key: statistics.fmean(row[key] for row in per_seed) for key in columns},
        "std": {key: _std([row[key] for row in per_seed]) for key in columns},
        "improved_seeds": sum(row["sampled_delta"] > 0 for row in per_seed),
        "evaluation": results[0]["evaluation"],
        "config": _config_dict(config),
        "wall_seconds": round(seconds, 1),
    }


def summary_markdown(summary: dict[str, Any]) -> str:
    """The per-seed table (sampled and greedy accuracy, before/after RL) with mean ± std."""
    ev = summary["evaluation"]
    lines = [
        "# Toy memory task: SFT warm start vs. Multi-Conv DAPO",
        "",
        f"Held-out accuracy (boxed verifier) on {ev['rows']} fresh questions. "
        f"Sampled: {ev['samples']} rollouts per question at temperature {ev['temperature']} "
        f"(top_p {ev['top_p']}); greedy: one rollout at temperature 0.",
        "",
        "| seed | sampled: warm start | sampled: after RL | Δ | greedy: warm start "
        "| greedy: after RL | Δ | noisy expert |",
        "|---|---|---|---|---|---|---|---|",
    ]
    keys = (
        "sampled_warm_start",
        "sampled_after_rl",
        "sampled_delta",
        "greedy_warm_start",
        "greedy_after_rl",
        "greedy_delta",
        "expert_accuracy",
    )
    for row in summary["per_seed"]:
        cells = [_pct(row[key], signed=key.endswith("delta")) for key in keys]
        lines.append(f"| {row['seed']} | " + " | ".join(cells) + " |")
    mean, std = summary["mean"], summary["std"]
    cells = [f"{_pct(mean[key], signed=key.endswith('delta'))} ± {_pct(std[key])}" for key in keys]
    lines.append("| **mean ± std** | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"RL improved the sampled accuracy on {summary['improved_seeds']} of "
        f"{len(summary['seeds'])} seeds. Wall time: {summary['wall_seconds']:.0f} s.",
        "",
    ]
    return "\n".join(lines)


def _std(values: Sequence[float]) -> float:
    return statistics.stdev(values) if len(values) > 1 else 0.0


def _pct(value: float, signed: bool = False) -> str:
    return f"{100 * value:+.1f}" if signed else f"{100 * value:.1f}"


def _tail(losses: Sequence[float], n: int = 50) -> float:
    tail = losses[-n:]
    return sum(tail) / len(tail)


def _brief(metrics: dict[str, dict[str, Any]]) -> str:
    return ", ".join(f"{mode} {m['accuracy']:.3f}" for mode, m in metrics.items())


def _save(model: Any, tokenizer: Any, out: Path, losses: Sequence[float]) -> None:
    """The warm start and its loss curve, written into a fresh directory renamed into place."""
    staging = out.parent / f".{out.name}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    with atomic_path(staging / SFT_METRICS_FILE) as tmp, tmp.open("w") as f:
        for step, loss in enumerate(losses):
            f.write(json.dumps({"step": step, "loss": loss}) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)


def _sft_logger(seed: int):
    def on_step(step: int, loss: float) -> None:
        if step % LOG_EVERY == 0:
            log.info("seed %d: SFT step %d, loss %.3f", seed, step, loss)

    return on_step


def _rl_logger(seed: int, steps: int):
    def on_step(metrics: dict, step: int) -> None:
        log.info(
            "seed %d: RL step %d/%d, reward %.3f, kl %.4f, clipfrac %.3f, %.1f s",
            seed,
            step + 1,
            steps,
            metrics["reward_mean"],
            metrics["kl"],
            metrics["pg_clipfrac"],
            metrics["seconds"],
        )

    return on_step


def _init_worker() -> None:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("memrl.train.cpu_trainer").setLevel(logging.WARNING)


def _plot(out: Path, seeds: Sequence[int]) -> None:
    files = {f"seed {seed}": out / f"seed{seed}" / "rl" / METRICS_FILE for seed in seeds}
    from memrl.report.figures import plot_training_curve

    plot_training_curve(files, out / "training_curve", "Toy memory task: Multi-Conv DAPO")


def _config_dict(config: ToyConfig) -> dict[str, Any]:
    return json.loads(json.dumps(asdict(config), default=list))
