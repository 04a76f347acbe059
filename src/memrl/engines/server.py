"""An OpenAI-compatible model server for the lifetime of a job (Mem-α GRPO's frozen QA model and
judge, Qwen3-32B, served by vLLM next to the trainer inside the job's allocation).

`served(command, port)` starts the server in its own process group, waits until its `/health`
answers 200 (failing early, with the log's tail, if the process exits or the wait times out),
yields its `/v1` base URL, and stops the whole group on the way out, whatever happened. The
address reaches the reward code through that URL (the openai engine's `base_url`), never a
hard-coded port. `vllm_serve_command` builds vLLM's command line from config settings.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

HEALTH_PATH = "/health"
POLL_SECONDS = 2.0
STOP_SECONDS = 30.0
LOG_TAIL_CHARS = 4000


class ServerError(RuntimeError):
    pass


def free_port(host: str = "127.0.0.1") -> int:
    """A port the OS reports free now (the server binds it moments later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def vllm_serve_command(
    model: str | os.PathLike[str],
    served_name: str,
    port: int,
    host: str = "127.0.0.1",
    tensor_parallel_size: int = 1,
    gpu_memory_utilization: float = 0.9,
    max_model_len: int | None = None,
) -> list[str]:
    """`vllm serve` for one model under the name the reward code asks for."""
    command = [
        "vllm",
        "serve",
        str(model),
        "--served-model-name",
        served_name,
        "--host",
        host,
        "--port",
        str(port),
        "--tensor-parallel-size",
        str(tensor_parallel_size),
        "--gpu-memory-utilization",
        str(gpu_memory_utilization),
    ]
    if max_model_len is not None:
        command += ["--max-model-len", str(max_model_len)]
    return command


@contextlib.contextmanager
def served(
    command: Sequence[str],
    port: int,
    log_path: str | os.PathLike[str],
    host: str = "127.0.0.1",
    timeout: float = 1800.0,
    env: Mapping[str, str] | None = None,
) -> Iterator[str]:
    """Run `command` (a server listening on host:port; `env` its environment, else ours) while
    the block runs; yield its `/v1` URL once `/health` answers 200. Its output goes to
    `log_path`."""
    log_file = Path(log_path)
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("ab") as sink:
        process = subprocess.Popen(
            list(command),
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=None if env is None else dict(env),
        )
    try:
        _wait_healthy(process, f"http://{host}:{port}{HEALTH_PATH}", log_file, timeout)
        yield f"http://{host}:{port}/v1"
    finally:
        _stop(process)


def _wait_healthy(
    process: subprocess.Popen[bytes], url: str, log_file: Path, timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise ServerError(
                f"the model server exited with status {process.returncode} before it was "
                f"healthy; {log_file} ends with:\n{_tail(log_file)}"
            )
        if _healthy(url):
            return
        if time.monotonic() > deadline:
            raise ServerError(
                f"the model server was not healthy at {url} after {timeout:.0f} s; "
                f"{log_file} ends with:\n{_tail(log_file)}"
            )
        time.sleep(POLL_SECONDS)


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=POLL_SECONDS) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False  # not listening yet, or answering 503 while it loads


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the server's process group (vLLM's workers too, even when the server itself
    has exited), SIGKILL if it lingers."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _tail(path: Path) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    return text[-LOG_TAIL_CHARS:]
