"""A dataset of one's own (`custom.datasets`): long-context QA rows in the schema of
memrepro.data.custom, each dataset a task scored by the metric its config names
(memrepro.scoring.answers). The systems `custom.systems` names (or all) run it: MemAgent, the
long-context, RAG and Mem0 baselines per row; Mem-α's framework and MEM1 through instances, the
rows that share a context grouped as one instance (its context cut into chunks, then its
questions asked), as MemoryAgentBench groups its questions."""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

from memrepro.benchmarks import CUSTOM_BENCHMARK, NO_LENGTH, Task
from memrepro.benchmarks.base import EVAL_ROW_FIELDS, Benchmark, RowsOf, Sets, fixed_budget
from memrepro.layout import ConfigError, raw_file, results_dir

OUTPUT_TOKENS = 1024  # a direct answer's budget where the system sets none (a summary fits)
WORDS_TO_TOKENS = 1.3  # for `memrepro cost`: Qwen2.5's tokenizer on English prose, about


def datasets(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return config.get("custom", {}).get("datasets", {})


def config_name(config: dict[str, Any]) -> str | None:
    """The custom config's name (`custom.name`; None without a `custom` block): its evaluations'
    and table's files carry it, so two configs of one's own data never write over each other."""
    return (config.get("custom") or {}).get("name")


def sets(config: dict[str, Any], system_id: str, system: dict[str, Any], kind: Any) -> Sets:
    """The systems `custom.systems` names (`all`: every configured one; a variant never: a
    memory-ablation setting, a repeat at another sampling or training seed; nor a question-aware
    MemAgent, the same as its model's default on rows): one job of every dataset."""
    spec = config.get("custom")
    variant = any(key in system for key in ("ablation_of", "seed_of", "training_seed_of"))
    if (
        not spec
        or variant
        or system.get("question_aware")
        or not kind.runs(system, CUSTOM_BENCHMARK)
    ):
        return {}
    chosen = spec["systems"]
    if chosen != "all" and system["name"] not in chosen:
        return {}
    return {NO_LENGTH: list(spec["datasets"])}


def data(config: dict[str, Any], length: int, tasks: tuple[str, ...]) -> list[Path]:
    return [set_file(config, name) for name in tasks]


def set_file(config: dict[str, Any], name: str) -> Path:
    """A dataset's checked rows (the custom_set job's output)."""

    return results_dir(config) / "data" / CUSTOM_BENCHMARK / f"{name}.jsonl"


def source_file(config: dict[str, Any], name: str) -> Path:
    """Where download_data puts a dataset's file (its `source`, a local path or a URL)."""

    return raw_file(config, datasets(config)[name]["source"])


def set_settings(config: dict[str, Any], name: str) -> dict[str, Any]:
    """What the custom_set job checks a dataset's rows with, and the metric it tags them with."""
    spec = datasets(config)[name]
    return {
        "dataset": name,
        "metric": spec["metric"],
        "max_context_words": spec.get("max_context_words"),
    }


def check_data(config: dict[str, Any]) -> None:
    """Each dataset whose source is a file on this machine, checked while the plan is made (its
    golds against its metric too): a bad row stops the run before any job (a URL's rows: by its
    custom_set job)."""
    from memrepro.data.custom import CustomDataError, read_custom_rows
    from memrepro.data.sources import local_path

    for name, spec in datasets(config).items():
        source = config["sources"][spec["source"]]["url"]
        path = local_path(source)
        if path is None:
            continue
        try:
            read_custom_rows(path, spec.get("max_context_words"), spec["metric"])
        except CustomDataError as exc:
            raise ConfigError(f"custom dataset {name} (sources.{spec['source']}): {exc}") from None


def read_rows(task: Task, data: Path, tokenizer: Any) -> list[dict[str, Any]]:
    """A dataset's checked rows, each measured in the evaluated model's tokens."""
    from memrepro.agents.chunking import text_tokens

    rows = _checked_rows(data)
    for row in rows:
        row["num_tokens"] = text_tokens(tokenizer, row["context"])
    return rows


def _checked_rows(data: Path) -> list[dict[str, Any]]:
    """The custom_set job's rows, each with its context and its documents."""
    from memrepro.data.custom import with_context
    from memrepro.data.io import read_jsonl

    return [with_context(row) for row in read_jsonl(data, required=(*EVAL_ROW_FIELDS, "metric"))]


def score(task: Task, row: dict[str, Any], response: str) -> dict[str, Any]:
    from memrepro.scoring.answers import score_answers

    return score_answers(row["metric"], response, row["answers"], task.answer_format)


def instances(config: dict[str, Any]) -> dict[str, Any]:
    """How Mem-α's framework reads the datasets: chunk size, the source its questions are asked
    as (its query prompt), the memorize prompt; by default as it reads RULER-HQA's samples
    (`memalpha.ruler_hqa`: MemoryAgentBench's RULER-QA chunks)."""
    return config["custom"].get("instances") or config["memalpha"]["ruler_hqa"]


def instance_settings(config: dict[str, Any]) -> dict[str, Any]:
    return {CUSTOM_BENCHMARK: instances(config)}


def instance_rows(s: dict[str, Any], tokenizer: Any, pool: Path | None) -> RowsOf:
    """A dataset's rows as Mem-α instances: the rows of one context make one instance (its
    first row's id), the context cut into chunks of `tokenizer`'s tokens, then every row's
    question; each scored by the dataset's metric."""
    from memrepro.benchmarks.base import row_chunks
    from memrepro.data.custom import group_by_context
    from memrepro.data.tokens import count_tokens

    spec = s[CUSTOM_BENCHMARK]

    def instance(group: list[dict[str, Any]]) -> dict[str, Any]:
        chunks = list(row_chunks(group[0], None, tokenizer, spec["chunk_tokens"]))
        return {
            "index": group[0]["index"],
            "instance_id": group[0]["id"],
            "prompt": spec["prompt"],
            "task": spec["source"],
            "metric": group[0]["metric"],
            "chunks": chunks,
            "questions": [row["input"] for row in group],
            "answers": [row["answers"] for row in group],
            "num_tokens": sum(count_tokens(tokenizer, chunks)),
        }

    def rows_of(name: str, data: Path) -> list[dict[str, Any]]:
        return [instance(group) for group in group_by_context(_checked_rows(data))]

    return rows_of


def _measured(config: dict[str, Any], name: str) -> tuple[int, int, int]:
    """(rows, mean context tokens, contexts) of a dataset, from its file where this machine has
    it (its source, or the downloaded copy): `memrepro cost` sizes a dataset by its rows."""
    from memrepro.data.sources import local_path

    spec = datasets(config)[name]
    source = local_path(config["sources"][spec["source"]]["url"])
    for path in (source, source_file(config, name)):
        if path is not None and path.is_file():
            stat = path.stat()
            return _file_shape(path.resolve(), stat.st_size, stat.st_mtime_ns)
    raise ConfigError(
        f"custom dataset {name}: its file is not on this machine yet, so `memrepro cost` cannot "
        f"size it; run `./pipeline {source_file(config, name)}` first"
    )


@functools.lru_cache(maxsize=16)
def _file_shape(path: Path, size: int, mtime_ns: int) -> tuple[int, int, int]:
    """(rows, mean context tokens, contexts) of a file, read once per version of it: every
    evaluate and memorize job of a plan sizes the same datasets."""
    from memrepro.data.custom import context_words, group_by_context, read_custom_rows

    rows = read_custom_rows(path)
    tokens = round(context_words(rows) * WORDS_TO_TOKENS)
    return len(rows), tokens, len(group_by_context(rows))


def sizes(config: dict[str, Any], tasks: list[str], length: int) -> list[tuple[int, int]]:
    """(questions, context tokens) per dataset, for `memrepro cost`."""
    return [_measured(config, name)[:2] for name in tasks]


def instance_shapes(
    config: dict[str, Any], s: dict[str, Any]
) -> list[tuple[int, tuple[int, int, int], str]]:
    """For `memrepro cost`: per dataset, its contexts as instances (count, (chunks, tokens per
    chunk, questions per instance), source)."""
    spec = instances(config)
    shapes = []
    for name in s["tasks"]:
        rows, tokens, contexts = _measured(config, name)
        chunks = max(math.ceil(tokens / spec["chunk_tokens"]), 1)
        questions = max(round(rows / contexts), 1)
        shapes.append((contexts, (chunks, spec["chunk_tokens"], questions), spec["source"]))
    return shapes


BENCHMARK = Benchmark(
    CUSTOM_BENCHMARK,
    score=score,
    output_tokens=fixed_budget(OUTPUT_TOKENS),
    sets=sets,
    chosen_per_system=True,
    lengths=False,
    job_name=config_name,
    data=data,
    check_data=check_data,
    read_rows=read_rows,
    instance_rows=instance_rows,
    instance_settings=instance_settings,
    instance_shapes=instance_shapes,
    sizes=sizes,
    retrieves_documents=None,  # a row's documents, or chunks: both units run
)
