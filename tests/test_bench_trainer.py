"""scripts/bench_trainer.py runs the reference trainer's phases and prints every figure."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bench_trainer.py"
MINIMAL = [
    *("--vocab-size", "400", "--hidden-size", "16", "--layers", "1", "--heads", "2"),
    *("--kv-heads", "1", "--intermediate-size", "16"),
    *("--rows", "2", "--docs", "10", "--group-size", "2", "--chunk-tokens", "24"),
    *("--max-chunks", "2", "--memory-tokens", "3", "--final-tokens", "3", "--mini-batches", "2"),
    *("--generation-batch", "4", "--micro-batch-rows", "4", "--repeats", "2"),
]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_trainer", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_prints_every_figure(bench, capsys: pytest.CaptureFixture[str]):
    table = bench.main(MINIMAL)
    out = capsys.readouterr().out
    names = [name for name, _, _ in table]
    assert len(names) == 7
    for name, values, unit in table:
        assert len(values) == 2  # one per timed repeat, the warm-up left out
        assert all(math.isfinite(v) and v > 0 for v in values), (name, values)
        assert name in out and unit in out
    # 2 questions x 2 rollouts x (2 memory turns + 1 final answer), 3 tokens each at most
    assert "per step: 12 conversations" in out
    assert "timed update: 6 conversations" in out


def test_bench_rejects_more_rows_than_the_fixture_has(bench):
    with pytest.raises(SystemExit, match=r"the fixture hotpot_train_fixture\.json has 16"):
        bench.training_rows(17, 10, 0)
