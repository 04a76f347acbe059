"""A job's models and data sets as MLflow shows them, by reference: no byte is copied into the
store. A model directory the job wrote (a downloaded base model, a trained checkpoint: a
directory with a `config.json`) becomes a *logged model* of its run, with its path and digest;
every data file it read (the run's `raw/` downloads and `data/` sets) becomes a *dataset input*
with its digest and where it came from (the URL, hub id or path its download's manifest names,
or the job that made it). The UI's Models and Dataset columns show them."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memrepro.mlflow_notes import job_run_name
from memrepro.tracking.results_dir import absolute, origin_of

MODEL_FILE = "config.json"  # what makes an output directory a model (Hugging Face's layout)
DATASET_DIRS = ("raw", "data")  # the results directory's downloads and built sets
DIGEST_CHARS = 36  # MLflow keeps a dataset digest in 36 characters; the whole one is in `source`
MODEL_NAME_UNSAFE = re.compile(r"[/:.%\"']+")  # what MLflow refuses in a model's name
CONTEXT_TAG = "mlflow.data.context"  # the UI's dataset context: here the rule that read it


@dataclass(frozen=True)
class ModelRef:
    """A model directory a job wrote: its name in MLflow, path (as recorded) and digest."""

    name: str
    path: str
    digest: str
    model_type: str  # "downloaded" or "trained"


@dataclass(frozen=True)
class DatasetRef:
    """A data file a job read: its name (its path under the results directory), digest, where
    it came from (`source`, JSON) and the kind of source (`url` or `local`)."""

    name: str
    digest: str
    source: str
    source_type: str


def under_results(record: Mapping[str, Any], path: str, results: Path) -> str | None:
    """`path` (as the record names it) relative to the results directory, if it is inside."""
    try:
        return Path(absolute(record, path)).relative_to(os.path.abspath(results)).as_posix()
    except ValueError:
        return None


def model_outputs(record: Mapping[str, Any], results: Path) -> list[ModelRef]:
    """The model directories among a job's outputs (downloaded when its manifest names an
    origin, else trained)."""
    kind = "downloaded" if origin_of(record) else "trained"
    found = []
    for path, digest in record.get("outputs", {}).items():
        if not (Path(absolute(record, path)) / MODEL_FILE).is_file():
            continue
        relative = under_results(record, path, results) or path
        top, _, rest = relative.partition("/")
        name = MODEL_NAME_UNSAFE.sub(" ", rest or top).strip()
        found.append(ModelRef(name, relative, digest, kind))
    return found


def dataset_inputs(
    record: Mapping[str, Any],
    results: Path,
    made_by: Mapping[str, Mapping[str, Any] | None],
) -> list[DatasetRef]:
    """The data files a job read (under `raw/` or `data/`), each with the origin its download's
    manifest names or the job that made it (`made_by`:
    memrepro.tracking.results_dir.producers_of)."""
    found = []
    for path, digest in record.get("inputs", {}).items():
        relative = under_results(record, path, results)
        if relative is None or relative.split("/", 1)[0] not in DATASET_DIRS:
            continue
        if not Path(absolute(record, path)).is_file():
            continue
        producer = made_by.get(path)
        origin = origin_of(producer) if producer else {}
        source = {"path": relative, "digest": digest, **origin}
        if producer and not origin:
            source["made_by"] = job_run_name(producer)
        remote = origin.get("source", "").startswith(("http://", "https://"))
        found.append(
            DatasetRef(
                name=relative,
                digest=digest.removeprefix("sha256:")[:DIGEST_CHARS],
                source=json.dumps(source, sort_keys=True),
                source_type="url" if remote else "local",
            )
        )
    return found


def log_models(client: Any, experiment: str, run_id: str, models: list[ModelRef]) -> list[str]:
    """Each model as a logged model of the run (its path and digest as tags, no artifact), READY
    and linked as the run's output; returns their ids."""
    from mlflow.entities import LoggedModelOutput

    ids = []
    for model in models:
        logged = client.create_logged_model(
            experiment,
            name=model.name,
            source_run_id=run_id,
            tags={"memrepro.path": model.path, "memrepro.digest": model.digest},
            model_type=model.model_type,
        )
        client.finalize_logged_model(logged.model_id, "READY")
        ids.append(logged.model_id)
    if ids:
        client.log_outputs(run_id, [LoggedModelOutput(model_id, 0) for model_id in ids])
    return ids


def log_datasets(client: Any, run_id: str, rule: str, datasets: list[DatasetRef]) -> None:
    """Each data file as a dataset input of the run, in the context of the rule that read it."""
    from mlflow.entities import Dataset, DatasetInput, InputTag

    inputs = [
        DatasetInput(
            Dataset(d.name, d.digest, d.source_type, d.source), [InputTag(CONTEXT_TAG, rule)]
        )
        for d in datasets
    ]
    if inputs:
        client.log_inputs(run_id, datasets=inputs)
