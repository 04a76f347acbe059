#!/usr/bin/env python3
"""The software environments' one tool (standard library only: it runs before any environment
exists, on the host, in conda's post-deploy hook and inside an image's build).

    envtool.py lock [ENV ...]          resolve <env>.in into <env>.lock (uv, hashes) and write the
                                       conda file's pip section from it
    envtool.py lock --check [ENV ...]  resolve again into a scratch file: the committed lock's
                                       pins and hashes must come out line for line (CI: `make
                                       lock-check`); a change in `# via` comments only is printed
    envtool.py install ENV [--python PY]   install the lock into PY's environment (pip,
                                       hash-checked, nothing resolved again), record the lock beside
                                       it and add the `memrepro` launcher
    envtool.py launcher                write the `memrepro` launcher of the running Python's env
    envtool.py check ENV               inside an image or venv: the Python version, `pip freeze`
                                       equal to the lock, the imports, `memrepro --version`
    envtool.py digest ENV              the lock's digest (sha256 of the file)
    envtool.py build ENV [--base IMAGE]    build ENV's image from envs/Containerfile (podman or
                                       docker), labelled with the commit and the lock's digest

Definitions: environments.toml beside this file. README: envs/README.md.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ENVS = Path(__file__).resolve().parent
REPO = ENVS.parent
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
PLATFORM = "x86_64-manylinux_2_28"
LOCK_NAME = "memrepro.lock"  # the installed lock's copy in the environment's prefix
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)")


class EnvError(SystemExit):
    """A one-line error naming the file or environment and the fix."""

    def __init__(self, message: str) -> None:
        super().__init__(f"envtool: {message}")


def definitions() -> dict:
    with open(ENVS / "environments.toml", "rb") as handle:
        return tomllib.load(handle)


def environments() -> dict[str, dict]:
    return {name: env for name, env in definitions().items() if isinstance(env, dict)}


def environment(name: str) -> dict:
    envs = environments()
    if name not in envs:
        raise EnvError(
            f"no environment {name!r} in {ENVS / 'environments.toml'}: one of {list(envs)}"
        )
    return envs[name]


def lock_path(name: str) -> Path:
    return ENVS / f"{name}.lock"


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(text: str) -> dict[str, str]:
    """`{normalised name: version}` of a lock or `pip freeze` (hash and comment lines ignored)."""
    found = {}
    for line in text.splitlines():
        match = PIN.match(line.strip())
        if match:
            found[normalise(match.group(1))] = match.group(2)
    return found


def lock_digest(name: str) -> str:
    return "sha256:" + hashlib.sha256(lock_path(name).read_bytes()).hexdigest()


@functools.cache
def pip_settings() -> tuple[tuple[str, str], ...]:
    """pip's own configuration (`pip config list`) as (key, value) pairs, read once."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True
    )
    pairs = (line.partition("=") for line in done.stdout.splitlines())
    return tuple((key.strip(), value.strip().strip("'\"")) for key, _, value in pairs)


def pip_find_links() -> list[str]:
    """The local wheel directories that pip's own configuration names, if any."""
    links = [
        d for key, value in pip_settings() if key.endswith("find-links") for d in shlex.split(value)
    ]
    links += os.environ.get("PIP_FIND_LINKS", "").split()
    return [link for link in dict.fromkeys(links) if Path(link).is_dir()]


def local_torch_wheels() -> list[str]:
    """The local wheel directories pip is configured with that hold a CPU torch (machines that
    reach PyPI but not PyTorch's own index)."""
    return [d for d in pip_find_links() if any(Path(d).glob("torch-*+cpu-*.whl"))]


def uv_torch_sources() -> list[str]:
    local = local_torch_wheels()
    if local:
        return [arg for d in local for arg in ("--find-links", d)]
    return ["--extra-index-url", TORCH_CPU_INDEX, "--index-strategy", "unsafe-best-match"]


