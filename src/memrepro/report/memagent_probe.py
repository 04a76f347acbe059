"""MemAgent's Table 4, the context-distribution probe (§3.3.3): per probe system its RULER-HQA
accuracy with the random placement, then per placement of the two key-information groups its
accuracy minus the random one, each with an interval and a verdict beside the paper's number,
and the paper's robustness claim checked on those differences."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from memrepro.benchmarks import PROBE_BENCHMARK, RULER_HQA_TASK
from memrepro.config import PROBE_TABLE
from memrepro.report.assemble import accuracy_cell
from memrepro.report.cells import AVG, PARTIAL_MARK, Cell
from memrepro.report.claims import (
    NOT_CHECKABLE,
    ClaimCheck,
    described,
    judge_lowest,
    lone,
    lowest,
    lowest_note,
    parts_of,
)
from memrepro.report.records import load_metrics_with_items, n_dropped
from memrepro.report.registry import MEMAGENT, PaperTable, TableInput
from memrepro.report.rows import (
    Systems,
    lookup,
    system_specs,
)
from memrepro.scoring.compare import DIFFERENCE
from memrepro.scoring.intervals import paired_difference_interval

PROBE_AVG_NOTE = (
    "The paper's column headed AVG is its 3,200-document (448K) column: both random rows equal "
    "Table 1's 448K cells (14B 79.69, 7B 76.56) and every difference lies on the k/128 grid; it "
    "is compared as such. AVG here: the mean of our columns, which the paper does not print."
)


def build_probe_table(
    records: Iterable[Mapping[str, Any]],
    systems: Systems,
    paper: Mapping[str, Any],
    probe: Mapping[str, Any],
    length_labels: Mapping[int, str] | None = None,
) -> pd.DataFrame:
    """Table 4: per probe system (`probe.systems`: id -> the paper's row group), its RULER-HQA
    accuracy with the random placement, then per placement (`probe.placements`, [A, B] percent)
    its probe accuracy minus the random one at the same length, as the paper prints them."""
    from memrepro.config import probe_task

    specs = system_specs(systems)
    found = {
        (r["benchmark"], r["task"], r["system"], int(r["length"])): r
        for r in records
        if r["system"] in probe["systems"]
    }
    lengths = sorted({key[3] for key in found if key[0] == PROBE_BENCHMARK})
    labels = {int(n): str(label) for n, label in (length_labels or {}).items()}
    printed = paper["probe"]["rows"]
    rows: dict[str, list[Cell]] = {}
    system_ids, paper_rows, failures = {}, {}, []
    for sid, group in probe["systems"].items():
        display = specs[sid]["display"] if sid in specs else sid
        random = {n: found.get(("ruler_hqa", RULER_HQA_TASK, sid, n)) for n in lengths}
        settings = [("random", None, "random")]
        settings += [(f"{a}% {b}%", probe_task((a, b)), f"{a}-{b}") for a, b in probe["placements"]]
        for label, task, key in settings:
            row_label = f"{display}: {label}"
            paper_cells = printed.get(group, {}).get(key, {})
            cells = []
            for n in lengths:
                base = random[n]
                record = base if task is None else found.get((PROBE_BENCHMARK, task, sid, n))
                cells.append(_probe_cell(record, base, paper_cells, n, task is not None))
                if record is not None and n_dropped(record):
                    failures.append(
                        f"{row_label} @ {labels.get(n, n)}: {n_dropped(record)} of "
                        f"{record['n_items']} outputs empty, dropped as the official evaluator does"
                    )
            present = [c.ours for c in cells if c.ours is not None]
            mark = PARTIAL_MARK if 0 < len(present) < len(cells) else ""
            ours = sum(present) / len(present) if present else None
            cells.append(Cell(ours, None, None, mark=mark))
            rows[row_label] = cells
            system_ids[row_label], paper_rows[row_label] = sid, f"{group} {key}"
    columns = [*lengths, AVG]
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=columns, dtype=object)
    frame.index.name, frame.columns.name = "system", "n_docs"
    frame.attrs = {
        "column_labels": {**{n: labels.get(n, f"{n} docs") for n in lengths}, AVG: "AVG"},
        "system_ids": system_ids,
        "paper_rows": paper_rows,
        "notes": [
            "random: accuracy (%) of the main experiment's placement (the RULER-HQA evaluation); "
            "A% B%: the two key-information groups at those depths, accuracy minus random over "
            "the questions both answered, each probe row holding its random row's documents "
            "reordered; its interval is paired (Newcombe's method for paired proportions).",
            PROBE_AVG_NOTE,
        ],
        "partial_notes": [],
        "failure_notes": failures,
    }
    frame.attrs["claims"] = probe_claims(frame, probe, paper["probe"].get("claims", []))
    return frame


def _probe_cell(
    record: Mapping[str, Any] | None,
    random: Mapping[str, Any] | None,
    paper_cells: Mapping[Any, Any],
    n_docs: int,
    difference: bool,
) -> Cell:
    """One length of a probe row: the accuracy, or (`difference`) its difference from random on
    the questions both answered (a probe set holds each random row's documents reordered:
    `memrepro.data.hqa_probe`), with the paired 95 % interval (`paired_difference_interval`) and so
    a verdict against the paper's number (a difference judged as a graded score, its spread
    taken as ours)."""
    paper = lookup(paper_cells, (n_docs,))
    if record is None or (difference and random is None):
        return Cell(None, paper, None)
    cell = accuracy_cell(record, paper, "Table 4")
    if not difference:
        return cell
    pairs = paired_items(record, random)
    if not pairs:
        return Cell(None, paper, None, n_items=cell.n_items)
    ours = 100 * sum(x - y for x, y in pairs) / len(pairs)
    return Cell(
        ours,
        paper,
        None if paper is None else ours - paper,
        n_items=cell.n_items,
        n_dropped=cell.n_dropped,
        mean_tokens=cell.mean_tokens,
        ci=paired_difference_interval(pairs),
        n_scored=len(pairs),
        scale=DIFFERENCE,
    )


def paired_items(record: Mapping[str, Any], random: Mapping[str, Any]) -> list[tuple[float, float]]:
    """(probe score, random score) of each question both evaluations scored, by index (an item
    the official evaluator dropped on either side is left out)."""
    probe, base = record["items"], random["items"]
    shared = sorted(i for i in probe.keys() & base.keys() if None not in (probe[i], base[i]))
    return [(probe[i], base[i]) for i in shared]


# A probe claim's statistic over a system's probe-minus-random cells: the smallest, judged cell
# by cell (memrepro.report.claims.judge_lowest)
PROBE_STATISTICS = {"worst_difference": lambda x: x.min(axis=1)}


def probe_claims(
    table: pd.DataFrame, probe: Mapping[str, Any], claims: Sequence[Mapping[str, Any]]
) -> list[ClaimCheck]:
    """The paper's robustness claim on Table 4 (its `probe.claims`): per probe system, the
    `statistic` of its probe-minus-random cells over every placement and length (the worst),
    judged by `op` `value` cell by cell (an intersection-union test: `judge_lowest`), with the
    worst cell's 95 % interval; the same on the paper's printed cells."""
    checks = []
    for claim in claims:
        if claim["statistic"] not in PROBE_STATISTICS:
            raise ValueError(
                f"probe claim {claim['id']!r}: unknown statistic {claim['statistic']!r} "
                f"({', '.join(PROBE_STATISTICS)})"
            )
        statistic = PROBE_STATISTICS[claim["statistic"]]
        text = " ".join(str(claim["text"]).split())
        for sid in probe["systems"]:
            rows = [
                label
                for label, row_sid in table.attrs["system_ids"].items()
                if row_sid == sid and not label.endswith(": random")
            ]
            named = {
                f"{label} @ {n} docs": table.loc[label, n]
                for label in rows
                for n in table.columns
                if n != AVG
            }
            cells = list(named.values())
            ours = {name: (c.ours, c.ci) for name, c in named.items() if c.ours is not None}
            display = rows[0].rsplit(": ", 1)[0] if rows else sid
            if not ours:
                detail = "not checkable: this run has no probe difference of the system"
                checks.append(ClaimCheck(claim["id"], text, display, None, NOT_CHECKABLE, detail))
                continue
            parts = parts_of({name: (lone, [cell]) for name, cell in ours.items()})
            least = lowest(parts)
            worst, interval = least.value, least.interval
            detail = f"{claim['statistic']} {described(worst, interval, '{:+.1f}')} points"
            detail += f"{lowest_note(least, parts)} (claim: {claim['op']} {claim['value']})"
            printed = [c.paper for c in cells if c.paper is not None]
            if printed:
                paper = float(statistic(np.array([printed]))[0])
                detail += f"; on the paper's own numbers {paper:+.1f}"
            outcome = judge_lowest(claim["op"], float(claim["value"]), parts)
            checks.append(ClaimCheck(claim["id"], text, display, worst, outcome, detail, interval))
    return checks


def _probe_table(t: TableInput) -> pd.DataFrame:
    if t.probe is None:
        raise ValueError("table4 needs the probe's systems and placements (probe)")
    return build_probe_table(t.records, t.systems, t.paper, t.probe, t.length_labels)


PROBE_TABLES = {PROBE_TABLE: PaperTable(_probe_table, MEMAGENT, load=load_metrics_with_items)}
