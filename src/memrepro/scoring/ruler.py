"""RULER scoring, as RULER scores it (upstream) and as MemAgent's evaluator scores it (memagent).

- upstream (RULER's scripts/eval/evaluate.py): the raw prediction is stripped and its
  control characters become newlines; niah/vt/cwe/fwe score `string_match_all` (the fraction of
  golds found, case-insensitively, in the prediction), qa scores `string_match_part` (1 if any
  gold is found).
- memagent (MemAgent's taskutils/memory_eval/ruler_general.py): the prediction is the
  text after the last lower-case "the answer is" of the response, as for RULER-HQA; without it
  the item scores 0. QA tasks score `sub_em`, `em` and `f1` against the first gold only
  (HotpotQA normalisation); the others score `string_match_all`.

`score_ruler` returns the same keys for a task and variant whatever the response, so a failed
request (scored on "") lines up with real scores.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from memrepro.scoring.extract import final_answer
from memrepro.scoring.metrics import ANSWER_IS_METRICS, score_answer_is

VARIANTS = ("memagent", "upstream")
_CONTROL = re.compile(r"[\x00-\x1f]")


def postprocess_pred(pred: str) -> str:
    """RULER's prediction clean-up: strip, control characters to "\\n", strip again."""
    return _CONTROL.sub("\n", pred.strip()).strip()


def string_match_all(pred: str, golds: Sequence[str]) -> float:
    """Fraction of golds that occur (case-insensitively) in the prediction."""
    if not golds:
        raise ValueError("string_match_all needs at least one gold answer")
    text = pred.lower()
    return sum(gold.lower() in text for gold in golds) / len(golds)


def string_match_part(pred: str, golds: Sequence[str]) -> float:
    """1.0 if any gold occurs (case-insensitively) in the prediction, else 0.0."""
    if not golds:
        raise ValueError("string_match_part needs at least one gold answer")
    text = pred.lower()
    return float(any(gold.lower() in text for gold in golds))


def _is_qa(task: str) -> bool:
    return task.startswith("qa_")


def scored_golds(
    task: str, variant: str, answers: Sequence[str]
) -> tuple[Sequence[str], tuple[str, ...]]:
    """The golds `score_ruler` compares a reply with, and the metrics it compares them by."""
    if variant == "memagent" and _is_qa(task):
        return answers[:1], ANSWER_IS_METRICS
    return answers, ("string_match",)


def score_ruler(
    task: str, response: str, answers: Sequence[str], variant: str, answer_format: str = "answer_is"
) -> dict[str, Any]:
    """Per-sample scores; `score` in [0, 1] is the variant's metric for the paper's tables
    (MemAgent's: on the answer where `answer_format` puts it; upstream's: the whole reply)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown RULER variant {variant!r}; known: {', '.join(VARIANTS)}")
    if not answers:
        raise ValueError(f"RULER {task}: no gold answers")
    if variant == "upstream":
        pred = postprocess_pred(response)
        match = string_match_part if _is_qa(task) else string_match_all
        value = match(pred, answers)
        return {"pred": pred, "score": value, "string_match": value}
    if _is_qa(task):  # as RULER-HQA: against the first gold only
        scores = score_answer_is(response, answers[0], answer_format)
        return {**scores, "score": scores["sub_em"]}
    pred = final_answer(response, answer_format)  # after the last </think>, as officially
    value = string_match_all(pred, answers) if pred else 0.0
    return {"pred": pred, "score": value, "string_match": value}
