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
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm
from transformers import AutoModelForCausalLM, AutoTokenizer

from memrepro.agents.memagent import MemAgentConfig
from memrepro.data.io import atomic_path, read_json, write_json_atomic, write_text_atomic
from memrepro.models.tiny import build_tiny_model
from memrepro.toy.config import ToyConfig
from memrepro.toy.evaluate import evaluate, expert_accuracy
from memrepro.toy.sft import scripted_traces, sft
from memrepro.toy.task import check_rows, make_rows, tokenizer_corpus
from memrepro.train.cpu_trainer import METRICS_FILE, train

log = logging.getLogger(__name__)

RESULT_FILE = "result.json"
SFT_METRICS_FILE = "sft_metrics.jsonl"
# row generators: seed * ROW_SEED_STRIDE + offset, one stream per use
ROW_SEED_STRIDE = 1000
ROW_STREAMS = {"sft": 1, "rl": 2, "eval": 3}
LOG_EVERY = 100  # SFT steps between log lines


def row_sets(config: ToyConfig, seed: int) -> dict[str, list[dict[str, Any]]]:
    """{"sft", "rl", "eval"} rows of a seed (`seed_sets` of the needle task)."""
    return seed_sets(config, seed, make_rows, lambda row: row["context"])


def seed_sets(
    config: Any,
    seed: int,
    make: Callable[[int, int, Any], list[dict[str, Any]]],
    context: Callable[[dict[str, Any]], str],
) -> dict[str, list[dict[str, Any]]]:
    """{"sft", "rl", "eval"} rows of a seed, each set from its own generator stream
    (`make(n, stream_seed, config.task)`); an evaluation row whose `context` a training row has
    is replaced by a further fresh one, and the held-out rows are re-indexed from 0."""
    stream = {name: seed * ROW_SEED_STRIDE + offset for name, offset in ROW_STREAMS.items()}
    sets = {
        "sft": make(config.sft.rows, stream["sft"], config.task),
        "rl": make(config.rl.rows, stream["rl"], config.task),
    }
    seen = {context(row) for rows in sets.values() for row in rows}
    n, extra = config.eval.rows, config.eval.rows
    while True:  # draw a few more than needed; the overlap is (almost always) empty
        candidates = make(n + extra, stream["eval"], config.task)
        fresh = [row for row in candidates if context(row) not in seen][:n]
        if len(fresh) == n:
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
    """The whole pipeline for one seed; returns (and writes) its result (`run_seeds` reads a
    finished seed's back instead of calling this)."""
    seed_dir = Path(out) / f"seed{seed}"
    result_path = seed_dir / RESULT_FILE
    torch.set_num_threads(config.threads_per_worker)
    began = time.perf_counter()
    timings: dict[str, float] = {}
    agent = agent_config(config)
    n_chunks = config.task.n_chunks

    def lap(name: str, since: float) -> float:
        timings[name] = round(time.perf_counter() - since, 2)
        return time.perf_counter()

    t = time.perf_counter()
    rows = row_sets(config, seed)
    init_dir, tokenizer = build_and_check(
        config, seed, seed_dir, tokenizer_corpus(config.task), rows, check_rows
    )
    t = lap("build", t)

    log.info("seed %d: scripted traces on %d SFT rows", seed, len(rows["sft"]))
    expert = {"eps": config.expert.eps, "noise": config.expert.noise}
    traces = scripted_traces(tokenizer, rows["sft"], agent, n_chunks, **expert, seed=seed)
    model = AutoModelForCausalLM.from_pretrained(str(init_dir), dtype=torch.float32).eval()
    losses = sft(model, traces, tokenizer.pad_token_id, config.sft, seed, sft_logger(seed))
    sft_dir = seed_dir / "sft"
    save_warm_start(model, tokenizer, sft_dir, losses)
    t = lap("sft", t)

    sampling = {
        "samples": config.eval.samples,
        "temperature": config.eval.temperature,
        "top_p": config.eval.top_p,
    }
    settings = config.rl.train_settings(config.task, config.agent, seed)
    # evaluated with the verifier RL optimises (rl.verifier, by default the official one)
    eval_args = {
        **sampling,
        "seed": seed,
        "batch_size": config.eval.batch_size,
        "verifier": settings.verifier,
    }
    before = evaluate(model, tokenizer, rows["eval"], agent, n_chunks, **eval_args)
    log.info("seed %d: warm start %s", seed, _brief(before))
    t = lap("eval_warm_start", t)

    rl_dir = seed_dir / "rl"
    summary = train(sft_dir, rl_dir, rows["rl"], settings, rl_logger(seed, settings.steps))
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
        "sft": {"steps": len(losses), "first_loss": losses[0], "final_loss": tail_mean(losses)},
        "rl": {k: v for k, v in summary.items() if k not in ("settings", "out_dir")},
        "rl_settings": summary["settings"],
        "threads": config.threads_per_worker,
        "seconds": {**timings, "total": round(time.perf_counter() - began, 2)},
    }
    write_json_atomic(result_path, result)
    return result


