# Config validation, the experiment matrix and every input function (no logic lives in rules).
import atexit
import functools
import inspect
import json
import os
import re
import shlex
import shutil
import sys
from pathlib import Path

import snakemake as _snakemake
from snakemake.exceptions import WorkflowError
from snakemake.logging import logger
from snakemake.settings.types import DeploymentMethod

from memrepro import config as cfg
from memrepro.config import memalpha_build as build_plan
from memrepro.benchmarks import EVAL_BENCHMARKS, benchmark, custom
from memrepro import launch, locks, settings_files, slurm
from memrepro.digests import ENV_DIGEST_CACHE
from memrepro.systems import system_kind
from memrepro.tracking.invocation import (
    end_invocation,
    finish_killed_end,
    killed_end_warning,
    start_invocation,
)

# A run killed by SIGKILL leaves Snakemake's lock; the plain command resumes (memrepro.locks).
if not workflow.remote_exec:
    for dead in locks.release_stale_lock():
        logger.warning(f"Released the lock left by a killed run (pid {dead['pid']}): resuming.")
    # the SLURM executor plugin would wait forever for a job killed with scancel (memrepro.slurm)
    slurm.report_cancelled_jobs()


# A config error is one sentence naming the key, its value, the file (or --config) that set it
# and what is allowed: no Snakemake frames (memrepro.config.load.with_origin)
def config_error_line(error):
    return f"Config error: {cfg.with_origin(error, workflow.configfiles, OVERRIDES)}"


OVERRIDES = {
    **json.loads(os.environ.get(cfg.ENV_OVERRIDES) or "{}"),  # ./pipeline --config a.b=c
    **workflow.config_settings.config,  # snakemake --config key=value
}
try:
    cfg.check_config_files(workflow.configfiles)
    cfg.apply_overrides(config, os.environ.get(cfg.ENV_OVERRIDES))
    cfg.validate_config(config, Path(workflow.basedir) / "workflow/schemas/config.schema.yaml")
    if not workflow.remote_exec:  # a job's own process re-plans: checked once, by the main one
        cfg.check_data(config)
except cfg.ConfigError as error:
    sys.exit(config_error_line(error))
# planning hashes local sources (memrepro.config.source_settings): a large file once per change
os.environ.setdefault(ENV_DIGEST_CACHE, str(settings_files.SETTINGS_DIR.parent / "digests"))

R = str(cfg.results_dir(config))

# A second run into the results directory a live run writes: named, before Snakemake's lock error
# (memrepro.locks.live_run); a dry run, which takes no lock, plans beside it (workflow.dryrun is
# not known yet while the Snakefile is read: Snakemake's own parser reads the command line)
if not (workflow.remote_exec or workflow.subprocess_exec):
    if (live := locks.live_run(R)) and not launch.parsed_arguments(sys.argv[1:]).dryrun:
        sys.exit(live)


# A run killed while it wrote run.json or loaded MLflow: said now, and its end steps run when this
# invocation ends, a no-op included (Snakemake calls no handler when nothing is to be done).
def finish_killed_end_at_exit():
    if workflow.executor_plugin is not None and not workflow.dryrun:  # a real run, not a listing
        finish_killed_end(Path(R))


if not (workflow.remote_exec or workflow.subprocess_exec):
    if killed := killed_end_warning(Path(R)):
        logger.warning(killed)
        atexit.register(finish_killed_end_at_exit)

# Apptainer runs jobs; planning needs none. Snakemake checks the binary while planning whenever a
# rule names an image, so on a host without it the main process plans without images and
# `onstart` (real runs only) refuses to run. Job processes (remote_exec) keep the images and fail
# in Snakemake itself if their node lacks apptainer.
WANTS_APPTAINER = DeploymentMethod.APPTAINER in workflow.deployment_settings.deployment_method
HAS_APPTAINER = bool(shutil.which("apptainer") or shutil.which("singularity"))
if not WANTS_APPTAINER or HAS_APPTAINER or workflow.remote_exec:
    CONTAINERS = config["containers"]
else:
    CONTAINERS = dict.fromkeys(config["containers"])
