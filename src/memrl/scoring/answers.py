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

from collections.abc import Sequence
from typing import Any

from memrl.scoring.extract import answer_part
from memrl.scoring.longbench import qa_prediction, summary_scores
from memrl.scoring.metrics import best_over, exact_match, normalize_answer, sub_em, token_f1
from memrl.scoring.ruler import string_match_all

METRICS = ("sub_em", "em", "f1", "rouge", "string_match")
_SHORT = {"sub_em": sub_em, "em": exact_match, "f1": token_f1}


def score_answers(
    metric: str, response: str, answers: Sequence[str], answer_format: str = "answer_is"
) -> dict[str, Any]:
    """Per-sample scores of a reply: {"pred", "score" (the `metric`'s), the metric's value};
    a short answer where `answer_format` puts it (memrl.scoring.extract.final_answer)."""
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
    value = best_over(_SHORT[metric], pred, answers) if normalize_answer(pred) else 0.0
    return {"pred": pred, "score": value, metric: value}
