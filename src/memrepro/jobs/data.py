"""The data jobs: downloads, RULER-HQA's synthesis and filter, the eval and RULER sets, stage II's
mix, Mem-α's dataset statistics."""

from __future__ import annotations

import argparse
import json
import statistics
from typing import Any

from memrepro.config.settings import official_file_key, source_key
from memrepro.jobs.common import ask_in_waves, build_engine, log, require_rows
from memrepro.models import load_counting_tokenizer, load_tokenizer
from memrepro.tracking.record import JobRecord

# The config key that pins a download's sha256 (as the plan's own checks name it), by the rule
# that downloads it and its wildcards
CHECKSUM_KEYS = {
    "download_data": lambda w: source_key(w["source"]),
    "download_official_hqa": lambda w: official_file_key(w["file"]),
}


def cmd_download_data(args: argparse.Namespace, run: JobRecord) -> None:
    from memrepro.data.io import write_json_atomic
    from memrepro.data.sources import ChecksumError, fetch_file

    s = args.settings  # a local file is checked against its content when the plan was made
    try:
        entry = fetch_file(s["url"], args.out, s.get("sha256") or s.get("content"))
    except ChecksumError as exc:
        key = CHECKSUM_KEYS.get(args.job["rule"])
        raise SystemExit(
            f"config key {key(args.job['wildcards'])}: {exc}" if key else exc
        ) from None
    write_json_atomic(args.manifest, entry)
    run.log_metrics({"bytes": entry["bytes"]})


def cmd_download_model(args: argparse.Namespace, run: JobRecord) -> None:
    from memrepro.data.io import write_json_atomic
    from memrepro.models.fetch import fetch_model

    entry = fetch_model(args.settings, args.out)
    write_json_atomic(args.manifest, entry)
    log.info("model ready in %s (%d files)", args.out, len(entry["files"]))


def cmd_synthesize(args: argparse.Namespace, run: JobRecord) -> None:
    from memrepro.data.hotpotqa import build_pool, load_hotpotqa, question_records
    from memrepro.data.io import write_jsonl_atomic
    from memrepro.data.ruler_hqa import build_split

    s = args.settings
    tokenizer = load_counting_tokenizer(args.tokenizer)
    for raw, out, limit in (
        (args.train, args.out_train, s["train_questions"]),
        (args.dev, args.out_dev, s["dev_questions"]),
    ):
        records = load_hotpotqa(raw)
        pool = build_pool(records)
        rows = build_split(
            question_records(records, pool),
            pool,
            s["train_docs"],
            limit=limit,
            seed=s["seed"],
            tokenizer=tokenizer,
            store_ids_above=s["store_ids_above"],
        )
        write_jsonl_atomic(out, rows)
        log.info(
            "%s: %d rows at %d docs from a pool of %d", out, len(rows), s["train_docs"], len(pool)
        )
        run.log_metrics({f"{out.stem}.rows": len(rows), f"{out.stem}.pool": len(pool)})


def cmd_filter(args: argparse.Namespace, run: JobRecord) -> None:
    from memrepro.data.io import read_jsonl, write_json_atomic, write_jsonl_atomic
    from memrepro.engines.base import SamplingParams
    from memrepro.train.filter import against_appendix, filter_questions

    s = args.settings
    model_dirs = dict(pair.split("=", 1) for pair in args.model)
    if set(model_dirs) != set(s["models"]):
        raise SystemExit(
            f"--model names {sorted(model_dirs)} differ from settings {sorted(s['models'])}"
        )
    engines = {
        name: build_engine(model_dirs[name], spec, args.log) for name, spec in s["models"].items()
    }
    report: dict[str, Any] = {}
    for split, src, dst in (("train", args.train, args.out_train), ("dev", args.dev, args.out_dev)):
        kept, report[split] = filter_questions(
            read_jsonl(src),
            engines,
            n_samples=s["n_samples"],
            sampling=SamplingParams(**s["sampling"]),
            max_tokens=s["max_tokens"],
            keep=s["keep"][split],
            verifier=s["verifier"],
        )
        require_rows(kept, src, f"{split} question passed the filter")
        write_jsonl_atomic(dst, kept)
        report[split]["appendix_a3"] = checked = against_appendix(report[split], kept)
        log.info(
            "%s: %.0f %% dropped (A.3: about 50 %%, %s); kept rows %s tokens on average "
            "(A.3: 28K for 200 articles, 32K for stage I)",
            split,
            100 * (checked["dropped_share"] or 0),
            "holds" if checked["dropped_share_holds"] else "does not hold",
            f"{checked['mean_tokens']:,.0f}" if checked["mean_tokens"] else "no",
        )
        run.log_metrics({f"{split}.{k}": v for k, v in report[split].items() if isinstance(v, int)})
    write_json_atomic(args.report, report)


