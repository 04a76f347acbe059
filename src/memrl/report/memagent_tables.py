"""MemAgent's tables (seed 000), rebuilt from our metrics files beside the published numbers.

- Table 1 (`build_table1`): RULER-HQA accuracy per number of documents.
- Table 2 (`build_longbench_sum_table`): LongBench-SUM ROUGE-1/2/L recall and their mean.
- Table 3 (`build_longbench_qa_table`): LongBench-QA (the paper's per-item binary score, our
  `accuracy` = sub_em), with LongBench's own qa_f1 beside each cell.
- Table 4 (`build_probe_table`): the context-distribution probe, differences from random.
- Table 7 (`build_niah_config_table`): the NIAH synthetic configuration that ran.
- Tables 8, 9 (`build_memory_ablation_*`): memory and chunk sizes.
- Table 10 (`build_rag_ruler_hqa_table`): RAG over whole documents vs MemAgent on RULER-HQA.
- Table 11 (`build_rag_longbench_table`): RAG over fixed-size chunks vs MemAgent on LongBench-QA.
- NIAH (`build_niah_table`): mean of niah_single_1/2/3 per length, against Table 8's MemAgent rows.

Table 11's printed average divides by 6, not 5: its note says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from memrl.benchmarks import PROBE_BENCHMARK, RULER_HQA_TASK
from memrl.benchmarks.longbench import TASK_LABELS
from memrl.config import (
    CAPTIONS,
    NIAH_CONFIG_TABLE,
    NIAH_FIGURE_TASKS,
    PATTERNS_TABLE,
)
from memrl.data.longbench import LONGBENCH_QA, LONGBENCH_SUM
from memrl.report.cells import (
    AVG,
    BENCHMARK,
    DASH,
    PARTIAL_MARK,
    Average,
    Cell,
    Column,
    PaperTable,
    Systems,
    accuracy_cell,
    assemble,
    format_tokens,
    hqa_label,
    is_rag_unit,
    length_columns,
    lookup,
    n_dropped,
    reads_instances,
    records_of,
    resolve_paper_rows,
    select,
    system_kind,
    system_specs,
)
from memrl.report.claims import (
    NOT_CHECKABLE,
    ClaimCheck,
    described,
    judge_lowest,
    lone,
    lowest,
    lowest_note,
    parts_of,
)
from memrl.scoring.compare import DIFFERENCE, standard_error
from memrl.scoring.intervals import Z95

# MemAgent's tables by name (the Snakefile's targets): their key in config/paper/memagent.yaml
MEMAGENT_TABLES = {
    "table1": PaperTable("ruler_hqa", CAPTIONS["table1"]),
    "table2": PaperTable("longbench_sum", CAPTIONS["table2"]),
    "table3": PaperTable("longbench_qa", CAPTIONS["table3"]),
    "table4": PaperTable("probe", CAPTIONS["table4"]),
    "table8": PaperTable("memory_ablation", CAPTIONS["table8"], ruler_lengths=True),
    "table9": PaperTable("memory_ablation", CAPTIONS["table9"]),
    NIAH_CONFIG_TABLE: PaperTable("", CAPTIONS[NIAH_CONFIG_TABLE], ruler_lengths=True),
    "table10": PaperTable("rag_ruler_hqa", CAPTIONS["table10"]),
    "table11": PaperTable("rag_longbench_qa", CAPTIONS["table11"]),
    "table_niah": PaperTable("memory_ablation", CAPTIONS["table_niah"], ruler_lengths=True),
    PATTERNS_TABLE: PaperTable("", CAPTIONS[PATTERNS_TABLE]),
}


NIAH_TASKS = NIAH_FIGURE_TASKS
# Table 2: (paper key, metrics-file field, header)
ROUGE_RECALLS = (
    ("rouge_1", "rouge_1_recall", "R-1"),
    ("rouge_2", "rouge_2_recall", "R-2"),
    ("rouge_l", "rouge_l_recall", "R-L"),
)


QA_F1 = ("F1", "qa_f1")  # shown beside Table 3/11 cells: (label, metrics-file field)
PAPER_RETRIEVER = "openai"  # Tables 10, 11: OpenAI's text-embedding-3-large, as our `openai`
RETRIEVER_WORDS = {
    "bm25": "BM25",
    "dense": "all-MiniLM-L6-v2 (dense)",
    "openai": "OpenAI embeddings (evaluation.embedding.model)",
}


def _ruler_hqa_length_table(
    metrics: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper: Mapping[str, Any],
    length_labels: Mapping[int, str],
    include: Callable[[str, Mapping[str, Any]], bool],
    table: str,
    benchmark: str = BENCHMARK,
    notes: Sequence[str] = (),
) -> pd.DataFrame:
    selected, found = select(
        metrics,
        systems,
        include,
        records_of(benchmark, (RULER_HQA_TASK,)),
        benchmark,
    )
    rows, row_notes = resolve_paper_rows(selected, paper, table, strict=True)
    columns = length_columns(found, benchmark, RULER_HQA_TASK, hqa_label(length_labels))
    frame = assemble(
        found,
        selected,
        rows,
        paper,
        columns,
        (),
        column_name="n_docs",
        table=table,
        notes=[*notes, *row_notes],
    )
    frame.attrs["length_labels"] = {int(n): str(label) for n, label in length_labels.items()}
    return frame


def build_table1(
    metrics: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper: Mapping[str, Mapping[Any, Any]],
    length_labels: Mapping[int, str],
    benchmark: str = BENCHMARK,
) -> pd.DataFrame:
    """Table 1: RULER-HQA accuracy; columns = n_docs (the records' `length`) ascending.

    `systems`: the report settings' list of {"id", "display", "paper_row", "kind", ...} (or a
    mapping id -> spec); RAG systems are left out (Table 10). `paper` maps paper row name ->
    {n_docs: accuracy or None}. Metrics of other benchmarks are ignored; metrics of an
    unconfigured system are an error, and so is a paper_row that Table 1 does not have.
    """

    def include(sid: str, spec: Mapping[str, Any]) -> bool:  # RAG and Mem-α's kinds: not here
        return system_kind(sid, spec) != "rag" and not reads_instances(sid, spec)

    return _ruler_hqa_length_table(
        metrics,
        systems,
        paper,
        length_labels,
        include=include,
        table="Table 1",
        benchmark=benchmark,
    )


def build_rag_ruler_hqa_table(
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper_rows: Mapping[str, Mapping[Any, Any]],
    length_labels: Mapping[int, str],
) -> pd.DataFrame:
    """Table 10: RULER-HQA accuracy of the memory agents and of RAG over whole documents.

    Rows: memagent systems and RAG systems with unit "doc", in config order. A RAG system's
    `paper_row` is a row of Table 10, or its group ("RAG + Qwen2.5-14B" or "Qwen2.5-14B"), from
    which the row follows with the system's K: "RAG + Qwen2.5-14B K=4".
    """
    compared, notes = _paper_retriever_only(systems)
    return _ruler_hqa_length_table(
        records,
        compared,
        paper_rows,
        length_labels,
        include=lambda sid, spec: (
            system_kind(sid, spec) == "memagent" or is_rag_unit(sid, spec, doc=True)
        ),
        table="Table 10",
        notes=notes,
    )


def _paper_retriever_only(systems: Systems) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The systems, a RAG system keeping its paper row only where it retrieves as the paper's
    RAG did (text-embedding-3-large: our `openai` retriever); notes naming the retrievers ours
    used and the rows that leaves without a paper number."""
    specs = system_specs(systems)
    rag = {sid: spec for sid, spec in specs.items() if system_kind(sid, spec) == "rag"}
    if not rag:
        return specs, []
    used = dict.fromkeys(str(spec.get("retriever")) for spec in rag.values())
    other = {sid for sid, spec in rag.items() if spec.get("retriever") != PAPER_RETRIEVER}
    compared = {
        sid: {**spec, "paper_row": None} if sid in other else spec for sid, spec in specs.items()
    }
    notes = [
        f"Our RAG retrieves with {', '.join(RETRIEVER_WORDS.get(r, r) for r in used)}; the "
        "paper's RAG with OpenAI's text-embedding-3-large."
    ]
    if other:
        notes.append(
            f"{len(other)} RAG row(s) of another retriever than the paper's have no paper number "
            "(it ran none); `openai` among a RAG system's retrievers (an OpenAI key) runs the "
            "paper's."
        )
    return compared, notes


