"""`python -m memrepro.tracking results/<run> [--uri URI]`: load a results directory's provenance
records into MLflow (what `end_invocation` runs in a subprocess; memrepro.tracking.loader)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from memrepro.tracking.loader import load


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m memrepro.tracking",
        description="Load the provenance records under a results directory into MLflow.",
    )
    parser.add_argument("results", type=Path, help="results/<run>")
    parser.add_argument("--uri", help="tracking URI (default: the last invocation's)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    load(args.results, args.uri)


if __name__ == "__main__":
    main()
