"""Inference engines behind the one `ChatEngine` protocol (see base.py); pick one by name."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from memrepro.engines.base import ChatEngine, ChatRequest, Completion, SamplingParams

ENGINE_KINDS = ("hf", "vllm", "openai", "served")

__all__ = [
    "ENGINE_KINDS",
    "ChatEngine",
    "ChatRequest",
    "Completion",
    "SamplingParams",
    "make_engine",
]


def make_engine(kind: str, model_path: str, settings: dict[str, Any]) -> ChatEngine:
    """Build the engine `kind` for `model_path`; `settings` are its constructor's keyword options.

    For "openai", `model_path` is the served model name and also the default `tokenizer_path`;
    a hosted model's directory (model source `api`) names the model it stands for. "served"
    starts a vLLM server on `model_path` for the engine's lifetime (close() or process exit).
    Engines are imported here, lazily, so that using one never requires another's dependencies.
    """
    if kind == "hf":
        from memrepro.engines.hf import HFEngine

        factory: Callable[..., Any] = HFEngine.load
        args: dict[str, Any] = {"path": model_path}
    elif kind == "vllm":
        from memrepro.engines.vllm import VLLMEngine

        factory, args = VLLMEngine, {"model_path": model_path}
    elif kind == "openai":
        from memrepro.engines.openai import OpenAIEngine
        from memrepro.models.fetch import api_served_name

        served = api_served_name(model_path) or model_path
        factory, args = OpenAIEngine, {"model": served, "tokenizer_path": model_path}
    elif kind == "served":
        from memrepro.engines.served import ServedEngine

        factory, args = ServedEngine, {"model_path": model_path}
    else:
        raise ValueError(f"unknown engine kind {kind!r}; allowed: {', '.join(ENGINE_KINDS)}")
    allowed = set(inspect.signature(factory).parameters) - {"path", "model_path", "model"}
    unknown = sorted(set(settings) - allowed)
    if unknown:
        raise ValueError(
            f"unknown settings for engine {kind!r}: {', '.join(unknown)}; "
            f"allowed: {', '.join(sorted(allowed))}"
        )
    return factory(**{**args, **settings})
