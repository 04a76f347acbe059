"""`python -m memrepro.toy --config config/toy.yaml --out results/toy`: a toy experiment, the
MemAgent one (config/toy.yaml) or, for a config with `kind: memalpha`, the Mem-α one
(config/toy_memalpha.yaml)."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from dataclasses import replace
from types import ModuleType

from memrepro.config import ConfigError, load_yaml


def experiment(kind: str) -> tuple[ModuleType, ModuleType]:
    """(config module, runner module) of a toy experiment kind."""
    if kind == "memagent":
        from memrepro.toy import config, runner

        return config, runner
    if kind == "memalpha":
        from memrepro.toy import memalpha_config, memalpha_runner

        return memalpha_config, memalpha_runner
    raise ConfigError(f"kind must be memagent or memalpha, got {kind!r}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m memrepro.toy",
        description="Toy memory tasks on CPU: SFT warm start, then RL (MemAgent's Multi-Conv "
        "DAPO, or Mem-α's GRPO for a config with kind: memalpha).",
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
    logging.getLogger("memrepro.train.cpu_trainer").setLevel(logging.WARNING)
    try:
        config_module, runner = experiment(load_yaml(args.config).get("kind", "memagent"))
        config = config_module.load_config(args.config)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.seeds:
        config = replace(config, seeds=tuple(args.seeds))
    summary = runner.run(config, args.out)
    print(runner.summary_markdown(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
