"""Each table's and figure's plan, declared once per name (`REPORTS`, the one list of them, whose
order is the plan's and the report's): its caption, paper file and key, the evaluations it reads,
its own settings, the files it reads; and the functions the Snakefile's input functions and the
table and figure jobs' settings read it through. The settings they share are
memrepro.config.reports'; each one's builder is its report module's (memrepro.report.registry)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memrepro.benchmarks import CUSTOM_BENCHMARK, EXAMPLE_BENCHMARK
from memrepro.benchmarks.custom import config_name as custom_config_name
from memrepro.benchmarks.memalpha_example import example_files
from memrepro.benchmarks.ruler import data as ruler_data
from memrepro.config.matrix import (
    TRAINING,
    EvalJob,
    eval_prefix,
    rl_ablation_groups,
    seed_repeats,
)
from memrepro.config.memalpha_build import table_inputs, table_settings
from memrepro.config.paper_claims_plan import paper_claims_inputs, paper_claims_settings
from memrepro.config.protocol_plan import protocol_jobs, protocols_settings
from memrepro.config.reports import (
    ABLATION_TABLES,
    BUILD_TABLE,
    CONTROLS_TABLE,
    CUSTOM_TABLE,
    FLOPS_FIGURE,
    FLOPS_ROLES,
    KEYWORDS_TABLE,
    MEMAGENT_RECIPES_TABLE,
    MEMALPHA_RECIPES_TABLE,
    NIAH_CONFIG_TABLE,
    NIAH_FIGURE_TASKS,
    PAPER_CLAIMS_TABLE,
    PATTERNS_TABLE,
    PROBE_TABLE,
    PROTOCOLS_TABLE,
    RL_ABLATION_FIGURES,
    SCORERS_TABLE,
    SEEDS_TABLE,
    SUITES_TABLE,
    TRACE_TABLE,
    equivalence_margin,
    memagent_wording,
    memory_ablation_settings,
    niah_config_settings,
    niah_sets,
    probe_settings,
    report_systems,
    stats_splits,
)
from memrepro.config.rescoring import rescore_inputs, scorers_settings
from memrepro.config.selection import Selection
from memrepro.config.yaml_file import load_yaml
from memrepro.layout import (
    MEMALPHA_STAGE,
    STAGES,
    ConfigError,
    checkpoint_dir,
    keyword_sets,
    keywords_file,
    memagent_runs,
    memalpha_runs,
    stats_file,
)
from memrepro.scoring.longbench import LONGBENCH_SUM


def _no_settings(config: dict[str, Any]) -> dict[str, Any]:
    return {}


DEFAULT_NEEDS = "evaluation.systems on its benchmarks"


@dataclass(frozen=True)
class ReportPlan:
    """What planning knows of one table or figure, declared once per name in `REPORTS`: its
    caption, the evaluations it reads, its paper file (a `report` key), what in the config makes
    those evaluations (for 'nothing to show' errors), its own settings, the files it reads beyond
    its jobs' metrics, and whether it carries MemAgent's prompt wording or Figure 10's measured
    cost. Its builder and loader are declared in its report module (memrepro.report.registry)."""

    name: str  # its key in REPORTS, its target, the stem of its files (unless `named_by`)
    caption: str
    jobs: Callable[[Selection], list[EvalJob]]
    paper: str = "paper"  # MemAgent's numbers; "memalpha_paper": Mem-α's
    paper_key: str | None = None  # where its numbers are in the paper file (checked at planning)
    # where a score table's paper rows sit in the paper file: a prose claim's number under it is
    # read from this table's cell of that row (memrepro.config.prose_claims.our_cells); None: no
    # rows
    rows_at: tuple[str, ...] | None = None
    row_aliases: tuple[str, ...] | None = None  # where its rows' other names sit ({alias: row})
    needs: str = DEFAULT_NEEDS
    settings: Callable[[dict[str, Any]], dict[str, Any]] = _no_settings
    # the files it reads other than its jobs' metrics (None: the metrics)
    inputs: Callable[[dict[str, Any]], list[str]] | None = None
    wording: bool = False  # a MemAgent table: which of MemAgent's prompt wordings ran
    measured_cost: bool = False  # Figure 10: model directories and the jobs' benchmark files
    figure: bool = False  # a figure (drawn by a PaperFigure), not a table
    # the name a config gives its files, `<name>_<that>` (one's own data: `custom.name`), so
    # two configs keep their own (None where the config gives none)
    named_by: Callable[[dict[str, Any]], str | None] | None = None


def _trace_jobs(s: Selection) -> list[EvalJob]:
    """Table 5's memorize jobs: the paper's example, memorised by the policies `memalpha.example`
    names; without one, every Mem-α framework job on Mem-α's benchmarks (the fallback)."""
    return s.select(EXAMPLE_BENCHMARK) or (
        s.select("memalpha", kind="memalpha") + s.select("mab", kind="memalpha")
    )