def _qa_columns() -> tuple[list[Column], list[Average]]:
    """LongBench-QA: our accuracy (sub_em) per dataset with qa_f1 beside it, and their AVG."""
    columns = [
        Column(
            task,
            TASK_LABELS[task],
            "longbench",
            task,
            0,
            "accuracy",
            (task,),
            extras=(QA_F1,),
        )
        for task in LONGBENCH_QA
    ]
    return columns, [Average(AVG, "AVG", LONGBENCH_QA, (AVG,))]


def _longbench_table(
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper_rows: Mapping[str, Any],
    columns: Sequence[Column],
    averages: Sequence[Average],
    include: Callable[[str, Mapping[str, Any]], bool],
    table: str,
    notes: Sequence[str],
    strict: bool = True,
) -> pd.DataFrame:
    tasks = {column.task for column in columns}
    selected, found = select(
        records,
        systems,
        include,
        records_of("longbench", tasks),
        "longbench",
    )
    rows, row_notes = resolve_paper_rows(selected, paper_rows, table, strict=strict)
    return assemble(
        found,
        selected,
        rows,
        paper_rows,
        columns,
        averages,
        column_name="column",
        table=table,
        notes=[*notes, *row_notes],
    )


def build_longbench_qa_table(
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper_rows: Mapping[str, Mapping[str, Any]],
) -> pd.DataFrame:
    """Table 3: LongBench-QA, the paper's score (our `accuracy` = sub_em) with qa_f1 beside.

    Rows: memagent and long-context systems. Columns: 2wikimqa, hotpotqa, musique, narrativeqa,
    qasper (paper headers 2Wiki ... Qasper) and "avg", the mean of the five.
    """
    columns, averages = _qa_columns()
    return _longbench_table(
        records,
        systems,
        paper_rows,
        columns,
        averages,
        include=lambda sid, spec: system_kind(sid, spec) != "rag",
        table="Table 3",
        notes=[
            "The paper's LongBench-QA scores are k/200 (a binary score per item); ours is sub_em "
            "of the answer after 'the answer is'. F1 = LongBench's own qa_f1, ours only."
        ],
    )