# Under apptainer a verl job runs on the host, where srun is: its ray_job.sh runs every node's
# Ray and verl in the train image (`--container`, get_train_launch); every other job in its image.
# The reference comes from the config, so a plan made without apptainer shows the same command.
VERL_IMAGE = config["containers"]["train"] if WANTS_APPTAINER else None
# The infer jobs' `memrepro` (their `params.memrepro`): a virtualenv's (infer_venv) or the one on PATH.
INFER_MEMREPRO = cfg.infer_memrepro(config)
SYSTEMS = cfg.eval_systems(config)
# Jobs by their paths' wildcards: (benchmark, system, length or the name its benchmark gives it)
EVAL_JOBS = {cfg.eval_key(config, j): j for j in cfg.eval_jobs(config, SYSTEMS)}
RESCORE_JOBS = {
    (j.scorer, *cfg.eval_key(config, j.evaluation)): j for j in cfg.rescore_jobs(config)
}
JUDGES = cfg.judge_probes(config)


wildcard_constraints:
    source="|".join(config["sources"]),
    model="|".join(config["models"]),
    train_run="|".join(cfg.memagent_runs(config)) or "^$",
    memalpha_run="|".join(cfg.memalpha_runs(config)) or "^$",
    system="|".join(re.escape(system) for system in SYSTEMS),
    benchmark="|".join(EVAL_BENCHMARKS),
    placement=r"p\d+_\d+",
    task=r"[a-z0-9_]+",
    # a length, or the name a benchmark gives its jobs instead (one's own data: custom.name)
    length="|".join([r"\d+", *(re.escape(k[2]) for k in EVAL_JOBS if not k[2].isdigit())]),
    shard=r"\d+",
    shards=r"\d+",
    table="|".join(cfg.report_stem(config, name) for name in cfg.TABLES),
    figure="|".join(cfg.FIGURES),
    split="train|dev",
    memalpha_split="|".join(cfg.memalpha_splits(config)),
    n_docs=r"\d+",
    dataset="|".join(custom.datasets(config)) or "^$",
    keyword_set="|".join(map(re.escape, cfg.keyword_sets(config))) or "^$",
    build_group="|".join(map(re.escape, build_plan.build_groups(config))) or "^$",
    scorer="|".join(map(re.escape, config.get("rescore") or {})) or "^$",
    judge="|".join(map(re.escape, JUDGES)) or "^$",
    ext="|".join(ext.lstrip(".") for ext in cfg.RAW_FORMATS),


onstart:
    if WANTS_APPTAINER and not HAS_APPTAINER:
        raise WorkflowError(
            "software-deployment-method apptainer: neither apptainer nor singularity is on PATH. "
            "Install apptainer; or, with podman, run through ./pipeline (it adds "
            "envs/podman/apptainer); or run with --sdm conda (envs/README.md)."
        )
    venv = config.get("infer_venv")
    if venv and not (Path(venv) / "bin" / "memrepro").is_file():
        raise WorkflowError(
            f"infer_venv {venv}: no bin/memrepro there; build it with make vllm-env"
        )
    locks.record_lock_holder(R, sorted(workflow.dag_settings.targets))
    start_invocation(
        Path(R),
        cfg.tracking_uri(config),
        config,
        _snakemake.__version__,
        command=sys.argv,
        targets=sorted(workflow.dag_settings.targets),
    )


onsuccess:
    end_invocation(Path(R), succeeded=True, snakemake_log=log)


onerror:
    end_invocation(Path(R), succeeded=False, snakemake_log=log)


def as_json(value):
    return json.dumps(value, sort_keys=True)  # a reordered YAML key must not rerun jobs


def settings_ref(value):
    """A job's `settings` param: `@<file named by their digest>` (memrepro.settings_files), so the
    printed command stays short and a change of settings still reruns the job."""
    return settings_files.settings_reference(value, say=logger.warning)


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
    """Checksums of every downloaded file (also pulls in data nothing else reads yet). Models
    come with the jobs that read them, so a selection (`evaluation.select`) fetches only its
    own; their manifests are written beside them."""
    return [f"{raw(source)}.manifest.json" for source in config["sources"]]


def eval_prefix(job):
    return cfg.eval_prefix(config, job)


def get_paper(wildcards):
    name = report_name(wildcards)
    cfg.check_paper_key(config, name)  # a paper file without its numbers: now, not at the end
    return cfg.paper_file(config, name)


def get_eval_metrics():
    """Metrics files of every evaluation."""
    return [f"{eval_prefix(job)}.metrics.json" for job in EVAL_JOBS.values()]


def get_training_curves():
    runs = [*cfg.memagent_runs(config), *cfg.memalpha_runs(config)]
    return expand(f"{R}/figures/training_{{run}}.{{ext}}", run=runs, ext=["png", "pdf"])


