"""`memrepro verify-predictions FILE`: someone else's predictions scored on a run's released set.

Who it is for: a reader who holds a predictions file posted "for independent verification" and
wants the number it earns under the papers' own scorers, beside the paper's cell.

What it reads:
- FILE, in one of three formats (`FORMATS`), recognised from its shape:
  - `memagent`: the official MemAgent evaluators' JSONL, a line per question (the released row
    without its context, `_id`, `response`, `pred`, `judge_sub_em`, ...);
  - `memalpha`: the official Mem-α `main.py` output directory, `<instance>/results.json` (a
    list of {question, response, answer}) beside `<instance>/data_instance_info.json`;
  - `memrepro`: this pipeline's own predictions (`<length>.predictions.jsonl`).
- RUN, a results directory that evaluated `--system` on `--benchmark` at `--length`. Its
  evaluation job names the released set (the data file it read), the settings it scored under
  and its judge's settings; its table job builds the cell.

What it checks before it scores: every item of FILE is an item of the released set and asks its
question, no item comes twice, and none is missing. The first break is named, and nothing is
scored.

How it scores: each response is scored as the run's own predictions are (`scored_again`); the
judged questions (LongMemEval's rubric) are judged by `--judge-model` on the evaluation's
engine, or read from the judge's replies a `memrepro` file keeps. The scores are summarised as an
evaluation's are, and the run's table job builds the system's row from them alone: the cell
beside the paper's number, with its interval and the usual verdict. Nothing is written.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memrepro.data.io import read_json, read_jsonl
from memrepro.verify import VerifyError, newest_writers, scored_again, settings_of
from memrepro.verify.reports import paths

Row = dict[str, Any]
FORMATS = {
    "memagent": "the official MemAgent JSONL (_id, response, pred, judge_sub_em)",
    "memalpha": "the official Mem-α agents directory (<instance>/results.json)",
    "memrepro": "this pipeline's predictions JSONL (index, response or responses, score)",
}
MEMAGENT_FIELDS = ("_id", "index", "input", "response")
OWN_FIELDS = ("index", "task", "score")
RESULTS, INSTANCE_INFO = "results.json", "data_instance_info.json"  # Mem-α's per instance


class Refused(ValueError):
    """A predictions file that cannot be scored on the released set: the first reason, named."""


@dataclass(frozen=True)
class Given:
    """One item of someone's file: the released item it answers (row or instance index), its
    questions and responses, where it is, and what the file itself scored it (None: nothing)."""

    index: int
    questions: tuple[str, ...]
    responses: tuple[str, ...]
    where: str
    source: str | None = None  # the data source the file names (Mem-α)
    their_scores: tuple[float, ...] | None = None
    line: Mapping[str, Any] | None = None  # a `memrepro` file's whole line


def file_format(path: Path) -> str:
    """FILE's format, from its shape; anything else is refused in one sentence."""
    if path.is_dir():
        if any(path.glob(f"*/{RESULTS}")):
            return "memalpha"
        raise Refused(f"{path}: a directory without <instance>/{RESULTS}; expected {_expected()}")
    if not path.is_file():
        raise Refused(f"{path}: no such file or directory")
    first = _first_object(path)
    if set(MEMAGENT_FIELDS) <= first.keys():
        return "memagent"
    if set(OWN_FIELDS) <= first.keys() and ({"response", "responses"} & first.keys()):
        return "memrepro"
    raise Refused(f"{path}: its first line has {sorted(first)}; expected {_expected()}")


def _expected() -> str:
    return "; or ".join(FORMATS.values())


def _first_object(path: Path) -> dict[str, Any]:
    try:
        with path.open(encoding="utf-8") as handle:
            text = next((line for line in handle if line.strip()), "")
        first = json.loads(text) if text else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        first = None
    if not isinstance(first, dict):
        raise Refused(f"{path}: not a JSONL file of objects; expected {_expected()}")
    return first


def memagent_items(path: Path) -> list[Given]:
    """The official evaluators' lines: `index` is the released row's, `input` its question."""
    return [
        Given(
            int(line["index"]),
            (str(line["input"]),),
            (str(line["response"]),),
            f"{path}:{number}",
            their_scores=_their(line.get("judge_sub_em")),
        )
        for number, line in enumerate(read_jsonl(path, MEMAGENT_FIELDS), 1)
    ]


