"""MemAgent's failure patterns (its Appendix F) counted over whole runs: per memory agent and
RULER-HQA length, the share of samples whose gold evidence the memory kept, overwrote or never
took in, or that no chunk held, and how often a wrong answer was already in the memory before
the first gold chunk (primacy). The evaluation job counts them from every prediction's memory
trace (memrepro.scoring.evidence) into its metrics record (`memory_patterns`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from memrepro.config import PATTERNS_TABLE
from memrepro.report.assemble import hqa_label
from memrepro.report.cells import BENCHMARK, Cell
from memrepro.report.records import records_of
from memrepro.report.registry import MEMAGENT, PaperTable
from memrepro.report.rows import Systems, system_specs
from memrepro.scoring.evidence import PATTERNS
from memrepro.scoring.intervals import wilson

COLUMNS = (*PATTERNS, "primacy")
on_hqa = records_of(BENCHMARK)  # whole RULER-HQA runs
LABELS = {
    "kept": "kept",
    "overwritten": "overwritten (F.1)",
    "never_entered": "never entered (F.2)",
    "unlocated": "not located",
    "primacy": "primacy (F.3)",
}
LEGEND = (
    "Cells: % of the samples with a memory trace [95 % Wilson interval]. Gold evidence = a chunk "
    "holding a gold answer (case-insensitive). kept: in the final memory; overwritten: in the "
    "memory after a gold chunk, dropped later; never entered: a gold chunk was read, the memory "
    "never held the answer; not located: no chunk read holds it (cut by a chunk boundary, "
    "paraphrased, or the sample failed first). primacy: a wrong answer the memory held before "
    "the first gold chunk and still held at the end. The paper shows these patterns by example "
    "(its Appendix F) and prints no rates."
)


def build_pattern_table(
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    length_labels: Mapping[int, str] | None = None,
) -> pd.DataFrame:
    """Rows: each system and RULER-HQA length whose metrics record counts memory patterns."""
    specs = system_specs(systems)
    label = hqa_label(length_labels or {})
    found = sorted(
        (
            (list(specs).index(r["system"]), int(r["length"]), r)
            for r in records
            if on_hqa(r) and r.get("memory_patterns") and r["system"] in specs
        ),
        key=lambda item: item[:2],
    )
    if not found:
        read = sorted({str(r.get("path", r["system"])) for r in records})
        raise ValueError(
            f"no RULER-HQA metrics record counts memory patterns (read: {', '.join(read)}); "
            "metrics written before MemAgent predictions recorded their gold chunks count none: "
            "run those evaluations again (snakemake --forcerun evaluate merge_eval ...)"
        )
    rows, ids = {}, {}
    for _, length, record in found:
        display = f"{specs[record['system']]['display']} @ {label(length, [])}"
        rows[display] = [_cell(record["memory_patterns"], column) for column in COLUMNS]
        ids[display] = record["system"]
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=list(COLUMNS), dtype=object)
    frame.index.name, frame.columns.name = "system", "pattern"
    frame.attrs = {
        "column_labels": dict(LABELS),
        "system_ids": ids,
        "paper_rows": dict.fromkeys(ids),
        "notes": [],
        "legend": LEGEND,
        "paper": False,
    }
    return frame


def _cell(counts: Mapping[str, int], column: str) -> Cell:
    n = sum(counts[pattern] for pattern in PATTERNS)
    count = counts[column]
    return Cell(ours=100 * count / n, paper=None, delta=None, n_items=n, ci=wilson(count, n))


PATTERNS_TABLES = {
    PATTERNS_TABLE: PaperTable(
        lambda t: build_pattern_table(t.records, t.systems, t.merged_labels()),
        MEMAGENT,
    )
}
