"""The SLURM path, for real (issue 15): a single-node SLURM cluster from Debian's packages
(`slurm_up.sh`: munge, MariaDB + slurmdbd, slurmctld, slurmd) runs a slice of the smoke DAG
(RULER-HQA synthesis -> the filter -> the document pool -> the eval set -> 2 evaluation shards
-> their merge) through the snakemake SLURM executor and the project's own SLURM profile,
overridden only where a test cluster differs (account, partition, no GPUs, no apptainer, a
laptop's memory). Every job goes through sbatch (sacct says so) and the outputs equal the same
slice run locally. Needs root; the cluster is stopped at the end."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from test_workflow import copy_workflow, snakemake

pytestmark = pytest.mark.cluster

HERE = Path(__file__).parent
SLICE = "results/smoke/eval/ruler_hqa/memagent-tiny-instruct/50.metrics.json"
ACCOUNT, PARTITION, MEM_MB = "memrl", "cpu", 2000  # slurm_up.sh's account and partition
# rules whose own `resources` ask for more memory than a test machine has
MEMORY_HUNGRY = (
    "synthesize_ruler_hqa",
    "filter_questions",
    "ruler_hqa_pool",
    "synthesize_eval",
    "synthesize_probe",
    "synthesize_ruler",
)
SUBMITTED = re.compile(r"has been submitted with SLURM jobid (\d+)")


@pytest.fixture(scope="module")
def cluster():
    if os.geteuid() != 0:
        pytest.skip("the SLURM test cluster needs root (CI runs make cluster-test as root)")
    subprocess.run(["bash", str(HERE / "slurm_up.sh")], check=True, timeout=900)
    try:
        yield
    finally:
        subprocess.run(["bash", str(HERE / "slurm_up.sh"), "down"], timeout=120)


def cluster_profile(repo: Path) -> dict:
    """profiles/slurm with only what a one-node CPU test cluster must change."""
    profile = yaml.safe_load((repo / "profiles/slurm/config.yaml").read_text())
    for key in ("software-deployment-method", "apptainer-args", "apptainer-prefix"):
        profile.pop(key)  # no apptainer here: the project virtualenv
    profile.update({"configfile": "config/smoke.yaml", "jobs": 4, "local-cores": 1})
    profile.update({"latency-wait": 5, "retries": 0})
    profile["default-resources"].update(slurm_account=ACCOUNT, runtime=30, mem_mb=MEM_MB)
    resources = {
        rule: {"slurm_partition": PARTITION, "runtime": 30, "mem_mb": MEM_MB}  # no GPU keys
        for rule in profile["set-resources"]
    }
    profile["set-resources"] = {**resources, **{r: {"mem_mb": MEM_MB} for r in MEMORY_HUNGRY}}
    return profile


def sacct_states(jobs: list[str]) -> dict[str, str]:
    done = subprocess.run(
        ["sacct", "-n", "-X", "-P", "-o", "JobID,State", "-j", ",".join(jobs)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return dict(line.split("|") for line in done.stdout.splitlines())


def test_a_smoke_slice_runs_through_sbatch_and_matches_the_local_run(cluster, repo, tmp_path):
    local, remote = tmp_path / "local", tmp_path / "slurm"
    for work in (local, remote):
        work.mkdir()
        copy_workflow(repo, work)
    profile = remote / "profiles/slurm-test"
    profile.mkdir()
    (profile / "config.yaml").write_text(yaml.safe_dump(cluster_profile(repo)))

    ran = snakemake("--profile", "profiles/smoke", SLICE, cwd=local)
    assert ran.returncode == 0, ran.stderr[-3000:]
    started = time.monotonic()
    ran = snakemake("--profile", "profiles/slurm-test", SLICE, cwd=remote)
    assert ran.returncode == 0, ran.stderr[-5000:]
    jobs = SUBMITTED.findall(ran.stdout + ran.stderr)
    # the slice's six compute jobs went through sbatch (downloads and the merge are localrules)
    assert len(jobs) == 6, (ran.stdout + ran.stderr)[-3000:]
    assert set(sacct_states(jobs).values()) == {"COMPLETED"}
    print(f"SLURM slice: {len(jobs)} sbatch jobs in {time.monotonic() - started:.0f} s")
    prefix = SLICE.removesuffix(".metrics.json")
    for suffix in (".metrics.json", ".predictions.jsonl"):
        ours, theirs = (work / f"{prefix}{suffix}" for work in (remote, local))
        assert ours.read_bytes() == theirs.read_bytes(), suffix
