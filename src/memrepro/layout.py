"""How a config lays out a run, read by every floor that reads a config (memrepro.config, the
benchmarks' data paths, the provenance records): its error, the results' paths, the training runs
and the models. Of memrepro it imports only memrepro.models' constant (lazily), so it sits on a low
floor, just above the models (ARCHITECTURE.md)."""

from __future__ import annotations

import hashlib
import json
import shlex
from pathlib import Path
from typing import Any

O200K = "o200k_base"  # tiktoken's encoding: Mem-α's memory counter (core cap, compression)


STAGES = ("stage1", "stage2")


MEMALPHA_STAGE = "grpo"  # a Mem-α run's one training stage


class ConfigError(ValueError):
    """A config that the schema or a cross-reference check rejects; the message names the key."""


def declared_context(model: dict[str, Any]) -> int | None:
    """A model's context length when the config knows it (a tiny model's is built from it)."""
    if model["source"] == "tiny":
        from memrepro.models import TINY_CONTEXT  # not memrepro.models.tiny: torch takes seconds

        return int(model.get("max_position_embeddings", TINY_CONTEXT))
    return model.get("max_position_embeddings")


def longbench_source(task: str) -> str:
    """The sources key of a LongBench config's parquet."""
    return f"longbench_{task}"


def results_dir(config: dict[str, Any]) -> Path:
    return Path("results") / config["run"]


def tracking_uri(config: dict[str, Any]) -> str:
    return config.get("tracking_uri") or f"sqlite:///{results_dir(config) / 'mlflow.db'}"


RAW_FORMATS = (".json", ".jsonl", ".parquet")


def raw_file(config: dict[str, Any], source: str) -> Path:
    """Where download_data puts a source: raw/<name> + the suffix of its url (RAW_FORMATS)."""
    url = config["sources"][source]["url"]
    suffix = Path(url.split("?", 1)[0]).suffix
    if suffix not in RAW_FORMATS:
        raise ConfigError(
            f"config key sources.{source}.url: must end in one of {RAW_FORMATS}, got {url!r}"
        )
    return results_dir(config) / "raw" / f"{source}{suffix}"


def checkpoint_dir(config: dict[str, Any], run: str, stage: str) -> Path:
    return results_dir(config) / "checkpoints" / run / stage


def memalpha_runs(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Mem-α training runs by name (none without a `memalpha.training` section)."""
    return config.get("memalpha", {}).get("training", {}).get("runs", {})


def memagent_runs(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """MemAgent's training runs by name: `training.runs`; with `training.seeds: N` each one's
    repeats `<run>-seed<k>` (k = 1 … N-1, trained at seeds shifted by k); and with
    `memory_ablation.retrain` one more per ablated run and setting, `<run>-m<M>-c<C>`, trained
    with those budgets."""
    runs = dict(config["training"]["runs"])
    for run, spec in config["training"]["runs"].items():
        for k in range(1, config["training"].get("seeds", 1)):
            runs[training_repeat(run, k)] = {**spec, "of": run, "seed_offset": k}
    ablation = config["evaluation"].get("memory_ablation")
    if ablation and ablation["retrain"]:
        systems = config["evaluation"]["systems"]
        for system in ablation["systems"]:
            run = systems[system]["model"]
            for memory, chunk in ablation["settings"]:
                if run in config["training"]["runs"]:
                    agent = {"memory_tokens": memory, "chunk_tokens": chunk}
                    variant = {**runs[run], "agent": agent, "of": run}  # `of`: its recipe's run
                    runs[ablation_name(run, memory, chunk, "-")] = variant
    return runs


def training_repeat(run: str, k: int) -> str:
    """The k-th repeat of a training run, at its seeds shifted by k."""
    return f"{run}-seed{k}"


def ablation_name(name: str, memory: int, chunk: int, separator: str = ".") -> str:
    """A memory-ablation variant of a system (`.`) or training run (`-`): m<M>-c<C>."""
    return f"{name}{separator}m{memory}-c{chunk}"


def trained_runs(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every training run by name: MemAgent's and Mem-α's (their names never collide)."""
    return {**memagent_runs(config), **memalpha_runs(config)}


def model_dir(config: dict[str, Any], name: str) -> Path:
    """A model's directory: a trained run's final checkpoint (MemAgent: stage II; Mem-α: its
    GRPO stage), or a fetched model."""
    if name in memagent_runs(config):
        return checkpoint_dir(config, name, STAGES[-1])
    if name in memalpha_runs(config):
        return checkpoint_dir(config, name, MEMALPHA_STAGE)
    if name in config["models"]:
        return results_dir(config) / "models" / name
    raise ConfigError(f"unknown model {name!r}")


def model_reproduces(config: dict[str, Any], name: str) -> bool:
    """Whether results of this model can be compared with the papers': not a tiny model (random
    weights), not one marked `reproduces: false`, nor a run trained from one of those."""
    run = trained_runs(config).get(name)
    if run is not None:
        return model_reproduces(config, run["base"])
    model = config["models"].get(name)
    if model is None:  # a system's model the cross-reference checks report
        return True
    return model["source"] != "tiny" and model.get("reproduces", True)


def uses_qa_server(config: dict[str, Any]) -> bool:
    """Mem-α GRPO on verl serves the frozen QA model / judge next to the trainer."""
    return config["training"]["backend"] == "verl"


def config_hash(config: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()


def infer_memrepro(config: dict[str, Any]) -> str:
    """The command that runs the infer jobs' `memrepro`: `infer_venv`'s, else the one on PATH."""
    venv = config.get("infer_venv")
    return shlex.quote(str(Path(venv) / "bin" / "memrepro")) if venv else "memrepro"


def qa_model(config: dict[str, Any]) -> str:
    """Mem-α's frozen QA model (and LongMemEval judge): a models key."""
    return config["memalpha"]["qa"]["model"]


MEMALPHA_SPLITS = ("train", "memalpha", "mab")  # Mem-α's: its training set, its two benchmarks
OPTIONAL_SPLITS = ("full",)  # the full training set: Table 6's training columns, where configured


def memalpha_splits(config: dict[str, Any]) -> list[str]:
    """Every `memalpha` split of this config (the optional ones it names)."""
    return [*MEMALPHA_SPLITS, *(s for s in OPTIONAL_SPLITS if s in config.get("memalpha", {}))]


def memalpha_data(config: dict[str, Any], split: str) -> Path:
    """The downloaded parquet of a `memalpha` split (train, memalpha = validation, mab)."""
    return raw_file(config, config["memalpha"][split]["source"])


def stats_file(config: dict[str, Any], split: str) -> Path:
    return results_dir(config) / "stats" / f"{split}.json"


def keyword_sets(config: dict[str, Any]) -> list[str]:
    """The data sources whose keyword golds this config rebuilds (Mem-α's Figure 4; optional)."""
    return list(config.get("keywords", {}).get("sets", {}))


def keywords_file(config: dict[str, Any], name: str) -> Path:
    return results_dir(config) / "keywords" / f"{name}.jsonl"


def keyword_inputs(config: dict[str, Any], name: str) -> dict[str, list[Path]]:
    """A rebuild's files: the originals' (`summaries`) and the released splits' parquets."""
    spec = config["keywords"]["sets"][name]
    return {
        "summaries": [raw_file(config, source) for source in spec["summaries"]],
        "released": [memalpha_data(config, split) for split in spec["released"]],
    }