def report_outputs(name):
    """The files of one table (CSV, Markdown, LaTeX, HTML) or figure (PNG, PDF), and the paper
    claims each checks."""
    if name in cfg.TABLES:
        stem = cfg.report_stem(config, name)
        return expand(f"{R}/tables/{stem}.{{ext}}", ext=["csv", "md", "tex", "html", "claims.json"])
    return expand(f"{R}/figures/{name}.{{ext}}", ext=["png", "pdf", "claims.json"])


def case_study_prefix(job):
    return f"{R}/case_studies/{'/'.join(cfg.eval_key(config, job))}"


def get_case_studies():
    return [
        f"{case_study_prefix(j)}.{ext}" for j in cfg.case_studies(config) for ext in ("md", "html")
    ]


def get_case_study_inputs(wildcards):
    """A case study reads its evaluation's predictions, the sets and pool it read, and the
    evaluated model's tokenizer (to cut the contexts into the same chunks)."""
    job = eval_job(wildcards)
    inputs = {
        "predictions": f"{eval_prefix(job)}.predictions.jsonl",
        "data": eval_data(job),
        "tokenizer": str(cfg.model_dir(config, SYSTEMS[job.system]["model"])),
    }
    pool = eval_pool(job)
    if pool:  # and its questions' supporting paragraphs (HotpotQA's two hops)
        pool["pool_questions"] = f"{R}/data/ruler_hqa/pool_questions.parquet"
    return inputs | pool


def get_case_study_pool_args(wildcards, input):
    if "pool" not in input.keys():
        return ""
    return f"--pool {shlex.quote(input.pool)} --pool-questions {shlex.quote(input.pool_questions)}"


def get_case_study_settings(wildcards):
    return settings_ref(cfg.case_study_settings(config, eval_job(wildcards)))


def get_reports():
    """Every table and figure for which this config runs something (a slice such as
    config/mini.yaml runs no probe, ablation or training)."""
    names = [name for name in cfg.TABLES + cfg.FIGURES if report_records(name)]
    return [path for name in names for path in report_outputs(name)]


def get_reproduction():
    """The reproduction report, where the config makes any table."""
    tables = [path for path in get_reports() if path.endswith(".md")]
    outputs = (
        "reproduction.md",
        "reproduction.html",
        "reproduction.cells.csv",
        "reproduction.diagnoses.csv",
    )
    return [f"{R}/{name}" for name in outputs] if tables else []


# --- input functions -------------------------------------------------------------------------


def get_reproduction_tables(wildcards):
    return [p for p in get_reports() if p.endswith((".md", ".csv"))]


def get_reproduction_figures(wildcards):
    return [p for p in get_reports() + get_training_curves() if p.endswith(".png")]


def get_reproduction_claims(wildcards):
    return [p for p in get_reports() if p.endswith(".claims.json")]


def get_reproduction_evaluations(wildcards):
    """The evaluations whose items the diagnoses pair (each metrics and predictions file)."""
    return cfg.reproduction_evaluations(config)


def get_reproduction_benchmarks(wildcards):
    """Snakemake's benchmark files of the evaluations behind the tables: their compute."""
    return [p for job in cfg.reproduction_jobs(config) for p in eval_benchmark_files(job)]


def get_reproduction_settings():
    """The report's settings and the machine the profile declares (its summary's hardware)."""
    machine = {"gpus": MACHINE.gpus, "nodes": MACHINE.nodes}
    return settings_ref({**cfg.reproduction_settings(config), "machine": machine})


def get_reproduction_case_studies(wildcards):
    return [p for p in get_case_studies() if p.endswith(".md")]


def get_tokenizer_dir(wildcards):
    return str(cfg.model_dir(config, config["ruler_hqa"]["tokenizer"]))


def get_filter_models(wildcards):
    return {name: str(cfg.model_dir(config, name)) for name in config["filter"]["models"]}


def get_filter_model_args(wildcards, input):
    return " ".join(f"--model {name}={input[name]}" for name in config["filter"]["models"])


def get_base_model(wildcards):
    """Stage I starts from the run's base model (stage II from the stage I checkpoint)."""
    return str(cfg.model_dir(config, cfg.memagent_runs(config)[wildcards.train_run]["base"]))