def _trace_inputs(config: dict[str, Any]) -> list[str]:
    """Table 5's memories, and where the paper's example was found (where one is looked for)."""
    memories = [
        f"{eval_prefix(config, job)}.memories.jsonl" for job in report_jobs(config, TRACE_TABLE)
    ]
    found = [str(example_files(config)[1])] if config["memalpha"].get("example") else []
    return [*memories, *found]


def _stats_inputs(name: str) -> Callable[[dict[str, Any]], list[str]]:
    return lambda config: [str(stats_file(config, split)) for split in stats_splits(config, name)]


def _niah_set_inputs(config: dict[str, Any]) -> list[str]:
    """Table 7 reads the NIAH sets themselves."""
    return [str(path) for task, n in niah_sets(config) for path in ruler_data(config, n, (task,))]


def _keyword_inputs(config: dict[str, Any]) -> list[str]:
    return [str(keywords_file(config, name)) for name in keyword_sets(config)]


def _memagent_checkpoints(config: dict[str, Any]) -> list[str]:
    """Every MemAgent training job's checkpoint: its recipe file is beside it."""
    runs = memagent_runs(config)
    return [str(checkpoint_dir(config, run, stage)) for run in runs for stage in STAGES]


def _memalpha_checkpoints(config: dict[str, Any]) -> list[str]:
    return [str(checkpoint_dir(config, run, MEMALPHA_STAGE)) for run in memalpha_runs(config)]


def _item_inputs(name: str) -> Callable[[dict[str, Any]], list[str]]:
    return lambda config: item_files(config, report_jobs(config, name))


def item_files(config: dict[str, Any], jobs: list[EvalJob]) -> list[str]:
    """Each evaluation's metrics (its system, benchmark, length) and predictions (its items)."""
    prefixes = [eval_prefix(config, job) for job in jobs]
    return [f"{p}.{end}" for p in prefixes for end in ("metrics.json", "predictions.jsonl")]


def _memagent(
    name: str,
    caption: str,
    paper_key: str | None,
    jobs: Callable[[Selection], list[EvalJob]],
    **kw: Any,
) -> ReportPlan:
    """A MemAgent table: its numbers in MemAgent's paper file, the prompt wording noted."""
    return ReportPlan(name, caption, jobs, paper_key=paper_key, wording=True, **kw)


def _memalpha(
    name: str,
    caption: str,
    paper_key: str | None,
    jobs: Callable[[Selection], list[EvalJob]],
    **kw: Any,
) -> ReportPlan:
    """A table or figure compared with Mem-α's paper file."""
    return ReportPlan(name, caption, jobs, paper="memalpha_paper", paper_key=paper_key, **kw)


def _figure(
    name: str,
    caption: str,
    paper_key: str | None,
    jobs: Callable[[Selection], list[EvalJob]],
    **kw: Any,
) -> ReportPlan:
    """A MemAgent figure."""
    return ReportPlan(name, caption, jobs, paper_key=paper_key, figure=True, **kw)


