"""What the plan and an evaluation ask of a benchmark. Each benchmark module declares one
`Benchmark`; the plan (memrepro.config), the evaluation loop (memrepro.evaluation, memrepro.jobs)
and `memrepro cost` call it through `memrepro.benchmarks.benchmark(name)` and name no benchmark."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepro.benchmarks import Task

Row = dict[str, Any]
RowsOf = Callable[[str, Path], list[Row]]  # a task's name and set -> its rows
Sets = dict[int, list[str]]  # a length -> the tasks one evaluation job covers there


def input_question(task: Task, row: Row) -> str:
    """The row's `input`: the question without its context."""
    return row["input"]


def official_direct_prompt(task: Task, row: Row, context: str) -> str:
    """MemAgent's official direct-generation prompt: the context, then the question."""
    from memrepro.baselines.longcontext import official_prompt

    return official_prompt(context, row["input"])


def row_chunks(
    row: Row, pool: Sequence[str] | None, tokenizer: Any, chunk_tokens: int
) -> Iterator[str]:
    """What a memory agent reads of a row: its context (stored, or rebuilt from doc ids and the
    pool) in `chunk_tokens`-token chunks of the evaluated model's tokenizer."""
    from memrepro.agents.chunking import token_chunks
    from memrepro.data.ruler_hqa import context_pieces

    return token_chunks(tokenizer, context_pieces(row, pool), chunk_tokens)


EVAL_ROW_FIELDS = ("index", "input", "answers")  # what scoring reads of a synthesized row


def jsonl_rows(task: Task, data: Path, tokenizer: Any) -> list[Row]:
    """The set's rows as our synthesis writes them (JSONL; each row knows its token count)."""
    from memrepro.data.io import read_jsonl

    return read_jsonl(data, required=EVAL_ROW_FIELDS)


def no_settings(config: Row) -> Row:
    return {}


def fixed_budget(tokens: int) -> Callable[[Task], int]:
    """An output budget that is the same for every task of the benchmark."""

    def budget(task: Task) -> int:
        return tokens

    return budget


def no_sets(config: Row, system_id: str, system: Row, kind: Any) -> Sets:
    return {}


def no_check(config: Row) -> None:
    return None


@dataclass(frozen=True)
class Evidence:
    """Where a benchmark marks each question's gold evidence, and how it is read.
    - `file(config)`: the file holding the marks (an input of the jobs that read them);
    - `contexts(rows, file, pool)`: each row's evidence alone, rendered as its context renders
      it (`pool`: RULER-HQA's document pool, where a benchmark's rows may store doc ids)."""

    file: Callable[[Row], Path]
    contexts: Callable[[list[Row], Path, Path | None], list[str]]


@dataclass(frozen=True)
class Benchmark:
    """A benchmark, as the plan and an evaluation job see it.

    The plan:
    - `sets(config, system_id, system, kind)`: length -> the tasks one evaluation job of the
      system covers there (one job per length; an empty list plans none).
    - `chosen_per_system`: its own config block lists the systems that run it (the probe),
      rather than each system's `benchmarks`.
    - `lengths`: its sets have a length axis; without one every job and record is at length 0
      (`memrepro.benchmarks.NO_LENGTH`). `length_unit`: what a length counts (documents, tokens).
    - `same_questions`: its sets ask the same questions, in the same order, at every length
      (RULER-HQA: the 128 dev questions among ever more documents). A system that reads no
      context then runs at one length, and its records stand for every length.
    - `data(config, length, tasks)`: the files an evaluation job at `length` reads, one per
      task (in the results directory: built by its data jobs, or downloaded).
    - `reads_pool`: its rows may store document ids, resolved in RULER-HQA's document pool.
    - `check_data(config)`: checks its data while the plan is made, where it can (a dataset on
      this machine), so that bad rows stop the run before any job.
    - `shards_as`: the benchmark whose `evaluation.shards` steps split its jobs (default: its own).
    - `job_name(config)`: the last segment of its evaluations' paths where not their length (one's
      own datasets: the custom config's name, so two named configs keep their own files).
    - `row_settings(config)`, `instance_settings(config)`: what its evaluation jobs read of the
      config beyond the system's settings (per row; as instances, memorize jobs too). Only what
      they read: a key it does not add cannot rerun its jobs.
    - `sizes(config, tasks, length)`: (questions, context tokens) per task of an evaluation at
      `length`, as `memrepro cost` prices it; None where its instances' own shapes size it.
    - `instance_shapes(config, settings)`: for `memrepro cost`, (count, (chunks, tokens per chunk,
      questions), source) of the instances an evaluation of its samples made instances reads;
      None where they are its own instances, sized by the paper's statistics of the split of
      its name, each source's instances.
    - `sized_as(config)`: (count, sources) where its tasks are no data sources: that many
      instances, each as large as the largest of these sources' in any split the paper sizes
      (Table 5's example: one, of any source it may be found in).
    - `instances`: its sets are Mem-α instances (chunks, then the questions asked after them),
      read by Mem-α's framework, MEM1 and the Mem-α baselines.
    - `retrieves_documents`: a RAG baseline retrieves whole documents on it (False: fixed chunks;
      None: either). `pool_docs`: the documents all its samples draw theirs from (RULER-HQA's
      dev pool), so that a job embeds each at most once however many samples hold it.
    - `evidence`: where it marks each question's gold evidence (None: it marks none), what the
      oracle control reads.

    An evaluation:
    - `read_rows(task, data, tokenizer)`: a task's rows, for the systems that answer per row.
    - `instance_rows(settings, tokenizer, pool)`: its sets as Mem-α instances (its own, or its
      samples made instances); None where they cannot be.
    - `question(task, row)`: what a memory agent (or a retriever) is asked, without the context.
    - `direct_prompt(task, row, context)`: the whole prompt of direct generation.
    - `output_tokens(task)`: the direct-generation budget when the config sets none.
    - `score(task, row, response)`: the per-sample scores; `score` in [0, 1] is the paper's
      metric, the rest are reported beside it.

    The reports:
    - `task_labels`: a task's column header in the paper, where its tasks have one.
    """

    name: str
    score: Callable[[Task, Row, str], dict[str, Any]]
    output_tokens: Callable[[Task], int]
    data: Callable[[Row, int, tuple[str, ...]], list[Path]]
    sets: Callable[[Row, str, Row, Any], Sets] = no_sets
    reads_pool: bool = False
    check_data: Callable[[Row], None] = no_check
    chosen_per_system: bool = False
    lengths: bool = True
    same_questions: bool = False
    length_unit: str = "documents"
    shards_as: str | None = None
    job_name: Callable[[Row], str | None] | None = None
    row_settings: Callable[[Row], Row] = no_settings
    instance_settings: Callable[[Row], Row] = no_settings
    sizes: Callable[[Row, list[str], int], list[tuple[int, int]]] | None = None
    instance_shapes: Callable[[Row, Row], list[tuple[int, tuple[int, int, int], str]]] | None = None
    instances: bool = False
    retrieves_documents: bool | None = True
    sized_as: Callable[[Row], tuple[int, list[str]]] | None = None
    pool_docs: int | None = None
    evidence: Evidence | None = None
    read_rows: Callable[[Task, Path, Any], list[Row]] = jsonl_rows
    instance_rows: Callable[[Row, Any, Path | None], RowsOf] | None = None
    question: Callable[[Task, Row], str] = input_question
    direct_prompt: Callable[[Task, Row, str], str] = official_direct_prompt
    task_labels: Mapping[str, str] = field(default_factory=dict)