def eval_job(wildcards):
    key = (wildcards.benchmark, wildcards.system, wildcards.length)
    if key not in EVAL_JOBS:
        raise ValueError(f"not an evaluation of this config: {key}")
    return EVAL_JOBS[key]


def eval_data(job):
    """The job's eval sets, one per task, as its benchmark names them."""
    return [str(path) for path in cfg.eval_data(config, job)]


def eval_pool(job):
    """RULER-HQA's document pool, for a benchmark whose rows may store doc ids."""
    if benchmark(job.benchmark).reads_pool:
        return {"pool": f"{R}/data/ruler_hqa/pool_docs.parquet"}
    return {}


def get_eval_inputs(wildcards):
    """What one evaluation (shard) reads: its eval sets, the model (the QA model after a
    memorize job, whose output it reads), for RULER-HQA the document pool that rebuilds
    doc-id contexts and, for the oracle, the file marking each question's gold evidence."""
    job = eval_job(wildcards)
    system = SYSTEMS[job.system]
    model = str(cfg.model_dir(config, cfg.eval_model(config, system, job.benchmark)))
    inputs = {"data": eval_data(job), "model": model}
    if cfg.memorizes(system, job.benchmark):
        inputs["memories"] = f"{eval_prefix(job)}.memories.jsonl"
    if system_kind(system["kind"]).reads_evidence:
        inputs["evidence"] = str(benchmark(job.benchmark).evidence.file(config))
    return inputs | eval_pool(job)


def rescore_job(wildcards):
    key = (wildcards.scorer, wildcards.benchmark, wildcards.system, wildcards.length)
    if key not in RESCORE_JOBS:
        raise ValueError(f"not a rescoring of this config: {key}")
    return RESCORE_JOBS[key]


def get_rescore_inputs(wildcards):
    """The evaluation's predictions and, for a judge, its model."""
    job = rescore_job(wildcards)
    inputs = {"predictions": f"{eval_prefix(job.evaluation)}.predictions.jsonl"}
    spec = cfg.rescore_settings(config, job)["scorer"]
    if "model" in spec:
        inputs["judge_model"] = str(cfg.model_dir(config, spec["model"]))
    return inputs


def get_rescore_settings(wildcards):
    return settings_ref(cfg.rescore_settings(config, rescore_job(wildcards)))


def get_rescore_judge_arg(wildcards, input):
    return (
        f"--judge-model {shlex.quote(input.judge_model)}" if "judge_model" in input.keys() else ""
    )


def judge_spec(wildcards):
    if wildcards.judge not in JUDGES:
        raise ValueError(f"not a judge of this config: {wildcards.judge}")
    return JUDGES[wildcards.judge]


def get_judge_model(wildcards):
    return str(cfg.model_dir(config, judge_spec(wildcards)["model"]))


def get_judge_probe_settings(wildcards):
    return settings_ref(judge_spec(wildcards))


def get_memorize_inputs(wildcards):
    """A memorisation: the instances (RULER-HQA's: with the document pool), the system's model
    and (Mem-α) the memory's tokenizer."""
    job = eval_job(wildcards)
    system = SYSTEMS[job.system]
    inputs = {"data": eval_data(job), "model": str(cfg.model_dir(config, system["model"]))}
    inputs |= eval_pool(job)
    if system["kind"] == "memalpha":
        inputs.update(memory_tokenizer_input())
    return inputs


def memory_tokenizer_input():
    """The memory's token counter when it is a model's tokenizer (o200k_base needs no input)."""
    counter = config["memalpha"]["memory_tokenizer"]
    return {} if counter == cfg.O200K else {"memory_tokenizer": str(cfg.model_dir(config, counter))}


def get_train_memalpha_inputs(wildcards):
    """A Mem-α GRPO run: the train and validation splits, the base model, (a models key) the
    memory's tokenizer and, on verl, the QA model its job serves."""
    spec = cfg.memalpha_runs(config)[wildcards.memalpha_run]
    inputs = {
        "data": str(build_plan.training_data(config, "train")),
        "validation": str(build_plan.training_data(config, "memalpha")),
        "model": str(cfg.model_dir(config, spec["base"])),
        **memory_tokenizer_input(),
    }
    if cfg.uses_qa_server(config):
        inputs["qa_model"] = str(cfg.model_dir(config, config["memalpha"]["qa"]["model"]))
    return inputs


def get_train_memalpha_settings(wildcards):
    return settings_ref(cfg.memalpha_train_settings(config, wildcards.memalpha_run))


