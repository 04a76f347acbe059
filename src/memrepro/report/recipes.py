"""The `recipes` tables: each trained model's job, key by key, beside what its paper states and
what its official script runs (the paper file's `recipe` section, each value with its source),
and a verdict per job: the paper recipe, the official-script recipe, or which keys drift."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from memrepro.config import MEMAGENT_RECIPES_TABLE, MEMALPHA_RECIPES_TABLE
from memrepro.report.cells import DASH, machinery_banner
from memrepro.report.registry import MEMAGENT, MEMALPHA, PaperTable, TableInput
from memrepro.report.rows import Systems, system_specs
from memrepro.train.recipes import (
    KEYS,
    RECIPE_FILE,
    SIDE_NAMES,
    SIDES,
    check_transcription,
    drifts,
    verdict,
)

SIDE_COLUMNS = {"paper": "Paper", "official": "Official script"}
MARKS = {("paper",): "≠ paper", ("official",): "≠ script", ("paper", "official"): "≠ both"}
VERDICT_ROW = "Verdict"


def load_recipes(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Each trained checkpoint's RECIPE_FILE (the table's inputs are the checkpoint directories);
    one without it was trained before jobs wrote it: retrain, or delete the checkpoint."""
    import json

    records = []
    for path in paths:
        file = Path(path) / RECIPE_FILE
        if not file.is_file():
            raise FileNotFoundError(
                f"{file}: missing: {path} was trained before train jobs wrote their recipe; "
                "delete the directory to retrain it"
            )
        records.append(json.loads(file.read_text()))
    return records


def show(value: Any) -> str:
    """A recipe value as the tables print it (None: not stated)."""
    if value is None:
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping):
        return "; ".join(f"{run} {show(v)}" for run, v in value.items())
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _side_cell(entry: Mapping[str, Any], side: str) -> str:
    value = entry.get(side)
    if value is None:
        return "not stated" if side == "paper" else DASH
    return f"{show(value)} — {entry[f'{side}_at']}"


def _job_cell(
    record: Mapping[str, Any], key: str, entry: Mapping[str, Any], transcription: Mapping[str, Any]
) -> str:
    if key not in record["values"]:
        return DASH
    run, stage = record["recipe_run"], record["stage"]
    differs = tuple(
        side for side in SIDES if key in drifts(record["values"], transcription, side, run, stage)
    )
    text = show(record["values"][key])
    return f"{text} ({MARKS[differs]})" if differs else text


def job_column(record: Mapping[str, Any]) -> str:
    return f"{record['run']} {record['stage']} ({record['recipe']} recipe, {record['backend']})"


def build_recipes_table(
    records: Sequence[Mapping[str, Any]], transcription: Mapping[str, Any]
) -> pd.DataFrame:
    """A row per recipe key the paper file transcribes, in KEYS' order: the paper's and the
    official script's values with their sources, then each trained job's value (marked where it
    differs); the last row, each job's verdict against the recipe its config selected, with the
    note of a stage neither the paper nor the script sets up (`pipeline_stages`)."""
    keys = [key for key in KEYS if key in transcription["keys"]]
    rows = {}
    for key in keys:
        entry = transcription["keys"][key]
        row = {side_name: _side_cell(entry, side) for side, side_name in SIDE_COLUMNS.items()}
        for record in records:
            row[job_column(record)] = _job_cell(record, key, entry, transcription)
        rows[KEYS[key].label] = row
    own = transcription.get("pipeline_stages", {})
    verdicts = {
        job_column(record): verdict(
            record["values"], transcription, record["recipe"], record["recipe_run"], record["stage"]
        )
        + (f"; {own[record['stage']]}" if record["stage"] in own else "")
        for record in records
    }
    rows[VERDICT_ROW] = {**dict.fromkeys(SIDE_COLUMNS.values(), ""), **verdicts}
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "Setting"
    # the reproduction report shows a table's notes: each trained job's verdict, there too
    frame.attrs["notes"] = [f"{job}: {said}." for job, said in verdicts.items()]
    return frame


def _build(table: TableInput) -> pd.DataFrame:
    check_transcription(table.paper["recipe"], "the paper file's recipe")
    frame = build_recipes_table(table.records, table.paper["recipe"])
    if banner := machinery_jobs_banner(table.records, table.systems):
        frame.attrs["banner"] = banner
    return frame


def machinery_jobs_banner(records: Sequence[Mapping[str, Any]], systems: Systems) -> str | None:
    """The machinery banner where trained jobs made a model the systems mark as unable to
    reproduce the papers (the smoke and mini runs' tiny trainings): None where none did."""
    specs = system_specs(systems).values()
    machinery = {spec.get("model") for spec in specs if not spec.get("reproduces", True)}
    jobs = [job_column(record) for record in records if record["run"] in machinery]
    return machinery_banner(jobs, len(jobs) == len(records)) if jobs else None


def trained_recipe_notes(systems: Sequence[Mapping[str, Any]], shown: Iterable[str]) -> list[str]:
    """Which recipe trained the MemAgent runs of ours a table shows (report settings'
    `memagent_recipe`), pointing at the table that sets it beside the paper's key by key."""
    by_recipe: dict[str, list[str]] = {}
    shown = set(shown)
    for system in systems:
        if system["id"] in shown and "memagent_recipe" in system:
            by_recipe.setdefault(system["memagent_recipe"], []).append(system["display"])
    return [
        f"Trained here with the {SIDE_NAMES.get(recipe, f'recipe {recipe!r}')} "
        f"(training.recipe: {recipe}): {', '.join(names)}; every key beside the paper's and the "
        f"official script's in the {MEMAGENT_RECIPES_TABLE} table."
        for recipe, names in sorted(by_recipe.items())
    ]


RECIPE_TABLES = {
    MEMAGENT_RECIPES_TABLE: PaperTable(_build, MEMAGENT, load=load_recipes, text=True),
    MEMALPHA_RECIPES_TABLE: PaperTable(_build, MEMALPHA, load=load_recipes, text=True),
}
