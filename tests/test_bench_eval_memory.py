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


def test_the_window_benchmark_cuts_the_same_prompt_as_the_whole_tokenization(tmp_path, capsys):
    """`make bench`'s long-context window row, at small sizes: each path measured in a fresh
    process, the same prompt cut by both, the figures printed."""
    spec = importlib.util.spec_from_file_location("bench", SCRIPT.parent / "bench.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    runs = bench.bench_context_window(tmp_path, cap=3000, sizes=(0.6, 0.3))
    assert set(runs) == {(0.6, "window"), (0.3, "window"), (0.3, "whole")}
    assert runs[0.3, "window"]["prompt_sha"] == runs[0.3, "whole"]["prompt_sha"]
    assert runs[0.6, "window"]["megabytes"] == pytest.approx(0.6, rel=0.1)
    assert all(r["peak_rss_mb"] > r["above_context_mb"] > 0 for r in runs.values())
    out = capsys.readouterr().out
    assert "both cut the same prompt" in out and "per MB of context" in out
