"""The evaluation jobs of one config as each table and figure selects them (`Selection`), for its
plan in memrepro.config.report_plans."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from memrepro.benchmarks import PROBE_BENCHMARK
from memrepro.benchmarks import benchmark as registered_benchmark
from memrepro.config.matrix import (
    SAMPLING,
    TRAINING,
    EvalJob,
    eval_jobs,
    eval_systems,
    is_variant,
    rl_ablation_groups,
)
from memrepro.config.reports import ABLATION_ROLES, MEMORY_ABLATION, memory_ablation_members
from memrepro.config.rescoring import rescore_jobs
from memrepro.layout import ConfigError, memalpha_runs
from memrepro.scoring.longbench import LONGBENCH_SUM
from memrepro.systems import system_kind


class Selection:
    """The evaluation jobs of one config as tables and figures select them: each `ReportPlan`'s
    `jobs` picks its own through these (a job of a memory-ablation variant only where asked)."""

    def __init__(self, config: dict[str, Any], name: str = "") -> None:
        self.config = config
        self.name = name  # the table or figure selecting: named in its errors
        self.kinds = eval_systems(config)
        self.every_job = eval_jobs(config, self.kinds)
        self.jobs = [j for j in self.every_job if not is_variant(self.kinds[j.system])]
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
        of systems of `kind`, of `systems`, at `lengths`. A benchmark or system no config could
        have stops the plan, naming the table or figure."""
        kinds = self.kinds
        try:
            registered_benchmark(benchmark)
        except ValueError as exc:  # "unknown benchmark 'x'; known: ..."
            raise ConfigError(f"{self.name}: selects {exc}") from None
        if unknown := sorted(set(systems or ()) - set(kinds)):
            raise ConfigError(
                f"{self.name}: selects systems not in evaluation.systems: {', '.join(unknown)}"
            )
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

    def controls(self) -> list[EvalJob]:
        """The controls (closed-book, oracle, full context), and the memory systems' jobs at
        each benchmark and length where one ran or stands (`cells`)."""
        kinds = self._kinds()
        control = {cell for j in self.jobs if kinds[j.system].control for cell in self.cells(j)}
        return [
            j
            for j in self.jobs
            if kinds[j.system].control
            or (kinds[j.system].memory and (j.benchmark, j.length) in control)
        ]

    def beside_controls(self, shown: Sequence[EvalJob]) -> list[EvalJob]:
        """Of a score table's jobs (`shown`), the memory systems' at a benchmark and length
        where a control that flags cells ran or stands (closed-book: `Control.reached`), and
        those controls' jobs: what each memory cell's gain over it reads."""
        kinds = self._kinds()
        flagging = [j for j in self.jobs if (c := kinds[j.system].control) and c.reached]
        at = {cell for j in flagging for cell in self.cells(j)}
        memory = [j for j in shown if kinds[j.system].memory and (j.benchmark, j.length) in at]
        used = {(j.benchmark, j.length) for j in memory}
        return [*memory, *(j for j in flagging if used & self.cells(j))]

    def cells(self, job: EvalJob) -> set[tuple[str, int]]:
        """The (benchmark, length) cells a job's records stand for: its own, or every length
        of its benchmark in the plan where one evaluation stands for all (`one_length`: a
        closed-book on RULER-HQA)."""
        if not system_kind(self.kinds[job.system]["kind"]).one_length(job.benchmark):
            return {(job.benchmark, job.length)}
        return {(j.benchmark, j.length) for j in self.jobs if j.benchmark == job.benchmark}

    def _kinds(self) -> dict[str, Any]:
        return {sid: system_kind(spec["kind"]) for sid, spec in self.kinds.items()}

    def protocols(self, source: str | None) -> list[EvalJob]:
        """Each MemAgent system switched to the other paper's protocol (question-blind on
        MemAgent's benchmarks, question-aware on Mem-α's): its jobs, and those of the MemAgent
        systems of its model as each paper runs them at the same benchmarks and lengths, and
        wherever they read Mem-α's instance `source` (MemoryAgentBench's RULER-QA source)."""
        flags = ("question_blind", "question_aware")
        switched = {s for s, spec in self.kinds.items() if any(spec.get(f) for f in flags)}
        models = {self.kinds[s]["model"] for s in switched}
        own = {
            s
            for s, spec in self.kinds.items()
            if spec["kind"] == "memagent" and spec["model"] in models and s not in switched
        }
        cells = {(j.benchmark, j.length) for j in self.jobs if j.system in switched}
        return [
            j
            for j in self.jobs
            if j.system in switched
            or (j.system in own and ((j.benchmark, j.length) in cells or source in j.tasks))
        ]

    def seeds(self) -> list[EvalJob]:
        """The evaluations of each system sampled or trained at several seeds, and of its
        repeats."""
        varies = (SAMPLING, TRAINING)
        sampled = {s for s, spec in self.kinds.items() if any(key in spec for key in varies)}
        sampled |= {self.kinds[s][key] for s in sampled for key in varies if key in self.kinds[s]}
        return [job for job in self.every_job if job.system in sampled]

    def rescored(self) -> list[EvalJob]:
        """The evaluations some scorer of `rescore` scores again."""
        rescored = {job.evaluation for job in rescore_jobs(self.config)}
        return [job for job in self.jobs if job in rescored]

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
