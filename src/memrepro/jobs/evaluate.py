"""The evaluation jobs: `evaluate` and `memorize` drive any system kind (memrepro.systems) over its
rows; `merge-eval` orders and scores a sharded evaluation."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrepro.benchmarks import benchmark
from memrepro.benchmarks.ruler_hqa import pool_documents
from memrepro.digests import file_digest
from memrepro.jobs.common import build_engine, log, require_rows
from memrepro.tracking.record import JobRecord

if TYPE_CHECKING:
    from memrepro.systems.base import SystemKind


def _require_unique_indices(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """Each sample once: a repeated index would be evaluated twice and merged as one."""
    seen: set[Any] = set()
    for position, row in enumerate(rows, 1):
        if row["index"] in seen:
            raise SystemExit(f"{path}: sample {position} repeats index {row['index']!r}")
        seen.add(row["index"])


def cmd_evaluate(args: argparse.Namespace, run: JobRecord) -> None:
    """One evaluation job (a system on one benchmark at one length, every task: one model load),
    or one shard of it. An unsharded one (`--metrics`) scores itself; shards are scored by
    merge-eval. `--data` holds one eval set per task of the settings, in their order. On a
    Mem-α benchmark, a job after a memorize job (`--memories`) runs the QA model on what that
    job wrote."""
    from memrepro.benchmarks import Task
    from memrepro.engines.base import SamplingParams
    from memrepro.evaluation import merge_shards, workflow_runner
    from memrepro.systems import system_kind

    s = args.settings
    if (args.metrics is None) == (s["shards"] == 1):
        raise SystemExit(f"--metrics goes with an unsharded evaluation (shards={s['shards']})")
    kind = system_kind(s["kind"])
    engine = build_engine(args.model, _engine_spec(s), args.log)
    if kind.reads_instances(s["benchmark"]):
        rows_of, runner = _memalpha_evaluation(s, kind, engine, args.memories, args.pool)

        def runner_of(name: str, rows: list[dict[str, Any]]) -> Any:
            return runner

        extra_inputs = [args.memories] if args.memories is not None else []
    else:
        if args.memories is not None:
            raise SystemExit("--memories goes with Mem-α's benchmarks")
        sampling = SamplingParams(**s["sampling"])

        def rows_of(name: str, data: Path) -> list[dict[str, Any]]:
            rows = eval_rows(Task(s["benchmark"], name), data, engine.tokenizer)
            return with_evidence(rows, s["benchmark"], args.evidence, args.pool)

        def runner_of(name: str, rows: list[dict[str, Any]]) -> Any:
            task = evaluation_task(kind, s, name)
            system = kind.workflows(task, s, engine.tokenizer, pool_documents(rows, args.pool))
            return workflow_runner(task, system, engine, sampling)

        extra_inputs = [args.evidence] if args.evidence is not None else []
    predictions, partials = _run_tasks(
        s, args.data, args.predictions, [args.model, *extra_inputs], rows_of, runner_of, run
    )
    if args.metrics is None:  # a shard: merge-eval orders and scores all shards
        from memrepro.data.io import write_jsonl_atomic

        write_jsonl_atomic(args.predictions, _tagged(predictions))
    else:
        ordered = {name: merge_shards([lines]) for name, lines in predictions.items()}
        _write_predictions_and_metrics(ordered, s, args, run)
    for partial in partials:
        partial.unlink(missing_ok=True)  # an empty shard wrote none


def cmd_memorize(args: argparse.Namespace, run: JobRecord) -> None:
    """The first job of a two-job system on a Mem-α benchmark: its own model reads every
    instance (Mem-α: the policy writes its memory through tool calls; MemAgent: its memory loop,
    then its answers; MEM1: its summary loop); one line per instance, tagged with its source and
    the system.
    The evaluate job reads them (`evaluate --memories`)."""
    from memrepro.data.io import write_jsonl_atomic
    from memrepro.engines.base import SamplingParams
    from memrepro.systems import system_kind

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


def with_evidence(
    rows: list[dict[str, Any]], name: str, evidence: Path | None, pool: Path | None
) -> list[dict[str, Any]]:
    """The rows, each with its gold evidence alone (`oracle.EVIDENCE`) where the job reads the
    benchmark's marks (`--evidence`: the oracle control)."""
    from memrepro.systems.oracle import EVIDENCE

    if evidence is None:
        return rows
    marks = benchmark(name).evidence
    if marks is None:
        raise SystemExit(f"--evidence: benchmark {name} marks no evidence")
    contexts = marks.contexts(rows, evidence, pool)
    return [{**row, EVIDENCE: context} for row, context in zip(rows, contexts, strict=True)]


