"""`memrl`: one subcommand per workflow rule family. Every rule calls it through `shell:`.

Each subcommand receives the job's resolved settings as JSON (`--settings`, built by
memrl.config from the validated config), reads its named inputs, writes its named outputs
atomically, and writes its provenance record next to its log (memrl.tracking), loaded into
MLflow once per Snakemake invocation.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
import os
import re
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from memrl import tracking
from memrl.models import load_tokenizer

if TYPE_CHECKING:
    from memrl.systems.base import SystemKind

log = logging.getLogger("memrl")

Handler = Callable[[argparse.Namespace, tracking.JobRecord], None]


# --- subcommands ---------------------------------------------------------------------------------


def cmd_download_data(args: argparse.Namespace, run: tracking.JobRecord) -> None:
    from memrl.data.io import write_json_atomic
    from memrl.data.sources import fetch_file

    entry = fetch_file(args.settings["url"], args.out, args.settings.get("sha256"))
    write_json_atomic(args.manifest, entry)
    run.log_metrics({"bytes": entry["bytes"]})


def cmd_download_model(args: argparse.Namespace, run: tracking.JobRecord) -> None:
    from memrl.data.io import write_json_atomic
    from memrl.data.sources import fetch_model

    entry = fetch_model(args.settings, args.out)
    write_json_atomic(args.manifest, entry)
    log.info("model ready in %s (%d files)", args.out, len(entry["files"]))


def cmd_synthesize(args: argparse.Namespace, run: tracking.JobRecord) -> None:
    from memrl.data.hotpotqa import build_pool, load_hotpotqa, question_records
    from memrl.data.io import write_jsonl_atomic
    from memrl.data.ruler_hqa import build_split

    s = args.settings
    tokenizer = load_counting_tokenizer(args.tokenizer)
    for raw, out, limit in (
        (args.train, args.out_train, s["train_questions"]),
        (args.dev, args.out_dev, s["dev_questions"]),
    ):
        records = load_hotpotqa(raw)
        pool = build_pool(records)
        rows = build_split(
            question_records(records, pool),
            pool,
            s["train_docs"],
            limit=limit,
            seed=s["seed"],
            tokenizer=tokenizer,
            store_ids_above=s["store_ids_above"],
        )
        write_jsonl_atomic(out, rows)
        log.info(
            "%s: %d rows at %d docs from a pool of %d", out, len(rows), s["train_docs"], len(pool)
        )
        run.log_metrics({f"{out.stem}.rows": len(rows), f"{out.stem}.pool": len(pool)})


def cmd_filter(args: argparse.Namespace, run: tracking.JobRecord) -> None:
    from memrl.data.filter import filter_questions
    from memrl.data.io import read_jsonl, write_json_atomic, write_jsonl_atomic
    from memrl.engines.base import SamplingParams

    s = args.settings
    model_dirs = dict(pair.split("=", 1) for pair in args.model)
    if set(model_dirs) != set(s["models"]):
        raise SystemExit(
            f"--model names {sorted(model_dirs)} differ from settings {sorted(s['models'])}"
        )
    engines = {
        name: build_engine(model_dirs[name], spec, args.log) for name, spec in s["models"].items()
    }
    report: dict[str, Any] = {}
    for split, src, dst in (("train", args.train, args.out_train), ("dev", args.dev, args.out_dev)):
        kept, report[split] = filter_questions(
            read_jsonl(src),
            engines,
            n_samples=s["n_samples"],
            sampling=SamplingParams(**s["sampling"]),
            max_tokens=s["max_tokens"],
            keep=s["keep"][split],
            verifier=s["verifier"],
        )
        _require_rows(kept, src, f"{split} question passed the filter")
        write_jsonl_atomic(dst, kept)
        run.log_metrics({f"{split}.{k}": v for k, v in report[split].items() if isinstance(v, int)})
    write_json_atomic(args.report, report)


def cmd_hqa_pool(args: argparse.Namespace, run: tracking.JobRecord) -> None:
    """The dev pool every RULER-HQA eval set draws from, each document counted once."""
    from memrl.data.hotpotqa import load_hotpotqa
    from memrl.data.ruler_hqa import build_doc_pool, write_pool

    pool = build_doc_pool(load_hotpotqa(args.dev_raw), load_counting_tokenizer(args.tokenizer))
    write_pool(args.out_docs, args.out_questions, pool)
    run.log_metrics({"docs": len(pool.docs), "tokens": int(pool.tokens.sum())})


def cmd_eval_set(args: argparse.Namespace, run: tracking.JobRecord) -> None:
    from memrl.data.io import read_jsonl, write_jsonl_atomic
    from memrl.data.ruler_hqa import build_eval_sets, read_pool

    s = args.settings
    indices = [row["index"] for row in read_jsonl(args.dev)][: s["eval_questions"]]
    _require_rows(indices, args.dev, "filtered dev question")
    pool = read_pool(args.pool_docs, args.pool_questions)
    [rows] = build_eval_sets(
        pool.questions,
        pool.docs,
        [s["n_docs"]],
        indices,
        seed=s["seed"],
        tokenizer=load_counting_tokenizer(args.tokenizer),
        store_ids_above=s["store_ids_above"],
        doc_tokens=pool.tokens,
        placement=s.get("placement"),  # Table 4's probe sets
    ).values()
    write_jsonl_atomic(args.out, rows)
    tokens = [row["num_tokens"] for row in rows]
    run.log_metrics({"rows": len(rows), "mean_tokens": sum(tokens) / max(1, len(tokens))})


def cmd_ruler_set(args: argparse.Namespace, run: tracking.JobRecord) -> None:
    """One RULER (task, length) set; only the corpus the task needs is read."""
    from memrl.data.essays import load_essay_text
    from memrl.data.hotpotqa import load_hotpotqa
    from memrl.data.io import read_json, write_jsonl_atomic
    from memrl.data.ruler import build_task, corpus_of, read_squad

    s = args.settings
    corpus = corpus_of(s["task"])
    squad = read_json(args.squad) if corpus == "squad" else None
    if squad is not None:
        try:
            read_squad(squad)  # a malformed file fails here, naming itself
        except ValueError as e:
            raise ValueError(f"{args.squad}: {e}") from e
    rows = build_task(
        s["task"],
        s["length"],
        s["samples"],
        variant=s["variant"],
        tokenizer=load_tokenizer(args.tokenizer),
        seed=s["seed"],
        essay_text=load_essay_text(args.essays) if corpus == "essay" else None,
        squad=squad,
        hotpot=load_hotpotqa(args.hotpotqa) if corpus == "hotpotqa" else None,
    )
    _require_rows(rows, args.out, f"{s['task']} sample at length {s['length']} was built")
    write_jsonl_atomic(args.out, rows)
    tokens = [row["num_tokens"] for row in rows]
    run.log_metrics({"rows": len(rows), "mean_tokens": sum(tokens) / len(tokens)})
    log.info(
        "%s @ %d: %d rows, %.0f tokens on average",
        s["task"],
        s["length"],
        len(rows),
        sum(tokens) / len(tokens),
    )


def cmd_stage2_data(args: argparse.Namespace, run: tracking.JobRecord) -> None:
    """Stage II rows: DocQA-RL-1.6K rows that fit max_context_tokens + stage-I rows (data.docqa)."""
    from memrl.data.docqa import load_docqa, mix_stage2
    from memrl.data.io import read_jsonl, write_jsonl_atomic

    s = args.settings
    rows, report = mix_stage2(
        read_jsonl(args.hqa),
        load_docqa(args.docqa),
        s["n_rows"],
        s["max_context_tokens"],
        load_tokenizer(args.tokenizer),
        s["seed"],
    )
    write_jsonl_atomic(args.out, rows)
    log.info("%s: %s", args.out, json.dumps(report))
    by_source = {f"rows.{source}": n for source, n in report.pop("by_source").items()}
    run.log_metrics({**report, **by_source})


def cmd_train(args: argparse.Namespace, run: tracking.JobRecord) -> None:
    from memrl.data.io import read_jsonl

    s = args.settings
    if s["backend"] == "verl":
        if not args.launch:
            raise SystemExit("training.backend=verl: the verl command must follow `--`")
        from memrl.verl.job import run as run_verl

        env = {**os.environ, **run.child_env()}
        summary = run_verl(
            s, read_jsonl(args.data), read_jsonl(args.dev), args.model, args.out, args.launch, env
        )
        _log_summary(run, summary)
        return
    if args.launch:
        raise SystemExit(f"training.backend=cpu runs no launch command, got: {args.launch}")
    if s["validation"]["every"] or s.get("save_every"):
        raise SystemExit(
            "the CPU reference trainer validates only Mem-α runs and saves no intermediate "
            f"checkpoint: set training.{s['stage']}.validation.every and save_every to 0 "
            "(verl backend keys)"
        )
    from memrl.train.cpu_trainer import settings_from_job, train

    summary = train(
        args.model, args.out, read_jsonl(args.data), settings_from_job(s), run.log_metrics
    )
    _log_summary(run, summary)


def cmd_train_memalpha(args: argparse.Namespace, run: tracking.JobRecord) -> None:
    """Mem-α GRPO (one run: base, β, γ; the recipe's steps, KL and checkpoint) on the train
    split's configured sources, validated on the validation split's: on verl with the QA model
    served next to it (`--qa-model`, memrl.verl.job.run_memalpha), or on the CPU reference
    trainer, which answers and judges with the frozen initial policy."""
    from memrl.agents.memalpha import MemAlphaConfig, load_memory_counter
    from memrl.engines.base import SamplingParams
    from memrl.evaluation import Judge, MemoryQA
    from memrl.train.cpu_trainer import TrainSettings, Validation, algorithm_settings, train
    from memrl.train.memalpha_rollout import (
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
        from memrl.verl.job import run_memalpha

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
        _log_summary(run, summary)
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
    _log_summary(run, summary)


def _memalpha_instances(path: Path, sources: list[str], key: str) -> list[dict[str, Any]]:
    """The instances of a Memalpha parquet's configured sources, in that order."""
    from memrl.data.memalpha import instances_by_source

    grouped = instances_by_source(path)
    missing = [source for source in sources if source not in grouped]
    if missing:
        raise SystemExit(f"{path}: no instance of {missing} ({key})")
    return [row for source in sources for row in grouped[source]]


def _require_rows(rows: Sequence[Any], path: Path, what: str) -> None:
    """Stop on an empty set, naming its file: evaluated, it would read as accuracy 0.0."""
    if not rows:
        raise SystemExit(f"{path}: no {what} (an empty set has no score)")


def _require_unique_indices(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """Each sample once: a repeated index would be evaluated twice and merged as one."""
    seen: set[Any] = set()
    for position, row in enumerate(rows, 1):
        if row["index"] in seen:
            raise SystemExit(f"{path}: sample {position} repeats index {row['index']!r}")
        seen.add(row["index"])


def _log_summary(run: tracking.JobRecord, summary: dict[str, Any]) -> None:
    """A run's totals, under `final.` so they do not land on the per-step curves' step 0."""
    run.log_metrics({f"final.{k}": v for k, v in summary.items() if isinstance(v, int | float)})


def cmd_evaluate(args: argparse.Namespace, run: tracking.JobRecord) -> None:
    """One evaluation job (a system on one benchmark at one length, every task: one model load),
    or one shard of it. An unsharded one (`--metrics`) scores itself; shards are scored by
    merge-eval. `--data` holds one eval set per task of the settings, in their order. On a
    Mem-α benchmark, a job after a memorize job (`--memories`) runs the QA model on what that
    job wrote."""
    from memrl.config import MEMALPHA_BENCHMARKS, memorizes
    from memrl.engines.base import SamplingParams
    from memrl.evaluation import Task, merge_shards, workflow_runner
    from memrl.systems import system_kind

    s = args.settings
    if (args.metrics is None) == (s["shards"] == 1):
        raise SystemExit(f"--metrics goes with an unsharded evaluation (shards={s['shards']})")
    kind = system_kind(s["kind"])
    engine = build_engine(args.model, _engine_spec(s), args.log)
    if s["benchmark"] in MEMALPHA_BENCHMARKS or memorizes(s, s["benchmark"]):
        rows_of, runner = _memalpha_evaluation(s, kind, engine, args.memories, args.pool)

        def runner_of(name: str, rows: list[dict[str, Any]]) -> Any:
            return runner

        extra_inputs = [args.memories] if args.memories is not None else []
    else:
        if args.memories is not None:
            raise SystemExit("--memories goes with Mem-α's benchmarks")
        sampling = SamplingParams(**s["sampling"])

        def rows_of(name: str, data: Path) -> list[dict[str, Any]]:
            return _eval_rows(Task(s["benchmark"], name), data, engine.tokenizer)

        def runner_of(name: str, rows: list[dict[str, Any]]) -> Any:
            task = Task(
                s["benchmark"], name, s.get("variant", "memagent"), s.get("strip_think", False)
            )
            system = kind.workflows(task, s, engine.tokenizer, _pool(rows, args.pool))
            return workflow_runner(task, system, engine, sampling)

        extra_inputs = []
    predictions, partials = _run_tasks(
        s, args.data, args.predictions, [args.model, *extra_inputs], rows_of, runner_of, run
    )
    if args.metrics is None:  # a shard: merge-eval orders and scores all shards
        from memrl.data.io import write_jsonl_atomic

        write_jsonl_atomic(args.predictions, _tagged(predictions))
    else:
        ordered = {name: merge_shards([lines]) for name, lines in predictions.items()}
        _write_predictions_and_metrics(ordered, s, args, run)
    for partial in partials:
        partial.unlink(missing_ok=True)  # an empty shard wrote none


def cmd_dataset_stats(args: argparse.Namespace, run: tracking.JobRecord) -> None:
    """Mem-α's dataset statistics (paper Tables 6-8) of one downloaded split, per data source,
    in the QA model's tokens; one record per source, tagged with the split."""
    from memrl.agents.chunking import count_tokens
    from memrl.data.io import write_json_atomic
    from memrl.data.memalpha import instances_by_source, source_statistics

    tokenizer = load_counting_tokenizer(args.tokenizer)
    records = source_statistics(
        instances_by_source(args.data), lambda texts: count_tokens(tokenizer, texts)
    )
    write_json_atomic(args.out, [{"split": args.settings["split"], **r} for r in records])
    for r in records:
        log.info(
            "%s: %d instances, %.1f tokens per chunk",
            r["task"],
            r["instances"],
            r["tokens_per_chunk"],
        )


def cmd_memorize(args: argparse.Namespace, run: tracking.JobRecord) -> None:
    """The first job of a two-job system on a Mem-α benchmark: its own model reads every
    instance (Mem-α: the policy writes its memory through tool calls; MemAgent: its memory loop,
    then its answers; MEM1: its summary loop); one line per instance, tagged with its source and
    the system.
    The evaluate job reads them (`evaluate --memories`)."""
    from memrl.data.io import write_jsonl_atomic
    from memrl.engines.base import SamplingParams
    from memrl.systems import system_kind

    s = args.settings
    engine = build_engine(args.model, _engine_spec(s), args.log)
    runner = system_kind(s["kind"]).memorizer(
        s, engine, SamplingParams(**s["sampling"]), args.memory_tokenizer
    )
    inputs = [args.model, *([args.memory_tokenizer] if args.memory_tokenizer else [])]
    lines, partials = _run_tasks(
        s,
        args.data,
        args.memories,
        inputs,
        _instance_rows(s, engine.tokenizer, args.pool),
        lambda name, rows: runner,
        run,
    )
    write_jsonl_atomic(args.memories, [{"system": s["system"], **line} for line in _tagged(lines)])
    for partial in partials:
        partial.unlink(missing_ok=True)  # an empty shard wrote none


def _memalpha_evaluation(
    s: dict[str, Any], kind: SystemKind, engine: Any, memories_path: Path | None, pool: Path | None
) -> Any:
    """(rows_of, wave runner) of an evaluate job on Mem-α-style instances: the kind's questions
    over a memorize job's output (`--memories`) or over each instance's context."""
    from memrl.config import memorizes
    from memrl.evaluation import Judge, instance_qa_runner

    judge = Judge.from_settings(s["qa"])
    instances = _instance_rows(s, engine.tokenizer, pool)
    if (memories_path is not None) != memorizes(s, s["benchmark"]):
        raise SystemExit(
            f"--memories goes with (and only with) a memorize job's systems ({s['kind']})"
        )
    prepare, sampling, protocol = kind.questions(s, engine, judge)
    runner = instance_qa_runner(engine, sampling, judge, prepare, protocol)
    if memories_path is None:
        return instances, runner
    memories = _memories_by_task(memories_path)

    def rows_of(name: str, data: Path) -> list[dict[str, Any]]:
        return _memorized_rows(name, instances(name, data), memories, memories_path)

    return rows_of, runner


def _run_tasks(
    s: dict[str, Any],
    data_files: list[Path],
    output: Path,
    inputs: list[Path],
    rows_of: Any,
    runner_of: Any,
    run: tracking.JobRecord,
) -> tuple[dict[str, list[dict[str, Any]]], list[Path]]:
    """Every task's rows (of this shard) through the shared evaluation loop, each task resuming
    from its own partial file; returns the records per task and the partial files."""
    from memrl.evaluation import check_failures, evaluate, shard_rows

    if len(data_files) != len(s["tasks"]):
        raise SystemExit(f"--data: {len(data_files)} files for the tasks {s['tasks']}")
    job_key = [json.dumps(s, sort_keys=True), *(tracking.file_digest(p) for p in inputs)]
    records: dict[str, list[dict[str, Any]]] = {}
    partials = []
    for name, data in zip(s["tasks"], data_files, strict=True):
        every_row = rows_of(name, data)
        _require_rows(every_row, data, f"{name} sample to evaluate")
        _require_unique_indices(every_row, data)
        rows = shard_rows(every_row, s.get("shard", 0), s.get("shards", 1))
        # Snakemake deletes the outputs of a failed job, so work in a file it does not know about:
        # a killed or failed job keeps its finished samples there and the rerun resumes from them.
        # The name carries a digest of the settings and inputs: a rerun after a change starts
        # afresh.
        key = hashlib.sha256("\n".join([*job_key, tracking.file_digest(data)]).encode())
        safe = re.sub(r"[^A-Za-z0-9._-]", "_", name)
        partial = output.with_name(f"{output.name}.{safe}.{key.hexdigest()[:12]}.partial")
        partials.append(partial)
        log.info("%s: %d samples", name, len(rows))
        records[name] = evaluate(
            rows, runner_of(name, rows), partial, s["wave_size"], on_wave=run.log_metrics
        )
    for name, lines in records.items():
        check_failures(lines, s["allow_failures"], f"{s['system']} on {s['benchmark']}/{name}")
    return records, partials


def _memories_by_task(path: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """A memorize job's lines by (source, instance index)."""
    from memrl.data.io import read_jsonl

    return {(line["task"], line["index"]): line for line in read_jsonl(path, ("task", "index"))}


def _instance_rows(
    s: dict[str, Any], tokenizer: Any, pool: Path | None
) -> Callable[[str, Path], list[dict[str, Any]]]:
    """Mem-α instances of a job's task: the Memalpha parquet's, or RULER-HQA's samples with
    their contexts chunked in `tokenizer`'s tokens (settings `ruler_hqa`)."""
    if s["benchmark"] != "ruler_hqa":
        return _memalpha_rows(tokenizer)
    from memrl.data.io import read_jsonl
    from memrl.data.memalpha import ruler_hqa_instance
    from memrl.evaluation import row_chunks

    spec = s["ruler_hqa"]

    def rows_of(name: str, data: Path) -> list[dict[str, Any]]:
        rows = read_jsonl(data, required=EVAL_ROW_FIELDS)
        docs = _pool(rows, pool)
        return [
            ruler_hqa_instance(
                row,
                list(row_chunks(row, docs, tokenizer, spec["chunk_tokens"])),
                spec["source"],
                spec["prompt"],
            )
            for row in rows
        ]

    return rows_of


def _memalpha_rows(tokenizer: Any) -> Callable[[str, Path], list[dict[str, Any]]]:
    """Rows of a Mem-α task (a data source): every task of a job names the same parquet, read
    once; each instance measured in `tokenizer`'s tokens (its chunks)."""
    from memrl.agents.chunking import count_tokens
    from memrl.data.memalpha import instances_by_source

    files: dict[Path, dict[str, list[dict[str, Any]]]] = {}

    def rows_of(name: str, data: Path) -> list[dict[str, Any]]:
        if data not in files:
            files[data] = instances_by_source(data)
        if name not in files[data]:
            known = ", ".join(sorted(files[data]))
            raise SystemExit(f"{data}: no instance of data source {name!r} (it has: {known})")
        rows = files[data][name]
        for row in rows:
            row["num_tokens"] = sum(count_tokens(tokenizer, row["chunks"]))
        return rows

    return rows_of


def _memorized_rows(
    name: str,
    rows: list[dict[str, Any]],
    memories: dict[tuple[str, int], dict[str, Any]],
    path: Path,
) -> list[dict[str, Any]]:
    """`rows` with the memory the memorize job wrote for each (`memorized`)."""
    missing = [row["index"] for row in rows if (name, row["index"]) not in memories]
    if missing:
        raise SystemExit(f"{path}: no memory for {name} instances {missing}")
    return [{**row, "memorized": memories[(name, row["index"])]} for row in rows]


def _tagged(predictions: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One list of prediction lines, each naming its task."""
    return [{"task": task, **p} for task, lines in predictions.items() for p in lines]


def cmd_merge_eval(args: argparse.Namespace, run: tracking.JobRecord) -> None:
    """Merge an evaluation's shards into its predictions and metrics (per task)."""
    from memrl.data.io import read_jsonl
    from memrl.evaluation import merge_shards

    s = args.settings
    if len(args.shards) != s["shards"]:
        raise SystemExit(f"expected {s['shards']} shard files, got {len(args.shards)}")
    shards = [_by_task(read_jsonl(path), s["tasks"], path) for path in args.shards]
    predictions = {task: merge_shards(shard[task] for shard in shards) for task in s["tasks"]}
    _write_predictions_and_metrics(predictions, s, args, run)


def _by_task(lines: list[dict[str, Any]], tasks: list[str], path: Path) -> dict[str, list[dict]]:
    """A shard's prediction lines per task (the `task` tag removed); another task is an error."""
    grouped: dict[str, list[dict[str, Any]]] = {task: [] for task in tasks}
    for line in lines:
        task = line.get("task")
        if task not in grouped:
            raise ValueError(f"{path}: a prediction of task {task!r}, not one of {tasks}")
        grouped[task].append({k: v for k, v in line.items() if k != "task"})
    return grouped


def _write_predictions_and_metrics(
    predictions: dict[str, list[dict[str, Any]]],
    s: dict[str, Any],
    args: argparse.Namespace,
    run: tracking.JobRecord,
) -> None:
    """The job's prediction lines (tagged with their task) and one metrics record per task."""
    from memrl.data.io import write_json_atomic, write_jsonl_atomic
    from memrl.evaluation import summarize

    metrics = [
        summarize(lines, s["benchmark"], task, s["system"], s["length"])
        for task, lines in predictions.items()
    ]
    write_jsonl_atomic(args.predictions, _tagged(predictions))
    write_json_atomic(args.metrics, metrics)
    for m in metrics:
        run.log_metrics({f"{m['task']}.{k}": v for k, v in m.items() if isinstance(v, int | float)})
        log.info(
            "%s on %s/%s @ %d: accuracy %.2f (%d of %d failed)",
            s["system"],
            s["benchmark"],
            m["task"],
            s["length"],
            m["accuracy"],
            m["n_failed"],
            m["n_items"],
        )


EVAL_ROW_FIELDS = ("index", "input", "answers")  # what scoring reads of a synthesized row


def _eval_rows(task: Any, data: Path, tokenizer: Any) -> list[dict[str, Any]]:
    """The benchmark's rows; LongBench's are read from its parquet and measured in tokens."""
    from memrl.data.io import read_jsonl

    if task.benchmark != "longbench":
        return read_jsonl(data, required=EVAL_ROW_FIELDS)
    from memrl.data.longbench import load_longbench

    rows = load_longbench(data, task.task)
    for row in rows:
        row["num_tokens"] = len(tokenizer.encode(row["context"], add_special_tokens=False))
    return rows


def _pool(rows: list[dict[str, Any]], pool_docs: Path | None) -> list[str] | None:
    """RULER-HQA's document pool, needed only by rows that store doc ids instead of text."""
    if not any("doc_ids" in row for row in rows):
        return None
    if pool_docs is None:
        raise SystemExit("these rows store doc ids: pass --pool with the hqa-pool documents")
    from memrl.data.io import read_parquet

    return read_parquet(pool_docs, ["doc"])["doc"].to_pylist()


def _engine_spec(s: dict[str, Any]) -> dict[str, Any]:
    """The engine block, with a long-context baseline's context extension (vLLM settings and
    environment, set before vLLM is imported)."""
    spec = dict(s["engine"])
    extension = s.get("context_extension") or "none"
    if extension == "none":
        return spec
    from memrl.baselines.longcontext import rope_engine_settings

    setup = rope_engine_settings(extension, max_model_len=spec.get("max_model_len"))
    os.environ.update(setup.env)
    log.info("context extension %s: %s", extension, setup.note)
    return {**spec, **setup.settings}


def cmd_table(args: argparse.Namespace, run: tracking.JobRecord) -> None:
    """A paper table (settings `name`): ours beside the paper's numbers, as CSV, Markdown, LaTeX."""
    from memrl.config import load_yaml
    from memrl.report.tables import (
        PAPER_TABLES,
        build_paper_table,
        load_table_records,
        write_paper_table,
    )

    s = args.settings
    name = s["name"]
    labels = s["ruler_length_labels" if PAPER_TABLES[name].ruler_lengths else "length_labels"]
    records = load_table_records(name, args.metrics)
    paper = load_yaml(args.paper)
    with _reading_paper(args.paper, name):
        table = build_paper_table(
            name,
            records,
            s["systems"],
            paper,
            labels,
            niah_config=s.get("niah_config"),
            probe=s.get("probe"),
        )
    caption = f"{PAPER_TABLES[name].caption}, run {s['run']}"
    write_paper_table(name, table, args.out_prefix, caption)


def cmd_figure(args: argparse.Namespace, run: tracking.JobRecord) -> None:
    """A paper figure (settings `name`) as PNG and PDF."""
    from memrl.config import load_yaml
    from memrl.report.cells import load_metrics
    from memrl.report.figures import PAPER_FIGURES, plot_paper_figure

    s = args.settings
    name = s["name"]
    records, paper = load_metrics(args.metrics), load_yaml(args.paper)
    with _reading_paper(args.paper, name):
        plot_paper_figure(
            name,
            records,
            s["systems"],
            paper,
            args.out_prefix,
            f"{PAPER_FIGURES[name]}, run {s['run']}",
            length_labels=s["length_labels"],
            ruler_length_labels=s["ruler_length_labels"],
            rl_ablation=s.get("rl_ablation"),
            flops=s.get("flops"),
            agent=s.get("agent"),
        )


@contextlib.contextmanager
def _reading_paper(path: Path, name: str) -> Iterator[None]:
    """A paper file (config/paper/*.yaml) missing a key or holding the wrong kind of value (a
    truncated file parses, as far as it goes) fails naming the file, not with a bare KeyError.
    The metrics records are checked as they are read."""
    try:
        yield
    except (KeyError, TypeError, AttributeError, IndexError) as e:
        raise ValueError(
            f"{path}: not the published numbers {name} reads ({type(e).__name__}: {e}); "
            "is the file complete?"
        ) from e


def cmd_training_curve(args: argparse.Namespace, run: tracking.JobRecord) -> None:
    """Settings: `title`, optional `labels` (one per --metrics path: a train_metrics.jsonl or a
    training output directory; default: the paths' distinguishing directory names)."""
    from memrl.report.training_curves import CURVES, plot_training_curve, training_metrics_files

    s = args.settings
    files = training_metrics_files(args.metrics, s.get("labels"))
    title = s.get("title", "Multi-Conv DAPO training")
    plot_training_curve(files, args.out_prefix, title, CURVES[s.get("curve", "memagent")])


def cmd_trace(args: argparse.Namespace, run: tracking.JobRecord) -> None:
    """Case studies (Appendix C / F): the memory after every chunk of chosen MemAgent samples of
    a predictions file, as `<out-prefix>.md` and `.html` (memrl.report.trace). With --data (one
    eval set per task, as evaluate reads them; --pool for RULER-HQA doc-id rows) and --tokenizer
    (the evaluated model's), the chunks are rebuilt to mark those holding gold evidence.
    Settings: `benchmark`; `tasks` (the --data files' tasks, in order; default: every task in
    the predictions); `agent.chunk_tokens`, with --tokenizer; optional
    `samples` (indices, in each task), else the `first` (default 5) whose verdict is `only`
    (all, correct, wrong, failed); `evidence` ({"index" or "task:index": [strings]}, replacing
    the gold answers as that sample's evidence); `title`."""
    from memrl.data.io import read_jsonl
    from memrl.evaluation import Task, row_chunks
    from memrl.report import trace

    s = args.settings
    if (args.data is None) != (args.tokenizer is None):
        raise SystemExit("--data and --tokenizer go together: both are needed to rebuild chunks")
    grouped = trace.by_task(read_jsonl(args.predictions, required=("index",)))
    tasks = s.get("tasks") or list(grouped)
    if args.data is not None and len(args.data) != len(tasks):
        raise SystemExit(f"--data: {len(args.data)} files for the tasks {tasks}")
    tokenizer = load_tokenizer(args.tokenizer) if args.tokenizer is not None else None
    if tokenizer is not None and "agent" not in s:
        raise SystemExit("--tokenizer needs the run's chunk size: settings agent.chunk_tokens")
    evidence = {str(key): value for key, value in (s.get("evidence") or {}).items()}
    studies = []
    for k, task in enumerate(tasks):
        if task not in grouped:
            raise SystemExit(f"{args.predictions}: no prediction of task {task!r}")
        chosen = trace.select(
            grouped[task],
            s.get("samples"),
            s.get("first", trace.DEFAULT_FIRST),
            s.get("only", "all"),
        )
        traced = [p for p in chosen if "memory_trace" in p]
        rows: dict[Any, dict[str, Any]] = {}
        if args.data is not None and traced:
            rows = {
                row["index"]: row
                for row in _eval_rows(Task(s["benchmark"], task), args.data[k], tokenizer)
            }
            if missing := [p["index"] for p in traced if p["index"] not in rows]:
                raise SystemExit(f"{args.data[k]}: no row for sample(s) {missing} of {task}")
        pool = _pool([rows[p["index"]] for p in traced], args.pool) if rows else None
        for p in chosen:
            row = rows.get(p["index"]) if "memory_trace" in p else None
            chunks = None
            if row is not None:
                chunks = row_chunks(row, pool, tokenizer, s["agent"]["chunk_tokens"])
            given = evidence.get(f"{task}:{p['index']}", evidence.get(str(p["index"])))
            studies.append(trace.case_study(p, chunks, given, task))
    parts = [s.get(key) for key in ("benchmark", "system", "length") if s.get(key) is not None]
    title = s.get("title") or " · ".join(["MemAgent memory traces", *map(str, parts)])
    trace.write_report(studies, args.out_prefix, title)
    run.log_metrics({"samples": len(studies), "traced": sum(st.has_trace for st in studies)})


# --- plumbing ------------------------------------------------------------------------------------


def build_engine(model: Path | str, spec: dict[str, Any], job_log: Path | None) -> Any:
    """An engine from a config engine block: `kind` picks it, the other keys configure it. A
    server the engine starts (`served`) logs beside the job's log."""
    from memrl.engines import make_engine

    options = {key: value for key, value in spec.items() if key != "kind"}
    if spec["kind"] == "served" and job_log is not None:
        options["log_path"] = job_log.with_name(f"{job_log.stem}.{Path(model).name}.server.log")
    return make_engine(spec["kind"], str(model), options)


def load_counting_tokenizer(path: Path) -> Any:
    """For jobs that only count tokens: the model's `tokenizer.json` through `tokenizers` (the
    encoder a transformers fast tokenizer wraps: the same ids, without importing transformers)."""
    path = Path(path)
    if not (path / "tokenizer.json").is_file():
        return load_tokenizer(path)
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(path / "tokenizer.json"))


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON: {exc}") from exc


class Command(NamedTuple):
    handler: Handler
    options: dict[str, dict[str, Any]]  # the subcommand's arguments beyond --settings
    inputs: list[str]  # argument names holding input paths (hashed into the MLflow run)
    outputs: Callable[[argparse.Namespace], list[Path]]  # the paths the command writes


def named(*names: str) -> Callable[[argparse.Namespace], list[Path]]:
    """Outputs given by arguments."""
    return lambda args: _paths(args, list(names))


def prefixed(*suffixes: str) -> Callable[[argparse.Namespace], list[Path]]:
    """Outputs `--out-prefix` + each suffix (one table or figure in several formats)."""
    return lambda args: [Path(f"{args.out_prefix}{suffix}") for suffix in suffixes]


REPORT_OPTIONS: dict[str, dict[str, Any]] = {
    "--metrics": {"nargs": "+"},
    "--paper": {},
    "--out-prefix": {},
}

COMMANDS: dict[str, Command] = {
    "download-data": Command(
        cmd_download_data, {"--out": {}, "--manifest": {}}, [], named("out", "manifest")
    ),
    "download-model": Command(
        cmd_download_model, {"--out": {}, "--manifest": {}}, [], named("out", "manifest")
    ),
    "synthesize": Command(
        cmd_synthesize,
        {"--train": {}, "--dev": {}, "--tokenizer": {}, "--out-train": {}, "--out-dev": {}},
        ["train", "dev", "tokenizer"],
        named("out_train", "out_dev"),
    ),
    "filter": Command(
        cmd_filter,
        {
            "--train": {},
            "--dev": {},
            "--model": {"action": "append", "type": str},
            "--out-train": {},
            "--out-dev": {},
            "--report": {},
        },
        ["train", "dev"],
        named("out_train", "out_dev", "report"),
    ),
    "hqa-pool": Command(
        cmd_hqa_pool,
        {"--dev-raw": {}, "--tokenizer": {}, "--out-docs": {}, "--out-questions": {}},
        ["dev_raw", "tokenizer"],
        named("out_docs", "out_questions"),
    ),
    "eval-set": Command(
        cmd_eval_set,
        {"--pool-docs": {}, "--pool-questions": {}, "--dev": {}, "--tokenizer": {}, "--out": {}},
        ["pool_docs", "pool_questions", "dev", "tokenizer"],
        named("out"),
    ),
    "ruler-set": Command(
        cmd_ruler_set,
        {"--essays": {}, "--squad": {}, "--hotpotqa": {}, "--tokenizer": {}, "--out": {}},
        ["essays", "squad", "hotpotqa", "tokenizer"],
        named("out"),
    ),
    "stage2-data": Command(
        cmd_stage2_data,
        {"--hqa": {}, "--docqa": {}, "--tokenizer": {}, "--out": {}},
        ["hqa", "docqa", "tokenizer"],
        named("out"),
    ),
    "train": Command(
        cmd_train,
        {"--data": {}, "--dev": {}, "--model": {}, "--out": {}, "launch": {"nargs": "*"}},
        ["data", "dev", "model"],
        named("out"),
    ),
    "train-memalpha": Command(
        cmd_train_memalpha,
        {
            "--data": {},
            "--validation": {},
            "--model": {},
            "--memory-tokenizer": {"required": False},
            "--qa-model": {"required": False},
            "--out": {},
            "launch": {"nargs": "*"},
        },
        ["data", "validation", "model", "memory_tokenizer", "qa_model"],
        named("out"),
    ),
    "evaluate": Command(
        cmd_evaluate,
        {
            "--data": {"nargs": "+"},
            "--pool": {"required": False},
            "--memories": {"required": False},
            "--model": {},
            "--predictions": {},
            "--metrics": {"required": False},
        },
        ["data", "model", "memories"],
        named("predictions", "metrics"),
    ),
    "dataset-stats": Command(
        cmd_dataset_stats,
        {"--data": {}, "--tokenizer": {}, "--out": {}},
        ["data", "tokenizer"],
        named("out"),
    ),
    "memorize": Command(
        cmd_memorize,
        {
            "--data": {"nargs": "+"},
            "--model": {},
            "--memory-tokenizer": {"required": False},
            "--pool": {"required": False},
            "--memories": {},
        },
        ["data", "model", "memory_tokenizer", "pool"],
        named("memories"),
    ),
    "merge-eval": Command(
        cmd_merge_eval,
        {"--shards": {"nargs": "+"}, "--predictions": {}, "--metrics": {}},
        ["shards"],
        named("predictions", "metrics"),
    ),
    "table": Command(
        cmd_table, REPORT_OPTIONS, ["metrics", "paper"], prefixed(".csv", ".md", ".tex")
    ),
    "figure": Command(cmd_figure, REPORT_OPTIONS, ["metrics", "paper"], prefixed(".png", ".pdf")),
    "training-curve": Command(
        cmd_training_curve,
        {"--metrics": {"nargs": "+"}, "--out-prefix": {}},
        ["metrics"],
        prefixed(".png", ".pdf"),
    ),
    "trace": Command(
        cmd_trace,
        {
            "--predictions": {},
            "--data": {"nargs": "+", "required": False},
            "--pool": {"required": False},
            "--tokenizer": {"required": False},
            "--out-prefix": {},
        },
        ["predictions", "data", "pool", "tokenizer"],
        prefixed(".md", ".html"),
    ),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memrl", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--job",
        type=_json,
        default={"rule": "manual", "wildcards": {}},
        help='JSON {"rule": ..., "wildcards": {...}} of the Snakemake job (MLflow tags)',
    )
    parser.add_argument("--log", type=Path, help="the job's log file, attached to its MLflow run")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, spec in COMMANDS.items():
        command = sub.add_parser(name)
        command.add_argument("--settings", type=_json, required=True, help="resolved job settings")
        for flag, extra in spec.options.items():
            if not flag.startswith("--"):  # positional: the launch command after `--`
                command.add_argument(flag, **extra)
                continue
            kind = {"type": Path} if "type" not in extra else {}
            command.add_argument(flag, **{"required": True, **kind, **extra})
    return parser


def _paths(args: argparse.Namespace, names: list[str]) -> list[Path]:
    paths: list[Path] = []
    for name in names:
        value = getattr(args, name)
        if value is not None:  # an optional path not given
            paths += [Path(v) for v in value] if isinstance(value, list) else [Path(value)]
    return paths


def main(argv: Sequence[str] | None = None) -> None:
    from memrl.secrets import RedactingStream

    sys.stderr = RedactingStream(sys.stderr)  # the job's log: an echoed API key never lands there
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # SLURM preemption and time limits send SIGTERM: unwind like Ctrl-C, so partial outputs are
    # flushed and the provenance record says KILLED.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    args = build_parser().parse_args(argv)
    command = COMMANDS[args.command]
    out_paths = command.outputs(args)
    for path in out_paths:
        path.parent.mkdir(parents=True, exist_ok=True)
    with tracking.job_run(
        args.job["rule"],
        args.job["wildcards"],
        args.settings,
        _paths(args, command.inputs),
        out_paths,
        args.log,
    ) as run:
        command.handler(args, run)


if __name__ == "__main__":
    main()
