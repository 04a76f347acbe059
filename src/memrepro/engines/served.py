"""ChatEngine over a vLLM server that the engine itself starts on a local model and stops again:
Mem-α's frozen QA model as the official code reaches it (an OpenAI-compatible endpoint), inside
the evaluation job that needs it, with no server to run by hand.

The server is vLLM's OpenAI-compatible one in the job's own environment (GPU or CPU build), on
127.0.0.1 and a free port; requests go through the openai engine unchanged. It stops when the
engine is closed, when the process exits (however it unwinds: an error, Ctrl-C, SLURM's SIGTERM),
and, if the job is killed outright, by the kernel's parent-death signal (engines.server).

A server that dies mid-job fails the job with its exit status and the tail of its log: requests
to a dead server are not per-sample failures to retry later, and nothing they returned is used.
"""

from __future__ import annotations

import logging
import os
import tempfile
import weakref
from collections.abc import Sequence
from pathlib import Path

from memrepro.engines.base import ChatRequest, Completion, SamplingParams
from memrepro.engines.openai import DEFAULT_TIMEOUT_S, OpenAIEngine
from memrepro.engines.server import Server, free_port, vllm_server_command
from memrepro.engines.vllm import cpu_environment, vllm_device, with_device_defaults

log = logging.getLogger(__name__)

SERVED_NAME = "memrepro-served"  # the model's name on the private endpoint
DEFAULT_STARTUP_S = 1800.0  # a 32B model on a busy shared filesystem takes minutes to load


class ServedEngine:
    """`chat` through a private vLLM server on `model_path`, started here. `log_path` receives the
    server's output (a temporary file if None: its tail is in every error either way)."""

    def __init__(
        self,
        model_path: str,
        log_path: str | os.PathLike[str] | None = None,
        tensor_parallel_size: int = 1,
        max_model_len: int | None = None,
        enable_prefix_caching: bool = True,
        gpu_memory_utilization: float | None = None,
        dtype: str | None = None,
        enforce_eager: bool | None = None,
        concurrency: int = 64,
        max_retries: int = 3,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        startup_s: float = DEFAULT_STARTUP_S,
    ) -> None:
        port = free_port()
        device = vllm_device()
        command = vllm_server_command(
            model_path,
            SERVED_NAME,
            port,
            tensor_parallel_size=tensor_parallel_size,
            max_model_len=max_model_len,
            enable_prefix_caching=enable_prefix_caching,
            **with_device_defaults(
                device,
                gpu_memory_utilization=gpu_memory_utilization,
                enforce_eager=enforce_eager,
                dtype=dtype,
            ),
        )
        log_file = Path(log_path) if log_path is not None else _temporary_log()
        log.info("starting the model server (log: %s): %s", log_file, " ".join(command))
        environ = cpu_environment(device, dict(os.environ))
        self.server = Server(command, port, log_file, timeout=startup_s, env=environ)
        # stops the server when the engine is collected or the interpreter exits
        self._finalizer = weakref.finalize(self, self.server.stop)
        log.info("model server healthy at %s", self.server.url)
        self.client = OpenAIEngine(
            SERVED_NAME,
            base_url=self.server.url,
            api_key="EMPTY",
            concurrency=concurrency,
            max_retries=max_retries,
            tokenizer_path=model_path,
            timeout_s=timeout_s,
        )
        self.tokenizer = self.client.tokenizer

    def chat(self, requests: Sequence[ChatRequest], sampling: SamplingParams) -> list[Completion]:
        self.server.check_alive()
        done = self.client.chat(requests, sampling)
        if any(c.failed for c in done):
            self.server.check_alive()  # failures from a dead server fail the job, not samples
        return done

    def close(self) -> None:
        """Stop the server (and its workers); the engine cannot be used afterwards."""
        self._finalizer()


def _temporary_log() -> Path:
    fd, name = tempfile.mkstemp(prefix="memrepro-server-", suffix=".log")
    os.close(fd)
    return Path(name)
