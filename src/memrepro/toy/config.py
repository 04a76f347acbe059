"""config/toy.yaml: the toy experiment's settings, loaded into typed sections with clear errors.

Sections: `seeds`, `workers`, `threads_per_worker`, `task`, `agent`, `model`, `expert`, `sft`,
`rl`, `eval` (and `kind: memagent`, the default). Every key is optional except `seeds`; unknown keys
and bad values are errors that name the file and the key (`rl.lr`, ...). The section parsers
serve the Mem-α toy's config too (`memrepro.toy.memalpha_config`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepro.config import ConfigError, load_yaml
from memrepro.toy.policy import ExpertSettings
from memrepro.toy.sft import SFTSettings
from memrepro.toy.task import TaskSettings
from memrepro.train.cpu_trainer import TrainSettings

# TrainSettings fields the toy config sets itself (from `task`, `agent` and the seed)
DERIVED_TRAIN_KEYS = ("chunk_tokens", "memory_tokens", "final_tokens", "max_chunks", "seed")


@dataclass(frozen=True)
class AgentSettings:
    memory_tokens: int = 8  # a memory is one fact (5 tokens) + eos
    final_tokens: int = 8  # \boxed{7} is 5 tokens + eos

    def __post_init__(self) -> None:
        for name in ("memory_tokens", "final_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"agent.{name} must be >= 1, got {getattr(self, name)}")


@dataclass(frozen=True)
class ModelSettings:
    """Arguments of memrepro.models.tiny.build_tiny_model (the tokenizer is trained on the task)."""

    vocab_size: int = 1000
    hidden_size: int = 128
    num_layers: int = 2
    num_heads: int = 4
    num_kv_heads: int = 4
    intermediate_size: int = 256
    max_position_embeddings: int = 512
    initializer_range: float = 0.1  # Qwen2's 0.02 leaves this tiny model on a long plateau

    def __post_init__(self) -> None:
        for item in dataclasses.fields(self):
            if item.name != "initializer_range" and getattr(self, item.name) < 1:
                raise ValueError(f"model.{item.name} must be >= 1, got {getattr(self, item.name)}")
        if self.initializer_range <= 0:
            raise ValueError(f"model.initializer_range must be > 0, got {self.initializer_range}")
        if self.hidden_size % self.num_heads or self.num_heads % self.num_kv_heads:
            raise ValueError(
                "model: hidden_size must be a multiple of num_heads, and num_heads of num_kv_heads"
            )


@dataclass(frozen=True)
class EvalSettings:
    rows: int = 200  # fresh held-out questions (their own seed; none shares a training context)
    samples: int = 4  # sampled rollouts per question
    temperature: float = 1.0  # the rollout temperature: the policy RL optimises
    top_p: float = 1.0
    batch_size: int = 64  # HFEngine micro-batch

    def __post_init__(self) -> None:
        for name in ("rows", "samples", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"eval.{name} must be >= 1, got {getattr(self, name)}")
        if self.temperature <= 0 or not 0 < self.top_p <= 1:
            raise ValueError("eval: need temperature > 0 and 0 < top_p <= 1 (greedy is also run)")


@dataclass(frozen=True)
class RLSettings:
    rows: int = 512  # training questions for RL (their own seed)
    train: dict[str, Any] = field(default_factory=dict)  # TrainSettings keyword arguments

    def train_settings(self, task: TaskSettings, agent: AgentSettings, seed: int) -> TrainSettings:
        return TrainSettings(
            **self.train,
            chunk_tokens=task.chunk_tokens,
            memory_tokens=agent.memory_tokens,
            final_tokens=agent.final_tokens,
            max_chunks=task.n_chunks,
            seed=seed,
        )


@dataclass(frozen=True)
class ToyConfig:
    seeds: tuple[int, ...]
    workers: int = 1  # seeds run in parallel processes
    threads_per_worker: int = 1  # torch threads per process
    task: TaskSettings = field(default_factory=TaskSettings)
    agent: AgentSettings = field(default_factory=AgentSettings)
    model: ModelSettings = field(default_factory=ModelSettings)
    expert: ExpertSettings = field(default_factory=ExpertSettings)
    sft: SFTSettings = field(default_factory=SFTSettings)
    rl: RLSettings = field(default_factory=RLSettings)
    eval: EvalSettings = field(default_factory=EvalSettings)


SECTIONS = {
    "task": TaskSettings,
    "agent": AgentSettings,
    "model": ModelSettings,
    "expert": ExpertSettings,
    "sft": SFTSettings,
    "eval": EvalSettings,
}


def load_config(path: str | Path) -> ToyConfig:
    """Read and check a toy config; a ConfigError names the file and the offending key."""
    return load_with(path, parse_config)


def load_with(path: str | Path, parse: Callable[[dict[str, Any]], Any]) -> Any:
    """`parse` of the YAML file at `path`; its ConfigError is prefixed with the file."""
    raw = load_yaml(path)
    try:
        return parse(raw)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def parse_config(raw: dict[str, Any]) -> ToyConfig:
    if raw.get("kind", "memagent") != "memagent":
        raise ConfigError(f"kind must be memagent here, got {raw['kind']!r}")
    unknown = sorted(set(raw) - {*RUN_KEYS, "rl", *SECTIONS})
    if unknown:
        raise ConfigError(f"unknown key(s) {', '.join(unknown)}")
    sections = {name: parse_section(raw, name, cls) for name, cls in SECTIONS.items()}
    return ToyConfig(**run_keys(raw), **sections, rl=_rl_section(raw))


RUN_KEYS = ("kind", "seeds", "workers", "threads_per_worker")


def run_keys(raw: dict[str, Any]) -> dict[str, Any]:
    """`seeds` (required, distinct integers), `workers` and `threads_per_worker` (default 1);
    `kind` only names the experiment (`memrepro.toy.__main__`)."""
    seeds = raw.get("seeds")
    if not isinstance(seeds, list) or not seeds or not all(is_int(s) for s in seeds):
        raise ConfigError(f"seeds must be a non-empty list of integers, got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise ConfigError(f"seeds must be distinct, got {seeds}")
    top: dict[str, Any] = {"seeds": tuple(seeds)}
    for name in ("workers", "threads_per_worker"):
        value = raw.get(name, 1)
        if not is_int(value) or value < 1:
            raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")
        top[name] = value
    return top


def parse_section(raw: dict[str, Any], name: str, cls: type) -> Any:
    """`raw[name]` (a mapping, default {}) as the dataclass `cls`: unknown keys, wrong types and
    the class's own checks are ConfigErrors naming `name.key`."""
    values = raw.get(name) or {}
    if not isinstance(values, dict):
        raise ConfigError(f"{name} must be a mapping, got {type(values).__name__}")
    allowed = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(allowed))
    if unknown:
        raise ConfigError(f"{name}: unknown key(s) {', '.join(unknown)}")
    for key, value in values.items():
        check_type(f"{name}.{key}", value, allowed[key].default)
    try:
        return cls(**values)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _rl_section(raw: dict[str, Any]) -> RLSettings:
    values = dict(raw.get("rl") or {})
    if not isinstance(raw.get("rl") or {}, dict):
        raise ConfigError(f"rl must be a mapping, got {type(raw['rl']).__name__}")
    rows = values.pop("rows", RLSettings.rows)
    if not is_int(rows) or rows < 1:
        raise ConfigError(f"rl.rows must be an integer >= 1, got {rows!r}")
    settings = RLSettings(rows=rows, train=train_keywords(values, DERIVED_TRAIN_KEYS))
    try:
        settings.train_settings(TaskSettings(), AgentSettings(), seed=0)
    except ValueError as exc:
        raise ConfigError(f"rl: {exc}") from None
    return settings


