"""The SLURM path, for real: the SLURM test cluster (`slurm_up.sh`: munge, MariaDB +
slurmdbd, slurmctld and two slurmd nodes, each a host of its own in network namespaces) runs a
slice of the smoke DAG (RULER-HQA synthesis -> the filter -> the document pool -> the eval set ->
2 evaluation shards -> their merge) through the snakemake SLURM executor and the project's own
SLURM profile, overridden only where a test cluster differs (account, partition, no GPUs, no
apptainer, a laptop's memory, no automatic retry). A job that exits 1 and one killed by scancel
are reported as failed (sacct agrees); the documented command, run again, resumes the slice,
submitting only what is missing, and its outputs equal the same slice run locally (the venv smoke
run `make test` kept, where CI has one). Every job goes through sbatch. Needs root; the cluster is
stopped at the end."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from slurm_jobs import ACCOUNT, PARTITION, accounting, run
from test_workflow import copy_workflow, kept_smoke, snakemake, snakemake_env

pytestmark = pytest.mark.cluster

SLICE = "results/smoke/eval/ruler_hqa/memagent-tiny-instruct/50.metrics.json"
MEM_MB = 2000
# rules whose own `resources` ask for more memory than a test machine has
MEMORY_HUNGRY = (
    "synthesize_ruler_hqa",
    "filter_questions",
    "ruler_hqa_pool",
    "synthesize_eval",
    "official_eval_set",
    "official_questions",
    "probe_set",
    "synthesize_ruler",
)
SUBMITTED = re.compile(r"has been submitted with SLURM jobid (\d+)")


def cluster_profile(repo: Path) -> dict:
    """profiles/slurm with only what the CPU test cluster must change."""
    profile = yaml.safe_load((repo / "profiles/slurm/config.yaml").read_text())
    for key in ("software-deployment-method", "apptainer-args", "apptainer-prefix"):
        profile.pop(key)  # no apptainer here: the project virtualenv
    profile.update({"configfile": "config/smoke.yaml", "jobs": 4, "local-cores": 1})
    # no retry, so a failure shows at once; job states polled every 5 s, not every 40+
    profile.update({"latency-wait": 5, "retries": 0, "slurm-init-seconds-before-status-checks": 5})
    profile["default-resources"].update(slurm_account=ACCOUNT, runtime=30, mem_mb=MEM_MB)
    resources = {
        rule: {"slurm_partition": PARTITION, "runtime": 30, "mem_mb": MEM_MB}  # no GPU keys
        for rule in profile["set-resources"]
    }
    profile["set-resources"] = {**resources, **{r: {"mem_mb": MEM_MB} for r in MEMORY_HUNGRY}}
    return profile


def failed_job(output: str, state: str) -> str:
    """The SLURM job the executor reported as failed with this state."""
    found = re.findall(rf"SLURM-job '(\d+)' failed, SLURM status is: '{state}'", output)
    assert len(found) == 1, output[-5000:]
    return found[0]


def cancel_when_running(snakemake_run: subprocess.Popen, rule: str) -> str:
    """scancel the first job of `rule` once it has run for a moment; its id."""
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline and snakemake_run.poll() is None:
        running = [
            line.split(" ", 1)
            for line in run("squeue", "-h", "-t", "RUNNING", "-o", "%i %k").splitlines()
        ]  # the plugin's comment: rule_<rule>[_wildcards_...]
        jobs = [
            job for job, comment in running if re.match(rf"rule_{rule}(_wildcards_|$)", comment)
        ]
        if jobs:
            time.sleep(2)
            run("scancel", jobs[0])
            return jobs[0]
        time.sleep(0.5)
    raise AssertionError(f"no {rule} job ran")


def local_run(repo: Path, work: Path) -> Path:
    """results/smoke of a local run of the slice: the kept smoke run, else one run in `work`."""
    if kept := kept_smoke():
        return kept
    copy_workflow(repo, work)
    ran = snakemake("--profile", "profiles/smoke", SLICE, cwd=work)
    assert ran.returncode == 0, ran.stderr[-3000:]
    return work / "results/smoke"


def test_a_smoke_slice_fails_visibly_resumes_and_matches_the_local_run(
    cluster, repo, tmp_path, shared_dir
):
    local = local_run(repo, tmp_path)
    remote = shared_dir  # the nodes see no one's /tmp but their own
    copy_workflow(repo, remote)
    profile = remote / "profiles/slurm-test"
    profile.mkdir()
    (profile / "config.yaml").write_text(yaml.safe_dump(cluster_profile(repo)))
    on_slurm = ("--profile", "profiles/slurm-test", SLICE)  # the documented command
    started = time.monotonic()

    # a job that exits 1: the released evaluation set it reads is corrupt
    raw = "results/smoke/raw/memagent_hotpotqa/eval_50.json"
    assert snakemake("--profile", "profiles/slurm-test", raw, cwd=remote).returncode == 0
    good = (remote / raw).read_bytes()
    (remote / raw).write_bytes(good[: len(good) // 2])
    ran = snakemake(*on_slurm, cwd=remote)
    assert ran.returncode != 0
    failed = failed_job(ran.stderr, "FAILED")
    assert accounting([failed]) == {failed: ("FAILED", "1:0")}
    assert "Error in rule official_eval_set" in ran.stderr
    (remote / raw).write_bytes(good)  # the user fixes the data

    # a job killed by scancel: the first evaluation shard, mid-way
    with subprocess.Popen(
        [sys.executable, "-m", "snakemake", *on_slurm],
        cwd=remote,
        env=snakemake_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as run:
        cancelled = cancel_when_running(run, "evaluate_shard")
        output = run.communicate(timeout=600)[0]
    assert run.returncode != 0
    assert failed_job(output, "CANCELLED") == cancelled
    assert accounting([cancelled])[cancelled][0] == "CANCELLED"

    # the same command again: only the cancelled shard is left to run
    ran = snakemake(*on_slurm, cwd=remote)
    assert ran.returncode == 0, ran.stderr[-5000:]
    jobs = SUBMITTED.findall(ran.stdout + ran.stderr)
    assert len(jobs) == 1, (ran.stdout + ran.stderr)[-3000:]
    assert accounting(jobs) == {jobs[0]: ("COMPLETED", "0:0")}
    print(f"SLURM slice with a failed and a cancelled job: {time.monotonic() - started:.0f} s")
    prefix = SLICE.removesuffix(".metrics.json")
    for suffix in (".metrics.json", ".predictions.jsonl"):
        ours = remote / f"{prefix}{suffix}"
        theirs = local / f"{prefix.removeprefix('results/smoke/')}{suffix}"
        assert ours.read_bytes() == theirs.read_bytes(), suffix
