"""memrl cost: what a target costs before it runs: GPU-hours per rule, downloads and checkpoints.

    memrl cost --profile profiles/slurm all
    memrl cost --profile profiles/local table1 \
        --configfile config/config.yaml config/eval-released.yaml

It takes a dry run's arguments, plans them with Snakemake (so only the jobs still to run are
priced) and reads each job's rule, wildcards, resources and settings from the plan. Per GPU job:

- **estimate**: the FLOPs of its work (verl's Qwen2 count, memrl.report.flops: forward only for
  inference, forward and backward plus the rollout, old-policy, reference and recomputed forwards
  for training) at the FLOP rate measured for prefill on one GPU (src/memrl/measured/, by
  scripts/bench_gpu_throughput.py). Every call is counted at its token budgets and generated
  tokens at the prefill rate, a compute-bound pace that a well-batched engine approaches and
  decoding one sequence at a time does not. The work: MemAgent's benchmarks at the config's
  sizes (LongBench's published ones); Mem-α's instances at the sizes the paper's Tables 6-8
  print (RULER-HQA's samples cut into chunks); each system kind's calls (memrl.systems). Jobs
  whose work is not modelled (the question filter, a kind without calls) have none;
- **allocation**: its runtime limit times the GPUs it requests (the profile's resources), the
  upper bound a scheduler would charge.

After a run, `--actual results/<run>` sets the estimate of every job of the target that ran
(planned again as if from scratch, `--forceall`) beside what it used: its wall time from its
provenance record, times the GPUs it requested, per rule and with the ratio actual / estimate.
Where a training run of the same name measured its responses (`--lengths RESULTS`, else
--actual's; a finished run or one as far as it got), its estimate counts every response at that
mean length instead of the budget.

Hosted models (source `api`) use no GPU of ours: their calls are counted (at their budgets) in
millions of tokens, and in dollars at the model's `price` where the config gives one.

Downloads: model weights at 2 bytes per parameter (bf16 safetensors), from the published shape of
the model's family; datasets only where a manifest already records them. Checkpoints: verl keeps
`max_checkpoints` states of 14 bytes per parameter (bf16 weights, fp32 master weights and two
Adam moments) per training stage or Mem-α run (one per validation where a Mem-α recipe keeps the
best validated one), plus the merged bf16 model.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shlex
import statistics
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrl import config as cfg
from memrl.benchmarks import benchmark
from memrl.benchmarks.ruler_hqa import context_tokens as hqa_tokens
from memrl.config.base import MEMALPHA_STAGE
from memrl.report.flops import Qwen2Shape, dense_parameters, published_shape, sequence_flops
from memrl.report.memalpha_tables import STAT_FIELDS
from memrl.scoring.memalpha import JUDGE_TEMPLATE, is_judged
from memrl.settings_files import read_settings
from memrl.systems import system_kind
from memrl.systems.base import (
    QUESTION_TOKENS,
    Call,
    InstanceShape,
    Settings,
    template_tokens,
)

MEASURED = Path(__file__).resolve().parent / "measured" / "gpu_throughput_h200.json"
DEFAULT_CONFIG = "config/smoke.yaml"  # the Snakefile's embedded default
BF16_BYTES, TRAINING_STATE_BYTES = 2, 14  # per parameter
GB = 1e9


# ---------------------------------------------------------------- the plan, as Snakemake prints it


@dataclass(frozen=True)
class PlannedJob:
    rule: str
    wildcards: dict[str, str] = field(default_factory=dict)
    resources: dict[str, str] = field(default_factory=dict)
    settings: dict[str, Any] | None = None  # `--settings` of its shell command
    runs: bool = True  # it has a command (not a target that only gathers files)


def parse_plan(text: str) -> list[PlannedJob]:
    """The jobs of `snakemake -n -p` output (Snakemake 9): one block per job, `rule NAME:` then
    indented `key: value` lines, then `Shell command:` where the rule has one."""
    jobs: list[PlannedJob] = []
    for block in re.split(r"^(?=(?:local)?rule \S+:$)", text, flags=re.MULTILINE):
        head = re.match(r"(?:local)?rule (\S+):$", block, flags=re.MULTILINE)
        if not head:
            continue
        fields = dict(re.findall(r"^    (\w+): (.*)$", block, flags=re.MULTILINE))
        command = re.search(r"^Shell command: (.*)$", block, flags=re.MULTILINE)
        jobs.append(
            PlannedJob(
                head[1],
                _pairs(fields.get("wildcards", "")),
                _pairs(fields.get("resources", "")),
                _settings(command[1]) if command else None,
                bool(command) and command[1] != "None",
            )
        )
    return jobs


def _pairs(text: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in text.split(", ") if "=" in part)


def _settings(command: str) -> dict[str, Any] | None:
    words = shlex.split(command)
    if "--settings" not in words:
        return None
    return read_settings(words[words.index("--settings") + 1])


# ---------------------------------------------------------------- the measured rate


def prefill_flop_rate(measured: dict[str, Any]) -> float:
    """FLOP/s the measured prefill points achieve: their forward FLOPs (causal attention, the
    decoder only) over their seconds, the median over every model and length."""
    rates = []
    for model in measured["models"]:
        shape = published_shape(f"qwen2.5-{model['shape']}")
        for point in model["prefill"]:
            if shape and "seconds" in point:
                rates.append(forward_flops(shape, [point["tokens"]]) / point["seconds"])
    if not rates:
        raise ValueError(f"{MEASURED}: no prefill measurement of a known shape")
    return sorted(rates)[len(rates) // 2]


def forward_flops(shape: Qwen2Shape, lengths: Iterable[int]) -> float:
    """One forward pass: a third of verl's forward-and-backward count with causal attention."""
    return sequence_flops(shape, lengths, attention="verl") / 3