def cmd_hqa_pool(args: argparse.Namespace, run: JobRecord) -> None:
    """The dev pool every RULER-HQA eval set draws from, each document counted once."""
    from memrepro.data.hotpotqa import load_hotpotqa
    from memrepro.data.ruler_hqa import build_doc_pool, write_pool

    pool = build_doc_pool(load_hotpotqa(args.dev_raw), load_counting_tokenizer(args.tokenizer))
    write_pool(args.out_docs, args.out_questions, pool)
    run.log_metrics({"docs": len(pool.docs), "tokens": int(pool.tokens.sum())})


def cmd_eval_set(args: argparse.Namespace, run: JobRecord) -> None:
    from memrepro.data.io import read_jsonl, write_jsonl_atomic
    from memrepro.data.ruler_hqa import build_eval_sets, read_pool

    s = args.settings
    indices = [row["index"] for row in read_jsonl(args.dev)][: s["eval_questions"]]
    require_rows(indices, args.dev, "filtered dev question")
    pool = read_pool(args.pool_docs, args.pool_questions)
    [rows] = build_eval_sets(
        pool.questions,
        pool.docs,
        [s["n_docs"]],
        indices,
        seed=s["seed"],
        tokenizer=load_counting_tokenizer(args.tokenizer),
        store_ids_above=s["store_ids_above"],
        doc_tokens=pool.tokens,
    ).values()
    write_jsonl_atomic(args.out, rows)
    tokens = [row["num_tokens"] for row in rows]
    run.log_metrics({"rows": len(rows), "mean_tokens": sum(tokens) / max(1, len(tokens))})


def cmd_probe_set(args: argparse.Namespace, run: JobRecord) -> None:
    """Table 4's probe set of one placement: the random rows of its length (`--rows`, the
    evaluation set the config reads) with each question's key-information groups placed."""
    from memrepro.data.hqa_probe import probe_rows
    from memrepro.data.io import read_jsonl, write_jsonl_atomic
    from memrepro.data.ruler_hqa import read_pool

    s = args.settings
    rows = read_jsonl(args.rows)
    require_rows(rows, args.rows, "evaluation row")
    mismatched = [row["index"] for row in rows if row["num_docs"] != s["n_docs"]]
    if mismatched:
        raise ValueError(
            f"{args.rows}: rows of questions {mismatched[:5]} do not hold {s['n_docs']} documents"
        )
    probe = probe_rows(
        rows,
        read_pool(args.pool_docs, args.pool_questions),
        s["placement"],
        tokenizer=load_counting_tokenizer(args.tokenizer),
        store_ids_above=s["store_ids_above"],
        where=str(args.rows),
    )
    write_jsonl_atomic(args.out, probe)
    tokens = [row["num_tokens"] for row in probe]
    run.log_metrics({"rows": len(probe), "mean_tokens": sum(tokens) / len(tokens)})


def cmd_official_questions(args: argparse.Namespace, run: JobRecord) -> None:
    """MemAgent's released filtered questions of one split (hotpotqa_{train,dev}.parquet) as
    the rows the filter would have written: no filter job runs."""
    from memrepro.data.io import write_jsonl_atomic
    from memrepro.data.official_hqa import read_question_rows

    rows = read_question_rows(args.questions, args.settings["rows"])
    write_jsonl_atomic(args.out, rows)
    run.log_metrics({"rows": len(rows)})


def cmd_custom_set(args: argparse.Namespace, run: JobRecord) -> None:
    """One dataset of one's own, checked row by row (memrepro.data.custom; its golds against its
    metric) and written as the evaluation's rows, each tagged with the dataset's metric."""
    from memrepro.data.custom import CustomDataError, context_words, read_custom_rows
    from memrepro.data.io import write_jsonl_atomic

    s = args.settings
    try:
        rows = read_custom_rows(args.data, s["max_context_words"], s["metric"])
    except CustomDataError as exc:
        raise SystemExit(f"custom dataset {s['dataset']}: {exc}") from None
    write_jsonl_atomic(args.out, [{**row, "metric": s["metric"]} for row in rows])
    run.log_metrics({"rows": len(rows), "mean_context_words": context_words(rows)})


