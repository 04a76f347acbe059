"""The SLURM test cluster (slurm_up.sh) for the tests that submit to it, and what they share."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
STATE = Path(os.environ.get("MEMREPRO_SLURM_STATE", "/var/lib/memrepro-slurm"))
NODE_PRIVATE = (Path("/tmp"), Path("/dev/shm"))  # each node mounts its own (slurm_up.sh)


@pytest.fixture(scope="session")
def cluster():
    """Two SLURM nodes (memrepro1, memrepro2), up for the session, stopped at its end."""
    if os.geteuid() != 0:
        pytest.skip("the SLURM test cluster needs root (CI runs make cluster-test as root)")
    private = next((d for d in NODE_PRIVATE if HERE.is_relative_to(d)), None)
    if private is not None:
        pytest.fail(
            f"the repository ({HERE.parents[1]}) is under {private}, which every test node "
            "mounts privately, as a real cluster's nodes do: clone it elsewhere (a shared "
            "filesystem) to run the cluster tests"
        )
    subprocess.run(["bash", str(HERE / "slurm_up.sh")], check=True, timeout=900)
    try:
        yield
    finally:
        subprocess.run(["bash", str(HERE / "slurm_up.sh"), "down"], timeout=120)


@pytest.fixture
def shared_dir(cluster, request):
    """A directory every node sees (each node's /tmp is its own, as on a real cluster)."""
    path = STATE / "work" / request.node.name
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)