def train_keywords(values: dict[str, Any], derived: Sequence[str]) -> dict[str, Any]:
    """`rl`'s TrainSettings keyword arguments, checked: none of `derived` (set by the toy
    itself), no unknown key, every required one, each of its default's type."""
    values = dict(values)
    fields = {f.name: f for f in dataclasses.fields(TrainSettings)}
    taken = sorted(set(values) & set(derived))
    if taken:
        raise ConfigError(f"rl: {', '.join(taken)} are set by the toy itself, not here")
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ConfigError(f"rl: unknown key(s) {', '.join(unknown)}")
    required = [name for name, f in fields.items() if f.default is dataclasses.MISSING]
    missing = sorted(set(required) - set(values) - set(derived))
    if missing:
        raise ConfigError(f"rl: missing key(s) {', '.join(missing)}")
    for key, value in values.items():
        if key == "betas":
            if not (isinstance(value, list) and len(value) == 2):
                raise ConfigError(f"rl.betas must be a list of two numbers, got {value!r}")
            values[key] = tuple(float(b) for b in value)
            continue
        default = fields[key].default
        if default is dataclasses.MISSING or default is None:  # lr is a float, the rest ints
            default = 1.0 if key == "lr" else 1
        check_type(f"rl.{key}", value, default)
    return values


def check_type(key: str, value: Any, default: Any) -> None:
    """Values take the type of their default (an int is accepted where a float is)."""
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int):
        ok = is_int(value)
    elif isinstance(default, float):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    else:
        ok = True
    if not ok:
        raise ConfigError(f"{key} must be a {type(default).__name__}, got {value!r}")


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
