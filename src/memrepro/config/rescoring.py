"""Scorers beside each benchmark's own (the config's `rescore` block): which finished evaluations
each scores again (`RescoreJob`), what its job reads, and the judges whose leniency is probed
(every judge scorer's model, and the QA model that judges in the evaluations themselves)."""

from __future__ import annotations

from typing import Any, NamedTuple

from memrepro.benchmarks import benchmark
from memrepro.config.matrix import EvalJob, eval_jobs, eval_key, eval_prefix, eval_systems
from memrepro.config.settings import engine_settings
from memrepro.layout import ConfigError, qa_model, results_dir
from memrepro.scoring.memalpha import is_judged
from memrepro.scoring.rescore import scorer_kind

JUDGE_KEYS = ("model", "engine", "sampling", "max_tokens")  # what a judge's job reads


class RescoreJob(NamedTuple):
    """One finished evaluation scored again by one scorer."""

    scorer: str  # its id in `rescore`
    evaluation: EvalJob


def scorer_specs(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each configured scorer, resolved: a judge with its engine, sampling and output budget
    (unset: those of the evaluations' own judge, memalpha.qa)."""
    specs = {}
    for name, spec in (config.get("rescore") or {}).items():
        resolved = {"id": name, "kind": spec["scorer"]}
        resolved |= {"protocol": spec["protocol"]} if "protocol" in spec else {}
        if scorer_kind(spec["scorer"]).judge:
            resolved |= _judge(config, spec["model"], spec, f"rescore.{name}")
        specs[name] = resolved
    return specs


def _judge(config: dict[str, Any], model: str, spec: dict[str, Any], key: str) -> dict[str, Any]:
    """A judge's model, engine, sampling and output budget (the QA model's judge settings where
    `spec` sets none)."""
    qa = config.get("memalpha", {}).get("qa", {})
    sampling = spec.get("sampling", qa.get("judge_sampling"))
    max_tokens = spec.get("max_tokens", qa.get("judge_max_tokens"))
    if sampling is None or max_tokens is None:
        raise ConfigError(f"{key}: set sampling and max_tokens (no memalpha.qa to take them from)")
    engine = engine_settings(config, spec.get("engine"), model)
    return {"model": model, "engine": engine, "sampling": sampling, "max_tokens": max_tokens}


def rescore_jobs(config: dict[str, Any]) -> list[RescoreJob]:
    """Each scorer's evaluations: of its benchmarks (and its systems, where it names them); a
    judge's, those with a judged source among their tasks (it has nothing else to judge)."""
    evaluations = eval_jobs(config, eval_systems(config))
    return [
        RescoreJob(name, job)
        for name, spec in (config.get("rescore") or {}).items()
        for job in evaluations
        if job.benchmark in spec["benchmarks"]
        and (spec.get("systems") is None or job.system in spec["systems"])
        and (not scorer_kind(spec["scorer"]).judge or any(map(is_judged, job.tasks)))
    ]


def rescore_prefix(config: dict[str, Any], job: RescoreJob) -> str:
    """Where a rescore job's files go: `<prefix>.predictions.jsonl`, `.metrics.json`."""
    e = job.evaluation
    return f"{results_dir(config)}/rescore/{job.scorer}/{'/'.join(eval_key(config, e))}"


def rescore_settings(config: dict[str, Any], job: RescoreJob) -> dict[str, Any]:
    e = job.evaluation
    return {
        "benchmark": e.benchmark,
        "system": e.system,
        "length": e.length,
        "tasks": list(e.tasks),
        "scorer": scorer_specs(config)[job.scorer],
    }


def judge_probes(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The judges whose leniency is probed, by model: each judge scorer's, and (where one is
    configured) the QA model that judges in the evaluations, as memalpha.qa runs it."""
    judges = [s for s in scorer_specs(config).values() if scorer_kind(s["kind"]).judge]
    if not judges:
        return {}
    probes = {}
    if "memalpha" in config:
        qa = config["memalpha"]["qa"]
        model = qa_model(config)
        probes[model] = _judge(config, model, {"engine": qa.get("engine")}, "memalpha.qa")
    for spec in judges:
        probes.setdefault(spec["model"], {k: spec[k] for k in JUDGE_KEYS})
    return {model: {"judge": model, **spec} for model, spec in probes.items()}


def judge_probe_file(config: dict[str, Any], model: str) -> str:
    return f"{results_dir(config)}/judges/{model}.json"


def check_rescore(config: dict[str, Any]) -> None:
    """Each scorer names models, benchmarks and systems this config has, reads the kind of
    predictions its benchmarks write (rows or Mem-α instances) and scores some evaluation."""
    systems = eval_systems(config)
    jobs = rescore_jobs(config)
    for name, spec in (config.get("rescore") or {}).items():
        key = f"rescore.{name}"
        kind = scorer_kind(spec["scorer"])
        if kind.judge and spec.get("model") not in config["models"]:
            raise ConfigError(f"{key}.model: {spec.get('model')!r} is not in models")
        if spec["scorer"] == "memalpha_protocol" and "protocol" not in spec:
            raise ConfigError(f"{key}: a memalpha_protocol scorer names its protocol")
        for scored in spec["benchmarks"]:
            try:
                found = benchmark(scored)
            except ValueError as exc:
                raise ConfigError(f"{key}.benchmarks: {exc}") from None
            if found.instances != kind.instances:
                reads = "Mem-α instances" if kind.instances else "rows"
                raise ConfigError(
                    f"{key}: a {spec['scorer']} scorer reads {reads}; "
                    f"{scored}'s predictions are not"
                )
        if unknown := sorted(set(spec.get("systems") or ()) - set(systems)):
            raise ConfigError(f"{key}.systems: not in evaluation.systems: {', '.join(unknown)}")
        selected = config["evaluation"].get("select")  # a selection may leave it nothing
        if not selected and not any(job.scorer == name for job in jobs):
            raise ConfigError(f"{key}: no evaluation of this config on {spec['benchmarks']}")
    scorer_specs(config)  # each judge's settings resolve


def rescore_inputs(config: dict[str, Any]) -> list[str]:
    """Each rescoring's files beside its evaluation's, and each judge's leniency probe."""
    prefixes = [
        prefix
        for job in rescore_jobs(config)
        for prefix in (eval_prefix(config, job.evaluation), rescore_prefix(config, job))
    ]
    files = [f"{p}.{end}" for p in prefixes for end in ("metrics.json", "predictions.jsonl")]
    return [*dict.fromkeys(files), *(judge_probe_file(config, m) for m in judge_probes(config))]


def scorers_settings(config: dict[str, Any]) -> dict[str, Any]:
    """What the notes say of each scorer: its kind and its protocol or judge model."""
    keys = ("kind", "protocol", "model")
    specs = scorer_specs(config).items()
    return {"scorers": {name: {k: s[k] for k in keys if k in s} for name, s in specs}}
