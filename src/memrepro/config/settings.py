"""Per-job settings: exactly what one job may read from the config (a job reruns when they
change, and only then)."""

from __future__ import annotations

from typing import Any

from memrepro.benchmarks import benchmark
from memrepro.config.matrix import (
    EvalJob,
    Systems,
    case_study_specs,
    eval_systems,
    memorizes,
    model_gpus,
)
from memrepro.data.sources import local_path
from memrepro.digests import file_digest
from memrepro.layout import (
    MEMALPHA_STAGE,
    ConfigError,
    memagent_runs,
    memalpha_runs,
    memalpha_splits,
    model_reproduces,
    qa_model,
)
from memrepro.scoring.verifier import DEFAULT_VERIFIER
from memrepro.systems import system_kind
from memrepro.systems.memagent import agent_settings


def probe_set_settings(config: dict[str, Any], task: str, n_docs: int) -> dict[str, Any]:
    """One probe set: the RULER-HQA eval set of n_docs with the groups at the task's depths."""
    depths = [int(percent) / 100 for percent in task[1:].split("_")]
    return {
        "n_docs": n_docs,
        "store_ids_above": config["ruler_hqa"]["store_ids_above"],
        "placement": depths,
    }


def example_settings(config: dict[str, Any]) -> dict[str, Any]:
    """Table 5's example job: what it looks for (memalpha.example), the sources it searches
    where the config narrows them, and the splits it searches, in order (their files are its
    inputs, in the same order)."""
    spec = config["memalpha"]["example"]
    found = {key: spec[key] for key in ("what", "phrases", "sources") if key in spec}
    return {**found, "splits": memalpha_splits(config)}


def engine_settings(
    config: dict[str, Any], spec: dict[str, Any] | None, model: str
) -> dict[str, Any]:
    """An engine block (`spec`, else evaluation.engine) with the model's tensor-parallel size."""
    engine = dict(spec or config["evaluation"]["engine"])
    if engine["kind"] in ("vllm", "served"):
        engine.setdefault("tensor_parallel_size", max(1, model_gpus(config, model)))
    return engine


def model_fetch_settings(config: dict[str, Any], name: str) -> dict[str, Any]:
    """What download_model needs: the model's source spec, without inference-time keys (its
    GPUs, an API model's price)."""
    return {k: v for k, v in config["models"][name].items() if k not in ("gpus", "price")}


def filter_settings(config: dict[str, Any]) -> dict[str, Any]:
    spec = config["filter"]
    return {
        "models": {name: engine_settings(config, spec["engine"], name) for name in spec["models"]},
        **{key: spec[key] for key in ("n_samples", "sampling", "max_tokens")},
        "keep": {"train": spec["keep_train"], "dev": spec["keep_dev"]},
        "verifier": spec.get("verifier", DEFAULT_VERIFIER),
    }


