"""The metrics a dataset of one's own is scored with (config `custom.datasets.<name>.metric`),
each the papers' own, taken over every gold answer (the best one counts):

- `sub_em`: MemAgent's: the answer after "the answer is" in the reply's final part (after
  `</think>`; the whole final part without that phrase) contains a gold or is contained in one,
  after SQuAD normalisation; an answer that normalises to "" scores 0.
- `em`, `f1`: exact match and token F1 of that answer (SQuAD normalisation).
- `rouge`: LongBench's summary score, the mean of the ROUGE-1/2/L recalls of the final part.
- `string_match`: RULER's: the fraction of the golds that occur, case-insensitively, in the final
  part (every gold counts, not the best).

Every metric's value is reported; `score` is the chosen one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from memrl.scoring.extract import answer_part, extract_answer
from memrl.scoring.metrics import exact_match, normalize_answer, sub_em, token_f1

METRICS = ("sub_em", "em", "f1", "rouge", "string_match")
_SHORT = {"sub_em": sub_em, "em": exact_match, "f1": token_f1}


def score_answers(metric: str, response: str, answers: Sequence[str]) -> dict[str, Any]:
    """Per-sample scores of a reply: {"pred", "score" (the `metric`'s), the metric's value}."""
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}")
    if not answers:
        raise ValueError("no gold answers to score against")
    final = answer_part(response)
    if metric == "rouge":
        from memrl.scoring.longbench import RECALL_KEYS, ROUGE_KEYS, rouge_scores

        per_gold = [rouge_scores(final, gold) for gold in answers]
        best = {key: max(s[key] for s in per_gold) for key in ROUGE_KEYS}
        return {"pred": final, "score": sum(best[k] for k in RECALL_KEYS) / 3, **best}
    if metric == "string_match":
        from memrl.scoring.ruler import string_match_all

        value = string_match_all(final, answers)
        return {"pred": final, "score": value, "string_match": value}
    extracted = extract_answer(final)
    pred = final.strip() if extracted is None else extracted
    value = _best(_SHORT[metric], pred, answers) if normalize_answer(pred) else 0.0
    return {"pred": pred, "score": value, metric: value}


def _best(metric: Callable[[str, str], float], pred: str, answers: Sequence[str]) -> float:
    return max(metric(pred, gold) for gold in answers)
