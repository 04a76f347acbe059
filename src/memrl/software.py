"""What a job ran on: the versions of the libraries that shape its numbers, the accelerator, and
the container image when it ran in one. Read without importing any of those libraries (torch
alone takes seconds): versions from the installed distributions' metadata, torch's CUDA build
from its `version.py`, the GPUs from `nvidia-smi`."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

from memrl.digests import file_digest

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
CONTAINER_ENV = ("APPTAINER_CONTAINER", "SINGULARITY_CONTAINER")


def software_tags() -> dict[str, str]:
    """`python`, `pkg.<name>` per installed package, `torch.cuda`, `accelerator` and, inside a
    container, `container.image` and `container.digest`."""
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


def container_tags() -> dict[str, str]:
    """The Apptainer/Singularity image the job runs in, and its digest when it is readable."""
    image = next((os.environ[key] for key in CONTAINER_ENV if os.environ.get(key)), None)
    if image is None:
        return {}
    tags = {"container.image": image}
    if Path(image).is_file():
        tags["container.digest"] = file_digest(Path(image))
    return tags
