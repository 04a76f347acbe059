"""The hardware and measured compute a replication summary states.

Where the numbers come from:
- the machine: the profile's declared resources (`resources: {gpu, nodes}`), or none (a
  cluster places each job);
- the compute: Snakemake's benchmark file of each evaluation job behind the report's tables
  (its wall and CPU seconds), and the GPUs its system's model asks for.

The training behind trained checkpoints is left out: the tables judge evaluations, and a
training run's cost is `memrepro cost --actual`'s.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MEASURED_PREFIX = "Measured compute: "  # masked where two runs' reports are compared
COST_LINE = (
    "Cost: `memrepro cost` prices a plan before it runs; "
    "`memrepro cost --actual results/<run>` sets each rule's estimate beside what its jobs used."
)


@dataclass(frozen=True)
class Compute:
    jobs: int
    wall_h: float
    cpu_h: float
    gpu_h: float
    unread: int  # benchmark files missing or damaged


def benchmark_seconds(path: Path) -> tuple[float, float] | None:
    """(wall, CPU) seconds of a Snakemake benchmark file's last row; None if unreadable."""
    try:
        rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8")), delimiter="\t"))
        return float(rows[-1]["s"]), float(rows[-1]["cpu_time"])
    except (OSError, IndexError, KeyError, TypeError, ValueError):
        return None


def system_of(path: Path) -> str:
    """An evaluation's benchmark file, benchmarks/evaluate/<benchmark>/<system>/<length>.tsv."""
    return path.parent.name


def measured(benchmarks: Sequence[Path], gpus: Mapping[str, int]) -> Compute:
    """The evaluations' wall, CPU and GPU hours (wall x the GPUs its system's model asks for)."""
    wall = cpu = gpu = 0.0
    unread = 0
    for path in benchmarks:
        seconds = benchmark_seconds(path)
        if seconds is None:
            unread += 1
            continue
        wall += seconds[0]
        cpu += seconds[1]
        gpu += seconds[0] * gpus.get(system_of(path), 0)
    return Compute(len(benchmarks) - unread, wall / 3600, cpu / 3600, gpu / 3600, unread)


def hardware_text(machine: Mapping[str, Any]) -> str:
    """The machine the profile declares, in words."""
    gpus, nodes = machine.get("gpus"), machine.get("nodes")
    if gpus is None:
        return (
            "the profile declares no GPUs or nodes: a cluster placed each job, "
            "or one machine ran all"
        )
    where = f" on {nodes} node{'s' * (nodes != 1)}" if nodes else ""
    return f"{gpus} GPU{'s' * (gpus != 1)}{where}, as the profile declares" if gpus else "CPU only"


def compute_lines(settings: Mapping[str, Any], benchmarks: Sequence[Path]) -> list[str]:
    """The summary's hardware, measured compute and cost lines."""
    found = measured(benchmarks, settings.get("gpus", {}))
    unread = f"; {found.unread} benchmark files unreadable" if found.unread else ""
    return [
        f"Hardware: {hardware_text(settings.get('machine', {}))}.",
        f"{MEASURED_PREFIX}{found.jobs} evaluation jobs behind these tables ran "
        f"{found.wall_h:,.2f} wall-hours, {found.cpu_h:,.2f} CPU-hours and {found.gpu_h:,.2f} "
        f"GPU-hours (Snakemake's benchmark files{unread}).",
        COST_LINE,
    ]
