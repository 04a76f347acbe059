"""The Mem-α toy experiment: per seed, build → SFT warm start → evaluate → for every (β, γ)
variant, Mem-α GRPO from that warm start → evaluate.

Training is the CPU reference trainer with Mem-α's rollouts and reward, unchanged
(`memrepro.train.cpu_trainer.train` with `memrepro.train.memalpha_rollout.memalpha_rollouts`): chunk
rows scored r1 + β·r3 + r2_t + γ·r4_t, GRPO groups of an instance's rows normalised by their std.
The frozen QA model and the content judge are the scripted reader (`memalpha_policy`).

Every policy is evaluated on the same held-out instances with the same yardstick (`reward`:
the paper's β = 0.05, γ = 0.1): the mean chunk-row reward, each term, the memory's size and what
each step did with its fact (`ACTIONS`). A seed's outputs:

    <out>/seed<N>/init/, sft/      the initial model and the warm start (sft_metrics.jsonl)
    <out>/seed<N>/<variant>/       the variant's policy, with train_metrics.jsonl
    <out>/seed<N>/<variant>.json   its evaluation (written as soon as it is done)
    <out>/seed<N>/result.json      everything of the seed

Finished variants and seeds are not rerun. The summary (summary.json/md, a training-curve figure
per variant) is rebuilt from every seed's result at the end.
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM

from memrepro.agents.memalpha import QA_PROMPT_CAP, QA_TOP_K, MemAlphaConfig, load_memory_counter
from memrepro.agents.structured_memory import CORE, StructuredMemory
from memrepro.data.io import read_json, write_json_atomic
from memrepro.engines.base import ChatEngine, SamplingParams
from memrepro.engines.hf import HFEngine
from memrepro.evaluation import Judge, MemoryQA
from memrepro.report.training_curves import MEMALPHA_CURVE_PANELS
from memrepro.toy.memalpha_config import MemAlphaToyConfig, RewardWeights
from memrepro.toy.memalpha_policy import ScriptedMemorizer, ScriptedReader
from memrepro.toy.memalpha_task import (
    ACTIONS,
    TOY_PROMPTS,
    check_instances,
    classify_step,
    context_of,
    make_instances,
    tokenizer_corpus,
)
from memrepro.toy.runner import (
    RESULT_FILE,
    SFT_METRICS_FILE,
    build_and_check,
    config_dict,
    pct,
    plot_curves,
    rl_logger,
    run_seeds,
    sample_std,
    save_warm_start,
    seed_sets,
    sft_logger,
    tail_mean,
    write_summary,
)
from memrepro.toy.sft import Traces, sft
from memrepro.train.cpu_trainer import train
from memrepro.train.memalpha_rollout import (
    MemAlphaReward,
    check_instance,
    memalpha_rollouts,
    memorize_and_score,
    memorize_rollouts,
)

log = logging.getLogger(__name__)

DISABLED = frozenset({CORE})  # the toy's facts go to semantic (or episodic) memory only
# The QA step as the paper runs it (top-20 per store, 30k-token cap); the reader answers in
# one word, and no toy source is judged (`Judge` is unused). r4's judge: T = 0.1, 512 tokens.
QA = MemoryQA(SamplingParams(), top_k=QA_TOP_K, prompt_cap=QA_PROMPT_CAP, max_tokens=16)
QA_JUDGE = Judge(SamplingParams(), max_tokens=16)
CONTENT_JUDGE = SamplingParams(temperature=0.1)
TERMS = ("reward", "r1", "r2", "r3", "r4", "memory_tokens")
MODES = ("sampled", "greedy")


def instance_sets(config: MemAlphaToyConfig, seed: int) -> dict[str, list[dict[str, Any]]]:
    """{"sft", "rl", "eval"} instances of a seed (`seed_sets`)."""
    return seed_sets(config, seed, make_instances, context_of)


def agent_config(config: MemAlphaToyConfig) -> MemAlphaConfig:
    return MemAlphaConfig(
        max_new_tokens=config.agent.max_new_tokens,
        visible_items=config.agent.visible_items,
        prompts=TOY_PROMPTS,
    )


def token_counter(tokenizer: Any) -> Callable[[str], int]:
    """The memory's token counter: the toy tokenizer (r3's l_m and l_c are in its tokens)."""
    return load_memory_counter("the toy tokenizer", tokenizer)


def mem_alpha_reward(weights: RewardWeights) -> MemAlphaReward:
    return MemAlphaReward(weights.beta, weights.gamma, CONTENT_JUDGE)


def outcomes(
    engine: ChatEngine,
    reader: ScriptedReader,
    instances: Sequence[dict[str, Any]],
    agent: MemAlphaConfig,
    reward: MemAlphaReward,
    sampling: SamplingParams,
    samples: int,
) -> dict[str, Any]:
    """`samples` memorisation rollouts of every instance on `engine`, scored by Mem-α's reward
    (`memorize_and_score`, the training path): the mean chunk-row reward, each term (r1, r3
    and the memory's size per rollout; r2, r4 per chunk row) and the share of each action."""
    counter = token_counter(reader.tokenizer)

    def new_memory(instance: int, rollout: int) -> StructuredMemory:
        return StructuredMemory(counter, DISABLED, seed=instance * 101 + rollout)

    memorized, _, scores = memorize_and_score(
        engine, reader, instances, samples, agent, sampling, new_memory, QA, QA_JUDGE, reward
    )
    actions = Counter(
        classify_step(chunk, step.calls)
        for m in memorized
        for chunk, step in zip(m.instance["chunks"], m.trace, strict=False)  # failed: shorter
    )
    rows = [row for score in scores for row in score.rewards]
    steps = sum(actions.values())
    return {
        "reward": statistics.fmean(rows),
        "r1": statistics.fmean(s.r1 for s in scores),
        "r2": statistics.fmean(r for s in scores for r in s.r2),
        "r3": statistics.fmean(s.r3 for s in scores),
        "r4": statistics.fmean(r for s in scores for r in s.r4),
        "memory_tokens": statistics.fmean(s.memory_tokens for s in scores),
        "actions": {action: actions[action] / steps for action in ACTIONS},
        "failed_rollouts": sum(m.failed for m in memorized),
    }


def evaluate(
    engine: ChatEngine,
    reader: ScriptedReader,
    instances: Sequence[dict[str, Any]],
    agent: MemAlphaConfig,
    config: MemAlphaToyConfig,
    seed: int,
) -> dict[str, dict[str, Any]]:
    """{"sampled": ..., "greedy": ...} outcomes with the yardstick reward."""
    ev = config.eval
    reward = mem_alpha_reward(config.reward)
    sampled = SamplingParams(temperature=ev.temperature, top_p=ev.top_p, seed=seed)
    greedy = SamplingParams(temperature=0.0, top_p=1.0, seed=seed)
    return {
        "sampled": outcomes(engine, reader, instances, agent, reward, sampled, ev.samples),
        "greedy": outcomes(engine, reader, instances, agent, reward, greedy, 1),
    }


def expert_traces(
    tokenizer: Any,
    instances: Sequence[dict[str, Any]],
    agent: MemAlphaConfig,
    config: MemAlphaToyConfig,
    seed: int,
) -> Traces:
    """The noisy expert's conversations on the SFT instances (one rollout each, unscored),
    through the memorisation workflow."""
    expert = ScriptedMemorizer(tokenizer, config.expert, seed)
    counter = token_counter(tokenizer)
    _, rollouts = memorize_rollouts(
        expert,
        instances,
        1,
        agent,
        SamplingParams(),
        lambda i, g: StructuredMemory(counter, DISABLED, seed=i),
    )
    completions = [c.completion for rollout in rollouts for c in rollout.conversations]
    return Traces(
        [list(c.prompt_ids) for c in completions], [list(c.response_ids) for c in completions]
    )


def run_seed(config: MemAlphaToyConfig, seed: int, out: str | os.PathLike[str]) -> dict[str, Any]:
    """The whole pipeline for one seed; returns (and writes) its result (`run_seeds` reads a
    finished seed's back instead of calling this)."""
    seed_dir = Path(out) / f"seed{seed}"
    result_path = seed_dir / RESULT_FILE
    torch.set_num_threads(config.threads_per_worker)
    began = time.perf_counter()
    sets = instance_sets(config, seed)
    init_dir, tokenizer = build_and_check(
        config, seed, seed_dir, tokenizer_corpus(config.task), sets, check_instances
    )
    agent = agent_config(config)
    reader = ScriptedReader(tokenizer)
    sft_dir = seed_dir / "sft"
    if not sft_dir.exists():
        log.info("seed %d: expert traces on %d SFT instances", seed, len(sets["sft"]))
        traces = expert_traces(tokenizer, sets["sft"], agent, config, seed)
        model = AutoModelForCausalLM.from_pretrained(str(init_dir), dtype=torch.float32).eval()
        losses = sft(model, traces, tokenizer.pad_token_id, config.sft, seed, sft_logger(seed))
        save_warm_start(model, tokenizer, sft_dir, losses)
    warm_start = _evaluated(seed_dir / "sft.json", sft_dir, reader, sets["eval"], config, seed)
    expert = ScriptedMemorizer(tokenizer, config.expert, seed)
    yardstick = mem_alpha_reward(config.reward)
    result = {
        "seed": seed,
        "warm_start": warm_start,
        "expert": outcomes(expert, reader, sets["eval"], agent, yardstick, SamplingParams(), 1),
        "variants": {},
        "threads": config.threads_per_worker,
    }
    settings = config.rl.train_settings(seed)
    for name, weights in config.rl.variants.items():
        run_dir = seed_dir / name
        if not run_dir.exists():
            collect = memalpha_rollouts(
                settings,
                agent,
                token_counter(tokenizer),
                QA,
                QA_JUDGE,
                mem_alpha_reward(weights),
                DISABLED,
                qa_engine=reader,
            )
            on_step = rl_logger(seed, settings.steps)
            train(sft_dir, run_dir, sets["rl"], settings, on_step, collect, check_instance)
        after = _evaluated(seed_dir / f"{name}.json", run_dir, reader, sets["eval"], config, seed)
        result["variants"][name] = {"weights": asdict(weights), "after_rl": after}
    result["sft_final_loss"] = tail_mean(_sft_losses(sft_dir))
    result["seconds"] = round(time.perf_counter() - began, 1)
    write_json_atomic(result_path, result)
    return result


def _evaluated(
    path: Path,
    model_dir: Path,
    reader: ScriptedReader,
    instances: Sequence[dict[str, Any]],
    config: MemAlphaToyConfig,
    seed: int,
) -> dict[str, Any]:
    """The policy in `model_dir` evaluated (kept in `path`: done once)."""
    if path.exists():
        return read_json(path)
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).eval()
    engine = HFEngine(model, reader.tokenizer, batch_size=config.eval.batch_size)
    metrics = evaluate(engine, reader, instances, agent_config(config), config, seed)
    log.info("seed %d: %s: sampled reward %.3f", seed, model_dir.name, metrics["sampled"]["reward"])
    write_json_atomic(path, metrics)
    return metrics