def cmd_official_eval_set(args: argparse.Namespace, run: JobRecord) -> None:
    """MemAgent's released RULER-HQA set at one document count (eval_{N}.json) as our rows:
    checked, its contexts resolved in the dev pool, its tokens counted."""
    from memrepro.data.io import write_jsonl_atomic
    from memrepro.data.official_hqa import convert_eval_rows, read_eval_file
    from memrepro.data.ruler_hqa import read_pool

    s = args.settings
    released = read_eval_file(args.released, s["n_docs"], s["released_rows"])[: s["rows"]]
    pool = read_pool(args.pool_docs, args.pool_questions)
    tokenizer = load_counting_tokenizer(args.tokenizer)
    rows = convert_eval_rows(released, pool, tokenizer, s["store_ids_above"], str(args.released))
    write_jsonl_atomic(args.out, rows)
    tokens = [row["num_tokens"] for row in rows]
    run.log_metrics({"rows": len(rows), "mean_tokens": sum(tokens) / len(tokens)})


def cmd_ruler_set(args: argparse.Namespace, run: JobRecord) -> None:
    """One RULER (task, length) set; only the corpus the task needs is read."""
    from memrepro.data.essays import load_essay_text
    from memrepro.data.hotpotqa import load_hotpotqa
    from memrepro.data.io import read_json, write_jsonl_atomic
    from memrepro.data.ruler import build_task, corpus_of, read_squad

    s = args.settings
    corpus = corpus_of(s["task"])
    squad = read_json(args.squad) if corpus == "squad" else None
    if squad is not None:
        try:
            read_squad(squad)  # a malformed file fails here, naming itself
        except ValueError as e:
            raise ValueError(f"{args.squad}: {e}") from e
    rows = build_task(
        s["task"],
        s["length"],
        s["samples"],
        variant=s["variant"],
        tokenizer=load_tokenizer(args.tokenizer),
        seed=s["seed"],
        essay_text=load_essay_text(args.essays) if corpus == "essay" else None,
        squad=squad,
        hotpot=load_hotpotqa(args.hotpotqa) if corpus == "hotpotqa" else None,
    )
    require_rows(rows, args.out, f"{s['task']} sample at length {s['length']} was built")
    write_jsonl_atomic(args.out, rows)
    tokens = [row["num_tokens"] for row in rows]
    run.log_metrics({"rows": len(rows), "mean_tokens": sum(tokens) / len(tokens)})
    log.info(
        "%s @ %d: %d rows, %.0f tokens on average",
        s["task"],
        s["length"],
        len(rows),
        sum(tokens) / len(tokens),
    )


def cmd_stage2_data(args: argparse.Namespace, run: JobRecord) -> None:
    """Stage II rows: DocQA-RL-1.6K rows that fit max_context_tokens + stage-I rows (data.docqa)."""
    from memrepro.data.docqa import load_docqa, mix_stage2
    from memrepro.data.io import read_jsonl, write_jsonl_atomic

    s = args.settings
    rows, report = mix_stage2(
        read_jsonl(args.hqa),
        load_docqa(args.docqa),
        s["n_rows"],
        s["max_context_tokens"],
        load_tokenizer(args.tokenizer),
        s["seed"],
    )
    write_jsonl_atomic(args.out, rows)
    log.info("%s: %s", args.out, json.dumps(report))
    by_source = {f"rows.{source}": n for source, n in report.pop("by_source").items()}
    run.log_metrics({**report, **by_source})


def cmd_dataset_stats(args: argparse.Namespace, run: JobRecord) -> None:
    """Mem-α's dataset statistics (paper Tables 6-8) of one downloaded split, per data source,
    in the QA model's tokens; one record per source, tagged with the split."""
    from memrepro.data.io import write_json_atomic
    from memrepro.data.memalpha import instances_by_source, source_statistics
    from memrepro.data.tokens import count_tokens

    tokenizer = load_counting_tokenizer(args.tokenizer)
    records = source_statistics(
        instances_by_source(args.data), lambda texts: count_tokens(tokenizer, texts)
    )
    write_json_atomic(args.out, [{"split": args.settings["split"], **r} for r in records])
    for r in records:
        log.info(
            "%s: %d instances, %.1f tokens per chunk",
            r["task"],
            r["instances"],
            r["tokens_per_chunk"],
        )


def cmd_memalpha_example(args: argparse.Namespace, run: JobRecord) -> None:
    """Mem-α's Table 5 instance: the paper's example found by its text among the instances of
    the splits (settings' order), written alone, and where it was found."""
    from memrepro.data.io import write_json_atomic
    from memrepro.data.memalpha_example import ExampleNotFound, find_example, write_example

    s = args.settings
    files = dict(zip(s["splits"], args.splits, strict=True))
    try:
        split, row, source = find_example(files, s["phrases"], s.get("sources"))
    except ExampleNotFound as exc:
        raise SystemExit(f"config key memalpha.example: {exc}") from None
    write_example(files[split], row, args.data)
    found = {"split": split, "row": row, "source": source, "phrases": s["phrases"]}
    write_json_atomic(args.found, {**found, "what": s["what"]})
    log.info("the paper's example: %s row %d, %s (%s)", split, row, source, files[split])


