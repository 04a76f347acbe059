"""Mem-α's tables (seed 004): scores and memory sizes (Tables 1-3), the (β, γ) ablation (4, 9),
the final memories side by side (5) and the dataset statistics (6-8).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from memrepro.benchmarks import EXAMPLE_BENCHMARK, EXAMPLE_TASK
from memrepro.config import (
    ABLATION_TABLES,
    MEMALPHA_SCORE_TABLES,
    STATS_TABLES,
    TRACE_TABLE,
    report_plan,
)
from memrepro.data.io import read_json
from memrepro.report.assemble import Average, Column, assemble, select
from memrepro.report.cells import AVG, DASH, MEM_LABEL, Cell
from memrepro.report.claims import table_claims
from memrepro.report.records import records_of
from memrepro.report.registry import MEMALPHA, PaperTable
from memrepro.report.rows import Systems, reads_instances, system_kind, system_specs
from memrepro.train import ROW_MEAN, TOKEN_MEAN

CONTAMINATED_MARK = "‡"
MEMALPHA_NOTES = (
    "Perf. = the source's metric x 100 (per question, mean per instance, then per source); "
    "Mem. = memory in thousands of the QA model's tokens. For Long-Context and RAG, Mem. is the "
    "context the model could read (the paper's convention), not what was retrieved.",
)


HEADLINE_TABLES = ("memalpha_table1", "memalpha_table2")  # their Mem-α row opens the report
CHECKPOINT_WORDS = {"last": "the last checkpoint", "best": "the best checkpoint by validation"}
LOSS_AGG_WORDS = {  # memalpha.training.loss_agg
    TOKEN_MEAN: "a token-mean loss",
    ROW_MEAN: "a per-action mean loss (Eq. 2)",
}
PAPER_RECIPE_NOTE = (
    "The paper's trained rows: 205 steps without a KL term, the best checkpoint by validation "
    "(its §4.1), the loss averaged per action (its Eq. 2); its official script trains 85 steps "
    "with a KL loss of 0.001 and averages over every token (verl's token-mean)."
)


def training_recipe_notes(selected: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Which recipe (memalpha.training.recipe) trained the table's Mem-α runs of ours, beside
    the paper's; none without such a run."""
    recipes = sorted(
        {
            (r["recipe"], r["steps"], r["kl_coef"], r["checkpoint"], r.get("loss_agg", TOKEN_MEAN))
            for spec in selected.values()
            if (r := spec.get("training")) is not None
        }
    )
    if not recipes:
        return []
    described = "; ".join(
        f"{name!r}: {steps} step{'' if steps == 1 else 's'}, "
        + (f"a KL loss of {kl:g}" if kl else "no KL term")
        + f", {CHECKPOINT_WORDS[checkpoint]}, {LOSS_AGG_WORDS[loss_agg]}"
        for name, steps, kl, checkpoint, loss_agg in recipes
    )
    plural = "s" if len(recipes) > 1 else ""
    return [f"Our Mem-α runs were trained with the recipe{plural} {described}.", PAPER_RECIPE_NOTE]


def memalpha_paper_rows(spec: Mapping[str, Any]) -> dict[str, dict[str, dict[str, float]]]:
    """{row: {source: {"perf": %, "mem": K tokens}, "avg": {...}}} from a table of
    config/paper/memalpha.yaml (scores printed 0-1, shown x100)."""
    columns = list(spec["columns"])
    rows: dict[str, dict[str, dict[str, float]]] = {}
    for name, row in spec["rows"].items():
        for key in ("perf", "mem"):
            if len(row[key]) != len(columns):
                raise ValueError(
                    f"paper row {name!r}: {len(row[key])} {key} values for {len(columns)} columns"
                )
        cells = {
            source: {"perf": 100 * float(perf), "mem": float(mem)}
            for source, perf, mem in zip(columns, row["perf"], row["mem"], strict=True)
        }
        cells[AVG] = {"perf": 100 * float(row["avg"]["perf"]), "mem": float(row["avg"]["mem"])}
        rows[str(name)] = cells
    return rows


