"""One planned job's price, its parts put together: GPU-hours (estimate and allocation), the
hosted model's calls, and the downloads and checkpoints it writes."""

from __future__ import annotations

from dataclasses import dataclass

from memrepro.cost.api import Usage, is_hosted, usage
from memrepro.cost.gpu import allocation_gpu_hours, inference_gpu_hours, training_gpu_hours
from memrepro.cost.plan import PlannedJob
from memrepro.cost.pricing import Pricing
from memrepro.cost.storage import checkpoint_gb, dataset_gb, weights_gb
from memrepro.cost.training import TRAINING_RULES
from memrepro.cost.work import hosted_work, inference_work


@dataclass
class Price:
    rule: str
    estimate_gpu_h: float | None = None
    allocation_gpu_h: float | None = None
    download_gb: float = 0.0
    checkpoint_gb: float = 0.0
    gpu: bool = False
    measured: bool = False  # the estimate counts responses at a run's measured length
    hosted: bool = False  # it calls hosted models (source api): its own, or beside a local one
    api: Usage | None = None  # the hosted models' calls (None: no API job, or not modelled)


def price_job(job: PlannedJob, pricing: Pricing) -> Price:
    gpus = int(job.resources.get("gpu", 0) or 0)
    price = Price(job.rule, gpu=gpus > 0)
    price.allocation_gpu_h = allocation_gpu_hours(job.resources)
    config, shapes = pricing.config, pricing.shapes
    settings = job.settings or {}
    model, work = inference_work(job.rule, settings, pricing) if settings else (None, None)
    hosted = is_hosted(config, model)
    beside = hosted_work(job.rule, settings, pricing) if settings else []
    price.hosted = hosted or bool(beside)
    if price.hosted and not (hosted and work is None):  # every call modelled
        price.api = usage(config, [*([(model, work)] if hosted else []), *beside])
    if gpus and model is not None and not hosted:
        price.estimate_gpu_h = inference_gpu_hours(pricing, model, work)
    elif gpus and job.rule in TRAINING_RULES and settings:
        price.estimate_gpu_h, price.measured = training_gpu_hours(job.rule, settings, pricing)
    if job.rule in TRAINING_RULES and "verl" in settings:
        price.checkpoint_gb = checkpoint_gb(settings, shapes.get(settings["run"]))
    elif job.rule == "download_model":
        price.download_gb = weights_gb(shapes.get(job.wildcards.get("model", "")))
    elif job.rule == "download_data":
        price.download_gb = dataset_gb(config, job.wildcards.get("source", ""))
    return price
