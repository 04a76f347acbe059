"""What the reproduction report reads beyond the tables' files: the systems (their recipes and
protocols, for the diagnoses), the sampling settings, which recipe produced each paper's printed
numbers, the evaluations whose items the diagnoses' attributions pair
(reproduction_evaluations), and the evaluation jobs whose compute its summary states, with the GPUs
each system's model asks for (reproduction_jobs)."""

from __future__ import annotations

from typing import Any

from memrepro.config.matrix import model_gpus
from memrepro.config.report_plans import (
    TABLES,
    control_inputs,
    item_files,
    paper_file,
    report_inputs,
    report_jobs,
    report_plan,
)
from memrepro.config.reports import (
    MEMAGENT_RECIPES_TABLE,
    MEMALPHA_RECIPES_TABLE,
    report_systems,
)
from memrepro.config.yaml_file import load_yaml

ITEM_FILES = ("metrics.json", "predictions.jsonl")  # an evaluation's (or a rescoring's) files


def reproduction_settings(config: dict[str, Any]) -> dict[str, Any]:
    return {
        "run": config["run"],
        "systems": report_systems(config, variants=True),
        "sampling": dict(config["evaluation"]["sampling"]),
        "gpus": {
            s["id"]: model_gpus(config, s["model"])
            for s in report_systems(config, variants=True)
            if "model" in s
        },
        "printed_by": {
            name: load_yaml(paper_file(config, name)).get("recipe", {}).get("printed_by", "paper")
            for name in (MEMAGENT_RECIPES_TABLE, MEMALPHA_RECIPES_TABLE)
            if report_inputs(config, name)
        },
    }


def reproduction_evaluations(config: dict[str, Any]) -> list[str]:
    """Every evaluation's metrics and predictions a table reads (a score table's cells and the
    controls beside them; the controls', protocols', scorers' and seeds' tables), once each:
    the items a diagnosis pairs."""
    files: list[str] = []
    for name in TABLES:
        plan = report_plan(name)
        if plan.figure or not report_inputs(config, name):
            continue
        if plan.inputs is None:
            files += item_files(config, report_jobs(config, name)) + control_inputs(config, name)
        else:
            files += [path for path in plan.inputs(config) if path.endswith(ITEM_FILES)]
    return sorted(set(files))


def reproduction_jobs(config: dict[str, Any]) -> list[Any]:
    """The evaluation jobs behind the tables a reproduction report summarises, once each."""
    jobs: dict[Any, Any] = {}
    for name in TABLES:
        plan = report_plan(name)
        if plan.figure or plan.inputs is not None or not report_inputs(config, name):
            continue
        for job in report_jobs(config, name):
            jobs.setdefault((job.system, job.benchmark, job.length), job)
    return list(jobs.values())
