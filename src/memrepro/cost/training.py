"""What a training job of the plan computes: the FLOPs of verl's passes over its rollouts, for a
MemAgent stage (its conversations over the stage's data) and for Mem-α's GRPO (the memorisation
of the paper's training instances, and the QA model's rewards)."""

from __future__ import annotations

from typing import Any

from memrepro import config as cfg
from memrepro.benchmarks.ruler_hqa import context_tokens as hqa_tokens
from memrepro.cost.pricing import Pricing
from memrepro.cost.work import forward_flops, judge_calls, lengths, split_instances
from memrepro.layout import MEMALPHA_STAGE
from memrepro.report.flops import Qwen2Shape, sequence_flops
from memrepro.systems import system_kind
from memrepro.systems.base import QUESTION_TOKENS, Call, InstanceShape, template_tokens

TRAINING_RULES = ("train_stage1", "train_stage2", "train_memalpha")  # verl runs that keep states


def training_stage(settings: dict[str, Any]) -> str:
    return settings.get("stage", MEMALPHA_STAGE)


def longest_response(rule: str, settings: dict[str, Any]) -> int:
    """The longest response a training stage's rollout writes (verl's rollout.response_length,
    memrepro.verl.overrides): a Mem-α chunk's `max_new_tokens`; a MemAgent conversation's memory
    update or final answer, the longer budget."""
    agent = settings["agent"]
    if rule == "train_memalpha":
        return int(agent["max_new_tokens"])
    return max(int(agent["memory_tokens"]), int(agent["final_tokens"]))


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


def content_judge_calls(settings: dict[str, Any], instance: InstanceShape) -> list[Call]:
    """With γ > 0, the judge of each chunk's written content (r4): its longest rubric and the
    content at the response budget."""
    from memrepro.train.memalpha_rewards import CONTENT_JUDGE_PROMPTS

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