def _sft_losses(sft_dir: Path) -> list[float]:
    lines = (sft_dir / SFT_METRICS_FILE).read_text().splitlines()
    return [json.loads(line)["loss"] for line in lines]


def run(config: MemAlphaToyConfig, out: str | os.PathLike[str]) -> dict[str, Any]:
    """Run every seed (in `workers` processes), then write the summary; returns it."""
    began = time.perf_counter()
    results = run_seeds(config, out, run_seed)
    summary = summarize(results, config, time.perf_counter() - began)
    write_summary(out, summary, summary_markdown(summary))
    for name in config.rl.variants:
        title = f"Toy structured memory: Mem-α GRPO, {name}"
        plot_curves(out, config.seeds, title, run=name, panels=MEMALPHA_CURVE_PANELS)
    return summary


def summarize(
    results: Sequence[dict[str, Any]], config: MemAlphaToyConfig, seconds: float
) -> dict[str, Any]:
    """Per policy (warm start, each variant) and mode: every term and action share per seed,
    their mean ± sample std over seeds, and each variant's reward gain over the warm start."""
    policies = {"warm_start": [r["warm_start"] for r in results]}
    policies.update(
        {name: [r["variants"][name]["after_rl"] for r in results] for name in config.rl.variants}
    )
    table: dict[str, Any] = {}
    for policy, runs in policies.items():
        table[policy] = {}
        for mode in MODES:
            values = {key: [run[mode][key] for run in runs] for key in TERMS}
            values |= {key: [run[mode]["actions"][key] for run in runs] for key in ACTIONS}
            if policy != "warm_start":
                values["delta"] = [
                    run[mode]["reward"] - warm[mode]["reward"]
                    for run, warm in zip(runs, policies["warm_start"], strict=True)
                ]
            table[policy][mode] = {
                key: {
                    "per_seed": series,
                    "mean": statistics.fmean(series),
                    "std": sample_std(series),
                }
                for key, series in values.items()
            }
    return {
        "seeds": [r["seed"] for r in results],
        "yardstick": asdict(config.reward),
        "variants": {name: asdict(w) for name, w in config.rl.variants.items()},
        "policies": table,
        "expert": {
            **{key: statistics.fmean(r["expert"][key] for r in results) for key in TERMS},
            "actions": {
                a: statistics.fmean(r["expert"]["actions"][a] for r in results) for a in ACTIONS
            },
        },
        "improved": {
            name: sum(d > 0 for d in table[name]["sampled"]["delta"]["per_seed"])
            for name in config.rl.variants
        },
        "evaluation": {"rows": config.eval.rows, "samples": config.eval.samples},
        "config": config_dict(config),
        "wall_seconds": round(seconds, 1),
    }