def _memory_ablation(
    declare: Callable[..., ReportPlan], name: str, caption: str, **kw: Any
) -> ReportPlan:
    """Tables 8, 9 and Figures 8, 9: the ablated systems and their variants (MEMORY_ABLATION)."""
    return declare(
        name,
        caption,
        "memory_ablation",
        lambda s: s.memory_ablation(name),
        needs=_MEMORY_NEEDS,
        settings=memory_ablation_settings(name),
        **kw,
    )


def _memory_ablation_table(name: str, caption: str, part: str) -> ReportPlan:
    """Table 8 (`niah`) or 9 (`longbench_qa`): its rows are the paper file's
    `memory_ablation.<part>`, the default configuration's also by Table 1's names."""
    rows_at, aliases = ("memory_ablation", part), ("niah", "default_rows")
    return _memory_ablation(_memagent, name, caption, rows_at=rows_at, row_aliases=aliases)


def _ablation(name: str, caption: str) -> ReportPlan:
    """Mem-α Tables 4 and 9: the (β, γ) ablation of our Mem-α runs on one benchmark."""
    bench = ABLATION_TABLES[name]
    return _memalpha(
        name,
        caption,
        name.removeprefix("memalpha_"),
        lambda s: s.ablation(bench),
        needs=_ABLATION_NEEDS,
        rows_at=(name.removeprefix("memalpha_"), "rows"),
    )


def _stats(name: str, caption: str) -> ReportPlan:
    """Mem-α Tables 6-8: the statistics of the `memalpha` splits it describes."""
    return _memalpha(
        name, caption, name.removeprefix("memalpha_"), _nothing, inputs=_stats_inputs(name)
    )


def _nothing(selection: Selection) -> list[EvalJob]:
    return []


def _rl_groups(config: dict[str, Any]) -> dict[str, Any]:
    return {"rl_ablation": rl_ablation_groups(config)}


_MEMORY_NEEDS = "evaluation.memory_ablation"
_RL_NEEDS = "report.rl_ablation"
_ABLATION_NEEDS = "memalpha.training.runs, evaluated as systems"


def declared_once(*plans: ReportPlan) -> dict[str, ReportPlan]:
    """Name -> plan, in the order given; a name declared twice stops the import, naming it."""
    found: dict[str, ReportPlan] = {}
    for plan in plans:
        if plan.name in found:
            raise ConfigError(f"memrepro.config.report_plans: {plan.name!r} is declared twice")
        found[plan.name] = plan
    return found


