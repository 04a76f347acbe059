"""memrl.run_compare: what a run computed, compared between two results directories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memrl import run_compare


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def step(seconds: float, loss: float) -> str:
    return json.dumps({"step": 0, "pg_loss": loss, "seconds": seconds}) + "\n"


RUN = {
    "eval/ruler_hqa/s/10.metrics.json": '{"accuracy": 0.5}',
    "tables/table1.csv": "a,b\n1,2\n",
    "tables/table1.md": "run smoke, invocation 1",
    "raw/x.json.manifest.json": '{"path": "results/smoke/raw/x.json"}',
    "checkpoints/r/stage1/train_metrics.jsonl": step(1.5, 0.25),
    "logs/evaluate/x.log": "took 3 s",
}


def test_equal_numbers_compare_equal_whatever_the_run_name_times_and_logs(tmp_path):
    a = write(tmp_path / "a", RUN)
    b = write(tmp_path / "b", {**RUN, "tables/table1.md": "run other, invocation 2",
                               "raw/x.json.manifest.json": '{"path": "results/other/raw/x.json"}',
                               "checkpoints/r/stage1/train_metrics.jsonl": step(0.9, 0.25),
                               "logs/evaluate/x.log": "took 5 s"})  # fmt: skip
    found = run_compare.differences(a, b)
    assert found["differ"] == found["only_a"] == found["only_b"] == []
    assert found["equal"] == [
        "checkpoints/r/stage1/train_metrics.jsonl",
        "eval/ruler_hqa/s/10.metrics.json",
        "tables/table1.csv",
    ]


def test_a_changed_number_or_a_missing_file_is_named_and_fails(tmp_path, capsys):
    a = write(tmp_path / "a", RUN)
    b = write(tmp_path / "b", {**RUN, "checkpoints/r/stage1/train_metrics.jsonl": step(1.5, 0.26),
                               "eval/ruler_hqa/s/20.metrics.json": "{}"})  # fmt: skip
    (b / "tables/table1.csv").unlink()
    found = run_compare.differences(a, b)
    assert found["differ"] == ["checkpoints/r/stage1/train_metrics.jsonl"]
    assert (found["only_a"], found["only_b"]) == (
        ["tables/table1.csv"],
        ["eval/ruler_hqa/s/20.metrics.json"],
    )
    with pytest.raises(SystemExit) as exit_:
        run_compare.main([str(a), str(b)])
    assert exit_.value.code == 1
    assert "differ: checkpoints/r/stage1/train_metrics.jsonl" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="not a results directory"):
        run_compare.main([str(a), str(tmp_path)])
