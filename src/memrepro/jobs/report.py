"""The report jobs: tables, figures, training curves and memory traces."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from memrepro.benchmarks.ruler_hqa import pool_documents, read_documents, supporting_paragraphs
from memrepro.jobs.evaluate import eval_rows
from memrepro.models import load_tokenizer
from memrepro.tracking.invocation import made_by
from memrepro.tracking.record import JobRecord


def cmd_table(args: argparse.Namespace, run: JobRecord) -> None:
    """A paper table (settings `name`): ours beside the paper's numbers, as CSV, Markdown, LaTeX."""
    from memrepro.config import report_plan
    from memrepro.report.tables import write_paper_table

    s = args.settings
    table = paper_table_of(s, args.metrics, args.paper, args.controls)
    caption = f"{report_plan(s['name']).caption}, run {s['run']}"
    table.attrs["provenance"] = provenance_footnote(args.out_prefix)
    write_paper_table(s["name"], table, args.out_prefix, caption)


def paper_table_of(
    s: dict[str, Any], metrics: list[Path], paper_file: Path, controls: list[Path]
) -> Any:
    """The table (a DataFrame, its notes and claims in `attrs`) that settings `s` build from
    these metrics, paper file and controls: what the table job writes, and `memrepro verify`
    builds again."""
    from memrepro.config import load_yaml
    from memrepro.report.cells import mark_machinery_only
    from memrepro.report.claims import not_comparable
    from memrepro.report.control_gains import attach_control_gains
    from memrepro.report.controls import load_item_scores
    from memrepro.report.recipes import trained_recipe_notes
    from memrepro.report.rows import system_specs
    from memrepro.report.tables import build_paper_table, load_table_records, paper_table

    name = s["name"]
    spec = paper_table(name)
    labels = s["ruler_length_labels" if spec.ruler_lengths else "length_labels"]
    records = load_table_records(name, metrics)
    paper = load_yaml(paper_file)
    with _reading_paper(paper_file, name):
        table = build_paper_table(
            name,
            records,
            s["systems"],
            paper,
            labels,
            niah_config=s.get("niah_config"),
            probe=s.get("probe"),
            margin=s["margin"],
            settings=s,
        )
    if controls:  # each memory cell's gain over the closed-book control
        gain_systems = {**system_specs(s["systems"]), **system_specs(s["control_systems"])}
        attach_control_gains(table, load_item_scores(controls), gain_systems)
    if "memagent_wording" in s:  # MemAgent's tables say which prompts ran
        from memrepro.report.memagent_tables import WORDING_NOTES

        table.attrs.setdefault("notes", []).append(WORDING_NOTES[s["memagent_wording"]])
    shown = {record["system"] for record in records if "system" in record}
    table.attrs.setdefault("notes", []).extend(trained_recipe_notes(s["systems"], shown))
    mark_machinery_only(table, s["systems"])
    if table.attrs.get("banner"):
        table.attrs["claims"] = not_comparable(table.attrs.get("claims", []))
    return table


def provenance_footnote(out_prefix: str) -> str:
    """What made `<out_prefix>.md` (commit, config hash, invocation) and how to trace it."""
    from memrepro.report.render import MADE_BY_LINE

    return f"{MADE_BY_LINE}{made_by()}; its lineage: memrepro lineage {out_prefix}.md"


def cmd_reproduction(args: argparse.Namespace, run: JobRecord) -> None:
    """The reproduction report of a run: every table's verdicts, misses, notes and lineage."""
    from memrepro.report.reproduction import write_reproduction

    tables = [path for path in args.tables if path.suffix == ".md"]
    write_reproduction(
        args.settings,
        tables,
        args.figures,
        args.claims,
        args.case_studies,
        Path(args.out_prefix),
        provenance_footnote(args.out_prefix),
        args.evaluations,
        args.benchmarks,
    )