def keywords_settings(config: dict[str, Any], name: str) -> dict[str, Any]:
    """One keyword rebuild (Mem-α's Figure 4): the data source, its originals' schema, the
    released splits it compares with, and the model, engine, prompt and sampling that extract."""
    spec = config["keywords"]
    source = spec["sets"][name]
    return {
        "set": name,
        "kind": source["kind"],
        "released": list(source["released"]),
        "model": spec["model"],
        "reproduces": model_reproduces(config, spec["model"]),
        "engine": engine_settings(config, spec["engine"], spec["model"]),
        "prompt": spec.get("prompt", "official"),
        **{key: spec[key] for key in ("sampling", "max_tokens", "wave_size")},
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


OFFICIAL_HQA = "official"  # ruler_hqa.questions / eval_sets: MemAgent's released files
OFFICIAL_HQA_DIR = "memagent_hotpotqa"  # where they are downloaded, under raw/


def hqa_questions(config: dict[str, Any]) -> str:
    """`official` (MemAgent's released filtered questions) or `filtered` (filtered here)."""
    return str(config["ruler_hqa"].get("questions", "filtered"))


def hqa_eval_sets(config: dict[str, Any]) -> str:
    """`official` (MemAgent's released evaluation sets) or `synthesized` (built here)."""
    return str(config["ruler_hqa"].get("eval_sets", "synthesized"))


def source_key(name: str) -> str:
    """The config key that configures source `name` (its url and sha256), as errors name it."""
    return f"sources.{name}"


def official_file_key(file: str) -> str:
    """The config key of one released RULER-HQA file, as errors name it."""
    return f"ruler_hqa.official (file {file})"


def source_settings(config: dict[str, Any], name: str) -> dict[str, Any]:
    """What download_data needs for a configured source (`sources.<name>`)."""
    return with_local_content(config["sources"][name], source_key(name))


def official_hqa_settings(config: dict[str, Any], file: str) -> dict[str, Any]:
    """What download_data needs for one released file: its url and the sha256 pinned for it."""
    official = config["ruler_hqa"]["official"]
    spec = {
        "url": f"{official['url'].rstrip('/')}/{file}",
        "sha256": official.get("sha256", {}).get(file),
    }
    return with_local_content(spec, official_file_key(file))


def with_local_content(spec: dict[str, Any], key: str) -> dict[str, Any]:
    """A source's settings and, for a file on this machine, the sha256 of its content now
    (`content`): an edited file changes its copy job's settings, so the copy and everything
    after it rerun. A pinned sha256 it no longer matches stops the plan, naming the key."""
    path = local_path(spec["url"])
    if path is None:
        return spec
    if not path.is_file():
        raise ConfigError(f"config key {key}: {path}: no such file")
    content = file_digest(path).removeprefix("sha256:")
    pinned = spec.get("sha256")
    if pinned and content != pinned.lower():
        raise ConfigError(
            f"config key {key}: {path} has sha256 {content}, the config pins {pinned} "
            "(the file changed, or the pin is wrong)"
        )
    return {**spec, "content": content}


def official_questions_settings(config: dict[str, Any], split: str) -> dict[str, Any]:
    """The released questions of a split: dev holds the released sets' questions, so its row
    count is theirs (`ruler_hqa.official.rows`); train any."""
    return {"rows": config["ruler_hqa"]["official"]["rows"] if split == "dev" else None}


def official_eval_set_settings(config: dict[str, Any], n_docs: int) -> dict[str, Any]:
    """One released set: checked at its released row count, its first `eval_questions` kept."""
    ruler = config["ruler_hqa"]
    return {
        "n_docs": n_docs,
        "released_rows": ruler["official"]["rows"],
        "rows": ruler["eval_questions"],
        "store_ids_above": ruler["store_ids_above"],
    }


# Bumped when a code change alters what a job writes, so that Snakemake rebuilds it (its params
# change): RULER rows 2 = the official key order and the fork's answer prefixes;
# the RULER-HQA pool 2 = the questions' key-information groups (Table 4's probe).
RULER_ROWS_FORMAT = 2


HQA_POOL_FORMAT = 2


def hqa_pool_settings() -> dict[str, Any]:
    return {"format": HQA_POOL_FORMAT}


def ruler_set_settings(config: dict[str, Any], task: str, length: int) -> dict[str, Any]:
    ruler = config["ruler"]
    return {
        "task": task,
        "length": length,
        "samples": ruler["samples"],
        "variant": ruler["variant"],
        "seed": config["seed"],
        "format": RULER_ROWS_FORMAT,
    }


def memagent_recipe(config: dict[str, Any], run: str) -> dict[str, Any]:
    """The recipe that trains a MemAgent run: its name, its `training.recipes` entry's keys, and
    those the entry sets for this run (`runs`; a memory-ablation variant takes its run's)."""
    training = config["training"]
    entry = dict(training["recipes"][training["recipe"]])
    per_run = entry.pop("runs", {}).get(memagent_runs(config)[run].get("of", run), {})
    return {"recipe": training["recipe"], **entry, **per_run}


def train_settings(config: dict[str, Any], run: str, stage: str) -> dict[str, Any]:
    """A MemAgent training job's settings; a repeat of a run (training.seeds) trains at the run
    seed and the rollouts' sampling seed shifted by its offset."""
    spec = memagent_runs(config)[run]
    offset = spec.get("seed_offset", 0)
    stage_spec = {**config["training"][stage], **memagent_recipe(config, run)}
    sampling = stage_spec.get("sampling", {})
    if offset and sampling.get("seed") is not None:
        stage_spec["sampling"] = {**sampling, "seed": sampling["seed"] + offset}
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
        "verifier": config["training"].get("verifier", DEFAULT_VERIFIER),
        # the prompts' wording is evaluation's (training keeps the official code's): left out, so
        # switching it retrains nothing
        "agent": {k: v for k, v in agent_settings(config, spec).items() if k != "wording"},
        "seed": config["seed"] + offset,
        "gpus_per_node": spec.get("gpus_per_node", 0),
        "nodes": spec.get("nodes", 1),
        "recipe_run": spec.get("of", run),  # whose per-run recipe values apply
        **stage_spec,
    }


