# Config validation, the experiment matrix and every input function (no logic lives in rules).
import json
import shlex
from pathlib import Path

import snakemake as _snakemake

from memrl import config as cfg
from memrl import tracking

cfg.validate_config(config, Path(workflow.basedir) / "workflow/schemas/config.schema.yaml")

R = str(cfg.results_dir(config))
CONTAINERS = config["containers"]


wildcard_constraints:
    source="|".join(config["sources"]),
    model="|".join(config["models"]),
    train_run="|".join(config["training"]["runs"]) or "^$",
    system="|".join(config["evaluation"]["systems"]),
    split="train|dev",
    n_docs=r"\d+",
    ext="|".join(ext.lstrip(".") for ext in cfg.RAW_FORMATS),


onstart:
    tracking.start_pipeline_run(cfg.tracking_uri(config), config, _snakemake.__version__)


def as_json(value):
    return json.dumps(value, sort_keys=True)  # a reordered YAML key must not rerun jobs


def job(rule_name):
    """The `--job` param: the rule and its wildcards, for the job's MLflow tags."""

    def describe(wildcards):
        return as_json({"rule": rule_name, "wildcards": dict(wildcards.items())})

    return describe


def get_output_prefix(wildcards, output):
    """The path shared by a rule's outputs that differ only in extension."""
    return str(Path(output[0]).with_suffix(""))


# --- targets ---------------------------------------------------------------------------------


def raw(source):
    """A downloaded source file (its suffix follows its url)."""
    return str(cfg.raw_file(config, source))


def get_manifests():
    """Checksums of every downloaded file and model (also pulls in data nothing else reads yet)."""
    sources = [f"{raw(source)}.manifest.json" for source in config["sources"]]
    models = [f"{R}/models/{model}.manifest.json" for model in config["models"]]
    return [*sources, *models]


def get_eval_metrics():
    return [
        f"{R}/eval/ruler_hqa/{system}/{n_docs}.metrics.json"
        for system, n_docs in cfg.eval_jobs(config)
    ]


def get_training_curves():
    return expand(
        f"{R}/figures/training_{{train_run}}.{{ext}}",
        train_run=config["training"]["runs"],
        ext=["png", "pdf"],
    )


def get_table1():
    return expand(f"{R}/tables/table1.{{ext}}", ext=["csv", "md", "tex"])


def get_figure1():
    return expand(f"{R}/figures/figure1.{{ext}}", ext=["png", "pdf"])


# --- input functions -------------------------------------------------------------------------


def get_tokenizer_dir(wildcards):
    return str(cfg.model_dir(config, config["ruler_hqa"]["tokenizer"]))


def get_filter_models(wildcards):
    return {name: str(cfg.model_dir(config, name)) for name in config["filter"]["models"]}


def get_filter_model_args(wildcards, input):
    return " ".join(f"--model {name}={input[name]}" for name in config["filter"]["models"])


def get_base_model(wildcards):
    """Stage I starts from the run's base model (stage II from the stage I checkpoint)."""
    return str(cfg.model_dir(config, config["training"]["runs"][wildcards.train_run]["base"]))


def get_eval_model(wildcards):
    return str(cfg.model_dir(config, config["evaluation"]["systems"][wildcards.system]["model"]))


# --- per-job settings (JSON handed to `memrl --settings`) and resources ----------------------


def get_source_settings(wildcards):
    return as_json(config["sources"][wildcards.source])


def get_model_settings(wildcards):
    return as_json(cfg.model_fetch_settings(config, wildcards.model))


def get_synthesize_settings(wildcards):
    return as_json(cfg.synthesize_settings(config))


def get_filter_settings(wildcards):
    return as_json(cfg.filter_settings(config))


def get_eval_set_settings(wildcards):
    return as_json(cfg.eval_set_settings(config, int(wildcards.n_docs)))


def get_stage2_data_settings(wildcards):
    return as_json(cfg.stage2_data_settings(config))


def get_train_settings(stage):
    def settings(wildcards):
        return as_json(cfg.train_settings(config, wildcards.train_run, stage))

    return settings


def get_train_launch(stage):
    """`-- <command>` the verl backend runs on the job's nodes (shown by dry-runs); cpu: nothing."""

    def launch(wildcards, input, output):
        settings = cfg.train_settings(config, wildcards.train_run, stage)
        if settings["backend"] != "verl":
            return ""
        from memrl.verl.job import launch_command

        return f"-- {shlex.join(launch_command(settings, output[0], input.model))}"

    return launch


def get_training_curve_settings(wildcards):
    title = f"Multi-Conv DAPO, {wildcards.train_run} (run {config['run']})"
    return as_json({"title": title, "labels": ["stage I", "stage II"]})


def get_eval_settings(wildcards):
    return as_json(cfg.eval_settings(config, wildcards.system, int(wildcards.n_docs)))


def get_report_settings(wildcards):
    return as_json(cfg.report_settings(config))


def get_filter_gpus(wildcards):
    return max(cfg.model_gpus(config, name) for name in config["filter"]["models"])


def get_train_gpus(wildcards):
    return cfg.train_gpus(config, wildcards.train_run)


def get_train_nodes(wildcards):
    return config["training"]["runs"][wildcards.train_run].get("nodes", 1)


def get_eval_gpus(wildcards):
    return cfg.model_gpus(config, config["evaluation"]["systems"][wildcards.system]["model"])
