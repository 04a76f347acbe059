"""Peak memory and time of a RULER-HQA evaluation as the context grows to 25,600 documents.

Each length is built as the `eval-set` rule builds it (doc ids above 10,000 documents), in its own
process, then evaluated in a fresh process through the evaluation job's own code path: the eval
set and the pool documents (`ruler_hqa_pool`'s parquet) are read, and
`memrepro.evaluation.evaluate` drives MemAgent over the streamed chunks (`token_chunks` over
`context_pieces`); the peak RSS is that process's. Only the model is
replaced by an instant engine, so the figures isolate what grows with length on the job's side
(a GPU engine's memory does not depend on the context length: every call is ~7K tokens).

The dev file is synthetic (HotpotQA schema, invented words): the real pool has 66,635 documents,
the packaged fixture only 72. Prints a table; asserts nothing about time or memory.

    python scripts/bench_eval_memory.py                       # 50 ... 25600 docs, ~2 min on 2 cores
    python scripts/bench_eval_memory.py --n-docs 50 25600 --questions 2
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

N_DOCS = (50, 400, 3200, 25600)
STORE_IDS_ABOVE = 10000  # as the official files; --store-ids-above 0 streams every length
POOL_QUESTIONS = 3000  # x 10 paragraphs: a 30,000-document pool, as large as 25,600 docs need


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-docs", type=int, nargs="+", default=list(N_DOCS))
    parser.add_argument("--questions", type=int, default=4, help="evaluated samples per length")
    parser.add_argument("--chunk-tokens", type=int, default=5000, help="the paper's chunk size")
    parser.add_argument("--store-ids-above", type=int, default=STORE_IDS_ABOVE)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)  # n_docs of one measurement
    parser.add_argument("--build", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def write_dev_file(path: Path, n_questions: int, seed: int = 0) -> None:
    """A HotpotQA dev-distractor-shaped file of invented paragraphs (~140 tokens each)."""
    rng = random.Random(seed)
    words = [
        f"{a}{b}"
        for a in ("ka", "lo", "mi", "nu", "ri", "se", "tu", "ve")
        for b in ("ban", "dor", "fel", "gim", "hal", "jor", "kes", "lin", "mor", "nad")
    ]
    records = []
    for q in range(n_questions):
        context = []
        for p in range(10):
            sentences = [" ".join(rng.choices(words, k=12)).capitalize() + "." for _ in range(9)]
            context.append([f"Title {q}-{p}", [sentences[0], *(" " + s for s in sentences[1:])]])
        records.append(
            {
                "_id": f"q{q}",
                "question": f"What is the {rng.choice(words)} of {rng.choice(words)}?",
                "answer": rng.choice(words),
                "supporting_facts": [[context[0][0], 0]],
                "context": context,
                "type": "bridge",
                "level": "hard",
            }
        )
    path.write_text(json.dumps(records))


class InstantEngine:
    """Answers every call at once: memory turns keep a short note, the final turn answers."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.calls = 0

    def chat(self, requests, sampling):
        from memrepro.engines.base import Completion

        self.calls += len(requests)
        return [
            Completion(
                text="noted"
                if r.messages[-1]["content"].rstrip().endswith("Updated memory:")
                else "Therefore, the answer is kaban."
            )
            for r in requests
        ]


def build_set(
    n_docs: int, work: Path, questions: int, store_ids_above: int = STORE_IDS_ABOVE
) -> Path:
    """The eval set at `n_docs` as the `eval-set` rule writes it, in its own process."""
    from transformers import AutoTokenizer

    from memrepro.data.io import write_jsonl_atomic
    from memrepro.data.ruler_hqa import build_eval_sets, read_pool

    tokenizer = AutoTokenizer.from_pretrained(str(work / "tokenizer"))
    pool = read_pool(work / "pool_docs.parquet", work / "pool_questions.parquet")
    indices = [q["index"] for q in pool.questions[:questions]]
    (rows,) = build_eval_sets(
        pool.questions,
        pool.docs,
        [n_docs],
        indices,
        tokenizer=tokenizer,
        store_ids_above=store_ids_above,
        doc_tokens=pool.tokens,
    ).values()
    path = work / f"eval_{n_docs}.jsonl"
    write_jsonl_atomic(path, rows)
    return path


