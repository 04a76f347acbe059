"""The experiment matrix: which systems exist, which evaluation jobs each runs, over how many
shards and GPUs."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from memrepro.benchmarks import registered
from memrepro.layout import (
    ablation_name,
    memalpha_runs,
    qa_model,
    results_dir,
    trained_runs,
    training_repeat,
    uses_qa_server,
)
from memrepro.systems import system_kind


class EvalJob(NamedTuple):
    """One evaluation job: a system on one benchmark at one length, every task there (one model
    load; its predictions and metrics hold a record per task)."""

    benchmark: str
    system: str  # a concrete system id (eval_systems)
    length: int  # n_docs (RULER-HQA), target tokens (RULER), 0 (LongBench)
    tasks: tuple[str, ...]  # ("hqa",) for RULER-HQA, RULER tasks, LongBench configs
    shards: int  # jobs the samples are split over (`eval_shards`), merged by merge_eval


Systems = dict[str, dict[str, Any]]


def eval_systems(config: dict[str, Any]) -> Systems:
    """Concrete systems by id: each configured system as its kind expands it (a RAG system over
    its grid), then its memory-ablation variants."""
    systems: dict[str, dict[str, Any]] = {}
    for name, spec in config["evaluation"]["systems"].items():
        base = {"benchmarks": list(system_kind(spec["kind"]).benchmarks), **spec, "name": name}
        expanded = system_kind(spec["kind"]).expand(name, base)
        systems.update(expanded)
        systems.update(_memory_ablation_systems(config, name, base))
        for sid, concrete in expanded.items():
            systems.update(_seed_systems(config, sid, concrete))
            systems.update(_training_seed_systems(config, sid, concrete))
    return systems


SAMPLING, TRAINING = "seed_of", "training_seed_of"  # what a repeat of a system varies


def is_variant(system: dict[str, Any]) -> bool:
    """A variant of a configured system (a memory-ablation setting, a repeat with another
    sampling or training seed): shown only by the tables that read variants."""
    return any(key in system for key in ("ablation_of", SAMPLING, TRAINING))


def seed_repeats(config: dict[str, Any], varies: str = SAMPLING) -> dict[str, list[str]]:
    """Each system repeated at other sampling seeds (`_seed_systems`) or, `varies` TRAINING, at
    other trainings of its model (`_training_seed_systems`), and its repeats."""
    repeats: dict[str, list[str]] = {}
    for sid, spec in eval_systems(config).items():
        if varies in spec:
            repeats.setdefault(spec[varies], []).append(sid)
    return repeats


def _training_seed_systems(config: dict[str, Any], sid: str, system: dict[str, Any]) -> Systems:
    """The repeats of a system whose model is a MemAgent training run trained at several seeds
    (training.seeds: N): `<id>.train-seed<k>`, its model the run's repeat `<run>-seed<k>`
    (memrepro.layout.memagent_runs), on the same benchmarks; the seeds table reads them."""
    if system.get("model") not in config["training"]["runs"]:
        return {}
    return {
        f"{sid}.train-seed{k}": {
            **system,
            "model": training_repeat(system["model"], k),
            "display": f"{system['display']} (training seed {k})",
            TRAINING: sid,
        }
        for k in range(1, config["training"].get("seeds", 1))
    }


def _seed_systems(config: dict[str, Any], sid: str, system: dict[str, Any]) -> Systems:
    """The repeats of a system with other sampling seeds (its `seeds`, else evaluation.seeds:
    N samples a question in all): `<id>.seed<k>` for k = 1 … N-1 at evaluation.sampling.seed
    + k (unseeded sampling: another unseeded sample), on its benchmarks answered row by row
    (Mem-α's instances sample with memalpha's own settings); the seeds table reads them."""
    seeds = system.get("seeds", config["evaluation"].get("seeds", 1))
    kind = system_kind(system["kind"])
    benchmarks = [b for b in system["benchmarks"] if not kind.reads_instances(b)]
    base = config["evaluation"]["sampling"]["seed"]
    return {
        f"{sid}.seed{k}": {
            **system,
            "benchmarks": benchmarks,
            "display": f"{system['display']} (seed {k})",
            "seed_of": sid,
            "sampling_seed": None if base is None else base + k,
        }
        for k in range(1, seeds)
        if benchmarks
    }


def _memory_ablation_systems(config: dict[str, Any], name: str, base: dict[str, Any]) -> Systems:
    """The variants of a system of `evaluation.memory_ablation`: `<name>.m<M>-c<C>` per setting,
    its agent's budgets overridden (and, with `retrain`, its model the run trained with them),
    on the ablation's tasks only, its paper row Tables 8/9's `<prefix>-m<M>-c<C>`."""
    ablation = config["evaluation"].get("memory_ablation")
    if not ablation or name not in ablation["systems"]:
        return {}
    retrained = ablation["retrain"] and base["model"] in config["training"]["runs"]
    variants = {}
    for memory, chunk in ablation["settings"]:
        suffix = f"m{memory}-c{chunk}"
        variants[ablation_name(name, memory, chunk)] = {
            **base,
            "model": ablation_name(base["model"], memory, chunk, "-")
            if retrained
            else base["model"],
            "agent": {"memory_tokens": memory, "chunk_tokens": chunk},
            "benchmarks": list(ablation["tasks"]),
            "tasks": ablation["tasks"],
            "display": f"{base['display']} {suffix}",
            "paper_row": f"{ablation['systems'][name]}-{suffix}",
            "ablation_of": name,
        }
    return variants


def _runs_benchmark(system: dict[str, Any], benchmark: str) -> bool:
    return benchmark in system["benchmarks"] and system_kind(system["kind"]).runs(system, benchmark)


def memorizes(system: dict[str, Any], benchmark: str) -> bool:
    """Whether a system's evaluation on `benchmark` takes two jobs: its own model reads every
    instance first (`memorize`: the Mem-α policy writes its memory, MemAgent its memory and
    answers, MEM1 its summary), then the evaluate job answers or judges on the QA model."""
    return system_kind(system["kind"]).memorizes(benchmark)


def eval_model(config: dict[str, Any], system: dict[str, Any], benchmark: str) -> str:
    """The model an evaluate job loads: the QA model after a memorize job, else the system's."""
    return qa_model(config) if memorizes(system, benchmark) else system["model"]


