"""Kill and resume: SIGKILL the whole Snakemake process group at three points of a small target,
resume each time with the documented command, and compare with an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from test_workflow import copy_workflow, snakemake

from memrepro.config import ENV_OVERRIDES, load_yaml

pytestmark = [pytest.mark.workflow, pytest.mark.reliability]

RUN = Path("results/smoke")
SYSTEM = RUN / "eval/ruler_hqa/memagent-tiny-instruct"  # MemAgent w/o RL: no training needed
TARGETS = [str(SYSTEM / f"{n}.metrics.json") for n in (10, 20, 50)]  # 20 and 50: two shards
RESUME = ["--profile", "profiles/smoke", *TARGETS]  # the documented command, with a target
WAIT_S = 900  # the longest a kill point may take to come


def outputs(root: Path) -> dict[str, bytes]:
    """Every prediction, shard and metrics file of the target, by relative path."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted((root / SYSTEM).glob("*"))
        if p.suffix in {".jsonl", ".json"}
    }


@pytest.fixture(scope="module", autouse=True)
def synthesized_sets():
    """Eval sets built from the filtered questions (`ruler_hqa.eval_sets: synthesized`, as
    `./pipeline --config` sets it), so the filter runs before any evaluation: its kill point
    comes first. The released sets (the smoke default) need no filter."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENV_OVERRIDES, json.dumps({"ruler_hqa.eval_sets": "synthesized"}))
        yield


@pytest.fixture(scope="module")
def uninterrupted(repo, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("uninterrupted")
    copy_workflow(repo, root)
    done = snakemake(*RESUME, cwd=root)
    assert done.returncode == 0, done.stderr[-3000:]
    return root


def run_until(root: Path, ready: Callable[[], bool], log: Path) -> None:
    """Start the documented command in its own process group; SIGKILL the whole group once
    `ready()` holds (the job is mid-way)."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    with log.open("a") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "snakemake", *RESUME],
            cwd=root,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + WAIT_S
    try:
        while not ready():
            assert proc.poll() is None, f"finished before the kill point: {log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, "the kill point never came"
            time.sleep(0.1)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def partial_lines(root: Path, pattern: str) -> int:
    return sum(p.read_bytes().count(b"\n") for p in (root / SYSTEM).glob(pattern))


def jobs_started_since(root: Path, moment: float) -> bool:
    """Whether an evaluation or merge job opened its log (`2> log`) after `moment`."""
    logs = [
        p for rule in ("evaluate", "merge_eval") for p in (root / RUN / "logs" / rule).rglob("*")
    ]
    return any(p.stat().st_mtime > moment for p in logs if p.is_file())


def test_kill_at_three_points_then_resume_loses_and_duplicates_nothing(
    repo, uninterrupted, tmp_path
):
    root = tmp_path / "killed"
    root.mkdir()
    copy_workflow(repo, root)
    log = tmp_path / "snakemake.log"

    filter_logs = root / RUN / "logs/filter_questions"

    def grows(count: Callable[[], int]) -> Callable[[], bool]:
        """Ready once `count()` exceeds its value when this run starts."""
        before = count()
        return lambda: count() > before

    def a_job_starts() -> Callable[[], bool]:
        """Ready once an evaluation or merge job of this run opened its log."""
        began = time.time()
        return lambda: jobs_started_since(root, began)

    # Snakemake orders the evaluation jobs as it likes: each point holds whatever ran first.
    kill_points = {
        "filtering questions": lambda: grows(lambda: len(list(filter_logs.glob("*")))),
        "a wave written": lambda: grows(lambda: partial_lines(root, "*.partial")),
        "a job just started": a_job_starts,
    }
    for point, ready in kill_points.items():
        run_until(root, ready(), log)
        assert (root / ".snakemake/locks").is_dir(), f"{point}: the kill left no lock to test"

    resumed = snakemake(*RESUME, cwd=root)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "Released the lock left by a killed run" in resumed.stderr

    ours, reference = outputs(root), outputs(uninterrupted)
    assert ours.keys() == reference.keys()
    for name, data in reference.items():
        assert ours[name] == data, f"{name} differs from the uninterrupted run's"
    for n in (10, 20, 50):
        lines = [json.loads(x) for x in (root / SYSTEM / f"{n}.predictions.jsonl").open()]
        assert sorted(line["index"] for line in lines) == sorted({line["index"] for line in lines})
        assert len(lines) == load_yaml(root / "config/smoke.yaml")["ruler_hqa"]["eval_questions"]
    assert not list((root / SYSTEM).glob("*.partial"))

    with sqlite3.connect(root / RUN / "mlflow.db") as db:
        statuses = [status for (status,) in db.execute("SELECT status FROM runs")]
    assert "RUNNING" not in statuses and "KILLED" in statuses
