"""`memrepro`: the commands a person types, and the job subcommands the rules run.

`memrepro --help` lists the person's commands (TOOLS), one line each, and `job`; `memrepro job
--help` lists the job subcommands (COMMANDS). Every rule calls a job subcommand through `shell:`,
by its name at the top level: `memrepro --job JSON --log FILE NAME --settings ...`.

Each job subcommand receives the job's resolved settings as JSON (`--settings`, built by
memrepro.config from the validated config), reads its named inputs, writes its named outputs
atomically, and writes its provenance record next to its log (memrepro.tracking), loaded into
MLflow once per Snakemake invocation. This module only parses and dispatches: each job's body
is in memrepro.jobs.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import memrepro
from memrepro.commands import (
    JOB_ENTRY,
    JOB_SUMMARY,
    TOOLS,
    TopParser,
    job_help,
    job_options,
    unknown_command,
)
from memrepro.jobs.data import (
    cmd_custom_set,
    cmd_dataset_stats,
    cmd_download_data,
    cmd_download_model,
    cmd_eval_set,
    cmd_filter,
    cmd_hqa_pool,
    cmd_keywords,
    cmd_memalpha_example,
    cmd_official_eval_set,
    cmd_official_questions,
    cmd_probe_set,
    cmd_ruler_set,
    cmd_stage2_data,
    cmd_synthesize,
)
from memrepro.jobs.evaluate import cmd_evaluate, cmd_memorize, cmd_merge_eval
from memrepro.jobs.memalpha_data import (
    cmd_memalpha_compare,
    cmd_memalpha_filter,
    cmd_memalpha_sets,
    cmd_memalpha_source,
)
from memrepro.jobs.report import (
    cmd_figure,
    cmd_reproduction,
    cmd_table,
    cmd_trace,
    cmd_training_curve,
)
from memrepro.jobs.rescore import cmd_judge_probe, cmd_rescore
from memrepro.jobs.train import cmd_train, cmd_train_memalpha
from memrepro.settings_files import read_settings
from memrepro.tracking.invocation import commit_text
from memrepro.tracking.record import JobRecord, job_run

Handler = Callable[[argparse.Namespace, JobRecord], None]


def _settings(text: str) -> Any:
    try:
        return read_settings(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


class Command(NamedTuple):
    summary: str  # one line in `memrepro --help`
    handler: Handler
    options: dict[str, dict[str, Any]]  # the subcommand's arguments beyond --settings
    inputs: Callable[[argparse.Namespace], list[Path]]  # every path it reads (its record's inputs)
    outputs: Callable[[argparse.Namespace], list[Path]]  # the paths the command writes


def named(*names: str) -> Callable[[argparse.Namespace], list[Path]]:
    """Paths given by arguments."""
    return lambda args: _paths(args, list(names))


def assigned(*names: str) -> Callable[[argparse.Namespace], list[Path]]:
    """Paths given as NAME=PATH by arguments (the question filter's models)."""
    return lambda args: [
        Path(value.partition("=")[2]) for name in names for value in getattr(args, name) or []
    ]


def measured_cost_files(args: argparse.Namespace) -> list[Path]:
    """Figure 10's files named in its settings: each model's directory (its shape) and each
    evaluation's Snakemake benchmark files (its wall time)."""
    flops = args.settings.get("flops", {})
    benchmarks = [path for paths in flops.get("benchmarks", {}).values() for path in paths]
    return [Path(path) for path in [*flops.get("models", {}).values(), *benchmarks]]


def joined(
    *parts: Callable[[argparse.Namespace], list[Path]],
) -> Callable[[argparse.Namespace], list[Path]]:
    return lambda args: [path for part in parts for path in part(args)]


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
        "fetch one public data source (or its packaged fixture) and check its digest",
        cmd_download_data,
        {"--out": {}, "--manifest": {}},
        named(),
        named("out", "manifest"),
    ),
    "download-model": Command(
        "fetch one model from the Hugging Face hub (or build the tiny one)",
        cmd_download_model,
        {"--out": {}, "--manifest": {}},
        named(),
        named("out", "manifest"),
    ),
    "synthesize": Command(
        "build RULER-HQA train/dev rows from HotpotQA (token lengths recorded)",
        cmd_synthesize,
        {"--train": {}, "--dev": {}, "--tokenizer": {}, "--out-train": {}, "--out-dev": {}},
        named("train", "dev", "tokenizer"),
        named("out_train", "out_dev"),
    ),
    "filter": Command(
        "drop questions any filter model answers without the context (MemAgent's filter)",
        cmd_filter,
        {
            "--train": {},
            "--dev": {},
            "--model": {"action": "append", "type": str},
            "--out-train": {},
            "--out-dev": {},
            "--report": {},
        },
        joined(named("train", "dev"), assigned("model")),
        named("out_train", "out_dev", "report"),
    ),
    "hqa-pool": Command(
        "the dev document pool every RULER-HQA eval set draws from",
        cmd_hqa_pool,
        {"--dev-raw": {}, "--tokenizer": {}, "--out-docs": {}, "--out-questions": {}},
        named("dev_raw", "tokenizer"),
        named("out_docs", "out_questions"),
    ),
    "eval-set": Command(
        "one RULER-HQA evaluation set at a document count",
        cmd_eval_set,
        {"--pool-docs": {}, "--pool-questions": {}, "--dev": {}, "--tokenizer": {}, "--out": {}},
        named("pool_docs", "pool_questions", "dev", "tokenizer"),
        named("out"),
    ),
    "memalpha-example": Command(
        "Mem-α's Table 5 instance: the paper's example found by its text in the splits",
        cmd_memalpha_example,
        {"--splits": {"nargs": "+"}, "--data": {}, "--found": {}},
        named("splits"),
        named("data", "found"),
    ),
    "probe-set": Command(
        "Table 4's probe set of one placement, from the evaluation rows of its length",
        cmd_probe_set,
        {"--rows": {}, "--pool-docs": {}, "--pool-questions": {}, "--tokenizer": {}, "--out": {}},
        named("rows", "pool_docs", "pool_questions", "tokenizer"),
        named("out"),
    ),
    "official-questions": Command(
        "MemAgent's released filtered questions of one split, as the filter's rows",
        cmd_official_questions,
        {"--questions": {}, "--out": {}},
        named("questions"),
        named("out"),
    ),
    "official-eval-set": Command(
        "MemAgent's released RULER-HQA set at one document count, as our rows",
        cmd_official_eval_set,
        {
            "--released": {},
            "--pool-docs": {},
            "--pool-questions": {},
            "--tokenizer": {},
            "--out": {},
        },
        named("released", "pool_docs", "pool_questions", "tokenizer"),
        named("out"),
    ),
    "custom-set": Command(
        "one dataset of one's own (custom.datasets), checked and written as evaluation rows",
        cmd_custom_set,
        {"--data": {}, "--out": {}},
        named("data"),
        named("out"),
    ),
    "ruler-set": Command(
        "one RULER (task, length) set",
        cmd_ruler_set,
        {"--essays": {}, "--squad": {}, "--hotpotqa": {}, "--tokenizer": {}, "--out": {}},
        named("essays", "squad", "hotpotqa", "tokenizer"),
        named("out"),
    ),
    "stage2-data": Command(
        "stage II's training mix: DocQA rows that fit, plus stage I's",
        cmd_stage2_data,
        {"--hqa": {}, "--docqa": {}, "--tokenizer": {}, "--out": {}},
        named("hqa", "docqa", "tokenizer"),
        named("out"),
    ),
    "train": Command(
        "MemAgent's Multi-Conv DAPO: one stage, on the CPU trainer or verl",
        cmd_train,
        {"--data": {}, "--dev": {}, "--model": {}, "--out": {}, "launch": {"nargs": "*"}},
        named("data", "dev", "model"),
        named("out"),
    ),
    "train-memalpha": Command(
        "Mem-α's GRPO: one (β, γ) run, on the CPU trainer or verl",
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
        named("data", "validation", "model", "memory_tokenizer", "qa_model"),
        named("out"),
    ),
    "evaluate": Command(
        "one system on one benchmark at one length, every task (or one shard)",
        cmd_evaluate,
        {
            "--data": {"nargs": "+"},
            "--pool": {"required": False},
            "--evidence": {"required": False},
            "--memories": {"required": False},
            "--model": {},
            "--predictions": {},
            "--metrics": {"required": False},
        },
        named("data", "model", "memories", "pool", "evidence"),
        named("predictions", "metrics"),
    ),
    "dataset-stats": Command(
        "Mem-α's dataset statistics of one downloaded split",
        cmd_dataset_stats,
        {"--data": {}, "--tokenizer": {}, "--out": {}},
        named("data", "tokenizer"),
        named("out"),
    ),
    "keywords": Command(
        "Mem-α's Figure 4: one data source's keyword golds rebuilt from its original summaries",
        cmd_keywords,
        {"--summaries": {"nargs": "+"}, "--released": {"nargs": "+"}, "--model": {}, "--out": {}},
        named("summaries", "released", "model"),
        named("out"),
    ),
    "memalpha-source": Command(
        "one group of Mem-α's training sources built into instances (Appendix A.1)",
        cmd_memalpha_source,
        {
            "--rows": {"nargs": "+", "required": False},
            "--memories": {"required": False},
            "--questions": {"required": False},
            "--exclude": {"required": False},
            "--keywords": {"required": False},
            "--tokenizer": {},
            "--out": {},
        },
        named("rows", "memories", "questions", "exclude", "keywords", "tokenizer"),
        named("out"),
    ),
    "memalpha-filter": Command(
        "one group's rebuilt instances after its model filter (the official recipe's)",
        cmd_memalpha_filter,
        {"--built": {}, "--tokenizer": {}, "--model": {"required": False}, "--out": {}},
        named("built", "tokenizer", "model"),
        named("out"),
    ),
    "memalpha-sets": Command(
        "Mem-α's rebuilt training and validation sets: each group cut, then capped at 100",
        cmd_memalpha_sets,
        {"--kept": {"nargs": "+"}, "--train": {}, "--validation": {}},
        named("kept"),
        named("train", "validation"),
    ),
    "memalpha-compare": Command(
        "the rebuilt Mem-α sets beside the released ones, matched by text",
        cmd_memalpha_compare,
        {
            "--rebuilt": {"nargs": "+"},
            "--released": {"nargs": "+"},
            "--mab": {},
            "--tokenizer": {},
            "--out": {},
        },
        named("rebuilt", "released", "mab", "tokenizer"),
        named("out"),
    ),
    "memorize": Command(
        "a two-job system's first job: its model reads every Mem-α instance",
        cmd_memorize,
        {
            "--data": {"nargs": "+"},
            "--model": {},
            "--memory-tokenizer": {"required": False},
            "--pool": {"required": False},
            "--memories": {},
        },
        named("data", "model", "memory_tokenizer", "pool"),
        named("memories"),
    ),
    "merge-eval": Command(
        "merge an evaluation's shards into its predictions and metrics",
        cmd_merge_eval,
        {"--shards": {"nargs": "+"}, "--predictions": {}, "--metrics": {}},
        named("shards"),
        named("predictions", "metrics"),
    ),
    "rescore": Command(
        "a finished evaluation's predictions scored again by another scorer, no generation",
        cmd_rescore,
        {
            "--predictions": {},
            "--judge-model": {"required": False},
            "--out-predictions": {},
            "--metrics": {},
        },
        named("predictions", "judge_model"),
        named("out_predictions", "metrics"),
    ),
    "judge-probe": Command(
        "an LLM judge on a fixed set of right and vague wrong answers: how lenient it is",
        cmd_judge_probe,
        {"--model": {}, "--out": {}},
        named("model"),
        named("out"),
    ),
    "table": Command(
        "one paper table: ours beside the paper's numbers, with intervals and verdicts",
        cmd_table,
        {**REPORT_OPTIONS, "--controls": {"nargs": "*", "default": []}},
        named("metrics", "paper", "controls"),
        prefixed(".csv", ".md", ".tex", ".html", ".claims.json"),
    ),
    "figure": Command(
        "one paper figure (PNG, PDF) and the claims it checks",
        cmd_figure,
        REPORT_OPTIONS,
        joined(named("metrics", "paper"), measured_cost_files),
        prefixed(".png", ".pdf", ".claims.json"),
    ),
    "reproduction": Command(
        "the reproduction report of a run (Markdown and HTML)",
        cmd_reproduction,
        {
            "--tables": {"nargs": "+"},  # each table's Markdown and CSV
            "--figures": {"nargs": "*", "type": Path},
            "--claims": {"nargs": "*", "type": Path},  # the figures' claim checks
            "--case-studies": {"nargs": "*", "type": Path},
            "--evaluations": {"nargs": "*", "type": Path, "default": []},  # their items
            "--benchmarks": {"nargs": "*", "type": Path, "default": []},  # their compute
            "--out-prefix": {},
        },
        named("tables", "figures", "claims", "case_studies", "evaluations", "benchmarks"),
        prefixed(".md", ".html", ".cells.csv", ".diagnoses.csv"),
    ),
    "training-curve": Command(
        "reward, KL and clipping per step of training runs",
        cmd_training_curve,
        {"--metrics": {"nargs": "+"}, "--out-prefix": {}},
        named("metrics"),
        prefixed(".png", ".pdf"),
    ),
    "trace": Command(
        "case studies: the memory after every chunk of chosen MemAgent samples",
        cmd_trace,
        {
            "--predictions": {},
            "--data": {"nargs": "+", "required": False},
            "--pool": {"required": False},
            "--pool-questions": {"required": False},
            "--tokenizer": {"required": False},
            "--out-prefix": {},
        },
        named("predictions", "data", "pool", "pool_questions", "tokenizer"),
        prefixed(".md", ".html"),
    ),
}