def memalpha_items(path: Path) -> list[Given]:
    """Each `<instance>/results.json` (the directory's name is the instance's index), in index
    order, with the data source its `data_instance_info.json` names."""
    found = []
    for results in path.glob(f"*/{RESULTS}"):
        if not results.parent.name.isdigit():
            raise Refused(f"{results.parent}: an instance directory is named by its index")
        answers = read_json(results)
        if not isinstance(answers, list) or not all(
            isinstance(a, dict) and {"question", "response"} <= a.keys() for a in answers
        ):
            raise Refused(f"{results}: expected a list of {{question, response, answer}}")
        info = (
            read_json(results.with_name(INSTANCE_INFO))
            if results.with_name(INSTANCE_INFO).is_file()
            else {}
        )
        source = info.get("data_source") if isinstance(info, dict) else None
        scores = [a.get("score") for a in answers]
        found.append(
            Given(
                int(results.parent.name),
                tuple(str(a["question"]) for a in answers),
                tuple(str(a["response"]) for a in answers),
                str(results),
                source,
                None if None in scores else tuple(float(s) for s in scores),
            )
        )
    return sorted(found, key=lambda given: given.index)


def own_items(path: Path) -> list[Given]:
    """This pipeline's lines, rows or instances; each kept whole (its judge's replies)."""
    found = []
    for number, line in enumerate(read_jsonl(path, OWN_FIELDS), 1):
        instance = "responses" in line
        found.append(
            Given(
                int(line["index"]),
                tuple(line["questions"]) if instance else (str(line.get("input")),),
                tuple(line["responses"]) if instance else (str(line["response"]),),
                f"{path}:{number}",
                str(line["task"]),
                tuple(line["scores"]) if instance else (float(line["score"]),),
                line,
            )
        )
    return found


READERS: dict[str, Callable[[Path], list[Given]]] = {
    "memagent": memagent_items,
    "memalpha": memalpha_items,
    "memrepro": own_items,
}


def _their(score: Any) -> tuple[float, ...] | None:
    return None if score is None else (float(score),)


@dataclass(frozen=True)
class Evaluation:
    """The run's evaluation of the system at the benchmark and length: its settings, the data
    files it read (one per task) and its metrics file (what its table jobs read)."""

    settings: dict[str, Any]
    data: list[Path]
    metrics: Path


def find_evaluation(results: Path, benchmark: str, system: str, length: int) -> Evaluation:
    """The finished evaluation that wrote `eval/<benchmark>/<system>/<length>.metrics.json`;
    none names the systems the run did evaluate there."""
    from memrepro.tracking.results_dir import records_under

    records = records_under(results)
    writers = newest_writers(records)
    metrics = results.resolve() / "eval" / benchmark / system / f"{length}.metrics.json"
    writer = writers.get(str(metrics))
    if writer is None:
        there = sorted(
            Path(p).parent.name
            for p in writers
            if Path(p).name == metrics.name and Path(p).parent.parent.name == benchmark
        )
        raise Refused(
            f"{results}: no finished evaluation of {system!r} on {benchmark} at length {length}; "
            f"it evaluated there: {', '.join(there) or 'nothing'}"
        )
    job = writer
    if writer["rule"] == "merge_eval":  # the shards read the data
        shards = [writers[p] for p in writer.get("inputs", {}) if p in writers]
        if not shards:
            raise VerifyError(f"{writer['path']}: no finished job of this run wrote its shards")
        job = shards[0]
    return Evaluation(settings_of(job, results), paths(job, "data"), metrics)


def released_rows(evaluation: Evaluation, task: str | None) -> tuple[Path, list[Row]]:
    """The released set the evaluation read: a row benchmark's task file (every task's, for a
    benchmark of several, is `task`'s), or every instance of a Mem-α split."""
    from memrepro.benchmarks import benchmark

    s = evaluation.settings
    if benchmark(s["benchmark"]).instances:
        from memrepro.data.memalpha import instances_by_source

        data = evaluation.data[0]
        rows = [row for group in instances_by_source(data).values() for row in group]
        return data, sorted(rows, key=lambda row: row["index"])
    tasks = list(s["tasks"])
    if task is None and len(tasks) == 1:
        task = tasks[0]
    if task not in tasks:
        raise Refused(f"--task: {s['benchmark']} has tasks {', '.join(tasks)}; name one")
    data = evaluation.data[tasks.index(task)]
    return data, [{**row, "task": task} for row in read_jsonl(data, ("index",))]


def questions_of(row: Mapping[str, Any]) -> tuple[str, ...]:
    """What a released row or instance asks."""
    return tuple(row["questions"]) if "questions" in row else (str(row["input"]),)


