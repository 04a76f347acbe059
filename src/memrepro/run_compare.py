"""`memrepro compare-runs A B`: do two runs hold the same numbers; which items changed, and why?

Files: what a run computes, byte for byte: the downloads, data sets, models and checkpoints,
predictions, metrics, dataset statistics, and every table's CSV and claims. A training log is
compared without its wall times. What names the run, the time or the machine (logs, provenance,
benchmarks, manifests' paths, Markdown/LaTeX/HTML footnotes, figure images) is left out. Used to
show that running every job in its container image changes no number.

Which directories: every top-level directory of a run but the records of how it ran
(NOT_COMPUTED: logs, benchmarks, provenance, pipeline_info, MLflow's artifacts). A family of
outputs added later (rescorings, judges' probes, keyword rebuilds today) is compared without
naming it here. A symlinked subdirectory is followed.

Items: every predictions file the two runs share is matched item by item (task and index); an
item whose score or failure changed is listed with what else changed: its input row
(`row_sha256`), the first prompt sent (`prompt_sha256`: the template or the settings), or
neither (the model, its sampling, or chance). A damaged predictions file (torn, not UTF-8) is
named and its items left out; the others are compared. A repeated item is named.

Exit status: 0 when everything compared is equal, 1 otherwise (the differences are listed)."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memrepro.data.io import read_jsonl
from memrepro.digests import file_digest

# what records how a run ran (its time, machine, invocation), not what it computed: Snakemake's
# logs and benchmarks, memrepro.tracking's provenance, pipeline_info and MLflow artifacts (a test
# holds these names to the modules that write them)
NOT_COMPUTED = ("logs", "benchmarks", "provenance", "pipeline_info", "mlartifacts")
LEFT_OUT_SUFFIXES = (".manifest.json", ".md", ".tex", ".html", ".png", ".pdf", ".log")
TRAINING_LOG = "train_metrics.jsonl"
WALL_TIME_KEYS = ("seconds",)


def computed_files(results: Path) -> Iterator[Path]:
    """The files of a results directory that hold what the run computed (relative paths):
    those under every top-level directory but NOT_COMPUTED, symlinks followed."""
    tops = sorted(p for p in results.iterdir() if p.is_dir() and p.name not in NOT_COMPUTED)
    for top in tops:
        for path in sorted(_files_under(top)):
            if not path.name.endswith(LEFT_OUT_SUFFIXES):
                yield path.relative_to(results)


def _files_under(top: Path) -> Iterator[Path]:
    for folder, _, names in os.walk(top, followlinks=True):
        yield from (Path(folder) / name for name in names if (Path(folder) / name).is_file())


def training_log(path: Path) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [{k: v for k, v in row.items() if k not in WALL_TIME_KEYS} for row in rows]


def same(a: Path, b: Path) -> bool:
    if a.name == TRAINING_LOG:
        return training_log(a) == training_log(b)
    return a.stat().st_size == b.stat().st_size and file_digest(a) == file_digest(b)


def differences(a: Path, b: Path) -> dict[str, list[str]]:
    """`differ`, `only_a`, `only_b` (relative paths) and `equal`."""
    in_a, in_b = set(computed_files(a)), set(computed_files(b))
    both = sorted(in_a & in_b)
    differ = [str(p) for p in both if not same(a / p, b / p)]
    return {
        "equal": [str(p) for p in both if str(p) not in differ],
        "differ": differ,
        "only_a": sorted(map(str, in_a - in_b)),
        "only_b": sorted(map(str, in_b - in_a)),
    }


PREDICTIONS = ".predictions.jsonl"
ItemKey = tuple[str, int]


@dataclass(frozen=True)
class ItemChange:
    """One item whose outcome differs between the runs, and the first of its recorded inputs
    that differs too (`why`)."""

    task: str
    index: int
    item_id: str | None
    score_a: float
    score_b: float
    why: str

    def line(self) -> str:
        named = f" ({self.item_id})" if self.item_id is not None else ""
        item = f"{self.task}/{self.index}{named}"
        return f"{item}: {self.score_a:g} -> {self.score_b:g}, {self.why}"


@dataclass(frozen=True)
class ItemComparison:
    """One predictions file of both runs, item by item, and what kept items out (`left_out`:
    a damaged side, a repeated item)."""

    matched: int
    only_a: int
    only_b: int
    changed: tuple[ItemChange, ...]
    left_out: tuple[str, ...] = ()


@dataclass(frozen=True)
class Items:
    """A predictions file's lines by (task, index) (every line is tagged with its task), the
    keys it holds more than once (the last line kept), or why it could not be read."""

    lines: dict[ItemKey, dict]
    repeated: tuple[ItemKey, ...] = ()
    damaged: str | None = None


def items_by_key(path: Path) -> Items:
    try:
        rows = read_jsonl(path, ("task", "index"))
    except ValueError as exc:  # names the file and line
        return Items({}, damaged=str(exc))
    lines: dict[ItemKey, dict] = {}
    repeated = []
    for row in rows:
        key = (row["task"], row["index"])
        if key in lines:
            repeated.append(key)
        lines[key] = row
    return Items(lines, tuple(repeated))


def outcome(item: dict) -> tuple[float, bool]:
    return float(item["score"]), bool(item["failed"])


def why_changed(a: dict, b: dict) -> str:
    """The first recorded input of an item that differs between the runs."""
    for key, what in (("row_sha256", "input row"), ("prompt_sha256", "first prompt")):
        if a.get(key) is None or b.get(key) is None:
            return f"{what} not recorded"
        if a[key] != b[key]:
            return f"{what} differs"
    return "same input and prompt (the model, its sampling or chance)"


def item_change(key: ItemKey, a: dict, b: dict) -> ItemChange:
    item_id = a.get("id", a.get("instance_id"))  # one's own data's id, an instance's id
    return ItemChange(*key, item_id, outcome(a)[0], outcome(b)[0], why_changed(a, b))


def compare_items(found_a: Items, found_b: Items) -> ItemComparison:
    notes = [
        note for side, found in (("a", found_a), ("b", found_b)) for note in _notes(side, found)
    ]
    if found_a.damaged or found_b.damaged:
        return ItemComparison(0, 0, 0, (), tuple(notes))
    a, b = found_a.lines, found_b.lines
    both = sorted(a.keys() & b.keys())
    changed = tuple(item_change(k, a[k], b[k]) for k in both if outcome(a[k]) != outcome(b[k]))
    only = (len(a.keys() - b.keys()), len(b.keys() - a.keys()))
    return ItemComparison(len(both), *only, changed, tuple(notes))


def _notes(side: str, found: Items) -> list[str]:
    if found.damaged:
        return [f"{side}: damaged, its items left out: {found.damaged}"]
    return [
        f"{side}: item {task}/{index} appears more than once; its last line compared"
        for task, index in found.repeated
    ]


def item_differences(a: Path, b: Path) -> dict[str, ItemComparison]:
    """Every predictions file of both runs (its relative path) compared item by item."""
    in_a = (p for p in computed_files(a) if p.name.endswith(PREDICTIONS))
    shared = sorted(path for path in in_a if (b / path).is_file())
    return {str(p): compare_items(items_by_key(a / p), items_by_key(b / p)) for p in shared}


def print_items(found: dict[str, ItemComparison], shown: int) -> None:
    """A line per predictions file whose items differ, then up to `shown` changed items each."""
    matched = sum(c.matched for c in found.values())
    changed = sum(len(c.changed) for c in found.values())
    print(f"{matched} items matched in {len(found)} predictions files, {changed} changed outcome")
    for path, c in found.items():
        for note in c.left_out:
            print(f"warning: items: {path}: {note}")
        if c.changed or c.only_a or c.only_b:
            print(f"items: {path}: {len(c.changed)} of {c.matched} changed outcome", end="")
            print(f", {c.only_a} only in a, {c.only_b} only in b")
            for change in c.changed[:shown]:
                print(f"  {change.line()}")
            if len(c.changed) > shown:
                print(f"  ... {len(c.changed) - shown} more (--items N shows N)")


def _count(text: str) -> int:
    """--items: a whole number, 0 or more."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a count (0 or more)")
    return int(text)


def main(argv: list[str] | None = None) -> None:
    summary = __doc__.splitlines()[0]
    parser = argparse.ArgumentParser(prog="memrepro compare-runs", description=summary)
    parser.add_argument("a", type=Path, help="a results directory (results/<run>)")
    parser.add_argument("b", type=Path)
    parser.add_argument(
        "--items", type=_count, default=10, metavar="N", help="changed items listed per file"
    )
    args = parser.parse_args(argv)
    for results in (args.a, args.b):
        if not (results / "eval").is_dir():
            raise SystemExit(f"{results}: not a results directory of a finished run (no eval/)")
    found = differences(args.a, args.b)
    print(f"{len(found['equal'])} files equal", end="")
    for key in ("differ", "only_a", "only_b"):
        print(f", {len(found[key])} {key.replace('_', ' in ')}", end="")
    print()
    for key in ("differ", "only_a", "only_b"):
        for path in found[key]:
            print(f"{key}: {path}")
    items = item_differences(args.a, args.b)
    print_items(items, args.items)
    raise SystemExit(1 if any(found[k] for k in ("differ", "only_a", "only_b")) else 0)


if __name__ == "__main__":
    main()