# ---------------------------------------------------------------- what one job does


def job_questions(config: dict[str, Any], settings: dict[str, Any]) -> list[tuple[int, int]]:
    """(questions, context tokens) per task of one evaluate job on a benchmark that sizes its
    samples (MemAgent's), in its shard."""
    sizes = benchmark(settings["benchmark"]).sizes
    work = sizes(config, settings["tasks"], int(settings["length"]))
    shards = settings.get("shards", 1)
    return [(math.ceil(n / shards), tokens) for n, tokens in work]


Work = list[tuple[float, list[Call]]]  # (how many times, the engine calls of one) of a job


def work_flops(shape: Qwen2Shape, work: Work) -> float:
    return sum(n * forward_flops(shape, lengths(calls)) for n, calls in work)


def evaluation_work(config: dict[str, Any], settings: dict[str, Any]) -> Work | None:
    """An evaluate job's calls per question, on a benchmark that sizes its samples."""
    kind = system_kind(settings["kind"])
    if kind.calls is None or benchmark(settings["benchmark"]).sizes is None:
        return None
    return [(n, kind.calls(settings, tokens)) for n, tokens in job_questions(config, settings)]


def lengths(calls: Iterable[Call]) -> list[int]:
    return [prompt + output for prompt, output in calls]


def policy_update_flops(shape: Qwen2Shape, calls: list[Call], settings: dict[str, Any]) -> float:
    """verl's passes over one rollout's calls: the rollout, old-policy and reference forwards
    (the reference only with a KL loss), the actor's forward and backward and, with gradient
    checkpointing, its recomputed forward."""
    backward = sequence_flops(shape, lengths(calls), attention="verl")
    forwards = 2 + (settings["kl_coef"] > 0) + settings["verl"]["gradient_checkpointing"]
    return backward + forwards * backward / 3


def training_flops(
    config: dict[str, Any],
    settings: dict[str, Any],
    shape: Qwen2Shape,
    response_tokens: float | None = None,
) -> float:
    """A MemAgent training stage: steps x rollout questions x group conversations over its
    data's context (stage I: RULER-HQA's training documents; stage II: the mix's longest rows),
    each call at its budgets, through verl's passes; with `response_tokens` (measured: the mean
    response of a conversation), every memory written and read, and every answer, that long."""
    agent = settings["agent"]
    if response_tokens is not None:
        measured = round(response_tokens)
        agent = {**agent, "memory_tokens": measured, "final_tokens": measured}
    longest = settings["max_chunks"] * agent["chunk_tokens"]
    if settings["stage"] == "stage1":
        context = min(hqa_tokens(config, config["ruler_hqa"]["train_docs"]), longest)
    else:
        context = min(config["training"]["stage2_data"]["max_context_tokens"], longest)
    calls = system_kind("memagent").calls({"agent": agent}, context)
    return rollouts(settings) * policy_update_flops(shape, calls, settings)


def rollouts(settings: dict[str, Any]) -> int:
    """A training run's rollouts: steps x prompts per step x group size."""
    return settings["steps"] * settings["rollout_batch"] * settings["group_size"]


# ---------------------------------------------------------------- Mem-α's instances


Instances = list[tuple[int, InstanceShape, str]]  # (instances, their shape, source) per source