def measure(n_docs: int, work: Path, chunk_tokens: int) -> dict:
    """The evaluation job alone: read the set and the pool, run MemAgent over every sample
    (`eval_seconds`: the agent loop alone, which streams doc-id contexts from the pool)."""
    from transformers import AutoTokenizer

    from memrepro.agents.memagent import MemAgentConfig
    from memrepro.benchmarks import Task
    from memrepro.data.io import read_jsonl, read_parquet
    from memrepro.evaluation import evaluate, workflow_runner
    from memrepro.systems.memagent import memagent_system

    began = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(str(work / "tokenizer"))
    rows = read_jsonl(work / f"eval_{n_docs}.jsonl")
    pool = read_parquet(work / "pool_docs.parquet", ["doc"])["doc"].to_pylist()
    task = Task("ruler_hqa", "hqa")
    engine = InstantEngine(tokenizer)
    agent = MemAgentConfig(chunk_tokens=chunk_tokens, memory_tokens=1024, final_tokens=1024)
    loop_began = time.perf_counter()
    predictions = evaluate(
        rows,
        workflow_runner(task, memagent_system(task, tokenizer, pool, agent), engine, None),
        work / f"predictions_{n_docs}.jsonl",
        batch_size=len(rows),
    )
    ended = time.perf_counter()
    (work / f"predictions_{n_docs}.jsonl").unlink()
    return {
        "n_docs": n_docs,
        "stored_as": "doc ids" if "doc_ids" in rows[0] else "text",
        "mean_tokens": sum(r["num_tokens"] for r in rows) / len(rows),
        "calls_per_sample": engine.calls / len(rows),
        "samples": len(predictions),
        "seconds": ended - began,
        "eval_seconds": ended - loop_began,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def prepare(work: Path, pool_questions: int | None = None) -> None:
    """The dev file, the tiny tokenizer and the pool files (`hqa-pool`) under `work`."""
    from memrepro.data.hotpotqa import load_hotpotqa
    from memrepro.data.ruler_hqa import build_doc_pool, write_pool
    from memrepro.data.sources import fixture_corpus
    from memrepro.models.tiny import build_tokenizer

    write_dev_file(work / "dev.json", pool_questions or POOL_QUESTIONS)
    tokenizer = build_tokenizer(fixture_corpus(), 2048, 1 << 30)
    tokenizer.save_pretrained(work / "tokenizer")
    pool = build_doc_pool(load_hotpotqa(work / "dev.json"), tokenizer)
    write_pool(work / "pool_docs.parquet", work / "pool_questions.parquet", pool)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.child is not None:
        if args.build:
            build_set(args.child, args.work, args.questions, args.store_ids_above)
        else:
            print(json.dumps(measure(args.child, args.work, args.chunk_tokens)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        prepare(work)
        print(
            f"{'docs':>6} {'stored as':>9} {'tokens/sample':>14} {'calls/sample':>13} "
            f"{'seconds':>8} {'peak RSS MB':>12}"
        )
        for n_docs in args.n_docs:
            command = [
                sys.executable,
                __file__,
                "--child",
                str(n_docs),
                "--work",
                str(work),
                "--questions",
                str(args.questions),
                "--chunk-tokens",
                str(args.chunk_tokens),
                "--store-ids-above",
                str(args.store_ids_above),
            ]
            subprocess.run([*command, "--build"], check=True, capture_output=True)
            out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            print(
                f"{r['n_docs']:>6} {r['stored_as']:>9} {r['mean_tokens']:>14,.0f} "
                f"{r['calls_per_sample']:>13.0f} {r['seconds']:>8.1f} {r['peak_rss_mb']:>12.0f}"
            )


if __name__ == "__main__":
    main()