def build_rag_longbench_table(
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper_rows: Mapping[str, Mapping[str, Any]],
) -> pd.DataFrame:
    """Table 11: LongBench-QA of the memory agents and of RAG over fixed-size chunks.

    Rows: memagent systems and RAG systems with a chunk unit ("c1024", ...). A RAG system's
    `paper_row` is a row of Table 11, or its group ("RAG + Qwen2.5-14B", "Qwen2.5-14B + RAG" or
    "Qwen2.5-14B"), from which the row follows with its C and K: "Qwen2.5-14B + RAG C=1024 K=4".
    """
    columns, averages = _qa_columns()
    compared, notes = _paper_retriever_only(systems)
    return _longbench_table(
        records,
        compared,
        paper_rows,
        columns,
        averages,
        include=lambda sid, spec: (
            system_kind(sid, spec) == "memagent" or is_rag_unit(sid, spec, doc=False)
        ),
        table="Table 11",
        notes=[*notes, "F1 = LongBench's own qa_f1, ours only."],
    )


def build_longbench_sum_table(
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper_rows: Mapping[str, Mapping[str, Any]],
) -> pd.DataFrame:
    """Table 2: LongBench-SUM ROUGE-1/2/L recall per dataset and their mean (AVG).

    Rows: memagent and long-context systems. Columns "gov_report.rouge_1", ...,
    "gov_report.avg", "qmsum.rouge_1", ... (headers "GovReport R-1", ...).
    """
    columns = [
        Column(
            f"{task}.{key}",
            f"{TASK_LABELS[task]} {header}",
            "longbench",
            task,
            0,
            field_name,
            (task, key),
        )
        for task in LONGBENCH_SUM
        for key, field_name, header in ROUGE_RECALLS
    ]
    averages = [
        Average(
            f"{task}.{AVG}",
            f"{TASK_LABELS[task]} AVG",
            tuple(f"{task}.{key}" for key, _, _ in ROUGE_RECALLS),
            (task, AVG),
        )
        for task in LONGBENCH_SUM
    ]
    return _longbench_table(
        records,
        systems,
        paper_rows,
        columns,
        averages,
        include=lambda sid, spec: system_kind(sid, spec) not in ("rag", "mem0"),  # QA only
        table="Table 2",
        notes=["ROUGE recall (pltrdy rouge 1.0.1), failed requests scored 0."],
    )