def ablation_rows(
    selected: Mapping[str, Mapping[str, Any]], spec: Mapping[str, Any]
) -> dict[str, str | None]:
    """Each ablation system's row: the paper row printed for its run's (β, γ)."""
    by_weights = {
        (float(row["beta"]), float(row["gamma"])): str(name) for name, row in spec["rows"].items()
    }
    return {
        sid: by_weights.get(tuple(float(w) for w in sys["reward_weights"]))
        for sid, sys in selected.items()
    }


def _memalpha_rows(
    selected: Mapping[str, Mapping[str, Any]],
    paper: Mapping[str, Any],
    table_rows: Mapping[str, Any],
) -> tuple[dict[str, str | None], list[str]]:
    """Each system's row of this table: its paper_row, through the aliases that name
    MemAgent-paper rows here. A memalpha or MEM1 system's row must be a row of some Mem-α table
    (a typo otherwise); others (MemAgent-paper rows) may have none here."""
    aliases = paper.get("aliases", {})
    known = {
        str(row)
        for key in MEMALPHA_SCORE_TABLES
        for row in paper[report_plan(key).paper_key]["rows"]
    }
    rows: dict[str, str | None] = {}
    notes = []
    for sid, spec in selected.items():
        row = spec.get("paper_row")
        row = aliases.get(row, row)
        if row is not None and row not in known and reads_instances(sid, spec):
            raise ValueError(
                f"system {sid!r}: paper_row {row!r} is in no Mem-α table "
                f"(rows: {', '.join(sorted(known))})"
            )
        rows[sid] = row if row in table_rows else None
        if spec.get("paper_row") in aliases:
            notes.append(f"{spec['display']} is the paper's {row!r} row.")
    return rows, notes


STATS_PAPER_KEYS = ("table7", "table6", "table8")  # the printed instance counts, best first


def memalpha_paper_sizes(paper: Mapping[str, Any], name: str) -> dict[str, int]:
    """The instances behind each of the paper's Perf. numbers in a score table: the counts
    Tables 6-8 print for its split (Table 7's where it prints one, as the official code reads)."""
    spec = paper[report_plan(name).paper_key]
    sizes: dict[str, int] = {}
    for key in STATS_PAPER_KEYS:
        split = paper.get(key, {}).get("splits", {}).get(spec["benchmark"], {})
        for source, stats in split.get("stats", {}).items():
            sizes.setdefault(f"{source}.perf", stats[0])  # checked by attach_paper_n
    return {f"{s}.perf": sizes[f"{s}.perf"] for s in spec["columns"] if f"{s}.perf" in sizes}


