"""The metrics a dataset of one's own is scored with (config `custom.datasets.<name>.metric`),
each the papers' own, taken over every gold answer (the best one counts):

- `sub_em`: MemAgent's: the answer after "the answer is" in the reply's final part (after
  `</think>`; the whole final part without that phrase) contains a gold or is contained in one,
  after SQuAD normalisation. Two readings differ from the official one, as one's own golds do
  (`memrepro.scoring.golds`): an answer that normalises to "" scores 0, and so does one character
  other than a digit ("P" is inside "Paris", "R" inside "Tamsin Roe"). `sub_em_inside_gold`
  marks a 1 earned only by the answer being part of a gold (`p in g`), which the tables count.
- `em`, `f1`: exact match and token F1 of that answer (SQuAD normalisation).
- `rouge`: LongBench's summary score, the mean of the ROUGE-1/2/L recalls of the final part.
- `string_match`: RULER's: the fraction of the golds that occur, case-insensitively, in the final
  part (every gold counts, not the best).

Every metric's value is reported; `score` is the chosen one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memrepro.scoring.extract import answer_part
from memrepro.scoring.golds import one_letter
from memrepro.scoring.longbench import qa_prediction, summary_scores
from memrepro.scoring.metrics import best_over, exact_match, normalize_answer, token_f1
from memrepro.scoring.ruler import string_match_all

METRICS = ("sub_em", "em", "f1", "rouge", "string_match")
_SHORT = {"em": exact_match, "f1": token_f1}


def score_answers(
    metric: str, response: str, answers: Sequence[str], answer_format: str = "answer_is"
) -> dict[str, Any]:
    """Per-sample scores of a reply: {"pred", "score" (the `metric`'s), the metric's value};
    a short answer where `answer_format` puts it (memrepro.scoring.extract.final_answer)."""
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}")
    if not answers:
        raise ValueError("no gold answers to score against")
    if metric == "rouge":
        return summary_scores(answer_part(response), answers)
    if metric == "string_match":
        final = answer_part(response)
        value = string_match_all(final, answers)
        return {"pred": final, "score": value, "string_match": value}
    pred = qa_prediction(response, answer_format)
    if metric == "sub_em":
        value, inside = own_sub_em(pred, answers)
        return {"pred": pred, "score": value, "sub_em": value, "sub_em_inside_gold": inside}
    value = best_over(_SHORT[metric], pred, answers) if normalize_answer(pred) else 0.0
    return {"pred": pred, "score": value, metric: value}


def own_sub_em(pred: str, answers: Sequence[str]) -> tuple[float, bool]:
    """sub_em on one's own data, and whether its 1 came only from the answer lying inside a
    gold: an answer that normalises to nothing or to one letter scores 0."""
    answer = normalize_answer(pred)
    if not answer or one_letter(answer):
        return 0.0, False
    golds = [normalize_answer(gold) for gold in answers]
    if any(gold in answer for gold in golds):
        return 1.0, False
    inside = any(answer in gold for gold in golds)
    return float(inside), inside
