"""`./pipeline ARGS`: Snakemake with ARGS, run from this project's virtualenv without activating
it (the jobs find `memrl` on PATH), after catching the command-line mistakes that Snakemake
answers with a traceback or a bare exception:

- a target written after an option that takes every word after it (`--configfile`, `--config`,
  `--forcerun`, `-R`, `--until`, ...: the list comes from Snakemake's own parser);
- `--config a.b=VALUE`, a nested key, which Snakemake's `--config` cannot set: it is passed to
  the workflow instead (memrl.config.apply_overrides), VALUE read as YAML, refused with its key
  when it is not YAML or holds what JSON cannot (a date, bytes);
- `--config=...`/`--configfile=...` (Snakemake takes only the spaced form), a config file that is
  a directory;
- a target that is neither a rule nor a path (a misspelt table name), answered with the closest.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

from memrl.config import ENV_OVERRIDES, FIGURES, TABLES

CONFIG_OPTIONS = ("--config", "-C")
CONFIGFILE_OPTIONS = ("--configfile", "--configfiles")
KNOWN_TARGETS = ("all", "evaluations", "case_studies", "training_curves", *TABLES, *FIGURES)


@functools.cache
def list_options() -> frozenset[str]:
    """Snakemake's options that take every word after them (nargs * or +), from its parser."""
    from snakemake.cli import get_argument_parser

    actions = get_argument_parser()._actions
    return frozenset(o for a in actions if a.nargs in ("*", "+") for o in a.option_strings)


def split_overrides(argv: Sequence[str]) -> tuple[list[str], dict[str, object]]:
    """The arguments without nested `--config` entries, and those entries as {key: value}. A
    word without `=` after `--config`, or one naming no file after `--configfile`, that is not
    a path is a target written in the wrong place: an error that says so; so is a path or a
    target name after another list option when the line has no target before it."""
    kept: list[str] = []
    overrides: dict[str, object] = {}
    option = None
    for arg in _spaced(argv):
        if arg.startswith("-"):
            option = arg if arg in list_options() else None
            kept.append(arg)
            continue
        if option in CONFIG_OPTIONS:
            key, sep, value = arg.partition("=")
            if not sep:
                raise SystemExit(_misplaced(arg, option))
            if "." in key:
                overrides[_dotted_key(key, arg)] = _yaml_value(value, arg)
                continue
        elif option in CONFIGFILE_OPTIONS:
            _check_config_file(arg, option)
        kept.append(arg)
    kept = _drop_empty_options(kept)
    _check_swallowed(kept)
    return kept, overrides


def _spaced(argv: Sequence[str]) -> list[str]:
    """`--config=a=b` and `--configfile=f` as Snakemake takes them: `--config a=b`."""
    out: list[str] = []
    for arg in argv:
        option, sep, value = arg.partition("=")
        out += (
            [option, value] if sep and option in (*CONFIG_OPTIONS, *CONFIGFILE_OPTIONS) else [arg]
        )
    return out


def _dotted_key(key: str, arg: str) -> str:
    if any(not part for part in key.split(".")):
        raise SystemExit(f"--config {arg}: the key {key!r} has an empty part (two dots, or an end)")
    return key


def _yaml_value(value: str, arg: str) -> object:
    """VALUE of `--config a.b=VALUE` as YAML; what JSON cannot hold is refused with the key."""
    if not value:
        return None
    try:
        parsed = yaml.safe_load(value)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SystemExit(
            f"--config {arg}: the value is not YAML ({problem}); quote a string, e.g. "
            f"{arg.partition('=')[0]}='\"{value}\"'"
        ) from None
    if not _json_like(parsed):
        raise SystemExit(
            f"--config {arg}: YAML reads the value as {type(parsed).__name__}, which a config "
            f"cannot hold; quote it for a string: {arg.partition('=')[0]}='\"{value}\"'"
        )
    return parsed


def _json_like(value: object) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_like(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_json_like(item) for item in value)
    return value is None or isinstance(value, str | int | float | bool)  # no date, bytes


def _check_config_file(arg: str, option: str) -> None:
    path = Path(arg)
    if path.is_dir():
        files = sorted(str(f) for f in path.glob("*.yaml"))
        hint = f": give one of its files ({', '.join(files[:6])})" if files else ""
        raise SystemExit(f"{option} {arg}: a directory, not a config file{hint}")
    if not path.exists():
        if "/" in arg or "." in arg:
            raise SystemExit(f"{option} {arg}: no such file")
        raise SystemExit(_misplaced(arg, option))


def _check_swallowed(args: list[str]) -> None:
    """A line without targets whose list option holds a path or a target name: the user's
    target, swallowed by the option (Snakemake would run `all`)."""
    if targets(args):
        return
    option = None
    for arg in args:
        if arg.startswith("-"):
            option = arg if arg in list_options() else None
        elif option not in (None, *CONFIG_OPTIONS, *CONFIGFILE_OPTIONS) and (
            "/" in arg or arg in KNOWN_TARGETS
        ):
            raise SystemExit(_misplaced(arg, option))


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
        if arg in CONFIG_OPTIONS and following.startswith("-"):
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