def cmd_keywords(args: argparse.Namespace, run: JobRecord) -> None:
    """Mem-α's Figure 4 step: one data source's keyword golds rebuilt from its original summaries
    by the configured model, each set beside the released list (memrepro.data.keywords). Replies
    are kept as they come (a killed job resumes); a request that fails, or whose reply is not the
    keyword list the prompt asks for (memrepro.data.keywords.reply_problem), fails the job. A model
    that cannot reproduce the paper (a machinery check) keeps such replies, marked `refused`."""
    from memrepro.data import keywords as kw
    from memrepro.data.io import write_jsonl_atomic

    s = args.settings
    originals = [o for path in args.summaries for o in kw.read_originals(s["kind"], path, s["set"])]
    if len(args.released) != len(s["released"]):
        raise SystemExit(f"--released: {len(args.released)} files for the splits {s['released']}")
    instances = [
        instance
        for split, path in zip(s["released"], args.released, strict=True)
        for instance in kw.released_instances(path, split, s["set"])
    ]
    if not instances:
        raise SystemExit(f"no released instance of {s['set']!r} in {s['released']}")
    matched = kw.match(instances, originals)
    if not any(matched):
        raise SystemExit(
            f"no released instance of {s['set']!r} begins an original text of "
            f"{', '.join(map(str, args.summaries))} ({len(originals)} {s['kind']} texts): "
            "are these the originals of the released set?"
        )
    wanted = {o["key"]: o["summary"] for o in matched if o is not None}
    replies = _extract_keywords(wanted, _instance_labels(instances, matched), s, args)
    rows = []
    for instance, original in zip(instances, matched, strict=True):
        row = {k: s[k] for k in ("set", "model", "reproduces", "prompt")}
        row.update({k: instance[k] for k in ("split", "index", "instance_id", "released")})
        row.update(original=None, rebuilt=None, refused=None)
        if original is not None:
            rebuilt = kw.keyword_list(replies[original["key"]])
            row.update(original=original["key"], rebuilt=rebuilt)
            row.update(
                refused=kw.keywords_problem(rebuilt), **kw.agreement(row["released"], rebuilt)
            )
        rows.append(row)
    write_jsonl_atomic(args.out, rows)
    rebuilt = [r for r in rows if r["rebuilt"] is not None]
    accepted = [r for r in rebuilt if r["refused"] is None]
    run.log_metrics(
        {
            "instances": len(rows),
            "matched": len(rebuilt),
            "refused": len(rebuilt) - len(accepted),
            "same": sum(r["same"] for r in accepted),
            "mean_jaccard": statistics.fmean(r["jaccard"] for r in accepted) if accepted else None,
        }
    )
    log.info(
        "%s: %d of %d instances rebuilt, %d of them refused",
        s["set"],
        len(rebuilt),
        len(rows),
        len(rebuilt) - len(accepted),
    )


def _instance_labels(
    instances: list[dict[str, Any]], matched: list[dict[str, Any] | None]
) -> dict[str, str]:
    """Each matched original's key with the released instances it rebuilds, for messages."""
    named: dict[str, list[str]] = {}
    for instance, original in zip(instances, matched, strict=True):
        if original is not None:
            named.setdefault(original["key"], []).append(
                f"{instance['split']} row {instance['index']}"
            )
    return {key: f"{key} ({', '.join(rows)})" for key, rows in named.items()}


def _extract_keywords(
    summaries: dict[str, str], labels: dict[str, str], s: dict[str, Any], args: argparse.Namespace
) -> dict[str, str]:
    """Each summary's reply (by the original's key), asked in resumable waves (ask_in_waves).
    Snakemake deletes a failed job's outputs: the replies so far live beside them, under a name
    that changes with the settings (model, prompt, sampling), so a changed rerun starts over. A
    model that can reproduce the paper must reply with the keyword list the prompt asks for."""
    from memrepro.data import keywords as kw
    from memrepro.data.io import json_digest
    from memrepro.engines.base import ChatRequest

    partial = args.out.with_name(f"{args.out.name}.{json_digest(s)[:12]}.partial")
    requests = {
        key: ChatRequest(kw.messages(s["prompt"], s["kind"], summary), s["max_tokens"])
        for key, summary in summaries.items()
    }
    replies = ask_in_waves(
        requests,
        partial,
        lambda: build_engine(args.model, s["engine"], args.log),
        s,
        "keyword",
        f"keywords {s['set']}",
        labels,
        kw.reply_problem if s["reproduces"] else None,
    )
    partial.unlink(missing_ok=True)
    return replies
