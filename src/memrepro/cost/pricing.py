"""What pricing reads, worked out once per plan (`Pricing`): the config, its concrete systems, each
model's shape, the measured FLOP rate, the sizes of Mem-α's instances as the paper prints them and
the results directory whose training runs measured their responses."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memrepro import config as cfg
from memrepro.cost.responses import measured_response_tokens
from memrepro.report.flops import Qwen2Shape, published_shape


@dataclass(frozen=True)
class Pricing:
    """What pricing reads, worked out once per plan: the config, its concrete systems, each
    model's shape, the measured FLOP rate and the sizes of Mem-α's instances."""

    config: dict[str, Any]
    rate: float
    shapes: dict[str, Qwen2Shape | None]
    systems: dict[str, dict[str, Any]]
    instances: dict[str, dict[str, list[float]]]
    lengths: Path | None = None  # a results directory whose training runs measured responses

    @classmethod
    def of(cls, config: dict[str, Any], rate: float, lengths: Path | None = None) -> Pricing:
        paper = config["report"].get("memalpha_paper")
        instances = published_instances(cfg.load_yaml(Path(paper))) if paper else {}
        systems = cfg.eval_systems(config)
        return cls(config, rate, model_shapes(config), systems, instances, lengths)

    def response_tokens(self, run: str, stage: str, longest: int) -> float | None:
        """A training stage's measured mean response tokens in `lengths`, if it has any (each
        step's within 1..`longest`, the stage's longest response)."""
        if self.lengths is None:
            return None
        return measured_response_tokens(self.lengths / "checkpoints" / run / stage, longest)


def published_instances(paper: dict[str, Any]) -> dict[str, dict[str, list[float]]]:
    """Per Mem-α split, per source: [instances, chunks per instance, tokens per chunk, questions
    per instance] as the paper's Tables 6-8 print them (Table 7's decimals over Table 6's)."""
    stats: dict[str, dict[str, list[float]]] = {}
    for table in ("table6", "table7", "table8"):
        for split, part in paper.get(table, {}).get("splits", {}).items():
            stats.setdefault(split, {}).update(part["stats"])
    return stats


def model_shapes(config: dict[str, Any]) -> dict[str, Qwen2Shape | None]:
    """Each local model's shape: its downloaded config.json, else its family's published one
    (a hosted model has none: it runs on no GPU of ours); trained runs take their base's."""
    shapes: dict[str, Qwen2Shape | None] = {}
    for name, spec in config["models"].items():
        downloaded = cfg.model_dir(config, name) / "config.json"
        if spec.get("source") == "api":
            shapes[name] = None
        elif downloaded.is_file():
            shapes[name] = Qwen2Shape.from_config(json.loads(downloaded.read_text()))
        else:
            shapes[name] = published_shape(spec.get("id") or name)
    for run, spec in {**cfg.memagent_runs(config), **cfg.memalpha_runs(config)}.items():
        shapes[run] = shapes.get(spec["base"])
    return shapes
