"""The SLURM test cluster as slurm_up.sh builds it, and submitting to it and waiting on it."""

from __future__ import annotations

import subprocess
import time

from memrepro.slurm import job_state

ACCOUNT, PARTITION = "memrepro", "cpu"
HEAD, WORKER = "memrepro1", "memrepro2"  # the nodes
NODE_IP = {HEAD: "10.213.0.11", WORKER: "10.213.0.12"}
CONTROLLER_IP = "10.213.0.1"  # this host on the cluster's network


def sbatch(*args: str, env: dict[str, str]) -> str:
    """Submit with the test account and partition; the job id."""
    command = ["sbatch", "--parsable", "-A", ACCOUNT, "-p", PARTITION, *args]
    return run(*command, env=env).strip()


def accounting(jobs: list[str]) -> dict[str, tuple[str, str]]:
    """Each job's (state, exit code) in sacct; 'CANCELLED by 0' reads 'CANCELLED'."""
    records = run("sacct", "-n", "-X", "-P", "-o", "JobID,State,ExitCode", "-j", ",".join(jobs))
    rows = (line.split("|") for line in records.splitlines())
    return {job: (job_state(state), code) for job, state, code in rows}


def finished(job: str, timeout: float) -> tuple[str, str]:
    """Wait for a SLURM job to leave the queue; its (state, exit code) in accounting."""
    deadline = time.monotonic() + timeout
    while run("squeue", "-h", "-j", job).strip():
        assert time.monotonic() < deadline, f"SLURM job {job} still queued after {timeout} s"
        time.sleep(1)
    while True:  # the accounting record follows the job's end by a moment
        record = accounting([job]).get(job)
        if record and record[0] not in ("RUNNING", "PENDING", "COMPLETING"):
            return record
        assert time.monotonic() < deadline, f"no final accounting record for job {job}"
        time.sleep(1)


def run(*command: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env, timeout=60)
    return done.stdout
