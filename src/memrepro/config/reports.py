"""What the tables and figures share: the settings every one reads, the names of those whose
plans and builders refer to each other (the probe's, the ablations', the statistics'), and the
config parts several of them read (the memory ablation's members, the margins, Figure 10's
groups). Each one's plan is memrepro.config.report_plans'."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memrepro.agents.memagent import DEFAULT_WORDING
from memrepro.benchmarks.ruler import ruler_sets
from memrepro.config.matrix import (
    eval_systems,
    is_variant,
    rl_ablation_groups,
)
from memrepro.config.settings import memalpha_recipe
from memrepro.data.ruler import TASKS as RULER_TASK_SPECS
from memrepro.layout import (
    OPTIONAL_SPLITS,
    memagent_runs,
    memalpha_runs,
    model_reproduces,
    qa_model,
    trained_runs,
)
from memrepro.scoring.compare import DEFAULT_MARGIN
from memrepro.systems import system_kind

REPORTED_SYSTEM_KEYS = (
    "kind",
    "model",
    "name",
    "benchmarks",
    "retriever",
    "top_k",
    "unit",
    "unit_tokens",
    "agent",  # a memory-ablation variant's budgets
    "ablation_of",  # ... and the system it varies
    "question_blind",  # MemAgent's memory written without the question (the protocols table)
    "question_aware",  # ... and, on Mem-α's instances, for each question
    "seed_of",  # a repeat with another sampling seed (the seeds table) ...
    "sampling_seed",  # ... at this seed
    "training_seed_of",  # a repeat whose model is another training of the same run
)


# Bumped when the report code changes what every table and figure writes, so that Snakemake
# rebuilds them (their params change): 2 = verdicts as two-sample comparisons, claims with
# outcomes and intervals.
REPORT_FORMAT = 2


def report_settings(config: dict[str, Any]) -> dict[str, Any]:
    def labels(section: str) -> dict[int, str]:
        return {int(k): v for k, v in config[section]["length_labels"].items()}

    return {
        "format": REPORT_FORMAT,
        "systems": report_systems(config, variants=False),
        "length_labels": labels("ruler_hqa"),
        "ruler_length_labels": labels("ruler"),
        "run": config["run"],
    }


def report_systems(config: dict[str, Any], variants: bool) -> list[dict[str, Any]]:
    """The systems a report shows, as a list (settings JSON is key-sorted; the tables keep the
    config's order); memory-ablation variants only when `variants`."""
    return [
        {
            "id": system_id,
            "display": spec["display"],
            "paper_row": spec.get("paper_row"),
            "reproduces": model_reproduces(config, spec["model"]) if "model" in spec else True,
            **{key: spec[key] for key in REPORTED_SYSTEM_KEYS if key in spec},
            **_trained_here(config, spec),
            **_answered_by(config, spec),
        }
        for system_id, spec in eval_systems(config).items()
        if variants or not is_variant(spec)
    ]


def _answered_by(config: dict[str, Any], system: dict[str, Any]) -> dict[str, Any]:
    """The benchmarks where the QA model, not the system's own, answers over its memory (Mem-α,
    MEM1 on Mem-α's instances): `answered_by` {benchmark: model}, the model its controls pair
    with (memrepro.report.rows.answering_model)."""
    kind = system_kind(system["kind"])
    by = {b: qa_model(config) for b in system["benchmarks"] if kind.answers_with_qa_model(b)}
    return {"answered_by": by} if by else {}


def _trained_here(config: dict[str, Any], system: dict[str, Any]) -> dict[str, Any]:
    """A system whose model is a run of ours: a MemAgent run's recipe (training.recipe: every
    table showing it says so); a Mem-α policy's (β, γ), which pick its row of the ablation tables
    (memalpha_table4/9), and its recipe (their notes)."""
    model = system.get("model", "")
    if model in memagent_runs(config):
        return {"memagent_recipe": config["training"]["recipe"]}
    run = memalpha_runs(config).get(model)
    if system["kind"] != "memalpha" or run is None:
        return {}
    return {"reward_weights": [run["beta"], run["gamma"]], "training": memalpha_recipe(config)}


NIAH_CONFIG_TABLE = "table7"  # the NIAH synthetic configuration: reads the RULER sets it describes


PROBE_TABLE = "table4"  # §3.3.3: the probe, as differences from the random placement


PATTERNS_TABLE = "failure_patterns"  # Appendix F, counted over whole RULER-HQA runs


# Mem-α's dataset statistics: the `memalpha` splits each table describes (a stats job per split)
STATS_TABLES = {
    "memalpha_table6": ("full", "memalpha"),
    "memalpha_table7": ("train", "memalpha"),
    "memalpha_table8": ("mab",),
}


def stats_splits(config: dict[str, Any], name: str) -> list[str]:
    """The `memalpha` splits whose statistics a stats table shows: an optional one only where
    the config names it."""
    return [s for s in STATS_TABLES[name] if s not in OPTIONAL_SPLITS or s in config["memalpha"]]


TRACE_TABLE = "memalpha_table5"  # final memories side by side: reads memorize records


MEMALPHA_SCORE_TABLES = ("memalpha_table1", "memalpha_table2", "memalpha_table3")


# the (β, γ) ablation of our Mem-α runs: validation (Table 4), MemoryAgentBench (Table 9)
ABLATION_TABLES = {"memalpha_table4": "memalpha", "memalpha_table9": "mab"}


KEYWORDS_TABLE = "memalpha_keywords"  # Figure 4's keyword golds rebuilt (the `keywords` block)
BUILD_TABLE = "memalpha_data"  # the training sets rebuilt from their sources (`memalpha.build`)


# each trained job's recipe beside the paper's and the official script's, key by key
MEMAGENT_RECIPES_TABLE = "memagent_recipes"
MEMALPHA_RECIPES_TABLE = "memalpha_recipes"


CONTROLS_TABLE = "controls"  # beyond the papers: each memory system against each control
# beyond the papers: MemAgent with its memory written for the question and without it
PROTOCOLS_TABLE = "protocols"
SEEDS_TABLE = "seeds"  # each system sampled at several seeds: the mean, each seed, best-of-N
SCORERS_TABLE = "scorers"  # each finished evaluation scored again beside its benchmark's scorer
PAPER_CLAIMS_TABLE = "paper_claims"  # the papers' sentences on their own numbers and on ours


SUITES_TABLE = "suites"  # beyond the papers: every system on RULER-HQA and MemoryAgentBench


CUSTOM_TABLE = "custom"  # beyond the papers: the chosen systems on one's own datasets


RL_ABLATION_FIGURES = {"figure6": "ruler_hqa", "figure7": "longbench"}  # §3.3.1


# The memory ablation (evaluation.memory_ablation): name -> (benchmark, what stays fixed)
MEMORY_ABLATION = {
    "table8": ("ruler", "total"),  # §D.1: memory + chunk held at the agent's total
    "table9": ("longbench", "total"),
    "figure8": ("ruler", "chunk"),  # §3.3.2: memory 256 ... 4096, chunk at the agent's
    "figure9": ("longbench", "chunk"),
}


FLOPS_FIGURE = "figure10"  # Appendix B, with the RULER-HQA jobs' measured cost beside it


ABLATION_ROLES = ("backbone", "workflow", "rl")  # of each report.rl_ablation group


FLOPS_ROLES = ("backbone", "rl")  # Figure 10's


NIAH_FIGURE_TASKS = ("niah_single_1", "niah_single_2", "niah_single_3")  # Figure 5


def niah_sets(config: dict[str, Any]) -> list[tuple[str, int]]:
    """The (task, length) of every NIAH set the config synthesizes (Table 7 describes them)."""
    return [
        (task, n) for task, n in ruler_sets(config) if RULER_TASK_SPECS[task]["family"] == "niah"
    ]


def memory_ablation_members(config: dict[str, Any], name: str) -> list[str]:
    """The systems of a memory-ablation table or figure (MEMORY_ABLATION): each ablated system
    (the agent's own budgets), then its variants that keep the chunk (figures 8, 9) or the memory
    + chunk total (tables 8, 9) of the agent."""
    agent = config["agent"]
    fixed = MEMORY_ABLATION[name][1]
    members = []
    for sid, spec in eval_systems(config).items():
        if sid in config["evaluation"].get("memory_ablation", {}).get("systems", {}):
            members.append(sid)
        elif "ablation_of" in spec:
            memory, chunk = spec["agent"]["memory_tokens"], spec["agent"]["chunk_tokens"]
            if (fixed == "chunk" and chunk == agent["chunk_tokens"]) or (
                fixed == "total"
                and memory + chunk == agent["memory_tokens"] + agent["chunk_tokens"]
            ):
                members.append(sid)
    return members


def equivalence_margin(config: dict[str, Any], name: str) -> float:
    """±δ, in points, within which a cell of table `name` counts as reproduced
    (`report.equivalence_margin`: the table's own, else `default`)."""
    margins = config["report"].get("equivalence_margin", {})
    return float(margins.get(name, margins.get("default", DEFAULT_MARGIN)))


def flops_settings(config: dict[str, Any]) -> dict[str, Any]:
    """Figure 10: the agent's q, N and o, the attention count (`report.flops_attention`), and
    per `report.rl_ablation` group the long-context
    backbone (and the input it truncates to) and RL-MemAgent, whose RULER-HQA jobs give the
    measured cost."""
    agent, systems = config["agent"], config["evaluation"]["systems"]
    return {
        "agent": {key: agent[key] for key in ("query_tokens", "chunk_tokens", "final_tokens")},
        "attention": config["report"].get("flops_attention", "fork"),
        "groups": {
            group: {
                "backbone": roles["backbone"],
                "rl": roles["rl"],
                "backbone_max_input": systems[roles["backbone"]].get("max_input_tokens"),
            }
            for group, roles in rl_ablation_groups(config).items()
        },
    }


def flops_models(config: dict[str, Any]) -> dict[str, str]:
    """Figure 10: per group, the model whose shape prices the FLOPs (RL-MemAgent's base)."""
    runs = trained_runs(config)
    systems = config["evaluation"]["systems"]
    models = {}
    for group, roles in rl_ablation_groups(config).items():
        model = systems[roles["rl"]]["model"]
        models[group] = runs[model]["base"] if model in runs else model
    return models


def memagent_wording(config: dict[str, Any]) -> str:
    """The MemAgent prompts' text its evaluations ran with (`agent.wording`)."""
    return config["agent"].get("wording", DEFAULT_WORDING)


def memory_ablation_settings(name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The memory ablation's own systems (the only reports that show the variants) and the
    agent's budgets."""

    def settings(config: dict[str, Any]) -> dict[str, Any]:
        members = set(memory_ablation_members(config, name))
        systems = [s for s in report_systems(config, True) if s["id"] in members]
        return {"systems": systems, "agent": config["agent"]}

    return settings


def probe_settings(config: dict[str, Any]) -> dict[str, Any]:
    probe = config["evaluation"].get("probe") or {"systems": {}, "placements": []}
    return {"probe": {"systems": probe["systems"], "placements": probe["placements"]}}


def niah_config_settings(config: dict[str, Any]) -> dict[str, Any]:
    """Table 7: the RULER settings it reports."""
    ruler = config["ruler"]
    tokenizer = config["models"][ruler["tokenizer"]]
    return {
        "niah_config": {
            "variant": ruler["variant"],
            "samples": ruler["samples"],
            "tokenizer": tokenizer.get("id", ruler["tokenizer"]),
            "seed": config["seed"],
        }
    }
