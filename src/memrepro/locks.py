"""Resume after a kill with the plain command: a stale Snakemake lock is released safely.

Snakemake locks the working directory (`.snakemake/locks/N.{input,output}.lock`, no owner
recorded) for the whole run and removes the locks when it exits; a SIGKILLed run leaves them, and
the next run stops with a LockException until someone runs `--unlock`. So each real run records
its main process beside its locks (`onstart`: host, pid, and the process's start time, which tells
a reused pid apart), and every later run (while the Snakefile is parsed, before Snakemake locks)
releases the locks only when it is certain they are stale: every lock file was there when a
recorded run started, and every recorded run is gone from this very host. A lock without a record,
or one held by a live run or by a run on another host (a shared filesystem), is left alone:
Snakemake then refuses as usual, and `--unlock` is the way out.

A second run into the results directory a live run writes is named before Snakemake refuses it
(`live_run`): the live run's pid, host, start and targets, and how to write elsewhere
(`--config run=NAME`). It never suggests `--unlock`, which would let two runs write one
directory. A run into another results directory shares no output, and Snakemake lets it run.
"""

from __future__ import annotations

import os
import shutil
import socket
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memrepro.data.io import read_json, write_json_atomic

LOCK_DIR = Path(".snakemake") / "locks"  # Snakemake's, relative to the working directory
HOLDER_PREFIX = "memrepro-holder-"


def process_identity(pid: int | None = None) -> dict[str, Any]:
    """What identifies a running process across pid reuse: host, pid, start time."""
    pid = os.getpid() if pid is None else pid
    return {"host": socket.gethostname(), "pid": pid, "started": start_time(pid)}


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (Linux /proc); None elsewhere."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])  # field 22; the name may hold spaces


def is_dead(identity: dict[str, Any]) -> bool:
    """True only when certain: on this host, and no process with that pid and start time."""
    if identity.get("host") != socket.gethostname():
        return False
    pid = identity["pid"]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        pass
    started = start_time(pid)
    return None not in (started, identity.get("started")) and started != identity["started"]


def record_lock_holder(
    results: str | Path = "", targets: Sequence[str] = (), lock_dir: Path = LOCK_DIR
) -> None:
    """Record this (Snakemake main) process, the lock files now present, when it began, its
    results directory and its targets: `onstart` (a run with --nolock has none, and records
    nothing)."""
    me = process_identity()
    locks = sorted(p.name for p in lock_dir.glob("*.lock"))
    if not locks:
        return
    began = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    what = {"began": began, "results": str(results), "targets": list(targets) or ["all"]}
    write_json_atomic(
        lock_dir / f"{HOLDER_PREFIX}{me['host']}-{me['pid']}.json", {**me, "locks": locks, **what}
    )


def live_run(results: str | Path, lock_dir: Path = LOCK_DIR) -> str | None:
    """What to say where a run that is not certainly dead holds the locks and writes `results`
    too; None where none does (Snakemake's own lock check still runs)."""
    if not any(lock_dir.glob("*.lock")):
        return None
    for path in sorted(lock_dir.glob(f"{HOLDER_PREFIX}*.json")):
        holder = read_json(path)
        if holder.get("results") == str(results) and not is_dead(holder):
            return live_run_message(holder)
    return None


def live_run_message(holder: dict[str, Any]) -> str:
    """One sentence on the live run, and the way to run beside it."""
    return (
        f"A live run is writing {holder['results']}: pid {holder['pid']} on {holder['host']}, "
        f"started {holder['began']}, targets {' '.join(holder['targets'])}. Wait for it to end, "
        "or write another results directory beside it: --config run=NAME."
    )


def release_stale_lock(lock_dir: Path = LOCK_DIR) -> list[dict[str, Any]]:
    """Remove `lock_dir` if its locks are certainly stale; returns the dead runs it recorded."""
    locks = {p.name for p in lock_dir.glob("*.lock")}
    holders = [read_json(p) for p in sorted(lock_dir.glob(f"{HOLDER_PREFIX}*.json"))]
    if not locks or not holders or not all(is_dead(h) for h in holders):
        return []
    if not locks <= {name for h in holders for name in h["locks"]}:
        return []  # a lock written after every recorded run started: perhaps a live run's
    shutil.rmtree(lock_dir)
    return holders
