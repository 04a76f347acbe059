"""Scores without regenerating: `rescore` scores a finished evaluation's predictions again with
another scorer (memrepro.scoring.rescore), `judge-probe` measures an LLM judge's leniency on a fixed
set of right and vague wrong answers (memrepro.scoring.leniency)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memrepro.jobs.common import build_engine, log, require_rows
from memrepro.tracking.record import JobRecord

if TYPE_CHECKING:
    from memrepro.evaluation import Judge


def judge_replies(engine: Any, prompts: Sequence[str], judge: Judge) -> list[str]:
    """The judge's replies to `prompts`, asked as an evaluation asks them (`Judge.request`); a
    failed request fails the job, naming how many failed and the first cause: a judge that did
    not answer is never a verdict."""
    from memrepro.agents.memalpha import answer
    from memrepro.evaluation import drive

    rollouts = drive([answer(judge.request(p)) for p in prompts], engine, judge.sampling)
    failed = [r.final.completion.error or "failed" for r in rollouts if r.failed]
    if failed:
        raise SystemExit(
            f"the judge failed {len(failed)} of {len(prompts)} requests; the first: {failed[0]}"
        )
    return [r.answer for r in rollouts]


def judge_of(spec: dict[str, Any]) -> Judge:
    """A judge scorer's or probe's sampling and budget (memrepro.config.rescoring)."""
    from memrepro.engines.base import SamplingParams
    from memrepro.evaluation import Judge

    return Judge(SamplingParams(**spec["sampling"]), spec["max_tokens"])


def _replies(engine: Any, spec: dict[str, Any]) -> Any:
    """The rescoring's judge: judged questions -> the judge model's replies."""
    from memrepro.scoring.memalpha import judge_prompt

    def judge(asked: Sequence[tuple[str, Any, str]]) -> list[str]:
        prompts = [judge_prompt(q, gold, response) for q, gold, response in asked]
        return judge_replies(engine, prompts, judge_of(spec))

    return judge


def cmd_rescore(args: argparse.Namespace, run: JobRecord) -> None:
    """One evaluation's predictions scored again by the settings' `scorer`; its predictions and
    metrics (one record per task, as the evaluation's, with the scorer named)."""
    from memrepro.data.io import read_jsonl, write_json_atomic, write_jsonl_atomic
    from memrepro.evaluation import summarize
    from memrepro.scoring.rescore import rescore_instances, rescore_rows, scorer_kind

    s = args.settings
    spec = s["scorer"]
    kind = scorer_kind(spec["kind"])
    if kind.judge != (args.judge_model is not None):
        raise SystemExit(f"--judge-model goes with (and only with) a judge scorer ({spec['kind']})")
    lines = read_jsonl(args.predictions, required=("task", "index", "score"))
    require_rows(lines, args.predictions, "prediction to rescore")
    if not kind.instances:
        rescored = rescore_rows(lines)
    elif kind.judge:
        engine = build_engine(args.judge_model, spec["engine"], args.log)
        rescored = rescore_instances(lines, judge=_replies(engine, spec))
    else:
        rescored = rescore_instances(lines, protocol=spec["protocol"])
    write_jsonl_atomic(args.out_predictions, rescored)
    metrics = []
    for task in s["tasks"]:
        mine = [{k: v for k, v in r.items() if k != "task"} for r in rescored if r["task"] == task]
        require_rows(mine, args.predictions, f"prediction of task {task} to rescore")
        record = summarize(mine, s["benchmark"], task, s["system"], s["length"])
        metrics.append({**record, "scorer": spec["id"]})
        log.info("%s: %s rescored %.2f", spec["id"], task, record["accuracy"])
    write_json_atomic(args.metrics, metrics)
    for m in metrics:
        run.log_metrics({f"{m['task']}.accuracy": m["accuracy"]})


def cmd_judge_probe(args: argparse.Namespace, run: JobRecord) -> None:
    """The leniency probe through one judge model, as an evaluation asks it."""
    from memrepro.data.io import write_json_atomic
    from memrepro.scoring.leniency import probe_prompts, tally

    s = args.settings
    engine = build_engine(args.model, s["engine"], args.log)
    asked = probe_prompts()
    replies = judge_replies(engine, [p for _, p in asked], judge_of(s))
    result = {"judge": s["judge"], **tally([k for k, _ in asked], replies)}
    write_json_atomic(args.out, result)
    for kind in ("right", "wrong"):
        counts = result[kind]
        log.info(
            "%s accepts %d of %d %s answers", s["judge"], counts["accepted"], counts["n"], kind
        )
        run.log_metrics({f"{kind}_accepted": counts["accepted"]})
