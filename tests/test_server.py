"""The job-lifetime model server: real processes on 127.0.0.1, stopped by every test."""

from __future__ import annotations

import os
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

from memrepro.engines import server
from memrepro.engines.server import ServerError, free_port, served, vllm_server_command

SERVER = textwrap.dedent(
    """
    import http.server, subprocess, sys, time
    port, mode, pid_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    open(pid_file, "w").write(str(child.pid))  # a worker in the server's process group
    if mode == "crash":
        print("CUDA out of memory (pretend)", flush=True)
        sys.exit(3)
    time.sleep(0.3)  # loading weights

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            status = 503 if mode == "unhealthy" else 200
            body = b'{"data": [{"id": "qwen3-32b"}]}'
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
    """
)


@pytest.fixture
def script(tmp_path, monkeypatch):
    monkeypatch.setattr(server, "POLL_SECONDS", 0.1)
    monkeypatch.setattr(server, "STOP_SECONDS", 5.0)
    path = tmp_path / "fake_server.py"
    path.write_text(SERVER)
    return path


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def command(script: Path, port: int, mode: str, pid_file: Path) -> list[str]:
    return [sys.executable, str(script), str(port), mode, str(pid_file)]


def test_a_healthy_server_is_used_then_stopped_with_its_workers(script, tmp_path):
    port, pids = free_port(), tmp_path / "child.pid"
    with served(command(script, port, "ok", pids), port, tmp_path / "server.log") as url:
        assert url == f"http://127.0.0.1:{port}/v1"
        with urllib.request.urlopen(f"{url}/models", timeout=5) as response:
            assert b"qwen3-32b" in response.read()
        child = int(pids.read_text())
        assert alive(child)
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
    for _ in range(50):  # the group got SIGTERM; the worker goes with it
        if not alive(child):
            break
        time.sleep(0.1)
    assert not alive(child)


def test_a_server_that_dies_while_loading_fails_with_its_log(script, tmp_path):
    port, pids = free_port(), tmp_path / "child.pid"
    crashing = served(command(script, port, "crash", pids), port, tmp_path / "server.log")
    expected = r"exited with status 3(.|\n)*CUDA out of memory"
    with pytest.raises(ServerError, match=expected), crashing:
        pytest.fail("the block must not run")


def test_a_server_never_healthy_times_out_and_is_stopped(script, tmp_path):
    port, pids = free_port(), tmp_path / "child.pid"
    unhealthy = served(
        command(script, port, "unhealthy", pids), port, tmp_path / "s.log", timeout=1.0
    )
    with pytest.raises(ServerError, match="not healthy"), unhealthy:
        pytest.fail("the block must not run")
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)


def test_vllm_server_command_names_the_model_as_the_reward_code_asks():
    argv = vllm_server_command("/m/qwen3-32b", "qwen3-32b", 8123, tensor_parallel_size=2)
    # the server module of the job's own interpreter: `vllm serve` fails in the CPU build
    assert argv[:5] == [
        sys.executable,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        "/m/qwen3-32b",
    ]
    pairs = dict(zip(argv[5::2], argv[6::2], strict=True))
    assert pairs == {
        "--served-model-name": "qwen3-32b",
        "--host": "127.0.0.1",
        "--port": "8123",
        "--tensor-parallel-size": "2",
        "--gpu-memory-utilization": "0.9",
    }
    assert vllm_server_command("m", "n", 1, max_model_len=32768)[-2:] == [
        "--max-model-len",
        "32768",
    ]
    cpu = vllm_server_command("m", "n", 1, dtype="float32", enforce_eager=True)
    assert cpu[-3:] == ["--dtype", "float32", "--enforce-eager"]
    assert vllm_server_command("m", "n", 1, enable_prefix_caching=False)[-1] == (
        "--no-enable-prefix-caching"
    )
