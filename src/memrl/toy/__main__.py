"""`python -m memrl.toy --config config/toy.yaml --out results/toy`: the toy experiment."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from memrl.config import ConfigError
from memrl.toy.config import load_config
from memrl.toy.runner import run, summary_markdown


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m memrl.toy",
        description="Toy memory task: SFT warm start, then Multi-Conv DAPO, on CPU.",
    )
    parser.add_argument("--config", default="config/toy.yaml", help="the toy config (YAML)")
    parser.add_argument("--out", default="results/toy", help="output directory")
    parser.add_argument(
        "--seeds", type=int, nargs="+", help="run only these seeds (default: the config's)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("memrl.train.cpu_trainer").setLevel(logging.WARNING)
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.seeds:
        from dataclasses import replace

        config = replace(config, seeds=tuple(args.seeds))
    summary = run(config, args.out)
    print(summary_markdown(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