def published_instances(paper: dict[str, Any]) -> dict[str, dict[str, list[float]]]:
    """Per Mem-α split, per source: [instances, chunks per instance, tokens per chunk, questions
    per instance] as the paper's Tables 6-8 print them (Table 7's decimals over Table 6's)."""
    stats: dict[str, dict[str, list[float]]] = {}
    for table in ("table6", "table7", "table8"):
        for split, part in paper.get(table, {}).get("splits", {}).items():
            stats.setdefault(split, {}).update(part["stats"])
    return stats


def split_instances(
    published: dict[str, dict[str, list[float]]], split: str, sources: Iterable[str]
) -> Instances | None:
    """The instances of these sources of a split; None if the paper gives one no size."""
    sizes = published.get(split, {})
    if any(source not in sizes for source in sources):
        return None
    work = []
    for source in sources:
        stats = dict(zip(STAT_FIELDS, sizes[source], strict=True))
        shape = InstanceShape(
            max(round(stats["chunks_per_instance"]), 1),
            round(stats["tokens_per_chunk"]),
            max(round(stats["questions_per_instance"]), 1),
        )
        work.append((int(stats["instances"]), shape, source))
    return work


def job_instances(pricing: Pricing, settings: dict[str, Any]) -> Instances | None:
    """The instances one memorize or evaluate job reads: a benchmark's samples made instances
    as it shapes them (RULER-HQA's), else its own, as the measured split's statistics size them."""
    shapes = benchmark(settings["benchmark"]).instance_shapes
    if shapes is None:
        return split_instances(pricing.instances, settings["benchmark"], settings["tasks"])
    return [
        (count, InstanceShape(*shape), source)
        for count, shape, source in shapes(pricing.config, settings)
    ]


def judge_calls(qa: Settings, instance: InstanceShape, source: str) -> list[Call]:
    """The QA model judging each answer of a LongMemEval-style source (rubric, question and
    the answer at the QA budget)."""
    if not is_judged(source):
        return []
    prompt = template_tokens(JUDGE_TEMPLATE) + QUESTION_TOKENS + qa["max_tokens"]
    return [(prompt, qa["judge_max_tokens"])] * instance.questions


def memorize_work(pricing: Pricing, settings: dict[str, Any]) -> Work | None:
    kind = system_kind(settings["kind"])
    instances = job_instances(pricing, settings)
    if kind.memorize_calls is None or instances is None:
        return None
    return [(n, kind.memorize_calls(settings, instance)) for n, instance, _ in instances]


def instance_evaluation_work(
    pricing: Pricing, settings: dict[str, Any], memorized: Settings | None
) -> Work | None:
    """An evaluate job on Mem-α's instances: the kind's calls (after a memorize job, with its
    settings as "memorized") and the judge's."""
    kind = system_kind(settings["kind"])
    instances = job_instances(pricing, settings)
    if kind.instance_calls is None or instances is None:
        return None
    if memorized is not None:
        settings = {**settings, "memorized": memorized}
    return [
        (
            n,
            [
                *kind.instance_calls(settings, instance),
                *judge_calls(settings["qa"], instance, source),
            ],
        )
        for n, instance, source in instances
    ]


# a summary's tokens in Mem-α's keyword rebuild: not in the paper's tables (BookSum's chapter
# summaries and InfBench's book summaries run to a few hundred words), an assumption
KEYWORD_SUMMARY_TOKENS = 1000


def keywords_work(pricing: Pricing, settings: dict[str, Any]) -> Work | None:
    """Mem-α's keyword rebuild: one call per released instance of the source (the paper's
    counts), the prompt with a summary of KEYWORD_SUMMARY_TOKENS, the reply at its budget."""
    from memrl.data.keywords import PROMPTS

    system, prompt = PROMPTS[settings["prompt"]][settings["kind"]]
    call = (
        template_tokens(system) + template_tokens(prompt) + KEYWORD_SUMMARY_TOKENS,
        settings["max_tokens"],
    )
    counts = [
        pricing.instances.get(split, {}).get(settings["set"]) for split in settings["released"]
    ]
    if any(count is None for count in counts):
        return None
    return [(sum(int(count[0]) for count in counts), [call])]


def content_judge_calls(settings: dict[str, Any], instance: InstanceShape) -> list[Call]:
    """With γ > 0, the judge of each chunk's written content (r4): its longest rubric and the
    content at the response budget."""
    from memrl.train.memalpha_rewards import CONTENT_JUDGE_PROMPTS

    if settings["gamma"] <= 0:
        return []
    rubric = max(template_tokens(prompt) for prompt in CONTENT_JUDGE_PROMPTS.values())
    prompt = rubric + QUESTION_TOKENS + settings["agent"]["max_new_tokens"]
    return [(prompt, settings["judge"]["max_tokens"])] * instance.chunks