def eval_jobs(config: dict[str, Any], systems: Systems | None = None) -> list[EvalJob]:
    """Every evaluation job: systems (config order) x their benchmarks x lengths, each job
    covering the benchmark's tasks at that length. `systems`: `eval_systems(config)`, when the
    caller has it already."""
    jobs = []
    for system_id, system in (systems or eval_systems(config)).items():
        kind = system_kind(system["kind"])
        tasks = {
            (name, length): names
            for name, found in registered().items()
            if found.chosen_per_system or _runs_benchmark(system, name)
            for length, names in _lengths(found.sets(config, system_id, system, kind), kind, name)
        }
        jobs += [
            EvalJob(
                benchmark,
                system_id,
                length,
                tuple(names),
                eval_shards(config, system, benchmark, length),
            )
            for (benchmark, length), names in tasks.items()
            if names
        ]
    return jobs


def _lengths(sets: dict[int, list[str]], kind: Any, benchmark: str) -> list[tuple[int, list[str]]]:
    """A system's sets of one benchmark, by length: only the shortest where one evaluation stands
    for every length (`SystemKind.one_length`: a closed-book asks the same questions at each)."""
    if kind.one_length(benchmark) and sets:
        shortest = min(sets)
        return [(shortest, sets[shortest])]
    return list(sets.items())


def eval_data(config: dict[str, Any], job: EvalJob) -> list[Path]:
    """The files an evaluation job reads, one per task, as its benchmark names them."""
    return registered()[job.benchmark].data(config, job.length, job.tasks)


def eval_part(config: dict[str, Any], job: EvalJob) -> str:
    """The last segment of an evaluation's paths (`eval/<benchmark>/<system>/<part>`): its
    length, or the name its benchmark gives its jobs (one's own data: the custom config's)."""
    named = registered()[job.benchmark].job_name
    return (named(config) if named else None) or str(job.length)


def eval_key(config: dict[str, Any], job: EvalJob) -> tuple[str, str, str]:
    """An evaluation as its paths name it: (benchmark, system, part)."""
    return job.benchmark, job.system, eval_part(config, job)


def eval_prefix(config: dict[str, Any], job: EvalJob) -> str:
    """Where an evaluation job's files go: `<prefix>.metrics.json`, `.predictions.jsonl`, ..."""
    return f"{results_dir(config)}/eval/{'/'.join(eval_key(config, job))}"


def eval_shards(config: dict[str, Any], system: dict[str, Any], benchmark: str, length: int) -> int:
    """Jobs one evaluation is split over: `evaluation.shards.<benchmark>` maps a length to the
    shard count from that length up (the longest such length wins); 1 below them all. A probe
    set is split as the RULER-HQA set of its length."""
    if not system_kind(system["kind"]).sharded:
        return 1
    key = registered()[benchmark].shards_as or benchmark
    steps = sorted(
        (int(start), count) for start, count in config["evaluation"]["shards"].get(key, {}).items()
    )
    return next((count for start, count in reversed(steps) if length >= start), 1)


def gpus_model(config: dict[str, Any], name: str) -> str:
    """The model whose `gpus` an inference job on `name` takes: a trained run's base model."""
    runs = trained_runs(config)
    return runs[name]["base"] if name in runs else name


def model_gpus(config: dict[str, Any], name: str) -> int:
    """GPUs an inference job on this model needs (a trained run inherits its base model's)."""
    return int(config["models"][gpus_model(config, name)].get("gpus", 0))


def train_gpus(config: dict[str, Any], run: str) -> int:
    """GPUs of a training job in all (SLURM's --gpus counts the job's total, not per node); a
    Mem-α run on verl adds its QA server's (memrepro.verl.job.qa_server_plan): on one node its
    GPUs, else a whole node of its own."""
    spec = trained_runs(config)[run]
    gpus = spec.get("gpus_per_node", 0) * spec.get("nodes", 1)
    if run in memalpha_runs(config) and uses_qa_server(config):
        server = config["memalpha"]["training"]["qa_server"]["gpus"]
        gpus += server if spec.get("nodes", 1) == 1 else spec["gpus_per_node"]
    return gpus


def train_nodes(config: dict[str, Any], run: str) -> int:
    """Nodes of a training job: a multi-node Mem-α run on verl adds its QA server's node."""
    nodes = trained_runs(config)[run].get("nodes", 1)
    if run in memalpha_runs(config) and uses_qa_server(config) and nodes > 1:
        return nodes + 1
    return nodes


def case_study_specs(config: dict[str, Any]) -> dict[tuple[str, str, int], dict[str, Any]]:
    """`report.case_studies` by the evaluation each names: (benchmark, system, length)."""
    return {
        (study["benchmark"], study["system"], study["length"]): study
        for study in config["report"].get("case_studies", [])
    }


def case_studies(config: dict[str, Any]) -> list[EvalJob]:
    """The MemAgent evaluations whose chosen samples `report.case_studies` traces."""
    studies = case_study_specs(config)
    return [j for j in eval_jobs(config) if (j.benchmark, j.system, j.length) in studies]


def rl_ablation_groups(config: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Figures 6 and 7: per group label (a backbone size), the system id of each role."""
    return config["report"].get("rl_ablation", {})
