"""Beyond the papers: every chosen system on one's own datasets (`custom`), the score of each
dataset with its interval, their average, and the memory each system kept."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from memrepro.benchmarks import CUSTOM_BENCHMARK, NO_LENGTH
from memrepro.config import CUSTOM_TABLE
from memrepro.report.assemble import Average, Column, assemble
from memrepro.report.cells import DASH, MEM_LABEL
from memrepro.report.records import index_metrics
from memrepro.report.registry import OWN_DATA, PaperTable
from memrepro.report.rows import Systems, system_specs


def build_custom_table(records: Iterable[Mapping[str, Any]], systems: Systems) -> pd.DataFrame:
    """A row per system that ran the datasets (the records: this table's evaluations only), a
    column per dataset (its metric, %), their average and the mean memory (thousand tokens)."""
    specs = system_specs(systems)
    found = index_metrics(records, specs, lambda record: True)
    names = list(dict.fromkeys(key[1] for key in found))
    ran = {key[2] for key in found}
    selected = {sid: spec for sid, spec in specs.items() if sid in ran}
    columns = [
        Column(f"{name}.perf", name, CUSTOM_BENCHMARK, name, NO_LENGTH, "accuracy", None)
        for name in names
    ]
    columns += [
        Column(
            f"{name}.mem",
            name,
            CUSTOM_BENCHMARK,
            name,
            NO_LENGTH,
            "mean_memory_tokens",
            None,
            hidden=True,
            scale=1e-3,
        )
        for name in names
    ]
    averages = [
        Average("perf", "Avg.", tuple(f"{name}.perf" for name in names), None),
        Average("mem", f"{MEM_LABEL} (K)", tuple(f"{name}.mem" for name in names), None),
    ]
    frame = assemble(
        found,
        selected,
        dict.fromkeys(selected),
        {},  # no paper: one's own data
        columns,
        averages,
        column_name="dataset",
        table="Your datasets",
        notes=[
            "Each dataset's score (%) by its configured metric, over its questions (Mem-α's "
            "framework and MEM1: over its contexts, each the mean of its questions); Mem.: the "
            "mean memory they kept, in thousand tokens (the systems that answer from a memory "
            "written first).",
        ],
    )
    frame.attrs["legend"] = f"Cells: ours [our 95 % interval]. {DASH} = not run here."
    frame.attrs["paper"] = False  # no published numbers to set beside ours
    return frame


CUSTOM_TABLES = {
    CUSTOM_TABLE: PaperTable(lambda t: build_custom_table(t.records, t.systems), OWN_DATA)
}
