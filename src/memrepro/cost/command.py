"""memrepro cost: what a target costs before it runs: GPU-hours per rule, downloads and checkpoints.

    memrepro cost --profile profiles/slurm all
    memrepro cost --profile profiles/local table1 \
        --configfile config/config.yaml config/eval-released.yaml

It takes a dry run's arguments, plans them with Snakemake (so only the jobs still to run are
priced) and reads each job's rule, wildcards, resources and settings from the plan. Per GPU job:

- **estimate**: the FLOPs of its work (verl's Qwen2 count, memrepro.report.flops: forward only for
  inference, forward and backward plus the rollout, old-policy, reference and recomputed forwards
  for training) at the FLOP rate measured for prefill on one GPU (src/memrepro/measured/, by
  scripts/bench_gpu_throughput.py). Every call is counted at its token budgets and generated
  tokens at the prefill rate, a compute-bound pace that a well-batched engine approaches and
  decoding one sequence at a time does not. The work: MemAgent's benchmarks at the config's
  sizes (LongBench's published ones); Mem-α's instances at the sizes the paper's Tables 6-8
  print (RULER-HQA's samples cut into chunks); each system kind's calls (memrepro.systems). Jobs
  whose work is not modelled (the question filter, a kind without calls) have none;
- **allocation**: its runtime limit times the GPUs it requests (the profile's resources), the
  upper bound a scheduler would charge.

After a run, `--actual results/<run>` sets the estimate of every job of the target that ran
(planned again as if from scratch, `--forceall`) beside what it used: its wall time from its
provenance record, times the GPUs it requested, per rule and with the ratio actual / estimate.
A RESULTS without any job record is an error (most likely the wrong path).
Where a training run of the same name measured its responses (`--lengths RESULTS`, else
--actual's; a finished run or one as far as it got), its estimate counts every response at that
mean length instead of the budget. Each step's mean must be positive and at most the stage's
longest response, else an error names the file and line (verl's logs: the step); a torn last line
of a killed run is skipped with a warning.

Hosted models (source `api`) use no GPU of ours: their calls are counted (at their budgets) in
millions of tokens, and in dollars at the model's `price` where the config gives one.

Downloads: model weights at 2 bytes per parameter (bf16 safetensors), from the published shape of
the model's family; datasets only where a manifest already records them. Checkpoints: verl keeps
`max_checkpoints` states of 14 bytes per parameter (bf16 weights, fp32 master weights and two
Adam moments) per training stage or Mem-α run (one per validation where a Mem-α recipe keeps the
best validated one), plus the merged bf16 model.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from memrepro import config as cfg
from memrepro.cost.actual import actual_rows, render_actual
from memrepro.cost.gpu import MEASURED, prefill_flop_rate
from memrepro.cost.plan import PlannedJob, config_files, dry_run, parse_plan
from memrepro.cost.price import price_job
from memrepro.cost.pricing import Pricing
from memrepro.cost.report import markdown, render, summarise
from memrepro.cost.responses import ResponseLengthError
from memrepro.cost.traces import trace_estimate
from memrepro.progress import quantity
from memrepro.tracking.traces import policy_of


def main(argv: Sequence[str] | None = None) -> None:
    from memrepro.launch import split_overrides, targets

    parser = argparse.ArgumentParser(
        prog="memrepro cost",
        description=__doc__.split("\n\n")[0].split(": ", 1)[1],
        epilog="Other arguments are a dry run's: --profile, targets, --configfile, --config.",
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="the rows as JSON")
    output.add_argument("--markdown", action="store_true", help="the rows as a Markdown table")
    parser.add_argument("--measured", type=Path, default=MEASURED, help="throughput measurements")
    parser.add_argument(
        "--actual",
        type=Path,
        metavar="RESULTS",
        help="after a run: each rule's estimate beside what its jobs in RESULTS used",
    )
    parser.add_argument(
        "--lengths",
        type=Path,
        metavar="RESULTS",
        help="training responses at the mean length measured by the same runs in RESULTS "
        "(finished, or as far as they got); default: --actual's",
    )
    known, rest = parser.parse_known_args(argv)
    args, overrides = split_overrides(rest)
    if known.actual is not None:
        args = [*args, "--forceall"]  # every job of the target, as the run planned it
    records = None if known.actual is None else job_records(known.actual)
    lengths = known.lengths or known.actual
    if lengths is not None and not lengths.is_dir():
        raise SystemExit(f"--lengths {lengths}: no such results directory")
    config = checked_config(config_files(args), overrides)
    measured = json.loads(known.measured.read_text())
    rate = prefill_flop_rate(measured)
    pricing = Pricing.of(config, rate, lengths)
    said = Said()
    said(f"planning {' '.join(targets(args)) or 'all'} with Snakemake (a dry run)")
    try:
        jobs = parse_plan(dry_run(args, overrides))
    except ValueError as exc:  # a job's settings file that cannot be read
        raise SystemExit(f"memrepro cost: {exc}") from None
    said(f"planned {quantity(len(jobs), 'job')}; pricing them")
    try:
        prices = [price_job(job, pricing) for job in jobs]
    except ResponseLengthError as exc:  # --lengths: a training run's metrics
        raise SystemExit(f"memrepro cost: {exc}") from None
    said("priced")
    if records is not None:
        used = actual_rows(jobs, prices, records)
        print(
            json.dumps({"rows": used}, indent=1)
            if known.json
            else render_actual(used, known.actual)
        )
        return
    rows = summarise(prices)
    traces = trace_estimate(jobs, pricing)
    trained = training_runs(jobs)
    if known.json:
        found = {"rows": rows, "flop_rate": rate, "device": measured["device"]}
        print(json.dumps({**found, "traces": asdict(traces), "trains": trained}, indent=1))
    else:
        table = markdown(rows) if known.markdown else render(rows, len(prices), measured, rate)
        notes = [traces.text(policy_of(config)), *([training_note(trained)] if trained else [])]
        print("\n\n".join([table, *notes]))


class Said:
    """What the command is doing, on stderr, with the seconds since it began: a long plan is
    not silent (Table 1's dry run once took 3 minutes on a busy 2-core machine)."""

    def __init__(self) -> None:
        self.began = time.monotonic()

    def __call__(self, what: str) -> None:
        print(f"memrepro cost: {what} ({time.monotonic() - self.began:.0f} s)", file=sys.stderr)


TRAIN_RULES = ("train_stage1", "train_stage2", "train_memalpha")
EVALUATION_ONLY = "config/eval-released.yaml"


def training_runs(jobs: Sequence[PlannedJob]) -> list[str]:
    """The training runs the plan trains (a stage or a Mem-α run each), sorted: Snakemake's
    plan order varies from one dry run to the next."""
    runs = {(job.settings or {}).get("run") for job in jobs if job.rule in TRAIN_RULES}
    return sorted(run for run in runs if run)


def training_note(runs: Sequence[str]) -> str:
    """What a target holds beyond its evaluations: the training it needs, and where evaluating
    the released checkpoints alone is configured."""
    return (
        f"The target includes training: {', '.join(runs)}. To evaluate the released checkpoints "
        f"only, add --configfile config/config.yaml {EVALUATION_ONLY}."
    )


def checked_config(files: Sequence[str], overrides: dict[str, Any]) -> dict[str, Any]:
    """The config the plan reads, validated; one that fails (the schema, a reference) is an
    exit naming the files and the key, as `python -m memrepro.config` prints it."""
    try:
        return cfg.load_config(files, overrides)
    except cfg.ConfigError as exc:
        named = any(file in str(exc) for file in files)
        where = "" if named else " + ".join([*files, *(["--config"] if overrides else [])]) + ": "
        raise SystemExit(f"memrepro cost: {where}{exc}") from None


def job_records(results: Path) -> list[dict[str, Any]]:
    """--actual's job records; a directory without any is most likely not a run's results."""
    from memrepro.tracking.record import RECORD_SUFFIX
    from memrepro.tracking.results_dir import records_under

    if not results.is_dir():
        raise SystemExit(f"--actual {results}: no such results directory")
    records = records_under(results)
    if not records:
        raise SystemExit(
            f"--actual {results}: no job record (logs/**/*{RECORD_SUFFIX}) under it; "
            "give the results directory of a run (results/<run>)"
        )
    return records