def memalpha_recipe(config: dict[str, Any]) -> dict[str, Any]:
    """The recipe that trains the Mem-α runs: its name and its recipes entry."""
    training = config["memalpha"]["training"]
    return {"recipe": training["recipe"], **training["recipes"][training["recipe"]]}


def memalpha_train_settings(config: dict[str, Any], run: str) -> dict[str, Any]:
    """Everything a Mem-α GRPO job reads: its run (base, β, γ), the chosen recipe (steps,
    warm-up, KL, checkpoint, loss aggregation), the shared hyperparameters, validation on the
    Memalpha validation sources, the policy's memorisation settings with the training prompt cap,
    the QA step, the judge."""
    spec = config["memalpha"]
    skip = ("runs", "recipe", "recipes")
    training = {key: value for key, value in spec["training"].items() if key not in skip}
    agent = {**spec["agent"], "prompt_cap": training.pop("prompt_cap")}
    agent["cut_responses"] = training.pop("cut_responses")
    qa = {k: v for k, v in spec["qa"].items() if k not in ("engine", "model")}
    run_spec = {"nodes": 1, "gpus_per_node": 0, **memalpha_runs(config)[run]}
    return {
        "backend": config["training"]["backend"],
        "run": run,
        "stage": MEMALPHA_STAGE,
        "seed": config["seed"],
        **run_spec,
        **training,
        **memalpha_recipe(config),
        "agent": agent,
        "memory_tokenizer": spec["memory_tokenizer"],
        "sources": spec["train"]["sources"],
        "validation_sources": spec["memalpha"]["sources"],
        "qa": qa,
    }


def stage2_data_settings(config: dict[str, Any]) -> dict[str, Any]:
    return {"seed": config["seed"], **config["training"]["stage2_data"]}


def eval_settings(
    config: dict[str, Any], job: EvalJob, shard: int, systems: Systems | None = None
) -> dict[str, Any]:
    """Everything one evaluation (shard) reads: the job, the system and the engine."""
    system = (systems or eval_systems(config))[job.system]
    evaluation = config["evaluation"]
    if system_kind(system["kind"]).reads_instances(job.benchmark):
        return _memalpha_eval_settings(config, job, shard, system)
    engine = engine_settings(config, system.get("engine"), system["model"])
    if system.get("max_model_len") is not None:
        engine["max_model_len"] = system["max_model_len"]
    settings = {
        **job._asdict(),
        "kind": system["kind"],
        "shard": shard,
        "engine": engine,
        "wave_size": evaluation["wave_size"],
        "allow_failures": allowed_failures(config),
        "sampling": _sampling(evaluation["sampling"], system),
        "final_prompt": evaluation["final_prompt"],
        **system_kind(system["kind"]).job_settings(config, system),
    }
    return {**settings, **benchmark(job.benchmark).row_settings(config)}


