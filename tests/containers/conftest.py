"""The built images (`make images BASE=local`), run for real through podman: `make container-tests`.
An image that is missing fails its tests (CI builds them first); nothing here is faked."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHIM = REPO / "envs" / "podman" / "apptainer"
IMAGES = ("core", "infer-cpu", "train-cpu")


def image(env: str) -> str:
    return f"localhost/memrepro-{env}"


@pytest.fixture(scope="session")
def podman() -> str:
    found = shutil.which("podman")
    assert found, "podman is not installed: apt-get install podman (envs/README.md)"
    return found


@pytest.fixture(scope="session")
def built(podman):
    """The images exist; a missing one fails with the command that builds it."""

    def check(env: str) -> str:
        done = subprocess.run([podman, "image", "exists", image(env)])
        assert done.returncode == 0, (
            f"{image(env)} is not built: make images BASE=local IMAGES={env}"
        )
        return image(env)

    return check


def shim(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(SHIM), *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
    )