def token_label(tokens: int) -> str:
    """RULER's length names: 8192 -> '8K', 524288 -> '512K', 1048576 -> '1M'."""
    if tokens >= 1 << 20 and tokens % (1 << 20) == 0:
        return f"{tokens >> 20}M"
    if tokens % 1024 == 0:
        return f"{tokens >> 10}K"
    return format_tokens(tokens)


def niah_paper_rows(paper: Mapping[str, Any]) -> dict[str, Mapping[Any, Any]]:
    """{Table 1 row name: Table 8 row} for the rows named in `niah.default_rows` (the paper's
    default m1024-c5000 configuration): the only NIAH numbers the paper prints."""
    ablation = paper["memory_ablation"]["niah"]
    return {row: ablation[printed] for row, printed in paper["niah"]["default_rows"].items()}


def build_niah_table(
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper_rows: Mapping[str, Mapping[Any, Any]],
    tasks: Sequence[str] = NIAH_TASKS,
    length_labels: Mapping[int, str] | None = None,
) -> pd.DataFrame:
    """NIAH: per RULER length, the mean accuracy over `tasks` (Table 8's "average of level 1-3").

    Rows: memagent and long-context systems. `paper_rows` = `niah_paper_rows(paper)`; systems
    whose row Table 8 lacks (the baselines: Figure 5 only) get no paper value.
    """
    labels = {int(k): str(v) for k, v in (length_labels or {}).items()}
    selected, found = select(
        records,
        systems,
        lambda sid, spec: system_kind(sid, spec) != "rag",
        records_of("ruler", tasks),
        "ruler",
    )
    rows, row_notes = resolve_paper_rows(selected, paper_rows, "Table 8", strict=False)
    lengths = sorted({key[3] for key in found})
    columns = [
        Column(
            (task, length),
            f"{task} @ {labels.get(length, token_label(length))}",
            "ruler",
            task,
            length,
            "accuracy",
            None,  # the paper prints only the mean
            hidden=True,
        )
        for length in lengths
        for task in tasks
    ]
    averages = [
        Average(
            length,
            labels.get(length, token_label(length)),
            tuple((task, length) for task in tasks),
            (length,),
        )
        for length in lengths
    ]
    return assemble(
        found,
        selected,
        rows,
        paper_rows,
        columns,
        averages,
        column_name="length",
        table="NIAH",
        notes=[f"Mean accuracy over {', '.join(tasks)} (the paper's Table 8).", *row_notes],
    )


def memory_ablation_rows(paper: Mapping[str, Any], part: str) -> dict[str, Mapping[Any, Any]]:
    """Table 8 (`niah`) or 9 (`longbench_qa`) rows by printed name, and Table 1's names of the
    default configuration (`niah.default_rows`: RL-MEMAGENT-14B is 14B-m1024-c5000)."""
    printed = paper["memory_ablation"][part]
    aliases = paper["niah"]["default_rows"]
    return {**printed, **{row: printed[name] for row, name in aliases.items()}}


def _unprinted_notes(systems: Systems, paper_rows: Mapping[str, Any], table: str) -> list[str]:
    return [
        f"{spec['display']}: the paper prints no row {spec['paper_row']!r} in {table}."
        for spec in system_specs(systems).values()
        if spec.get("paper_row") is not None and spec["paper_row"] not in paper_rows
    ]


def build_memory_ablation_niah_table(
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper: Mapping[str, Any],
    length_labels: Mapping[int, str] | None = None,
) -> pd.DataFrame:
    """Table 8: the NIAH mean (niah_single_1/2/3) per length of each memory/chunk setting."""
    rows = memory_ablation_rows(paper, "niah")
    table = build_niah_table(records, systems, rows, tuple(paper["niah"]["tasks"]), length_labels)
    table.attrs["notes"] += _unprinted_notes(systems, rows, "Table 8")
    return table


def build_memory_ablation_qa_table(
    records: Iterable[Mapping[str, Any]], systems: Systems, paper: Mapping[str, Any]
) -> pd.DataFrame:
    """Table 9: LongBench-QA (Table 3's columns) of each memory/chunk setting."""
    rows = memory_ablation_rows(paper, "longbench_qa")
    columns, averages = _qa_columns()
    return _longbench_table(
        records,
        systems,
        rows,
        columns,
        averages,
        include=lambda sid, spec: system_kind(sid, spec) == "memagent",
        table="Table 9",
        notes=[
            "Scores as Table 3: ours is sub_em after 'the answer is', the paper's k/200.",
            *_unprinted_notes(systems, rows, "Table 9"),
        ],
        strict=False,
    )


