"""The commands a person types (TOOLS), and what `memrepro --help` and `memrepro job --help`
print: the first a line per command, the second a line per job subcommand the rules run."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# Subcommands a person runs, not Snakemake jobs: their own arguments, no settings, no record.
TOOLS: dict[str, tuple[str, str]] = {
    "lineage": ("memrepro.lineage", "the jobs that made a file, back to the downloads"),
    "cost": ("memrepro.cost.command", "GPU-hours, downloads and checkpoints of a target"),
    "ui": ("memrepro.ui", "MLflow's UI on a run's store, opened on its runs"),
    "compare-runs": ("memrepro.run_compare", "two runs' files and predictions: what changed, why"),
    "recipe-diff": ("memrepro.recipe_diff", "a verl config beside the papers' recipes, key by key"),
    "verify": ("memrepro.verify", "a run's numbers derived again from its files, offline"),
    "bundle": ("memrepro.verify.bundle", "a run packed for someone else to verify"),
    "verify-predictions": (
        "memrepro.verify.predictions",
        "someone's predictions scored on a run's released set",
    ),
}

JOB_ENTRY = "job"  # `memrepro job --help`: the job subcommands, which the rules run
JOB_SUMMARY = "the job subcommands Snakemake runs, one per rule family"


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON: {exc}") from exc


class TopParser(argparse.ArgumentParser):
    """`memrepro --help`: one line per command a person types, and `job`."""

    def format_help(self) -> str:
        entries = [*((name, summary) for name, (_, summary) in TOOLS.items())]
        entries.append((JOB_ENTRY, JOB_SUMMARY))
        width = max(len(name) for name, _ in entries) + 2
        return "\n".join(
            [
                "usage: memrepro COMMAND [ARGUMENTS]",
                "",
                f"{self.description}",
                "",
                "commands:",
                *(f"  {name:<{width}}{summary}" for name, summary in entries),
                "",
                f"  {'--version':<{width}}the version and the source tree's commit",
                "",
                "Each command has its own --help.",
                "",
            ]
        )


def job_options(parser: argparse.ArgumentParser, shown: bool) -> None:
    """--job and --log, which every rule passes before its subcommand's name."""
    parser.add_argument(
        "--job",
        type=_json,
        default={"rule": "manual", "wildcards": {}},
        help='JSON {"rule": ..., "wildcards": {...}} of the Snakemake job (MLflow tags)'
        if shown
        else argparse.SUPPRESS,
    )
    parser.add_argument(
        "--log",
        type=Path,
        help="the job's log file, attached to its MLflow run" if shown else argparse.SUPPRESS,
    )


def unknown_command(name: str, jobs: Sequence[str]) -> str:
    """The message for a command that is none: the closest names (a person's command, or one of
    the `jobs`), and where the lists are."""
    import difflib

    close = difflib.get_close_matches(name, [*TOOLS, JOB_ENTRY, *jobs], n=3)
    hint = f" Did you mean {' or '.join(close)}?" if close else ""
    return (
        f"memrepro: no command {name!r}.{hint} The commands: memrepro --help; "
        "the job subcommands: memrepro job --help."
    )


def job_help(summaries: Mapping[str, str]) -> str:
    """`memrepro job --help`: how a rule calls a job subcommand, then each one (`summaries`: name
    -> its line), a line each."""
    parser = argparse.ArgumentParser(
        prog="memrepro [--job JSON] [--log FILE]",
        usage="%(prog)s NAME --settings JSON|@FILE [ARGUMENTS]",
        description=f"{JOB_SUMMARY}. Each has its own --help: memrepro NAME --help.",
    )
    job_options(parser, shown=True)
    sub = parser.add_subparsers(title="job subcommands", metavar="NAME")
    for name, summary in summaries.items():
        sub.add_parser(name, help=summary)
    return parser.format_help()
