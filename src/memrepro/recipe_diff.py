"""`memrepro recipe-diff FILE`: another run's trainer config (a verl/Hydra YAML, nested or a list of
`key=value` overrides, or a JSON of overrides) set beside a paper's stated recipe and its official
script's, key by key, in the `recipes` tables' vocabulary (memrepro.train.recipes.KEYS). Every key
the file leaves unset is read at a named verl version's default (memrepro.train.verl_defaults).

    memrepro recipe-diff their_run.yaml --paper memagent --run rl-memagent-7b
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memrepro.config.yaml_file import load_yaml
from memrepro.report.recipes import show
from memrepro.train.recipes import (
    KEYS,
    SIDE_NAMES,
    SIDES,
    RecipeError,
    check_transcription,
    drifts,
    from_verl,
    nulls,
    read_trainer_config,
    recipe_keys_by_verl,
    resolved,
    stated,
    unmapped_keys,
    unresolved,
)
from memrepro.train.verl_defaults import BASES

CONFIG = Path(__file__).resolve().parents[2] / "config" / "paper"  # the checkout's paper files
PAPER_FILES = {"memagent": CONFIG / "memagent.yaml", "memalpha": CONFIG / "memalpha.yaml"}
STAGES = {"memagent": ("stage1", "stage2"), "memalpha": ("grpo",)}
BASE_OF = {"memagent": "memagent-fork", "memalpha": "verl-0.9.1"}  # what each official code runs


def comparison(
    values: Mapping[str, Any],
    notes: Mapping[str, str],
    transcription: Mapping[str, Any],
    run: str,
    stage: str,
    interpolated: Mapping[str, Any] | None = None,
) -> list[tuple[str, str, str, str, str]]:
    """(key, theirs, paper, official, mark) per transcribed key; theirs says where a value came
    from when the file leaves it unset (the base's default, the epochs) and shows an
    interpolation (`interpolated`: recipe key -> its text) as not compared; mark names the sides
    it differs from."""
    rows = []
    interpolated = interpolated or {}
    for key in (k for k in KEYS if k in transcription["keys"]):
        entry = transcription["keys"][key]
        differs = [side for side in SIDES if key in drifts(values, transcription, side, run, stage)]
        sides = [show(stated(entry, side, run, stage)) for side in SIDES]
        if key in interpolated:
            theirs = f"{interpolated[key]} (an interpolation: not compared)"
        elif key in values:
            theirs = show(values[key]) + (f" ({notes[key]})" if key in notes else "")
        else:
            theirs = f"unset ({notes[key]})" if key in notes else "(not a verl key)"
        rows.append((key, theirs, *sides, "≠ " + " and ".join(differs) if differs else ""))
    return rows


def render(rows: Sequence[tuple[str, ...]]) -> str:
    header = ("key", "this file", "paper", "official script", "")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    )


def nearest(
    values: Mapping[str, Any], transcription: Mapping[str, Any], run: str, stage: str
) -> str:
    """The recipe the file is nearest, with its drifts by label. A tie goes to the recipe that
    produced the printed numbers (`recipe.printed_by`); without one, both are named."""
    drift = {side: drifts(values, transcription, side, run, stage) for side in SIDES}
    fewest = min(len(keys) for keys in drift.values())
    sides = [side for side in SIDES if len(drift[side]) == fewest]
    if len(sides) > 1 and transcription.get("printed_by") in sides:
        sides = [transcription["printed_by"]]
    named = " and ".join(SIDE_NAMES[side] for side in sides)
    noun = "drift" if fewest == 1 else "drifts"
    labels = [KEYS[key].label for key in drift[sides[0]]]
    return f"{named}, {fewest} {noun}" + (f": {', '.join(labels)}" if labels else "")


def _listed(keys: Sequence[str] | Mapping[str, Any]) -> str:
    """Keys in a line: the first 12, then how many more."""
    names = sorted(keys)
    return ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")


def known_runs(transcription: Mapping[str, Any]) -> list[str]:
    """The runs whose values a paper file's recipe tells apart, and `default`."""
    runs = {"default"}
    for entry in transcription["keys"].values():
        for side in SIDES:
            if isinstance(entry.get(side), Mapping):
                runs |= set(entry[side])
    return sorted(runs)


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="memrepro recipe-diff", description=__doc__.splitlines()[0]
    )
    parser.add_argument("file", type=Path, help="a verl/Hydra YAML or a JSON of overrides")
    parser.add_argument("--paper", choices=sorted(PAPER_FILES), default="memagent")
    parser.add_argument("--paper-file", type=Path, help="default: the checkout's paper file")
    parser.add_argument("--run", default="default", help="whose per-run values (rl-memagent-7b)")
    parser.add_argument("--stage", help="stage1 or stage2 (MemAgent); grpo (Mem-α)")
    parser.add_argument(
        "--base",
        choices=sorted(BASES),
        help="whose defaults fill unset keys (default: the paper's)",
    )
    parser.add_argument("--train-rows", type=int, help="training rows: steps from the epochs")
    return parser.parse_args(argv)


