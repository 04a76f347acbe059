"""Pricing of API calls: what a job asks of hosted models (source `api`, on no GPU of ours): its
engine's calls when its model is hosted, and those on hosted models beside it (an embedder, Mem0's
own LLM: `SystemKind.hosted_calls`); calls, tokens in and out, and dollars at each model's `price`
where the config gives one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memrepro.systems.base import Work


@dataclass(frozen=True)
class Usage:
    """What a job asks of hosted models: calls, tokens in and out, dollars at their prices."""

    calls: float
    input_tokens: float
    output_tokens: float
    usd: float | None  # None: the config gives one of the models no `price`

    @classmethod
    def of(cls, work: Work, price: dict[str, float] | None) -> Usage:
        calls = sum(n * len(c) for n, c in work)
        tokens_in = sum(n * prompt for n, c in work for prompt, _ in c)
        tokens_out = sum(n * output for n, c in work for _, output in c)
        usd = None
        if price is not None:
            usd = (tokens_in * price["input"] + tokens_out * price["output"]) / 1e6
        return cls(calls, tokens_in, tokens_out, usd)

    def __add__(self, other: Usage) -> Usage:
        usd = None if self.usd is None or other.usd is None else self.usd + other.usd
        return Usage(
            self.calls + other.calls,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            usd,
        )


def is_hosted(config: dict[str, Any], model: str | None) -> bool:
    """Whether a job's model is hosted (source `api`): it runs on no GPU of ours."""
    return model is not None and config["models"].get(model, {}).get("source") == "api"


def model_price(config: dict[str, Any], name: str) -> dict[str, float] | None:
    """A hosted model's `price`, by its `models` key or by the name the API serves it under
    (Mem0's and the retriever's models are named so); None where the config gives none."""
    models = config["models"]
    if name in models:
        return models[name].get("price")
    served = [spec for spec in models.values() if spec.get("served_name") == name]
    return served[0].get("price") if served else None


def usage(config: dict[str, Any], parts: Sequence[tuple[str, Work]]) -> Usage:
    """The calls of each (model, work) part, at the model's `price` where the config gives one."""
    total = Usage(0.0, 0.0, 0.0, 0.0)
    for model, work in parts:
        total += Usage.of(work, model_price(config, model))
    return total
