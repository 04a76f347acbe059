"""Pricing of GPU work in GPU-hours: the estimate, a job's FLOPs at the FLOP rate measured for
prefill on one GPU (src/memrepro/measured/, by scripts/bench_gpu_throughput.py), and the allocation,
its runtime limit times the GPUs it requests (the profile's resources)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memrepro.cost.pricing import Pricing
from memrepro.cost.training import longest_response, training_job_flops, training_stage
from memrepro.cost.work import Work, forward_flops, work_flops
from memrepro.report.flops import published_shape

MEASURED = Path(__file__).resolve().parent.parent / "measured" / "gpu_throughput_h200.json"


def prefill_flop_rate(measured: dict[str, Any]) -> float:
    """FLOP/s the measured prefill points achieve: their forward FLOPs (causal attention, the
    decoder only) over their seconds, the median over every model and length."""
    rates = []
    for model in measured["models"]:
        shape = published_shape(f"qwen2.5-{model['shape']}")
        for point in model["prefill"]:
            if shape and "seconds" in point:
                rates.append(forward_flops(shape, [point["tokens"]]) / point["seconds"])
    if not rates:
        raise ValueError(f"{MEASURED}: no prefill measurement of a known shape")
    return sorted(rates)[len(rates) // 2]


def gpu_hours(flops: float | None, rate: float) -> float | None:
    return None if flops is None else flops / rate / 3600


def inference_gpu_hours(pricing: Pricing, model: str, work: Work | None) -> float | None:
    """An inference job's estimate: its calls' forward FLOPs on its model; None where the model
    has no known shape or the work is not modelled."""
    shape = pricing.shapes.get(model)
    flops = work_flops(shape, work) if shape and work is not None else None
    return gpu_hours(flops, pricing.rate)


def training_gpu_hours(
    rule: str, settings: dict[str, Any], pricing: Pricing
) -> tuple[float | None, bool]:
    """A training job's estimate (None where it is not modelled), and whether it counts the
    responses at the mean length its run measured (`--lengths`) instead of their budget."""
    stage, longest = training_stage(settings), longest_response(rule, settings)
    response_tokens = pricing.response_tokens(settings["run"], stage, longest)
    flops = training_job_flops(rule, settings, pricing, response_tokens)
    return gpu_hours(flops, pricing.rate), response_tokens is not None and flops is not None


def allocation_gpu_hours(resources: dict[str, str]) -> float | None:
    """A job's allocation: its runtime limit (minutes) times the GPUs it requests, the upper bound
    a scheduler would charge; None for a job on no GPU or without a runtime limit."""
    gpus = int(resources.get("gpu", 0) or 0)
    if gpus and "runtime" in resources:
        return int(resources["runtime"]) / 60 * gpus
    return None