def build_memalpha_table(
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper: Mapping[str, Any],
    name: str,
) -> pd.DataFrame:
    """Mem-α's Table 1 (validation), 2 (MemoryAgentBench), 3 (memalpha systems only) or the
    (β, γ) ablation 4 / 9 (systems of our Mem-α runs, a row per reward weights): Perf. and Mem.
    per data source, per-category (AR/TTL/LRU) and overall averages. Columns of sources whose
    test questions leaked into training are marked (‡). An ablation system without a paper row
    of its own is left out of Tables 1-3."""
    spec = paper[report_plan(name).paper_key]
    benchmark, columns = spec["benchmark"], list(spec["columns"])
    info = paper["sources"]
    ablation = name in ABLATION_TABLES

    def wanted(sid: str, sys: Mapping[str, Any]) -> bool:
        if ablation:
            return "reward_weights" in sys
        if name == "memalpha_table3" and system_kind(sid, sys) != "memalpha":
            return False
        return "reward_weights" not in sys or sys.get("paper_row") is not None

    selected, found = select(
        records,
        systems,
        wanted,
        records_of(benchmark, columns),
        benchmark,
    )
    paper_rows = memalpha_paper_rows(spec)
    if ablation:
        rows, row_notes = ablation_rows(selected, spec), []
    else:
        rows, row_notes = _memalpha_rows(selected, paper, paper_rows)
    contaminated = set(paper.get("contaminated", {}).get(benchmark, ()))
    labels = {
        s: info[s]["label"] + (CONTAMINATED_MARK if s in contaminated else "") for s in columns
    }
    table_columns = [
        Column(f"{s}.perf", labels[s], benchmark, s, 0, "accuracy", (s, "perf")) for s in columns
    ] + [
        Column(
            f"{s}.mem",
            f"{labels[s]} {MEM_LABEL}",
            benchmark,
            s,
            0,
            "mean_memory_tokens",
            (s, "mem"),
            scale=1e-3,
        )
        for s in columns
    ]
    categories = list(dict.fromkeys(info[source]["category"] for source in columns))
    averages = [
        Average(
            category,
            f"{category} avg.",
            tuple(f"{s}.perf" for s in columns if info[s]["category"] == category),
            None,
        )
        for category in categories
    ]
    averages += [
        Average(AVG, "Avg.", tuple(f"{s}.perf" for s in columns), (AVG, "perf")),
        Average(
            f"{AVG}.mem",
            f"Avg. {MEM_LABEL}",
            tuple(f"{s}.mem" for s in columns),
            (AVG, "mem"),
        ),
    ]
    notes = list(MEMALPHA_NOTES)
    if contaminated:
        names = ", ".join(info[s]["label"] for s in columns if s in contaminated)
        notes.append(
            f"{CONTAMINATED_MARK} {names}: Mem-α's TTL training rows reuse these test questions "
            "(the official training data holds the same 100 questions), so trained systems' "
            "scores there are inflated."
        )
    for row, printed in spec.get("printed_names", {}).items():
        notes.append(f"The paper prints the row {row!r} as {printed!r} in this table.")
    notes += training_recipe_notes(selected)
    table = assemble(
        found,
        selected,
        rows,
        paper_rows,
        table_columns,
        averages,
        column_name="column",
        table=spec["caption"].split(":")[0],
        notes=[*notes, *row_notes],
    )
    table.attrs["claims"] = table_claims(table, paper.get("claims", []), name)
    memory = [column for column in table.columns if str(column).endswith(".mem")]
    table.attrs["column_parts"] = {
        "Perf. (%)": [column for column in table.columns if column not in memory],
        f"{MEM_LABEL} (K tokens)": memory,
    }
    return table


STAT_FIELDS = {  # record key -> the paper's header
    "instances": "Ins.",
    "chunks_per_instance": "Ch/Ins",
    "tokens_per_chunk": "Tok/Ch",
    "questions_per_instance": "Q/Ins",
}


STATS_LEGEND = (
    "Cells: ours (paper value, ours − paper), measured on the downloaded split with the QA "
    f"model's tokenizer (Qwen3-32B at paper scale). {DASH} = not in the data / not in the paper."
)


TOTAL = "Total"