def cmd_figure(args: argparse.Namespace, run: JobRecord) -> None:
    """A paper figure (settings `name`) as PNG and PDF."""
    from memrepro.config import load_yaml, report_plan
    from memrepro.report.cells import MACHINERY_ONLY, not_reproducing
    from memrepro.report.claims import CLAIMS_SUFFIX, write_claims
    from memrepro.report.figures import plot_paper_figure
    from memrepro.report.records import load_metrics

    s = args.settings
    name = s["name"]
    records, paper = load_metrics(args.metrics), load_yaml(args.paper)
    title = f"{report_plan(name).caption}, run {s['run']}"
    if not_reproducing(s["systems"]):  # the figure opens with it; no claim holds or fails
        title = f"{MACHINERY_ONLY}no comparison with the paper\n{title}"
    checks = figure_checks(s, records, paper, args.paper)
    write_claims(checks, Path(f"{args.out_prefix}{CLAIMS_SUFFIX}"))
    with _reading_paper(args.paper, name):
        plot_paper_figure(
            name,
            records,
            s["systems"],
            paper,
            args.out_prefix,
            title,
            length_labels=s["length_labels"],
            ruler_length_labels=s["ruler_length_labels"],
            rl_ablation=s.get("rl_ablation"),
            flops=s.get("flops"),
            agent=s.get("agent"),
            checks=checks,
        )


def figure_checks(
    s: dict[str, Any], records: list[dict[str, Any]], paper: Any, paper_file: Path
) -> list[dict[str, Any]]:
    """The paper claims a figure checks: what its job writes, and `memrepro verify` checks again.
    A figure of models that cannot reproduce the papers marks each as not comparable."""
    from memrepro.report.cells import not_reproducing
    from memrepro.report.claims import not_comparable
    from memrepro.report.figures import figure_claims

    with _reading_paper(paper_file, s["name"]):
        checks = figure_claims(
            s["name"], records, s["systems"], paper, s["length_labels"], s.get("rl_ablation")
        )
    return not_comparable(checks) if not_reproducing(s["systems"]) else checks


@contextlib.contextmanager
def _reading_paper(path: Path, name: str) -> Iterator[None]:
    """A paper file (config/paper/*.yaml) missing a key or holding the wrong kind of value (a
    truncated file parses, as far as it goes) fails naming the file, not with a bare KeyError.
    The metrics records are checked as they are read."""
    from memrepro.report.cells import PaperNumberError

    try:
        yield
    except PaperNumberError as e:
        raise ValueError(f"{path}: {e}") from e
    except (KeyError, TypeError, AttributeError, IndexError) as e:
        raise ValueError(
            f"{path}: not the published numbers {name} reads ({type(e).__name__}: {e}); "
            "is the file complete?"
        ) from e


def cmd_training_curve(args: argparse.Namespace, run: JobRecord) -> None:
    """Settings: `title`, optional `labels` (one per --metrics path: a train_metrics.jsonl or a
    training output directory; default: the paths' distinguishing directory names), `curve`
    (memagent, memalpha) and `machinery_only` (the title opens with that line)."""
    from memrepro.report.cells import MACHINERY_ONLY
    from memrepro.report.training_curves import CURVES, plot_training_curve, training_metrics_files

    s = args.settings
    files = training_metrics_files(args.metrics, s.get("labels"))
    title = s.get("title", "Multi-Conv DAPO training")
    if s.get("machinery_only"):
        title = f"{MACHINERY_ONLY}a model that cannot reproduce the papers\n{title}"
    plot_training_curve(files, args.out_prefix, title, CURVES[s.get("curve", "memagent")])


