"""Planning Mem-α's rebuilt training sets (the optional `memalpha.build` block): the groups, the
files each job reads and writes, and each job's settings. Builders: memrepro.data.memalpha_build."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memrepro.config.settings import engine_settings
from memrepro.layout import ConfigError, memalpha_data, model_reproduces, raw_file, results_dir

CLOSED_BOOK_GROUPS = ("squad", "hotpotqa")  # the official script's closed-book filter
ANSWERABILITY_GROUPS = ("perltqa",)  # its full-context answerability filter (GPT-4.1)
FILTER_PARAMS = ("min_kept", "min_answerable")  # a group's params its filter step reads
BUILT_SPLITS = {"train": "train", "memalpha": "validation"}  # a released split: its rebuilt file


def build(config: dict[str, Any]) -> dict[str, Any]:
    return config.get("memalpha", {}).get("build", {})


def build_groups(config: dict[str, Any]) -> list[str]:
    """The merge groups this config rebuilds (none without `memalpha.build`)."""
    return list(build(config).get("sources", {}))


def build_dir(config: dict[str, Any]) -> Path:
    return results_dir(config) / "data" / "memalpha_build"


def built_file(config: dict[str, Any], group: str, filtered: bool) -> Path:
    """A group's instances before its model filter (`filtered=False`) or after it."""
    return build_dir(config) / f"{group}.{'kept' if filtered else 'built'}.jsonl"


def built_split(config: dict[str, Any], split: str) -> Path:
    """The rebuilt parquet of a released split (train, memalpha = validation)."""
    return build_dir(config) / f"{BUILT_SPLITS[split]}.parquet"


def comparison_file(config: dict[str, Any]) -> Path:
    return build_dir(config) / "comparison.json"


def training_data(config: dict[str, Any], split: str) -> Path:
    """The parquet Mem-α's training reads for a split: the released one, or the rebuilt one
    where `memalpha.training.data` is `rebuilt`."""
    if config["memalpha"].get("training", {}).get("data", "released") == "rebuilt":
        return built_split(config, split)
    return memalpha_data(config, split)


def filter_kind(config: dict[str, Any], group: str) -> str | None:
    """The model filter the official recipe runs on a group, where its block is configured:
    closed_book, answerability, or None."""
    spec = build(config)
    if spec["recipe"] != "official":
        return None
    kind = "closed_book" if group in CLOSED_BOOK_GROUPS else None
    kind = "answerability" if group in ANSWERABILITY_GROUPS else kind
    return kind if kind in spec else None


def filter_model(config: dict[str, Any], group: str) -> str | None:
    kind = filter_kind(config, group)
    return None if kind is None else build(config)[kind]["model"]


def source_inputs(config: dict[str, Any], group: str) -> dict[str, list[Path]]:
    """A group's files by role; LME-Train also reads MemoryAgentBench (the questions it must not
    draw), BookSum the rebuilt keyword golds where the `keywords` block rebuilds them."""
    names = build(config)["sources"][group]
    if group == "perltqa":  # perltmem's memories, then perltqa's questions
        files = {
            "memories": [raw_file(config, names[0])],
            "questions": [raw_file(config, names[1])],
        }
    else:
        files = {"rows": [raw_file(config, name) for name in names]}
    if group == "lme_train":
        files["exclude"] = [memalpha_data(config, "mab")]
    if group == "booksum" and "booksum" in config.get("keywords", {}).get("sets", {}):
        files["keywords"] = [results_dir(config) / "keywords" / "booksum.jsonl"]
    return files


def _params(config: dict[str, Any], group: str) -> dict[str, Any]:
    return dict(build(config).get("params", {}).get(group, {}))


def source_settings(config: dict[str, Any], group: str) -> dict[str, Any]:
    """One group's builder: the recipe's choices, the seed, its scale (`params`) and sources."""
    spec = build(config)
    return {
        "group": group,
        "recipe": spec["recipe"],
        "ttl_questions": spec["ttl_questions"],
        "seed": config["seed"],
        "params": {k: v for k, v in _params(config, group).items() if k not in FILTER_PARAMS},
        "mab_sources": [s for s in config["memalpha"]["mab"]["sources"] if "longmemeval" in s],
    }


def filter_settings(config: dict[str, Any], group: str) -> dict[str, Any]:
    """One group's model filter (none under the paper's recipe): the model, engine, sampling."""
    kind = filter_kind(config, group)
    base = {
        "group": group,
        "filter": kind,
        "seed": config["seed"],
        "params": dict(build(config).get("params", {}).get(group, {})),
    }
    if kind is None:
        return base
    spec = build(config)[kind]
    return {
        **base,
        "model": spec["model"],
        "engine": engine_settings(config, spec.get("engine"), spec["model"]),
        **{key: spec[key] for key in ("sampling", "max_tokens", "wave_size")},
    }


def sets_settings(config: dict[str, Any]) -> dict[str, Any]:
    """The merge: each group's training share under the recipe, the cap, the seed, and the
    fewest training instances a step needs (a smaller set stops the job)."""
    from memrepro.data.memalpha_build.split import TRAIN_RATIO

    spec = build(config)
    training = config["memalpha"].get("training", {})
    return {
        "groups": build_groups(config),
        "recipe": spec["recipe"],
        "ratios": TRAIN_RATIO[spec["recipe"]],
        "limit": spec.get("limit", 100),
        "seed": config["seed"],
        "min_train": training.get("rollout_batch", 1),
    }


def table_inputs(config: dict[str, Any]) -> list[str]:
    """The memalpha_data table's file: the comparison (none without `memalpha.build`)."""
    return [str(comparison_file(config))] if build_groups(config) else []


def table_settings(config: dict[str, Any]) -> dict[str, Any]:
    """The recipe that built the sets, and whether its counting and filtering models can
    reproduce the paper."""
    if not build_groups(config):
        return {}
    spec = build(config)
    filters = [spec[kind]["model"] for kind in ("closed_book", "answerability") if kind in spec]
    models = [config["memalpha"]["qa"]["model"], *filters]
    return {
        "recipe": spec["recipe"],
        "ttl_questions": spec["ttl_questions"],
        "reproduces": all(model_reproduces(config, model) for model in models),
    }


def check_build(config: dict[str, Any]) -> None:
    """Each rebuilt group's sources and filter models exist, and training on the rebuilt sets
    has them, BookSum's keyword golds included (an instance's summary gold cannot be scored)."""
    spec = build(config)
    for group, names in spec.get("sources", {}).items():
        unknown = [name for name in names if name not in config["sources"]]
        if unknown:
            raise ConfigError(f"config key memalpha.build.sources.{group}: no source {unknown}")
    for kind in ("closed_book", "answerability"):
        if kind in spec and spec[kind]["model"] not in config["models"]:
            model = spec[kind]["model"]
            raise ConfigError(
                f"config key memalpha.build.{kind}.model: {model!r} is not a models key"
            )
    if config["memalpha"].get("training", {}).get("data") != "rebuilt":
        return
    if not spec:
        raise ConfigError(
            "config key memalpha.training.data: 'rebuilt' needs a memalpha.build block"
        )
    keyworded = config.get("keywords", {}).get("sets", {})
    if "booksum" in spec["sources"] and "booksum" not in keyworded:
        raise ConfigError(
            "config key memalpha.training.data: 'rebuilt' trains on BookSum, whose keyword golds "
            "the keywords block rebuilds (keywords.sets.booksum; config/keywords.yaml): without "
            "it a rebuilt instance's gold is a summary, which the keyword-hit reward cannot read"
        )
