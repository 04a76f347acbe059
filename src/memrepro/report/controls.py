"""The `controls` table: what memory adds. Each memory system beside each control (a system that
needs no memory: closed-book, the question alone; oracle, the gold evidence alone; full context in
the agent's own answer prompt) of the same benchmark and length, on the questions both answered:
the difference to the control with a paired 95 % interval (the shared items resampled together;
Mem-α's instances, whose score is the mean over their questions, as the items), its verdict in the
control's words, and, against closed-book, a flag where the control already reaches the memory
system's score: those questions were answerable without the context."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from memrepro.config import CONTROLS_TABLE
from memrepro.report.cells import DASH, text_frame
from memrepro.report.records import evaluation_files, prediction_lines
from memrepro.report.registry import BOTH_PAPERS, PaperTable, TableInput
from memrepro.report.rows import answering_model, system_kind, system_specs
from memrepro.scoring.intervals import bootstrap, paired_fixed_instances_interval
from memrepro.scoring.rescore import unit_scores
from memrepro.systems import system_kind as registered_kind
from memrepro.systems.base import Control

MIN_ITEMS = 10  # fewer shared items: shown, never judged (the rule of every verdict's cell)


def load_evaluations(paths: Iterable[str | Path]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(its metrics' first record, its prediction lines by "task#index") of each evaluation
    among the inputs: each evaluation's metrics and predictions files, side by side (the same
    prefix); every prediction line has a score."""
    found = []
    for metrics, predictions in evaluation_files(paths):
        tasks = json.loads(metrics.read_text())  # a record per task, of one evaluation
        if not isinstance(tasks, list) or not tasks:
            raise ValueError(f"{metrics}: not a list of metrics records")
        found.append((tasks[0], prediction_lines(predictions)))
    return found


