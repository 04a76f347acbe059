"""The plan `memrepro cost` prices: the config files and the Snakemake dry run its arguments name,
and the jobs that dry run prints (rule, wildcards, resources and the settings of its command)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepro import config as cfg
from memrepro.settings_files import read_settings

DEFAULT_CONFIG = "config/smoke.yaml"  # the Snakefile's embedded default


@dataclass(frozen=True)
class PlannedJob:
    rule: str
    wildcards: dict[str, str] = field(default_factory=dict)
    resources: dict[str, str] = field(default_factory=dict)
    settings: dict[str, Any] | None = None  # `--settings` of its shell command
    runs: bool = True  # it has a command (not a target that only gathers files)


def parse_plan(text: str) -> list[PlannedJob]:
    """The jobs of `snakemake -n -p` output (Snakemake 9): one block per job, `rule NAME:` then
    indented `key: value` lines, then `Shell command:` where the rule has one."""
    jobs: list[PlannedJob] = []
    for block in re.split(r"^(?=(?:local)?rule \S+:$)", text, flags=re.MULTILINE):
        head = re.match(r"(?:local)?rule (\S+):$", block, flags=re.MULTILINE)
        if not head:
            continue
        fields = dict(re.findall(r"^    (\w+): (.*)$", block, flags=re.MULTILINE))
        command = re.search(r"^Shell command: (.*)$", block, flags=re.MULTILINE)
        jobs.append(
            PlannedJob(
                head[1],
                _pairs(fields.get("wildcards", "")),
                _pairs(fields.get("resources", "")),
                _settings(command[1]) if command else None,
                bool(command) and command[1] != "None",
            )
        )
    return jobs


def _pairs(text: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in text.split(", ") if "=" in part)


def _settings(command: str) -> dict[str, Any] | None:
    words = shlex.split(command)
    if "--settings" not in words:
        return None
    return read_settings(words[words.index("--settings") + 1])


def config_files(args: Sequence[str]) -> list[str]:
    """The config files Snakemake reads for these arguments: --configfile's, else the profile's,
    else the Snakefile's default."""
    from memrepro.launch import parsed_arguments

    parsed = parsed_arguments(args)
    if parsed.configfile:
        return [str(path) for path in parsed.configfile]
    if parsed.profile:
        profile = cfg.load_yaml(profile_dir(parsed.profile[-1]) / "config.yaml")
        files = profile.get("configfile", DEFAULT_CONFIG)
        return [files] if isinstance(files, str) else list(files)
    return [DEFAULT_CONFIG]


def profile_dir(name: str) -> Path:
    """A `--profile` as Snakemake finds it (a directory, or one under profiles/), else an error
    listing the profiles there are."""
    for path in (Path(name), Path("profiles") / name):
        if (path / "config.yaml").is_file():
            return path
    known = sorted(str(p.parent) for p in Path("profiles").glob("*/config.yaml"))
    raise SystemExit(f"--profile {name}: no such profile (profiles: {', '.join(known)})")


def dry_run(args: Sequence[str], overrides: dict[str, Any]) -> str:
    from memrepro.launch import snakemake_env

    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "-p", *args],
        capture_output=True,
        text=True,
        env=snakemake_env(overrides),
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(
            f"memrepro cost: the dry run failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
        )
    return done.stdout
