"""Pricing of API calls: what a job asks of a hosted model (source `api`, on no GPU of ours):
its calls, tokens in and out, and dollars at the model's `price` where the config gives one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memrl.cost.work import Work


@dataclass(frozen=True)
class Usage:
    """What a job asks of a hosted model: calls, tokens in and out, dollars at its price."""

    calls: float
    input_tokens: float
    output_tokens: float
    usd: float | None  # None: the config gives the model no `price`

    @classmethod
    def of(cls, work: Work, price: dict[str, float] | None) -> Usage:
        calls = sum(n * len(c) for n, c in work)
        tokens_in = sum(n * prompt for n, c in work for prompt, _ in c)
        tokens_out = sum(n * output for n, c in work for _, output in c)
        usd = None
        if price is not None:
            usd = (tokens_in * price["input"] + tokens_out * price["output"]) / 1e6
        return cls(calls, tokens_in, tokens_out, usd)


def is_hosted(config: dict[str, Any], model: str | None) -> bool:
    """Whether a job's model is hosted (source `api`): it runs on no GPU of ours."""
    return model is not None and config["models"].get(model, {}).get("source") == "api"


def usage(config: dict[str, Any], model: str, work: Work) -> Usage:
    """A hosted model's calls in a job's work, at the model's `price` where the config gives one."""
    return Usage.of(work, config["models"][model].get("price"))