PROBE_AVG_NOTE = (
    "The paper's column headed AVG is its 3,200-document (448K) column: both random rows equal "
    "Table 1's 448K cells (14B 79.69, 7B 76.56) and every difference lies on the k/128 grid; it "
    "is compared as such. AVG here: the mean of our columns, which the paper does not print."
)


def build_probe_table(
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper: Mapping[str, Any],
    probe: Mapping[str, Any],
    length_labels: Mapping[int, str] | None = None,
) -> pd.DataFrame:
    """Table 4: per probe system (`probe.systems`: id -> the paper's row group), its RULER-HQA
    accuracy with the random placement, then per placement (`probe.placements`, [A, B] percent)
    its probe accuracy minus the random one at the same length, as the paper prints them."""
    from memrl.config import probe_task

    specs = system_specs(systems)
    found = {
        (r["benchmark"], r["task"], r["system"], int(r["length"])): r
        for r in records
        if r["system"] in probe["systems"]
    }
    lengths = sorted({key[3] for key in found if key[0] == PROBE_BENCHMARK})
    labels = {int(n): str(label) for n, label in (length_labels or {}).items()}
    printed = paper["probe"]["rows"]
    rows: dict[str, list[Cell]] = {}
    system_ids, paper_rows, failures = {}, {}, []
    for sid, group in probe["systems"].items():
        display = specs[sid]["display"] if sid in specs else sid
        random = {n: found.get(("ruler_hqa", RULER_HQA_TASK, sid, n)) for n in lengths}
        settings = [("random", None, "random")]
        settings += [(f"{a}% {b}%", probe_task((a, b)), f"{a}-{b}") for a, b in probe["placements"]]
        for label, task, key in settings:
            row_label = f"{display}: {label}"
            paper_cells = printed.get(group, {}).get(key, {})
            cells = []
            for n in lengths:
                base = random[n]
                record = base if task is None else found.get((PROBE_BENCHMARK, task, sid, n))
                cells.append(_probe_cell(record, base, paper_cells, n, task is not None))
                if record is not None and n_dropped(record):
                    failures.append(
                        f"{row_label} @ {labels.get(n, n)}: {n_dropped(record)} of "
                        f"{record['n_items']} outputs empty, dropped as the official evaluator does"
                    )
            present = [c.ours for c in cells if c.ours is not None]
            mark = PARTIAL_MARK if 0 < len(present) < len(cells) else ""
            ours = sum(present) / len(present) if present else None
            cells.append(Cell(ours, None, None, mark=mark))
            rows[row_label] = cells
            system_ids[row_label], paper_rows[row_label] = sid, f"{group} {key}"
    columns = [*lengths, AVG]
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=columns, dtype=object)
    frame.index.name, frame.columns.name = "system", "n_docs"
    frame.attrs = {
        "column_labels": {**{n: labels.get(n, f"{n} docs") for n in lengths}, AVG: "AVG"},
        "system_ids": system_ids,
        "paper_rows": paper_rows,
        "notes": [
            "random: accuracy (%) of the main experiment's placement (the RULER-HQA evaluation); "
            "A% B%: the two key-information groups at those depths, accuracy minus random.",
            PROBE_AVG_NOTE,
        ],
        "partial_notes": [],
        "failure_notes": failures,
    }
    frame.attrs["claims"] = probe_claims(frame, probe, paper["probe"].get("claims", []))
    return frame


WORDING_NOTES = {  # agent.wording
    "official": "MemAgent's prompts: the official code's wording (agent.wording: official); the "
    "paper's Table 5 prints a shorter one (agent.wording: paper).",
    "paper": "MemAgent's prompts: the wording of the paper's Table 5 (agent.wording: paper); the "
    "official code's is longer (agent.wording: official).",
}