def matched(given: Sequence[Given], rows: Sequence[Row], data: Path) -> list[tuple[Row, Given]]:
    """Each released row with the item that answers it, in the released order. Refused at the
    first item the released set lacks, that asks another question or another source, or that
    comes twice; then at the first released item nobody answered."""
    by_index = {int(row["index"]): row for row in rows}
    answered: dict[int, Given] = {}
    for item in given:
        row = by_index.get(item.index)
        if row is None:
            raise Refused(f"{item.where}: item {item.index} is not in the released set ({data})")
        if item.index in answered:
            raise Refused(
                f"{item.where}: item {item.index} again (first at {answered[item.index].where})"
            )
        if item.source is not None and item.source != row["task"]:
            raise Refused(
                f"{item.where}: item {item.index} is from {item.source!r}; the released set's is "
                f"from {row['task']!r} ({data})"
            )
        _check_questions(item, questions_of(row), data)
        answered[item.index] = item
    missing = [index for index in by_index if index not in answered]
    if missing:
        first = questions_of(by_index[missing[0]])[0]
        raise Refused(
            f"{given[0].where if given else 'the file'}: {len(missing)} of the released set's "
            f"{len(rows)} items {'has' if len(missing) == 1 else 'have'} no prediction; the first: "
            f"item {missing[0]} ({first[:60]!r})"
        )
    return [(by_index[index], answered[index]) for index in by_index]


def _check_questions(item: Given, released: tuple[str, ...], data: Path) -> None:
    if len(item.questions) != len(released):
        raise Refused(
            f"{item.where}: item {item.index} answers {len(item.questions)} questions; the "
            f"released set asks {len(released)} ({data})"
        )
    for j, (theirs, ours) in enumerate(zip(item.questions, released, strict=True)):
        if theirs.strip() != ours.strip():
            which = f"question {j}" if len(released) > 1 else "its question"
            raise Refused(
                f"{item.where}: item {item.index}, {which} reads {theirs[:60]!r}; the released "
                f"set's reads {ours[:60]!r} ({data})"
            )


Judging = Callable[[Sequence[tuple[str, Any, str]]], list[str]]


def prediction_line(row: Row, item: Given, protocol: str) -> Row:
    """The item as one of this pipeline's prediction lines, before its scores: a row's answer,
    or an instance's answers with the protocol it is scored under."""
    if "questions" not in row:
        failed = bool(item.line and item.line.get("failed"))
        keep = ("index", "input", "answers", "num_tokens", "metric")
        return {
            **{k: row[k] for k in keep if k in row},
            "task": row["task"],
            "response": item.responses[0],
            "failed": failed,
            "n_calls": 0,
        }
    own = item.line or {}
    return {
        "index": row["index"],
        "task": row["task"],
        "n_questions": len(row["questions"]),
        "questions": list(row["questions"]),
        "answers": list(row["answers"]),
        "responses": list(item.responses),
        "judge_replies": dict(own.get("judge_replies", {})),
        "protocol": own.get("protocol", protocol),
        **({"metric": row["metric"]} if "metric" in row else {}),
        "failed": bool(own.get("failed")),
        "question_errors": dict(own.get("question_errors", {})),
        "failed_questions": int(own.get("failed_questions", 0)),
        "n_calls": 0,
        "scores": [],  # an instance's, given by `scored`
    }


def judged_unreplied(lines: Sequence[Row]) -> list[tuple[int, int]]:
    """(line, question) of each judged question without a judge's reply."""
    from memrepro.scoring.memalpha import is_judged

    return [
        (i, j)
        for i, line in enumerate(lines)
        if "questions" in line and is_judged(line["task"])
        for j in range(line["n_questions"])
        if str(j) not in line["judge_replies"] and str(j) not in line["question_errors"]
    ]


def with_replies(lines: list[Row], judge: Judging | None, where: str) -> list[Row]:
    """The judged questions' replies asked of `judge`; without one, refused, naming the first."""
    asked = judged_unreplied(lines)
    if not asked:
        return lines
    if judge is None:
        i, j = asked[0]
        raise Refused(
            f"{where}: LongMemEval's questions are judged by a model, and {len(asked)} here have "
            f"no verdict (the first in item {lines[i]['index']}, {lines[i]['task']}); give "
            "--judge-model"
        )
    questions = [
        (lines[i]["questions"][j], lines[i]["answers"][j], lines[i]["responses"][j])
        for i, j in asked
    ]
    for (i, j), reply in zip(asked, judge(questions), strict=True):
        lines[i]["judge_replies"][str(j)] = reply
    return lines


