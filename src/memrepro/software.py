"""What a job ran on: the versions of the libraries that shape its numbers, the accelerator, and
the container image when it ran in one. Read without importing any of those libraries (torch
alone takes seconds): versions from the installed distributions' metadata, torch's CUDA build
from its `version.py`, the GPUs from `nvidia-smi`."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

from memrepro.digests import file_digest

# the distributions whose version can change a result (absent ones are left out)
PACKAGES = (
    "torch",
    "transformers",
    "tokenizers",
    "vllm",
    "verl",
    "ray",
    "numpy",
    "snakemake",
    "mlflow",
)
APPTAINER_ENV = ("APPTAINER_CONTAINER", "SINGULARITY_CONTAINER")  # the SIF file apptainer runs
# set by envs/podman/apptainer (the podman route): the image's reference, digest and id
PODMAN_ENV = {
    "container.image": "MEMREPRO_IMAGE",
    "container.digest": "MEMREPRO_IMAGE_DIGEST",
    "container.id": "MEMREPRO_IMAGE_ID",
}
LOCK_NAME = "memrepro.lock"  # an environment installed from a lock keeps a copy in its prefix
IMAGE_MARKER = Path("/opt/memrepro/image.json")  # every image's identity (envs/Containerfile)


def software_tags() -> dict[str, str]:
    """`python`, `pkg.<name>` per installed package, `torch.cuda`, `accelerator`, the
    environment's lock (`env.lock`, `env.lock.digest`) and the container (`container.image`:
    the image, or "none" with where the job ran)."""
    tags = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            tags[f"pkg.{name}"] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    cuda = torch_cuda_build()
    if cuda:
        tags["torch.cuda"] = cuda
    tags["accelerator"] = accelerator()
    tags.update(lock_tags())
    tags.update(container_tags())
    return tags


def torch_cuda_build() -> str | None:
    """The CUDA version torch was built for ("cpu" for a CPU build), without importing torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return None
    version_file = Path(spec.origin).with_name("version.py")
    try:
        text = version_file.read_text()
    except OSError:
        return None
    match = re.search(r"^cuda(?::\s*\S+)?\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
    return match.group(1) if match else "cpu"


def accelerator() -> str:
    """The GPUs `nvidia-smi` lists (name and memory, one entry per model with its count), else
    the CPU's model."""
    if shutil.which("nvidia-smi"):
        try:
            done = subprocess.run(
                ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=20,
            )
        except (OSError, subprocess.TimeoutExpired):
            done = None
        gpus = done.stdout.strip().splitlines() if done and done.returncode == 0 else []
        if gpus:
            return "; ".join(f"{gpus.count(g)} x {g}" for g in dict.fromkeys(gpus))
    return f"cpu: {cpu_model()} ({os.cpu_count()} cores)"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def lock_tags(prefix: Path | None = None) -> dict[str, str]:
    """The lock this Python environment was installed from (envs/envtool.py install), if any."""
    lock = (prefix or Path(sys.prefix)) / LOCK_NAME
    if not lock.is_file():
        return {"env.lock": f"none ({sys.prefix} was not installed from a lock)"}
    return {"env.lock": str(lock), "env.lock.digest": file_digest(lock)}


def container_tags(marker: Path = IMAGE_MARKER) -> dict[str, str]:
    """The image the job runs in, proven from inside: the identity file every image carries
    (`container.env`, `container.lock.digest`, written at build), then what the runtime says of
    it (an apptainer SIF file and its digest, or the podman route's reference, digest and id).
    Without that file the job ran in no image of ours: "none" with the environment's path,
    whatever the launcher's variables claim."""
    try:
        identity = json.loads(marker.read_text())
    except (OSError, ValueError):
        return {"container.image": f"none (ran in {sys.prefix})"}
    tags = {
        "container.env": str(identity.get("env")),
        "container.lock.digest": str(identity.get("lock_digest")),
    }
    sif = next((os.environ[key] for key in APPTAINER_ENV if os.environ.get(key)), None)
    if sif is not None:
        tags["container.image"] = sif
        if Path(sif).is_file():
            tags["container.digest"] = file_digest(Path(sif))
    elif os.environ.get(PODMAN_ENV["container.image"]):
        tags |= {tag: os.environ[key] for tag, key in PODMAN_ENV.items() if os.environ.get(key)}
    else:
        tags["container.image"] = f"an image of environment {tags['container.env']} (unnamed)"
    return tags
