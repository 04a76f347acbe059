"""The jobs that build Mem-α's training sets again from their sources (memalpha.build): one
group's instances, its model filter, the merge into train and validation, and the comparison
with the released sets."""

from __future__ import annotations

import argparse
import functools
import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from memrepro.jobs.common import ask_in_waves, build_engine, log
from memrepro.tracking.record import JobRecord


def counter(tokenizer_dir: Path) -> Callable[[str], int]:
    """A text's token count under the tokenizer (repeated texts counted once)."""
    from memrepro.data.tokens import count_tokens
    from memrepro.models import load_counting_tokenizer

    tokenizer = load_counting_tokenizer(tokenizer_dir)
    return functools.lru_cache(maxsize=1 << 16)(lambda text: count_tokens(tokenizer, [text])[0])


def group_rng(seed: int, group: str, step: str) -> random.Random:
    """The generator of one group's step: its draws depend on (seed, group, step) alone."""
    return random.Random(f"{seed}:{group}:{step}")


def cmd_memalpha_source(args: argparse.Namespace, run: JobRecord) -> None:
    """One group's instances from its source files, before any model filter."""
    from memrepro.data.io import write_jsonl_atomic

    s = args.settings
    count = counter(args.tokenizer)
    rng = group_rng(s["seed"], s["group"], "build")
    where = f"memalpha.build.sources.{s['group']} ({', '.join(map(str, args.rows or []))})"
    built = BUILDERS[s["group"]](args, s, count, rng, where)
    if not built:
        raise SystemExit(f"{where}: no instance built (files too small for the builder's params?)")
    write_jsonl_atomic(args.out, built)
    run.log_metrics({"instances": len(built)})
    log.info("%s: %d instances", s["group"], len(built))


def _squad(args, s, count, rng, where):
    from memrepro.data.io import read_table_records
    from memrepro.data.memalpha_build.documents import squad_instances

    rows = [r for path in args.rows for r in read_table_records(path, _SQUAD, "SQuAD")]
    return squad_instances(rows, count, rng, where, **s["params"])


def _hotpotqa(args, s, count, rng, where):
    from memrepro.data.hotpotqa import load_hotpotqa
    from memrepro.data.memalpha_build.documents import hotpotqa_instances

    rows = [r for path in args.rows for r in load_hotpotqa(path)]
    return hotpotqa_instances(rows, count, rng, where, **s["params"])


def _perltqa(args, s, count, rng, where):
    from memrepro.data.io import read_json
    from memrepro.data.memalpha_build.conversations import perltqa_instances

    memories, questions = read_json(args.memories), read_json(args.questions)
    if isinstance(memories, dict):  # the v2 release: {character: record}
        memories = list(memories.values())
    for path, value in ((args.memories, memories), (args.questions, questions)):
        if not isinstance(value, list):
            raise SystemExit(f"{path}: expected a JSON list, got {type(value).__name__}")
    return perltqa_instances(
        memories, questions, f"memalpha.build.sources.perltqa ({args.memories})"
    )


def _lme_train(args, s, count, rng, where):
    from memrepro.data.io import read_json
    from memrepro.data.memalpha import instances_by_source
    from memrepro.data.memalpha_build.conversations import lme_train_instances

    rows = [r for path in args.rows for r in read_json(path)]
    grouped = instances_by_source(args.exclude)
    asked = {
        q
        for source in s["mab_sources"]
        for row in grouped.get(source, [])
        for q in row["questions"]
    }
    return lme_train_instances(rows, count, rng, where, exclude=asked, **s["params"])


def _ttl_train(args, s, count, rng, where):
    from memrepro.data.io import read_table_records
    from memrepro.data.memalpha_build.classification import TTL_SOURCES, ttl_instances, ttl_rows

    rows = [r for path in args.rows for r in read_table_records(path, _MAB, "MemoryAgentBench")]
    found = ttl_rows(rows, where)
    return [
        row
        for name in TTL_SOURCES
        for row in ttl_instances(name, found[name], count, rng, s["ttl_questions"], **s["params"])
    ]


def _pubmed(args, s, count, rng, where):
    from memrepro.data.io import read_table_records
    from memrepro.data.memalpha_build.classification import pubmed_instances

    rows = [r for path in args.rows for r in read_table_records(path, _PUBMED, "PubMed-RCT")]
    return pubmed_instances(rows, count, rng, where, **s["params"])


def _booksum(args, s, count, rng, where):
    from memrepro.data.io import read_table_records
    from memrepro.data.memalpha_build.booksum import MIN_CHUNKS, booksum_instances

    params = {"min_chunks": MIN_CHUNKS[s["recipe"]], **s["params"]}
    keywords = _keyword_golds(args.keywords, args.rows) if args.keywords else None
    return [  # file by file (train, then test), so an error names its file
        instance
        for path in args.rows
        for instance in booksum_instances(
            read_table_records(path, _BOOKSUM, "BookSum"),
            count,
            rng,
            f"memalpha.build.sources.booksum ({path})",
            keywords=keywords,
            **params,
        )
    ]