def cmd_trace(args: argparse.Namespace, run: JobRecord) -> None:
    """Case studies (Appendix C / F): the memory after every chunk of chosen MemAgent samples of
    a predictions file, as `<out-prefix>.md` and `.html` (memrepro.report.trace). With --data (one
    eval set per task, as evaluate reads them; --pool for RULER-HQA doc-id rows) and --tokenizer
    (the evaluated model's), the chunks are rebuilt to mark those holding gold evidence.
    Settings: `benchmark`; `tasks` (the --data files' tasks, in order; default: every task in
    the predictions); `agent.chunk_tokens`, with --tokenizer; optional
    `samples` (indices, in each task), else the `first` (default 5) whose verdict is `only`
    (all, correct, wrong, failed); with --pool-questions (RULER-HQA's), each sample's supporting
    paragraphs are located too; `evidence` ({"index" or "task:index": [strings]}, replacing
    the gold answers as that sample's evidence); `title`."""
    from memrepro.benchmarks import Task
    from memrepro.benchmarks.base import row_chunks
    from memrepro.data.io import read_jsonl
    from memrepro.report import trace
    from memrepro.report.cells import machinery_line

    s = args.settings
    if (args.data is None) != (args.tokenizer is None):
        raise SystemExit("--data and --tokenizer go together: both are needed to rebuild chunks")
    if args.pool_questions is not None and args.pool is None:
        raise SystemExit("--pool-questions needs --pool: the paragraphs are the pool's documents")
    grouped = trace.by_task(read_jsonl(args.predictions, required=("index",)))
    tasks = s.get("tasks") or list(grouped)
    if args.data is not None and len(args.data) != len(tasks):
        raise SystemExit(f"--data: {len(args.data)} files for the tasks {tasks}")
    tokenizer = load_tokenizer(args.tokenizer) if args.tokenizer is not None else None
    if tokenizer is not None and "agent" not in s:
        raise SystemExit("--tokenizer needs the run's chunk size: settings agent.chunk_tokens")
    evidence = {str(key): value for key, value in (s.get("evidence") or {}).items()}
    studies = []
    for k, task in enumerate(tasks):
        if task not in grouped:
            raise SystemExit(f"{args.predictions}: no prediction of task {task!r}")
        chosen = trace.select(
            grouped[task],
            s.get("samples"),
            s.get("first", trace.DEFAULT_FIRST),
            s.get("only", "all"),
            s.get("question"),
        )
        traced = [p for p in chosen if "memory_trace" in p]
        rows: dict[Any, dict[str, Any]] = {}
        if args.data is not None and traced:
            rows = {
                row["index"]: row
                for row in eval_rows(Task(s["benchmark"], task), args.data[k], tokenizer)
            }
            if missing := [p["index"] for p in traced if p["index"] not in rows]:
                raise SystemExit(f"{args.data[k]}: no row for sample(s) {missing} of {task}")
        pool = pool_documents([rows[p["index"]] for p in traced], args.pool) if rows else None
        supporting = {}
        if rows and args.pool_questions is not None:
            docs = pool if pool is not None else read_documents(args.pool)
            indices = [p["index"] for p in traced]
            supporting = supporting_paragraphs(indices, docs, args.pool_questions)
        for p in chosen:
            row = rows.get(p["index"]) if "memory_trace" in p else None
            chunks = None
            if row is not None:
                chunks = row_chunks(row, pool, tokenizer, s["agent"]["chunk_tokens"])
            given = evidence.get(f"{task}:{p['index']}", evidence.get(str(p["index"])))
            paragraphs = supporting.get(p["index"], {}) if row is not None else {}
            studies.append(trace.case_study(p, chunks, given, task, paragraphs))
    parts = [s.get(key) for key in ("benchmark", "system", "length") if s.get(key) is not None]
    title = s.get("title") or " · ".join(["MemAgent memory traces", *map(str, parts)])
    asked = s.get("question")
    if asked and studies and not any(trace.asks(st.prediction, asked) for st in studies):
        note = f"no sample of this set asks about {asked!r} (the paper's own case study)"
        studies[0] = replace(studies[0], notes=(*studies[0].notes, note))
    banner = machinery_line("these memories come from") if s.get("machinery_only") else ""
    trace.write_report(studies, args.out_prefix, title, banner)
    run.log_metrics({"samples": len(studies), "traced": sum(st.has_trace for st in studies)})