def get_memorize_tokenizer_arg(wildcards, input):
    if "memory_tokenizer" not in input.keys():
        return ""
    return f"--memory-tokenizer {shlex.quote(input.memory_tokenizer)}"


def get_eval_memories_arg(wildcards, input):
    return f"--memories {shlex.quote(input.memories)}" if "memories" in input.keys() else ""


def get_eval_pool_arg(wildcards, input):
    return f"--pool {shlex.quote(input.pool)}" if "pool" in input.keys() else ""


def get_eval_evidence_arg(wildcards, input):
    return f"--evidence {shlex.quote(input.evidence)}" if "evidence" in input.keys() else ""


def get_eval_shards(wildcards):
    """The shard files merge_eval joins (`shard0of1` for an unsharded evaluation: no rule makes
    it, which leaves that evaluation to the evaluate rule)."""
    job = eval_job(wildcards)
    return [f"{eval_prefix(job)}.shard{k}of{job.shards}.jsonl" for k in range(job.shards)]


def get_ruler_tokenizer_dir(wildcards):
    return str(cfg.model_dir(config, config["ruler"]["tokenizer"]))


# --- per-job settings (by reference: `memrepro --settings @FILE`) and resources -----------------


def get_source_settings(wildcards):
    return settings_ref(cfg.source_settings(config, wildcards.source))


def get_official_hqa_source(wildcards):
    return settings_ref(cfg.official_hqa_settings(config, wildcards.file))


def get_memalpha_split(wildcards):
    return str(cfg.memalpha_data(config, wildcards.memalpha_split))


def get_keyword_inputs(wildcards):
    files = cfg.keyword_inputs(config, wildcards.keyword_set)
    return {part: [str(path) for path in paths] for part, paths in files.items()}


def get_keyword_model(wildcards):
    return str(cfg.model_dir(config, config["keywords"]["model"]))


def get_keyword_gpus(wildcards):
    model = config["keywords"]["model"]
    gpus = cfg.model_gpus(config, model)
    return MACHINE.claim("rebuild_keywords", gpus, 1, cfg.gpu_keys(config, model))


def get_qa_tokenizer_dir(wildcards):
    return str(cfg.model_dir(config, cfg.qa_model(config)))


def get_model_settings(wildcards):
    return settings_ref(cfg.model_fetch_settings(config, wildcards.model))


def get_synthesize_settings(wildcards):
    return settings_ref(cfg.synthesize_settings(config))


def get_filter_settings(wildcards):
    return settings_ref(cfg.filter_settings(config))


def get_eval_set_settings(wildcards):
    return settings_ref(cfg.eval_set_settings(config, int(wildcards.n_docs)))


def get_probe_set_settings(wildcards):
    n_docs = int(wildcards.n_docs)
    return settings_ref(cfg.probe_set_settings(config, wildcards.placement, n_docs))


def get_stage2_data_settings(wildcards):
    return settings_ref(cfg.stage2_data_settings(config))


def get_train_settings(stage):
    def settings(wildcards):
        return settings_ref(cfg.train_settings(config, wildcards.train_run, stage))

    return settings


def get_train_launch(stage):
    """`-- <command>` the verl backend runs on the job's nodes (shown by dry-runs); cpu: nothing."""

    def launch(wildcards, input, output):
        settings = cfg.train_settings(config, wildcards.train_run, stage)
        if settings["backend"] != "verl":
            return ""
        from memrepro.verl.job import launch_command

        command = launch_command(settings, output[0], input.model, container=VERL_IMAGE)
        return f"-- {shlex.join(command)}"

    return launch


def get_train_container(stage):
    """The train image, or none for a verl job under apptainer (VERL_IMAGE: on the host)."""

    def container(wildcards):
        settings = cfg.train_settings(config, wildcards.train_run, stage)
        return None if settings["backend"] == "verl" and VERL_IMAGE else CONTAINERS["train"]

    return container


def get_training_curve_settings(wildcards):
    run = wildcards.get("train_run") or wildcards.memalpha_run
    return settings_ref(cfg.training_curve_settings(config, run))


def get_eval_settings(wildcards):
    shard = int(wildcards.get("shard", 0))
    return settings_ref(cfg.eval_settings(config, eval_job(wildcards), shard, SYSTEMS))


