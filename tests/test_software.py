"""What a job ran on, read without importing the libraries it names."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from memrepro import software
from memrepro.digests import file_digest


def test_software_tags_name_the_installed_versions_and_import_nothing_heavy():
    script = (
        "import sys, json\n"
        "from memrepro.software import software_tags\n"
        "tags = software_tags()\n"
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules\n"
        "print(json.dumps(tags))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    tags = json.loads(done.stdout)
    assert tags["pkg.torch"] == importlib.metadata.version("torch")
    assert tags["pkg.transformers"] == importlib.metadata.version("transformers")
    assert tags["python"] == ".".join(map(str, sys.version_info[:3]))
    assert tags["torch.cuda"] == "cpu"  # this machine's wheel: torch==2.13.0+cpu
    assert "pkg.vllm" not in tags  # not installed in this venv: left out, not "unknown"
    assert tags["accelerator"].startswith("cpu: ")


def test_the_cuda_build_is_read_from_torch_version_file(tmp_path, monkeypatch):
    (tmp_path / "version.py").write_text(
        "__version__ = '2.13.0+cu128'\ncuda: Optional[str] = '12.8'\nhip = None\n"
    )
    spec = types.SimpleNamespace(origin=str(tmp_path / "__init__.py"))
    monkeypatch.setattr(software.importlib.util, "find_spec", lambda name: spec)
    assert software.torch_cuda_build() == "12.8"


def test_the_accelerator_counts_the_gpus_nvidia_smi_lists(tmp_path, monkeypatch):
    """No GPU here: a stand-in `nvidia-smi` prints what the real one prints on a 2-GPU box."""
    smi = tmp_path / "nvidia-smi"
    gpu = "echo 'NVIDIA H100 80GB HBM3, 81559 MiB'\n"
    smi.write_text(f"#!/bin/sh\n{gpu}{gpu}")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert software.accelerator() == "2 x NVIDIA H100 80GB HBM3, 81559 MiB"
    smi.write_text("#!/bin/sh\nexit 9\n")  # a driver that fails: the CPU, not an error
    assert software.accelerator().startswith("cpu: ")


@pytest.fixture
def inside_an_image(tmp_path) -> Path:
    """The identity file `envs/Containerfile` writes into every image."""
    marker = tmp_path / "image.json"
    marker.write_text('{"env": "core", "lock_digest": "sha256:' + "c" * 64 + '"}\n')
    return marker


def test_a_job_in_an_apptainer_image_names_the_sif_its_digest_and_the_images_lock(
    tmp_path, monkeypatch, inside_an_image
):
    image = tmp_path / "infer.sif"
    image.write_bytes(b"sif")
    monkeypatch.setenv("APPTAINER_CONTAINER", str(image))
    tags = software.container_tags(inside_an_image)
    assert tags["container.image"] == str(image)
    assert tags["container.digest"].startswith("sha256:6d27")
    assert tags["container.env"] == "core" and tags["container.lock.digest"].endswith("c" * 64)


def test_a_job_on_the_podman_route_names_the_image_its_launcher_passed(
    monkeypatch, inside_an_image
):
    monkeypatch.delenv("APPTAINER_CONTAINER", raising=False)
    monkeypatch.setenv("MEMREPRO_IMAGE", "localhost/memrepro-core")
    monkeypatch.setenv("MEMREPRO_IMAGE_DIGEST", "sha256:" + "a" * 64)
    monkeypatch.setenv("MEMREPRO_IMAGE_ID", "sha256:" + "b" * 64)
    assert software.container_tags(inside_an_image) == {
        "container.env": "core",
        "container.lock.digest": "sha256:" + "c" * 64,
        "container.image": "localhost/memrepro-core",
        "container.digest": "sha256:" + "a" * 64,
        "container.id": "sha256:" + "b" * 64,
    }


def test_a_job_on_the_host_claims_no_image_whatever_its_environment_says(tmp_path, monkeypatch):
    """The launcher's variables, or apptainer's, set on the host: no identity file, no image."""
    monkeypatch.setenv("APPTAINER_CONTAINER", str(tmp_path / "infer.sif"))
    monkeypatch.setenv("MEMREPRO_IMAGE", "localhost/memrepro-core")
    monkeypatch.setenv("MEMREPRO_IMAGE_DIGEST", "sha256:" + "a" * 64)
    none = {"container.image": f"none (ran in {sys.prefix})"}
    assert software.container_tags(tmp_path / "image.json") == none
    containerfile = Path(__file__).resolve().parents[1] / "envs/Containerfile"
    assert f"> {software.IMAGE_MARKER}\n" in containerfile.read_text()  # the file it writes
    assert software.container_tags() == none  # this machine is no image of ours


def test_the_lock_an_environment_was_installed_from_is_named_with_its_digest(tmp_path):
    assert software.lock_tags(tmp_path)["env.lock"].startswith("none (")
    (tmp_path / "memrepro.lock").write_text("torch==2.13.0+cpu\n")
    tags = software.lock_tags(tmp_path)
    assert tags["env.lock"] == str(tmp_path / "memrepro.lock")
    assert tags["env.lock.digest"] == file_digest(tmp_path / "memrepro.lock")
