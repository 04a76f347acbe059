"""memrepro.tracking.catalog: a job's models and data sets as MLflow shows them, by reference."""

from __future__ import annotations

import json
from pathlib import Path

from memrepro.digests import file_digest
from memrepro.tracking.catalog import dataset_inputs, log_datasets, log_models, model_outputs


def write(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return file_digest(path)


def training_record(root: Path) -> tuple[dict, dict]:
    """A training job that read a downloaded and a built data file and wrote a checkpoint;
    the records (the download's) that made what it read."""
    results = root / "results/r"
    raw = write(results / "raw/hotpot.json", "[]")
    write(results / "raw/hotpot.json.manifest.json", json.dumps(
        {"source": "https://example.org/hotpot.json", "sha256": raw.removeprefix("sha256:")}
    ))  # fmt: skip
    built = write(results / "data/stage2/train.jsonl", "{}\n")
    write(results / "checkpoints/rl/stage2/config.json", "{}")
    checkpoint = file_digest(results / "checkpoints/rl/stage2")
    download = {
        "rule": "download_data",
        "wildcards": {"source": "hotpot", "ext": "json"},
        "log": "results/r/logs/download_data/hotpot.json.log",
        "cwd": str(root),
        "outputs": {"results/r/raw/hotpot.json.manifest.json": "sha256:x"},
    }
    stage2 = {"rule": "stage2_data", "wildcards": {}, "log": "results/r/logs/stage2_data.log"}
    stage2 |= {"cwd": str(root), "outputs": {}}
    record = {
        "rule": "train_stage2",
        "wildcards": {"train_run": "rl"},
        "cwd": str(root),
        "inputs": {
            "results/r/raw/hotpot.json": raw,
            "results/r/data/stage2/train.jsonl": built,
            "config/paper/memagent.yaml": "sha256:p",  # not a data set of the run
        },
        "outputs": {"results/r/checkpoints/rl/stage2": checkpoint},
    }
    made_by = {"results/r/raw/hotpot.json": download, "results/r/data/stage2/train.jsonl": stage2}
    return record, made_by


def test_a_checkpoint_is_a_model_and_each_data_file_a_dataset_with_its_origin(tmp_path):
    record, made_by = training_record(tmp_path)
    results = tmp_path / "results/r"
    [model] = model_outputs(record, results)
    assert (model.name, model.path, model.model_type) == (
        "rl stage2",
        "checkpoints/rl/stage2",
        "trained",
    )
    assert model.digest == record["outputs"]["results/r/checkpoints/rl/stage2"]
    raw, built = dataset_inputs(record, results, made_by)
    assert (raw.name, raw.source_type) == ("raw/hotpot.json", "url")
    assert json.loads(raw.source)["source"] == "https://example.org/hotpot.json"
    digest = record["inputs"]["results/r/raw/hotpot.json"]
    assert raw.digest == digest.removeprefix("sha256:")[:36]
    assert json.loads(raw.source)["digest"] == digest  # the whole one
    assert (built.name, built.source_type) == ("data/stage2/train.jsonl", "local")
    assert json.loads(built.source)["made_by"] == "stage2_data"  # its MLflow run's name


def test_models_and_datasets_land_in_a_real_store_without_copying_a_byte(tmp_path):
    import mlflow

    record, made_by = training_record(tmp_path)
    results = tmp_path / "results/r"
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.create_experiment("memrepro", artifact_location=str(tmp_path / "artifacts"))
    run_id = client.create_run(experiment).info.run_id
    [model_id] = log_models(client, experiment, run_id, model_outputs(record, results))
    log_datasets(client, run_id, "train_stage2", dataset_inputs(record, results, made_by))
    model = client.get_logged_model(model_id)
    assert (model.name, model.source_run_id, str(model.status)) == ("rl stage2", run_id, "READY")
    assert model.tags["memrepro.path"] == "checkpoints/rl/stage2"
    run = client.get_run(run_id)
    assert [o.model_id for o in run.outputs.model_outputs] == [model_id]
    inputs = run.inputs.dataset_inputs
    assert {i.dataset.name for i in inputs} == {"raw/hotpot.json", "data/stage2/train.jsonl"}
    assert {tag.value for i in inputs for tag in i.tags} == {"train_stage2"}
    assert not (tmp_path / "artifacts").exists()  # by reference: nothing copied into the store