def get_eval_metrics_arg(wildcards, output):
    """An unsharded evaluation scores itself; a shard leaves that to merge_eval."""
    return f"--metrics {shlex.quote(output.metrics)}" if "metrics" in output.keys() else ""


def get_memorize_settings(wildcards):
    return settings_ref(cfg.memorize_settings(config, eval_job(wildcards), SYSTEMS))


def get_merge_settings(wildcards):
    return settings_ref(cfg.merge_settings(eval_job(wildcards)))


def get_ruler_set_settings(wildcards):
    return settings_ref(cfg.ruler_set_settings(config, wildcards.task, int(wildcards.length)))


def report_name(wildcards):
    """The table or figure a job makes (a table's files may carry its config's name)."""
    return cfg.report_of_stem(wildcards.get("table") or wildcards.get("figure"))


def get_report_metrics(wildcards):
    name = report_name(wildcards)
    records = report_records(name)
    if not records:
        raise WorkflowError(f"{name}: this config runs nothing it reads ({cfg.report_needs(name)})")
    return records


def get_report_controls(wildcards):
    """A score table's memory evaluations and the closed-book's beside them (metrics and
    predictions): each memory cell's gain over the control (memrepro.config.control_inputs)."""
    return cfg.control_inputs(config, report_name(wildcards))


def report_records(name):
    """The records a table or figure reads (memrepro.config.report_inputs): the metrics of its
    evaluation jobs, or what it declares instead (Table 5's memories and instances, the dataset
    statistics of its Mem-α splits, the rebuilt keyword golds, the NIAH sets)."""
    return cfg.report_inputs(config, name)


def get_report_settings(wildcards):
    name = report_name(wildcards)
    settings = {"name": name, **cfg.report_settings(config), **cfg.table_settings(config, name)}
    if cfg.report_plan(name).measured_cost:
        settings["flops"] = {**cfg.flops_settings(config), **cost_inputs(name)}
    return settings_ref(settings)


def get_report_caption(wildcards):
    return cfg.report_plan(report_name(wildcards)).caption


def eval_benchmark_files(job):
    """Snakemake's benchmark files of an evaluation: one per job that ran it (each shard)."""
    base = f"{R}/benchmarks/evaluate/{'/'.join(cfg.eval_key(config, job))}"
    if job.shards == 1:
        return [f"{base}.tsv"]
    return [f"{base}.shard{k}of{job.shards}.tsv" for k in range(job.shards)]


def cost_inputs(name):
    """Figure 10's files beyond metrics: each model's directory (its config.json gives the
    shape) and each RULER-HQA job's benchmark files (its wall time), by "system/length"."""
    jobs = cfg.report_jobs(config, name)
    return {
        "models": {g: str(cfg.model_dir(config, m)) for g, m in cfg.flops_models(config).items()},
        "benchmarks": {f"{j.system}/{j.length}": eval_benchmark_files(j) for j in jobs},
    }


def get_report_models(wildcards):
    name = report_name(wildcards)
    if not cfg.report_plan(name).measured_cost:
        return []
    return list(dict.fromkeys(cost_inputs(name)["models"].values()))


def get_report_benchmarks(wildcards):
    name = report_name(wildcards)
    if not cfg.report_plan(name).measured_cost:
        return []
    return [path for paths in cost_inputs(name)["benchmarks"].values() for path in paths]


# The machine a one-machine profile declares (`resources: gpu, nodes`): a job that does not fit is
# refused while planning, and each GPU job claims all of its GPUs (memrepro.config.machine).
MACHINE = cfg.Machine.from_resources(workflow.global_resources)


def get_filter_gpus(wildcards):
    models = config["filter"]["models"]
    gpus = max(cfg.model_gpus(config, name) for name in models)
    keys = " / ".join(cfg.gpu_keys(config, name) for name in models)
    return MACHINE.claim("filter_questions", gpus, 1, keys)


def get_train_gpus(wildcards):
    return train_gpu_claim(wildcards.train_run)


def train_gpu_claim(run):
    gpus, nodes = cfg.train_gpus(config, run), cfg.train_nodes(config, run)
    return MACHINE.claim(f"training run {run}", gpus, nodes, cfg.train_keys(config, run))


def get_train_nodes(wildcards):
    return cfg.train_nodes(config, wildcards.train_run)