def pip_torch_sources() -> list[str]:
    """pip reads its configured wheel directories itself; otherwise PyTorch's CPU index."""
    return [] if local_torch_wheels() else ["--extra-index-url", TORCH_CPU_INDEX]


def compile_command(name: str, uv: str, output: Path | None = None) -> list[str]:
    env = environment(name)
    inputs = env.get("inputs", [f"envs/{name}.in"])
    command = [uv, "pip", "compile", *inputs, "--generate-hashes"]
    command += ["--python-version", env["python"], "--python-platform", PLATFORM]
    command += ["--custom-compile-command", f"make lock ENVS={name}", "--quiet"]
    command += ["--refresh"]  # the registry as it is now, not uv's cached index pages
    command += ["--exclude-newer", definitions()["exclude_newer"]]
    command += [arg for extra in env.get("extras", []) for arg in ("--extra", extra)]
    command += [arg for package in env.get("omit", []) for arg in ("--no-emit-package", package)]
    if env.get("cpu_torch"):
        command += uv_torch_sources()
    if "constraint" in env:
        command += ["--constraint", str(lock_path(env["constraint"]).relative_to(REPO))]
    output = output or lock_path(name).relative_to(REPO)
    return [*command, "--output-file", str(output)]


def lock(names: list[str], check: bool = False) -> None:
    uv = shutil.which("uv")
    if uv is None:
        raise EnvError("uv is not on PATH: run `make lock` (it uses .venv's uv)")
    env = {**os.environ, "SSL_CERT_FILE": os.environ.get("SSL_CERT_FILE", certificates())}
    stale = []
    with tempfile.TemporaryDirectory() as scratch:
        for name in resolution_order(names or list(environments())):
            output = Path(scratch) / f"{name}.lock" if check else None
            if check:  # uv keeps an existing output's pins: the check sees what `make lock` would
                shutil.copyfile(lock_path(name), output)
            command = compile_command(name, uv, output)
            print("+", shlex.join(command), flush=True)
            subprocess.run(command, cwd=REPO, check=True, env=env)
            if check and installable(output) != installable(lock_path(name)):
                stale.append(f"{name} ({lock_differences(lock_path(name), output)})")
            elif check and output.read_bytes() != lock_path(name).read_bytes():
                print(f"envtool: {name}: same pins and hashes, other comments (`make lock` renews)")
            elif not check and (ENVS / f"{name}.yaml").is_file():
                write_conda_file(name)
    if stale:
        raise EnvError(f"locks that resolve differently now: {'; '.join(stale)}: run `make lock`")


