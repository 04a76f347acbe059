"""Job settings passed by reference: `--settings @FILE`.

Each job's settings are kept in a file named by their digest, which the rule passes as its
`settings` param: the printed command stays one line (a dry run of the paper plan used to print
about 6 KB of JSON per job), and Snakemake still reruns a job whose settings change, because a
change gives another file name and so another param. The files are written while planning
(idempotent: the same settings, the same file) into Snakemake's own state directory, which
every job of a run can read, on a cluster too. A file's name is the digest of its content: a job
refuses a file that no longer matches its name, and planning rewrites one.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memrepro.data.io import atomic_path

SETTINGS_DIR = Path(".snakemake") / "memrepro" / "settings"
PREFIX = "@"  # `--settings @FILE`: read the settings from FILE


def canonical(settings: Any) -> str:
    """The settings as JSON with sorted keys: a reordered YAML key changes nothing."""
    return json.dumps(settings, sort_keys=True)


def digest(text: str) -> str:
    """A settings file's name: the digest of the canonical text it holds."""
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def settings_reference(
    settings: Any, directory: Path = SETTINGS_DIR, say: Callable[[str], None] | None = None
) -> str:
    """`@<directory>/<digest>.json`, the file (re)written unless it holds exactly these settings:
    one changed or cut short after an earlier planning is rewritten, and `say` (stderr by
    default) is told. The write goes to a temporary name, renamed over: a job, or a planner
    beside this one, reads the whole file or none."""
    text = canonical(settings)
    path = directory / f"{digest(text)}.json"
    try:
        held = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        held = None
    except (OSError, UnicodeDecodeError) as exc:
        held = f"unreadable: {exc}"
    if held == text + "\n":
        return f"{PREFIX}{path}"
    if held is not None:
        (say or _stderr)(
            f"memrepro: {path} did not hold the settings its name stands for: rewritten from the "
            "config"
        )
    with atomic_path(path) as temporary:  # the usual permissions, not a temporary file's 0600
        temporary.write_text(text + "\n", encoding="utf-8")
    return f"{PREFIX}{path}"


def read_settings(argument: str) -> Any:
    """`--settings`' value: `@FILE` (a file of JSON) or the JSON itself. A file named by a digest
    (planning's) must hold the settings of that digest: one changed since is refused."""
    if not argument.startswith(PREFIX):
        return _parse(argument, "settings")
    path = Path(argument[len(PREFIX) :])
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"settings file {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ValueError(f"settings file {path}: not UTF-8 at byte {exc.start}{RERUN}") from exc
    settings = _parse(text, f"settings file {path}")
    # the digest of the text as written (JSON turns int keys to strings: not canonical again)
    if DIGEST_NAME.fullmatch(path.stem) and digest(text.removesuffix("\n")) != path.stem:
        raise ValueError(
            f"settings file {path}: it does not hold the settings its name stands for (it "
            f"changed after planning){RERUN}"
        )
    return settings


RERUN = "; run the pipeline again: planning rewrites it from the config"
DIGEST_NAME = re.compile(r"[0-9a-f]{20}")


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


def _parse(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        reason = f"not valid JSON: {exc}"
        if what.startswith("settings file"):
            reason += RERUN
        raise ValueError(f"{what}: {reason}") from exc