def _probe_cell(
    record: Mapping[str, Any] | None,
    random: Mapping[str, Any] | None,
    paper_cells: Mapping[Any, Any],
    n_docs: int,
    difference: bool,
) -> Cell:
    """One length of a probe row: the accuracy, or (`difference`) its difference from random,
    each with its 95 % interval (a difference: the two accuracies' standard errors combined, as
    if independent; the same questions make the true one narrower) and so a verdict against the
    paper's number (a difference judged as a graded score, its spread taken as ours)."""
    paper = lookup(paper_cells, (n_docs,))
    if record is None or (difference and random is None):
        return Cell(None, paper, None)
    cell = accuracy_cell(record, paper, "Table 4")
    if not difference:
        return cell
    base = accuracy_cell(random, None, "Table 4")
    ours = cell.ours - base.ours
    ci = None
    if cell.ci is not None and base.ci is not None:
        spread = Z95 * math.hypot(standard_error(cell.ci), standard_error(base.ci))
        ci = (ours - spread, ours + spread)
    return Cell(
        ours,
        paper,
        None if paper is None else ours - paper,
        n_items=cell.n_items,
        n_dropped=cell.n_dropped,
        mean_tokens=cell.mean_tokens,
        ci=ci,
        n_scored=min(cell.n_scored, base.n_scored),
        scale=DIFFERENCE,
    )


# A probe claim's statistic over a system's probe-minus-random cells: the smallest, judged cell
# by cell (memrl.report.claims.judge_lowest)
PROBE_STATISTICS = {"worst_difference": lambda x: x.min(axis=1)}


def probe_claims(
    table: pd.DataFrame, probe: Mapping[str, Any], claims: Sequence[Mapping[str, Any]]
) -> list[ClaimCheck]:
    """The paper's robustness claim on Table 4 (its `probe.claims`): per probe system, the
    `statistic` of its probe-minus-random cells over every placement and length (the worst),
    judged by `op` `value` cell by cell (an intersection-union test: `judge_lowest`), with the
    worst cell's 95 % interval; the same on the paper's printed cells."""
    checks = []
    for claim in claims:
        if claim["statistic"] not in PROBE_STATISTICS:
            raise ValueError(
                f"probe claim {claim['id']!r}: unknown statistic {claim['statistic']!r} "
                f"({', '.join(PROBE_STATISTICS)})"
            )
        statistic = PROBE_STATISTICS[claim["statistic"]]
        text = " ".join(str(claim["text"]).split())
        for sid in probe["systems"]:
            rows = [
                label
                for label, row_sid in table.attrs["system_ids"].items()
                if row_sid == sid and not label.endswith(": random")
            ]
            named = {
                f"{label} @ {n} docs": table.loc[label, n]
                for label in rows
                for n in table.columns
                if n != AVG
            }
            cells = list(named.values())
            ours = {name: (c.ours, c.ci) for name, c in named.items() if c.ours is not None}
            display = rows[0].rsplit(": ", 1)[0] if rows else sid
            if not ours:
                detail = "not checkable: this run has no probe difference of the system"
                checks.append(ClaimCheck(claim["id"], text, display, None, NOT_CHECKABLE, detail))
                continue
            parts = parts_of({name: (lone, [cell]) for name, cell in ours.items()})
            least = lowest(parts)
            worst, interval = least.value, least.interval
            detail = f"{claim['statistic']} {described(worst, interval, '{:+.1f}')} points"
            detail += f"{lowest_note(least, parts)} (claim: {claim['op']} {claim['value']})"
            printed = [c.paper for c in cells if c.paper is not None]
            if printed:
                paper = float(statistic(np.array([printed]))[0])
                detail += f"; on the paper's own numbers {paper:+.1f}"
            outcome = judge_lowest(claim["op"], float(claim["value"]), parts)
            checks.append(ClaimCheck(claim["id"], text, display, worst, outcome, detail, interval))
    return checks


NIAH_CONFIG_COLUMNS = {  # RULER task config key -> Table 7's header
    "type_haystack": "Haystack",
    "type_needle_k": "Key",
    "type_needle_v": "Value",
}


