"""What memory adds, inside a paper table's cells: each memory system's score beside the control
whose level says whether the context was needed at all (a control kind with a `reached` flag:
closed-book, the question alone). Ours − the control on the items of the cell's benchmark, task
and length that both answered, with the paired 95 % interval of the controls table
(memrepro.report.controls), and the control's flag where it already reaches ours. The controls table
sets every memory system beside every control; a paper table's cell carries this one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pandas as pd

from memrepro.report.cells import ControlGain
from memrepro.report.controls import Units, at_every_length, items_of_task, paired_gain, same_model
from memrepro.report.rows import Systems, system_kind, system_specs
from memrepro.systems import system_kind as registered_kind
from memrepro.systems.base import Control

Evaluations = Sequence[Mapping[str, Any]]  # memrepro.report.controls.load_item_scores


def attach_control_gains(table: pd.DataFrame, evaluations: Evaluations, systems: Systems) -> None:
    """Give every memory system's score cell (one with a `source`) its gain over a flagging
    control of its answering model at its benchmark and length (never another model's), and the
    table a note. `evaluations`: the memory systems' and the controls' item scores; `systems`:
    every one of them, by id."""
    specs = system_specs(systems)
    evaluations = at_every_length(evaluations, specs)
    kinds = {sid: registered_kind(system_kind(sid, spec)) for sid, spec in specs.items()}
    items = {(e["system"], e["benchmark"], e["length"]): e["questions"] for e in evaluations}
    controls = [e for e in evaluations if _flags(kinds[e["system"]].control)]
    for column in table.columns:
        for display in table.index:
            cell = table.at[display, column]
            if cell.source is None or not kinds[cell.source[2]].memory:
                continue
            benchmark, task, sid, length = cell.source
            ours = items.get((sid, benchmark, length))
            at = [
                c
                for c in controls
                if (c["benchmark"], c["length"]) == (benchmark, length)
                and same_model(specs[sid], specs[c["system"]], benchmark)
            ]
            if ours is None or not at:
                continue
            control = at[0]
            gain = _gain(
                items_of_task(ours, task),
                items_of_task(control["questions"], task),
                kinds[control["system"]].control,
                specs[control["system"]]["display"],
            )
            if gain is not None:
                table.at[display, column] = replace(cell, gain=gain)
    if any(cell.gain for _, row in table.iterrows() for cell in row):
        table.attrs.setdefault("notes", []).append(gains_note(table))


def _flags(control: Control | None) -> bool:
    return control is not None and control.reached is not None


def _gain(ours: Units, control: Units, said: Control, system: str) -> ControlGain | None:
    """The paired gain (None without shared items), flagged where the control, above 0, reaches
    ours."""
    gain = paired_gain(ours, control)
    if gain["n"] == 0:
        return None
    reached = gain["control"] >= gain["ours"] and gain["control"] > 0
    low, high = gain["interval"]
    flag = said.reached if reached else None
    return ControlGain(said.label, system, gain["gain"], (low, high), gain["n"], flag)


def gains_note(table: pd.DataFrame) -> str:
    """What the cells' `vs <control>` says, and how many carry the control's flag."""
    gains = [cell.gain for _, row in table.iterrows() for cell in row if cell.gain is not None]
    flags = {gain.flag for gain in gains if gain.flag}
    flagged = sum(gain.flag is not None for gain in gains)
    said = f"; {flagged} cell(s) flagged '{', '.join(sorted(flags))}'" if flagged else ""
    return (
        f"vs {gains[0].label}: ours − {gains[0].label} (no memory) on the items both answered, "
        "with the paired 95 % percentile-bootstrap interval (the controls table has every "
        f"control), and the flag where {gains[0].label} already reaches ours{said} "
        f"(CSV: control, {', '.join(GAIN_COLUMNS)})."
    )


def gain_columns(cell: Any) -> dict[str, Any]:
    """A cell's gain in its table's CSV."""
    gain = cell.gain
    if gain is None:
        return dict.fromkeys(GAIN_CSV_COLUMNS)
    low, high = gain.interval
    return {
        "control": gain.system,
        "control_gain": round(gain.gain, 4),
        "control_gain_low": low,
        "control_gain_high": high,
        "control_items": gain.n,
        "control_flag": gain.flag,
    }


GAIN_COLUMNS = (
    "control_gain",
    "control_gain_low",
    "control_gain_high",
    "control_items",
    "control_flag",
)
GAIN_CSV_COLUMNS = ("control", *GAIN_COLUMNS)