def _sampling(sampling: dict[str, Any], system: dict[str, Any]) -> dict[str, Any]:
    """evaluation.sampling, at a seed repeat's own seed (memrepro.config.matrix)."""
    return {**sampling, "seed": system["sampling_seed"]} if "seed_of" in system else sampling


def _memalpha_eval_settings(
    config: dict[str, Any], job: EvalJob, shard: int, system: dict[str, Any]
) -> dict[str, Any]:
    """An evaluate job on a Mem-α benchmark: after a memorize job it runs the QA model (which
    answers from memory or judges); a context baseline runs its own model, which also judges."""
    spec = config["memalpha"]
    qa = {k: v for k, v in spec["qa"].items() if k not in ("engine", "model")}
    if memorizes(system, job.benchmark):
        engine = engine_settings(config, spec["qa"].get("engine"), qa_model(config))
    else:
        engine = engine_settings(config, system.get("engine"), system["model"])
    settings = {
        **job._asdict(),
        "kind": system["kind"],
        "shard": shard,
        "qa": qa,
        "engine": engine,
        "wave_size": config["evaluation"]["wave_size"],
        "allow_failures": allowed_failures(config),
        **system_kind(system["kind"]).instance_settings(config, system),
    }
    return {**settings, **benchmark(job.benchmark).instance_settings(config)}


def allowed_failures(config: dict[str, Any]) -> float:
    """The fraction of an engine job's samples that may fail (`evaluation.allow_failures`)."""
    return float(config["evaluation"].get("allow_failures", 0))


def memorize_settings(
    config: dict[str, Any], job: EvalJob, systems: Systems | None = None
) -> dict[str, Any]:
    """Everything a memorize job reads: the system's engine and its agent's settings."""
    system = (systems or eval_systems(config))[job.system]
    settings = {
        **{key: value for key, value in job._asdict().items() if key != "shards"},
        "kind": system["kind"],
        "engine": engine_settings(config, system.get("engine"), system["model"]),
        "wave_size": config["evaluation"]["wave_size"],
        "allow_failures": allowed_failures(config),
    }
    settings.update(benchmark(job.benchmark).instance_settings(config))
    kind_settings = system_kind(system["kind"]).memorize_settings
    if kind_settings is None:
        raise ConfigError(f"system {job.system!r}: a {system['kind']} system has no memorize job")
    return {**settings, **kind_settings(config, system)}


def merge_settings(job: EvalJob) -> dict[str, Any]:
    return job._asdict()


def case_study_settings(config: dict[str, Any], job: EvalJob) -> dict[str, Any]:
    """What `memrepro trace` reads for one case study: the evaluation (its tasks, the agent's
    chunk size that cut its contexts) and which samples to show."""
    study = case_study_specs(config)[(job.benchmark, job.system, job.length)]
    system = eval_systems(config)[job.system]
    return {
        **{key: value for key, value in job._asdict().items() if key != "shards"},
        "agent": agent_settings(config, system),
        **{key: study[key] for key in ("samples", "first", "only", "question") if key in study},
        "machinery_only": not model_reproduces(config, system["model"]),
    }


def training_curve_settings(config: dict[str, Any], run: str) -> dict[str, Any]:
    """What `memrepro training-curve` draws for one training run: MemAgent's two stages or Mem-α's
    GRPO, titled, with the machinery-only line where the run trains a model that cannot
    reproduce the papers."""
    memalpha = run in memalpha_runs(config)
    title = "Mem-α GRPO" if memalpha else "Multi-Conv DAPO"
    return {
        "title": f"{title}, {run} (run {config['run']})",
        "labels": ["GRPO"] if memalpha else ["stage I", "stage II"],
        "curve": "memalpha" if memalpha else "memagent",
        "machinery_only": not model_reproduces(config, run),
    }
