"""Answer metrics (MemAgent's official code).

- `exact_match` / `sub_em` / `f1`: SQuAD/HotpotQA-normalised comparisons (official evaluation).
(The `\\boxed{}` verifier of training and the data filter is `memrepro.scoring.verifier`.)
- `contains_any`: the filter's substring criterion.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Sequence

from memrepro.scoring.extract import final_answer

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_SPECIAL_ANSWERS = ("yes", "no", "noanswer")


def normalize_answer(s: str) -> str:
    """SQuAD/HotpotQA normalisation: lowercase, drop punctuation and articles, collapse spaces."""
    s = s.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", s).split())


def exact_match(pred: str, gold: str) -> float:
    return float(normalize_answer(pred) == normalize_answer(gold))


def sub_em(pred: str, gold: str) -> float:
    """Bidirectional containment of the normalised strings (the official `sub_em`).

    As in the official code, a prediction that normalises to "" is contained in every gold;
    callers score empty predictions as 0 before calling (see `score_answer_is`).
    """
    p, g = normalize_answer(pred), normalize_answer(gold)
    return float(g in p or p in g)


def f1(pred: str, gold: str) -> float:
    """Token F1; 0 when either side is yes/no/noanswer and they differ (HotpotQA)."""
    p, g = normalize_answer(pred), normalize_answer(gold)
    if (p in _SPECIAL_ANSWERS or g in _SPECIAL_ANSWERS) and p != g:
        return 0.0
    return token_f1(pred, gold)


def token_f1(pred: str, gold: str) -> float:
    """Bag-of-tokens F1 of the normalised strings, without HotpotQA's yes/no rule (LongBench)."""
    p_tokens, g_tokens = normalize_answer(pred).split(), normalize_answer(gold).split()
    common = sum((Counter(p_tokens) & Counter(g_tokens)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p_tokens), common / len(g_tokens)
    return 2 * precision * recall / (precision + recall)


def best_over(metric: Callable[[str, str], float], pred: str, golds: Sequence[str]) -> float:
    """`metric` against the best of the golds (0 with none)."""
    return max((metric(pred, gold) for gold in golds), default=0.0)


def contains_any(response: str, ground_truths: Sequence[str]) -> float:
    """1.0 iff some GT, lowercased, is a substring of the lowercased response."""
    text = response.lower()
    return float(any(gt.lower() in text for gt in ground_truths))


ANSWER_IS_METRICS = ("sub_em", "em", "f1")  # what `score_answer_is` scores the first gold by


def score_answer_is(
    response: str, gold: str, answer_format: str = "answer_is"
) -> dict[str, str | float | None]:
    """Official RULER-HQA (and RULER QA) per-item scoring: extract after "the answer is" in the
    text after the last `</think>` (a reasoning model's draft answer does not count; with
    nothing after it, in the whole reply: `answer_part`), then
    sub_em/em/f1; f1 is rounded to 2 decimals per item, as the official evaluator does.

    `gold` is the item's first answer; `answer_format` "boxed": the prediction is the last
    `\\boxed{}` instead (memrepro.scoring.extract.final_answer). A missing or empty prediction
    scores 0 on every metric; `sub_em_strict` beside it differs only for a prediction that
    normalises to "" ("???", "the"): the official sub_em counts it as contained in every gold (1),
    the strict one scores it 0.
    """
    pred = final_answer(response, answer_format)
    if not pred:
        return {"pred": pred, "sub_em": 0.0, "sub_em_strict": 0.0, "em": 0.0, "f1": 0.0}
    lenient = sub_em(pred, gold)
    return {
        "pred": pred,
        "sub_em": lenient,
        "sub_em_strict": lenient if normalize_answer(pred) else 0.0,
        "em": exact_match(pred, gold),
        "f1": round(f1(pred, gold), 2),
    }


def dropped_officially(prediction: dict) -> bool:
    """Whether the official evaluator leaves a prediction out: it skips every item whose raw
    output is "" (a failed request among them)."""
    return bool(prediction["failed"]) or prediction.get("response") == ""
