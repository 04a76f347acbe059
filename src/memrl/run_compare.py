"""`python -m memrl.run_compare RESULTS_A RESULTS_B`: do two runs of one config hold the same
numbers? Compares what a run computes, byte for byte: the downloads, data sets, models and
checkpoints, predictions, metrics, dataset statistics, and every table's CSV and claims. A
training log is compared without its wall times. What names the run, the time or the machine
(logs, provenance, benchmarks, manifests' paths, Markdown/LaTeX/HTML footnotes, figure images)
is left out. Used to show that running every job in its container image changes no number.
Exit status: 0 when everything compared is equal, 1 otherwise (the differences are listed)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path

from memrl.digests import file_digest

COMPARED = ("raw", "data", "models", "checkpoints", "eval", "stats", "tables", "figures")
LEFT_OUT_SUFFIXES = (".manifest.json", ".md", ".tex", ".html", ".png", ".pdf", ".log")
TRAINING_LOG = "train_metrics.jsonl"
WALL_TIME_KEYS = ("seconds",)


def computed_files(results: Path) -> Iterator[Path]:
    """The files of a results directory that hold what the run computed (relative paths)."""
    for top in COMPARED:
        for path in sorted((results / top).rglob("*")):
            if path.is_file() and not path.name.endswith(LEFT_OUT_SUFFIXES):
                yield path.relative_to(results)


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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path, help="a results directory (results/<run>)")
    parser.add_argument("b", type=Path)
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
    raise SystemExit(1 if any(found[k] for k in ("differ", "only_a", "only_b")) else 0)


if __name__ == "__main__":
    main()
