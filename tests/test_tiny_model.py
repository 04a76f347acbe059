"""The tiny offline model: builds deterministically, loads like a Qwen2.5 checkpoint, generates."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer

from memrepro.engines.base import ChatRequest, SamplingParams
from memrepro.engines.hf import HFEngine
from memrepro.models.tiny import DEFAULT_SYSTEM_PROMPT, build_tiny_model

CORPUS = [
    "The lighthouse keeper of Varnholm painted the lamp room green every spring.",
    "Marisol Quent wrote three novels about the salt marshes near Edderby.",
    "Question: which river flows past the old mill at Tessaly? Answer: the Orrow.",
    "Document 4: The Brindle Observatory opened in 1911 and closed in 1978.",
    "Therefore, the answer is the Orrow.",
    "Updated memory: the observatory closed in 1978; the keeper painted the lamp green.",
    "Numbers like 42, 3.14 and 2048 appear too, with punctuation: (a), [b], {c}!",
] * 4


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", CORPUS)


@pytest.fixture(scope="module")
def engine(tiny: Path) -> HFEngine:
    return HFEngine.load(str(tiny), device="cpu", batch_size=2)


def user(text: str) -> tuple[dict[str, str], ...]:
    return ({"role": "user", "content": text},)


def test_build_is_deterministic_and_replaces_atomically(tmp_path: Path, tiny: Path) -> None:
    again = build_tiny_model(tmp_path / "model", CORPUS)
    first, second = load_file(tiny / "model.safetensors"), load_file(again / "model.safetensors")
    assert first.keys() == second.keys()
    assert all(torch.equal(first[k], second[k]) for k in first)
    assert (tiny / "tokenizer.json").read_bytes() == (again / "tokenizer.json").read_bytes()
    # Rebuilding over an existing directory replaces it and leaves no temporary siblings.
    (again / "stale.txt").write_text("old build")
    build_tiny_model(again, CORPUS, seed=1)
    assert not (again / "stale.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]
    changed = load_file(again / "model.safetensors")
    assert not all(torch.equal(first[k], changed[k]) for k in first)  # another seed


def test_loads_like_a_qwen_checkpoint(tiny: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny)
    model = AutoModelForCausalLM.from_pretrained(tiny)
    assert model.config.model_type == "qwen2"
    assert model.config.vocab_size == len(tokenizer)
    assert tokenizer.eos_token == "<|im_end|>"
    assert tokenizer.pad_token == "<|endoftext|>"
    assert sum(p.numel() for p in model.parameters()) < 2_000_000
    text = "Marisol Quent wrote <|im_start|> 1978 novels ünïcode 日本"
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert tokenizer.convert_tokens_to_ids("<|im_start|>") in ids  # special tokens stay whole
    assert tokenizer.decode(ids) == text


def test_chat_template_is_chatml_with_default_system_prompt(tiny: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny)
    rendered = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Where is Tessaly?"}],
        tokenize=False,
        add_generation_prompt=True,
    )
    assert rendered == (
        f"<|im_start|>system\n{DEFAULT_SYSTEM_PROMPT}<|im_end|>\n"
        "<|im_start|>user\nWhere is Tessaly?<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    conversation = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
    ]
    assert tokenizer.apply_chat_template(conversation, tokenize=False) == (
        "<|im_start|>system\nBe brief.<|im_end|>\n"
        "<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\nHello<|im_end|>\n"
    )


def test_hf_engine_end_to_end(engine: HFEngine) -> None:
    requests = [
        ChatRequest(user("Where is the mill?"), max_tokens=6),
        ChatRequest(user("When did the observatory close?"), max_tokens=3),
        ChatRequest(user("Who wrote about the marshes?"), max_tokens=6),
    ]
    sampling = SamplingParams(temperature=1.0, top_p=0.95, seed=7)
    completions = engine.chat(requests, sampling)
    assert len(completions) == 3
    for request, completion in zip(requests, completions, strict=True):
        assert not completion.failed
        assert 1 <= len(completion.response_ids) <= request.max_tokens
        expected_prompt = engine.tokenizer.apply_chat_template(
            list(request.messages), tokenize=False, add_generation_prompt=True
        )
        assert engine.tokenizer.decode(completion.prompt_ids) == expected_prompt
        content = [t for t in completion.response_ids if t not in engine.stop_ids]
        assert completion.text == engine.tokenizer.decode(content, skip_special_tokens=True)
    assert engine.chat(requests, sampling) == completions  # same seed, same samples
    other = engine.chat(requests, SamplingParams(temperature=1.0, top_p=0.95, seed=8))
    assert [c.response_ids for c in other] != [c.response_ids for c in completions]


def test_hf_engine_reports_a_failing_micro_batch(
    engine: HFEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_generate = engine.model.generate

    def generate(*args, generation_config, **kwargs):
        if generation_config.max_new_tokens == 4:
            raise RuntimeError("CUDA out of memory (simulated)")
        return real_generate(*args, generation_config=generation_config, **kwargs)

    monkeypatch.setattr(engine.model, "generate", generate)
    requests = [
        ChatRequest(user("a"), max_tokens=4),
        ChatRequest(user("b"), max_tokens=2),
        ChatRequest(user("c"), max_tokens=4),
    ]
    completions = engine.chat(requests, SamplingParams(seed=0))
    assert [c.failed for c in completions] == [True, False, True]
    assert "CUDA out of memory (simulated)" in (completions[0].error or "")
    assert completions[0].text == "" and completions[0].response_ids == []
    assert completions[0].prompt_ids  # the prompt is still reported
    assert len(completions[1].response_ids) in (1, 2)