def version() -> str:
    """`memrepro <version> (commit <short hash>[ with uncommitted changes])`. The version is the
    source tree's own, so `memrepro` runs where the package is not installed (images, conda
    envs)."""
    return f"memrepro {memrepro.__version__} ({commit_text()})"


def build_parser() -> argparse.ArgumentParser:
    """The top level lists the person's commands and `job`; the job subcommands parse here too
    (the rules call them by name) but are listed only by `memrepro job --help`."""
    parser = TopParser(prog="memrepro", description=__doc__.splitlines()[0])
    job_options(parser, shown=False)
    parser.add_argument("--version", action="version", version=version())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (_, summary) in TOOLS.items():
        sub.add_parser(name, help=summary, add_help=False)  # listed; parsed by the tool itself
    sub.add_parser(JOB_ENTRY, help=JOB_SUMMARY, add_help=False)
    add_job_commands(sub)
    return parser


def add_job_commands(sub: Any) -> None:
    """Every job subcommand with its arguments, unlisted (help=None keeps it off the list)."""
    for name, spec in COMMANDS.items():
        command = sub.add_parser(name, description=spec.summary)
        command.add_argument(
            "--settings", type=_settings, required=True, help="resolved job settings: JSON or @FILE"
        )
        for flag, extra in spec.options.items():
            if not flag.startswith("--"):  # positional: the launch command after `--`
                command.add_argument(flag, **extra)
                continue
            kind = {"type": Path} if "type" not in extra else {}
            command.add_argument(flag, **{"required": True, **kind, **extra})