def installable(lock_file: Path) -> list[str]:
    """A lock's requirement and hash lines: what pip installs, without uv's `# via` comments (which
    change when a package the lock omits, such as torchaudio, changes its metadata upstream)."""
    lines = (line.strip() for line in lock_file.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def lock_differences(committed: Path, resolved: Path) -> str:
    old, new = pins(committed.read_text()), pins(resolved.read_text())
    names = sorted(set(old) | set(new))
    changed = [
        f"{p} {old.get(p, '-')} -> {new.get(p, '-')}" for p in names if old.get(p) != new.get(p)
    ]
    return ", ".join(changed[:10]) or "same pins, other hashes"


def resolution_order(names: list[str]) -> list[str]:
    """Each environment after the one whose lock constrains it."""
    ordered: list[str] = []

    def visit(name: str) -> None:
        constraint = environment(name).get("constraint")
        if constraint in names and constraint not in ordered:
            visit(constraint)
        if name not in ordered:
            ordered.append(name)

    for name in names:
        visit(name)
    return ordered


def certificates() -> str:
    """The system CA bundle (uv's own bundle does not know a site's TLS proxy)."""
    bundle = Path("/etc/ssl/certs/ca-certificates.crt")
    return str(bundle) if bundle.is_file() else ""


CONDA_MARKER = "  - pip:  # generated by `make lock` from"


def conda_file(name: str, text: str) -> str:
    """The conda file with its pip section replaced by the lock's pins (hashes stay in the lock:
    conda's pip section is a plain list)."""
    head = text.split(CONDA_MARKER)[0].rstrip("\n")
    lines = [f"{CONDA_MARKER} {name}.lock: edit {name}.in"]
    if environment(name).get("cpu_torch"):
        lines.append(f"      - --extra-index-url {TORCH_CPU_INDEX}")
    pinned = pins(lock_path(name).read_text())
    lines += [f"      - {package}=={version}" for package, version in pinned.items()]
    return head + "\n" + "\n".join(lines) + "\n"


def write_conda_file(name: str) -> None:
    path = ENVS / f"{name}.yaml"
    path.write_text(conda_file(name, path.read_text()))


def install(name: str, python: str) -> None:
    env = environment(name)
    lock_file = lock_path(name)
    if not lock_file.is_file():
        raise EnvError(f"{lock_file} is missing: run `make lock ENVS={name}`")
    command = [python, "-m", "pip", "install", "--no-deps", "--require-hashes", "--quiet"]
    if env.get("cpu_torch"):
        command += pip_torch_sources()
    subprocess.run([*command, "-r", str(lock_file)], check=True)
    prefix = subprocess.run(
        [python, "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True, check=True
    ).stdout.strip()
    shutil.copyfile(lock_file, Path(prefix) / LOCK_NAME)
    if name != "dev":  # the project virtualenv installs memrepro itself (editable)
        write_launcher(Path(prefix))


LAUNCHER = """#!/bin/sh
# memrepro from the working tree ($MEMREPRO_SRC, else ./src: jobs run in the repository root); the
# package is not installed in this environment (envs/README.md)
export PYTHONPATH="${{MEMREPRO_SRC:-$PWD/src}}${{PYTHONPATH:+:$PYTHONPATH}}"
exec "{python}" -m memrepro.cli "$@"
"""


def write_launcher(prefix: Path) -> None:
    launcher = prefix / "bin" / "memrepro"
    launcher.write_text(LAUNCHER.format(python=prefix / "bin" / "python"))
    launcher.chmod(0o755)


def freeze() -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--all", "--exclude-editable"],
        capture_output=True,
        text=True,
        check=True,
    )
    return pins(done.stdout)


VENV_TOOLS = ("pip", "setuptools", "wheel")  # a venv's own: pip freeze --all lists them


def freeze_differences(locked: dict[str, str], frozen: dict[str, str]) -> list[str]:
    """What `pip freeze` shows that the lock does not say (the venv's own tools aside)."""
    locked = {p: v for p, v in locked.items() if p not in VENV_TOOLS}
    frozen = {p: v for p, v in frozen.items() if p not in VENV_TOOLS}
    differ = [p for p, v in locked.items() if frozen.get(p) != v]
    lines = [f"{p}: locked {locked[p]}, installed {frozen.get(p, 'nothing')}" for p in differ]
    return lines + [
        f"{p}: installed {v}, not in the lock" for p, v in frozen.items() if p not in locked
    ]


def check(name: str) -> None:
    env = environment(name)
    prefix = Path(sys.prefix)
    lock_file = prefix / LOCK_NAME
    if not lock_file.is_file():
        raise EnvError(f"{lock_file} is missing: this environment was not installed from a lock")
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    if running != env["python"]:
        raise EnvError(
            f"{name} is locked for Python {env['python']}, but the base provides {running}: "
            "build on a base with that Python"
        )
    locked = pins(lock_file.read_text())
    wrong = freeze_differences(locked, freeze())
    if wrong:
        raise EnvError(f"{name}: pip freeze differs from {LOCK_NAME}: " + "; ".join(wrong))
    for module in env["imports"]:
        subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
    version = subprocess.run(
        [str(prefix / "bin" / "memrepro"), "--version"], capture_output=True, text=True
    )
    if version.returncode != 0:
        raise EnvError(f"memrepro --version failed in {name}: {version.stderr.strip()[-500:]}")
    print(
        json.dumps(
            {
                "env": name,
                "python": running,
                "packages": len(locked),
                "memrepro": version.stdout.strip(),
            }
        )
    )


IMAGE_PREFIX = "localhost/memrepro-"


def image_ref(name: str) -> str:
    return IMAGE_PREFIX + name


def container_engine() -> str:
    engine = shutil.which("podman") or shutil.which("docker")
    if engine is None:
        raise EnvError("neither podman nor docker is on PATH: install one (envs/README.md)")
    return engine


def pip_cert() -> str | None:
    """The CA bundle pip is configured with (a site's TLS proxy), if any."""
    found = [
        value for key, value in pip_settings() if key.endswith(".cert") and Path(value).is_file()
    ]
    return found[0] if found else os.environ.get("PIP_CERT")


def commit() -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True
        )
    except OSError:
        return "unknown"
    dirty = subprocess.run(
        ["git", "-C", str(REPO), "status", "--porcelain"], capture_output=True, text=True
    )
    head = done.stdout.strip() if done.returncode == 0 else "unknown"
    return head + ("-dirty" if head != "unknown" and dirty.stdout.strip() else "")


