"""MemAgent's Table 7: the RULER NIAH settings we ran (haystack, key and value kinds, needle
counts) and the sets they built (samples, measured prompt tokens), beside the paper's, every
setting that differs named."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from memrepro.config import NIAH_CONFIG_TABLE
from memrepro.report.cells import DASH
from memrepro.report.memagent_tables import token_label
from memrepro.report.registry import MEMAGENT, PaperTable, TableInput

NIAH_CONFIG_COLUMNS = {  # RULER task config key -> Table 7's header
    "type_haystack": "Haystack",
    "type_needle_k": "Key",
    "type_needle_v": "Value",
}


def load_ruler_sets(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Table 7's records: per RULER set file, its task, target length, sample count and the
    measured prompt tokens (mean, max)."""
    from memrepro.data.io import iter_jsonl

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
    from memrepro.data.ruler import RULER_TASKS, task_config

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


def _niah_config_table(t: TableInput) -> pd.DataFrame:
    if t.niah_config is None:
        raise ValueError("table7 needs the RULER settings it describes (niah_config)")
    return build_niah_config_table(
        t.records, t.niah_config, t.paper["niah_config"], t.length_labels
    )


NIAH_CONFIG_TABLES = {
    NIAH_CONFIG_TABLE: PaperTable(
        _niah_config_table,
        MEMAGENT,
        ruler_lengths=True,
        load=load_ruler_sets,
        text=True,
    )
}
