"""The Snakemake invocation: what identifies it, recorded when it starts and exported to its jobs.

`start_invocation` (the Snakefile's `onstart`, real runs only) writes
`<results>/provenance/<invocation>.json` (config, git state, host, the command, its targets and
profile), the uncommitted diff when the tree is dirty (`<invocation>.diff`), and exports what the
jobs need (`MEMREPRO_INVOCATION`, the config hash, git state, the diff, the digest cache, the
tracking URI); local job processes inherit it and the SLURM executor forwards it (`--export=ALL`).
A job reads it back (`git_state`, `made_by`). `end_invocation` (`onsuccess`/`onerror`) marks the
invocation finished and loads the records into MLflow in a subprocess (`python -m
memrepro.tracking`, memrepro.tracking.loader). A kill during those end steps leaves a mark
(`END_PENDING`): the next invocation names what waits and, when it ends, runs them
(`finish_killed_end`), even if it had nothing to do. Set MEMREPRO_TRACKING=off to disable tracking
entirely.
"""

from __future__ import annotations

import logging
import os
import shlex
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import memrepro
from memrepro.data.io import read_json, write_json_atomic, write_text_atomic
from memrepro.digests import ENV_DIGEST_CACHE
from memrepro.layout import config_hash
from memrepro.locks import is_dead, process_identity
from memrepro.tracking.store import absolute_uri

log = logging.getLogger(__name__)

ENV_INVOCATION = "MEMREPRO_INVOCATION"
ENV_CONFIG_HASH = "MEMREPRO_CONFIG_HASH"
ENV_SNAKEMAKE_VERSION = "MEMREPRO_SNAKEMAKE_VERSION"
ENV_GIT_COMMIT = "MEMREPRO_GIT_COMMIT"
ENV_GIT_DIRTY = "MEMREPRO_GIT_DIRTY"
ENV_GIT_DIFF = "MEMREPRO_GIT_DIFF"


def enabled() -> bool:
    return os.environ.get("MEMREPRO_TRACKING", "on").lower() not in {"off", "0", "false"}


def now_ms() -> int:
    return int(time.time() * 1000)


def _git(repo: Path | None, *args: str) -> subprocess.CompletedProcess[str] | str:
    """A git command run in the MemRepro source tree (`repo`), or why it could not run."""
    repo = repo or Path(memrepro.__file__).resolve().parents[2]
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    except FileNotFoundError:  # a minimal image
        return "no git here"
    except OSError as error:
        return f"git cannot run here: {error.strerror or error}"


def _git_output(repo: Path | None, *args: str) -> str:
    done = _git(repo, *args)
    return done.stdout if not isinstance(done, str) and done.returncode == 0 else ""


def git_state(repo: Path | None = None) -> dict[str, str]:
    """The commit of the MemRepro source tree and whether it has uncommitted changes: the
    invocation's, from the environment, when a Snakemake run exported it (so a job in a container
    without git or .git records the host's); else asked of git; else "unknown" with the reason."""
    if ENV_GIT_COMMIT in os.environ:
        return {"git.commit": os.environ[ENV_GIT_COMMIT], "git.dirty": os.environ[ENV_GIT_DIRTY]}
    done = _git(repo, "rev-parse", "HEAD")
    if isinstance(done, str) or done.returncode != 0:
        reason = done if isinstance(done, str) else f"not a git checkout: {done.stderr.strip()}"
        return {"git.commit": "unknown", "git.dirty": "unknown", "git.unknown_reason": reason}
    dirty = bool(_git_output(repo, "status", "--porcelain").strip())
    return {"git.commit": done.stdout.strip(), "git.dirty": str(dirty).lower()}


def commit_text() -> str:
    """`commit <short hash>[ with uncommitted changes]`, for footnotes and --version."""
    git = git_state()
    dirty = " with uncommitted changes" if git["git.dirty"] == "true" else ""
    why = f" ({git['git.unknown_reason']})" if "git.unknown_reason" in git else ""
    return f"commit {git['git.commit'][:12]}{dirty}{why}"


def made_by() -> str:
    """One line naming what made an output: commit, config hash, invocation (for footnotes)."""
    return (
        f"{commit_text()}, config {os.environ.get(ENV_CONFIG_HASH, '?')}, "
        f"invocation {os.environ.get(ENV_INVOCATION) or 'none (run by hand)'}"
    )


def git_diff(repo: Path | None = None) -> str:
    """The uncommitted changes of the source tree: `git diff HEAD`, then the untracked files."""
    untracked = _git_output(repo, "ls-files", "--others", "--exclude-standard").splitlines()
    listing = "".join(f"# untracked: {name}\n" for name in untracked)
    return _git_output(repo, "diff", "HEAD") + listing


def invocations_dir(results: Path) -> Path:
    return results / "provenance"


def read_invocations(results: Path) -> dict[str, dict[str, Any]]:
    """Every invocation record of `results` by its id, oldest first (ids start with the time)."""
    return {path.stem: read_json(path) for path in sorted(invocations_dir(results).glob("*.json"))}


