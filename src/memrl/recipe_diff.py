"""`memrl recipe-diff FILE`: another run's trainer config (a verl/Hydra YAML, nested or a list of
`key=value` overrides, or a JSON of overrides) set beside a paper's stated recipe and its official
script's, key by key, in the `recipes` tables' vocabulary (memrl.train.recipes.KEYS).

    memrl recipe-diff their_run.yaml --paper memagent --run rl-memagent-7b
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memrl.config.yaml_file import load_yaml
from memrl.report.recipes import show
from memrl.train.recipes import (
    KEYS,
    SIDES,
    RecipeError,
    check_transcription,
    drifts,
    from_verl,
    read_trainer_config,
    stated,
    unmapped_keys,
    verdict,
)

PAPER_FILES = {"memagent": "config/paper/memagent.yaml", "memalpha": "config/paper/memalpha.yaml"}
FIRST_STAGE = {"memagent": "stage1", "memalpha": "grpo"}


def comparison(
    values: Mapping[str, Any], transcription: Mapping[str, Any], run: str, stage: str
) -> list[tuple[str, str, str, str, str]]:
    """(key, theirs, paper, official, mark) per transcribed key; mark names the sides it
    differs from ('' where it agrees or where the file leaves the key to verl's default)."""
    rows = []
    for key in (k for k in KEYS if k in transcription["keys"]):
        entry = transcription["keys"][key]
        differs = [side for side in SIDES if key in drifts(values, transcription, side, run, stage)]
        sides = [show(stated(entry, side, run, stage)) for side in SIDES]
        unset = "(verl's default)" if KEYS[key].verl else "(not a verl key)"
        theirs = show(values[key]) if key in values else unset
        rows.append((key, theirs, *sides, "≠ " + " and ".join(differs) if differs else ""))
    return rows


def render(rows: Sequence[tuple[str, ...]]) -> str:
    header = ("key", "this file", "paper", "official script", "")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="memrl recipe-diff", description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path, help="a verl/Hydra YAML or a JSON of overrides")
    parser.add_argument("--paper", choices=sorted(PAPER_FILES), default="memagent")
    parser.add_argument("--paper-file", type=Path, help="default: config/paper/<paper>.yaml")
    parser.add_argument("--run", default="default", help="whose per-run values (rl-memagent-7b)")
    parser.add_argument("--stage", help="stage1 or stage2 (MemAgent); grpo (Mem-α)")
    args = parser.parse_args(argv)
    paper_file = args.paper_file or Path(PAPER_FILES[args.paper])
    transcription = load_yaml(paper_file)["recipe"]
    check_transcription(transcription, str(paper_file))
    stage = args.stage or FIRST_STAGE[args.paper]
    try:
        flat = read_trainer_config(args.file)
        values = from_verl(flat, args.file)
    except (RecipeError, OSError) as exc:
        sys.exit(f"memrl recipe-diff: {exc}")
    print(f"{args.file} against {paper_file} (run {args.run}, {stage})")
    print(render(comparison(values, transcription, args.run, stage)))
    if ignored := unmapped_keys(flat):
        shown = ", ".join(ignored[:12]) + (
            f" and {len(ignored) - 12} more" if len(ignored) > 12 else ""
        )
        print(f"not compared (outside the recipe): {shown}")
    print(f"verdict: {verdict(values, transcription, None, args.run, stage)}")
