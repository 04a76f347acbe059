"""scripts/bench_synthesis.py: the official algorithm it times builds the sets ours builds."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("synthesis")
    bench_eval_memory = load("bench_eval_memory")
    bench_eval_memory.prepare(work, pool_questions=6)  # a 60-document pool
    load("bench_synthesis").write_indices(work, questions=4)
    return work


@pytest.mark.parametrize("n_docs", [20, 60])
def test_the_official_baseline_and_ours_agree_on_every_deterministic_part(work, n_docs):
    bench = load("bench_synthesis")
    seconds, peak = bench.run_measured(bench.ours_eval_set(work, n_docs, 4, store_ids_above=0))
    assert seconds > 0 and peak > 0
    ours = [json.loads(line) for line in (work / f"ours_{n_docs}_0.jsonl").read_text().splitlines()]
    out = work / f"official_{n_docs}.json"
    bench.run_measured(
        [
            sys.executable,
            str(SCRIPTS / "bench_synthesis.py"),
            "--official",
            str(work / "dev.json"),
            str(work / "indices.json"),
            str(n_docs),
            str(out),
        ]
    )
    official = json.loads(out.read_text())
    from memrepro.data.ruler_hqa import read_pool

    pool = read_pool(work / "pool_docs.parquet", work / "pool_questions.parquet")
    assert [r["index"] for r in official] == [r["index"] for r in ours] == [0, 1, 2, 3]
    for theirs, mine in zip(official, ours, strict=True):
        assert theirs["input"] == mine["input"] and theirs["answers"] == mine["answers"]
        documents = theirs["context"].split("\n\n")  # text below 10,000 documents
        assert len(documents) == len(mine["doc_ids"]) == n_docs
        own = set(pool.questions[mine["index"]]["doc_ids"])
        # the fixed Random(4) shuffle puts the question's documents in the same slots
        slots = [k for k, d in enumerate(mine["doc_ids"]) if d in own]
        assert all(documents[k].split("\n", 1)[1] in {pool.docs[d] for d in own} for k in slots)
        if n_docs == len(pool.docs):  # the whole pool: no draws at all, identical contexts
            assert [doc.split("\n", 1)[1] for doc in documents] == [
                pool.docs[d] for d in mine["doc_ids"]
            ]
