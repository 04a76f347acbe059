"""verl's training rows for MemAgent: the question in parquet, the documents in a SQLite store.

verl's v1 trainer copies every column of a dataset row onto every conversation row it keeps in
TransferQueue (up to max_chunks + 1 per rollout, rollout.n rollouts per question), so a row holds
only the question and a `context_id`; the agent loop reads the document from the store by id.

Parquet row (what verl's RLHFDataset reads with `data.prompt_key=prompt`):
    prompt        [{"role": "user", "content": question}]  (verl's `raw_prompt`; the agent loop
                  builds its own prompts, the question is here for verl's length filter and logs)
    data_source   the row's `data_source`, else DATA_SOURCE
    agent_name    AGENT_NAME (the agent loop verl runs for the row)
    reward_model  {"style": "rule", "ground_truth": answers}
    extra_info    {index, question, answers, context_id, context_store (absolute path),
                   chunk_tokens, memory_tokens, final_tokens, max_chunks,
                   verifier (the reward's `\\boxed{}` verifier: "official" | "extended")}

The store is one table `contexts(id TEXT PRIMARY KEY, text TEXT)`; an id is the sha256 of the
text, so identical documents are stored once. It must sit on a file system every Ray worker
reads (the shared disk of a cluster): the rows name it by absolute path.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from memrepro.data.io import atomic_path
from memrepro.data.ruler_hqa import DATA_SOURCE
from memrepro.scoring.verifier import DEFAULT_VERIFIER, Verifier, check_verifier
from memrepro.train.memalpha_rollout import check_instance
from memrepro.train.rollout import parse_row
from memrepro.verl import AGENT_NAME, MEMALPHA_AGENT_NAME

AGENT_KEYS = ("chunk_tokens", "memory_tokens", "final_tokens")

_STRINGS = pa.list_(pa.string())


def _row_schema(extra_info: list[tuple[str, pa.DataType]]) -> pa.Schema:
    """verl's row columns (RLHFDataset), with an agent's own `extra_info` fields."""
    return pa.schema(
        [
            ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
            ("data_source", pa.string()),
            ("agent_name", pa.string()),
            ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", _STRINGS)])),
            ("extra_info", pa.struct(extra_info)),
        ]
    )


SCHEMA = _row_schema(
    [
        ("index", pa.int64()),
        ("question", pa.string()),
        ("answers", _STRINGS),
        ("context_id", pa.string()),
        ("context_store", pa.string()),
        *[(key, pa.int64()) for key in AGENT_KEYS],
        ("max_chunks", pa.int64()),
        ("verifier", pa.string()),
    ]
)
MEMALPHA_SCHEMA = _row_schema(
    [
        ("index", pa.int64()),
        ("instance_id", pa.string()),
        ("context_store", pa.string()),
        ("settings", pa.string()),
    ]
)


def write_verl_dataset(
    rows: Sequence[Mapping[str, Any]],
    parquet_path: str | os.PathLike[str],
    store_path: str | os.PathLike[str],
    agent: Mapping[str, Any],
    max_chunks: int,
    verifier: Verifier = DEFAULT_VERIFIER,
) -> dict[str, Any]:
    """Write training rows ({index, input, answers, context, optional data_source}) as verl's
    parquet plus the context store; both appear atomically (store first). Returns a summary.
    Every row names `verifier`, the reward's `\\boxed{}` verifier (memrepro.verl.reward)."""
    budgets = _budgets(agent, max_chunks)
    check_verifier(verifier)
    if not rows:
        raise ValueError(f"{parquet_path}: no training rows to write")
    store = Path(store_path).resolve()
    contexts: dict[str, str] = {}
    records = []
    for position, row in enumerate(rows):
        question, answers, context = parse_row(dict(row), position)
        index = row.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            raise ValueError(f"training row {position}: 'index' must be an integer, got {index!r}")
        data_source = row.get("data_source", DATA_SOURCE)
        if not isinstance(data_source, str) or not data_source:
            raise ValueError(f"training row {position} (index {index}): bad 'data_source'")
        context_id = hashlib.sha256(context.encode("utf-8")).hexdigest()
        contexts[context_id] = context
        records.append(
            {
                "prompt": [{"role": "user", "content": question}],
                "data_source": data_source,
                "agent_name": AGENT_NAME,
                "reward_model": {"style": "rule", "ground_truth": answers},
                "extra_info": {
                    "index": index,
                    "question": question,
                    "answers": answers,
                    "context_id": context_id,
                    "context_store": str(store),
                    **budgets,
                    "verifier": verifier,
                },
            }
        )
    return _publish(records, SCHEMA, parquet_path, store, contexts)


def _publish(
    records: list[dict[str, Any]],
    schema: pa.Schema,
    parquet_path: str | os.PathLike[str],
    store: Path,
    contents: Mapping[str, str],
) -> dict[str, Any]:
    """The store, then the parquet rows naming its entries, each appearing atomically."""
    _write_store(store, contents)
    with atomic_path(parquet_path) as tmp:
        pq.write_table(pa.Table.from_pylist(records, schema=schema), tmp)
    return {
        "rows": len(records),
        "contexts": len(contents),
        "parquet": str(Path(parquet_path).resolve()),
        "store": str(store),
    }


