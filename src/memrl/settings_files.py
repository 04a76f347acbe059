"""Job settings passed by reference: `--settings @FILE`.

Each job's settings are kept in a file named by their digest, which the rule passes as its
`settings` param: the printed command stays one line (a dry run of the paper plan used to print
about 6 KB of JSON per job), and Snakemake still reruns a job whose settings change, because a
change gives another file name and so another param. The files are written while planning
(idempotent: the same settings, the same file) into Snakemake's own state directory, which
every job of a run can read, on a cluster too.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

SETTINGS_DIR = Path(".snakemake") / "memrl" / "settings"
PREFIX = "@"  # `--settings @FILE`: read the settings from FILE


def canonical(settings: Any) -> str:
    """The settings as JSON with sorted keys: a reordered YAML key changes nothing."""
    return json.dumps(settings, sort_keys=True)


def settings_reference(settings: Any, directory: Path = SETTINGS_DIR) -> str:
    """`@<directory>/<digest>.json`, the file written first if it is not there yet."""
    text = canonical(settings)
    path = directory / f"{hashlib.sha256(text.encode()).hexdigest()[:20]}.json"
    if not path.is_file():
        directory.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=directory, suffix=".tmp")
        with os.fdopen(handle, "w") as out:
            out.write(text + "\n")
        os.replace(temporary, path)  # atomic: a reader sees the whole file or none
    return f"{PREFIX}{path}"


def read_settings(argument: str) -> Any:
    """`--settings`' value: `@FILE` (a file of JSON) or the JSON itself."""
    if argument.startswith(PREFIX):
        path = Path(argument[len(PREFIX) :])
        try:
            text = path.read_text()
        except OSError as exc:
            raise ValueError(f"settings file {path}: {exc.strerror}") from exc
        return _parse(text, f"settings file {path}")
    return _parse(argument, "settings")


def _parse(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what}: not valid JSON: {exc}") from exc