def _transcription(args: argparse.Namespace) -> tuple[Path, dict[str, Any]]:
    """The paper file's recipe section, or one sentence saying why not."""
    paper_file = args.paper_file or PAPER_FILES[args.paper]
    try:
        paper = load_yaml(paper_file)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise RecipeError(f"{paper_file}: not a readable paper file ({exc})") from None
    if not isinstance(paper, Mapping) or not isinstance(paper.get("recipe"), Mapping):
        raise RecipeError(f"{paper_file}: no `recipe` section: is it a paper file of this project?")
    try:
        check_transcription(paper["recipe"], str(paper_file))
    except ValueError as exc:
        raise RecipeError(str(exc)) from None
    return paper_file, paper["recipe"]


def _check_run_and_stage(args: argparse.Namespace, transcription: Mapping[str, Any]) -> str:
    stage = args.stage or STAGES[args.paper][0]
    if stage not in STAGES[args.paper]:
        raise RecipeError(f"--stage {stage!r}: {args.paper} has {', '.join(STAGES[args.paper])}")
    runs = known_runs(transcription)
    if args.run not in runs:
        raise RecipeError(f"--run {args.run!r}: the paper file's recipe knows {', '.join(runs)}")
    return stage


def main(argv: Sequence[str] | None = None) -> None:
    args = _arguments(argv)
    base = BASES[args.base or BASE_OF[args.paper]]
    try:
        paper_file, transcription = _transcription(args)
        stage = _check_run_and_stage(args, transcription)
        read = read_trainer_config(args.file)
        left_out = unresolved(read)
        flat = {k: v for k, v in read.items() if k not in left_out and v is not None}
        values = from_verl(flat, args.file, base.read_from)
    except (RecipeError, OSError) as exc:
        sys.exit(f"memrepro recipe-diff: {exc}")
    values, notes = resolved(values, flat, base.values, base.total_epochs, args.train_rows)
    by_verl = recipe_keys_by_verl(base.read_from)
    interpolated = {by_verl[k]: v for k, v in left_out.items() if k in by_verl}
    values = {k: v for k, v in values.items() if k not in interpolated}
    print(f"{args.file} against {paper_file} (run {args.run}, {stage})")
    print(f"unset keys: {base.name}'s defaults ({base.source})")
    print(render(comparison(values, notes, transcription, args.run, stage, interpolated)))
    if left_out:
        print(f"not compared (Hydra interpolations, known only when it runs): {_listed(left_out)}")
    if set_null := nulls(read):
        print(f"null, read as {base.name}'s default: {_listed(set_null)}")
    if ignored := unmapped_keys(flat, base.read_from):
        print(f"not compared (outside the recipe, or not read by {base.name}): {_listed(ignored)}")
    print(f"verdict: {nearest(values, transcription, args.run, stage)}")
