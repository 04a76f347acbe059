"""The `scorers` table: does the metric or the judge explain a gap? Each finished evaluation scored
again by another scorer (memrepro.scoring.rescore: a gold anywhere in the reply, another of Mem-α's
scoring protocols, a second judge) beside its benchmark's own: both scores, the paired difference
with its 95 % interval, and how many answers the two score differently; and, in the notes, each LLM
judge's leniency on a fixed probe of right and vague wrong answers (memrepro.scoring.leniency)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from memrepro.config import SCORERS_TABLE
from memrepro.report.cells import DASH, text_frame
from memrepro.report.controls import (
    column,
    gain_verdict,
    load_evaluations,
    n_text,
    of_task,
    paired_gain,
    task_columns,
)
from memrepro.report.records import METRICS, PREDICTIONS
from memrepro.report.registry import BOTH_PAPERS, PaperTable, TableInput
from memrepro.report.rows import system_specs
from memrepro.scoring.rescore import SCORER_KINDS, disagreements, unit_scores

OWN = "the benchmark's"  # the scorer of a plain evaluation


def load_scored(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """One record per predictions file among the inputs (an evaluation's, or a rescoring's: its
    metrics file names the scorer), its lines by (task, index); and each judge probe's file."""
    paths = [Path(p) for p in paths]
    keys = ("system", "benchmark", "length")
    records: list[dict[str, Any]] = [
        {k: record[k] for k in keys} | {"scorer": record.get("scorer", OWN), "lines": lines}
        for record, lines in load_evaluations(paths)
    ]
    probes = [p for p in paths if not p.name.endswith((METRICS, PREDICTIONS))]
    return records + [{"probe": json.loads(p.read_text())} for p in probes]


def cell_text(rescored: Mapping[str, Any], own: Mapping[str, Any]) -> str:
    """`r vs o: ±d [low, high]; k of n answers scored differently: <verdict>` over the items
    both scored (a Mem-α instance's questions paired inside it: controls.paired_gain; its
    questions are the answers counted)."""
    ours = {key: unit_scores(line) for key, line in rescored["lines"].items()}
    theirs = {key: unit_scores(line) for key, line in own["lines"].items()}
    gain = paired_gain(ours, theirs)
    if gain["n"] == 0:
        return f"{DASH} (no shared items)"
    differ, answers = disagreements(rescored["lines"], own["lines"])
    low, high = gain["interval"]
    said = gain_verdict(gain, "rescored higher", "rescored lower") if differ else "the same scores"
    return (
        f"{gain['ours']:.1f} vs {gain['control']:.1f}: {gain['gain']:+.1f} [{low:+.1f}, "
        f"{high:+.1f}]; {differ} of {answers} answers scored differently ({n_text(gain)}): {said}"
    )


def build_scorers_table(
    records: Sequence[Mapping[str, Any]], systems: Any, scorers: Mapping[str, Any]
) -> pd.DataFrame:
    """A row per (scorer, system), a column per benchmark, length and task it rescored
    (controls.task_columns: one per task, never pooled)."""
    specs = system_specs(systems)
    scored = [r for r in records if "probe" not in r]
    own = {(r["system"], r["benchmark"], r["length"]): r for r in scored if r["scorer"] == OWN}
    rows: dict[str, dict[str, str]] = {}
    for r in scored:
        if r["scorer"] == OWN:
            continue
        evaluation = own.get((r["system"], r["benchmark"], r["length"]))
        if evaluation is None:
            raise ValueError(f"{r['scorer']}: no evaluation of {r['system']} on {column(r)}")
        label = f"{r['scorer']}: {specs[r['system']]['display']}"
        for name, task in task_columns(r, r["lines"]):
            rescored, scored_own = (
                {**e, "lines": of_task(e["lines"], task)} for e in (r, evaluation)
            )
            rows.setdefault(label, {})[name] = cell_text(rescored, scored_own)
    notes = [
        "Each cell: the rescored score vs the benchmark's own on the items both scored, the "
        "difference with the 95 % percentile-bootstrap interval of the per-item differences "
        "(paired; on Mem-α's instances, question by question inside each fixed instance), and "
        "how many answers (a Mem-α instance's questions) the two scorers score differently.",
        *(_scorer_note(name, spec) for name, spec in scorers.items()),
        *(_probe_note(r["probe"]) for r in records if "probe" in r),
    ]
    return text_frame(rows, "Scorer: system", notes)


def _scorer_note(name: str, spec: Mapping[str, Any]) -> str:
    about = SCORER_KINDS[spec["kind"]].about
    detail = spec.get("protocol") or spec.get("model")
    return f"{name}: {about}" + (f" ({detail})." if detail else ".")


def _probe_note(probe: Mapping[str, Any]) -> str:
    """A judge's leniency: how many vague wrong answers and exact right ones it accepts."""

    def share(kind: str) -> str:
        counts = probe[kind]
        low, high = counts["ci95"]
        return (
            f"{counts['accepted']} of {counts['n']} {kind} answers "
            f"({100 * counts['accepted'] / counts['n']:.0f} %, 95 % CI {low:.0f}–{high:.0f})"
        )

    return (
        f"Judge {probe['judge']}, leniency probe (vague-but-topical wrong answers, exact right "
        f"ones): accepts {share('wrong')}, and {share('right')}."
    )


def _build(table: TableInput) -> pd.DataFrame:
    return build_scorers_table(table.records, table.systems, table.settings["scorers"])


SCORERS_TABLES = {SCORERS_TABLE: PaperTable(_build, BOTH_PAPERS, load=load_scored, text=True)}
