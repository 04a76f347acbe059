"""The verl backend of `memrl train`: rows in, verl launched, the last checkpoint merged out.

One job = one stage of one run. Everything verl writes lives in a work directory beside the
output (`.<stage>.verl/`), which Snakemake does not know about and so never deletes: a killed or
requeued job relaunches with `trainer.resume_mode=auto` and continues from verl's last checkpoint.
The output directory (a merged Hugging Face model + `train_metrics.jsonl`) appears atomically at
the end. Nothing here imports verl: the launched command does.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from memrl.verl.overrides import VerlPaths, verl_command

log = logging.getLogger(__name__)

METRICS_FILE = "train_metrics.jsonl"
VAL_PREFIX = "val-core/ruler_hqa/reward/mean@"  # + validation.n: per-trajectory dev accuracy
# our per-step curve keys <- verl's logged metric names (the first one present wins)
CURVE_KEYS: dict[str, tuple[str, ...]] = {
    "reward_mean": ("memagent/trajectory_reward/mean", "critic/score/mean"),
    "kl": ("actor/kl_loss",),
    "pg_clipfrac": ("actor/pg_clipfrac",),
    "pg_clipfrac_lower": ("actor/pg_clipfrac_lower",),
    "pg_loss": ("actor/pg_loss",),
    "grad_norm": ("actor/grad_norm",),
    "lr": ("actor/lr",),
    "seconds": ("perf/time_per_step",),
}


def work_dir(out: Path) -> Path:
    return out.parent / f".{out.name}.verl"


def job_paths(out: str | os.PathLike[str], model: str | os.PathLike[str]) -> VerlPaths:
    """Where a job's verl files live; the DAG (dry-run command) and the job compute the same."""
    work = work_dir(Path(out))
    return VerlPaths(
        train_files=work / "data" / "train.parquet",
        val_files=work / "data" / "val.parquet",
        model=Path(model),
        checkpoints=work / "checkpoints",
    )


def launch_command(settings: Mapping[str, Any], out: str, model: str) -> list[str]:
    return verl_command(dict(settings), job_paths(out, model))


def stores(paths: VerlPaths) -> tuple[Path, Path]:
    """The SQLite context stores of the train and validation parquet files."""
    return paths.train_files.with_suffix(".contexts.sqlite"), paths.val_files.with_suffix(
        ".contexts.sqlite"
    )


def prepare_data(
    settings: Mapping[str, Any], rows: list[dict], dev_rows: list[dict], paths: VerlPaths
) -> None:
    """verl's parquet rows (question + context id) and the context stores the agent loop reads."""
    from memrl.verl.dataset import write_verl_dataset

    train_store, val_store = stores(paths)
    for data, parquet, store in (
        (rows, paths.train_files, train_store),
        (dev_rows, paths.val_files, val_store),
    ):
        summary = write_verl_dataset(
            data, parquet, store, settings["agent"], settings["max_chunks"]
        )
        log.info("%s: %s", parquet, summary)


def run(
    settings: Mapping[str, Any],
    rows: list[dict],
    dev_rows: list[dict],
    model: Path,
    out: Path,
    launch: Sequence[str],
    env: Mapping[str, str],
) -> dict[str, Any]:
    """Prepare data, run the launch command until it exits, merge its last checkpoint into out."""
    from memrl.data.io import publish_directory
    from memrl.verl.checkpoints import latest_step, merge_command

    paths = job_paths(out, model)
    expected = launch_command(settings, str(out), str(model))
    if list(launch) != expected:
        raise SystemExit(
            "the launch command differs from the one the config generates (memrl.verl.overrides):"
            f"\n  given:     {' '.join(launch)}\n  generated: {' '.join(expected)}"
        )
    prepare_data(settings, rows, dev_rows, paths)
    logs = work_dir(out) / "metrics"
    logs.mkdir(parents=True, exist_ok=True)
    attempt_log = logs / f"attempt-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
    resumed_from = latest_step(paths.checkpoints)
    log.info("launching verl (resuming after step %s): %s", resumed_from, " ".join(launch))
    began = time.perf_counter()
    subprocess.run(list(launch), env={**env, "VERL_FILE_LOGGER_PATH": str(attempt_log)}, check=True)
    step = latest_step(paths.checkpoints)
    if step is None or step < settings["steps"]:
        raise SystemExit(
            f"verl exited without a checkpoint of step {settings['steps']} in {paths.checkpoints} "
            f"(last: {step}); rerun the job to resume from it"
        )
    staging = out.parent / f".{out.name}.partial"
    subprocess.run(merge_command(paths.checkpoints, step, staging), check=True)
    curve = curve_rows(read_verl_logs(sorted(logs.glob("attempt-*.jsonl"))))
    with (staging / METRICS_FILE).open("w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(row) + "\n" for row in curve)
    publish_directory(staging, out)
    return {
        "steps": step,
        "resumed_from": resumed_from or 0,
        "seconds": time.perf_counter() - began,
        "final_reward_mean": curve[-1]["reward_mean"] if curve else float("nan"),
    }


def read_verl_logs(files: Iterable[Path]) -> dict[int, dict[str, float]]:
    """verl's file-logger lines ({"step", "data"}) of every attempt, a later attempt winning a
    step (a resumed run repeats the steps after its last checkpoint)."""
    steps: dict[int, dict[str, float]] = {}
    for path in files:
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                    steps[int(entry["step"])] = dict(entry["data"])
                except (ValueError, KeyError, TypeError) as exc:
                    if line.endswith("\n"):  # a torn last line is what a killed job leaves
                        raise ValueError(f"{path}:{number}: not a verl log line: {exc}") from exc
    return steps


def curve_rows(steps: Mapping[int, Mapping[str, float]]) -> list[dict[str, float]]:
    """Per-step rows in train_metrics.jsonl's keys (the CPU trainer's), from verl's names."""
    rows = []
    for step in sorted(steps):
        data = steps[step]
        row: dict[str, float] = {"step": step}
        for ours, names in CURVE_KEYS.items():
            found = next((data[name] for name in names if name in data), None)
            if found is not None:
                row[ours] = float(found)
        val = [value for name, value in data.items() if name.startswith(VAL_PREFIX)]
        if val:
            row["val_reward"] = float(val[0])
        if "reward_mean" in row:  # validation-only lines carry no training curve
            rows.append(row)
    return rows
