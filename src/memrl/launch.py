"""`./pipeline ARGS`: Snakemake with ARGS, run from this project's virtualenv without activating
it (the jobs find `memrl` on PATH), after catching the command-line mistakes that Snakemake
answers with a traceback or a bare exception:

- a target written after `--configfile` or `--config`, which take every word after them;
- `--config a.b=VALUE`, a nested key, which Snakemake's `--config` cannot set: it is passed to
  the workflow instead (memrl.config.apply_overrides), VALUE read as YAML;
- a target that is neither a rule nor a path (a misspelt table name), answered with the closest.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

from memrl.config import ENV_OVERRIDES, FIGURES, TABLES

LIST_OPTIONS = ("--configfile", "--configfiles", "--config", "-C")  # each takes every word after it
KNOWN_TARGETS = ("all", "evaluations", "case_studies", "training_curves", *TABLES, *FIGURES)


def split_overrides(argv: Sequence[str]) -> tuple[list[str], dict[str, object]]:
    """The arguments without nested `--config` entries, and those entries as {key: value}. A
    word without `=` after `--config`, or one naming no file after `--configfile`, that is not
    a path is a target written in the wrong place: an error that says so."""
    kept: list[str] = []
    overrides: dict[str, object] = {}
    option = None
    for arg in argv:
        if arg.startswith("-"):
            option = arg if arg in LIST_OPTIONS else None
            kept.append(arg)
            continue
        if option in ("--config", "-C"):
            key, sep, value = arg.partition("=")
            if not sep:
                raise SystemExit(_misplaced(arg, option))
            if "." in key:
                overrides[key] = yaml.safe_load(value) if value else None
                continue
        elif option is not None and not Path(arg).exists():
            if "/" in arg or "." in arg:
                raise SystemExit(f"{option} {arg}: no such file")
            raise SystemExit(_misplaced(arg, option))
        kept.append(arg)
    return _drop_empty_options(kept), overrides


def _misplaced(word: str, option: str) -> str:
    return (
        f"{word!r} after {option} is read as one of its values, not as a target: {option} takes "
        f"every word after it. Put the targets first: ./pipeline {word} {option} ..."
    )


def _drop_empty_options(args: list[str]) -> list[str]:
    """`--config` left without entries (all of them nested) is dropped."""
    out = []
    for i, arg in enumerate(args):
        following = args[i + 1] if i + 1 < len(args) else "-"
        if arg in ("--config", "-C") and following.startswith("-"):
            continue
        out.append(arg)
    return out


def parsed_arguments(argv: Sequence[str]) -> argparse.Namespace:
    """A Snakemake command line as Snakemake's own parser reads it (without its profile)."""
    from snakemake.cli import get_argument_parser

    return get_argument_parser().parse_args(list(argv))


def targets(argv: Sequence[str]) -> list[str]:
    """The positional targets of a Snakemake command line."""
    return list(parsed_arguments(argv).targets)


def check_targets(names: Sequence[str], listed: Sequence[str] | None = None) -> None:
    """A target that is no path and no rule stops with the closest rule names. `listed`: the
    workflow's target rules (asked of Snakemake only when a name is not a known one)."""
    for name in names:
        if "/" in name or "." in name or name in KNOWN_TARGETS:
            continue
        rules = list(listed) if listed is not None else target_rules()
        if name in rules:
            continue
        close = difflib.get_close_matches(name, rules, n=3, cutoff=0.6)
        hint = f"did you mean {' or '.join(close)}?" if close else f"targets: {', '.join(rules)}"
        raise SystemExit(f"no target {name!r}: {hint}")


def target_rules() -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "--list-target-rules"],
        capture_output=True,
        text=True,
        check=False,
    )
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]


def main(argv: Sequence[str] | None = None) -> None:
    args, overrides = split_overrides(sys.argv[1:] if argv is None else argv)
    check_targets(targets(args))
    env = snakemake_env(overrides)
    os.execvpe(sys.executable, [sys.executable, "-m", "snakemake", *args], env)


PODMAN_APPTAINER = Path(__file__).resolve().parents[2] / "envs" / "podman"


def podman_route(path: str) -> bool:
    """Containers through podman: podman on PATH, apptainer and singularity not."""
    found = {name: shutil.which(name, path=path) for name in ("podman", "apptainer", "singularity")}
    return bool(found["podman"]) and not (found["apptainer"] or found["singularity"])


def snakemake_env(overrides: dict[str, object]) -> dict[str, str]:
    """This environment with this interpreter's directory (its `memrl`) first on PATH, the
    podman route's `apptainer` last where podman is installed and apptainer is not, and the
    nested `--config` overrides for the workflow to apply."""
    env = dict(os.environ)
    path = [str(Path(sys.executable).parent), env.get("PATH", "")]
    if podman_route(env.get("PATH", "")):
        path.append(str(PODMAN_APPTAINER))
    env["PATH"] = os.pathsep.join(path)
    if overrides:
        env[ENV_OVERRIDES] = json.dumps(overrides)
    return env


if __name__ == "__main__":
    main()