def memalpha_training_flops(
    pricing: Pricing,
    settings: dict[str, Any],
    policy: Qwen2Shape,
    qa: Qwen2Shape,
    response_tokens: float | None = None,
) -> float | None:
    """Mem-α's GRPO: steps x rollout batch x group rollouts, each the memorisation of a training
    instance (the paper's Table 7 mix, by its counts) through verl's passes, and on the QA model
    the questions of r1, the judge of LongMemEval's and the content judge of r4; with
    `response_tokens` (measured), each chunk's response that long instead of its budget."""
    kind = system_kind("memalpha")
    if response_tokens is not None:
        agent = {**settings["agent"], "max_new_tokens": round(response_tokens)}
        settings = {**settings, "agent": agent}
    work = split_instances(pricing.instances, "train", settings["sources"])
    if not work:
        return None
    instances = sum(n for n, _, _ in work)
    per_rollout = 0.0
    for n, instance, source in work:
        rollout = kind.memorize_calls(settings, instance)
        rewards = [
            *kind.instance_calls(settings, instance),
            *judge_calls(settings["qa"], instance, source),
            *content_judge_calls(settings, instance),
        ]
        flops = policy_update_flops(policy, rollout, settings) + forward_flops(qa, lengths(rewards))
        per_rollout += n / instances * flops
    return rollouts(settings) * per_rollout


@dataclass
class Price:
    rule: str
    estimate_gpu_h: float | None = None
    allocation_gpu_h: float | None = None
    download_gb: float = 0.0
    checkpoint_gb: float = 0.0
    gpu: bool = False
    measured: bool = False  # the estimate counts responses at a run's measured length
    hosted: bool = False  # its model is hosted (source api): it uses no GPU of ours
    api: Usage | None = None  # the hosted model's calls (None: no API job, or not modelled)


@dataclass(frozen=True)
class Usage:
    """What a job asks of a hosted model: calls, tokens in and out, dollars at its price."""

    calls: float
    input_tokens: float
    output_tokens: float
    usd: float | None  # None: the config gives the model no `price`

    @classmethod
    def of(cls, work: Work, price: dict[str, float] | None) -> Usage:
        calls = sum(n * len(c) for n, c in work)
        tokens_in = sum(n * prompt for n, c in work for prompt, _ in c)
        tokens_out = sum(n * output for n, c in work for _, output in c)
        usd = None
        if price is not None:
            usd = (tokens_in * price["input"] + tokens_out * price["output"]) / 1e6
        return cls(calls, tokens_in, tokens_out, usd)


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

    def response_tokens(self, run: str, stage: str) -> float | None:
        """A training stage's measured mean response tokens in `lengths`, if it has any."""
        if self.lengths is None:
            return None
        return measured_response_tokens(self.lengths / "checkpoints" / run / stage)


def measured_response_tokens(out: Path) -> float | None:
    """The mean response (tokens per conversation or chunk row) over the steps a training stage
    logged: its finished `train_metrics.jsonl`, else the CPU trainer's growing one, else verl's
    logs of every attempt (a killed or running job); None where none has `response_tokens_mean`
    (or the CPU trainer's totals)."""
    from memrl.data.io import iter_jsonl
    from memrl.verl.job import METRICS_FILE, curve_rows, read_verl_logs, work_dir

    rows: list[dict[str, Any]] = []
    for file in (out / METRICS_FILE, out.parent / f".{out.name}.partial" / METRICS_FILE):
        if file.is_file():
            rows = list(iter_jsonl(file))
            break
    else:
        logs = sorted((work_dir(out) / "metrics").glob("attempt-*.jsonl"))
        rows = curve_rows(read_verl_logs(logs)) if logs else []
    found = [mean for mean in map(_response_mean, rows) if mean is not None]
    return statistics.fmean(found) if found else None


def _response_mean(row: dict[str, Any]) -> float | None:
    if "response_tokens_mean" in row:
        return float(row["response_tokens_mean"])
    if row.get("n_conversations"):  # the CPU trainer's totals, before it logged the mean
        return float(row["response_tokens"]) / float(row["n_conversations"])
    return None


def gpu_hours(flops: float | None, rate: float) -> float | None:
    return None if flops is None else flops / rate / 3600


