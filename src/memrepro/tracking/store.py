"""The MLflow store the provenance records are loaded into: where it is, and its `memrepro`
experiment.

A tracking URI is made absolute for the jobs and Ray workers that run elsewhere (`absolute_uri`).
A results directory moves as a whole: the SQLite store that lay in it is found in the directory
itself (`store_uri`), and its artifact locations are kept relative to the database's folder
(`relative_artifacts`, `in_store_folder`). Nothing here imports MLflow at import time: a job that
logs into MLflow itself asks for the experiment through `memrepro.tracking.record`.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

EXPERIMENT = "memrepro"
# MLflow's UI opens an experiment on its runs, not on its GenAI traces view
EXPERIMENT_TAGS = {"mlflow.experimentKind": "custom_model_development"}
ARTIFACTS = "mlartifacts"  # a SQLite store's artifacts: this folder beside the database


def absolute_uri(uri: str, cwd: Path | None = None) -> str:
    """A relative `sqlite:///rel/path.db` or plain store path made absolute (jobs and Ray workers
    run elsewhere); URLs unchanged."""
    cwd = cwd or Path.cwd()
    prefix = "sqlite:///"
    if uri.startswith(prefix):
        return prefix + _absolute_path(uri[len(prefix) :], cwd)
    return uri if ":" in uri else _absolute_path(uri, cwd)


def _absolute_path(path: str, cwd: Path) -> str:
    if "://" in path or os.path.isabs(path) or path.startswith("~"):
        return path
    return str(cwd / path)


def store_uri(results: Path, info: Mapping[str, Any]) -> str:
    """The tracking URI an invocation (`info`) logged to, as seen from `results` now: a SQLite
    store that lay in the results directory is the copy's own after a copy or move."""
    uri = info.get("uri") or ""
    if not uri.startswith("sqlite:///"):
        return uri  # a tracking server is the same from anywhere
    if "results" not in info:  # written before invocations said where they ran
        default = f"sqlite:///results/{info['tags']['run']}/mlflow.db"  # config.tracking_uri's
        return f"sqlite:///{results.resolve() / 'mlflow.db'}" if uri == default else uri
    database = Path(absolute_uri(uri, Path(info["cwd"])).removeprefix("sqlite:///"))
    origin = Path(info["results"])
    if database.is_relative_to(origin):
        database = results.resolve() / database.relative_to(origin)
    return f"sqlite:///{database}"


def experiment_id(client: Any, uri: str) -> str:
    """The `memrepro` experiment. In a SQLite store its artifact locations are relative to the
    database's folder (`relative_artifacts`), so a results directory moves as a whole."""
    experiment = client.get_experiment_by_name(EXPERIMENT)
    if experiment is None:
        from mlflow.exceptions import MlflowException

        try:
            found = client.create_experiment(EXPERIMENT, tags=EXPERIMENT_TAGS)
        except MlflowException:  # on a shared server, another job may have created it meanwhile
            experiment = client.get_experiment_by_name(EXPERIMENT)
            if experiment is None:
                raise
            found = experiment.experiment_id
    else:
        found = experiment.experiment_id
        for key, value in EXPERIMENT_TAGS.items():
            if experiment.tags.get(key) != value:  # a store made before the tag existed
                client.set_experiment_tag(found, key, value)
    if uri.startswith("sqlite:///"):
        relative_artifacts(Path(uri.removeprefix("sqlite:///")))
    return found


def relative_artifacts(database: Path) -> None:
    """Point our experiment, MLflow's `Default` and their runs at `mlartifacts/` relative to
    the database's folder. MLflow records absolute locations: a copied results directory would
    otherwise read (and write) the original's artifacts, or none once it is gone. Artifacts are
    then written and served from that folder (`in_store_folder`, `memrepro ui`). Plain SQL on
    MLflow's tables: it has no API for it."""
    import sqlite3

    ours = "SELECT experiment_id FROM experiments WHERE name IN (?, 'Default')"
    with sqlite3.connect(database) as db:
        db.execute(
            f"UPDATE experiments SET artifact_location = ? WHERE experiment_id IN ({ours}) "
            "AND artifact_location != ?",
            (ARTIFACTS, EXPERIMENT, ARTIFACTS),
        )
        moved = db.execute(
            f"UPDATE runs SET artifact_uri = ? || '/' || run_uuid || '/artifacts' "
            f"WHERE experiment_id IN ({ours}) AND artifact_uri != ? || '/' || run_uuid || "
            "'/artifacts'",
            (ARTIFACTS, EXPERIMENT, ARTIFACTS),
        ).rowcount
    if moved:
        log.info("%s: %d runs' artifact locations made relative to its folder", database, moved)


def in_store_folder(uri: str) -> contextlib.AbstractContextManager:
    """Work in a SQLite store's folder, where its relative artifact locations lead."""
    if not uri.startswith("sqlite:///"):
        return contextlib.nullcontext()
    return contextlib.chdir(Path(uri.removeprefix("sqlite:///")).parent)
