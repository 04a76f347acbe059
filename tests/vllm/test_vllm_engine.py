"""VLLMEngine on vLLM's CPU build against HFEngine on the same real model and prompts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import SMOLLM2, ask

from memrepro.engines.base import ChatRequest, SamplingParams, prompt_ids
from memrepro.engines.hf import HFEngine
from memrepro.engines.vllm import VLLMEngine

GREEDY = SamplingParams(temperature=0.0, top_p=1.0, seed=0)
QUESTIONS = [
    "What is the capital of France?",
    "Name three primary colors.",
    "Who wrote Romeo and Juliet?",
    "What is 2 plus 2?",
    "Translate 'hello' into Spanish.",
    "What is the boiling point of water in Celsius?",
]


@pytest.fixture(scope="module")
def vllm_engine(smollm2: Path) -> Iterator[VLLMEngine]:
    engine = VLLMEngine(str(smollm2), max_model_len=2048)
    yield engine
    engine.close()  # vLLM's engine-core process exits before another module starts one


@pytest.fixture(scope="module")
def hf_engine(smollm2: Path) -> HFEngine:
    return HFEngine.load(str(smollm2), device="cpu", batch_size=8)


def test_the_gguf_source_is_a_checksummed_model_directory(smollm2_entry: dict) -> None:
    assert smollm2_entry["gguf"]["sha256"] == SMOLLM2["sha256"]
    assert smollm2_entry["gguf"]["bytes"] == 98362432
    files = smollm2_entry["files"]
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= set(files)
    assert all(len(digest) == 64 for digest in files.values())


def test_cpu_defaults_are_float32_eager_and_a_ram_share(vllm_engine: VLLMEngine) -> None:
    config = vllm_engine.llm.llm_engine.vllm_config
    assert vllm_engine.device == "cpu"
    assert str(config.model_config.dtype) == "torch.float32"
    assert config.model_config.enforce_eager is True
    assert config.cache_config.gpu_memory_utilization == 0.3
    assert vllm_engine.max_model_len == 2048


def test_greedy_answers_equal_hf_in_float32(vllm_engine: VLLMEngine, hf_engine: HFEngine) -> None:
    """Same prompt ids, same greedy tokens: vLLM's CPU kernels and transformers agree in float32
    (in bfloat16, vLLM's CPU "auto", they do not: engines.vllm.device_defaults)."""
    requests = [ask(q, 24) for q in QUESTIONS]
    ours, reference = vllm_engine.chat(requests, GREEDY), hf_engine.chat(requests, GREEDY)
    for request, v, h in zip(requests, ours, reference, strict=True):
        assert not v.failed and not h.failed
        assert v.prompt_ids == h.prompt_ids == prompt_ids(hf_engine.tokenizer, request)
        assert v.response_ids[: len(h.response_ids)] == h.response_ids[: len(v.response_ids)]
        assert v.text == h.text
    assert "Paris" in ours[0].text and "4" in ours[3].text  # a real model answers


def test_prompt_ids_of_system_thinking_and_continued_turns(
    vllm_engine: VLLMEngine, hf_engine: HFEngine
) -> None:
    system = ChatRequest(
        ({"role": "system", "content": "Answer in one word."}, {"role": "user", "content": "Sky?"}),
        8,
    )
    thinking_off = ask("What is 2 plus 2?", 8, enable_thinking=False)
    prefill = ChatRequest(
        (
            {"role": "user", "content": "What is the capital of France?"},
            {"role": "assistant", "content": "The capital of France is"},
        ),
        8,
        continue_final=True,
    )
    requests = [system, thinking_off, prefill, ask("Name a fruit.", 8)]
    done = vllm_engine.chat(requests, GREEDY)
    for request, completion in zip(requests, done, strict=True):
        assert completion.prompt_ids == prompt_ids(vllm_engine.tokenizer, request)
    # the continued turn is left open: no end-of-turn after the prefill, the answer goes on
    prefill_ids = vllm_engine.tokenizer.encode("The capital of France is", add_special_tokens=False)
    assert done[2].prompt_ids[-len(prefill_ids) :] == prefill_ids
    assert done[2].text.strip().startswith("Paris")
    assert [c.text for c in hf_engine.chat(requests, GREEDY)] == [c.text for c in done]


def test_an_over_long_prompt_fails_alone(vllm_engine: VLLMEngine) -> None:
    long = ask("Repeat: " + "lorem ipsum dolor sit amet " * 500, 8)
    done = vllm_engine.chat([ask(QUESTIONS[0], 8), long, ask(QUESTIONS[3], 8)], GREEDY)
    assert [c.failed for c in done] == [False, True, False]
    assert "2048" in (done[1].error or "")  # the error names the limit
    assert "Paris" in done[0].text


def test_seeds_repeat_and_differ_per_request(vllm_engine: VLLMEngine) -> None:
    sampling = SamplingParams(temperature=1.0, top_p=1.0, seed=7)
    group = [ask("Write one sentence about a cat.", 24)] * 4
    first, again = vllm_engine.chat(group, sampling), vllm_engine.chat(group, sampling)
    assert [c.text for c in first] == [c.text for c in again]
    assert len({c.text for c in first}) > 1  # a GRPO group draws different samples
    other = vllm_engine.chat(group, SamplingParams(temperature=1.0, top_p=1.0, seed=8))
    assert [c.text for c in other] != [c.text for c in first]
