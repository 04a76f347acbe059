"""The training jobs: MemAgent's Multi-Conv DAPO stages and Mem-α's GRPO, on the CPU reference
trainer or on verl."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from memrepro.models import load_tokenizer
from memrepro.tracking.record import JobRecord
from memrepro.train.recipes import write_recipe


def cmd_train(args: argparse.Namespace, run: JobRecord) -> None:
    from memrepro.data.io import read_jsonl

    s = args.settings
    if s["backend"] == "verl":
        if not args.launch:
            raise SystemExit("training.backend=verl: the verl command must follow `--`")
        from memrepro.verl.job import run as run_verl

        env = {**os.environ, **run.child_env()}
        summary = run_verl(
            s, read_jsonl(args.data), read_jsonl(args.dev), args.model, args.out, args.launch, env
        )
        _finish(run, summary, args.out, s, "memagent")
        return
    if args.launch:
        raise SystemExit(f"training.backend=cpu runs no launch command, got: {args.launch}")
    if s["validation"]["every"] or s.get("save_every"):
        raise SystemExit(
            "the CPU reference trainer validates only Mem-α runs and saves no intermediate "
            f"checkpoint: set training.{s['stage']}.validation.every and save_every to 0 "
            "(verl backend keys)"
        )
    from memrepro.train.cpu_trainer import settings_from_job, train

    summary = train(
        args.model, args.out, read_jsonl(args.data), settings_from_job(s), run.log_metrics
    )
    _finish(run, summary, args.out, s, "memagent")


def cmd_train_memalpha(args: argparse.Namespace, run: JobRecord) -> None:
    """Mem-α GRPO (one run: base, β, γ; the recipe's steps, KL and checkpoint) on the train
    split's configured sources, validated on the validation split's: on verl with the QA model
    served next to it (`--qa-model`, memrepro.verl.job.run_memalpha), or on the CPU reference
    trainer, which answers and judges with the frozen initial policy."""
    from memrepro.agents.memalpha import MemAlphaConfig, load_memory_counter
    from memrepro.engines.base import SamplingParams
    from memrepro.evaluation import Judge, MemoryQA
    from memrepro.train.cpu_trainer import TrainSettings, Validation, algorithm_settings, train
    from memrepro.train.memalpha_rollout import (
        MemAlphaReward,
        check_instance,
        memalpha_rollouts,
        memalpha_validation,
    )

    s = args.settings
    rows = _memalpha_instances(args.data, s["sources"], "memalpha.train.sources")
    validation_rows = _memalpha_instances(
        args.validation, s["validation_sources"], "memalpha.memalpha.sources"
    )
    if s["backend"] == "verl":
        if not args.launch or args.qa_model is None:
            raise SystemExit("training.backend=verl: pass --qa-model and the verl command after --")
        from memrepro.verl.job import run_memalpha

        env = {**os.environ, **run.child_env()}
        summary = run_memalpha(
            s,
            rows,
            validation_rows,
            args.model,
            args.qa_model,
            args.memory_tokenizer,
            args.out,
            args.launch,
            env,
        )
        _finish(run, summary, args.out, s, "memalpha")
        return
    if args.launch or args.qa_model is not None:
        raise SystemExit("training.backend=cpu serves no QA model and runs no launch command")
    settings = TrainSettings(**algorithm_settings(s), norm_adv_by_std=True)
    counter_tokenizer = load_tokenizer(args.memory_tokenizer) if args.memory_tokenizer else None
    agent = MemAlphaConfig(**s["agent"])
    counter = load_memory_counter(s["memory_tokenizer"], counter_tokenizer)
    qa, qa_judge = MemoryQA.from_settings(s["qa"]), Judge.from_settings(s["qa"])
    validation = None
    if s["validation"]["every"]:
        score = memalpha_validation(
            validation_rows,
            s["validation"]["n"],
            SamplingParams(**s["validation"]["sampling"]),
            agent,
            counter,
            qa,
            qa_judge,
            settings.seed,
        )
        validation = Validation(s["validation"]["every"], score, s["checkpoint"] == "best")
    rollouts = memalpha_rollouts(
        settings,
        agent,
        counter,
        qa,
        qa_judge,
        MemAlphaReward(
            s["beta"],
            s["gamma"],
            SamplingParams(**s["judge"]["sampling"]),
            s["judge"]["max_tokens"],
        ),
    )
    summary = train(
        args.model,
        args.out,
        rows,
        settings,
        run.log_metrics,
        rollouts=rollouts,
        check_row=check_instance,
        validation=validation,
    )
    _finish(run, summary, args.out, s, "memalpha")


def _memalpha_instances(path: Path, sources: list[str], key: str) -> list[dict[str, Any]]:
    """The instances of a Memalpha parquet's configured sources, in that order."""
    from memrepro.data.memalpha import instances_by_source

    grouped = instances_by_source(path)
    missing = [source for source in sources if source not in grouped]
    if missing:
        raise SystemExit(f"{path}: no instance of {missing} ({key})")
    return [row for source in sources for row in grouped[source]]


def _finish(
    run: JobRecord, summary: dict[str, Any], out: Path, settings: dict[str, Any], agent: str
) -> None:
    """A trained checkpoint's recipe beside it (what the job ran, for the `recipes` tables), the
    run's totals, under `final.` so they do not land on the per-step curves' step 0, and where
    verl's Ray and driver ran (`ray.container.*`)."""
    write_recipe(out, settings, agent)
    run.log_metrics({f"final.{k}": v for k, v in summary.items() if isinstance(v, int | float)})
    run.add_tags(summary.get("ran_in", {}))  # verl: the image its Ray and driver ran in
