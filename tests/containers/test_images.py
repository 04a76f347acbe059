"""Each image against its lock, `memrepro` inside without package metadata or git, and the podman
launcher's refusals, on the real images."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

import pytest
from conftest import IMAGES, REPO, SHIM, image, shim

pytestmark = pytest.mark.containers


def labels(podman: str, reference: str) -> dict[str, str]:
    done = subprocess.run(
        [podman, "image", "inspect", reference], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)[0]["Labels"]


@pytest.mark.parametrize("env", IMAGES)
def test_an_image_is_labelled_with_the_current_lock_and_passes_its_own_check(env, podman, built):
    reference = built(env)
    found = labels(podman, reference)
    lock = REPO / "envs" / f"{env}.lock"
    assert (
        found["memrepro.lock.digest"] == "sha256:" + hashlib.sha256(lock.read_bytes()).hexdigest()
    )
    assert found["memrepro.env"] == env and found["org.opencontainers.image.revision"]
    done = subprocess.run(
        [podman, "run", "--rm", "--network=none",
         "--volume", f"{REPO / 'src'}:/opt/memrepro/src:ro", "--env",
         "MEMREPRO_SRC=/opt/memrepro/src", reference, "python", "/opt/memrepro/envs/envtool.py",
         "check", env],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["env"] == env and report["memrepro"].startswith("memrepro 0.1.0 (commit unknown")


def test_a_freeze_that_differs_from_the_lock_fails_the_check_naming_the_package(podman, built):
    script = (
        "sed 's/^numpy==[^ ]*/numpy==0.0.1/' /opt/venv/memrepro.lock > /tmp/lock"
        " && cp /tmp/lock /opt/venv/memrepro.lock"
        " && python /opt/memrepro/envs/envtool.py check core"
    )
    done = subprocess.run(
        [podman, "run", "--rm", "--network=none", built("core"), "sh", "-c", script],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 1
    assert "numpy: locked 0.0.1, installed 2.4.6" in done.stderr


def test_memrepro_runs_in_the_image_from_the_working_tree_without_metadata_or_git(built):
    reference = built("core")
    bare = shim(
        "exec", "--home", str(REPO), f"docker://{reference}", "memrepro", "--version", cwd=REPO
    )
    assert bare.returncode == 0, bare.stderr
    assert bare.stdout.strip() == "memrepro 0.1.0 (commit unknown (no git here))"
    host = shim(
        "exec", f"docker://{reference}", "memrepro", "--version", cwd=REPO,
        env={"MEMREPRO_GIT_COMMIT": "0123456789abcdef", "MEMREPRO_GIT_DIRTY": "false"},
    )  # fmt: skip
    assert host.stdout.strip() == "memrepro 0.1.0 (commit 0123456789ab)"  # the host's, passed in


def test_a_job_sees_its_working_directory_home_and_environment_as_under_apptainer(tmp_path, built):
    reference = built("core")
    (tmp_path / "in.txt").write_text("from the host\n")
    done = shim(
        "--quiet", "--silent", "exec", "--home", str(tmp_path), f"docker://{reference}",
        "bash", "-c", 'cat in.txt >out.txt; echo "$HOME $PWD $OMP_NUM_THREADS $JOB_VAR" >>out.txt',
        cwd=tmp_path, env={"OMP_NUM_THREADS": "2", "APPTAINERENV_JOB_VAR": "set"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out.txt").read_text() == f"from the host\n{tmp_path} {tmp_path} 2 set\n"


def test_a_job_records_the_image_it_ran_in_with_its_digest(tmp_path, podman, built):
    reference = built("core")
    code = (
        "import json; from memrepro import software; print(json.dumps(software.container_tags()))"
    )
    done = shim(
        "exec", f"docker://{reference}", "env", "PYTHONPATH=src", "python", "-c", code, cwd=REPO
    )
    tags = json.loads(done.stdout)
    inspected = json.loads(
        subprocess.run(
            [podman, "image", "inspect", reference], capture_output=True, check=True
        ).stdout
    )[0]
    assert tags["container.image"] == reference
    assert tags["container.digest"] == inspected["Digest"]
    assert tags["container.id"] == "sha256:" + inspected["Id"]
    # read from the image's own identity file, which the build wrote: the label's lock digest
    labels = inspected["Labels"]
    assert (tags["container.env"], tags["container.lock.digest"]) == (
        labels["memrepro.env"],
        labels["memrepro.lock.digest"],
    )


def test_a_stale_image_a_missing_image_and_a_sif_are_refused_before_anything_runs(tmp_path, built):
    built("core")
    copy = tmp_path / "envs"
    (copy / "podman").mkdir(parents=True)
    shutil.copy(SHIM, copy / "podman" / "apptainer")
    (copy / "core.lock").write_text((REPO / "envs" / "core.lock").read_text() + "# edited\n")
    stale = subprocess.run(
        [str(copy / "podman" / "apptainer"), "exec", f"docker://{image('core')}", "touch", "ran"],
        cwd=tmp_path, capture_output=True, text=True,
    )  # fmt: skip
    assert stale.returncode == 1 and not (tmp_path / "ran").exists()
    assert "was built from another core.lock" in stale.stderr
    assert "make images IMAGES=core" in stale.stderr
    missing = shim("exec", "docker://localhost/memrepro-nothing", "true", cwd=tmp_path)
    assert "localhost/memrepro-nothing is not in podman's store" in missing.stderr
    option = shim("exec", "--writable-tmpfs", f"docker://{image('core')}", "true", cwd=tmp_path)
    assert "--writable-tmpfs is not implemented" in option.stderr


def test_a_job_sees_the_hosts_processes_and_ends_with_a_launcher_killed_outright(
    tmp_path, podman, built
):
    """As under apptainer, the job shares the host's process table (Ray finds its node's raylet
    there); podman's container outlives its client, so a launcher SIGKILLed (how srun ends a step)
    leaves a watcher that stops it."""
    reference = built("core")
    marker = f"memrepro-watch-{os.getpid()}"
    job = subprocess.Popen(
        [str(SHIM), "exec", f"docker://{reference}", "sh", "-c",
         f"grep -ls {marker}-hos[t] /proc/[0-9]*/cmdline >seen; exec sleep 300 # {marker}"],
        cwd=tmp_path,
    )  # fmt: skip
    host = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(300)", f"{marker}-host"]
    )
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "seen").exists() or not in_container(podman, marker):
            assert time.monotonic() < deadline and job.poll() is None
            time.sleep(0.5)
        job.kill()  # no signal handler runs, as when srun kills its step
        job.wait()
        deadline = time.monotonic() + 60
        while in_container(podman, marker):
            assert time.monotonic() < deadline, "the container outlived its killed launcher"
            time.sleep(1)
    finally:
        host.kill()
    assert (tmp_path / "seen").read_text().strip()  # the host's process, from inside


def in_container(podman: str, marker: str) -> bool:
    """Whether a running container's command carries `marker`."""
    listed = subprocess.run(
        [podman, "ps", "--no-trunc", "--format", "{{.Command}}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return marker in listed.stdout