def price_job(job: PlannedJob, pricing: Pricing) -> Price:
    gpus = int(job.resources.get("gpu", 0) or 0)
    price = Price(job.rule, gpu=gpus > 0)
    if gpus and "runtime" in job.resources:
        price.allocation_gpu_h = int(job.resources["runtime"]) / 60 * gpus
    config, shapes = pricing.config, pricing.shapes
    settings = job.settings or {}
    model, work = inference_work(job.rule, settings, pricing) if settings else (None, None)
    hosted = model is not None and config["models"].get(model, {}).get("source") == "api"
    price.hosted = hosted
    if hosted and work is not None:
        price.api = Usage.of(work, config["models"][model].get("price"))
    elif gpus and model is not None:
        shape = shapes.get(model)
        flops = work_flops(shape, work) if shape and work is not None else None
        price.estimate_gpu_h = gpu_hours(flops, pricing.rate)
    elif gpus and job.rule in TRAINING_RULES and settings:
        response_tokens = pricing.response_tokens(settings["run"], training_stage(settings))
        flops = training_job_flops(job.rule, settings, pricing, response_tokens)
        price.estimate_gpu_h = gpu_hours(flops, pricing.rate)
        price.measured = response_tokens is not None and flops is not None
    if job.rule in TRAINING_RULES and "verl" in settings:
        shape = shapes.get(settings["run"])
        if shape:
            bytes_per_parameter = kept_states(settings) * TRAINING_STATE_BYTES + BF16_BYTES
            price.checkpoint_gb = dense_parameters(shape) * bytes_per_parameter / GB
    elif job.rule == "download_model":
        shape = shapes.get(job.wildcards.get("model", ""))
        if shape:
            price.download_gb = dense_parameters(shape) * BF16_BYTES / GB
    elif job.rule == "download_data":
        price.download_gb = _recorded_size(config, job.wildcards.get("source", "")) / GB
    return price


TRAINING_RULES = ("train_stage1", "train_stage2", "train_memalpha")  # verl runs that keep states


def kept_states(settings: dict[str, Any]) -> int:
    """The training states a verl run keeps: its last `max_checkpoints`, or (a Mem-α recipe that
    keeps the best validated checkpoint) one per validation: every `every` steps and the last."""
    if settings.get("checkpoint") == "best":
        return math.ceil(settings["steps"] / settings["validation"]["every"])
    return settings["verl"]["max_checkpoints"] or 1


def inference_work(
    rule: str, settings: dict[str, Any], pricing: Pricing
) -> tuple[str | None, Work | None]:
    """(the model it loads, its calls) of an inference job; (None, None) for another rule, and
    None for work not modelled."""
    if rule in ("evaluate", "evaluate_shard"):
        return evaluate_job_work(pricing, settings)
    if rule == "memorize":
        return pricing.systems[settings["system"]]["model"], memorize_work(pricing, settings)
    if rule == "rebuild_keywords":
        return settings["model"], keywords_work(pricing, settings)
    return None, None


def training_stage(settings: dict[str, Any]) -> str:
    return settings.get("stage", MEMALPHA_STAGE)


def training_job_flops(
    rule: str, settings: dict[str, Any], pricing: Pricing, response_tokens: float | None
) -> float | None:
    """The FLOPs of a training job; None where it is not modelled."""
    config, shapes = pricing.config, pricing.shapes
    if rule == "train_memalpha":
        policy, qa = shapes.get(settings["base"]), shapes.get(cfg.qa_model(config))
        if not (policy and qa):
            return None
        return memalpha_training_flops(pricing, settings, policy, qa, response_tokens)
    if rule in ("train_stage1", "train_stage2"):
        shape = shapes.get(cfg.memagent_runs(config)[settings["run"]]["base"])
        return training_flops(config, settings, shape, response_tokens) if shape else None
    return None


def evaluate_job_work(pricing: Pricing, settings: dict[str, Any]) -> tuple[str, Work | None]:
    """An evaluate job's model (the one it loads) and calls: MemAgent's benchmarks, or Mem-α's
    instances."""
    system = pricing.systems[settings["system"]]
    benchmark = settings["benchmark"]
    model = cfg.eval_model(pricing.config, system, benchmark)
    kind = system_kind(system["kind"])
    if not kind.reads_instances(benchmark):
        return model, evaluation_work(pricing.config, settings)
    memorized = None
    if kind.memorizes(benchmark) and kind.memorize_settings is not None:
        memorized = kind.memorize_settings(pricing.config, system)  # what its input was made by
    return model, instance_evaluation_work(pricing, settings, memorized)


def _recorded_size(config: dict[str, Any], source: str) -> float:
    """A dataset's size in bytes where a manifest of an earlier download records it, else 0."""
    if source not in config["sources"]:
        return 0.0
    manifest = Path(f"{cfg.raw_file(config, source)}.manifest.json")
    if not manifest.is_file():
        return 0.0
    return float(json.loads(manifest.read_text()).get("bytes", 0))


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


