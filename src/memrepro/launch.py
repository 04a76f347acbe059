"""`./pipeline ARGS`: Snakemake with ARGS, run from this project's virtualenv without activating
it (the jobs find `memrepro` on PATH), after catching the command-line mistakes that Snakemake
answers with a traceback or a bare exception:

- a target written after an option that takes every word after it (`--configfile`, `--config`,
  `--forcerun`, `-R`, `--until`, `--quiet`, ...: the list comes from Snakemake's own parser);
- `--config a.b=VALUE`, a nested key, which Snakemake's `--config` cannot set: it is passed to
  the workflow instead (memrepro.config.apply_overrides), VALUE read as YAML, refused with its key
  when it is not YAML or holds what JSON cannot (a date, bytes);
- `--config=...`/`--configfile=...` (Snakemake takes only the spaced form), a config file that is
  a directory;
- a target that is neither a rule nor a path (a misspelt table name), answered with the closest;
- `--profile NAME` for `profiles/NAME`, an unknown profile answered with the list;
- a `--configfile` that is not YAML: its file, line and column;
- a real run (not `-n`) under a profile that still says CHANGE_ME: stopped, naming the keys.

`./pipeline --help` is this launcher's page; `--snakemake-help` Snakemake's.
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
from collections.abc import Iterable, Sequence
from pathlib import Path

import yaml

from memrepro.config import ENV_OVERRIDES, FIGURES, TABLES, ConfigError, load_yaml

CONFIG_OPTIONS = ("--config", "-C")
CONFIGFILE_OPTIONS = ("--configfile", "--configfiles")
KNOWN_TARGETS = ("all", "evaluations", "case_studies", "training_curves", *TABLES, *FIGURES)


@functools.cache
def snakemake_parser() -> argparse.ArgumentParser:
    """Snakemake's own argument parser, built once (about 0.2 s) per launch."""
    from snakemake.cli import get_argument_parser

    return get_argument_parser()


@functools.cache
def list_options() -> frozenset[str]:
    """Snakemake's options that take every word after them (nargs * or +), from its parser."""
    actions = snakemake_parser()._actions
    return frozenset(o for a in actions if a.nargs in ("*", "+") for o in a.option_strings)


@functools.cache
def list_option_choices() -> dict[str, frozenset[str]]:
    """Snakemake's list options with fixed choices (`--quiet`: all, host, progress, ...), each
    with them: a word after one that is none of them is a target written in the wrong place."""
    actions = snakemake_parser()._actions
    return {
        option: frozenset(map(str, action.choices))
        for action in actions
        if action.nargs in ("*", "+") and action.choices
        for option in action.option_strings
    }


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
    if (found := _not_json(parsed)) is not None:
        part = "the value" if found is parsed else f"{found!s} in the value"
        raise SystemExit(
            f"--config {arg}: YAML reads {part} as {type(found).__name__}, which a config "
            f"cannot hold; quote it for a string: {arg.partition('=')[0]}='\"{value}\"'"
        )
    return parsed


def _not_json(value: object) -> object | None:
    """The first part of a YAML value that JSON cannot hold (a date, bytes, a non-text key);
    None where it all can."""
    if isinstance(value, dict):
        if any(not isinstance(key, str) for key in value):
            return next(key for key in value if not isinstance(key, str))
        return _first_not_json(value.values())
    if isinstance(value, list):
        return _first_not_json(value)
    fits = value is None or isinstance(value, str | int | float | bool)
    return None if fits else value


def _first_not_json(values: Iterable[object]) -> object | None:
    return next((found for v in values if (found := _not_json(v)) is not None), None)


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
    try:
        load_yaml(path)  # file, line and column of a syntax error, a tab, a key given twice
    except ConfigError as e:
        raise SystemExit(f"{option} {arg}: {e}") from e


def _check_swallowed(args: list[str]) -> None:
    """A line without targets whose list option holds a path or a target name: the user's
    target, swallowed by the option (Snakemake would run `all`). A word after an option with
    fixed choices that is none of them is one too: Snakemake would print its whole usage."""
    _check_choices(args)
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


