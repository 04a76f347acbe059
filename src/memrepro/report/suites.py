"""Beyond the papers: every system of both papers on both suites (RULER-HQA and
MemoryAgentBench).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

import pandas as pd

from memrepro.benchmarks import RULER_HQA_TASK
from memrepro.config import SUITES_TABLE
from memrepro.report.assemble import Average, Column, assemble, hqa_label, length_columns
from memrepro.report.cells import BENCHMARK, DASH, MEM_LABEL
from memrepro.report.records import index_metrics, records_of
from memrepro.report.registry import BOTH_PAPERS, PaperTable
from memrepro.report.rows import Systems, is_rag_unit, system_kind, system_specs

MAB = "mab"


def build_suites_table(
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper: Mapping[str, Any],
    length_labels: Mapping[int, str],
) -> pd.DataFrame:
    """Every system of both papers that ran either suite: RULER-HQA accuracy at each length
    (MemAgent's suite) and the MemoryAgentBench average score and memory over Mem-α Table 2's
    sources (`paper`: Mem-α's numbers). Ours only: each paper's own tables hold its numbers."""
    mab_sources = tuple(paper["table2"]["columns"])
    specs = system_specs(systems)
    selected = {
        sid: spec
        for sid, spec in specs.items()
        if {BENCHMARK, MAB} & set(spec.get("benchmarks", (BENCHMARK, MAB)))
        and (system_kind(sid, spec) != "rag" or is_rag_unit(sid, spec, doc=True))
    }
    found = index_metrics(
        records,
        specs,
        lambda r: records_of(BENCHMARK, (RULER_HQA_TASK,))(r) or records_of(MAB, mab_sources)(r),
    )
    found = {key: record for key, record in found.items() if key[2] in selected}
    columns = length_columns(found, BENCHMARK, RULER_HQA_TASK, hqa_label(length_labels))
    columns = [replace(c, label=f"RULER-HQA {c.label}", paper=None) for c in columns]
    for metric, suffix, scale in (("accuracy", "perf", 1.0), ("mean_memory_tokens", "mem", 1e-3)):
        columns += [
            Column(f"{MAB}.{s}.{suffix}", s, MAB, s, 0, metric, None, hidden=True, scale=scale)
            for s in mab_sources
        ]
    averages = [
        Average(f"{MAB}.{suffix}", label, tuple(f"{MAB}.{s}.{suffix}" for s in mab_sources), None)
        for suffix, label in (("perf", "MemoryAgentBench Avg."), ("mem", f"MAB {MEM_LABEL} (K)"))
    ]
    frame = assemble(
        found,
        selected,
        dict.fromkeys(selected),
        {},  # ours only
        columns,
        averages,
        column_name="column",
        table="Both suites",
        notes=[
            "RULER-HQA: accuracy (%) at each length. MemoryAgentBench: the mean score (%) over "
            "its nine sources and the mean memory (thousand QA-model tokens; for long context "
            "and RAG, the context read).",
        ],
    )
    frame.attrs["legend"] = (
        f"Cells: ours [our 95 % interval]; each paper's numbers are in its own tables. {DASH} = "
        "not run here."
    )
    frame.attrs["paper"] = False  # shown without a paper column (render.format_cell)
    return frame


# The cross-paper table
SUITES_TABLES = {
    SUITES_TABLE: PaperTable(
        lambda t: build_suites_table(t.records, t.systems, t.paper, t.length_labels or {}),
        BOTH_PAPERS,
    ),
}