# Every table and figure by name, in the plan's order (the tables, then the figures): its caption,
# where its numbers are in its paper file, the evaluations it reads and what else it declares
REPORTS: dict[str, ReportPlan] = declared_once(
    _memagent(
        "table1",
        "RULER-HQA accuracy (%)",
        "ruler_hqa",
        Selection.memagent_suite,
        rows_at=("ruler_hqa",),
    ),
    _memagent(
        "table2",
        "LongBench-SUM, ROUGE recall (%)",
        "longbench_sum",
        lambda s: s.select("longbench", rag=False, tasks=LONGBENCH_SUM),
        rows_at=("longbench_sum",),
    ),
    _memagent(
        "table3",
        "LongBench-QA (%)",
        "longbench_qa",
        lambda s: s.select("longbench", rag=False, tasks=s.qa),
        rows_at=("longbench_qa",),
    ),
    _memagent(
        PROBE_TABLE,
        "Table 4: the context-distribution probe, differences from random",
        "probe",
        Selection.probe,
        needs="evaluation.probe",
        settings=probe_settings,
        inputs=_item_inputs(PROBE_TABLE),
    ),
    _memagent(
        NIAH_CONFIG_TABLE,
        "Table 7: the NIAH synthetic configuration that ran",
        "niah_config",
        _nothing,
        settings=niah_config_settings,
        inputs=_niah_set_inputs,
    ),
    _memory_ablation_table("table8", "Table 8: NIAH (mean of levels 1-3) by memory/chunk", "niah"),
    _memory_ablation_table("table9", "Table 9: LongBench-QA by memory/chunk size", "longbench_qa"),
    _memagent(
        "table10",
        "RULER-HQA: MemAgent vs RAG over whole documents (%)",
        "rag_ruler_hqa",
        lambda s: s.select("ruler_hqa", rag=True) + s.select("ruler_hqa", kind="memagent"),
        rows_at=("rag_ruler_hqa",),
    ),
    _memagent(
        "table11",
        "LongBench-QA: MemAgent vs RAG over chunks (%)",
        "rag_longbench_qa",
        lambda s: (
            s.select("longbench", rag=True, tasks=s.qa)
            + s.select("longbench", kind="memagent", tasks=s.qa)
        ),
        rows_at=("rag_longbench_qa",),
    ),
    _memagent(
        "table_niah",
        "NIAH: mean of niah_single_1/2/3 (%)",
        "memory_ablation",
        lambda s: s.select("ruler", tasks=NIAH_FIGURE_TASKS),
    ),
    ReportPlan(
        MEMAGENT_RECIPES_TABLE,
        "MemAgent's training recipe: each trained job beside §A.3 and the official scripts",
        _nothing,
        paper_key="recipe",
        needs="training.runs",
        inputs=_memagent_checkpoints,
    ),
    _memagent(
        PATTERNS_TABLE,
        "Failure patterns (Appendix F): what the memory did with the gold evidence",
        None,
        lambda s: s.select("ruler_hqa", kind="memagent"),
    ),
    _memalpha(
        "memalpha_table1",
        "Mem-α Table 1: validation, Perf. (%) and Mem. (K)",
        "table1",
        lambda s: s.select("memalpha"),
        rows_at=("table1", "rows"),
    ),
    _memalpha(
        "memalpha_table2",
        "Mem-α Table 2: MemoryAgentBench, Perf. and Mem.",
        "table2",
        lambda s: s.select("mab"),
        rows_at=("table2", "rows"),
    ),
    _memalpha(
        "memalpha_table3",
        "Mem-α Table 3: the framework with three policies",
        "table3",
        lambda s: s.select("memalpha", kind="memalpha"),
        rows_at=("table3", "rows"),
    ),
    _ablation("memalpha_table4", "Mem-α Table 4: the (β, γ) ablation, validation"),
    _ablation("memalpha_table9", "Mem-α Table 9: the (β, γ) ablation, MemoryAgentBench"),
    _memalpha(
        TRACE_TABLE,
        "Mem-α Table 5: final memories side by side",
        "table5",
        _trace_jobs,
        inputs=_trace_inputs,
    ),
    _memalpha(
        MEMALPHA_RECIPES_TABLE,
        "Mem-α's training recipe: each trained run beside §4.1 and the official script",
        "recipe",
        _nothing,
        needs="memalpha.training.runs",
        inputs=_memalpha_checkpoints,
    ),
    _stats("memalpha_table6", "Mem-α Table 6: dataset statistics (full training set, validation)"),
    _stats("memalpha_table7", "Mem-α Table 7: dataset statistics (train, valid.)"),
    _stats("memalpha_table8", "Mem-α Table 8: MemoryAgentBench statistics"),
    _memalpha(
        KEYWORDS_TABLE,
        "Mem-α Figure 4: the keyword golds rebuilt beside the released ones",
        None,
        _nothing,
        needs="keywords",
        inputs=_keyword_inputs,
    ),
    _memalpha(
        BUILD_TABLE,
        "Mem-α Tables 6 and 7 rebuilt: the training sets built again from their sources",
        None,
        _nothing,
        needs="memalpha.build",
        settings=table_settings,
        inputs=table_inputs,
    ),
    ReportPlan(
        CONTROLS_TABLE,
        "What memory adds: each memory system beside each control (closed-book, oracle, full "
        "context), paired",
        Selection.controls,
        needs="a control (closedbook, oracle, fullcontext) on a memory system's benchmarks",
        inputs=_item_inputs(CONTROLS_TABLE),
    ),
    ReportPlan(
        PROTOCOLS_TABLE,
        "One method, two protocols: MemAgent's memory written for the question and without it",
        protocol_jobs,
        needs="a memagent system with question_blind: true",
        settings=protocols_settings,
        inputs=_item_inputs(PROTOCOLS_TABLE),
    ),
    ReportPlan(
        SCORERS_TABLE,
        "Scores without regenerating: each rescored evaluation beside its benchmark's scorer, "
        "paired, and each judge's leniency",
        Selection.rescored,
        needs="rescore",
        settings=scorers_settings,
        inputs=rescore_inputs,
    ),
    ReportPlan(
        PAPER_CLAIMS_TABLE,
        "The papers' headline sentences on their own printed numbers and on ours",
        lambda s: [],
        needs="report.paper and report.memalpha_paper",
        settings=paper_claims_settings,
        inputs=paper_claims_inputs,
    ),
    ReportPlan(
        SEEDS_TABLE,
        "Seeds: the mean over samplings or trainings and questions, each seed, best-of-N apart",
        Selection.seeds,
        needs="evaluation.seeds, a system's seeds or training.seeds above 1",
        settings=lambda config: {
            "repeats": seed_repeats(config),
            "training_repeats": seed_repeats(config, TRAINING),
        },
        inputs=_item_inputs(SEEDS_TABLE),
    ),
    _memalpha(
        SUITES_TABLE,
        "Every system on RULER-HQA and MemoryAgentBench",
        None,
        lambda s: s.select("ruler_hqa") + s.select("mab"),
    ),
    ReportPlan(
        CUSTOM_TABLE,
        "Every chosen system on your own datasets",
        lambda s: s.select(CUSTOM_BENCHMARK),
        needs="custom",
        named_by=custom_config_name,
    ),
    _figure(
        "figure1", "RULER-HQA accuracy against context length", "figure1", Selection.memagent_suite
    ),
    _figure(
        "figure5",
        "NIAH (niah_single_1/2/3) accuracy",
        "niah",
        lambda s: s.select("ruler", tasks=NIAH_FIGURE_TASKS),
    ),
    _figure("figure_ood", "RULER out-of-distribution tasks", "ood", lambda s: s.select("ruler")),
    _figure(
        "figure6",
        "RL ablation on RULER-HQA: backbone, MemAgent w/o RL, RL-MemAgent",
        "rl_ablation",
        lambda s: s.rl_ablation(RL_ABLATION_FIGURES["figure6"]),
        needs=_RL_NEEDS,
        settings=_rl_groups,
    ),
    _figure(
        "figure7",
        "RL ablation on LongBench-QA: backbone, MemAgent w/o RL, RL-MemAgent",
        "rl_ablation",
        lambda s: s.rl_ablation(RL_ABLATION_FIGURES["figure7"], tasks=s.qa),  # QA
        needs=_RL_NEEDS,
        settings=_rl_groups,
    ),
    _memory_ablation(
        _figure, "figure8", "Memory size on NIAH (mean of niah_single_1/2/3), chunk size fixed"
    ),
    _memory_ablation(_figure, "figure9", "Memory size on LongBench-QA, chunk size fixed"),
    _figure(
        FLOPS_FIGURE,
        "FLOPs from 8K to 4M tokens, and the measured cost of our RULER-HQA jobs",
        None,
        lambda s: s.rl_ablation("ruler_hqa", FLOPS_ROLES),
        measured_cost=True,
    ),
    ReportPlan(
        "memalpha_frontier",
        "Mem-α suites: average score against memory size",
        lambda s: s.select("memalpha") + s.select("mab"),
        paper="memalpha_paper",
        figure=True,
    ),
)
TABLES = tuple(name for name, plan in REPORTS.items() if not plan.figure)
FIGURES = tuple(name for name, plan in REPORTS.items() if plan.figure)
if list(REPORTS) != [*TABLES, *FIGURES]:  # the tables first: the plan's and the report's order
    raise ConfigError("memrepro.config.report_plans: REPORTS lists a table after a figure")