def summary_markdown(summary: dict[str, Any]) -> str:
    """Per-seed held-out reward before/after each variant, then each policy's terms and actions
    (mean ± std over seeds), sampled and greedy."""
    seeds, policies, variants = summary["seeds"], summary["policies"], summary["variants"]
    yard = summary["yardstick"]
    names = list(variants)
    lines = [
        "# Toy structured memory: SFT warm start vs. Mem-α GRPO",
        "",
        f"Held-out reward (chunk-row mean of r1 + β·r3 + r2 + γ·r4 at the yardstick β = "
        f"{yard['beta']}, γ = {yard['gamma']}) on {summary['evaluation']['rows']} fresh "
        f"instances, {summary['evaluation']['samples']} sampled rollouts each. Runs: "
        + ", ".join(f"{n} (β = {w['beta']}, γ = {w['gamma']})" for n, w in variants.items())
        + ".",
        "",
        "| seed | warm start | " + " | ".join(f"{n} | Δ" for n in names) + " |",
        "|---|---|" + "---|---|" * len(names),
    ]
    sampled = {policy: table["sampled"] for policy, table in policies.items()}
    for i, seed in enumerate(seeds):
        cells = [f"{sampled['warm_start']['reward']['per_seed'][i]:.3f}"]
        for n in names:
            cells += [
                f"{sampled[n]['reward']['per_seed'][i]:.3f}",
                f"{sampled[n]['delta']['per_seed'][i]:+.3f}",
            ]
        lines.append(f"| {seed} | " + " | ".join(cells) + " |")
    cells = [_mean_std(sampled["warm_start"]["reward"], "{:.3f}")]
    for n in names:
        cells += [
            _mean_std(sampled[n]["reward"], "{:.3f}"),
            _mean_std(sampled[n]["delta"], "{:+.3f}"),
        ]
    lines.append("| **mean ± std** | " + " | ".join(cells) + " |")
    for mode in MODES:
        lines += [
            "",
            f"{mode.capitalize()}: each term and what the steps did (mean ± std over seeds; "
            "actions as % of chunk steps).",
            "",
            "| policy | reward | r1 | r2 | r3 | r4 | memory tokens | " + " | ".join(ACTIONS) + " |",
            "|---|" + "---|" * (len(TERMS) + len(ACTIONS)),
        ]
        for policy, table in policies.items():
            row = table[mode]
            cells = [_mean_std(row[key], "{:.3f}") for key in TERMS[:-1]]
            cells.append(_mean_std(row["memory_tokens"], "{:.1f}"))
            cells += [f"{pct(row[a]['mean'])} ± {pct(row[a]['std'])}" for a in ACTIONS]
            lines.append(f"| {policy} | " + " | ".join(cells) + " |")
        expert = summary["expert"]
        cells = [f"{expert[key]:.3f}" for key in TERMS[:-1]] + [f"{expert['memory_tokens']:.1f}"]
        cells += [pct(expert["actions"][a]) for a in ACTIONS]
        lines.append("| noisy expert (SFT teacher) | " + " | ".join(cells) + " |")
    improved = ", ".join(f"{n} {k}/{len(seeds)}" for n, k in summary["improved"].items())
    lines += [
        "",
        f"Seeds whose sampled reward rose: {improved}. Wall time: {summary['wall_seconds']:.0f} s.",
        "",
    ]
    return "\n".join(lines)


def _mean_std(stats: dict[str, Any], fmt: str) -> str:
    return f"{fmt.format(stats['mean'])} ± {fmt.format(stats['std']).lstrip('+')}"
