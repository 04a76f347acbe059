"""`memrl`: one subcommand per workflow rule family. Every rule calls it through `shell:`.

Each subcommand receives the job's resolved settings as JSON (`--settings`, built by
memrl.config from the validated config), reads its named inputs, writes its named outputs
atomically, and records one MLflow run (memrl.tracking) tagged with the rule and wildcards.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from memrl import tracking

log = logging.getLogger("memrl")

Handler = Callable[[argparse.Namespace, tracking.JobRun], None]


# --- subcommands ---------------------------------------------------------------------------------


def cmd_download_data(args: argparse.Namespace, run: tracking.JobRun) -> None:
    from memrl.data.io import write_json_atomic
    from memrl.data.sources import fetch_file

    entry = fetch_file(args.settings["url"], args.out, args.settings.get("sha256"))
    write_json_atomic(args.manifest, entry)
    run.log_metrics({"bytes": entry["bytes"]})


def cmd_download_model(args: argparse.Namespace, run: tracking.JobRun) -> None:
    from memrl.data.io import write_json_atomic
    from memrl.data.sources import fetch_model

    entry = fetch_model(args.settings, args.out)
    write_json_atomic(args.manifest, entry)
    log.info("model ready in %s (%d files)", args.out, len(entry["files"]))


def cmd_synthesize(args: argparse.Namespace, run: tracking.JobRun) -> None:
    import random

    from memrl.data.hotpotqa import build_pool, load_hotpotqa, question_records
    from memrl.data.io import write_jsonl_atomic
    from memrl.data.ruler_hqa import build_split

    s = args.settings
    tokenizer = load_tokenizer(args.tokenizer)
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
            rng=random.Random(s["seed"]),
            tokenizer=tokenizer,
            store_ids_above=s["store_ids_above"],
        )
        write_jsonl_atomic(out, rows)
        log.info(
            "%s: %d rows at %d docs from a pool of %d", out, len(rows), s["train_docs"], len(pool)
        )
        run.log_metrics({f"{out.stem}.rows": len(rows), f"{out.stem}.pool": len(pool)})


def cmd_filter(args: argparse.Namespace, run: tracking.JobRun) -> None:
    from memrl.data.filter import filter_questions
    from memrl.data.io import read_jsonl, write_json_atomic, write_jsonl_atomic
    from memrl.engines.base import SamplingParams

    s = args.settings
    model_dirs = dict(pair.split("=", 1) for pair in args.model)
    if set(model_dirs) != set(s["models"]):
        raise SystemExit(
            f"--model names {sorted(model_dirs)} differ from settings {sorted(s['models'])}"
        )
    engines = {name: build_engine(model_dirs[name], spec) for name, spec in s["models"].items()}
    report: dict[str, Any] = {}
    for split, src, dst in (("train", args.train, args.out_train), ("dev", args.dev, args.out_dev)):
        kept, report[split] = filter_questions(
            read_jsonl(src),
            engines,
            n_samples=s["n_samples"],
            sampling=SamplingParams(**s["sampling"]),
            max_tokens=s["max_tokens"],
            keep=s["keep"][split],
        )
        write_jsonl_atomic(dst, kept)
        run.log_metrics({f"{split}.{k}": v for k, v in report[split].items() if isinstance(v, int)})
    write_json_atomic(args.report, report)


def cmd_eval_set(args: argparse.Namespace, run: tracking.JobRun) -> None:
    from memrl.data.hotpotqa import build_pool, load_hotpotqa, question_records
    from memrl.data.io import read_jsonl, write_jsonl_atomic
    from memrl.data.ruler_hqa import build_eval_sets

    s = args.settings
    records = load_hotpotqa(args.dev_raw)
    pool = build_pool(records)
    indices = [row["index"] for row in read_jsonl(args.dev)][: s["eval_questions"]]
    [rows] = build_eval_sets(
        question_records(records, pool),
        pool,
        [s["n_docs"]],
        indices,
        seed=s["seed"],
        tokenizer=load_tokenizer(args.tokenizer),
        store_ids_above=s["store_ids_above"],
    ).values()
    write_jsonl_atomic(args.out, rows)
    tokens = [row["num_tokens"] for row in rows]
    run.log_metrics({"rows": len(rows), "mean_tokens": sum(tokens) / max(1, len(tokens))})


def cmd_stage2_data(args: argparse.Namespace, run: tracking.JobRun) -> None:
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


def cmd_train(args: argparse.Namespace, run: tracking.JobRun) -> None:
    from memrl.data.io import read_jsonl

    s = args.settings
    if s["backend"] == "verl":
        if not args.launch:
            raise SystemExit("training.backend=verl: the verl command must follow `--`")
        from memrl.verl.job import run as run_verl

        env = {**os.environ, **tracking.child_env()}
        summary = run_verl(
            s, read_jsonl(args.data), read_jsonl(args.dev), args.model, args.out, args.launch, env
        )
        _log_summary(run, summary)
        return
    if args.launch:
        raise SystemExit(f"training.backend=cpu runs no launch command, got: {args.launch}")
    if s["validation"]["every"] or s.get("save_every"):
        raise SystemExit(
            "the CPU reference trainer neither validates nor checkpoints during training: set "
            f"training.{s['stage']}.validation.every and save_every to 0 (verl backend keys)"
        )
    from memrl.train.cpu_trainer import settings_from_job, train

    summary = train(
        args.model, args.out, read_jsonl(args.data), settings_from_job(s), run.log_metrics
    )
    _log_summary(run, summary)


def _log_summary(run: tracking.JobRun, summary: dict[str, Any]) -> None:
    """A run's totals, under `final.` so they do not land on the per-step curves' step 0."""
    run.log_metrics({f"final.{k}": v for k, v in summary.items() if isinstance(v, int | float)})


def cmd_evaluate(args: argparse.Namespace, run: tracking.JobRun) -> None:
    from memrl.agents.memagent import MemAgentConfig
    from memrl.data.hotpotqa import build_pool, load_hotpotqa
    from memrl.data.io import read_jsonl, write_json_atomic
    from memrl.engines.base import SamplingParams
    from memrl.evaluation import evaluate, summarize

    s = args.settings
    rows = read_jsonl(args.data)
    pool = build_pool(load_hotpotqa(args.dev_raw)) if any("doc_ids" in r for r in rows) else None
    agent = MemAgentConfig(
        chunk_tokens=s["agent"]["chunk_tokens"],
        memory_tokens=s["agent"]["memory_tokens"],
        final_tokens=s["agent"]["final_tokens"],
        final_prompt=s["final_prompt"],
    )
    engine = build_engine(args.model, s["engine"])
    # Snakemake deletes the outputs of a failed job, so work in a file it does not know about:
    # a killed or failed job keeps its finished samples there and the rerun resumes from them.
    # The name carries a digest of the settings and inputs, so a rerun after a change starts afresh.
    partial = args.predictions.with_name(f"{args.predictions.name}.{_resume_key(args)}.partial")
    predictions = evaluate(
        rows,
        pool,
        engine,
        agent,
        SamplingParams(**s["sampling"]),
        partial,
        s["wave_size"],
        on_wave=run.log_metrics,
    )
    metrics = summarize(predictions, s["system"], s["n_docs"])
    os.replace(partial, args.predictions)
    write_json_atomic(args.metrics, metrics)
    run.log_metrics({k: v for k, v in metrics.items() if isinstance(v, int | float)})
    log.info(
        "%s @ %d docs: accuracy %.2f (%d failed)",
        s["system"],
        s["n_docs"],
        metrics["accuracy"],
        metrics["n_failed"],
    )


def cmd_table1(args: argparse.Namespace, run: tracking.JobRun) -> None:
    from memrl.report.tables import write_table

    caption = f"RULER-HQA accuracy (%), run {args.settings['run']}"
    write_table(_ruler_hqa_table(args), args.out_prefix, caption=caption)


def cmd_figure1(args: argparse.Namespace, run: tracking.JobRun) -> None:
    from memrl.report.figures import plot_accuracy_vs_length

    title = f"RULER-HQA, run {args.settings['run']}"
    plot_accuracy_vs_length(_ruler_hqa_table(args), args.out_prefix, title=title)


def cmd_training_curve(args: argparse.Namespace, run: tracking.JobRun) -> None:
    """Settings: `title`, optional `labels` (one per --metrics path: a train_metrics.jsonl or a
    training output directory; default: the paths' distinguishing directory names)."""
    from memrl.report.figures import plot_training_curve, training_metrics_files

    s = args.settings
    files = training_metrics_files(args.metrics, s.get("labels"))
    plot_training_curve(files, args.out_prefix, title=s.get("title", "Multi-Conv DAPO training"))


def _ruler_hqa_table(args: argparse.Namespace) -> Any:
    """Table 1's cells: our metrics beside the paper's numbers, systems in config order."""
    from memrl.config import load_yaml
    from memrl.report.tables import build_table1, load_metrics

    paper = load_yaml(args.paper)
    labels = {int(k): v for k, v in paper.get("length_labels", {}).items()}
    labels.update({int(k): v for k, v in args.settings["length_labels"].items()})
    systems = {system["id"]: system for system in args.settings["systems"]}
    return build_table1(load_metrics(args.metrics), systems, paper["ruler_hqa"], labels)


def _resume_key(args: argparse.Namespace) -> str:
    identity = [
        json.dumps(args.settings, sort_keys=True),
        *map(tracking.file_digest, (args.data, args.model)),
    ]
    return hashlib.sha256("\n".join(identity).encode()).hexdigest()[:12]


# --- plumbing ------------------------------------------------------------------------------------


def build_engine(model: Path | str, spec: dict[str, Any]) -> Any:
    """An engine from a config engine block: `kind` picks it, the other keys configure it."""
    from memrl.engines import make_engine

    options = {key: value for key, value in spec.items() if key != "kind"}
    return make_engine(spec["kind"], str(model), options)


def load_tokenizer(path: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path))


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
    "eval-set": Command(
        cmd_eval_set,
        {"--dev-raw": {}, "--dev": {}, "--tokenizer": {}, "--out": {}},
        ["dev_raw", "dev", "tokenizer"],
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
    "evaluate": Command(
        cmd_evaluate,
        {"--data": {}, "--dev-raw": {}, "--model": {}, "--predictions": {}, "--metrics": {}},
        ["data", "model"],
        named("predictions", "metrics"),
    ),
    "table1": Command(
        cmd_table1, REPORT_OPTIONS, ["metrics", "paper"], prefixed(".csv", ".md", ".tex")
    ),
    "figure1": Command(cmd_figure1, REPORT_OPTIONS, ["metrics", "paper"], prefixed(".png", ".pdf")),
    "training-curve": Command(
        cmd_training_curve,
        {"--metrics": {"nargs": "+"}, "--out-prefix": {}},
        ["metrics"],
        prefixed(".png", ".pdf"),
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
            command.add_argument(flag, required=True, **kind, **extra)
    return parser


def _paths(args: argparse.Namespace, names: list[str]) -> list[Path]:
    paths: list[Path] = []
    for name in names:
        value = getattr(args, name)
        paths += [Path(v) for v in value] if isinstance(value, list) else [Path(value)]
    return paths


def main(argv: Sequence[str] | None = None) -> None:
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
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