def _check_choices(args: list[str]) -> None:
    choices = list_option_choices()
    option = None
    for arg in args:
        if arg.startswith("-"):
            option = arg if arg in choices else None
        elif option is not None and arg not in choices[option]:
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
    return snakemake_parser().parse_args(list(argv))


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


PROFILES = Path("profiles")  # the project's profiles, relative to where ./pipeline runs
HELP_FLAGS = ("-h", "--help")
SNAKEMAKE_HELP = "--snakemake-help"
DRY_RUN_FLAGS = ("-n", "--dry-run", "--dryrun", "--lint", "--list-target-rules", "--summary")
PLACEHOLDER = "CHANGE_ME"


def profiles() -> dict[str, str]:
    """The project's profiles by name, each with the first line of its config's header."""
    found = {}
    for config in sorted(PROFILES.glob("*/config.yaml")):
        lines = config.read_text(encoding="utf-8").splitlines()
        first = lines[0].lstrip("# ").strip() if lines and lines[0].startswith("#") else ""
        found[config.parent.name] = first.split(":  ")[0].rstrip(":.")
    return found


def help_text() -> str:
    """This launcher's page: usage, the profiles, the common targets, what it adds, examples."""
    listed = "\n".join(f"  {name:<11} {line}" for name, line in profiles().items())
    tables = ", ".join(TABLES[:4]) + ", ..., " + TABLES[-1]
    return f"""usage: ./pipeline --profile PROFILE [TARGET ...] [SNAKEMAKE OPTIONS]

Snakemake for this project, run from its virtualenv (no activation; the jobs find `memrepro`).

Profiles (--profile NAME, or profiles/NAME):
{listed}

Targets: all (the default), evaluations, case_studies, training_curves, the tables
({tables}) and figures ({", ".join(FIGURES[:3])}, ...); a results path.

What it adds to Snakemake:
  --config section.key=VALUE   set a nested config key (VALUE read as YAML)
  a target after --config, --configfile, --forcerun, ...: named, never swallowed
  a misspelt target or profile: the closest names; a --configfile YAML error: file, line, column
  a real run under a profile that still says {PLACEHOLDER}: stopped, naming the keys

Examples:
  ./pipeline --profile smoke table3                    # one table of the smoke run
  ./pipeline -n --profile slurm table1                 # plan only (a dry run)
  ./pipeline --profile local table1 table3 --configfile config/config.yaml config/eval-released.yaml
  .venv/bin/memrepro cost --profile profiles/slurm all    # the bill before running

Snakemake's own options: ./pipeline {SNAKEMAKE_HELP}"""


def resolve_profiles(args: list[str]) -> list[str]:
    """`--profile NAME` (or `=NAME`) for `profiles/NAME` when NAME is no folder here; a profile
    found nowhere stops with the project's profiles and the closest."""
    out = []
    for i, arg in enumerate(args):
        name = None
        if arg.startswith("--profile="):
            name = arg.partition("=")[2]
        elif i and args[i - 1] == "--profile":
            name = arg
        if name is None or Path(name).is_dir() or _global_profile(name):
            out.append(arg)
            continue
        if (PROFILES / name).is_dir():
            resolved = str(PROFILES / name)
            out.append(f"--profile={resolved}" if arg.startswith("--profile=") else resolved)
            continue
        known = list(profiles())
        close = difflib.get_close_matches(Path(name).name, known, n=2, cutoff=0.5)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise SystemExit(f"--profile {name}: no such profile (profiles: {', '.join(known)}){hint}")
    return out


def _global_profile(name: str) -> bool:
    """A profile in Snakemake's per-user or system folders."""
    homes = [os.environ.get("XDG_CONFIG_HOME", str(Path.home() / ".config")), "/etc/xdg"]
    return any((Path(home) / "snakemake" / name).is_dir() for home in homes)


