"""Engines: HF details on the tiny model, OpenAI against an injected fake client, vLLM's GPU-only
settings at its boundary, the factory. tests/vllm run vLLM itself (CPU build) and its server."""

from __future__ import annotations

import asyncio
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch

from memrepro.engines import make_engine
from memrepro.engines.base import ChatRequest, SamplingParams, prompt_ids
from memrepro.engines.hf import HFEngine
from memrepro.engines.openai import OpenAIEngine
from memrepro.engines.vllm import VLLMEngine
from memrepro.models.tiny import build_tiny_model

CORPUS = [
    "The ferry to Quillan Isle leaves at dawn and returns at dusk.",
    "Therefore, the answer is Quillan Isle.",
    "Updated memory: the ferry leaves at dawn.",
] * 3


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", CORPUS)


def ask(text: str, max_tokens: int = 4) -> ChatRequest:
    return ChatRequest(({"role": "user", "content": text},), max_tokens)


# --- HF ------------------------------------------------------------------------------------


def test_hf_cuts_at_first_eos_and_keeps_it_out_of_text(
    tiny: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = HFEngine.load(str(tiny), device="cpu", batch_size=4)
    tok = engine.tokenizer
    word = tok.encode("ferry", add_special_tokens=False)
    eos, pad = tok.eos_token_id, tok.pad_token_id
    tails = {
        2: [*word, eos, *word],  # stops at EOS, which is kept in the ids
        5: word + word,  # no EOS: the whole budget
    }

    def generate(input_ids, attention_mask, generation_config):
        width = input_ids.shape[1]
        tail = tails[generation_config.max_new_tokens]
        rows = [row[:width].tolist() + tail for row in input_ids]
        return torch.tensor(rows)

    monkeypatch.setattr(engine.model, "generate", generate)
    done = engine.chat([ask("x", 5), ask("y", 2)], SamplingParams(seed=0))
    assert done[0].response_ids == word + word and done[0].text == "ferryferry"
    assert done[1].response_ids == [*word, eos] and done[1].text == "ferry"
    tails[2] = [*word, pad, pad]  # padding (not a stop id here) ends the response too
    engine.stop_ids = frozenset({eos})
    assert engine.chat([ask("y", 2)], SamplingParams(seed=0))[0].response_ids == word


def test_hf_preserves_order_and_training_mode(tiny: Path) -> None:
    engine = HFEngine.load(str(tiny), device="cpu", batch_size=2)
    engine.model.train()
    requests = [ask("one", 3), ask("two", 1), ask("three", 3), ask("four", 1), ask("five", 2)]
    greedy = SamplingParams(temperature=0.0)
    batched = engine.chat(requests, greedy)
    assert engine.model.training  # restored after generation
    assert all(p.grad is None for p in engine.model.parameters())
    for request, completion in zip(requests, batched, strict=True):  # request order kept
        assert completion.prompt_ids == prompt_ids(engine.tokenizer, request)
        assert 1 <= len(completion.response_ids) <= request.max_tokens
    engine.model.eval()
    engine.chat(requests[:1], greedy)
    assert not engine.model.training


def test_hf_continues_a_prefilled_assistant_turn(tiny: Path) -> None:
    engine = HFEngine.load(str(tiny), device="cpu")
    fresh = ask("q", 2)
    prefill = {"role": "assistant", "content": "<think>m</think>"}
    continued = ChatRequest((*fresh.messages, prefill), 2, continue_final=True)
    opened = engine.tokenizer.decode(prompt_ids(engine.tokenizer, fresh))
    prompt = engine.tokenizer.decode(prompt_ids(engine.tokenizer, continued))
    assert prompt == opened + "<think>m</think>"  # the same turn, open, prefilled
    (done,) = engine.chat([continued], SamplingParams(temperature=0.0))
    assert done.prompt_ids == prompt_ids(engine.tokenizer, continued)
    assert 1 <= len(done.response_ids) <= 2


def test_hf_rejects_bad_arguments(tiny: Path) -> None:
    with pytest.raises(ValueError, match="device"):
        HFEngine.load(str(tiny), device="tpu")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dtype"):
        HFEngine.load(str(tiny), dtype="float99")
    engine = HFEngine.load(str(tiny), device="cpu")
    with pytest.raises(ValueError, match="batch_size"):
        HFEngine(engine.model, engine.tokenizer, batch_size=0)


# --- vLLM (fake module) --------------------------------------------------------------------


@dataclass
class FakeSample:
    text: str
    token_ids: list[int]


@dataclass
class FakeOutput:
    prompt_token_ids: list[int]
    outputs: list[FakeSample]


@dataclass
class FakeLLM:
    """vLLM's `LLM` on a multi-GPU machine: what cannot run here (tests/vllm run the rest)."""

    init: dict[str, Any]

    def __post_init__(self) -> None:
        actual = self.init.get("max_model_len", 32768)
        config = types.SimpleNamespace(max_model_len=actual)
        engine_core = types.SimpleNamespace(shutdown=lambda: None)
        self.llm_engine = types.SimpleNamespace(model_config=config, engine_core=engine_core)

    def get_tokenizer(self) -> str:
        return "fake-tokenizer"


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """A CUDA build of vLLM, at its boundary: `LLM(...)` and the platform it reports."""
    module = types.ModuleType("vllm")
    module.LLM = lambda **kwargs: FakeLLM(kwargs)  # type: ignore[attr-defined]
    platforms = types.ModuleType("vllm.platforms")
    platforms.current_platform = types.SimpleNamespace(is_cpu=lambda: False)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.setitem(sys.modules, "vllm.platforms", platforms)
    return module


def test_vllm_engine_gpu_settings_reach_vllm(fake_vllm: types.ModuleType) -> None:
    """Tensor parallelism, CUDA graphs and the GPU memory share: GPU-only, so at the boundary."""
    yarn = {"rope_parameters": {"rope_type": "yarn", "factor": 4.0}}
    engine = VLLMEngine(
        "/models/qwen", tensor_parallel_size=2, max_model_len=131072, hf_overrides=yarn, seed=3
    )
    assert engine.device == "cuda"
    assert engine.llm.init == {
        "model": "/models/qwen",
        "tensor_parallel_size": 2,
        "enable_prefix_caching": True,
        "gpu_memory_utilization": 0.9,
        "enforce_eager": False,
        "dtype": "auto",
        "seed": 3,
        "max_model_len": 131072,
        "hf_overrides": yarn,
    }
    tuned = VLLMEngine("/models/qwen", gpu_memory_utilization=0.5, enforce_eager=True)
    assert (tuned.llm.init["gpu_memory_utilization"], tuned.llm.init["enforce_eager"]) == (
        0.5,
        True,
    )


def test_device_defaults_fill_only_unset_settings() -> None:
    from memrepro.engines.vllm import with_device_defaults

    unset = {"gpu_memory_utilization": None, "enforce_eager": None}
    assert with_device_defaults("cpu", **unset) == {
        "gpu_memory_utilization": 0.3,
        "enforce_eager": True,
    }
    assert with_device_defaults("cuda", **unset) == {
        "gpu_memory_utilization": 0.9,
        "enforce_eager": False,
    }
    given = {"gpu_memory_utilization": 0.2, "enforce_eager": False}
    assert with_device_defaults("cpu", **given) == given


def test_vllm_processes_on_a_cpu_run_without_snakemakes_mkl_threads() -> None:
    from memrepro.engines.vllm import cpu_environment

    job = {"MKL_NUM_THREADS": "2", "OMP_NUM_THREADS": "2", "PATH": "/bin"}
    assert cpu_environment("cpu", job) == {"OMP_NUM_THREADS": "2", "PATH": "/bin"}
    assert cpu_environment("cuda", job) == job


# --- OpenAI (fake client) ------------------------------------------------------------------


class StatusError(Exception):
    def __init__(self, status_code: int) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


class FakeCompletions:
    """Answers "echo: <content>"; a content like "fail:500,500" fails with those statuses first."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.failures: dict[str, list[int]] = {}

    async def create(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0.001)
            content = kwargs["messages"][-1]["content"]
            if content.startswith("fail:"):
                queue = self.failures.setdefault(content, [int(s) for s in content[5:].split(",")])
                if queue:
                    raise StatusError(queue.pop(0))
            message = types.SimpleNamespace(content=f"echo: {content}")
            return types.SimpleNamespace(choices=[types.SimpleNamespace(message=message)])
        finally:
            self.in_flight -= 1


def fake_client() -> Any:
    completions = FakeCompletions()
    return types.SimpleNamespace(chat=types.SimpleNamespace(completions=completions))


def test_openai_engine_concurrency_mapping_and_retries(tiny: Path) -> None:
    client = fake_client()
    engine = OpenAIEngine(
        "served-model",
        concurrency=2,
        max_retries=2,
        tokenizer_path=str(tiny),
        retry_delay=0.0,
        client=client,
    )
    requests = [ask(f"q{i}", 8) for i in range(5)]
    requests += [ask("fail:500,503", 3), ask("fail:500,500,500"), ask("fail:400")]
    done = engine.chat(requests, SamplingParams(0.7, 0.95, seed=5))
    fake = client.chat.completions
    assert fake.max_in_flight == 2
    assert [c.text for c in done[:6]] == [*(f"echo: q{i}" for i in range(5)), "echo: fail:500,503"]
    assert done[0].response_ids == engine.tokenizer.encode("echo: q0", add_special_tokens=False)
    assert done[0].prompt_ids == prompt_ids(engine.tokenizer, requests[0])
    assert done[6].failed and "HTTP 500" in (done[6].error or "")
    assert done[7].failed and "HTTP 400" in (done[7].error or "")
    assert done[7].prompt_ids  # failures still carry their prompt
    attempts = [c["messages"][0]["content"] for c in fake.calls]
    assert attempts.count("fail:500,503") == 3  # two failures, then success
    assert attempts.count("fail:500,500,500") == 3  # 1 + max_retries, then give up
    assert attempts.count("fail:400") == 1  # not retryable
    first = next(c for c in fake.calls if c["messages"][0]["content"] == "q1")
    assert first == {
        "model": "served-model",
        "messages": [{"role": "user", "content": "q1"}],
        "max_tokens": 8,
        "temperature": 0.7,
        "top_p": 0.95,
        "seed": 6,
    }


def test_openai_engine_sends_the_chat_template_setting(tiny: Path) -> None:
    client = fake_client()
    engine = OpenAIEngine("served-model", tokenizer_path=str(tiny), client=client)
    off = ChatRequest(({"role": "user", "content": "q"},), 4, enable_thinking=False)
    engine.chat([off, ask("p")], SamplingParams())
    first, second = client.chat.completions.calls
    assert first["extra_body"] == {"chat_template_kwargs": {"enable_thinking": False}}
    assert "extra_body" not in second


def test_openai_engine_continues_a_prefilled_assistant_turn(tiny: Path) -> None:
    client = fake_client()
    engine = OpenAIEngine("served-model", tokenizer_path=str(tiny), client=client)
    messages = ({"role": "user", "content": "q"}, {"role": "assistant", "content": "<think>m"})
    (done,) = engine.chat([ChatRequest(messages, 4, continue_final=True)], SamplingParams())
    (call,) = client.chat.completions.calls
    assert call["extra_body"] == {"add_generation_prompt": False, "continue_final_message": True}
    prompt = engine.tokenizer.decode(done.prompt_ids)
    assert prompt.endswith("<|im_start|>assistant\n<think>m")  # no end-of-turn after it


def test_a_continued_request_must_end_with_an_assistant_turn() -> None:
    with pytest.raises(ValueError, match="assistant message last"):
        ChatRequest(({"role": "user", "content": "q"},), 4, continue_final=True)


def test_openai_engine_settings_from_env(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMREPRO_OPENAI_BASE_URL", "http://localhost:9999/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    engine = OpenAIEngine("m", tokenizer_path=str(tiny), client=fake_client())
    assert (engine.base_url, engine.api_key) == ("http://localhost:9999/v1", "sk-test")
    done = engine.chat([ask("hi")], SamplingParams(seed=None))
    assert "seed" not in engine.client.chat.completions.calls[0]
    assert done[0].text == "echo: hi"
    monkeypatch.delenv("MEMREPRO_OPENAI_BASE_URL")
    with pytest.raises(ValueError, match="MEMREPRO_OPENAI_BASE_URL"):
        OpenAIEngine("m", tokenizer_path=str(tiny))


# --- factory -------------------------------------------------------------------------------


def test_make_engine(tiny: Path, fake_vllm: types.ModuleType) -> None:
    hf = make_engine("hf", str(tiny), {"device": "cpu", "batch_size": 3})
    assert isinstance(hf, HFEngine) and hf.batch_size == 3
    vllm = make_engine("vllm", "/models/qwen", {"tensor_parallel_size": 4})
    assert isinstance(vllm, VLLMEngine) and vllm.llm.init["tensor_parallel_size"] == 4
    client = fake_client()
    openai = make_engine("openai", str(tiny), {"client": client, "concurrency": 8})
    assert isinstance(openai, OpenAIEngine) and openai.model == str(tiny)
    with pytest.raises(ValueError, match="allowed: hf, vllm, openai, served"):
        make_engine("llamacpp", str(tiny), {})
    with pytest.raises(ValueError, match=r"unknown settings for engine 'hf': temperature"):
        make_engine("hf", str(tiny), {"temperature": 0.5})


def test_a_hosted_model_is_a_tokenizer_directory_naming_the_served_model(
    tiny, tmp_path, monkeypatch
):
    import fnmatch
    import shutil

    import huggingface_hub

    from memrepro.engines import make_engine
    from memrepro.models.fetch import fetch_model

    def snapshot_download(repo_id, revision, local_dir, allow_patterns):
        for path in tiny.iterdir():  # the tokenizer files of the named repository, no weights
            if any(fnmatch.fnmatch(path.name, pattern) for pattern in allow_patterns):
                shutil.copy(path, local_dir / path.name)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    spec = {"source": "api", "served_name": "gpt-4.1-mini", "tokenizer": "org/tok", "gpus": 0}
    entry = fetch_model(spec, tmp_path / "gpt")
    assert "api_model.json" in entry["files"] and "tokenizer_config.json" in entry["files"]
    assert not any(name.endswith(".safetensors") for name in entry["files"])
    client = fake_client()
    engine = make_engine("openai", str(tmp_path / "gpt"), {"client": client, "vllm_server": False})
    off = ChatRequest(({"role": "user", "content": "q"},), 4, enable_thinking=False)
    (done,) = engine.chat([off], SamplingParams())
    (call,) = client.chat.completions.calls
    assert call["model"] == "gpt-4.1-mini" and "extra_body" not in call  # no chat template there
    assert done.text == "echo: q" and done.prompt_ids  # counted with the local tokenizer
    prefill = {"role": "assistant", "content": "<think>m"}
    with pytest.raises(ValueError, match="cannot continue a prefilled"):
        engine.chat(
            [ChatRequest((*off.messages, prefill), 4, continue_final=True)], SamplingParams()
        )
    with pytest.raises(ValueError, match="needs served_name, tokenizer"):
        fetch_model({"source": "api"}, tmp_path / "bad")