def report_plan(name: str) -> ReportPlan:
    """A table's or figure's plan, by its name or its files' stem (`report_stem`)."""
    if report_of_stem(name) not in REPORTS:
        raise ConfigError(f"unknown table or figure {name!r}")
    return REPORTS[report_of_stem(name)]


def report_stem(config: dict[str, Any], name: str) -> str:
    """The file name (no suffix) of a table or figure: its name, followed by the name the config
    gives it where its plan is `named_by` one (the custom table: `custom_<custom.name>`)."""
    named_by = REPORTS[name].named_by
    given = named_by(config) if named_by else None
    return f"{name}_{given}" if given else name


def report_of_stem(stem: str) -> str:
    """The table or figure whose files are named `stem` (report_stem's inverse)."""
    named = (n for n, plan in REPORTS.items() if plan.named_by and stem.startswith(f"{n}_"))
    return next(named, stem)


def paper_file(config: dict[str, Any], name: str) -> str:
    """The published numbers a table or figure is compared with (config/paper/)."""
    return config["report"][report_plan(name).paper]


def check_paper_key(config: dict[str, Any], name: str) -> None:
    """A table or figure whose paper file lacks the key of its numbers stops the plan, naming
    it, rather than its job at the end of a run."""
    plan = report_plan(name)
    path = paper_file(config, name)
    if plan.paper_key is not None and plan.paper_key not in _paper_keys(path):
        raise ConfigError(
            f"{name}: its paper file {path} (report.{plan.paper}) has no key "
            f"{plan.paper_key!r}; is the file complete?"
        )


