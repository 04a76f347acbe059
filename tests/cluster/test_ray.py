"""The Ray launcher, for real: workflow/scripts/ray_job.sh inside a 2-node allocation of
the SLURM test cluster (two hosts of their own: host names, IPs, process tables, /tmp) starts a
Ray cluster of the train environment, and a CPU driver checks the cluster's nodes and resources
and runs a task pinned to each node. Then its failure paths: a driver that fails, a worker that
cannot reach the head, a head that dies under the driver. Each ends the job with ray_job.sh's
message and a non-zero exit, in bounded time, with no Ray process left.

Every case runs with Ray from the train venv (.venv-verl) on PATH. A cluster in the train-cpu
image (`--container`, `make images`: srun on the host, each node's Ray and the driver in the image
through envs/podman/apptainer, each node with podman state of its own in its /tmp over the host's
image store, read-only, as images on a shared filesystem) runs the default launch and a failing
driver: what the image changes is where Ray and the driver run and how an exit status leaves the
container; the failure paths after that are the launcher's, the same either way (an image case
took 26 s here on 2026-11-29, about two minutes on a slower CI machine)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from slurm_jobs import HEAD, NODE_IP, WORKER, finished, run, sbatch

pytestmark = pytest.mark.cluster

GCS_PORT = 6379  # ray_job.sh's default MEMREPRO_RAY_PORT
JOB_TIMEOUT_S = 240  # no case may take longer: every wait in ray_job.sh is bounded
RAY_PROCESSES = r"ray/core/src/ray|ray start|symmetric-run|ray_driver\.py|default_worker"


TRAIN_IMAGE = "localhost/memrepro-train-cpu"


@pytest.fixture
def ray_way(request, repo, shared_dir) -> tuple[list[str], dict[str, str]]:
    """ray_job.sh's extra arguments and the job's environment for one way of running Ray."""
    if request.param == "venv":
        venv = repo / ".venv-verl" / "bin"
        assert (venv / "ray").exists(), "make cluster-test builds .venv-verl (Ray) first"
        return [], {"PATH": f"{venv}:{os.environ['PATH']}"}
    podman = shutil.which("podman")
    assert podman, "podman is not installed: apt-get install podman (envs/README.md)"
    exists = subprocess.run([podman, "image", "exists", TRAIN_IMAGE])
    assert exists.returncode == 0, f"{TRAIN_IMAGE} is not built: make images IMAGES=train-cpu"
    storage = shared_dir / "storage.conf"
    storage.write_text(
        '[storage]\ndriver = "overlay"\ngraphroot = "/tmp/podman/storage"\n'
        'runroot = "/tmp/podman/run"\n[storage.options]\n'
        'additionalimagestores = ["/var/lib/containers/storage"]\n'
    )
    conf = shared_dir / "containers.conf"
    base = Path(os.environ.get("CONTAINERS_CONF", repo / "envs/podman/containers.conf"))
    conf.write_text(
        base.read_text().replace("[engine]", '[engine]\ntmp_dir = "/tmp/podman/libpod"')
    )
    return ["--container", f"docker://{TRAIN_IMAGE}"], {
        "PATH": f"{os.environ['PATH']}:{repo / 'envs' / 'podman'}",  # apptainer: the shim
        "CONTAINERS_CONF": str(conf),
        "CONTAINERS_STORAGE_CONF": str(storage),
        "MEMREPRO_CONTAINER_ARGS": "",  # no --nv: the test nodes' GPUs are /dev/null
    }


def train_image_identity(repo: Path) -> dict:
    """What the train-cpu image's identity file holds: its environment and its lock's digest."""
    from memrepro.digests import file_digest

    return {"env": "train-cpu", "lock_digest": file_digest(repo / "envs/train-cpu.lock")}


def submit(repo: Path, work: Path, way, *driver_args: str, **env: str) -> tuple[str, Path]:
    """sbatch ray_job.sh with the CPU driver on both nodes; (job id, its output file)."""
    launcher_args, way_env = way
    script = work / "ray.sbatch"
    script.write_text(
        "#!/bin/bash\n"
        f"cd {repo}\n"
        "exec bash workflow/scripts/ray_job.sh --nodes 2 --gpus-per-node 1 "
        + " ".join(launcher_args)
        + " -- python tests/cluster/ray_driver.py --nodes 2 --gpus-per-node 1 "
        + " ".join(driver_args)
        + "\n"
    )
    out = work / "ray.out"
    job_env = {
        **os.environ,
        "RAY_USAGE_STATS_ENABLED": "0",  # nothing leaves the test cluster
        "MEMREPRO_RAY_WAIT": "30",
        "MEMREPRO_RAY_STOP_WAIT": "30",
        **way_env,
        **env,
    }
    job = sbatch(
        *("-N", "2", "--gpus-per-node=1", "-c", "2", "--mem=4000", "-t", "10"),
        *("-o", str(out), str(script)),
        env=job_env,
    )
    return job, out


def ray_processes() -> list[str]:
    """Ray's processes on any node (the nodes share this machine's process table)."""
    done = subprocess.run(["pgrep", "-af", RAY_PROCESSES], capture_output=True, text=True)
    return done.stdout.splitlines()


def assert_nothing_left() -> None:
    deadline = time.monotonic() + 30  # the job's end kills its steps' processes
    while ray_processes() and time.monotonic() < deadline:
        time.sleep(1)
    assert ray_processes() == []


def driver_report(out: Path) -> dict:
    found = re.search(r"^RAY_DRIVER (.*)$", out.read_text(), re.M)
    assert found, out.read_text()[-3000:]
    return json.loads(found.group(1))


@pytest.mark.parametrize(
    ("ray_way", "launch"),
    [("venv", "manual"), ("venv", "symmetric"), ("image", "manual")],
    indirect=["ray_way"],
)
def test_ray_spans_both_nodes_and_runs_a_task_on_each(cluster, repo, shared_dir, ray_way, launch):
    # symmetric: a worker outlives the head by a minute, until its raylet gives up on the GCS
    # (gcs_rpc_server_reconnect_timeout_s; lowering it kills the head's own symmetric-run, whose
    # driver connection outlives the GCS while `ray stop` waits)
    job, out = submit(repo, shared_dir, ray_way, MEMREPRO_RAY_LAUNCH=launch)
    assert finished(job, JOB_TIMEOUT_S) == ("COMPLETED", "0:0"), out.read_text()[-3000:]
    report = driver_report(out)
    assert report["driver"] == HEAD
    hosts = {task["host"]: task["ip"] for task in report["tasks"]}
    assert hosts == NODE_IP
    # the driver and a worker on each node read the train image's identity from inside it
    identity = train_image_identity(repo) if ray_way[0] else None
    assert [report["driver_image"], *(task["image"] for task in report["tasks"])] == [identity] * 3
    assert report["resources"]["GPU"] == 2 and report["resources"]["CPU"] == 4
    assert_nothing_left()


@pytest.mark.parametrize("ray_way", ["venv", "image"], indirect=True)
def test_a_failing_driver_fails_the_job_with_its_status(cluster, repo, shared_dir, ray_way):
    job, out = submit(repo, shared_dir, ray_way, "--fail")
    assert finished(job, JOB_TIMEOUT_S) == ("FAILED", "3:0")
    driver_report(out)  # it ran on a full cluster, then failed
    assert f"ray_job.sh: the command exited with status 3 on {HEAD}" in out.read_text()
    assert_nothing_left()


@pytest.mark.parametrize("ray_way", ["venv"], indirect=True)
def test_a_worker_that_cannot_reach_the_head_fails_the_job(cluster, repo, shared_dir, ray_way):
    # a firewall on the worker: no TCP to the head's GCS port
    nft = ["ip", "netns", "exec", WORKER, "nft"]
    run(*nft, "add table inet memrepro_test")
    try:
        run(*nft, "add chain inet memrepro_test out { type filter hook output priority 0 ; }")
        run(
            *nft,
            f"add rule inet memrepro_test out ip daddr {NODE_IP[HEAD]} tcp dport {GCS_PORT} drop",
        )
        job, out = submit(repo, shared_dir, ray_way, MEMREPRO_RAY_WAIT="20")
        state, _ = finished(job, JOB_TIMEOUT_S)
    finally:
        run(*nft, "delete table inet memrepro_test")
    log = out.read_text()
    assert state == "FAILED", log[-3000:]
    assert "RAY_DRIVER" not in log  # the driver never started
    assert re.search(
        rf"ray_job.sh: (Ray on {WORKER} exited .* while waiting for all 2 Ray nodes"
        r"|gave up waiting for all 2 Ray nodes .* after 20s)",
        log,
    ), log[-3000:]
    assert_nothing_left()


@pytest.mark.parametrize("ray_way", ["venv"], indirect=True)
def test_a_head_that_dies_under_the_driver_fails_the_job(cluster, repo, shared_dir, ray_way):
    job, out = submit(repo, shared_dir, ray_way, "--hold", "120")
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while not (out.exists() and "RAY_DRIVER" in out.read_text()):
        assert time.monotonic() < deadline, out.read_text()[-3000:] if out.exists() else job
        time.sleep(1)
    head_pids = set(run("ip", "netns", "pids", HEAD).split())
    gcs = [line.split()[0] for line in ray_processes() if "gcs_server" in line]
    killed = [pid for pid in gcs if pid in head_pids]
    assert len(killed) == 1, ray_processes()
    os.kill(int(killed[0]), 9)
    assert finished(job, JOB_TIMEOUT_S)[0] == "FAILED"
    assert f"ray_job.sh: Ray on {HEAD} exited (status 1) while the command was running" in (
        out.read_text()
    )
    assert_nothing_left()
