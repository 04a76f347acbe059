"""The registry of the papers' tables: their names (the Snakefile's targets), how each is
built from what it reads, and how it is written. MemAgent's tables live in `memagent_tables`,
Mem-α's in `memalpha_tables`, the cross-paper one in `suites`; the shared cell model in `cells`
and the writers in `render`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from memrl.config import (
    ABLATION_TABLES,
    CUSTOM_TABLE,
    KEYWORDS_TABLE,
    MEMALPHA_SCORE_TABLES,
    NIAH_CONFIG_TABLE,
    PATTERNS_TABLE,
    STATS_TABLES,
    SUITES_TABLE,
    TRACE_TABLE,
)
from memrl.report.cells import PaperSizes, attach_paper_n
from memrl.report.claims import CLAIMS_SUFFIX, write_claims
from memrl.report.custom import CUSTOM_TABLES, build_custom_table
from memrl.report.keywords import KEYWORDS_TABLES, build_keywords_table, load_keyword_rows
from memrl.report.memagent_probe import build_probe_table
from memrl.report.memagent_tables import (
    MEMAGENT_TABLES,
    build_longbench_qa_table,
    build_longbench_sum_table,
    build_memory_ablation_niah_table,
    build_memory_ablation_qa_table,
    build_niah_table,
    build_rag_longbench_table,
    build_rag_ruler_hqa_table,
    build_table1,
    niah_paper_rows,
)
from memrl.report.memalpha_tables import (
    MEMALPHA_TABLES,
    build_memalpha_stats_table,
    build_memalpha_table,
    build_memory_traces,
    load_memories,
    load_stats,
    memalpha_paper_sizes,
)
from memrl.report.memory_patterns import build_pattern_table
from memrl.report.niah_config import build_niah_config_table, load_ruler_sets
from memrl.report.records import load_metrics
from memrl.report.render import write_table, write_text_table
from memrl.report.rows import Systems
from memrl.report.suites import SUITES_TABLES, build_suites_table
from memrl.scoring.compare import DEFAULT_MARGIN

# name -> PaperTable
PAPER_TABLES = {
    **MEMAGENT_TABLES,
    **MEMALPHA_TABLES,
    **KEYWORDS_TABLES,
    **SUITES_TABLES,
    **CUSTOM_TABLES,
}


def paper_sizes(name: str, paper: Mapping[str, Any]) -> PaperSizes:
    """The items behind the paper's numbers of a table: MemAgent's per table
    (`sources.<key>.items`), Mem-α's per source (the instances Tables 6-8 print); None: the
    paper does not say."""
    if name in MEMALPHA_SCORE_TABLES or name in ABLATION_TABLES:
        return memalpha_paper_sizes(paper, name)
    items = paper.get("sources", {}).get(PAPER_TABLES[name].paper_key, {}).get("items")
    return None if items is None else int(items)


def build_paper_table(
    name: str,
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper: Mapping[str, Any],
    length_labels: Mapping[int, str] | None = None,
    niah_config: Mapping[str, Any] | None = None,
    probe: Mapping[str, Any] | None = None,
    margin: float = DEFAULT_MARGIN,
    instances: Mapping[str, list[Mapping[str, Any]]] | None = None,
) -> pd.DataFrame:
    """Build `name` (a PAPER_TABLES key) from metrics records and the whole paper file; its
    cells learn the paper's n (`paper_sizes`) and the margin ±δ of their verdicts.

    `length_labels` override the paper's (RULER-HQA n_docs labels for table1/table10, RULER
    token labels for niah and table7). Table 7 reads RULER set records (`load_ruler_sets`) and
    the RULER settings that built them (`niah_config`).
    """
    table = _build(name, records, systems, paper, length_labels, niah_config, probe, instances)
    attach_paper_n(table, paper_sizes(name, paper), margin, name)
    return table


def _build(
    name: str,
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper: Mapping[str, Any],
    length_labels: Mapping[int, str] | None,
    niah_config: Mapping[str, Any] | None,
    probe: Mapping[str, Any] | None,
    instances: Mapping[str, list[Mapping[str, Any]]] | None,
) -> pd.DataFrame:
    if name not in PAPER_TABLES:
        raise ValueError(f"unknown table {name!r}; expected one of {', '.join(PAPER_TABLES)}")
    if name == SUITES_TABLE:
        return build_suites_table(records, systems, paper, length_labels or {})
    if name == CUSTOM_TABLE:
        return build_custom_table(records, systems)
    if name == KEYWORDS_TABLE:
        return build_keywords_table(records)
    if name == NIAH_CONFIG_TABLE:
        if niah_config is None:
            raise ValueError("table7 needs the RULER settings it describes (niah_config)")
        return build_niah_config_table(records, niah_config, paper["niah_config"], length_labels)
    if name in STATS_TABLES:
        return build_memalpha_stats_table(records, paper, name)
    if name == TRACE_TABLE:
        return build_memory_traces(records, systems, paper, instances)
    if name in MEMALPHA_SCORE_TABLES or name in ABLATION_TABLES:
        return build_memalpha_table(records, systems, paper, name)
    if name in ("table1", "table10", PATTERNS_TABLE):
        labels = {int(k): v for k, v in paper.get("length_labels", {}).items()}
        labels.update({int(k): v for k, v in (length_labels or {}).items()})
        if name == PATTERNS_TABLE:
            return build_pattern_table(records, systems, labels)
        builder = build_table1 if name == "table1" else build_rag_ruler_hqa_table
        return builder(records, systems, paper[PAPER_TABLES[name].paper_key], labels)
    if name == "table4":
        if probe is None:
            raise ValueError("table4 needs the probe's systems and placements (probe)")
        return build_probe_table(records, systems, paper, probe, length_labels)
    if name == "table8":
        return build_memory_ablation_niah_table(records, systems, paper, length_labels)
    if name == "table9":
        return build_memory_ablation_qa_table(records, systems, paper)
    if name == "table_niah":
        return build_niah_table(
            records, systems, niah_paper_rows(paper), tuple(paper["niah"]["tasks"]), length_labels
        )
    builders = {
        "table2": build_longbench_sum_table,
        "table3": build_longbench_qa_table,
        "table11": build_rag_longbench_table,
    }
    return builders[name](records, systems, paper[PAPER_TABLES[name].paper_key])


def load_table_records(name: str, paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """What a table reads: dataset statistics, memorize records (Table 5) or metrics."""
    if name in STATS_TABLES:
        return load_stats(paths)
    if name == NIAH_CONFIG_TABLE:
        return load_ruler_sets(paths)
    if name == KEYWORDS_TABLE:
        return load_keyword_rows(paths)
    if name == TRACE_TABLE:  # its memories; the instance sets beside them: load_instance_texts
        return load_memories(p for p in map(Path, paths) if p.suffix == ".jsonl")
    return load_metrics(paths)


def write_paper_table(
    name: str, table: pd.DataFrame, out_prefix: str | Path, caption: str
) -> list[Path]:
    """CSV, Markdown and LaTeX of a built table (Table 5's cells are text, the others scores),
    and the paper claims it checks (`.claims.json`, empty for most)."""
    text_tables = (TRACE_TABLE, NIAH_CONFIG_TABLE, KEYWORDS_TABLE)
    writer = write_text_table if name in text_tables else write_table
    claims = write_claims(table.attrs.get("claims", []), Path(f"{out_prefix}{CLAIMS_SUFFIX}"))
    return [*writer(table, out_prefix, caption), claims]
