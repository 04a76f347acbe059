"""The tables and figures: their names, the evaluation jobs each reads and their settings."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from memrl.agents.memagent import DEFAULT_WORDING
from memrl.benchmarks import (
    CUSTOM_BENCHMARK,
    MEMALPHA_BENCHMARKS,
    PROBE_BENCHMARK,
)
from memrl.benchmarks.ruler import data as ruler_data
from memrl.benchmarks.ruler import ruler_sets
from memrl.config.base import (
    ConfigError,
    keyword_sets,
    keywords_file,
    memalpha_runs,
    model_reproduces,
    stats_file,
    trained_runs,
)
from memrl.config.matrix import (
    EvalJob,
    eval_data,
    eval_jobs,
    eval_prefix,
    eval_systems,
    rl_ablation_groups,
)
from memrl.config.settings import memalpha_loss_agg, memalpha_recipe
from memrl.data.longbench import LONGBENCH_SUM  # Table 2; the other tasks are QA (Table 3)
from memrl.data.ruler import TASKS as RULER_TASK_SPECS
from memrl.scoring.compare import DEFAULT_MARGIN
from memrl.systems import system_kind

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
        "systems": _report_systems(config, variants=False),
        "length_labels": labels("ruler_hqa"),
        "ruler_length_labels": labels("ruler"),
        "run": config["run"],
    }


def _report_systems(config: dict[str, Any], variants: bool) -> list[dict[str, Any]]:
    """The systems a report shows, as a list (settings JSON is key-sorted; the tables keep the
    config's order); memory-ablation variants only when `variants`."""
    return [
        {
            "id": system_id,
            "display": spec["display"],
            "paper_row": spec.get("paper_row"),
            "reproduces": model_reproduces(config, spec["model"]) if "model" in spec else True,
            **{key: spec[key] for key in REPORTED_SYSTEM_KEYS if key in spec},
            **_reward_weights(config, spec),
        }
        for system_id, spec in eval_systems(config).items()
        if variants or "ablation_of" not in spec
    ]


def _reward_weights(config: dict[str, Any], system: dict[str, Any]) -> dict[str, Any]:
    """A Mem-α system whose policy is a Mem-α run of ours: its (β, γ), which pick its row of the
    ablation tables (memalpha_table4/9), and the recipe that trained it (their notes)."""
    run = memalpha_runs(config).get(system.get("model", ""))
    if system["kind"] != "memalpha" or run is None:
        return {}
    training = {**memalpha_recipe(config), "loss_agg": memalpha_loss_agg(config)}
    return {"reward_weights": [run["beta"], run["gamma"]], "training": training}


NIAH_CONFIG_TABLE = "table7"  # the NIAH synthetic configuration: reads the RULER sets it describes


PROBE_TABLE = "table4"  # §3.3.3: the probe, as differences from the random placement


PATTERNS_TABLE = "failure_patterns"  # Appendix F, counted over whole RULER-HQA runs


MEMAGENT_TABLES = (
    "table1",
    "table2",
    "table3",
    PROBE_TABLE,
    NIAH_CONFIG_TABLE,
    "table8",
    "table9",
    "table10",
    "table11",
    "table_niah",
    PATTERNS_TABLE,
)


# Mem-α's dataset statistics: the `memalpha` splits each table describes (a stats job per split)
STATS_TABLES = {
    "memalpha_table6": ("full", "memalpha"),
    "memalpha_table7": ("train", "memalpha"),
    "memalpha_table8": ("mab",),
}


MEMALPHA_SPLITS = ("train", *MEMALPHA_BENCHMARKS)
OPTIONAL_SPLITS = ("full",)  # the full training set: Table 6's training columns, where configured


def stats_splits(config: dict[str, Any], name: str) -> list[str]:
    """The `memalpha` splits whose statistics a stats table shows: an optional one only where
    the config names it."""
    return [s for s in STATS_TABLES[name] if s not in OPTIONAL_SPLITS or s in config["memalpha"]]


def memalpha_splits(config: dict[str, Any]) -> list[str]:
    """Every `memalpha` split of this config (the optional ones it names)."""
    return [*MEMALPHA_SPLITS, *(s for s in OPTIONAL_SPLITS if s in config.get("memalpha", {}))]


TRACE_TABLE = "memalpha_table5"  # final memories side by side: reads memorize records


MEMALPHA_SCORE_TABLES = ("memalpha_table1", "memalpha_table2", "memalpha_table3")


# the (β, γ) ablation of our Mem-α runs: validation (Table 4), MemoryAgentBench (Table 9)
ABLATION_TABLES = {"memalpha_table4": "memalpha", "memalpha_table9": "mab"}


KEYWORDS_TABLE = "memalpha_keywords"  # Figure 4's keyword golds rebuilt (the `keywords` block)


MEMALPHA_TABLES = (
    *MEMALPHA_SCORE_TABLES,
    *ABLATION_TABLES,
    TRACE_TABLE,
    *STATS_TABLES,
    KEYWORDS_TABLE,
)


SUITES_TABLE = "suites"  # beyond the papers: every system on RULER-HQA and MemoryAgentBench


CUSTOM_TABLE = "custom"  # beyond the papers: the chosen systems on one's own datasets


TABLES = (*MEMAGENT_TABLES, *MEMALPHA_TABLES, SUITES_TABLE, CUSTOM_TABLE)


MEMALPHA_FIGURES = ("memalpha_frontier",)  # beyond the paper: score against memory size


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


FIGURES = (
    "figure1",
    "figure5",
    "figure_ood",
    *RL_ABLATION_FIGURES,
    "figure8",
    "figure9",
    FLOPS_FIGURE,
    *MEMALPHA_FIGURES,
)


# Every table's and figure's caption: their headings and the Snakemake report's captions
# (read when the workflow plans, so here rather than in memrl.report).
CAPTIONS = {
    "table1": "RULER-HQA accuracy (%)",
    "table2": "LongBench-SUM, ROUGE recall (%)",
    "table3": "LongBench-QA (%)",
    "table4": "Table 4: the context-distribution probe, differences from random",
    "table8": "Table 8: NIAH (mean of levels 1-3) by memory/chunk",
    "table9": "Table 9: LongBench-QA by memory/chunk size",
    NIAH_CONFIG_TABLE: "Table 7: the NIAH synthetic configuration that ran",
    "table10": "RULER-HQA: MemAgent vs RAG over whole documents (%)",
    "table11": "LongBench-QA: MemAgent vs RAG over chunks (%)",
    "table_niah": "NIAH: mean of niah_single_1/2/3 (%)",
    PATTERNS_TABLE: "Failure patterns (Appendix F): what the memory did with the gold evidence",
    "memalpha_table1": "Mem-α Table 1: validation, Perf. (%) and Mem. (K)",
    "memalpha_table2": "Mem-α Table 2: MemoryAgentBench, Perf. and Mem.",
    "memalpha_table3": "Mem-α Table 3: the framework with three policies",
    "memalpha_table4": "Mem-α Table 4: the (β, γ) ablation, validation",
    "memalpha_table9": "Mem-α Table 9: the (β, γ) ablation, MemoryAgentBench",
    TRACE_TABLE: "Mem-α Table 5: final memories side by side",
    "memalpha_table6": "Mem-α Table 6: dataset statistics (validation)",
    "memalpha_table7": "Mem-α Table 7: dataset statistics (train, valid.)",
    "memalpha_table8": "Mem-α Table 8: MemoryAgentBench statistics",
    KEYWORDS_TABLE: "Mem-α Figure 4: the keyword golds rebuilt beside the released ones",
    SUITES_TABLE: "Every system on RULER-HQA and MemoryAgentBench",
    CUSTOM_TABLE: "Every chosen system on your own datasets",
    "figure1": "RULER-HQA accuracy against context length",
    "figure5": "NIAH (niah_single_1/2/3) accuracy",
    "figure_ood": "RULER out-of-distribution tasks",
    "memalpha_frontier": "Mem-α suites: average score against memory size",
    "figure6": "RL ablation on RULER-HQA: backbone, MemAgent w/o RL, RL-MemAgent",
    "figure7": "RL ablation on LongBench-QA: backbone, MemAgent w/o RL, RL-MemAgent",
    "figure8": "Memory size on NIAH (mean of niah_single_1/2/3), chunk size fixed",
    "figure9": "Memory size on LongBench-QA, chunk size fixed",
    "figure10": "FLOPs from 8K to 4M tokens, and the measured cost of our RULER-HQA jobs",
}

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


class Selection:
    """The evaluation jobs of one config as tables and figures select them: each `ReportPlan`'s
    `jobs` picks its own through these (a job of a memory-ablation variant only where asked)."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.kinds = eval_systems(config)
        self.every_job = eval_jobs(config, self.kinds)
        self.jobs = [j for j in self.every_job if "ablation_of" not in self.kinds[j.system]]
        self.qa = [t for t in config["longbench"]["tasks"] if t not in LONGBENCH_SUM]

    def select(
        self,
        benchmark: str,
        rag: bool | None = None,
        tasks: Sequence[str] | None = None,
        kind: str | None = None,
        systems: Collection[str] | None = None,
        lengths: Collection[int] | None = None,
        among: Sequence[EvalJob] | None = None,
    ) -> list[EvalJob]:
        """The jobs of `benchmark`: of RAG systems only (`rag`) or none, covering any of `tasks`,
        of systems of `kind`, of `systems`, at `lengths`."""
        kinds = self.kinds
        return [
            job
            for job in (self.jobs if among is None else among)
            if job.benchmark == benchmark
            and (tasks is None or not set(tasks).isdisjoint(job.tasks))
            and (rag is None or (kinds[job.system]["kind"] == "rag") == rag)
            and (kind is None or kinds[job.system]["kind"] == kind)
            and (systems is None or job.system in systems)
            and (lengths is None or job.length in lengths)
        ]

    def probe(self) -> list[EvalJob]:
        """The probe sets, and RULER-HQA at their lengths (random), in the plan's order."""
        spec = self.config["evaluation"].get("probe") or {"systems": {}, "n_docs": []}
        chosen = set(self.select(PROBE_BENCHMARK, systems=spec["systems"]))
        chosen |= set(self.select("ruler_hqa", systems=spec["systems"], lengths=spec["n_docs"]))
        return [job for job in self.every_job if job in chosen]

    def memory_ablation(self, name: str) -> list[EvalJob]:
        """The ablated systems and their variants (MEMORY_ABLATION)."""
        members = memory_ablation_members(self.config, name)
        return self.select(MEMORY_ABLATION[name][0], systems=members, among=self.every_job)

    def memagent_suite(self) -> list[EvalJob]:
        """RULER-HQA without RAG and without Mem-α's agents."""
        return [
            j
            for j in self.select("ruler_hqa", rag=False)
            if not system_kind(self.kinds[j.system]["kind"]).instances_only
        ]

    def ablation(self, benchmark: str) -> list[EvalJob]:
        """Mem-α systems whose policy is a Mem-α run of ours."""
        runs = memalpha_runs(self.config)
        ours = [sid for sid, spec in self.kinds.items() if spec.get("model") in runs]
        return self.select(benchmark, kind="memalpha", systems=ours)

    def rl_ablation(
        self,
        benchmark: str,
        roles: Sequence[str] = ABLATION_ROLES,
        tasks: Sequence[str] | None = None,
    ) -> list[EvalJob]:
        """`report.rl_ablation`'s systems in `roles`."""
        groups = rl_ablation_groups(self.config).values()
        ablated = {group[role] for group in groups for role in roles}
        return self.select(benchmark, rag=False, tasks=tasks, systems=ablated)


def _no_settings(config: dict[str, Any]) -> dict[str, Any]:
    return {}


DEFAULT_NEEDS = "evaluation.systems on its benchmarks"


@dataclass(frozen=True)
class ReportPlan:
    """What planning knows of one table or figure, declared once per name in `REPORTS`: its
    caption, the evaluations it reads, its paper file (a `report` key), what in the config makes
    those evaluations (for 'nothing to show' errors), its own settings, the files it reads beyond
    its jobs' metrics, and whether it carries MemAgent's prompt wording or Figure 10's measured
    cost. Its builder and loader are declared in its report module (memrl.report.registry)."""

    caption: str
    jobs: Callable[[Selection], list[EvalJob]]
    paper: str = "paper"  # MemAgent's numbers; "memalpha_paper": Mem-α's
    needs: str = DEFAULT_NEEDS
    settings: Callable[[dict[str, Any]], dict[str, Any]] = _no_settings
    # the files it reads other than its jobs' metrics (None: the metrics)
    inputs: Callable[[dict[str, Any], list[EvalJob]], list[str]] | None = None
    wording: bool = False  # a MemAgent table: which of MemAgent's prompt wordings ran
    measured_cost: bool = False  # Figure 10: model directories and the jobs' benchmark files


def _memory_ablation_settings(name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The memory ablation's own systems (the only reports that show the variants) and the
    agent's budgets."""

    def settings(config: dict[str, Any]) -> dict[str, Any]:
        members = set(memory_ablation_members(config, name))
        systems = [s for s in _report_systems(config, True) if s["id"] in members]
        return {"systems": systems, "agent": config["agent"]}

    return settings


def _probe_settings(config: dict[str, Any]) -> dict[str, Any]:
    probe = config["evaluation"].get("probe") or {"systems": {}, "placements": []}
    return {"probe": {"systems": probe["systems"], "placements": probe["placements"]}}


def _niah_config_settings(config: dict[str, Any]) -> dict[str, Any]:
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


def _trace_settings(config: dict[str, Any]) -> dict[str, Any]:
    """Table 5: the instance sets its memories came from (where the paper's example is); a
    Mem-α evaluation reads every task from its benchmark's one file of instances."""
    jobs = report_jobs(config, TRACE_TABLE)
    return {"instance_sets": {job.benchmark: str(eval_data(config, job)[0]) for job in jobs}}


def _trace_inputs(config: dict[str, Any], jobs: list[EvalJob]) -> list[str]:
    """Table 5's memories, and the instances that hold the paper's example."""
    memories = [f"{eval_prefix(config, job)}.memories.jsonl" for job in jobs]
    return [*memories, *dict.fromkeys(str(eval_data(config, job)[0]) for job in jobs)]


def _stats_inputs(name: str) -> Callable[[dict[str, Any], list[EvalJob]], list[str]]:
    return lambda config, jobs: [str(stats_file(config, s)) for s in stats_splits(config, name)]


def _niah_set_inputs(config: dict[str, Any], jobs: list[EvalJob]) -> list[str]:
    """Table 7 reads the NIAH sets themselves."""
    return [str(path) for task, n in niah_sets(config) for path in ruler_data(config, n, (task,))]


def _keyword_inputs(config: dict[str, Any], jobs: list[EvalJob]) -> list[str]:
    return [str(keywords_file(config, name)) for name in keyword_sets(config)]


def _memagent(name: str, jobs: Callable[[Selection], list[EvalJob]], **kw: Any) -> ReportPlan:
    return ReportPlan(CAPTIONS[name], jobs, wording=name in TABLES, **kw)


def _memalpha(name: str, jobs: Callable[[Selection], list[EvalJob]], **kw: Any) -> ReportPlan:
    return ReportPlan(CAPTIONS[name], jobs, paper="memalpha_paper", **kw)


def _nothing(selection: Selection) -> list[EvalJob]:
    return []


_MEMORY_NEEDS = "evaluation.memory_ablation"
_RL_NEEDS = "report.rl_ablation"
_ABLATION_NEEDS = "memalpha.training.runs, evaluated as systems"

# Every table and figure by name, in the plan's order (TABLES, then FIGURES)
REPORTS: dict[str, ReportPlan] = {
    "table1": _memagent("table1", Selection.memagent_suite),
    "table2": _memagent("table2", lambda s: s.select("longbench", rag=False, tasks=LONGBENCH_SUM)),
    "table3": _memagent("table3", lambda s: s.select("longbench", rag=False, tasks=s.qa)),
    PROBE_TABLE: _memagent(
        PROBE_TABLE, Selection.probe, needs="evaluation.probe", settings=_probe_settings
    ),
    NIAH_CONFIG_TABLE: _memagent(
        NIAH_CONFIG_TABLE, _nothing, settings=_niah_config_settings, inputs=_niah_set_inputs
    ),
    **{
        name: _memagent(
            name,
            lambda s, name=name: s.memory_ablation(name),
            needs=_MEMORY_NEEDS,
            settings=_memory_ablation_settings(name),
        )
        for name in ("table8", "table9")
    },
    "table10": _memagent(
        "table10",
        lambda s: s.select("ruler_hqa", rag=True) + s.select("ruler_hqa", kind="memagent"),
    ),
    "table11": _memagent(
        "table11",
        lambda s: (
            s.select("longbench", rag=True, tasks=s.qa)
            + s.select("longbench", kind="memagent", tasks=s.qa)
        ),
    ),
    "table_niah": _memagent("table_niah", lambda s: s.select("ruler", tasks=NIAH_FIGURE_TASKS)),
    PATTERNS_TABLE: _memagent(PATTERNS_TABLE, lambda s: s.select("ruler_hqa", kind="memagent")),
    "memalpha_table1": _memalpha("memalpha_table1", lambda s: s.select("memalpha")),
    "memalpha_table2": _memalpha("memalpha_table2", lambda s: s.select("mab")),
    "memalpha_table3": _memalpha(
        "memalpha_table3", lambda s: s.select("memalpha", kind="memalpha")
    ),
    **{
        name: _memalpha(name, lambda s, bench=bench: s.ablation(bench), needs=_ABLATION_NEEDS)
        for name, bench in ABLATION_TABLES.items()
    },
    TRACE_TABLE: _memalpha(
        TRACE_TABLE,
        lambda s: s.select("memalpha", kind="memalpha") + s.select("mab", kind="memalpha"),
        settings=_trace_settings,
        inputs=_trace_inputs,
    ),
    **{name: _memalpha(name, _nothing, inputs=_stats_inputs(name)) for name in STATS_TABLES},
    KEYWORDS_TABLE: _memalpha(KEYWORDS_TABLE, _nothing, needs="keywords", inputs=_keyword_inputs),
    SUITES_TABLE: _memalpha(SUITES_TABLE, lambda s: s.select("ruler_hqa") + s.select("mab")),
    CUSTOM_TABLE: ReportPlan(
        CAPTIONS[CUSTOM_TABLE], lambda s: s.select(CUSTOM_BENCHMARK), needs="custom"
    ),
    "figure1": ReportPlan(CAPTIONS["figure1"], Selection.memagent_suite),
    "figure5": ReportPlan(
        CAPTIONS["figure5"], lambda s: s.select("ruler", tasks=NIAH_FIGURE_TASKS)
    ),
    "figure_ood": ReportPlan(CAPTIONS["figure_ood"], lambda s: s.select("ruler")),
    "figure6": ReportPlan(
        CAPTIONS["figure6"],
        lambda s: s.rl_ablation(RL_ABLATION_FIGURES["figure6"]),
        needs=_RL_NEEDS,
        settings=lambda config: {"rl_ablation": rl_ablation_groups(config)},
    ),
    "figure7": ReportPlan(
        CAPTIONS["figure7"],
        lambda s: s.rl_ablation(RL_ABLATION_FIGURES["figure7"], tasks=s.qa),  # QA
        needs=_RL_NEEDS,
        settings=lambda config: {"rl_ablation": rl_ablation_groups(config)},
    ),
    **{
        name: ReportPlan(
            CAPTIONS[name],
            lambda s, name=name: s.memory_ablation(name),
            needs=_MEMORY_NEEDS,
            settings=_memory_ablation_settings(name),
        )
        for name in ("figure8", "figure9")
    },
    FLOPS_FIGURE: ReportPlan(
        CAPTIONS[FLOPS_FIGURE],
        lambda s: s.rl_ablation("ruler_hqa", FLOPS_ROLES),
        measured_cost=True,
    ),
    "memalpha_frontier": _memalpha(
        "memalpha_frontier", lambda s: s.select("memalpha") + s.select("mab")
    ),
}
if list(REPORTS) != [*TABLES, *FIGURES]:  # a declaration per planned name, in the plan's order
    raise ConfigError(f"memrl.config.reports: REPORTS {list(REPORTS)} != TABLES + FIGURES")


def report_plan(name: str) -> ReportPlan:
    if name not in REPORTS:
        raise ConfigError(f"unknown table or figure {name!r}")
    return REPORTS[name]


def paper_file(config: dict[str, Any], name: str) -> str:
    """The published numbers a table or figure is compared with (config/paper/)."""
    return config["report"][report_plan(name).paper]


def report_needs(name: str) -> str:
    """The config part whose evaluations a table or figure reads (for 'nothing to show' errors)."""
    return report_plan(name).needs


def report_jobs(config: dict[str, Any], name: str) -> list[EvalJob]:
    """The evaluation jobs a table or figure reads, each declared by the benchmark it reads and
    the systems, tasks and lengths it shows; their metrics files may hold other tasks too, which
    the tables ignore."""
    return report_plan(name).jobs(Selection(config))


def report_inputs(config: dict[str, Any], name: str) -> list[str]:
    """The files a table or figure reads: its jobs' metrics, or what it declares instead
    (dataset statistics, rebuilt keyword golds, the NIAH sets, Table 5's memories)."""
    plan, jobs = report_plan(name), report_jobs(config, name)
    if plan.inputs is not None:
        return plan.inputs(config, jobs)
    return list(dict.fromkeys(f"{eval_prefix(config, job)}.metrics.json" for job in jobs))


def table_settings(config: dict[str, Any], name: str) -> dict[str, Any]:
    """What one table or figure reads beyond `report_settings`: every table its margin ±δ,
    MemAgent's tables the prompt wording that ran, and what it declares of its own (Figures 6
    and 7 their groups, Table 4 its probe, Table 7 the RULER settings it reports, the memory
    ablation its own systems)."""
    plan = report_plan(name)
    margin = {"margin": equivalence_margin(config, name)} if name in TABLES else {}
    wording = {"memagent_wording": memagent_wording(config)} if plan.wording else {}
    return {**margin, **wording, **plan.settings(config)}


def memagent_wording(config: dict[str, Any]) -> str:
    """The MemAgent prompts' text its evaluations ran with (`agent.wording`)."""
    return config["agent"].get("wording", DEFAULT_WORDING)
