"""Mem-α's Figure 4 rebuilt: per data source and released split, how the keyword golds that a
configured model extracts with the paper's prompt compare with the released ones (the
`keywords` config block; the rows are `memrepro keywords`' files)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from statistics import fmean
from typing import Any

import pandas as pd

from memrepro.config import KEYWORDS_TABLE
from memrepro.data.keywords import MAX_KEYWORD_WORDS, keywords_problem
from memrepro.report.cells import DASH, MACHINERY_ONLY
from memrepro.report.registry import MEMALPHA, PaperTable

ROW_FIELDS = (
    "set",
    "model",
    "reproduces",
    "prompt",
    "split",
    "index",
    "released",
    "original",
    "rebuilt",
)
SPLIT_LABELS = {"train": "train", "memalpha": "validation", "mab": "MemoryAgentBench"}
COLUMNS = {
    "released": "Released instances",
    "matched": "Matched to an original",
    "same": "Same keywords",
    "jaccard": "Mean Jaccard",
    "recall": "Released keywords rebuilt",
    "sizes": "Keywords: released / rebuilt (mean)",
    "refused": "Refused replies",
}
MODEL_BANNER = (
    f"{MACHINERY_ONLY}the keywords were extracted by a model that cannot reproduce the paper "
    "(random weights, or marked `reproduces: false`): the counts test the pipeline, not the prompt."
)
PROMPT_WORDS = {
    "official": "the official scripts' prompts (Figure 4 for BookSum, its answers variant for "
    "MemoryAgentBench)",
    "paper": "the paper's Figure 4 for every source",
}


def load_keyword_rows(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Every rebuilt instance of the files (JSONL rows of ROW_FIELDS), checked: a rebuilt list
    that no accepted reply gives (memrepro.data.keywords.keywords_problem; e.g. an empty one, which
    would read as no agreement) and that is not marked `refused` stops the table naming the file
    and row."""
    from memrepro.data.io import read_jsonl

    rows = [(path, row) for path in paths for row in read_jsonl(path, ROW_FIELDS)]
    for path, row in rows:
        if _accepted(row) and (why := keywords_problem(row["rebuilt"])):
            raise ValueError(
                f"{path}: {row['split']} row {row['index']}, rebuilt: refused ({why}); "
                "written before replies were checked: delete the file to rebuild it"
            )
    return [row for _, row in rows]


def _accepted(row: Mapping[str, Any]) -> bool:
    """A rebuilt row whose reply was the keyword list the prompt asks for (files written before
    replies were checked have no `refused`)."""
    return row["rebuilt"] is not None and not row.get("refused")


def build_keywords_table(records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """A row per (data source, released split); text cells (counts and shares)."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for row in records:
        label = f"{row['set']} ({SPLIT_LABELS.get(row['split'], row['split'])})"
        groups.setdefault(label, []).append(row)
    frame = pd.DataFrame(
        {label: _cells(rows) for label, rows in groups.items()}, index=list(COLUMNS), dtype=object
    ).T.rename(columns=COLUMNS)
    frame.index.name, frame.columns.name = "source", "column"
    models = sorted({row["model"] for row in records})
    prompts = sorted({row["prompt"] for row in records})
    if not all(row["reproduces"] for row in records):
        frame.attrs["banner"] = MODEL_BANNER
    frame.attrs["notes"] = [
        f"Rebuilt by {', '.join(models)} with {'; '.join(PROMPT_WORDS[p] for p in prompts)}. "
        "The released golds were extracted by GPT-4.1 at temperature 0.1 (the official "
        "scripts): another model measures how much the golds depend on the extractor.",
        "A released instance is matched to the original whose text its first chunk begins; "
        "unmatched ones are not rebuilt. Same: the same keywords, ignoring case and order; "
        "Jaccard: shared / either; released keywords rebuilt: shared / released.",
        "Refused replies: those that are not the comma-separated keyword list the prompt asks "
        f"for (no keywords; an item over {MAX_KEYWORD_WORDS} words, ending a sentence or spanning "
        "lines). A model that can reproduce the paper has none: its refused replies fail the "
        "rebuild, which asks for them again. A machinery model's are kept, counted here and left "
        "out of the other columns.",
    ]
    return frame


def _cells(rows: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    matched = sum(row["rebuilt"] is not None for row in rows)
    rebuilt = [row for row in rows if _accepted(row)]
    counts = {
        "released": str(len(rows)),
        "matched": f"{matched} of {len(rows)}",
        "refused": f"{matched - len(rebuilt)} of {matched}" if matched else DASH,
    }
    if not rebuilt:
        return {**dict.fromkeys(COLUMNS, DASH), **counts}
    n = len(rebuilt)
    same = sum(row["same"] for row in rebuilt)
    return {
        **counts,
        "same": f"{same} of {n} ({100 * same / n:.0f} %)",
        "jaccard": f"{fmean(row['jaccard'] for row in rebuilt):.2f}",
        "recall": f"{100 * fmean(row['recall'] for row in rebuilt):.0f} %",
        "sizes": f"{fmean(len(row['released']) for row in rebuilt):.1f} / "
        f"{fmean(len(row['rebuilt']) for row in rebuilt):.1f}",
    }


KEYWORDS_TABLES = {
    KEYWORDS_TABLE: PaperTable(
        lambda t: build_keywords_table(t.records),
        MEMALPHA,
        load=load_keyword_rows,
        text=True,
    )
}