def scored(settings: Mapping[str, Any], lines: Sequence[Row]) -> list[Row]:
    """Each line with its scores, as the run's own predictions are scored."""
    return [{**line, **scored_again(settings, line)} for line in lines]


def disagreements(pairs: Sequence[tuple[Row, Given]], lines: Sequence[Row]) -> Iterator[str]:
    """Where the file's own scores differ from ours: a count and the first."""
    apart = []
    for (_, item), line in zip(pairs, lines, strict=True):
        ours = tuple(line["scores"]) if "scores" in line else (line["score"],)
        if item.their_scores is not None and any(
            abs(a - b) > 1e-9 for a, b in zip(item.their_scores, ours, strict=False)
        ):
            apart.append((item, ours))
    given = sum(item.their_scores is not None for _, item in pairs)
    if not given:
        yield "the file scores no item itself"
        return
    if not apart:
        yield f"the file's own scores agree with ours on all {given} items"
        return
    item, ours = apart[0]
    yield (
        f"the file's own scores differ from ours on {len(apart)} of {given} items; the first: "
        f"{item.where} (item {item.index}) {list(item.their_scores or ())} vs {list(ours)}"
    )


def table_jobs(results: Path, metrics: Path) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The run's finished table jobs that read `metrics` (settings, record), in the plan's
    order of tables."""
    from memrepro.config import TABLES, report_of_stem
    from memrepro.tracking.results_dir import records_under

    order = {name: n for n, name in enumerate(TABLES)}
    jobs = [
        r
        for r in records_under(results)
        if r.get("rule") == "make_table" and r.get("status") == "FINISHED"
        if str(metrics) in map(str, paths(r, "metrics"))
    ]
    if not jobs:
        raise Refused(f"{results}: no table job of the run reads {metrics}")
    named = [(settings_of(r, results), r) for r in jobs]
    named.sort(key=lambda pair: order.get(report_of_stem(pair[0]["name"]), len(order)))
    return named


def summaries(lines: Sequence[Row], s: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The lines' metrics records, one per task, as the evaluation summarises its own."""
    from memrepro.evaluation import summarize

    by_task: dict[str, list[Row]] = {}
    for line in lines:
        by_task.setdefault(line["task"], []).append({k: v for k, v in line.items() if k != "task"})
    return [
        summarize(mine, s["benchmark"], task, s["system"], s["length"])
        for task, mine in by_task.items()
    ]


def cells(results: Path, evaluation: Evaluation, lines: Sequence[Row]) -> list[dict[str, Any]]:
    """The system's cells as the run's first table that reads the evaluation builds them from
    these lines alone (its settings, the paper file it read): ours, interval, paper, verdict."""
    from memrepro.jobs.report import paper_table_of
    from memrepro.report.records import METRICS, PREDICTIONS

    s, job = table_jobs(results, evaluation.metrics)[0]
    read = {str(p) for p in paths(job, "metrics")}
    with tempfile.TemporaryDirectory(prefix="memrepro-theirs-") as scratch:
        metrics = Path(scratch) / evaluation.metrics.name
        predictions = metrics.with_name(metrics.name.replace(METRICS, PREDICTIONS))
        metrics.write_text(json.dumps(summaries(lines, evaluation.settings)))
        predictions.write_text("".join(json.dumps(line) + "\n" for line in lines))
        given = [metrics]  # and the predictions, where the table reads them beside
        if str(evaluation.metrics).replace(METRICS, PREDICTIONS) in read:
            given.append(predictions)
        table = paper_table_of(s, given, paths(job, "paper")[0], [])
    return list(system_cells(table, evaluation.settings["system"], s["name"]))


def system_cells(table: Any, system: str, name: str) -> Iterator[dict[str, Any]]:
    """The system's row of a built table, a dict per cell of an evaluation (not averages)."""
    from memrepro.report.field_verdicts import cell_word
    from memrepro.report.render import length_label

    for display, row in table.iterrows():
        if table.attrs["system_ids"][display] != system:
            continue
        for key, cell in row.items():
            if cell.source is None:
                continue
            verdict = cell.verdict or cell.unjudged
            yield {
                "table": name,
                "row": table.attrs["paper_rows"].get(display) or display,
                "column": length_label(table, key),
                "task": cell.source[1],
                "ours": cell.ours,
                "interval": list(cell.interval) if cell.interval else None,
                "n": cell.n_scored,
                "paper": cell.paper,
                "paper_n": cell.paper_n,
                "verdict": verdict,
                "field_verdict": cell_word(verdict or ""),
            }


