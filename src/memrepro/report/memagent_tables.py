"""MemAgent's tables (seed 000), rebuilt from our metrics files beside the published numbers.

- Table 1 (`build_table1`): RULER-HQA accuracy per number of documents.
- Table 2 (`build_longbench_sum_table`): LongBench-SUM ROUGE-1/2/L recall and their mean.
- Table 3 (`build_longbench_qa_table`): LongBench-QA (the paper's per-item binary score, our
  `accuracy` = sub_em), with LongBench's own qa_f1 beside each cell.
- Table 4: the context-distribution probe (memrepro.report.memagent_probe).
- Table 7: the NIAH synthetic configuration that ran (memrepro.report.niah_config).
- Tables 8, 9 (`build_memory_ablation_*`): memory and chunk sizes.
- Table 10 (`build_rag_ruler_hqa_table`): RAG over whole documents vs MemAgent on RULER-HQA.
- Table 11 (`build_rag_longbench_table`): RAG over fixed-size chunks vs MemAgent on LongBench-QA.
- NIAH (`build_niah_table`): mean of niah_single_1/2/3 per length, against Table 8's MemAgent rows.

Table 11's printed average divides by 6, not 5: its note says so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from memrepro.benchmarks import RULER_HQA_TASK
from memrepro.benchmarks.longbench import TASK_LABELS
from memrepro.config import (
    NIAH_FIGURE_TASKS,
)
from memrepro.report.assemble import (
    Average,
    Column,
    assemble,
    format_tokens,
    hqa_label,
    length_columns,
    select,
)
from memrepro.report.cells import AVG, BENCHMARK, PaperSizes
from memrepro.report.records import records_of
from memrepro.report.registry import MEMAGENT, PaperTable, TableInput
from memrepro.report.rival_claims import rival_claims
from memrepro.report.rows import (
    Systems,
    is_rag_unit,
    reads_instances,
    resolve_paper_rows,
    system_kind,
    system_specs,
)
from memrepro.scoring.longbench import LONGBENCH_QA, LONGBENCH_SUM

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


WORDING_NOTES = {  # agent.wording
    "official": "MemAgent's prompts: the official code's wording (agent.wording: official); the "
    "paper's Table 5 prints a shorter one (agent.wording: paper).",
    "paper": "MemAgent's prompts: the wording of the paper's Table 5 (agent.wording: paper); the "
    "official code's is longer (agent.wording: official).",
}


def _ruler_hqa(
    build: Callable[..., pd.DataFrame], key: str
) -> Callable[[TableInput], pd.DataFrame]:
    """A RULER-HQA table: its paper rows, and the paper's labels of document counts with the
    job's over them."""
    return lambda t: build(t.records, t.systems, t.paper[key], t.merged_labels())


def _by_key(build: Callable[..., pd.DataFrame], key: str) -> Callable[[TableInput], pd.DataFrame]:
    """A table of the paper's rows under `key` alone."""
    return lambda t: build(t.records, t.systems, t.paper[key])


def _ablation_items(part: str) -> Callable[[Mapping[str, Any]], PaperSizes]:
    """The items behind each column of one part of Tables 8 and 9 (`niah`: a task at a length,
    `longbench_qa`: a dataset), from `sources.memory_ablation.items`; None where not stated."""

    def sizes(paper: Mapping[str, Any]) -> PaperSizes:
        items = paper.get("sources", {}).get("memory_ablation", {}).get("items", {})
        return items.get(part) if isinstance(items, Mapping) else items

    return sizes


def _checking_rivals(name: str, table: PaperTable) -> PaperTable:
    """The table with the paper file's `rival_claims` that name it checked on its cells."""

    def build(t: TableInput) -> pd.DataFrame:
        frame = table.build(t)
        claims = rival_claims(frame, t.systems, t.paper.get("rival_claims", []), name)
        frame.attrs["claims"] = [*frame.attrs.get("claims", []), *claims]
        return frame

    return dataclasses.replace(table, build=build)


# MemAgent's tables by name (the Snakefile's targets): their key in config/paper/memagent.yaml
# (Table 4: memrepro.report.memagent_probe; Table 7: niah_config; failure patterns: memory_patterns)
_MEMAGENT_TABLES = {
    "table1": PaperTable(
        _ruler_hqa(build_table1, "ruler_hqa"),
        MEMAGENT,
        headline=("RL-MEMAGENT-14B", "RL-MEMAGENT-7B"),
    ),
    "table2": PaperTable(
        _by_key(build_longbench_sum_table, "longbench_sum"),
        MEMAGENT,
    ),
    "table3": PaperTable(
        _by_key(build_longbench_qa_table, "longbench_qa"),
        MEMAGENT,
    ),
    "table8": PaperTable(
        lambda t: build_memory_ablation_niah_table(t.records, t.systems, t.paper, t.length_labels),
        MEMAGENT,
        ruler_lengths=True,
        sizes=_ablation_items("niah"),
    ),
    "table9": PaperTable(
        lambda t: build_memory_ablation_qa_table(t.records, t.systems, t.paper),
        MEMAGENT,
        sizes=_ablation_items("longbench_qa"),
    ),
    "table10": PaperTable(
        _ruler_hqa(build_rag_ruler_hqa_table, "rag_ruler_hqa"),
        MEMAGENT,
    ),
    "table11": PaperTable(
        _by_key(build_rag_longbench_table, "rag_longbench_qa"),
        MEMAGENT,
    ),
    "table_niah": PaperTable(
        lambda t: build_niah_table(
            t.records,
            t.systems,
            niah_paper_rows(t.paper),
            tuple(t.paper["niah"]["tasks"]),
            t.length_labels,
        ),
        MEMAGENT,
        ruler_lengths=True,
        sizes=_ablation_items("niah"),
    ),
}
MEMAGENT_TABLES = {name: _checking_rivals(name, table) for name, table in _MEMAGENT_TABLES.items()}
