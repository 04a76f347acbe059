"""The registry of the papers' tables: each is declared (`PaperTable`: its paper key, caption,
builder, loader, kind) in its own module, and gathered here by name (the Snakefile's targets).
MemAgent's tables live in `memagent_tables` (Table 4 in `memagent_probe`, Table 7 in
`niah_config`, the failure patterns in `memory_patterns`), Mem-α's in `memalpha_tables` (its
keyword golds in `keywords`), the cross-paper one in `suites`, one's own data in `custom`; the
shared cell model in `cells` and the writers in `render`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from memrepro.config import TABLES, report_of_stem, report_plan
from memrepro.report.cells import attach_paper_n
from memrepro.report.claims import CLAIMS_SUFFIX, write_claims
from memrepro.report.controls import CONTROLS_TABLES
from memrepro.report.custom import CUSTOM_TABLES
from memrepro.report.keywords import KEYWORDS_TABLES
from memrepro.report.memagent_probe import PROBE_TABLES
from memrepro.report.memagent_tables import MEMAGENT_TABLES
from memrepro.report.memalpha_data import DATA_TABLES
from memrepro.report.memalpha_tables import MEMALPHA_TABLES
from memrepro.report.memory_patterns import PATTERNS_TABLES
from memrepro.report.niah_config import NIAH_CONFIG_TABLES
from memrepro.report.prose_claims import PAPER_CLAIMS_TABLES
from memrepro.report.protocols import PROTOCOLS_TABLES
from memrepro.report.recipes import RECIPE_TABLES
from memrepro.report.registry import PaperTable, TableInput, gathered
from memrepro.report.render import write_table, write_text_table
from memrepro.report.rows import Systems
from memrepro.report.scorers import SCORERS_TABLES
from memrepro.report.seeds import SEEDS_TABLES
from memrepro.report.suites import SUITES_TABLES
from memrepro.scoring.compare import DEFAULT_MARGIN

# name -> PaperTable, each declared in its own module
PAPER_TABLES = gathered(
    "table",
    TABLES,
    MEMAGENT_TABLES,
    PROBE_TABLES,
    NIAH_CONFIG_TABLES,
    RECIPE_TABLES,
    PATTERNS_TABLES,
    MEMALPHA_TABLES,
    KEYWORDS_TABLES,
    DATA_TABLES,
    SUITES_TABLES,
    CONTROLS_TABLES,
    PROTOCOLS_TABLES,
    SCORERS_TABLES,
    SEEDS_TABLES,
    PAPER_CLAIMS_TABLES,
    CUSTOM_TABLES,
)


def paper_table(name: str) -> PaperTable:
    """A table by its name or its files' stem (a named custom table: the custom table)."""
    if report_of_stem(name) not in PAPER_TABLES:
        raise ValueError(f"unknown table {name!r}; expected one of {', '.join(PAPER_TABLES)}")
    return PAPER_TABLES[report_of_stem(name)]


def build_paper_table(
    name: str,
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper: Mapping[str, Any],
    length_labels: Mapping[int, str] | None = None,
    niah_config: Mapping[str, Any] | None = None,
    probe: Mapping[str, Any] | None = None,
    margin: float = DEFAULT_MARGIN,
    settings: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Build `name` (a PAPER_TABLES key) from its records and the whole paper file; its cells
    learn the paper's n (`PaperTable.paper_sizes`, at its plan's paper key) and the margin ±δ
    of their verdicts.

    `length_labels` override the paper's (RULER-HQA n_docs labels for table1/table10, RULER
    token labels for niah and table7). Table 7 reads RULER set records (`load_ruler_sets`) and
    the RULER settings that built them (`niah_config`).
    """
    spec = paper_table(name)
    inputs = TableInput(
        list(records), systems, paper, length_labels, niah_config, probe, settings or {}
    )
    table = spec.build(inputs)
    attach_paper_n(table, spec.paper_sizes(paper, report_plan(name).paper_key), margin, name)
    return table


def load_table_records(name: str, paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """What a table reads (metrics, dataset statistics, memorize records, ...): its own loader."""
    return paper_table(name).load(paths)


def write_paper_table(
    name: str, table: pd.DataFrame, out_prefix: str | Path, caption: str
) -> list[Path]:
    """CSV, Markdown and LaTeX of a built table (text cells or scores, as it declares), and the
    paper claims it checks (`.claims.json`, empty for most)."""
    writer = write_text_table if paper_table(name).text else write_table
    claims = write_claims(table.attrs.get("claims", []), Path(f"{out_prefix}{CLAIMS_SUFFIX}"))
    return [*writer(table, out_prefix, caption), claims]
