"""What the reproduction report reads beyond the tables' files: the systems (their recipes and
protocols, for the diagnoses), the benchmarks behind each table's cells (the controls' and
scorers' columns), and how many samples each question's score rests on."""

from __future__ import annotations

from typing import Any

from memrl.config.report_plans import TABLES, report_inputs, report_jobs
from memrl.config.reports import report_systems


def reproduction_settings(config: dict[str, Any]) -> dict[str, Any]:
    sampling = config["evaluation"]["sampling"]
    return {
        "run": config["run"],
        "systems": report_systems(config, variants=True),
        "benchmarks": {
            name: sorted({job.benchmark for job in report_jobs(config, name)})
            for name in TABLES
            if report_inputs(config, name)
        },
        "samples": (
            f"one sample per question (evaluation.sampling: temperature {sampling['temperature']}"
            f", top_p {sampling['top_p']}, seed {sampling['seed']})"
        ),
    }
