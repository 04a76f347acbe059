"""Waiting for SLURM jobs on the test cluster, and running its commands."""

from __future__ import annotations

import subprocess
import time


def finished(job: str, timeout: float) -> tuple[str, str]:
    """Wait for a SLURM job to leave the queue; its (state, exit code) in accounting."""
    deadline = time.monotonic() + timeout
    while run("squeue", "-h", "-j", job).strip():
        assert time.monotonic() < deadline, f"SLURM job {job} still queued after {timeout} s"
        time.sleep(1)
    while True:  # the accounting record follows the job's end by a moment
        record = run("sacct", "-n", "-X", "-P", "-o", "State,ExitCode", "-j", job).strip()
        if record and not record.startswith(("RUNNING", "PENDING", "COMPLETING")):
            state, code = record.split("|")
            return state.split()[0], code
        assert time.monotonic() < deadline, f"no final accounting record for job {job}"
        time.sleep(1)


def run(*command: str) -> str:
    return subprocess.run(command, capture_output=True, text=True, check=True, timeout=60).stdout
