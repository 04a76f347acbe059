"""The served engine: a real vLLM server (CPU build) started, used, killed and stopped; the
openai engine against it."""

from __future__ import annotations

import os
import signal
import subprocess
import urllib.request
from pathlib import Path

import pytest
from conftest import ask

from memrepro.engines import make_engine, server
from memrepro.engines.base import ChatRequest, SamplingParams, prompt_ids
from memrepro.engines.openai import OpenAIEngine
from memrepro.engines.served import SERVED_NAME, ServedEngine
from memrepro.engines.server import ServerError, group_alive

GREEDY = SamplingParams(temperature=0.0, top_p=1.0, seed=0)


def listening(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url.removesuffix('/v1')}/health", timeout=2):
            return True
    except OSError:
        return False


def test_served_engine_lifecycle_and_the_openai_engine_against_it(
    smollm2: Path, tmp_path: Path
) -> None:
    log = tmp_path / "qa.server.log"
    engine = make_engine("served", str(smollm2), {"log_path": log, "max_model_len": 2048})
    assert isinstance(engine, ServedEngine) and listening(engine.server.url)
    pgid = engine.server.process.pid
    requests = [
        ask("What is the capital of France?", 16),
        ChatRequest(
            (
                {"role": "user", "content": "What is the capital of France?"},
                {"role": "assistant", "content": "The capital of France is"},
            ),
            8,
            continue_final=True,
        ),
    ]
    done = engine.chat(requests, GREEDY)
    assert [c.failed for c in done] == [False, False]
    assert "Paris" in done[0].text and done[1].text.strip().startswith("Paris")
    assert done[0].prompt_ids == prompt_ids(engine.tokenizer, requests[0])
    # any OpenAI-compatible client of the same server: our openai engine, as for a remote one
    client = OpenAIEngine(SERVED_NAME, base_url=engine.server.url, tokenizer_path=str(smollm2))
    assert [c.text for c in client.chat(requests, GREEDY)] == [c.text for c in done]
    sampled = SamplingParams(temperature=1.0, top_p=1.0, seed=3)
    story = [ask("Write one sentence about a cat.", 16)] * 3
    assert [c.text for c in engine.chat(story, sampled)] == [
        c.text for c in engine.chat(story, sampled)
    ]
    engine.close()
    assert not listening(engine.server.url) and not group_alive(pgid)
    assert "Uvicorn running" in log.read_text() or "Application startup complete" in log.read_text()


def test_a_server_killed_mid_job_fails_the_job_naming_it(tiny: Path, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    engine = ServedEngine(str(tiny), log_path=log, max_retries=0)
    (first,) = engine.chat([ask("The ferry leaves at dawn.", 4)], GREEDY)
    assert not first.failed
    os.kill(engine.server.process.pid, signal.SIGKILL)  # the server dies (OOM killer, a node)
    engine.server.process.wait()
    with pytest.raises(ServerError, match=rf"exited with status -9(.|\n)*{log}"):
        engine.chat([ask("Where is the ferry?", 4)], GREEDY)
    engine.close()
    assert not group_alive(engine.server.process.pid)


def test_a_server_never_healthy_times_out_and_leaves_nothing(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[subprocess.Popen] = []
    popen = subprocess.Popen

    def recording(*args, **kwargs):
        started.append(popen(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(server.subprocess, "Popen", recording)
    with pytest.raises(ServerError, match=r"not healthy at .* after 3 s(.|\n)*server.log ends"):
        ServedEngine(str(tiny), log_path=tmp_path / "server.log", startup_s=3)
    (process,) = started
    assert process.returncode is not None and not group_alive(process.pid)
