"""Mem-α's training sets built again from their sources (Appendix A.1), beside the paper's
Table 7 and the released sets: per split and data source the instances, chunks, tokens and
questions, the instances matched to released ones by text, the questions MemoryAgentBench also
asks, and the training contexts' lengths against the paper's "≤ 30K, < 20K on average". Its one
record is `memrepro memalpha-compare`'s file (memrepro.data.memalpha_build.compare)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from memrepro.config import BUILD_TABLE
from memrepro.report.cells import DASH, MACHINERY_ONLY
from memrepro.report.registry import MEMALPHA, PaperTable, TableInput

SPLITS = {"train": "train", "memalpha": "validation"}
FIELDS = ("instances", "chunks_per_instance", "tokens_per_chunk", "questions_per_instance")
COLUMNS = {
    "instances": "Instances: rebuilt / paper / released",
    "chunks_per_instance": "Chunks per instance",
    "tokens_per_chunk": "Tokens per chunk",
    "questions_per_instance": "Questions per instance",
    "matched": "Matched to a released one (exactly)",
}
FORMATS = {
    "instances": "{:.0f}",
    "chunks_per_instance": "{:.1f}",
    "tokens_per_chunk": "{:.0f}",
    "questions_per_instance": "{:.1f}",
}
BANNER = (
    f"{MACHINERY_ONLY}the tokens were counted, and the filter asked, with a model that cannot "
    "reproduce the paper: the counts test the pipeline, not Appendix A.1."
)


def load_comparison(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """The comparison file's one record, its four parts checked present."""
    from memrepro.data.io import read_json

    records = []
    for path in paths:
        record = read_json(path)
        missing = [k for k in ("stats", "matches", "overlap", "lengths") if k not in record]
        if missing:
            raise ValueError(
                f"{path}: no {', '.join(missing)} (not memrepro memalpha-compare's file)"
            )
        records.append(record)
    return records


def build_data_table(t: TableInput) -> pd.DataFrame:
    """A row per (split, data source) of the rebuilt or released sets; text cells."""
    record = t.records[0]
    stats = {(r["split"], r["side"], r["task"]): r for r in record["stats"]}
    matched = {(r["split"], r["source"]): r for r in record["matches"]}
    paper = t.paper.get("table7", {}).get("splits", {})
    rows = {}
    for split, label in SPLITS.items():
        printed_order = list(paper.get(split, {}).get("stats", {}))
        found = [task for (s, _, task) in stats if s == split]
        for source in dict.fromkeys([*(t for t in printed_order if t in found), *found]):
            printed = paper.get(split, {}).get("stats", {}).get(source)
            cells = {
                key: _triple(
                    key,
                    stats.get((split, "rebuilt", source)),
                    printed,
                    n,
                    stats.get((split, "released", source)),
                )
                for n, key in enumerate(FIELDS)
            }
            cells["matched"] = _matched(matched.get((split, source)))
            rows[f"{source} ({label})"] = cells
    frame = pd.DataFrame(rows, index=list(COLUMNS), dtype=object).T.rename(columns=COLUMNS)
    frame.index.name, frame.columns.name = "source", "column"
    if not t.settings.get("reproduces", True):
        frame.attrs["banner"] = BANNER
    frame.attrs["notes"] = notes(record, t.settings)
    return frame


def _triple(
    key: str,
    ours: Mapping[str, Any] | None,
    printed: Sequence[float] | None,
    position: int,
    released: Mapping[str, Any] | None,
) -> str:
    shown = FORMATS[key]
    parts = [
        shown.format(ours[key]) if ours else DASH,
        shown.format(printed[position]) if printed else DASH,
        shown.format(released[key]) if released else DASH,
    ]
    return " / ".join(parts)


def _matched(row: Mapping[str, Any] | None) -> str:
    if not row:
        return DASH
    return f"{row['matched']} of {row['rebuilt']} ({row['exact']})"


def notes(record: Mapping[str, Any], settings: Mapping[str, Any]) -> list[str]:
    """The recipe, the overlap with MemoryAgentBench and the length claim, in sentences."""
    found = [
        f"Built by the {settings.get('recipe', 'official')} recipe "
        f"(memalpha.build.recipe); NLU's and TREC-C's questions: {settings.get('ttl_questions')}.",
        "Each cell: rebuilt / the paper's Table 7 / the released set. A rebuilt instance matches "
        "the released one sharing most of its content lines (at least half); exactly: the same "
        "chunks and questions.",
    ]
    for row in record["overlap"]:
        found.append(
            f"{row['source']} ({row['side']}, {SPLITS.get(row['split'], row['split'])}): "
            f"{row['shared']} of its {row['questions']} questions are also asked by "
            f"MemoryAgentBench's {row['benchmark']}."
        )
    for row in record["lengths"]:
        found.append(_length_note(row))
    return found


def _length_note(row: Mapping[str, Any]) -> str:
    """The paper's "≤ 30K, < 20K on average" judged on one training set's contexts."""
    if not row["instances"]:
        return (
            f"Training contexts ({row['side']}): none, so the paper's ≤ 30K, < 20K is not judged."
        )
    verdict = "holds" if row["holds"] else "does not hold"
    return (
        f"Training contexts ({row['side']}): the longest {row['max']:,} tokens, "
        f"{row['mean']:,.0f} on average, {row['over_max']} over 30K: the paper's "
        f'"≤ 30K, < 20K on average" {verdict}.'
    )


DATA_TABLES = {BUILD_TABLE: PaperTable(build_data_table, MEMALPHA, load=load_comparison, text=True)}