def build_command(name: str, engine: str, base: str | None, cache: bool = True) -> list[str]:
    env = environment(name)
    command = [engine, "build", "--file", str(ENVS / "Containerfile"), "--tag", image_ref(name)]
    command += [] if cache else ["--no-cache"]
    labels = {
        "org.opencontainers.image.title": f"memrepro-{name}",
        "org.opencontainers.image.revision": commit(),
        "memrepro.env": name,
        "memrepro.lock.digest": lock_digest(name),
        "memrepro.python": env["python"],
    }
    command += [arg for key, value in labels.items() for arg in ("--label", f"{key}={value}")]
    command += ["--build-arg", f"ENV={name}", "--build-arg", f"BASE={base or env['base']}"]
    command += ["--build-arg", f"PYTHON={env['python']}"]
    if Path(engine).name == "podman":  # build-time mounts: the host's pip wheels and CA bundle
        links = pip_find_links()
        command += [arg for d in links for arg in ("--volume", f"{d}:{d}:ro")]
        command += ["--build-arg", f"PIP_FIND_LINKS={' '.join(links)}"] if links else []
        cert = pip_cert()
        if cert:
            command += ["--volume", f"{cert}:{cert}:ro", "--build-arg", f"PIP_CERT={cert}"]
    return [*command, str(REPO)]


def build(name: str, base: str | None, cache: bool = True) -> None:
    command = build_command(name, container_engine(), base, cache)
    print("+", shlex.join(command), flush=True)
    subprocess.run(command, check=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    lock_parser = sub.add_parser("lock")
    lock_parser.add_argument("envs", nargs="*")
    lock_parser.add_argument("--check", action="store_true", help="compare, write nothing")
    install_parser = sub.add_parser("install")
    install_parser.add_argument("env")
    install_parser.add_argument("--python", default=sys.executable)
    sub.add_parser("launcher")
    sub.add_parser("check").add_argument("env")
    sub.add_parser("digest").add_argument("env")
    build_parser = sub.add_parser("build")
    build_parser.add_argument("env")
    build_parser.add_argument("--base", help="the base image (default: environments.toml's)")
    build_parser.add_argument("--no-cache", action="store_true", help="build every layer anew")
    args = parser.parse_args(argv)
    if args.command == "lock":
        lock(args.envs, check=args.check)
    elif args.command == "install":
        install(args.env, args.python)
    elif args.command == "launcher":
        write_launcher(Path(sys.prefix))
    elif args.command == "check":
        check(args.env)
    elif args.command == "build":
        build(args.env, args.base, cache=not args.no_cache)
    else:
        environment(args.env)
        print(lock_digest(args.env))


if __name__ == "__main__":
    main()
