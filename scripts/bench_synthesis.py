"""RULER-HQA eval-set synthesis: ours (`hqa-pool` once, then one `eval-set` job per size) against
MemAgent's official `different_docs_eval.py`, on the same HotpotQA-schema dev file.

The official script is not vendored: `official` below re-implements what MemAgent's
official RULER-HQA synthesis does (sorted de-duplicated pool, the global
`random` seeded 42, per sample an exclusion list over the whole pool and `random.sample` from
it, `Random(4).shuffle`, the text joined per sample up to 10,000 documents and doc ids above,
`tqdm.contrib.concurrent.process_map` over `os.cpu_count()` workers with chunksize 1, one
`json.dump`). It writes no token counts; ours also counts every sample's tokens.

Each step runs as its own process (ours through the `memrepro` CLI, exactly as the rules run it);
wall time and peak RSS are that process's (`os.wait4`). Run by scripts/bench.py.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

STORE_IDS_ABOVE = 10000  # the official threshold


def run_measured(command: Sequence[str], cwd: Path | None = None) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one child process; raises if it fails."""
    began = time.perf_counter()
    child = subprocess.Popen(
        list(command), cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - began
    stderr = child.stderr.read().decode(errors="replace") if child.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{command[:4]} failed:\n{stderr[-3000:]}")
    return seconds, usage.ru_maxrss / 1024


# --- the official algorithm (module globals, as its forked workers see them) -----------------

DOCS: list[str] = []
QUESTIONS: list[dict] = []
N_DOCS = 0


def _official_sample(index: int) -> dict:
    question = QUESTIONS[index]
    own = question["doc_ids"]
    if len(DOCS) > N_DOCS:
        others = [i for i in range(len(DOCS)) if i not in own]
        doc_ids = own + random.sample(others, N_DOCS - len(own))
    else:
        doc_ids = list(range(len(DOCS)))
    random.Random(4).shuffle(doc_ids)
    if N_DOCS > STORE_IDS_ABOVE:
        context: str | list[int] = doc_ids
    else:
        context = "\n\n".join(f"Document {i + 1}:\n{DOCS[d]}" for i, d in enumerate(doc_ids))
    return {
        "context": context,
        "input": question["question"],
        "answers": [question["answer"]],
        "num_docs": N_DOCS,
        "index": index,
    }


def official(dev: Path, indices: Path, n_docs: int, out: Path) -> None:
    global DOCS, QUESTIONS, N_DOCS
    from tqdm.contrib.concurrent import process_map

    records = json.loads(dev.read_text())
    DOCS = sorted(
        {title + "\n" + "".join(sentences) for r in records for title, sentences in r["context"]}
    )
    position = {doc: i for i, doc in enumerate(DOCS)}
    QUESTIONS = [
        {
            "question": r["question"],
            "answer": r["answer"],
            "doc_ids": [position[t + "\n" + "".join(s)] for t, s in r["context"]],
        }
        for r in records
    ]
    N_DOCS = n_docs
    random.seed(42)
    wanted = json.loads(indices.read_text())
    rows = process_map(_official_sample, wanted, max_workers=os.cpu_count(), chunksize=1)
    with out.open("w") as handle:
        json.dump(rows, handle)


# --- ours, through the CLI --------------------------------------------------------------------


def memrepro(*args: str) -> list[str]:
    return [sys.executable, "-m", "memrepro.cli", *args]


def ours_pool(work: Path) -> list[str]:
    return memrepro(
        *("--log", str(work / "logs/pool.log"), "hqa-pool", "--settings", "{}"),
        *("--dev-raw", str(work / "dev.json"), "--tokenizer", str(work / "tokenizer")),
        *("--out-docs", str(work / "pool_docs.parquet")),
        *("--out-questions", str(work / "pool_questions.parquet")),
    )


def ours_eval_set(work: Path, n_docs: int, questions: int, store_ids_above: int) -> list[str]:
    settings = {
        "n_docs": n_docs,
        "eval_questions": questions,
        "store_ids_above": store_ids_above,
        "seed": 42,
    }
    return memrepro(
        *("--log", str(work / f"logs/eval_{n_docs}.log"), "eval-set"),
        *("--settings", json.dumps(settings)),
        *("--pool-docs", str(work / "pool_docs.parquet")),
        *("--pool-questions", str(work / "pool_questions.parquet")),
        *("--dev", str(work / "dev_filtered.jsonl"), "--tokenizer", str(work / "tokenizer")),
        *("--out", str(work / f"ours_{n_docs}_{store_ids_above}.jsonl")),
    )


def write_indices(work: Path, questions: int) -> None:
    """The filtered dev questions: the first `questions` (as `dev.jsonl` rows and as a list)."""
    indices = list(range(questions))
    (work / "indices.json").write_text(json.dumps(indices))
    (work / "dev_filtered.jsonl").write_text("".join(f'{{"index": {i}}}\n' for i in indices))


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "--official":  # a child: python bench_synthesis.py --official ...
        dev, indices, n_docs, out = args[1:]
        official(Path(dev), Path(indices), int(n_docs), Path(out))


if __name__ == "__main__":
    main()