def judge_on(model: Path, settings: Mapping[str, Any]) -> Judging:
    """Judged questions asked of `model` as the evaluation asked its judge: its engine, its
    judge's sampling and budget, Mem-α's rubric prompt."""
    from memrepro.evaluation import Judge
    from memrepro.jobs.common import build_engine
    from memrepro.jobs.rescore import judge_replies
    from memrepro.scoring.memalpha import judge_prompt

    engine = build_engine(model, dict(settings["engine"]), None)

    def judge(asked: Sequence[tuple[str, Any, str]]) -> list[str]:
        prompts = [judge_prompt(q, gold, response) for q, gold, response in asked]
        return judge_replies(engine, prompts, Judge.from_settings(dict(settings["qa"])))

    return judge


def render(found: Mapping[str, Any]) -> str:
    """What a reader sees: what was matched and how it was scored, then a row per cell."""
    lines = [
        f"{found['file']} ({found['format']}): {found['items']} items, every item of the "
        f"released set {found['released']}",
        f"scored as {found['run']} scores {found['system']} on {found['benchmark']}"
        f"{f' at length {length}' if (length := found['length']) else ''}; {found['agreement']}",
        "",
        "| table | row | column | ours | 95 % interval | paper | verdict | in the field's words |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in found["cells"]:
        bounds = "—" if c["interval"] is None else "[{:.1f}, {:.1f}]".format(*c["interval"])
        ours = "—" if c["ours"] is None else f"{c['ours']:.1f}"
        paper = "—" if c["paper"] is None else f"{c['paper']:.1f}"
        lines.append(
            f"| {c['table']} | {c['row']} | {c['column']} | {ours} | {bounds} | {paper} "
            f"| {c['verdict'] or '—'} | {c['field_verdict'] or '—'} |"
        )
    return "\n".join(lines)


def verify_predictions(args: argparse.Namespace) -> dict[str, Any]:
    """FILE matched to the released set, scored, and set beside the paper's cells."""
    from memrepro.benchmarks import NO_LENGTH, benchmark

    known = benchmark(args.benchmark)
    if known.lengths == (args.length is None):
        want = "needs --length" if known.lengths else "has no lengths: leave out --length"
        raise Refused(f"--benchmark {args.benchmark} {want}")
    length = NO_LENGTH if args.length is None else args.length
    kind = file_format(args.file)
    given = READERS[kind](args.file)
    evaluation = find_evaluation(args.run, args.benchmark, args.system, length)
    data, rows = released_rows(evaluation, args.task)
    pairs = matched(given, rows, data)
    protocol = "agent"  # Mem-α's main.py output is scored by its evaluate_agent_results.py
    lines = [prediction_line(row, item, protocol) for row, item in pairs]
    judge = None if args.judge_model is None else judge_on(args.judge_model, evaluation.settings)
    lines = scored(evaluation.settings, with_replies(lines, judge, str(args.file)))
    return {
        "file": str(args.file),
        "format": kind,
        "items": len(pairs),
        "released": str(data),
        "run": str(args.run),
        "system": args.system,
        "benchmark": args.benchmark,
        "length": length,
        "agreement": next(disagreements(pairs, lines)),
        "cells": cells(args.run, evaluation, lines),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="memrepro verify-predictions", description=__doc__.splitlines()[0]
    )
    parser.add_argument("file", type=Path, help="the predictions: " + "; ".join(FORMATS.values()))
    parser.add_argument(
        "--benchmark", required=True, help="ruler_hqa, ruler, longbench, memalpha, mab"
    )
    parser.add_argument("--length", type=int, help="the benchmark's length (RULER-HQA: documents)")
    parser.add_argument(
        "--run", type=Path, required=True, help="a results directory (results/<run>)"
    )
    parser.add_argument(
        "--system", required=True, help="the run's system whose cells these stand beside"
    )
    parser.add_argument("--task", help="the task, for a benchmark of several (RULER, LongBench)")
    parser.add_argument(
        "--judge-model", type=Path, help="the model that judges LongMemEval's questions"
    )
    parser.add_argument("--json", action="store_true", help="the result as JSON")
    args = parser.parse_args(argv)
    try:
        found = verify_predictions(args)
    except (Refused, VerifyError, ValueError) as exc:
        raise SystemExit(f"memrepro verify-predictions: {exc}") from None
    print(json.dumps(found, indent=1, default=str) if args.json else render(found))