def _budgets(agent: Mapping[str, Any], max_chunks: int) -> dict[str, int]:
    budgets = {key: agent.get(key) for key in AGENT_KEYS}
    budgets["max_chunks"] = max_chunks
    for key, value in budgets.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"agent setting {key!r} must be a positive integer, got {value!r}")
    return budgets


def _write_store(path: Path, contexts: Mapping[str, str]) -> None:
    with atomic_path(path) as tmp:
        connection = sqlite3.connect(tmp)
        try:
            connection.execute("CREATE TABLE contexts (id TEXT PRIMARY KEY, text TEXT NOT NULL)")
            connection.executemany("INSERT INTO contexts VALUES (?, ?)", contexts.items())
            connection.commit()
        finally:
            connection.close()


def memalpha_loop_settings(
    job: Mapping[str, Any],
    memory_tokenizer: str,
    qa_model: str,
    qa_tokenizer: str,
    validation: bool = False,
) -> str:
    """The JSON every Mem-α row carries for `memrepro.verl.agent_loop.loop_settings`: the policy's
    memorisation settings, the reward's weights and judge, the QA step, the QA server's model
    (`memory_tokenizer`: o200k_base or a tokenizer directory every node reads), and whether the
    row validates (its rollout is then scored by r1 alone)."""
    return json.dumps(
        {
            "agent": dict(job["agent"]),
            "beta": job["beta"],
            "gamma": job["gamma"],
            "judge": dict(job["judge"]),
            "qa": dict(job["qa"]),
            "memory_tokenizer": memory_tokenizer,
            "qa_model": qa_model,
            "qa_tokenizer": qa_tokenizer,
            "qa_concurrency": job["qa_server"]["concurrency"],
            "validation": validation,
        },
        sort_keys=True,
    )


def write_memalpha_verl_dataset(
    instances: Sequence[Mapping[str, Any]],
    parquet_path: str | os.PathLike[str],
    store_path: str | os.PathLike[str],
    settings: str,
) -> dict[str, Any]:
    """Mem-α instances (`data.memalpha` rows: index, task, prompt, chunks, questions, answers)
    as verl rows naming their instance in the store (JSON, by sha256), `settings` on each. The
    prompt is the instance's task description (verl's length filter and logs only: the loop
    builds every chunk's prompt itself)."""
    if not instances:
        raise ValueError(f"{parquet_path}: no training instances to write")
    store = Path(store_path).resolve()
    contents: dict[str, str] = {}
    records = []
    for position, row in enumerate(instances):
        check_instance(dict(row), position)
        if not isinstance(row.get("index"), int):
            raise ValueError(f"training row {position}: 'index' must be an integer")
        keep = ("index", "task", "prompt", "chunks", "questions", "answers")
        text = json.dumps({key: row.get(key) for key in keep}, ensure_ascii=False, sort_keys=True)
        instance_id = hashlib.sha256(text.encode("utf-8")).hexdigest()
        contents[instance_id] = text
        description = row.get("prompt") or f"Memorize {len(row['chunks'])} chunks."
        records.append(
            {
                "prompt": [{"role": "user", "content": description}],
                "data_source": row["task"],
                "agent_name": MEMALPHA_AGENT_NAME,
                "reward_model": {
                    "style": "rule",
                    "ground_truth": [json.dumps(answer) for answer in row["answers"]],
                },
                "extra_info": {
                    "index": int(row["index"]),
                    "instance_id": instance_id,
                    "context_store": str(store),
                    "settings": settings,
                },
            }
        )
    return _publish(records, MEMALPHA_SCHEMA, parquet_path, store, contents)


def load_instance(store_path: str | os.PathLike[str], instance_id: str) -> dict[str, Any]:
    """A Mem-α instance written by `write_memalpha_verl_dataset`."""
    return json.loads(load_context(store_path, instance_id))


_connections: dict[tuple[int, str, int, int], sqlite3.Connection] = {}
_lock = threading.Lock()


def load_context(store_path: str | os.PathLike[str], context_id: str) -> str:
    """The document `context_id` of a store.

    One read-only connection per process and store file, shared by threads (the agent loop reads
    from an executor) under a lock. A store replaced on disk (a new inode or mtime) gets a new
    connection, so a rewritten store is never read stale.
    """
    path = Path(store_path).resolve()
    try:
        stat = path.stat()
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"{path}: no such context store") from exc
    key = (os.getpid(), str(path), stat.st_ino, stat.st_mtime_ns)
    with _lock:
        connection = _connections.get(key)
        if connection is None:
            # immutable: no file locking, which network file systems handle badly; a store is
            # written once and replaced only by an atomic rename
            uri = f"{path.as_uri()}?mode=ro&immutable=1"
            connection = sqlite3.connect(uri, uri=True, check_same_thread=False)
            _connections[key] = connection
        found = connection.execute(
            "SELECT text FROM contexts WHERE id = ?", (str(context_id),)
        ).fetchone()
    if found is None:
        raise KeyError(f"{path}: no context with id {context_id!r}")
    return found[0]