def _memalpha_evaluation(
    s: dict[str, Any], kind: SystemKind, engine: Any, memories_path: Path | None, pool: Path | None
) -> Any:
    """(rows_of, wave runner) of an evaluate job on Mem-α-style instances: the kind's questions
    over a memorize job's output (`--memories`) or over each instance's context."""
    from memrepro.config import memorizes
    from memrepro.evaluation import Judge, instance_qa_runner

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
    run: JobRecord,
) -> tuple[dict[str, list[dict[str, Any]]], list[Path]]:
    """Every task's rows (of this shard) through the shared evaluation loop, each task resuming
    from its own partial file; returns the records per task and the partial files."""
    from memrepro.evaluation import check_failures, evaluate, shard_rows

    if len(data_files) != len(s["tasks"]):
        raise SystemExit(f"--data: {len(data_files)} files for the tasks {s['tasks']}")
    job_key = [json.dumps(s, sort_keys=True), *(file_digest(p) for p in inputs)]
    records: dict[str, list[dict[str, Any]]] = {}
    partials = []
    for name, data in zip(s["tasks"], data_files, strict=True):
        every_row = rows_of(name, data)
        require_rows(every_row, data, f"{name} sample to evaluate")
        _require_unique_indices(every_row, data)
        rows = shard_rows(every_row, s.get("shard", 0), s.get("shards", 1))
        # Snakemake deletes the outputs of a failed job, so work in a file it does not know about:
        # a killed or failed job keeps its finished samples there and the rerun resumes from them.
        # The name carries a digest of the settings and inputs: a rerun after a change starts
        # afresh.
        key = hashlib.sha256("\n".join([*job_key, file_digest(data)]).encode())
        safe = re.sub(r"[^A-Za-z0-9._-]", "_", name)
        partial = output.with_name(f"{output.name}.{safe}.{key.hexdigest()[:12]}.partial")
        partials.append(partial)
        log.info("%s: %d samples", name, len(rows))
        shard = f" shard {s['shard'] + 1}/{s['shards']}" if s.get("shards", 1) > 1 else ""
        label = f"{name} ({s['system']} {s['benchmark']}@{s['length']}{shard})"
        records[name] = evaluate(
            rows,
            runner_of(name, rows),
            partial,
            s["wave_size"],
            on_wave=run.log_metrics,
            label=label,
        )
        records[name] = with_row_identity(records[name], rows)
    for name, lines in records.items():
        check_failures(lines, s["allow_failures"], f"{s['system']} on {s['benchmark']}/{name}")
    return records, partials


def evaluation_task(kind: Any, s: Mapping[str, Any], name: str) -> Any:
    """The Task a system of `kind` is evaluated and scored under on task `name` (`memrepro verify`
    scores its predictions again under the same one)."""
    from memrepro.benchmarks import Task

    variant, strip_think = s.get("variant", "memagent"), s.get("strip_think", False)
    return Task(s["benchmark"], name, variant, strip_think, answer_format(kind, s))


def answer_format(kind: Any, s: Mapping[str, Any]) -> str:
    """Where a system's replies give their answer: where MemAgent's final prompt
    (`evaluation.final_prompt`) asks for it, for the kinds that ask it; where a kind's own
    settings say (`answer_format`: the closed-book's prompt); else after "the answer is"."""
    if kind.asks_final_prompt:
        return s["final_prompt"]
    return s.get("answer_format", "answer_is")