def _paths(args: argparse.Namespace, names: list[str]) -> list[Path]:
    paths: list[Path] = []
    for name in names:
        value = getattr(args, name)
        if value is not None:  # an optional path not given
            paths += [Path(v) for v in value] if isinstance(value, list) else [Path(value)]
    return paths


def path_arguments(args: argparse.Namespace, command: Command) -> dict[str, str | list[str]]:
    """The command's arguments that name paths, by name, as given: its record says which input
    is which (a file may be given twice: a table's metrics and its controls)."""
    named: dict[str, str | list[str]] = {}
    for flag in command.options:
        value = getattr(args, flag.lstrip("-").replace("-", "_"))
        if isinstance(value, Path):
            named[flag.lstrip("-")] = str(value)
        elif isinstance(value, list) and value and all(isinstance(v, Path) for v in value):
            named[flag.lstrip("-")] = [str(v) for v in value]
    return named


def run_tool(module: str, argv: list[str]) -> None:
    """A report command; its reader closing the pipe early (`| head`) ends it quietly, as for
    any Unix filter."""
    try:
        importlib.import_module(module).main(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        sys.exit(141)  # 128 + SIGPIPE, what a shell reports for a filter ended this way


def main(argv: Sequence[str] | None = None) -> None:
    from memrepro.secrets import RedactingStream

    sys.stderr = RedactingStream(sys.stderr)  # the job's log: an echoed API key never lands there
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # SLURM preemption and time limits send SIGTERM: unwind like Ctrl-C, so partial outputs are
    # flushed and the provenance record says KILLED.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in TOOLS:
        run_tool(TOOLS[argv[0]][0], argv[1:])
        return
    if argv and not argv[0].startswith("-") and argv[0] not in (JOB_ENTRY, *COMMANDS):
        sys.exit(unknown_command(argv[0], list(COMMANDS)))
    if argv and argv[0] == JOB_ENTRY:
        if argv[1:] not in ([], ["--help"], ["-h"]):
            sys.exit(f"memrepro job: it only lists them; run one by its name: memrepro {argv[1]}")
        print(job_help({name: spec.summary for name, spec in COMMANDS.items()}), end="")
        return
    args = build_parser().parse_args(argv)
    command = COMMANDS[args.command]
    out_paths = command.outputs(args)
    for path in out_paths:
        path.parent.mkdir(parents=True, exist_ok=True)
    with job_run(
        args.job["rule"],
        args.job["wildcards"],
        args.settings,
        command.inputs(args),
        out_paths,
        args.log,
        path_arguments(args, command),
    ) as run:
        command.handler(args, run)


if __name__ == "__main__":
    main()
