"""An OpenAI-compatible model server for the lifetime of a job (Mem-α GRPO's frozen QA model and
judge, Qwen3-32B, served by vLLM next to the trainer inside the job's allocation; the `served`
engine of an evaluation job).

`served(command, port)` starts the server in its own process group, waits until its `/health`
answers 200 (failing early, with the log's tail, if the process exits or the wait times out),
yields its `/v1` base URL, and stops the whole group on the way out, whatever happened; a server
whose job dies without unwinding (SIGKILL) gets SIGTERM from the kernel. The address reaches the
client through that URL (the openai engine's `base_url`), never a hard-coded port.
`vllm_server_command` builds vLLM's command line from config settings.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

HEALTH_PATH = "/health"
POLL_SECONDS = 2.0
STOP_SECONDS = 30.0
LOG_TAIL_CHARS = 4000
PR_SET_PDEATHSIG = 1  # linux/prctl.h


class ServerError(RuntimeError):
    pass


def free_port(host: str = "127.0.0.1") -> int:
    """A port the OS reports free now (the server binds it moments later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def vllm_server_command(
    model: str | os.PathLike[str],
    served_name: str,
    port: int,
    host: str = "127.0.0.1",
    tensor_parallel_size: int = 1,
    gpu_memory_utilization: float = 0.9,
    max_model_len: int | None = None,
    dtype: str | None = None,
    enforce_eager: bool = False,
    enable_prefix_caching: bool | None = None,
    python: str = sys.executable,
) -> list[str]:
    """vLLM's OpenAI-compatible server for one model under the name its clients ask for.

    The server module through `python` (the job's interpreter, in the env that has vLLM) rather
    than the `vllm serve` script: the CPU build's script looks up the metadata of a package named
    `vllm` and fails, while the module runs the same server in both builds."""
    command = [
        python,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
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
    if dtype is not None:
        command += ["--dtype", dtype]
    if enforce_eager:
        command.append("--enforce-eager")
    if enable_prefix_caching is not None:
        command.append(
            "--enable-prefix-caching" if enable_prefix_caching else "--no-enable-prefix-caching"
        )
    return command


class Server:
    """A started server process (its own process group) that answered `/health` with 200.

    `url` is its `/v1` base URL; `stop()` ends the whole group; `check_alive()` raises ServerError
    with the exit status and the log's tail once the process has exited."""

    def __init__(
        self,
        command: Sequence[str],
        port: int,
        log_path: str | os.PathLike[str],
        host: str = "127.0.0.1",
        timeout: float = 1800.0,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.log_path = Path(log_path)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as sink:
            self.process = subprocess.Popen(
                list(command),
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=None if env is None else dict(env),
                preexec_fn=_terminate_with_parent,
            )
        self.url = f"http://{host}:{port}/v1"
        try:
            _wait_healthy(
                self.process, f"http://{host}:{port}{HEALTH_PATH}", self.log_path, timeout
            )
        except BaseException:
            self.stop()
            raise

    def check_alive(self) -> None:
        status = self.process.poll()
        if status is not None:
            raise ServerError(
                f"the model server exited with status {status} while in use; "
                f"{self.log_path} ends with:\n{tail(self.log_path)}"
            )

    def stop(self) -> None:
        _stop(self.process)


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
    server = Server(command, port, log_path, host, timeout, env)
    try:
        yield server.url
    finally:
        server.stop()


def _terminate_with_parent() -> None:
    """In the server's process, before exec: SIGTERM it when the job that started it dies (Linux's
    PR_SET_PDEATHSIG), so that a job killed outright leaves no server holding its GPUs."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _wait_healthy(
    process: subprocess.Popen[bytes], url: str, log_file: Path, timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise ServerError(
                f"the model server exited with status {process.returncode} before it was "
                f"healthy; {log_file} ends with:\n{tail(log_file)}"
            )
        if _healthy(url):
            return
        if time.monotonic() > deadline:
            raise ServerError(
                f"the model server was not healthy at {url} after {timeout:.0f} s; "
                f"{log_file} ends with:\n{tail(log_file)}"
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
    has exited); SIGKILL to whatever of the group lingers after STOP_SECONDS."""
    group = process.pid
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGTERM)
    deadline = time.monotonic() + STOP_SECONDS
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=STOP_SECONDS)
    while group_alive(group) and time.monotonic() < deadline:
        time.sleep(0.1)  # the workers finish their own shutdown
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)
    process.wait()


def group_alive(group: int) -> bool:
    """Whether any process of the process group `group` still exists."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def tail(path: Path) -> str:
    """The end of a server's log, for error messages."""
    text = path.read_text(errors="replace") if path.exists() else ""
    return text[-LOG_TAIL_CHARS:]
