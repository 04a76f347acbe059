"""Downloads and checkpoints: model weights at 2 bytes per parameter, datasets where a manifest
records them, and the training states a verl run keeps (14 bytes per parameter each) plus its
merged model."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from memrepro import config as cfg
from memrepro.report.flops import Qwen2Shape, dense_parameters

BF16_BYTES, TRAINING_STATE_BYTES = 2, 14  # per parameter
GB = 1e9


def kept_states(settings: dict[str, Any]) -> int:
    """The training states a verl run keeps: its last `max_checkpoints`, or (a Mem-α recipe that
    keeps the best validated checkpoint) one per validation: every `every` steps and the last."""
    if settings.get("checkpoint") == "best":
        return math.ceil(settings["steps"] / settings["validation"]["every"])
    return settings["verl"]["max_checkpoints"] or 1


def _recorded_size(config: dict[str, Any], source: str) -> float:
    """A dataset's size in bytes where a manifest of an earlier download records it, else 0."""
    if source not in config["sources"]:
        return 0.0
    manifest = Path(f"{cfg.raw_file(config, source)}.manifest.json")
    if not manifest.is_file():
        return 0.0
    return float(json.loads(manifest.read_text()).get("bytes", 0))


def checkpoint_gb(settings: dict[str, Any], shape: Qwen2Shape | None) -> float:
    """A verl run's kept training states and its merged bf16 model, in GB; 0 for a model of no
    known shape."""
    if not shape:
        return 0.0
    bytes_per_parameter = kept_states(settings) * TRAINING_STATE_BYTES + BF16_BYTES
    return dense_parameters(shape) * bytes_per_parameter / GB


def weights_gb(shape: Qwen2Shape | None) -> float:
    """A model's download: its bf16 weights in GB; 0 for a model of no known shape."""
    return dense_parameters(shape) * BF16_BYTES / GB if shape else 0.0


def dataset_gb(config: dict[str, Any], source: str) -> float:
    """A dataset's download in GB, where a manifest records its size; else 0."""
    return _recorded_size(config, source) / GB
