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
"""

from __future__ import annotations

import os
import shutil
import socket
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


def record_lock_holder(lock_dir: Path = LOCK_DIR) -> None:
    """Record this (Snakemake main) process and the lock files now present: `onstart` (a run
    with --nolock has none, and records nothing)."""
    me = process_identity()
    locks = sorted(p.name for p in lock_dir.glob("*.lock"))
    if not locks:
        return
    write_json_atomic(
        lock_dir / f"{HOLDER_PREFIX}{me['host']}-{me['pid']}.json", {**me, "locks": locks}
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
