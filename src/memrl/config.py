"""Load and validate a MemRL config, and expand it into the experiment matrix.

The Snakefile imports this module; every path, job list and per-job setting the DAG uses comes
from here, so the workflow rules stay thin and the logic stays testable.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import jsonschema
import yaml

STAGES = ("stage1", "stage2")


class ConfigError(ValueError):
    """A config that the schema or a cross-reference check rejects; the message names the key."""


def load_yaml(path: str | Path) -> dict[str, Any]:
    try:
        with open(path) as handle:
            data = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read config: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a config must be a mapping, got {type(data).__name__}")
    return data


def validate_config(config: dict[str, Any], schema_path: str | Path) -> None:
    """Validate against the workflow schema, then check that every cross-reference resolves."""
    schema = load_yaml(schema_path)
    errors = sorted(
        jsonschema.Draft202012Validator(schema).iter_errors(config), key=lambda e: list(e.path)
    )
    if errors:
        raise ConfigError(_describe(errors[0]))
    _check_references(config)


def _describe(error: jsonschema.ValidationError) -> str:
    key = ".".join(str(part) for part in error.absolute_path) or "<top level>"
    if error.validator == "additionalProperties":
        unknown = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        return f"config key {key}: unknown key(s) {', '.join(map(str, unknown))}"
    return f"config key {key}: {error.message}"


def _check_references(config: dict[str, Any]) -> None:
    models = set(config["models"])
    runs = set(config["training"]["runs"])
    if models & runs:
        raise ConfigError(f"training.runs: names also used in models: {sorted(models & runs)}")

    def require(key: str, name: str, allowed: set[str]) -> None:
        if name not in allowed:
            raise ConfigError(
                f"config key {key}: unknown model {name!r} (known: {sorted(allowed)})"
            )

    for source in config["sources"]:
        raw_file(config, source)
    mix = config["training"]["stage2_data"]
    if mix["source"] not in config["sources"]:
        raise ConfigError(
            f"config key training.stage2_data.source: unknown source {mix['source']!r} "
            f"(known: {sorted(config['sources'])})"
        )
    window = config["training"]["stage2"]["max_chunks"] * config["agent"]["chunk_tokens"]
    if mix["max_context_tokens"] > window:
        raise ConfigError(
            "config key training.stage2_data.max_context_tokens: "
            f"{mix['max_context_tokens']} exceeds stage2.max_chunks x agent.chunk_tokens = {window}"
            " (longer rows would be center-truncated, often cutting out the evidence)"
        )
    require("ruler_hqa.tokenizer", config["ruler_hqa"]["tokenizer"], models)
    for i, name in enumerate(config["filter"]["models"]):
        require(f"filter.models.{i}", name, models)
    for run, spec in config["training"]["runs"].items():
        require(f"training.runs.{run}.base", spec["base"], models)
    for system, spec in config["evaluation"]["systems"].items():
        require(f"evaluation.systems.{system}.model", spec["model"], models | runs)
    ruler = config["ruler_hqa"]
    if ruler["eval_questions"] > config["filter"]["keep_dev"]:
        raise ConfigError("config key ruler_hqa.eval_questions: exceeds filter.keep_dev")


# --- paths -------------------------------------------------------------------------------------


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


def model_dir(config: dict[str, Any], name: str) -> Path:
    """A model's directory: a trained run's final (stage II) checkpoint, or a fetched model."""
    if name in config["training"]["runs"]:
        return checkpoint_dir(config, name, STAGES[-1])
    if name in config["models"]:
        return results_dir(config) / "models" / name
    raise ConfigError(f"unknown model {name!r}")


# --- the experiment matrix --------------------------------------------------------------------


def eval_jobs(config: dict[str, Any]) -> list[tuple[str, int]]:
    """Every (system, n_docs) evaluation of RULER-HQA, in config order."""
    jobs = []
    for system, spec in config["evaluation"]["systems"].items():
        limit = spec.get("max_docs")
        jobs += [(system, n) for n in config["ruler_hqa"]["n_docs"] if limit is None or n <= limit]
    return jobs


def model_gpus(config: dict[str, Any], name: str) -> int:
    """GPUs an inference job on this model needs (a trained run inherits its base model's)."""
    runs = config["training"]["runs"]
    base = runs[name]["base"] if name in runs else name
    return int(config["models"][base].get("gpus", 0))


def train_gpus(config: dict[str, Any], run: str) -> int:
    """GPUs of a training job in all (SLURM's --gpus counts the job's total, not per node)."""
    spec = config["training"]["runs"][run]
    return spec.get("gpus_per_node", 0) * spec.get("nodes", 1)


def config_hash(config: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()


# --- per-job settings: exactly what one job may read from the config ----------------------------


def engine_settings(config: dict[str, Any], section: str, model: str) -> dict[str, Any]:
    """The engine block of `section` with the model's tensor-parallel size filled in."""
    settings = dict(config[section]["engine"])
    if settings["kind"] == "vllm":
        settings.setdefault("tensor_parallel_size", max(1, model_gpus(config, model)))
    return settings


def model_fetch_settings(config: dict[str, Any], name: str) -> dict[str, Any]:
    """What download_model needs: the model's source spec, without inference-time keys."""
    return {key: value for key, value in config["models"][name].items() if key != "gpus"}


def filter_settings(config: dict[str, Any]) -> dict[str, Any]:
    spec = config["filter"]
    return {
        "models": {name: engine_settings(config, "filter", name) for name in spec["models"]},
        **{key: spec[key] for key in ("n_samples", "sampling", "max_tokens")},
        "keep": {"train": spec["keep_train"], "dev": spec["keep_dev"]},
    }


def synthesize_settings(config: dict[str, Any]) -> dict[str, Any]:
    ruler = config["ruler_hqa"]
    keys = ("train_questions", "dev_questions", "train_docs", "store_ids_above")
    return {**{key: ruler[key] for key in keys}, "seed": config["seed"]}


def eval_set_settings(config: dict[str, Any], n_docs: int) -> dict[str, Any]:
    ruler = config["ruler_hqa"]
    return {
        "n_docs": n_docs,
        "eval_questions": ruler["eval_questions"],
        "store_ids_above": ruler["store_ids_above"],
        "seed": config["seed"],
    }


def train_settings(config: dict[str, Any], run: str, stage: str) -> dict[str, Any]:
    spec = config["training"]["runs"][run]
    stage_spec = dict(config["training"][stage])
    if "rollout_batch" in spec:
        stage_spec["rollout_batch"] = spec["rollout_batch"]
    backend = config["training"]["backend"]
    if backend == "verl":  # the cpu trainer's jobs must not rerun when verl-only keys change
        verl = dict(config["training"]["verl"])
        if verl["tensor_parallel_size"] is None:
            verl["tensor_parallel_size"] = max(1, model_gpus(config, spec["base"]))
        stage_spec["verl"] = verl
    return {
        "backend": backend,
        "run": run,
        "stage": stage,
        "agent": config["agent"],
        "seed": config["seed"],
        "gpus_per_node": spec.get("gpus_per_node", 0),
        "nodes": spec.get("nodes", 1),
        **stage_spec,
    }


def stage2_data_settings(config: dict[str, Any]) -> dict[str, Any]:
    return {"seed": config["seed"], **config["training"]["stage2_data"]}


def eval_settings(config: dict[str, Any], system: str, n_docs: int) -> dict[str, Any]:
    spec = config["evaluation"]["systems"][system]
    return {
        "system": system,
        "n_docs": n_docs,
        "agent": config["agent"],
        "engine": engine_settings(config, "evaluation", spec["model"]),
        "wave_size": config["evaluation"]["wave_size"],
        "sampling": config["evaluation"]["sampling"],
        "final_prompt": config["evaluation"]["final_prompt"],
    }


def report_settings(config: dict[str, Any]) -> dict[str, Any]:
    systems = config["evaluation"]["systems"]
    return {
        # a list: settings JSON is key-sorted, and the table keeps the config's system order
        "systems": [
            {"id": name, "display": spec["display"], "paper_row": spec.get("paper_row")}
            for name, spec in systems.items()
        ],
        "length_labels": {int(k): v for k, v in config["ruler_hqa"]["length_labels"].items()},
        "run": config["run"],
    }