def load_item_scores(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """One record per evaluation: its system, benchmark and length, the score of each item of
    its predictions by (task, index), and each item's questions' scores (`questions`)."""
    return [
        {key: record[key] for key in ("system", "benchmark", "length")}
        | {
            "items": {key: float(line["score"]) for key, line in lines.items()},
            "questions": {key: unit_scores(line) for key, line in lines.items()},
        }
        for record, lines in load_evaluations(paths)
    ]


Units = Mapping[str, "float | Sequence[float]"]  # item key -> its score, or its questions'


def items_of_task(items: Mapping[str, Any], task: str) -> dict[str, Any]:
    """The items of one task (keys `task#index`, as load_item_scores gives them)."""
    return {key: score for key, score in items.items() if key.rpartition("#")[0] == task}


ITEMS, FIXED_INSTANCES = "items", "fixed instances"  # how a paired difference is resampled


def paired_gain(ours: Units, control: Units) -> dict[str, Any]:
    """The gain over the control on the items both scored: the means (in %), the mean of the
    per-item differences with its 95 % interval, the questions paired (`n`) and the items.

    An item given as its questions' scores (a Mem-α instance) is paired question by question:
    the gain is the mean of the instances' mean differences, its interval the fixed-instances
    bootstrap (the questions resampled within each instance, the released instances held
    fixed). Where every item has one question, the items are resampled (percentile bootstrap)."""
    shared = sorted(set(ours) & set(control))
    if not shared:
        return {"n": 0}
    mine, theirs = ([_units(side[key]) for key in shared] for side in (ours, control))
    groups = [_differences(a, b) for a, b in zip(mine, theirs, strict=True)]
    fixed = any(len(group) > 1 for group in groups)
    return {
        "n": sum(len(group) for group in groups),
        "instances": len(shared),
        "design": FIXED_INSTANCES if fixed else ITEMS,
        "ours": _percent_mean([_mean(a) for a in mine]),
        "control": _percent_mean([_mean(b) for b in theirs]),
        "gain": _percent_mean([_mean(group) for group in groups]),
        "interval": (
            paired_fixed_instances_interval(groups)
            if fixed
            else bootstrap([group[0] for group in groups])
        ),
    }


def _units(value: float | Sequence[float]) -> list[float]:
    return [float(value)] if isinstance(value, int | float) else [float(v) for v in value]


def _differences(ours: Sequence[float], control: Sequence[float]) -> list[float]:
    """The per-question differences of one item; its mean difference where the two sides hold
    different question counts (then it is paired as one unit)."""
    if len(ours) == len(control):
        return [a - b for a, b in zip(ours, control, strict=True)]
    return [_mean(ours) - _mean(control)]


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def n_text(gain: Mapping[str, Any]) -> str:
    """What a paired difference rests on: `n 40`, or `n 100 questions in 1 instance`."""
    if gain.get("design") != FIXED_INSTANCES:
        return f"n {gain['n']}"
    return f"n {gain['n']} questions in {gain['instances']} instance(s)"


def _percent_mean(values: Sequence[float]) -> float:
    return 100 * sum(values) / len(values)


def gain_verdict(gain: Mapping[str, Any], above: str, below: str) -> str:
    """What a paired difference shows: `above` or `below` 0, no difference shown, or too few
    shared items (under MIN_ITEMS, or an interval of no width: every item differs alike)."""
    low, high = gain["interval"]
    if gain["n"] < MIN_ITEMS or low == high:
        return "too few items"
    if low > 0:
        return above
    return below if high < 0 else "no difference shown"


def cell_text(gain: Mapping[str, Any], control: Control) -> str:
    """`+g [low, high] (ours o, <control> c; n items)`, with what it shows in the control's words:
    ours higher, the control higher, no difference shown, or too few shared items (under
    MIN_ITEMS, or an interval of no width: every item differs alike); and the control's flag
    where it, above 0, reaches ours."""
    if gain["n"] == 0:
        return f"{DASH} (no shared items)"
    low, high = gain["interval"]
    text = (
        f"{gain['gain']:+.1f} [{low:+.1f}, {high:+.1f}] (ours {gain['ours']:.1f}, "
        f"{control.label} {gain['control']:.1f}; {n_text(gain)})"
    )
    said = gain_verdict(gain, control.above, control.below)
    # the control right where the memory system is no better (both at 0: nothing was answered)
    reached = control.reached and gain["control"] >= gain["ours"] and gain["control"] > 0
    flag = f"; {control.reached}" if reached else ""
    return f"{text}: {said}{flag}"


def column(record: Mapping[str, Any]) -> str:
    return f"{record['benchmark']}@{record['length']}" if record["length"] else record["benchmark"]


def task_columns(
    record: Mapping[str, Any], items: Mapping[str, Any]
) -> list[tuple[str, str | None]]:
    """The columns of an evaluation's cells, each with its task: the benchmark and length alone
    where it holds one task; else a column per task (`longbench: hotpotqa`), never pooled."""
    tasks = sorted({key.rpartition("#")[0] for key in items})
    if len(tasks) <= 1:
        return [(column(record), None)]
    return [(f"{column(record)}: {task}", task) for task in tasks]


def of_task(items: Mapping[str, Any], task: str | None) -> dict[str, Any]:
    """`items` of one task (None: all of them)."""
    return dict(items) if task is None else items_of_task(items, task)


def at_every_length(
    records: Sequence[Mapping[str, Any]], specs: Mapping[str, Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """The records, each one-length evaluation (a closed-book on RULER-HQA, whose lengths ask
    the same questions: `SystemKind.one_length`) standing at every length of its benchmark
    among them."""
    lengths: dict[str, set[int]] = {}
    for record in records:
        lengths.setdefault(record["benchmark"], set()).add(record["length"])
    found: list[Mapping[str, Any]] = []
    for record in records:
        kind = registered_kind(system_kind(record["system"], specs[record["system"]]))
        if kind.one_length(record["benchmark"]):
            found += [{**record, "length": n} for n in sorted(lengths[record["benchmark"]])]
        else:
            found.append(record)
    return found


def same_model(memory: Mapping[str, Any], control: Mapping[str, Any], benchmark: str) -> bool:
    """Whether a control's answers come from the model that answers a memory system's cells on
    `benchmark` (rows.answering_model): what memory adds is read against that model alone."""
    return answering_model(memory, benchmark) == answering_model(control, benchmark)


def build_controls_table(records: Sequence[Mapping[str, Any]], systems: Any) -> pd.DataFrame:
    """A row per (memory system, control of its answering model), a column per benchmark,
    length and task where both ran or the control stands (at_every_length, task_columns);
    each cell the paired difference (cell_text)."""
    specs = system_specs(systems)
    records = at_every_length(records, specs)
    kinds = {
        r["system"]: registered_kind(system_kind(r["system"], specs[r["system"]])) for r in records
    }
    controls = [r for r in records if kinds[r["system"]].control]
    memories = [r for r in records if kinds[r["system"]].memory]
    rows: dict[str, dict[str, str]] = {}
    for control in controls:
        for memory in memories:
            if (memory["benchmark"], memory["length"]) != (control["benchmark"], control["length"]):
                continue
            if not same_model(
                specs[memory["system"]], specs[control["system"]], memory["benchmark"]
            ):
                continue
            label = f"{specs[memory['system']]['display']} vs {specs[control['system']]['display']}"
            for name, task in task_columns(memory, memory["questions"]):
                ours, theirs = (of_task(r["questions"], task) for r in (memory, control))
                gain = paired_gain(ours, theirs)
                rows.setdefault(label, {})[name] = cell_text(gain, kinds[control["system"]].control)
    notes = [
        "Each memory system beside the controls of the model that answers its questions (the "
        "QA model on Mem-α's framework). A closed-book on RULER-HQA runs once: its questions are "
        "the same at every length.",
        "Difference = ours − the control on the items both answered, with the 95 % "
        "percentile-bootstrap interval of the per-item differences (paired: the items resampled "
        "together). On Mem-α's instances the questions are paired inside each instance: the "
        "instances are held fixed, their questions resampled (n counts the questions).",
        "Closed-book: the question alone (what the model knows); oracle: only the gold evidence "
        "(what the evidence gives, with nothing to find); full context: the whole context in the "
        "memory agent's own answer prompt, middle-truncated (the memory loop against reading at "
        "once, the prompt held fixed).",
        *_reached_notes(rows.values(), [kinds[r["system"]].control for r in controls]),
    ]
    return text_frame(rows, "Memory system vs control", notes)


def _reached_notes(rows: Iterable[Mapping[str, str]], controls: Iterable[Control]) -> list[str]:
    """A count of the cells that carry each control's flag."""
    flags = {c.reached: c.label for c in controls if c.reached}
    cells = [cell for row in rows for cell in row.values()]
    return [
        f"{sum(flag in cell for cell in cells)} cell(s) where {label} reaches the memory "
        f"system's score: {flag}."
        for flag, label in flags.items()
    ]


def _build(table: TableInput) -> pd.DataFrame:
    return build_controls_table(table.records, table.systems)


CONTROLS_TABLES = {
    CONTROLS_TABLE: PaperTable(_build, BOTH_PAPERS, load=load_item_scores, text=True)
}
