"""A real `mlflow server` for tests, started as documented and always stopped."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

STARTUP_S = 120  # the server's first start creates its database schema


def free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def serving(command: list[str], log_path: Path, url: str, cwd: Path | None = None):
    """Run an MLflow UI or server `command` until its `url`/health answers (failing with its log
    if it never does); stop it and its workers at the end, however the test ends."""
    log = log_path.open("w")
    process = subprocess.Popen(
        command, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"{shlex.join(command)} did not start:\n{log_path.read_text()}")
            time.sleep(0.5)
        yield
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # the server and its workers
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


@contextlib.contextmanager
def mlflow_server(root: Path, host: str):
    """`mlflow server` as documented (SQLite backend, served artifacts) on host; yields its URI."""
    port = free_port(host)
    command = [
        sys.executable, "-m", "mlflow", "server",
        "--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}",
        "--artifacts-destination", str(root / "artifacts"),
        "--serve-artifacts",
        "--host", host,
        "--port", str(port),
    ]  # fmt: skip
    uri = f"http://{host}:{port}"
    with serving(command, root / "server.log", uri):
        yield uri