def start_invocation(
    results: Path,
    uri: str,
    config: Mapping[str, Any],
    snakemake_version: str,
    command: list[str],
    targets: list[str],
) -> str | None:
    """Record the invocation (the `command` that started it and its `targets`) and export what
    its jobs need; returns its id."""
    if not enabled():
        return None
    invocation = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
    git = git_state()
    tags = {
        "run": str(config["run"]),
        "config.hash": config_hash(dict(config)),
        "snakemake.version": snakemake_version,
        "host": socket.gethostname(),
        "command": shlex.join(command),
        "targets": " ".join(targets) or "all",
        "profile": profile_of(command),
        **git,
    }
    diff = invocations_dir(results) / f"{invocation}.diff"
    if git["git.dirty"] == "true":
        write_text_atomic(diff, git_diff())
    write_json_atomic(
        invocations_dir(results) / f"{invocation}.json",
        {
            "invocation": invocation,
            "uri": uri,
            "cwd": os.getcwd(),  # a relative store path is relative to it
            "results": str(results.resolve()),  # where the results lay: a moved copy is rebased
            "start_ms": now_ms(),
            "process": process_identity(),  # a killed invocation is recognised by it
            "tags": tags,
            "config": config,
        },
    )
    os.environ.update(
        {
            ENV_INVOCATION: invocation,
            ENV_CONFIG_HASH: tags["config.hash"],
            ENV_SNAKEMAKE_VERSION: snakemake_version,
            ENV_GIT_COMMIT: git["git.commit"],
            ENV_GIT_DIRTY: git["git.dirty"],
            ENV_GIT_DIFF: str(diff.resolve()) if diff.is_file() else "",
            ENV_DIGEST_CACHE: str((invocations_dir(results) / "digests").resolve()),
            "MLFLOW_TRACKING_URI": absolute_uri(uri),
        }
    )
    return invocation


def profile_of(command: list[str]) -> str:
    """The profile a Snakemake command line names (`--profile X`, `--profile=X`), else
    $SNAKEMAKE_PROFILE's, else "none"."""
    for i, arg in enumerate(command):
        if arg == "--profile" and i + 1 < len(command):
            return command[i + 1]
        if arg.startswith("--profile="):
            return arg.split("=", 1)[1]
    return os.environ.get("SNAKEMAKE_PROFILE", "none")


def end_invocation(
    results: Path, succeeded: bool, snakemake_log: str | Sequence[str] | None = None
) -> None:
    """Mark the invocation finished, write the run's summary (run.json, pipeline_info/:
    memrepro.tracking.pipeline_info) and load every pending record into MLflow (subprocesses:
    MLflow is imported once per invocation, and neither failure fails the workflow, each says
    how to redo it). `snakemake_log`: Snakemake's log file(s) of the invocation (its handlers'
    `log`: a list in Snakemake 9), attached to its parent run."""
    invocation = os.environ.get(ENV_INVOCATION)
    if not enabled() or not invocation:
        return
    path = invocations_dir(results) / f"{invocation}.json"
    record = read_json(path)
    record.update(end_ms=now_ms(), status="FINISHED" if succeeded else "FAILED")
    logs = [snakemake_log] if isinstance(snakemake_log, str) else list(snakemake_log or [])
    record["snakemake_logs"] = [str(Path(log_file).resolve()) for log_file in logs]
    write_json_atomic(path, record)
    mark = invocations_dir(results) / END_PENDING
    write_json_atomic(mark, {"invocation": invocation, "process": process_identity()})
    finish_run(results)


# In invocations_dir while an invocation's end steps run: a kill there leaves it behind, and the
# next invocation of the results directory, a no-op included, runs them (`finish_killed_end`).
END_PENDING = ".end-pending"
END_STEPS = (
    ("memrepro.tracking.pipeline_info", "writing run.json and pipeline_info/"),
    ("memrepro.tracking", "loading into MLflow"),
)


def finish_run(results: Path) -> None:
    """The end steps of a run (run.json and pipeline_info/, then the MLflow load), each in a
    subprocess that may fail without failing the workflow; then the pending mark goes."""
    for module, what in END_STEPS:
        done = subprocess.run([sys.executable, "-m", module, str(results)], check=False)
        if done.returncode != 0:
            log.warning("provenance: %s failed; rerun python -m %s %s", what, module, results)
    (invocations_dir(results) / END_PENDING).unlink(missing_ok=True)


def killed_end(results: Path) -> str | None:
    """The invocation whose end steps were killed (its pending mark outlived its process), or
    None. A damaged mark counts as killed: only a kill leaves one half-written."""
    mark = invocations_dir(results) / END_PENDING
    if not enabled() or not mark.is_file():
        return None
    try:
        info = read_json(mark)
        invocation, process = str(info["invocation"]), info["process"]
    except (ValueError, KeyError, TypeError):
        return "unknown"
    return invocation if is_dead(process) else None


def killed_end_warning(results: Path) -> str | None:
    """What a new invocation says when a killed one's records have not reached MLflow."""
    invocation = killed_end(results)
    if invocation is None:
        return None
    return (
        f"provenance: invocation {invocation} was killed while it wrote run.json or loaded "
        f"MLflow, so its records wait; this invocation loads them when it ends (a no-op too, "
        f"not a dry run), or run: python -m memrepro.tracking {results}"
    )


def finish_killed_end(results: Path) -> bool:
    """Run the end steps a killed invocation left undone; whether there were any."""
    if killed_end(results) is None:
        return False
    finish_run(results)
    return True