def get_memalpha_launch(wildcards, input, output):
    """`--qa-model <dir> -- <verl command>` of a Mem-α run on verl; cpu: nothing."""
    if not cfg.uses_qa_server(config):
        return ""
    from memrepro.verl.job import launch_command
    from memrepro.verl.overrides import MEMALPHA

    settings = cfg.memalpha_train_settings(config, wildcards.memalpha_run)
    command = launch_command(settings, output[0], input.model, MEMALPHA, VERL_IMAGE)
    return f"--qa-model {shlex.quote(input.qa_model)} -- {shlex.join(command)}"


def get_memalpha_container(wildcards):
    """As get_train_container: Mem-α's verl runs (the QA server too) go through ray_job.sh."""
    return None if cfg.uses_qa_server(config) and VERL_IMAGE else CONTAINERS["train"]


def get_eval_gpus(wildcards):
    model = cfg.eval_model(config, SYSTEMS[wildcards.system], wildcards.benchmark)
    job = f"evaluation {wildcards.benchmark}/{wildcards.system}"
    return MACHINE.claim(job, cfg.model_gpus(config, model), 1, cfg.gpu_keys(config, model))


def get_rescore_gpus(wildcards):
    spec = cfg.rescore_settings(config, rescore_job(wildcards))["scorer"]
    return judge_gpus(spec["model"], f"rescore {wildcards.scorer}") if "model" in spec else 0


def get_judge_gpus(wildcards):
    return judge_gpus(judge_spec(wildcards)["model"], f"judge probe {wildcards.judge}")


def judge_gpus(model, job):
    return MACHINE.claim(job, cfg.model_gpus(config, model), 1, cfg.gpu_keys(config, model))


def get_memorize_gpus(wildcards):
    model = SYSTEMS[wildcards.system]["model"]
    job = f"memorize {wildcards.benchmark}/{wildcards.system}"
    return MACHINE.claim(job, cfg.model_gpus(config, model), 1, cfg.gpu_keys(config, model))


# Mem-α's training sets built again from their sources (memalpha.build; memrepro.config.memalpha_build)
def get_build_source_inputs(wildcards):
    files = build_plan.source_inputs(config, wildcards.build_group)
    return {role: [str(path) for path in paths] for role, paths in files.items()}


def get_build_source_args(wildcards, input):
    """Each input role as its flag (--rows, --memories, ...), the tokenizer apart."""
    roles = build_plan.source_inputs(config, wildcards.build_group)
    return " ".join(
        f"--{role} " + " ".join(shlex.quote(path) for path in input[role]) for role in roles
    )


def get_build_filter_inputs(wildcards):
    """A group's built instances, the token counter and (its filter's) model."""
    inputs = {
        "built": str(build_plan.built_file(config, wildcards.build_group, False)),
        "tokenizer": get_qa_tokenizer_dir(wildcards),
    }
    model = build_plan.filter_model(config, wildcards.build_group)
    if model is not None:
        inputs["model"] = str(cfg.model_dir(config, model))
    return inputs


def get_build_filter_model_arg(wildcards, input):
    return f"--model {shlex.quote(input.model)}" if "model" in input.keys() else ""


def get_build_filter_gpus(wildcards):
    model = build_plan.filter_model(config, wildcards.build_group)
    if model is None:
        return 0
    return MACHINE.claim(
        "memalpha_filter", cfg.model_gpus(config, model), 1, cfg.gpu_keys(config, model)
    )


def get_build_kept():
    return [
        str(build_plan.built_file(config, group, True)) for group in build_plan.build_groups(config)
    ]


def get_build_compare_inputs(wildcards):
    splits = list(build_plan.BUILT_SPLITS)
    return {
        "rebuilt": [str(build_plan.built_split(config, split)) for split in splits],
        "released": [str(cfg.memalpha_data(config, split)) for split in splits],
        "mab": str(cfg.memalpha_data(config, "mab")),
        "tokenizer": get_qa_tokenizer_dir(wildcards),
    }


# The same one line for a config error that an input, params or resource function finds while the
# DAG is built (a pinned sha256 a local file no longer matches, a job the machine cannot hold):
# Snakemake would print it inside its own frames. Every get_* function above, wrapped.
def _config_errors_as_one_line(function):
    @functools.wraps(function)  # Snakemake reads the signature (wildcards, input, output, ...)
    def checked(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except cfg.ConfigError as error:
            sys.exit(config_error_line(error))

    return checked


for _name, _function in list(globals().items()):
    if _name.startswith("get_") and inspect.isfunction(_function):
        globals()[_name] = _config_errors_as_one_line(_function)