ROW_ID_FIELDS = ("id", "task_label", "instance_id")  # the identities rows may carry
# What a row holds that is not its data: a length in the evaluated model's tokens, the memory
# another job wrote for it.
NOT_ROW_DATA = ("num_tokens", "memorized")


def with_row_identity(records: list[dict[str, Any]], rows: list[dict[str, Any]]) -> list[dict]:
    """Each record with its row's own identity where the row has one (one's own data: the
    user's `id` and `task` label; an instance: its `instance_id`, for one's own data its first
    row's id), so a prediction is found by the id its data gave it, and `row_sha256`, the digest
    of the row as evaluated (memrepro.run_compare tells a changed item from a changed outcome)."""
    from memrepro.data.io import json_digest

    def identity(row: dict[str, Any]) -> dict[str, Any]:
        data = {k: v for k, v in row.items() if k not in NOT_ROW_DATA}
        return {k: row[k] for k in ROW_ID_FIELDS if k in row} | {"row_sha256": json_digest(data)}

    by_index = {row["index"]: identity(row) for row in rows}
    return [{**record, **by_index.get(record["index"], {})} for record in records]


def _memories_by_task(path: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """A memorize job's lines by (source, instance index)."""
    from memrepro.data.io import read_jsonl

    return {(line["task"], line["index"]): line for line in read_jsonl(path, ("task", "index"))}


def _instance_rows(
    s: dict[str, Any], tokenizer: Any, pool: Path | None
) -> Callable[[str, Path], list[dict[str, Any]]]:
    """Mem-α instances of a job's tasks, as its benchmark makes them."""
    make = benchmark(s["benchmark"]).instance_rows
    if make is None:
        raise SystemExit(f"benchmark {s['benchmark']!r} has no Mem-α instances")
    return make(s, tokenizer, pool)


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


def cmd_merge_eval(args: argparse.Namespace, run: JobRecord) -> None:
    """Merge an evaluation's shards into its predictions and metrics (per task)."""
    from memrepro.data.io import read_jsonl
    from memrepro.evaluation import merge_shards

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
    run: JobRecord,
) -> None:
    """The job's prediction lines (tagged with their task) and one metrics record per task."""
    from memrepro.data.io import write_json_atomic, write_jsonl_atomic
    from memrepro.evaluation import summarize

    metrics = [
        summarize(lines, s["benchmark"], task, s["system"], s["length"])
        for task, lines in predictions.items()
    ]
    write_jsonl_atomic(args.predictions, _tagged(predictions))
    write_json_atomic(args.metrics, metrics)
    for m in metrics:
        details = {f"{m['task']}.{k}": v for k, v in m.items() if isinstance(v, int | float)}
        run.log_metrics({**headline_metrics(m), **details})
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


def headline_metrics(metrics: dict[str, Any]) -> dict[str, float]:
    """A task's primary score and its 95 % interval, named for MLflow's runs table and compare
    view: `score.<task>`, `ci_low.<task>`, `ci_high.<task>` (no interval: no bounds)."""
    task = metrics["task"]
    named = {f"score.{task}": metrics["accuracy"]}
    bounds = metrics.get("ci95", {}).get("accuracy")
    if bounds:
        named |= {f"ci_low.{task}": bounds[0], f"ci_high.{task}": bounds[1]}
    return named


def eval_rows(task: Any, data: Path, tokenizer: Any) -> list[dict[str, Any]]:
    """A task's rows, as its benchmark reads them."""
    return benchmark(task.benchmark).read_rows(task, data, tokenizer)


def _engine_spec(s: dict[str, Any]) -> dict[str, Any]:
    """The engine block, with a long-context baseline's context extension (vLLM settings and
    environment, set before vLLM is imported)."""
    spec = dict(s["engine"])
    extension = s.get("context_extension") or "none"
    if extension == "none":
        return spec
    from memrepro.baselines.longcontext import rope_engine_settings

    setup = rope_engine_settings(extension, max_model_len=spec.get("max_model_len"))
    os.environ.update(setup.env)
    log.info("context extension %s: %s", extension, setup.note)
    return {**spec, **setup.settings}
