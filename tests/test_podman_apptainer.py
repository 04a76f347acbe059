"""envs/podman/apptainer: Snakemake's apptainer command lines mapped onto podman. The mapping is
checked here without podman; tests/containers run it for real against the built images."""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import shlex
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHIM = REPO / "envs" / "podman" / "apptainer"


def load_shim():
    loader = importlib.machinery.SourceFileLoader("podman_apptainer", str(SHIM))
    spec = importlib.util.spec_from_loader("podman_apptainer", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


shim = load_shim()


def snakemake_exec_args(workdir: str) -> list[str]:
    """What Snakemake 9.27's `singularity.shellcmd` runs after the binary, split as a shell does."""
    line = (
        f"--quiet --silent exec --home '{workdir}' --nv --bind '/data':'/mnt/data' "
        f"--bind '{workdir}/x' IMG.simg bash -c 'set -euo pipefail;  memrepro --version'"
    )
    return shlex.split(line)


def test_snakemakes_exec_line_parses_into_home_binds_flags_image_and_command():
    args = snakemake_exec_args("/work/p")
    assert args[:2] == ["--quiet", "--silent"]
    options, image, command = shim.parse_exec(args[3:])
    assert options["home"] == "/work/p"
    assert options["bind"] == ["/data:/mnt/data", "/work/p/x"]
    assert options["flags"] == {"--nv"}
    assert image == "IMG.simg"
    assert command == ["bash", "-c", "set -euo pipefail;  memrepro --version"]


@pytest.mark.parametrize(
    "args, named",
    [
        (["--fakeroot", "docker://x", "true"], "--fakeroot"),
        (["--overlay", "o.img", "docker://x", "true"], "--overlay"),
        (["--bind"], "--bind needs a value"),
        (["docker://x"], "needs an image and a command"),
    ],
)
def test_an_option_it_does_not_implement_is_refused_by_name(args, named):
    with pytest.raises(SystemExit, match=named.replace("-", r"\-")):
        shim.parse_exec(args)


def test_binds_become_podman_volumes_and_unknown_mount_options_are_refused():
    assert shim.volume("/a:/b:ro") == "/a:/b:ro"
    assert shim.volume("/a") == "/a:/a"
    with pytest.raises(SystemExit, match="mount option nosuid"):
        shim.volume("/a:/b:nosuid")


def test_the_job_gets_the_hosts_environment_less_host_paths_plus_apptainerenv(monkeypatch):
    monkeypatch.setenv("PATH", "/host/venv/bin:/usr/bin")
    monkeypatch.setenv("PYTHONPATH", "/host/site")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    monkeypatch.setenv("MEMREPRO_INVOCATION", "inv-1")
    monkeypatch.setenv("SINGULARITYENV_MEMREPRO_FOO", "bar")
    inside, args = shim.passed_environment(cleanenv=False)
    assert inside["OMP_NUM_THREADS"] == "2" and inside["MEMREPRO_INVOCATION"] == "inv-1"
    assert inside["MEMREPRO_FOO"] == "bar"
    assert {"PATH", "PYTHONPATH", "SINGULARITYENV_MEMREPRO_FOO"} & set(inside) == set()
    assert "--env" in args and "2" not in args  # passed by name: no value in the process list
    clean, _ = shim.passed_environment(cleanenv=True)
    assert clean == {"MEMREPRO_FOO": "bar"}


def test_an_image_is_a_docker_reference_or_a_file_pull_wrote_never_a_sif(tmp_path):
    assert shim.image_name("docker://localhost/memrepro-core") == "localhost/memrepro-core"
    pulled = tmp_path / "0a1b.simg"
    pulled.write_text(json.dumps({"image": "localhost/memrepro-core"}))
    assert shim.image_name(str(pulled)) == "localhost/memrepro-core"
    sif = tmp_path / "core.sif"
    sif.write_bytes(b"SIF_MAGIC\x00\xff")
    with pytest.raises(SystemExit, match="needs real apptainer"):
        shim.image_name(str(sif))
    with pytest.raises(SystemExit, match="not found"):
        shim.image_name(str(tmp_path / "missing.sif"))


def test_an_image_built_from_another_lock_is_named_stale_with_the_rebuild_command():
    lock = REPO / "envs" / "core.lock"
    current = "sha256:" + hashlib.sha256(lock.read_bytes()).hexdigest()
    assert shim.stale_lock({"memrepro.env": "core", "memrepro.lock.digest": current}) is None
    stale = shim.stale_lock({"memrepro.env": "core", "memrepro.lock.digest": "sha256:" + "0" * 64})
    assert "another core.lock" in stale and "make images IMAGES=core" in stale
    assert shim.stale_lock({}) is None  # an image not built by `make images`: nothing to compare


def test_known_podman_failures_on_vms_name_the_configuration_that_fixes_them():
    for seen in (
        "Error: crun: setrlimit `RLIMIT_NOFILE`: Operation not permitted",
        "Error: runc: error setting rlimit type 7: operation not permitted: OCI permission denied",
        "Error: crun: cgroups in hybrid mode not supported",
    ):
        message = shim.diagnose(seen)
        assert message.startswith(seen) and "CONTAINERS_CONF=" in message
    assert "CONTAINERS_CONF" not in shim.diagnose("Error: something else")


def test_an_unknown_subcommand_or_pull_form_is_refused():
    with pytest.raises(SystemExit, match="build is not implemented"):
        shim.main(["build", "x.sif", "x.def"])
    with pytest.raises(SystemExit, match="only docker://"):
        shim.main(["pull", "--name", "x.simg", "library://alpine"])