def _keyword_golds(path: Path, files: Sequence[Path]) -> dict[str, list[str]]:
    """The rebuilt keyword golds (memrepro keywords' rows) by the summary they were drawn from."""
    from memrepro.data.io import read_jsonl
    from memrepro.data.keywords import read_originals

    summaries = {
        o["key"]: o["summary"] for file in files for o in read_originals("booksum", file, "")
    }
    return {
        summaries[row["original"]]: row["rebuilt"]
        for row in read_jsonl(path)
        if row.get("rebuilt") and not row.get("refused") and row["original"] in summaries
    }


_SQUAD = ("context", "question", "answers")
_MAB = ("context", "questions", "answers", "metadata")
_PUBMED = ("text", "labels")
_BOOKSUM = ("text", "summary")
BUILDERS = {
    "squad": _squad,
    "hotpotqa": _hotpotqa,
    "perltqa": _perltqa,
    "lme_train": _lme_train,
    "ttl_train": _ttl_train,
    "pubmed-rct": _pubmed,
    "booksum": _booksum,
}


def cmd_memalpha_filter(args: argparse.Namespace, run: JobRecord) -> None:
    """One group's instances after its model filter (the official recipe's) and its caps."""
    from memrepro.data.io import read_jsonl, write_jsonl_atomic

    s = args.settings
    built = read_jsonl(args.built)
    count = counter(args.tokenizer)
    partial = _partial(args.out, s)
    replies = _filter_replies(built, s, args, count, partial) if s["filter"] else None
    kept = _kept(s, built, replies, count)
    if not kept:
        raise SystemExit(f"{args.built}: no instance of {s['group']} survives its filter")
    write_jsonl_atomic(args.out, kept)
    partial.unlink(missing_ok=True)  # the replies are in the output now
    run.log_metrics({"built": len(built), "kept": len(kept)})
    log.info("%s: %d of %d instances kept", s["group"], len(kept), len(built))


def _kept(
    s: Mapping[str, Any], built: list[dict], replies: Any, count: Callable[[str], int]
) -> list[dict[str, Any]]:
    from memrepro.data.memalpha_build import conversations, documents

    rng = group_rng(s["seed"], s["group"], "filter")
    if s["group"] in documents.MIN_KEPT:
        minimum = s["params"].get("min_kept", documents.MIN_KEPT[s["group"]])
        return documents.filtered(built, replies, count, rng, minimum)
    if s["group"] == "perltqa":
        minimum = s["params"].get("min_answerable", conversations.PERLTQA_MIN_ANSWERABLE)
        per_instance = (
            None
            if replies is None
            else [{q: replies[f"{n}\t{q}"] for q in _questions(row)} for n, row in enumerate(built)]
        )
        return conversations.perltqa_kept(built, per_instance, rng, minimum)
    return built


def _questions(row: Mapping[str, Any]) -> list[str]:
    return list(dict.fromkeys(pair["question"] for pair in row["questions_and_answers"]))


def _partial(out: Path, s: Mapping[str, Any]) -> Path:
    """Where a filter's replies so far are kept: beside its output (which Snakemake deletes on
    failure), under a name that changes with the settings, so a changed rerun starts over."""
    from memrepro.data.io import json_digest

    return out.with_name(f"{out.name}.{json_digest(s)[:12]}.partial")


def _closed_book_requests(built: list[dict], s: Mapping[str, Any], count: Callable[[str], int]):
    """Each short-gold question alone, under the official filter's system prompt."""
    from memrepro.data.memalpha_build.documents import CLOSED_BOOK_SYSTEM, closed_book_questions
    from memrepro.engines.base import ChatRequest

    system = {"role": "system", "content": CLOSED_BOOK_SYSTEM}
    return {
        q: ChatRequest((system, {"role": "user", "content": q}), s["max_tokens"])
        for q in closed_book_questions(built, count)
    }


def _answerability_requests(built: list[dict], s: Mapping[str, Any], _count: Callable[[str], int]):
    """Each question with its instance's whole context, keyed "<instance>\t<question>"."""
    from memrepro.data.memalpha_build.conversations import ANSWERABILITY_PROMPT
    from memrepro.engines.base import ChatRequest

    requests = {}
    for n, row in enumerate(built):
        context = "\n\n".join(row["chunks"])
        for q in _questions(row):
            text = ANSWERABILITY_PROMPT.format(context=context, question=q)
            requests[f"{n}\t{q}"] = ChatRequest(
                ({"role": "user", "content": text},), s["max_tokens"]
            )
    return requests


REQUESTS = {"closed_book": _closed_book_requests, "answerability": _answerability_requests}


