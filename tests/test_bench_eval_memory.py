"""scripts/bench_eval_memory.py measures the evaluation job's own path on text and doc-id sets."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bench_eval_memory.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_eval_memory", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_measures_text_and_doc_id_sets_through_the_evaluator(bench, tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "POOL_QUESTIONS", 3)  # a 30-document pool
    bench.prepare(tmp_path)
    results = {}
    for n_docs in (10, 20):
        bench.build_set(n_docs, tmp_path, questions=2)
        results[n_docs] = bench.measure(n_docs, tmp_path, chunk_tokens=200)
    assert results[10]["stored_as"] == "text" and results[10]["samples"] == 2
    assert results[20]["mean_tokens"] > 1.8 * results[10]["mean_tokens"]
    # every chunk is one memory call, then the final answer
    tokens = results[20]["mean_tokens"]
    assert results[20]["calls_per_sample"] >= tokens // 200 + 1
    assert all(r["peak_rss_mb"] > 0 for r in results.values())
