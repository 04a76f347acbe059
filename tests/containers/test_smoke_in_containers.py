"""A slice of the smoke DAG with every job in the `core` image (profiles/containers, the podman
route), against the same jobs of the whole smoke DAG in the venv: the container changes no number,
and every job's record names the image it ran in, with its digest and its lock's.

The slice is every kind of step once (downloads, synthesis, question filter, both MemAgent
training stages, Mem-α's GRPO, memorize, a sharded evaluation and its merge, a table, a
training-curve figure): 37 of the smoke run's 208 jobs. The whole DAG in containers took
about 15 min of CI's 90 and showed nothing a step's first job does not (each step is one command
in one image)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, image
from test_workflow import kept_smoke

from memrepro.run_compare import differences

pytestmark = [pytest.mark.containers, pytest.mark.workflow]

COPIED = ("Snakefile", "workflow", "config", "profiles", "envs", "src")  # src: the jobs' memrepro
RUN_TIMEOUT_S = 1200
SLICE = (
    "tables/table3.md",  # downloads, filter, both MemAgent training stages, evaluations, a table
    "eval/mab/memalpha-tiny-trained-here/0.metrics.json",  # Mem-α's GRPO, memorize, evaluate
    "eval/ruler_hqa/rl-memagent-tiny-blind/50.metrics.json",  # two shards and their merge
    "figures/training_rl-memagent-tiny.png",  # a figure drawn in the image
)
SLICE_RULES = {
    "download_data", "download_model", "download_official_hqa", "official_eval_set",
    "ruler_hqa_pool", "synthesize_ruler_hqa", "filter_questions", "stage2_data", "train_stage1",
    "train_stage2", "train_memalpha", "memorize", "evaluate", "evaluate_shard", "merge_eval",
    "make_table", "plot_training_curve",
}  # fmt: skip


def pipeline(root: Path, profile: str, *targets: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
    }
    return subprocess.run(
        [sys.executable, "-m", "memrepro.launch", "--profile", f"profiles/{profile}", *targets],
        cwd=root, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )  # fmt: skip


@pytest.fixture(scope="module")
def both_runs(tmp_path_factory, built) -> Path:
    """The smoke DAG in the venv and its slice in containers, in one copy of the workflow. The
    venv run is the one the workflow tests kept (MEMREPRO_KEEP_SMOKE, set by .ci/run after `make
    test` ran it from this same tree), else run here."""
    built("core")
    root = tmp_path_factory.mktemp("smoke")
    for name in COPIED:
        (shutil.copytree if (REPO / name).is_dir() else shutil.copy)(REPO / name, root / name)
    if kept := kept_smoke():
        shutil.copytree(kept, root / "results/smoke", symlinks=True)
    done = pipeline(root, "smoke")  # a kept venv run is up to date: nothing to do
    assert done.returncode == 0, f"smoke:\n{done.stderr[-4000:]}"
    done = pipeline(root, "containers", *(f"results/smoke-containers/{t}" for t in SLICE))
    assert done.returncode == 0, f"containers:\n{done.stderr[-4000:]}"
    return root / "results"


def records(results: Path) -> list[dict]:
    starts = []
    for path in sorted((results / "logs").rglob("*.provenance.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if "tags" in record:
                starts.append(record)
    return starts


def test_every_computed_file_is_byte_identical_to_the_venv_runs(both_runs):
    found = differences(both_runs / "smoke", both_runs / "smoke-containers")
    assert (found["differ"], found["only_b"]) == ([], [])  # the venv ran the whole DAG
    kinds = {Path(p).parts[0] for p in found["equal"]}
    assert {"raw", "data", "eval", "tables", "checkpoints", "models"} <= kinds
    # table3's five evaluations and the trained agent's own closed-book, Mem-α's on MAB, the
    # merged shards
    assert sum(p.endswith(".predictions.jsonl") for p in found["equal"]) == 8


def test_every_containerised_job_names_its_image_digest_and_lock(both_runs, podman):
    inspected = json.loads(
        subprocess.run(
            [podman, "image", "inspect", image("core")], capture_output=True, check=True
        ).stdout
    )[0]
    jobs = records(both_runs / "smoke-containers")
    assert {record["rule"] for record in jobs} == SLICE_RULES
    for record in jobs:
        tags = record["tags"]
        assert tags["container.image"] == image("core"), record["rule"]
        assert tags["container.digest"] == inspected["Digest"]
        assert tags["env.lock.digest"] == inspected["Labels"]["memrepro.lock.digest"]
        assert tags["container.lock.digest"] == inspected["Labels"]["memrepro.lock.digest"]
    for record in records(both_runs / "smoke"):  # the venv run says it ran in no container
        assert record["tags"]["container.image"].startswith("none (ran in ")