@functools.lru_cache(maxsize=8)
def _paper_keys(path: str) -> frozenset[str]:
    return frozenset(load_yaml(path))


def report_needs(name: str) -> str:
    """The config part whose evaluations a table or figure reads (for 'nothing to show' errors)."""
    return report_plan(name).needs


def report_jobs(config: dict[str, Any], name: str) -> list[EvalJob]:
    """The evaluation jobs a table or figure reads, each declared by the benchmark it reads and
    the systems, tasks and lengths it shows; their metrics files may hold other tasks too, which
    the tables ignore."""
    return report_plan(name).jobs(Selection(config, name))


def report_inputs(config: dict[str, Any], name: str) -> list[str]:
    """The files a table or figure reads: its jobs' metrics, or what it declares instead
    (dataset statistics, rebuilt keyword golds, the NIAH sets, Table 5's memories)."""
    plan = report_plan(name)
    if plan.inputs is not None:
        return plan.inputs(config)
    jobs = report_jobs(config, name)
    return list(dict.fromkeys(f"{eval_prefix(config, job)}.metrics.json" for job in jobs))


def control_jobs(config: dict[str, Any], name: str) -> list[EvalJob]:
    """A score table's memory systems' evaluations and the flagging controls' beside them
    (Selection.beside_controls): each memory cell's gain over the control; none elsewhere."""
    plan = report_plan(name)
    if plan.figure or plan.inputs is not None:
        return []
    return Selection(config, name).beside_controls(report_jobs(config, name))


def control_inputs(config: dict[str, Any], name: str) -> list[str]:
    return item_files(config, control_jobs(config, name))


def table_settings(config: dict[str, Any], name: str) -> dict[str, Any]:
    """What one table or figure reads beyond `report_settings`: every table its margin ±δ,
    MemAgent's tables the prompt wording that ran, a score table the systems of its gains over
    a control, and what it declares of its own (Figures 6 and 7 their groups, Table 4 its
    probe, Table 7 the RULER settings it reports, the memory ablation its own systems)."""
    plan = report_plan(name)
    margin = {} if plan.figure else {"margin": equivalence_margin(config, name)}
    wording = {"memagent_wording": memagent_wording(config)} if plan.wording else {}
    beside = {job.system for job in control_jobs(config, name)}
    gains = [s for s in report_systems(config, True) if s["id"] in beside]
    return {
        **margin,
        **wording,
        **({"control_systems": gains} if gains else {}),
        **plan.settings(config),
    }