# ---------------------------------------------------------------- the report


def summarise(prices: Sequence[Price]) -> list[dict[str, Any]]:
    """One row per rule with GPU jobs, downloads or checkpoints, by rule name."""
    rows: dict[str, dict[str, Any]] = {}
    for price in prices:
        row = rows.setdefault(
            price.rule,
            {
                "rule": price.rule,
                "jobs": 0,
                "gpu_jobs": 0,
                "estimated_jobs": 0,
                "estimate_gpu_h": 0.0,
                "allocation_gpu_h": 0.0,
                "download_gb": 0.0,
                "checkpoint_gb": 0.0,
                "measured_jobs": 0,
                "api_jobs": 0,
                "api_modelled_jobs": 0,
                "api_calls": 0,
                "api_mtok": 0.0,
                "api_usd": 0.0,
                "unpriced_api_jobs": 0,
            },
        )
        row["jobs"] += 1
        row["gpu_jobs"] += price.gpu
        if price.estimate_gpu_h is not None:
            row["estimated_jobs"] += 1
            row["estimate_gpu_h"] += price.estimate_gpu_h
        row["measured_jobs"] += price.measured
        row["allocation_gpu_h"] += price.allocation_gpu_h or 0.0
        row["download_gb"] += price.download_gb
        row["checkpoint_gb"] += price.checkpoint_gb
        row["api_jobs"] += price.hosted
        if price.api is not None:
            row["api_modelled_jobs"] += 1
            row["api_calls"] += round(price.api.calls)
            row["api_mtok"] += (price.api.input_tokens + price.api.output_tokens) / 1e6
            row["api_usd"] += price.api.usd or 0.0
        row["unpriced_api_jobs"] += price.hosted and (price.api is None or price.api.usd is None)
    kept = [
        r
        for r in rows.values()
        if r["gpu_jobs"] or r["download_gb"] or r["checkpoint_gb"] or r["api_jobs"]
    ]
    return sorted(kept, key=lambda row: row["rule"])


COLUMNS = (  # (heading, text width, row key)
    ("rule", 22, "rule"),
    ("jobs", 6, "jobs"),
    ("GPU jobs", 10, "gpu_jobs"),
    ("estimated", 11, "estimated_jobs"),
    ("estimate GPU-h", 16, "estimate_gpu_h"),
    ("allocation GPU-h", 18, "allocation_gpu_h"),
    ("downloads GB", 14, "download_gb"),
    ("checkpoints GB", 16, "checkpoint_gb"),
    ("API calls", 11, "api_calls"),
    ("API Mtok", 10, "api_mtok"),
    ("API $", 10, "api_usd"),
)
# in the rows, not shown as columns
COUNTED = ("measured_jobs", "api_jobs", "api_modelled_jobs", "unpriced_api_jobs")