def build_and_check(
    config: Any,
    seed: int,
    seed_dir: Path,
    corpus: Sequence[str],
    sets: dict[str, list[dict[str, Any]]],
    check: Callable[[Any, Sequence[dict[str, Any]], Any], None],
) -> tuple[Path, Any]:
    """The seed's initial tiny model in `seed_dir/init` (its tokenizer trained on `corpus`) and
    that tokenizer, after `check(tokenizer, rows, config.task)` passed for every set of rows."""
    init_dir = build_tiny_model(seed_dir / "init", corpus, **asdict(config.model), seed=seed)
    tokenizer = AutoTokenizer.from_pretrained(str(init_dir))
    for name, subset in sets.items():
        try:
            check(tokenizer, subset, config.task)
        except ValueError as exc:
            raise ValueError(f"seed {seed}, {name} rows: {exc}") from exc
    return init_dir, tokenizer


def run(config: ToyConfig, out: str | os.PathLike[str]) -> dict[str, Any]:
    """Run every seed (in `workers` processes), then write the summary; returns it."""
    began = time.perf_counter()
    results = run_seeds(config, out, run_seed)
    summary = summarize(results, config, time.perf_counter() - began)
    write_summary(out, summary, summary_markdown(summary))
    plot_curves(out, config.seeds, "Toy memory task: Multi-Conv DAPO")
    return summary


def run_seeds(
    config: Any, out: str | os.PathLike[str], run_one: Callable[[Any, int, Path], dict]
) -> list[dict[str, Any]]:
    """`run_one(config, seed, out)` for every seed of `config` (`workers` processes of
    `threads_per_worker` threads each), with a progress bar; results in seed order. A seed whose
    `seed<N>/result.json` exists is read back, not rerun."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    results: dict[int, dict[str, Any]] = {}
    for seed in config.seeds:
        done = out / f"seed{seed}" / RESULT_FILE
        if done.exists():
            log.info("seed %d: already done (%s)", seed, done)
            results[seed] = read_json(done)
    todo = [seed for seed in config.seeds if seed not in results]
    progress = tqdm(total=len(todo), desc="toy seeds", unit="seed")
    if config.workers == 1 or len(todo) <= 1:
        for seed in todo:
            results[seed] = run_one(config, seed, out)
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
                futures = {pool.submit(run_one, config, s, out): s for s in todo}
                for future in as_completed(futures):
                    results[futures[future]] = future.result()
                    progress.update()
        finally:
            if previous is None:
                os.environ.pop("TQDM_DISABLE", None)
            else:
                os.environ["TQDM_DISABLE"] = previous
    progress.close()
    return [results[seed] for seed in config.seeds]


def write_summary(out: str | os.PathLike[str], summary: dict[str, Any], markdown: str) -> None:
    write_json_atomic(Path(out) / "summary.json", summary)
    write_text_atomic(Path(out) / "summary.md", markdown)


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
        "std": {key: sample_std([row[key] for row in per_seed]) for key in columns},
        "improved_seeds": sum(row["sampled_delta"] > 0 for row in per_seed),
        "evaluation": results[0]["evaluation"],
        "config": config_dict(config),
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
        cells = [pct(row[key], signed=key.endswith("delta")) for key in keys]
        lines.append(f"| {row['seed']} | " + " | ".join(cells) + " |")
    mean, std = summary["mean"], summary["std"]
    cells = [f"{pct(mean[key], signed=key.endswith('delta'))} ± {pct(std[key])}" for key in keys]
    lines.append("| **mean ± std** | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"RL improved the sampled accuracy on {summary['improved_seeds']} of "
        f"{len(summary['seeds'])} seeds. Wall time: {summary['wall_seconds']:.0f} s.",
        "",
    ]
    return "\n".join(lines)


def sample_std(values: Sequence[float]) -> float:
    return statistics.stdev(values) if len(values) > 1 else 0.0


def pct(value: float, signed: bool = False) -> str:
    return f"{100 * value:+.1f}" if signed else f"{100 * value:.1f}"


def tail_mean(losses: Sequence[float], n: int = 50) -> float:
    tail = losses[-n:]
    return sum(tail) / len(tail)


def _brief(metrics: dict[str, dict[str, Any]]) -> str:
    return ", ".join(f"{mode} {m['accuracy']:.3f}" for mode, m in metrics.items())


def save_warm_start(model: Any, tokenizer: Any, out: Path, losses: Sequence[float]) -> None:
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


def sft_logger(seed: int):
    def on_step(step: int, loss: float) -> None:
        if step % LOG_EVERY == 0:
            log.info("seed %d: SFT step %d, loss %.3f", seed, step, loss)

    return on_step


def rl_logger(seed: int, steps: int):
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
    logging.getLogger("memrepro.train.cpu_trainer").setLevel(logging.WARNING)


def plot_curves(
    out: str | os.PathLike[str],
    seeds: Sequence[int],
    title: str,
    run: str = "rl",
    panels: Sequence[tuple[str, str]] | None = None,
) -> None:
    """`training_curve[_<run>].png/pdf`: the per-step metrics of every seed's `run` directory
    (`panels`, default MemAgent's), one line per seed."""
    from memrepro.report.training_curves import CURVE_PANELS, plot_training_curve

    files = {f"seed {s}": Path(out) / f"seed{s}" / run / METRICS_FILE for s in seeds}
    name = "training_curve" if run == "rl" else f"training_curve_{run}"
    plot_training_curve(files, Path(out) / name, title, panels or CURVE_PANELS)


def config_dict(config: Any) -> dict[str, Any]:
    return json.loads(json.dumps(asdict(config), default=list))
