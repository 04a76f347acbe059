"""Scores without regenerating: a finished evaluation's predictions scored again by another
scorer, so that a gap can be read as the metric's or the judge's rather than the model's.

Scorer kinds (`rescore.<id>.scorer` in the config):
- `whole_reply`: a gold anywhere in the whole reply (normalised containment, after any
  `</think>`), as Mem-α scores MemoryAgentBench's RULER-QA; beside the benchmark's own metric,
  which reads only the text after "the answer is" (RULER-HQA, MemAgent's RULER) or scores F1
  (LongBench). For benchmarks answered row by row.
- `memalpha_protocol`: Mem-α's instances scored under another of its scoring protocols
  (`memrepro.scoring.memalpha.PROTOCOLS`: the agent's evaluate_agent_results.py, the baselines'
  long_context_eval.py, ...); judged questions keep their verdicts.
- `judge`: the judged questions (LongMemEval's rubric) judged again by another model; the others
  keep their scores.

A rescored prediction is the original line with its scores replaced (and the benchmark's side
metrics dropped: they belong to the other scorer); a failed sample stays failed, at 0.

An instance line holds all its scores derive from (`instance_scores`): its responses, the judge's
replies (`judge_replies`), its protocol, and its dataset's `metric` on one's own data. So a
rescoring and `memrepro verify` score it again from the line alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from memrepro.scoring import memalpha as metrics
from memrepro.scoring.answers import score_answers
from memrepro.scoring.extract import answer_part
from memrepro.scoring.metrics import normalize_answer

Record = dict[str, Any]
# judged questions' (question, rubric, response) -> the judge's replies (verdicts: judge_verdict)
Judge = Callable[[Sequence[tuple[str, Any, str]]], list[str]]
INSTANCE_FIELDS = (
    "task",
    "questions",
    "answers",
    "responses",
    "scores",
    "judge_replies",
    "protocol",
)


@dataclass(frozen=True)
class ScorerKind:
    """One scorer kind: whether it reads Mem-α instances (else rows), whether it needs a judge
    model, and what it says in the docs and the table."""

    instances: bool
    judge: bool
    about: str


SCORER_KINDS = {
    "whole_reply": ScorerKind(False, False, "a gold anywhere in the whole reply"),
    "memalpha_protocol": ScorerKind(True, False, "Mem-α's instances under another protocol"),
    "judge": ScorerKind(True, True, "the judged questions judged by another model"),
}


def scorer_kind(name: str) -> ScorerKind:
    if name not in SCORER_KINDS:
        raise ValueError(f"unknown scorer {name!r}; known: {', '.join(SCORER_KINDS)}")
    return SCORER_KINDS[name]


def whole_reply(response: str, golds: Sequence[Any]) -> float:
    """1 iff some gold is inside the reply after any `</think>`, both normalised: how Mem-α
    scores MemoryAgentBench's RULER-QA sources (`memalpha.normalized_sub_em`); a gold that
    normalises to "" matches nothing."""
    kept = [str(g) for g in golds if normalize_answer(str(g))]
    return metrics.normalized_sub_em(answer_part(response), kept) if kept else 0.0


def rescore_rows(records: Sequence[Record]) -> list[Record]:
    """Row predictions scored by `whole_reply`."""
    return [
        _with_score(r, 0.0 if r["failed"] else whole_reply(r["response"], _golds(r)))
        for r in records
    ]


def rescore_instances(
    records: Sequence[Record], protocol: str | None = None, judge: Judge | None = None
) -> list[Record]:
    """Instance predictions (`INSTANCE_FIELDS`): the unjudged questions under `protocol`, or the
    judged ones by `judge` (one call for all, its replies kept)."""
    if (protocol is None) == (judge is None):
        raise ValueError("rescore_instances: a protocol or a judge, not both")
    for r in records:
        _require_questions(r)
    judged = [
        (i, j)
        for i, r in enumerate(records)
        if metrics.is_judged(r["task"])
        for j in range(r["n_questions"])
        if _answered(r, j)
    ]
    replies: dict[tuple[int, int], str] = {}
    if judge is not None and judged:
        asked = [
            (records[i]["questions"][j], records[i]["answers"][j], records[i]["responses"][j])
            for i, j in judged
        ]
        replies = dict(zip(judged, judge(asked), strict=True))
    out = []
    for i, r in enumerate(records):
        mine = {str(j): reply for (k, j), reply in replies.items() if k == i}
        line = {**r, "judge_replies": {**r["judge_replies"], **mine}}
        line["protocol"] = protocol or r["protocol"]
        scores = instance_scores(line)
        out.append({**line, "scores": scores, "score": sum(scores) / len(scores)})
    return out


def instance_scores(record: Record) -> list[float]:
    """Each question's score, from its instance line alone: 0 if unanswered; the judge's verdict
    from its reply (judged sources); its dataset's metric (one's own data); else its source's
    metric under the line's protocol."""
    return [_question_score(record, j) for j in range(record["n_questions"])]


def _question_score(record: Record, j: int) -> float:
    if not _answered(record, j):
        return 0.0
    response, gold = record["responses"][j], record["answers"][j]
    if metrics.is_judged(record["task"]):
        return metrics.judge_verdict(record["judge_replies"][str(j)])
    if "metric" in record:
        return score_answers(record["metric"], response, gold)["score"]
    return metrics.score_answer(record["task"], response, gold, record["protocol"])


def _answered(record: Record, j: int) -> bool:
    """Whether question `j` was answered: neither its instance's memorisation (which asks
    nothing) nor its own request failed."""
    if record["failed"] and not record.get("failed_questions"):
        return False
    return str(j) not in record.get("question_errors", {})


def _require_questions(record: Record) -> None:
    missing = [k for k in INSTANCE_FIELDS if k not in record]
    if missing:
        raise ValueError(
            f"prediction {record.get('index')!r} has no {', '.join(missing)}: written before "
            "predictions kept what their scores derive from; evaluate again to rescore it"
        )


def _golds(record: Record) -> list[Any]:
    answers = record.get("answers")
    if answers is None:
        raise ValueError(f"prediction {record.get('index')!r} has no answers to rescore against")
    return [answers] if isinstance(answers, str) else list(answers)


def _with_score(record: Record, score: float) -> Record:
    """The line with `score` replaced and the other scorer's side metrics dropped."""
    kept = {k: v for k, v in record.items() if not isinstance(v, float) or k == "score"}
    return {**kept, "score": score}


def unit_scores(record: Record) -> list[float]:
    """What a scorer scores one by one in a prediction: its questions, else the row."""
    return (
        [float(s) for s in record["scores"]] if record.get("scores") else [float(record["score"])]
    )


def disagreements(ours: dict[str, Record], other: dict[str, Record]) -> tuple[int, int]:
    """(units scored differently, units) over the predictions both hold, by key."""
    differ = total = 0
    for key in sorted(set(ours) & set(other)):
        a, b = unit_scores(ours[key]), unit_scores(other[key])
        if len(a) != len(b):
            raise ValueError(f"prediction {key}: {len(a)} vs {len(b)} scored questions")
        total += len(a)
        differ += sum(abs(x - y) > 1e-9 for x, y in zip(a, b, strict=True))
    return differ, total