def load_ruler_sets(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Table 7's records: per RULER set file, its task, target length, sample count and the
    measured prompt tokens (mean, max)."""
    from memrl.data.io import iter_jsonl

    records = []
    for path in paths:
        first: dict[str, Any] = {}
        tokens = []  # streamed: a 512K-token set is hundreds of MB of text
        for row in iter_jsonl(Path(path), required=("task", "length", "num_tokens")):
            first = first or {"task": row["task"], "length": int(row["length"])}
            tokens.append(int(row["num_tokens"]))
        if not tokens:
            raise ValueError(f"{path}: no samples")
        records.append(
            {
                **first,
                "n_samples": len(tokens),
                "mean_tokens": sum(tokens) / len(tokens),
                "max_tokens": max(tokens),
                "path": str(path),
            }
        )
    return records


def _set_size(found: Mapping[str, Any]) -> str:
    return f"{found['n_samples']} x {found['mean_tokens']:,.0f} (max {found['max_tokens']:,})"


NIAH_COUNT_KEYS = ("num_needle_k", "num_needle_v", "num_needle_q")


def _differs(ours: Any, printed: Any) -> bool:
    """A configuration value the paper prints otherwise (None: it prints none)."""
    return printed is not None and str(printed) != str(ours)


def _config_cell(ours: Any, printed: Any) -> str:
    """A configuration value, with the paper's beside it where the two differ."""
    return f"{ours} (paper: {printed})" if _differs(ours, printed) else str(ours)


def build_niah_config_table(
    sets: Iterable[Mapping[str, Any]],
    niah_config: Mapping[str, Any],
    paper: Mapping[str, Any],
    length_labels: Mapping[int, str] | None = None,
) -> pd.DataFrame:
    """Table 7: per NIAH task that ran, its haystack, key and value types, needle counts and
    answer budget (RULER's task definition in the variant that ran), each compared with the
    paper's printed YAML (`paper["tasks"]`: a differing cell shows both), then per target length
    the samples and their measured prompt tokens (`load_ruler_sets`)."""
    from memrl.data.ruler import RULER_TASKS, task_config

    printed_tasks = paper["tasks"]
    differing = 0
    by_task: dict[str, dict[int, Mapping[str, Any]]] = {}
    for record in sets:
        by_task.setdefault(record["task"], {})[int(record["length"])] = record
    lengths = sorted({n for found in by_task.values() for n in found})
    labels = {int(n): str(label) for n, label in (length_labels or {}).items()}
    data: dict[str, list[str]] = {}
    for task in sorted(by_task, key=RULER_TASKS.index):
        spec = task_config(task, niah_config["variant"])
        printed = printed_tasks.get(task, {})
        compared = {  # header -> (ours, the paper's or None)
            header: (spec[key], printed.get(key)) for key, header in NIAH_CONFIG_COLUMNS.items()
        }
        compared["Keys / values / queries"] = (
            " / ".join(str(spec[key]) for key in NIAH_COUNT_KEYS),
            " / ".join(str(printed[key]) for key in NIAH_COUNT_KEYS) if printed else None,
        )
        differing += sum(_differs(*pair) for pair in compared.values())
        cells = {header: _config_cell(*pair) for header, pair in compared.items()}
        cells["Answer tokens"] = str(spec["tokens_to_generate"])
        for n in lengths:
            found = by_task[task].get(n)
            cells[labels.get(n, token_label(n))] = DASH if found is None else _set_size(found)
        data[task] = list(cells.values())
    headers = [*NIAH_CONFIG_COLUMNS.values(), "Keys / values / queries", "Answer tokens"]
    headers += [labels.get(n, token_label(n)) for n in lengths]
    frame = pd.DataFrame.from_dict(data, orient="index", columns=headers, dtype=object)
    frame.index.name, frame.columns.name = "task", "setting"
    frame.attrs = {
        "notes": [
            f"RULER variant {niah_config['variant']}, tokenizer {niah_config['tokenizer']}, "
            f"seed {niah_config['seed']}; a length column is a target length: samples x the "
            "measured mean prompt tokens (max) of the set that ran.",
            _niah_config_verdict(printed_tasks, list(data), differing),
        ]
    }
    return frame


def _niah_config_verdict(printed: Mapping[str, Any], tasks: Sequence[str], differing: int) -> str:
    """Table 7's note: how the configuration that ran compares with the paper's YAML."""
    compared = [task for task in tasks if task in printed]
    if not compared:
        return f"The paper's Table 7 lists {', '.join(printed)} only: nothing here to compare."
    verdict = (
        "every cell matches it"
        if not differing
        else f"{differing} cell(s) differ, each shown as 'ours (paper: printed)'"
    )
    return (
        f"Compared cell by cell with the paper's Table 7 (its RULER YAML, seed 000 Appendix A.4) "
        f"for {', '.join(compared)}: {verdict}. The paper prints no answer budget or lengths."
    )