def with_total(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    keys = [key for _, _, key in COLUMNS[1:]] + list(COUNTED)
    total = {key: sum(row[key] for row in rows) for key in keys}
    return [*rows, {"rule": "total", **total}]


def cells(row: dict[str, Any]) -> list[str]:
    """A row's values as shown: hours and gigabytes rounded, "—" for an estimate of no job (or
    API use of none), * on an estimate with measured response lengths, + on dollars that leave
    out a hosted model's job (no price, or calls not modelled)."""
    shown = []
    for _, _, key in COLUMNS:
        value = row[key]
        if key == "estimate_gpu_h" and not row["estimated_jobs"]:
            shown.append("—")
        elif key == "estimate_gpu_h":
            shown.append(_hours(value) + ("*" if row["measured_jobs"] else ""))
        elif key.startswith("api_") and not row["api_modelled_jobs"]:
            shown.append("—+" if key == "api_usd" and row["api_jobs"] else "—")
        elif key == "api_mtok":
            shown.append(f"{value:,.1f}")
        elif key == "api_usd":
            shown.append(f"{value:,.0f}" + ("+" if row["unpriced_api_jobs"] else ""))
        elif key.endswith("_gpu_h"):
            shown.append(_hours(value))
        elif key.endswith("_gb"):
            shown.append(f"{value:,.0f}")
        else:
            shown.append(f"{value:,}" if isinstance(value, int) else str(value))
    return shown


def render(
    rows: Sequence[dict[str, Any]], planned: int, measured: dict[str, Any], rate: float
) -> str:
    def line(values: Sequence[str]) -> str:
        return values[0].ljust(COLUMNS[0][1]) + "".join(
            value.rjust(width) for value, (_, width, _) in zip(values[1:], COLUMNS[1:], strict=True)
        )

    header = line([title for title, _, _ in COLUMNS])
    *body, total = with_total(rows)
    lines = [header, "-" * len(header), *(line(cells(row)) for row in body)]
    lines += [
        "-" * len(header),
        line(cells(total)),
        f"(and {planned - total['jobs']} other jobs: CPU work, downloads of data, tables and "
        "figures)",
        "",
        f"estimate: FLOPs at {rate / 1e12:,.0f} TFLOP/s, the prefill rate measured on one "
        f"{measured['device']} ({measured['dtype']}, transformers {measured['transformers']}); "
        "every call at its token budgets (* : training responses at the mean length its run "
        "measured, --lengths); — : work not modelled (allocation only).",
        "allocation: each job's runtime limit x the GPUs it requests, the scheduler's upper bound.",
        "downloads: model weights at 2 bytes per parameter, datasets where a manifest records "
        "them; checkpoints: verl's kept training states and the merged model.",
        API_NOTE,
    ]
    return "\n".join(lines)


API_NOTE = (
    "API: the calls of hosted models (source api), at their token budgets; dollars at each "
    "model's `price` (per million input and output tokens; + : a hosted model without one, or "
    "whose calls are not modelled, left out)."
)


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The rows and their total as a Markdown table (the README's)."""
    lines = [
        "| " + " | ".join(title for title, _, _ in COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    *body, total = with_total(rows)
    for row in body:
        rule, *rest = cells(row)
        lines.append("| " + " | ".join([f"`{rule}`", *rest]) + " |")
    rule, *rest = cells(total)
    lines.append("| " + " | ".join([f"**{rule}**", *rest]) + " |")
    return "\n".join(lines)


def _hours(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:,.1f}"


# ---------------------------------------------------------------- what a run used


def finished_records(records: Iterable[dict[str, Any]]) -> dict[tuple[str, tuple], dict[str, Any]]:
    """The last finished record of each job, by (rule, wildcards)."""
    found: dict[tuple[str, tuple], dict[str, Any]] = {}
    for record in sorted(records, key=lambda r: r.get("end_ms") or 0):
        if record.get("status") == "FINISHED" and record.get("wall_s") is not None:
            found[(record["rule"], tuple(sorted(record.get("wildcards", {}).items())))] = record
    return found


def actual_rows(
    jobs: Sequence[PlannedJob], prices: Sequence[Price], records: Iterable[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Per rule of the planned jobs: how many ran (a finished record), the estimate of those
    (GPU-h), what they used (wall hours; GPU-h = wall time x the GPUs each requested) and the
    ratio actual / estimate over the jobs that have both."""
    ran = finished_records(records)
    rows: dict[str, dict[str, Any]] = {}
    for job, price in zip(jobs, prices, strict=True):
        if not job.runs:
            continue
        row = rows.setdefault(
            job.rule,
            {"rule": job.rule, "jobs": 0, "ran": 0, "wall_h": 0.0, "estimate_gpu_h": 0.0}
            | {"actual_gpu_h": 0.0, "compared_estimate": 0.0, "compared_actual": 0.0},
        )
        row["jobs"] += 1
        record = ran.get((job.rule, tuple(sorted(job.wildcards.items()))))
        if record is None:
            continue
        hours = float(record["wall_s"]) / 3600
        used = hours * int(job.resources.get("gpu", 0) or 0)
        row["ran"] += 1
        row["wall_h"] += hours
        row["actual_gpu_h"] += used
        if price.estimate_gpu_h is not None:
            row["estimate_gpu_h"] += price.estimate_gpu_h
            if used:
                row["compared_estimate"] += price.estimate_gpu_h
                row["compared_actual"] += used
    for row in rows.values():
        estimate = row.pop("compared_estimate")
        row["ratio"] = row.pop("compared_actual") / estimate if estimate else None
    return sorted(rows.values(), key=lambda row: row["rule"])


def render_actual(rows: Sequence[dict[str, Any]], results: Path) -> str:
    widths = (22, 6, 6, 10, 16, 14, 16)
    titles = ("rule", "jobs", "ran", "wall h", "estimate GPU-h", "actual GPU-h", "actual/estimate")

    def line(values: Sequence[str]) -> str:
        head, *rest = values
        return head.ljust(widths[0]) + "".join(
            v.rjust(w) for v, w in zip(rest, widths[1:], strict=True)
        )

    body = [
        line(
            [
                row["rule"],
                f"{row['jobs']:,}",
                f"{row['ran']:,}",
                f"{row['wall_h']:,.2f}" if row["wall_h"] >= 0.1 else f"{row['wall_h']:.3f}",
                _hours(row["estimate_gpu_h"]) if row["estimate_gpu_h"] else "—",
                _hours(row["actual_gpu_h"]) if row["actual_gpu_h"] else "—",
                "—" if row["ratio"] is None else f"{row['ratio']:.2f}×",
            ]
        )
        for row in rows
    ]
    header = line(titles)
    return "\n".join(
        [
            header,
            "-" * len(header),
            *body,
            "",
            f"ran: the jobs of the target with a finished record in {results} (the last of "
            "each); wall h: their wall time; actual GPU-h: wall time x the GPUs each requested; "
            "actual/estimate: over the GPU jobs that have both.",
        ]
    )


# ---------------------------------------------------------------- the command


def config_files(args: Sequence[str]) -> list[str]:
    """The config files Snakemake reads for these arguments: --configfile's, else the profile's,
    else the Snakefile's default."""
    from memrl.launch import parsed_arguments

    parsed = parsed_arguments(args)
    if parsed.configfile:
        return [str(path) for path in parsed.configfile]
    if parsed.profile:
        profile = cfg.load_yaml(profile_dir(parsed.profile[-1]) / "config.yaml")
        files = profile.get("configfile", DEFAULT_CONFIG)
        return [files] if isinstance(files, str) else list(files)
    return [DEFAULT_CONFIG]


def profile_dir(name: str) -> Path:
    """A `--profile` as Snakemake finds it (a directory, or one under profiles/), else an error
    listing the profiles there are."""
    for path in (Path(name), Path("profiles") / name):
        if (path / "config.yaml").is_file():
            return path
    known = sorted(str(p.parent) for p in Path("profiles").glob("*/config.yaml"))
    raise SystemExit(f"--profile {name}: no such profile (profiles: {', '.join(known)})")


def dry_run(args: Sequence[str], overrides: dict[str, Any]) -> str:
    from memrl.launch import snakemake_env

    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "-p", *args],
        capture_output=True,
        text=True,
        env=snakemake_env(overrides),
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(
            f"memrl cost: the dry run failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
        )
    return done.stdout


def main(argv: Sequence[str] | None = None) -> None:
    from memrl.launch import split_overrides

    parser = argparse.ArgumentParser(
        prog="memrl cost",
        description=__doc__.split("\n\n")[0].split(": ", 1)[1],
        epilog="Other arguments are a dry run's: --profile, targets, --configfile, --config.",
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="the rows as JSON")
    output.add_argument("--markdown", action="store_true", help="the rows as a Markdown table")
    parser.add_argument("--measured", type=Path, default=MEASURED, help="throughput measurements")
    parser.add_argument(
        "--actual",
        type=Path,
        metavar="RESULTS",
        help="after a run: each rule's estimate beside what its jobs in RESULTS used",
    )
    parser.add_argument(
        "--lengths",
        type=Path,
        metavar="RESULTS",
        help="training responses at the mean length measured by the same runs in RESULTS "
        "(finished, or as far as they got); default: --actual's",
    )
    known, rest = parser.parse_known_args(argv)
    args, overrides = split_overrides(rest)
    if known.actual is not None:
        args = [*args, "--forceall"]  # every job of the target, as the run planned it
    lengths = known.lengths or known.actual
    if lengths is not None and not lengths.is_dir():
        raise SystemExit(f"--lengths {lengths}: no such results directory")
    config = cfg.load_config(config_files(args), overrides)
    measured = json.loads(known.measured.read_text())
    rate = prefill_flop_rate(measured)
    pricing = Pricing.of(config, rate, lengths)
    try:
        jobs = parse_plan(dry_run(args, overrides))
    except ValueError as exc:  # a job's settings file that cannot be read
        raise SystemExit(f"memrl cost: {exc}") from None
    prices = [price_job(job, pricing) for job in jobs]
    if known.actual is not None:
        from memrl.tracking import records_under

        if not known.actual.is_dir():
            raise SystemExit(f"--actual {known.actual}: no such results directory")
        used = actual_rows(jobs, prices, records_under(known.actual))
        print(
            json.dumps({"rows": used}, indent=1)
            if known.json
            else render_actual(used, known.actual)
        )
        return
    rows = summarise(prices)
    if known.json:
        print(json.dumps({"rows": rows, "flop_rate": rate, "device": measured["device"]}, indent=1))
    elif known.markdown:
        print(markdown(rows))
    else:
        print(render(rows, len(prices), measured, rate))


if __name__ == "__main__":
    main()
