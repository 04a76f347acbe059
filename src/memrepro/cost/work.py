"""What an inference job of the plan computes: the engine calls of each question (MemAgent's
benchmarks, sized by the config) or instance (Mem-α's, sized by the paper's tables), of the judge
and of the keyword rebuild, and the forward FLOPs of those calls."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from memrepro import config as cfg
from memrepro.benchmarks import benchmark
from memrepro.cost.pricing import Pricing
from memrepro.report.flops import Qwen2Shape, sequence_flops
from memrepro.report.memalpha_tables import STAT_FIELDS
from memrepro.scoring.memalpha import JUDGE_TEMPLATE, is_judged
from memrepro.systems import system_kind
from memrepro.systems.base import (
    QUESTION_TOKENS,
    Call,
    InstanceShape,
    Settings,
    Work,
    template_tokens,
)

Instances = list[tuple[int, InstanceShape, str]]  # (instances, their shape, source) per source


def lengths(calls: Iterable[Call]) -> list[int]:
    return [prompt + output for prompt, output in calls]


def forward_flops(shape: Qwen2Shape, lengths: Iterable[int]) -> float:
    """One forward pass: a third of verl's forward-and-backward count with causal attention."""
    return sequence_flops(shape, lengths, attention="verl") / 3


def work_flops(shape: Qwen2Shape, work: Work) -> float:
    return sum(n * forward_flops(shape, lengths(calls)) for n, calls in work)


def job_questions(config: dict[str, Any], settings: dict[str, Any]) -> list[tuple[int, int]]:
    """(questions, context tokens) per task of one evaluate job on a benchmark that sizes its
    samples (MemAgent's), in its shard."""
    sizes = benchmark(settings["benchmark"]).sizes
    work = sizes(config, settings["tasks"], int(settings["length"]))
    shards = settings.get("shards", 1)
    return [(math.ceil(n / shards), tokens) for n, tokens in work]


def evaluation_work(config: dict[str, Any], settings: dict[str, Any]) -> Work | None:
    """An evaluate job's calls per question, on a benchmark that sizes its samples."""
    kind = system_kind(settings["kind"])
    if kind.calls is None or benchmark(settings["benchmark"]).sizes is None:
        return None
    return [(n, kind.calls(settings, tokens)) for n, tokens in job_questions(config, settings)]


def hosted_work(rule: str, settings: dict[str, Any], pricing: Pricing) -> list[tuple[str, Work]]:
    """An evaluate job's calls on hosted models beside its engine's (an embedder, Mem0's LLM),
    per model, on a benchmark that sizes its samples; none elsewhere."""
    if rule not in ("evaluate", "evaluate_shard"):
        return []
    kind = system_kind(pricing.systems[settings["system"]]["kind"])
    if kind.hosted_calls is None or benchmark(settings["benchmark"]).sizes is None:
        return []
    return kind.hosted_calls(settings, job_questions(pricing.config, settings))


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


def largest_instance(
    published: dict[str, dict[str, list[float]]], sources: Iterable[str]
) -> tuple[InstanceShape, str] | None:
    """The largest instance (chunks x tokens per chunk) of these sources in any split the paper
    sizes, with its source; None if the paper sizes none of them."""
    sized = [
        item
        for split in published
        for item in split_instances(published, split, [s for s in sources if s in published[split]])
        or []
    ]
    if not sized:
        return None
    _, shape, source = max(sized, key=lambda item: item[1].chunks * item[1].chunk_tokens)
    return shape, source


def job_instances(pricing: Pricing, settings: dict[str, Any]) -> Instances | None:
    """The instances one memorize or evaluate job reads: a benchmark's samples made instances
    as it shapes them (RULER-HQA's), else its own, as the measured split's statistics size them."""
    found = benchmark(settings["benchmark"])
    if found.sized_as is not None:
        count, sources = found.sized_as(pricing.config)
        largest = largest_instance(pricing.instances, sources)
        return None if largest is None else [(count, *largest)]
    if found.instance_shapes is None:
        return split_instances(pricing.instances, found.name, settings["tasks"])
    shapes = found.instance_shapes
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
    from memrepro.data.keywords import PROMPTS

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


# the questions the official filters ask (all of a source's, an upper bound: the closed-book
# filter skips long golds): SQuAD v1.1's and HotpotQA's train sets as published, and the PerLTQA
# paper's count; a PerLTQA question comes with its character's whole context (Table 6: 23.3
# chunks of 517 tokens)
FILTER_QUESTIONS = {"squad": 87_599, "hotpotqa": 90_447, "perltqa": 8_593}
PERLTQA_CONTEXT_TOKENS = 12_000


def build_filter_work(settings: dict[str, Any]) -> Work | None:
    """Mem-α's rebuilt sets: one call per question a group's official filter asks."""
    from memrepro.data.memalpha_build.conversations import ANSWERABILITY_PROMPT
    from memrepro.data.memalpha_build.documents import CLOSED_BOOK_SYSTEM

    questions = FILTER_QUESTIONS.get(settings["group"])
    if questions is None:
        return None
    if settings["filter"] == "closed_book":
        prompt = template_tokens(CLOSED_BOOK_SYSTEM) + QUESTION_TOKENS
    else:
        prompt = template_tokens(ANSWERABILITY_PROMPT) + PERLTQA_CONTEXT_TOKENS + QUESTION_TOKENS
    return [(questions, [(prompt, settings["max_tokens"])])]


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
    if rule == "memalpha_filter" and settings.get("filter"):
        return settings["model"], build_filter_work(settings)
    if rule == "rescore" and "model" in settings["scorer"]:
        return settings["scorer"]["model"], rejudge_work(pricing, settings)
    if rule == "judge_probe":
        return settings["model"], probe_work(settings)
    return None, None


def rejudge_work(pricing: Pricing, settings: dict[str, Any]) -> Work | None:
    """A second judge on an evaluation's instances: each judged answer (at the QA model's
    budget) judged once more, at the judge's budget."""
    instances = job_instances(pricing, settings)
    if instances is None:
        return None
    answers = pricing.config["memalpha"]["qa"]["max_tokens"]
    judge = {"max_tokens": answers, "judge_max_tokens": settings["scorer"]["max_tokens"]}
    return [(n, judge_calls(judge, instance, source)) for n, instance, source in instances]


def probe_work(settings: dict[str, Any]) -> Work:
    """The leniency probe: each of its answers judged once (its texts are a sentence each)."""
    from memrepro.scoring.leniency import probe_prompts

    return [(1, [(template_tokens(p), settings["max_tokens"]) for _, p in probe_prompts()])]


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