def _filter_replies(
    built: list[dict],
    s: Mapping[str, Any],
    args: argparse.Namespace,
    count: Callable[[str], int],
    partial: Path,
) -> dict[str, str]:
    """The model's replies the filter reads (closed-book, or with the instance's context), asked
    in resumable waves; a thinking model's `</think>` part is cut off."""
    requests = REQUESTS[s["filter"]](built, s, count)
    labels = {key: f"{s['group']} instance {key.replace(chr(9), ': ')}" for key in requests}
    replies = ask_in_waves(
        requests,
        partial,
        lambda: build_engine(args.model, s["engine"], args.log),
        s,
        f"{s['filter']} filter",
        f"{s['group']} {s['filter']}",
        labels,
    )
    return {key: reply.split("</think>")[-1].strip() for key, reply in replies.items()}


def cmd_memalpha_sets(args: argparse.Namespace, run: JobRecord) -> None:
    """The rebuilt training and validation sets: each group cut at 90 % (or its recipe's share)
    and capped (memrepro.data.memalpha_build.split), in the released parquet's schema."""
    from memrepro.data.io import read_jsonl
    from memrepro.data.memalpha import write_instances
    from memrepro.data.memalpha_build.split import merge, per_source

    s = args.settings
    if len(args.kept) != len(s["groups"]):
        raise SystemExit(f"--kept: {len(args.kept)} files for the groups {s['groups']}")
    groups = {group: read_jsonl(path) for group, path in zip(s["groups"], args.kept, strict=True)}
    train, validation = merge(groups, s["ratios"], s["limit"], s["seed"])
    if len(train) < s["min_train"]:
        raise SystemExit(
            f"memalpha.build: {len(train)} training instances, fewer than one step's "
            f"memalpha.training.rollout_batch ({s['min_train']}): no set is written"
        )
    write_instances(args.train, train)
    write_instances(args.validation, validation)
    run.log_metrics({"train": len(train), "validation": len(validation)})
    log.info("train %s; validation %s", per_source(train), per_source(validation))


def cmd_memalpha_compare(args: argparse.Namespace, run: JobRecord) -> None:
    """The rebuilt sets beside the released ones: per split and source the statistics of
    Tables 6 and 7, the instances matched by text, the questions MemoryAgentBench also asks and
    the training contexts' lengths (memrepro.data.memalpha_build.compare)."""
    from memrepro.data.io import write_json_atomic
    from memrepro.data.memalpha import instances_by_source, source_statistics
    from memrepro.data.memalpha_build import compare
    from memrepro.data.tokens import count_tokens
    from memrepro.models import load_counting_tokenizer

    tokenizer = load_counting_tokenizer(args.tokenizer)

    def count(texts: list[str]) -> list[int]:
        return count_tokens(tokenizer, texts)

    sides = {
        (split, side): instances_by_source(path)
        for split, rebuilt, released in zip(
            args.settings["splits"], args.rebuilt, args.released, strict=True
        )
        for side, path in (("rebuilt", rebuilt), ("released", released))
    }
    stats = [
        {"split": split, "side": side, **record}
        for (split, side), grouped in sides.items()
        for record in source_statistics(grouped, count)
    ]
    found = []
    for split in args.settings["splits"]:
        ours = [row for rows in sides[(split, "rebuilt")].values() for row in rows]
        theirs = [row for rows in sides[(split, "released")].values() for row in rows]
        for source, counts in compare.matches(ours, theirs).items():
            found.append({"split": split, "source": source, **counts})
    benchmark = instances_by_source(args.mab)
    overlaps = [
        {
            "split": split,
            "side": side,
            "source": source,
            "benchmark": bench,
            **compare.overlap(
                [q for row in grouped.get(source, []) for q in row["questions"]],
                [q for row in benchmark.get(bench, []) for q in row["questions"]],
            ),
        }
        for (split, side), grouped in sides.items()
        for source, bench in _benchmark_twins(grouped, benchmark)
    ]
    lengths = [
        {
            "side": side,
            **compare.context_lengths(
                [row for rows in sides[("train", side)].values() for row in rows], count
            ),
        }
        for side in ("rebuilt", "released")
    ]
    write_json_atomic(
        args.out, {"stats": stats, "matches": found, "overlap": overlaps, "lengths": lengths}
    )
    for row in found:
        log.info(
            "%s %s: %d of %d rebuilt instances match a released one (%d exactly)",
            row["split"],
            row["source"],
            row["matched"],
            row["rebuilt"],
            row["exact"],
        )


def _benchmark_twins(
    grouped: Mapping[str, Any], benchmark: Mapping[str, Any]
) -> list[tuple[str, str]]:
    """The training sources MemoryAgentBench also evaluates: LME-Train against its LongMemEval
    sources, NLU and TREC-C against themselves."""
    twins = []
    for source in grouped:
        if source == "lme_train":
            twins += [(source, bench) for bench in benchmark if "longmemeval" in bench]
        elif source in benchmark:
            twins.append((source, source))
    return twins
