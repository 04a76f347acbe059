"""config/toy_memalpha.yaml: the Mem-α toy experiment's settings (`kind: memalpha`).

Sections: `seeds`, `workers`, `threads_per_worker` and `model`, `sft`, `eval` as in the MemAgent
toy (`memrepro.toy.config`), plus `task` (MemAlphaTaskSettings), `agent` (the memory policy's
budget), `expert` (the SFT teacher's noise), `reward` (the yardstick's β, γ) and `rl`: the CPU
trainer's settings and `variants`, the (β, γ) runs trained from every seed's warm start.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepro.config import ConfigError
from memrepro.toy.config import (
    RUN_KEYS,
    EvalSettings,
    ModelSettings,
    check_type,
    is_int,
    load_with,
    parse_section,
    run_keys,
    train_keywords,
)
from memrepro.toy.memalpha_policy import MemAlphaExpertSettings
from memrepro.toy.memalpha_task import MemAlphaTaskSettings
from memrepro.toy.sft import SFTSettings
from memrepro.train.cpu_trainer import TrainSettings

# TrainSettings fields the toy sets itself: Mem-α's GRPO normalises by the group's std and
# updates on a fixed number of rows; the chunk and memory budgets are MemAgent's.
DERIVED_TRAIN_KEYS = (
    "seed",
    "norm_adv_by_std",
    "mini_batches_per_step",
    "chunk_tokens",
    "memory_tokens",
    "final_tokens",
    "max_chunks",
)


@dataclass(frozen=True)
class MemAlphaAgentSettings:
    max_new_tokens: int = 48  # the longest expert write (a verbatim chunk) is 36 tokens
    visible_items: int = 5  # the official number of items shown per store

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1 or self.visible_items < 0:
            raise ValueError("agent: need max_new_tokens >= 1 and visible_items >= 0")


@dataclass(frozen=True)
class RewardWeights:
    beta: float  # compression (r3)
    gamma: float  # content (r4)

    def __post_init__(self) -> None:
        if self.beta < 0 or self.gamma < 0:
            raise ValueError(f"need beta, gamma >= 0, got {self.beta}, {self.gamma}")


@dataclass(frozen=True)
class MemAlphaRLSettings:
    rows: int  # training instances (their own seed)
    variants: dict[str, RewardWeights]  # name -> the (β, γ) that run trains with
    train: dict[str, Any]  # TrainSettings keyword arguments

    def train_settings(self, seed: int) -> TrainSettings:
        return TrainSettings(
            **self.train, seed=seed, norm_adv_by_std=True, mini_batches_per_step=None
        )


@dataclass(frozen=True)
class MemAlphaToyConfig:
    seeds: tuple[int, ...]
    rl: MemAlphaRLSettings
    workers: int = 1
    threads_per_worker: int = 1
    task: MemAlphaTaskSettings = field(default_factory=MemAlphaTaskSettings)
    agent: MemAlphaAgentSettings = field(default_factory=MemAlphaAgentSettings)
    model: ModelSettings = field(default_factory=ModelSettings)
    expert: MemAlphaExpertSettings = field(default_factory=MemAlphaExpertSettings)
    sft: SFTSettings = field(default_factory=SFTSettings)
    # the yardstick every policy is evaluated with (the paper's chosen β, γ)
    reward: RewardWeights = field(default_factory=lambda: RewardWeights(0.05, 0.1))
    eval: EvalSettings = field(default_factory=EvalSettings)


SECTIONS = {
    "task": MemAlphaTaskSettings,
    "agent": MemAlphaAgentSettings,
    "model": ModelSettings,
    "expert": MemAlphaExpertSettings,
    "sft": SFTSettings,
    "eval": EvalSettings,
}


def load_config(path: str | Path) -> MemAlphaToyConfig:
    """Read and check a Mem-α toy config; a ConfigError names the file and the key."""
    return load_with(path, parse_config)


def parse_config(raw: dict[str, Any]) -> MemAlphaToyConfig:
    if raw.get("kind") != "memalpha":
        raise ConfigError(f"kind must be memalpha, got {raw.get('kind')!r}")
    unknown = sorted(set(raw) - {*RUN_KEYS, "reward", "rl", *SECTIONS})
    if unknown:
        raise ConfigError(f"unknown key(s) {', '.join(unknown)}")
    sections = {name: parse_section(raw, name, cls) for name, cls in SECTIONS.items()}
    reward = raw.get("reward", {"beta": 0.05, "gamma": 0.1})
    return MemAlphaToyConfig(
        **run_keys(raw), **sections, reward=_weights("reward", reward), rl=_rl_section(raw)
    )


def _rl_section(raw: dict[str, Any]) -> MemAlphaRLSettings:
    values = raw.get("rl")
    if not isinstance(values, dict):
        raise ConfigError(f"rl must be a mapping, got {type(values).__name__}")
    values = dict(values)
    rows = values.pop("rows", 512)
    if not is_int(rows) or rows < 1:
        raise ConfigError(f"rl.rows must be an integer >= 1, got {rows!r}")
    variants = values.pop("variants", None)
    if not isinstance(variants, dict) or not variants:
        raise ConfigError("rl.variants must map run names to {beta, gamma}")
    settings = MemAlphaRLSettings(
        rows=rows,
        variants={name: _weights(f"rl.variants.{name}", w) for name, w in variants.items()},
        train=train_keywords(values, DERIVED_TRAIN_KEYS),
    )
    try:
        settings.train_settings(seed=0)
    except ValueError as exc:
        raise ConfigError(f"rl: {exc}") from None
    return settings


def _weights(where: str, values: Any) -> RewardWeights:
    names = [f.name for f in dataclasses.fields(RewardWeights)]
    if not isinstance(values, dict) or sorted(values) != sorted(names):
        raise ConfigError(f"{where} must be a mapping with exactly {', '.join(names)}")
    for name in names:
        check_type(f"{where}.{name}", values[name], 0.0)
    try:
        return RewardWeights(**values)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None