def load_stats(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """The dataset-stats records of several files (lists of {split, task, <STAT_FIELDS>})."""
    records = []
    for path in paths:
        data = read_json(Path(path))
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a list of dataset-stats records")
        for n, record in enumerate(data):
            if not isinstance(record, dict):
                raise ValueError(f"{path}: record {n} is not an object")
            missing = {"split", "task", *STAT_FIELDS} - set(record)
            if missing:
                raise ValueError(f"{path}: record {n} lacks {', '.join(sorted(missing))}")
            records.append(record)
    return records


def build_memalpha_stats_table(
    records: Iterable[Mapping[str, Any]], paper: Mapping[str, Any], name: str
) -> pd.DataFrame:
    """Mem-α's Table 6, 7 or 8: per data source, the statistics of each split the table shows
    (its paper spec's `splits`), ours beside the printed ones, and the instances in total (the
    paper's printed total where it gives one)."""
    spec = paper[report_plan(name).paper_key]
    splits = spec["splits"]
    found = {(r["split"], r["task"]): r for r in records if r["split"] in splits}
    printed_sources = [source for part in splits.values() for source in part["stats"]]
    sources = list(dict.fromkeys(printed_sources + [task for _, task in found]))
    keys = [(split, stat) for split in splits for stat in STAT_FIELDS]
    data: dict[str, list[Cell]] = {f"{split}.{stat}": [] for split, stat in keys}
    for source in sources:
        for split, stat in keys:
            record = found.get((split, source))
            printed = splits[split]["stats"].get(source)
            ours = None if record is None else float(record[stat])
            theirs = None if printed is None else float(printed[list(STAT_FIELDS).index(stat)])
            n = 0 if record is None else record["instances"]
            data[f"{split}.{stat}"].append(_stat_cell(ours, theirs, n, stat))
    for split, stat in keys:  # the total row: instances only
        ours = theirs = None
        if stat == "instances":
            counts = [r["instances"] for (s, _), r in found.items() if s == split]
            printed = splits[split]["stats"].values()
            ours = float(sum(counts)) if counts else None
            theirs = float(splits[split].get("total", sum(v[0] for v in printed)))
        data[f"{split}.{stat}"].append(_stat_cell(ours, theirs, int(ours or 0), stat))
    labels = [paper["sources"].get(s, {}).get("label", s) for s in sources] + [TOTAL]
    frame = pd.DataFrame(data, index=pd.Index(labels, name="source"), dtype=object)
    frame.columns.name = "column"
    ids = dict(zip(labels, [*sources, TOTAL], strict=True))
    frame.attrs = {
        "column_labels": {
            f"{split}.{stat}": f"{splits[split]['label']} {STAT_FIELDS[stat]}".strip()
            for split, stat in keys
        },
        "system_ids": ids,
        "paper_rows": ids,
        "notes": [*spec.get("notes", []), *_measured_notes(splits, {s for s, _ in found})],
        "legend": STATS_LEGEND,
    }
    return frame


def _measured_notes(splits: Mapping[str, Any], measured: set[str]) -> list[str]:
    """Where each split's columns come from: ours counted from the config's set beside the
    paper's, or the paper's alone."""
    return [
        f"{part['label'] or split} columns: ours counted from the config's memalpha.{split} set, "
        "beside the paper's."
        if split in measured
        else f"{part['label'] or split} columns: the paper's numbers alone (this run has no "
        f"memalpha.{split} set)."
        for split, part in splits.items()
    ]


COUNTS = ("instances",)  # shown as whole numbers


def _stat_cell(ours: float | None, paper: float | None, n_items: int, stat: str) -> Cell:
    delta = None if ours is None or paper is None else ours - paper
    return Cell(ours, paper, delta, n_items=n_items, decimals=0 if stat in COUNTS else 1)


MEMORY_STORES = ("core", "semantic", "episodic")
EMPTY = "∅"


def load_memories(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Memorize jobs' records (JSONL, one per instance, each naming its system and source),
    each tagged with its benchmark (the folder its job wrote it in: eval/<benchmark>/...)."""
    from memrepro.data.io import read_jsonl

    records = []
    for path in map(Path, paths):
        for n, record in enumerate(read_jsonl(path)):
            missing = {"system", "task", "index", "memory", "failed"} - set(record)
            if missing:
                raise ValueError(f"{path}: line {n + 1} lacks {', '.join(sorted(missing))}")
            records.append({"benchmark": path.parent.parent.name, **record})
    return records


def build_memory_traces(
    records: Iterable[Mapping[str, Any]], systems: Systems, paper: Mapping[str, Any]
) -> pd.DataFrame:
    """Mem-α's Table 5: each policy's final core, semantic and episodic memory of the paper's
    example, which they memorised alone (its instance found by its text wherever it lives:
    `memalpha.example`, a record {"found": ...} among the memories), else of the configured
    fallback (the n-th memorised instance of a source, noted): a column per system whose
    paper_row is one of the table's columns, in the paper's order; every item, one per line.
    The paper's verdicts become notes."""
    spec = paper["table5"]
    found = next((r["found"] for r in records if "found" in r), None)
    wanted = {row: n for n, row in enumerate(spec["columns"])}
    columns = sorted(
        (wanted[system["paper_row"]], sid, system)
        for sid, system in system_specs(systems).items()
        if system.get("paper_row") in wanted
    )
    shown = {sid for _, sid, _ in columns}
    memorised = [r for r in records if "found" not in r and r["system"] in shown]
    example = None if found is None else (EXAMPLE_BENCHMARK, EXAMPLE_TASK, 0)
    data: dict[str, list[str]] = {}
    for _, sid, system in columns:
        record = _instance_of(example, spec, [r for r in memorised if r["system"] == sid], sid)
        if record is None:
            continue
        data[system["display"]] = (
            ["(memorisation failed)"] * 3
            if record["failed"]
            else [_store_text(record["memory"], store) for store in MEMORY_STORES]
        )
    frame = pd.DataFrame(data, index=pd.Index([s.capitalize() for s in MEMORY_STORES]))
    frame.index.name, frame.columns.name = "memory", "system"
    if found is None:
        instance = f"{spec['benchmark']} / {spec['source']} #{spec['instance']}"
        notes = [
            f"This run looks for no example (memalpha.example); shown instead: {spec['source']} "
            f"#{spec['instance']} of {spec['benchmark']}."
        ]
    else:
        instance = f"{found['split']} / {found['source']} row {found['row']}: the paper's example"
        phrases = ", ".join(found["phrases"])
        notes = [
            f"The paper's example: {found['what']}, found by its text ({phrases}) in the "
            f"{found['split']} split, row {found['row']} ({found['source']}), and memorised "
            "alone by each policy."
        ]
    frame.attrs = {
        "notes": [
            *notes,
            *(f"The paper on {row}: {verdict}" for row, verdict in spec["paper"].items()),
        ],
        "instance": instance,
    }
    return frame


def _instance_of(
    example: tuple[str, str, int] | None,
    spec: Mapping[str, Any],
    records: Sequence[Mapping[str, Any]],
    sid: str,
) -> Mapping[str, Any] | None:
    """A system's record of the example, else of the fallback (the n-th memorised instance of
    `source`); None where the system did not memorise the example."""
    if example is not None:
        found = [r for r in records if (r.get("benchmark"), r["task"], r["index"]) == example]
        return found[0] if found else None
    of_source = sorted(
        (r for r in records if r["task"] == spec["source"]), key=lambda r: r["index"]
    )
    if not of_source:
        return None
    if spec["instance"] >= len(of_source):
        raise ValueError(
            f"{sid}: no instance {spec['instance']} of {spec['source']} "
            f"({len(of_source)} memorised)"
        )
    return of_source[spec["instance"]]


def _store_text(memory: Mapping[str, Any], store: str) -> str:
    if store == "core":
        return memory.get("core") or EMPTY
    items = [content for item in memory.get(store, []) for content in item.values()]
    return "\n".join(f"- {content}" for content in items) or EMPTY


def _scores(name: str) -> PaperTable:
    """A score table (Tables 1-3) or an ablation (4, 9): per source, the instances behind the
    paper's numbers are its n. Tables 1 and 2 (validation, MemoryAgentBench) are the paper's
    headline: Mem-α's averages open the reproduction report."""
    return PaperTable(
        lambda t: build_memalpha_table(t.records, t.systems, t.paper, name),
        MEMALPHA,
        sizes=lambda paper: memalpha_paper_sizes(paper, name),
        headline=("Mem-α",) if name in HEADLINE_TABLES else (),
    )


def _stats(name: str) -> PaperTable:
    """A dataset-statistics table (Tables 6-8), read from the stats jobs' files."""
    return PaperTable(
        lambda t: build_memalpha_stats_table(t.records, t.paper, name),
        MEMALPHA,
        load=load_stats,
    )


def _memory_records(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Table 5's records: its memories, and where its example job found the paper's example
    (its JSON, as one record {"found": ...})."""
    paths = [Path(p) for p in paths]
    found = [{"found": read_json(p)} for p in paths if p.suffix == ".json"]
    return [*load_memories(p for p in paths if p.suffix == ".jsonl"), *found]


# Mem-α's tables by name (their plans, with the key of their numbers: memrepro.config.REPORTS)
MEMALPHA_TABLES = {
    **{name: _scores(name) for name in (*MEMALPHA_SCORE_TABLES, *ABLATION_TABLES)},
    TRACE_TABLE: PaperTable(
        lambda t: build_memory_traces(t.records, t.systems, t.paper),
        MEMALPHA,
        load=_memory_records,
        text=True,
    ),
    **{name: _stats(name) for name in STATS_TABLES},
}