def check_placeholders(args: Sequence[str]) -> None:
    """A real run under a profile whose config still holds CHANGE_ME stops, naming the keys
    (a dry run plans without them)."""
    if any(arg in DRY_RUN_FLAGS for arg in args):
        return
    for profile in parsed_arguments(args).profile or ():  # Snakemake lists them
        config = Path(profile) / "config.yaml"
        keys = _placeholder_keys(load_yaml(config)) if config.is_file() else []
        if keys:
            raise SystemExit(
                f"{config}: {', '.join(keys)} still set to {PLACEHOLDER}: set them to your "
                "cluster's (profiles/README.md) before a real run; a dry run (-n) plans "
                "without them"
            )


def _placeholder_keys(node: object, path: str = "") -> list[str]:
    if isinstance(node, dict):
        return [k for key, v in node.items() for k in _placeholder_keys(v, f"{path}{key}.")]
    if isinstance(node, list):
        return [k for i, v in enumerate(node) for k in _placeholder_keys(v, f"{path}{i}.")]
    return [path.rstrip(".")] if isinstance(node, str) and PLACEHOLDER in node else []


DEFAULT_CONFIG = Path("config/smoke.yaml")  # the Snakefile's embedded default


def config_files(args: Sequence[str]) -> list[Path]:
    """The config files a command line plans with: its --configfile ones, else its profile's,
    else the embedded default."""
    parsed = parsed_arguments(args)
    if parsed.configfile:
        return [Path(f) for f in parsed.configfile]
    for profile in parsed.profile or ():
        config = Path(profile) / "config.yaml"
        files = load_yaml(config).get("configfile") if config.is_file() else None
        if files:
            return [Path(f) for f in ([files] if isinstance(files, str) else files)]
    return [DEFAULT_CONFIG]


def check_run_paths(args: Sequence[str]) -> None:
    """A results path of another run (results/<run>/...) stops naming the config files that
    plan that run, instead of Snakemake's MissingRuleException."""
    paths = [Path(t) for t in targets(args) if t.startswith("results/")]
    if not paths:
        return
    files = config_files(args)
    runs = [load_yaml(f).get("run") for f in files if f.is_file()]
    run = next((r for r in reversed(runs) if r), None)
    for path in paths:
        wanted = path.parts[1] if len(path.parts) > 1 else None
        if run is None or wanted == run:
            continue
        planners = [
            str(f)
            for f in sorted(Path("config").glob("*.yaml"))
            if load_yaml(f).get("run") == wanted
        ]
        where = (
            f"run {wanted!r} is planned by {', '.join(planners)}"
            if planners
            else (f"no config in config/ plans a run {wanted!r}")
        )
        raise SystemExit(
            f"{path}: this command plans run {run!r} ({', '.join(map(str, files))}), which writes "
            f"results/{run}/; {where} (give it with --configfile after the targets, with the "
            "file it is laid over, e.g. config/config.yaml config/eval-released.yaml)"
        )


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(arg in HELP_FLAGS for arg in argv):
        print(help_text())
        return
    if SNAKEMAKE_HELP in argv:
        argv = ["--help"]
    args, overrides = split_overrides(resolve_profiles(argv))
    check_targets(targets(args))
    check_run_paths(args)
    check_placeholders(args)
    env = snakemake_env(overrides)
    os.execvpe(sys.executable, [sys.executable, "-m", "snakemake", *args], env)


PODMAN_APPTAINER = Path(__file__).resolve().parents[2] / "envs" / "podman"


def podman_route(path: str) -> bool:
    """Containers through podman: podman on PATH, apptainer and singularity not."""
    found = {name: shutil.which(name, path=path) for name in ("podman", "apptainer", "singularity")}
    return bool(found["podman"]) and not (found["apptainer"] or found["singularity"])


def snakemake_env(overrides: dict[str, object]) -> dict[str, str]:
    """This environment with this interpreter's directory (its `memrepro`) first on PATH, the
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
