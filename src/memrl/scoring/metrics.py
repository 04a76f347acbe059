"""Answer metrics (reference memagent_official.md §2.5.2–2.5.3, §1.3).

- `exact_match` / `sub_em` / `f1`: SQuAD/HotpotQA-normalised comparisons (official evaluation).
- `boxed_reward`: the strict `\\boxed{}` verifier of training and the data filter.
- `training_reward`: the training reward of a row: `boxed_reward`, which DocQA's numeric and
  multiple-choice rows (stage II) also pass within 0.15% or as a bare option letter.
- `contains_any`: the filter's substring criterion.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

from memrl.scoring.extract import extract_answer, extract_boxed, strip_string

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_SPECIAL_ANSWERS = ("yes", "no", "noanswer")
VERIFIER_TAIL_CHARS = 300  # the verifier only looks at the end of the response


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


def boxed_reward(response: str, ground_truths: Sequence[str]) -> float:
    """1.0 iff the last `\\boxed{}` in the response's last 300 lowercased chars equals a GT.

    Both sides go through `strip_string`; there is no article or punctuation removal. The GTs
    are lowercased like the response (a cased GT could otherwise never match).
    """
    boxed = extract_boxed(response.lower()[-VERIFIER_TAIL_CHARS:])
    if boxed is None:
        return 0.0
    pred = strip_string(boxed)
    return max((float(pred == strip_string(gt.lower())) for gt in ground_truths), default=0.0)


NUMERIC_REL_TOLERANCE = 1.5e-3  # QwenLong-L1's DocMath verifier: 0.15% relative error
_OPTION = re.compile(r"^\(?([a-z])\)?$")
_NUMBER = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)(e[-+]?\d+)?%?$")


def training_reward(response: str, ground_truths: Sequence[str], data_source: str | None) -> float:
    """The reward of a training rollout (both trainers and the filter-free stage II mix).

    Every row is scored by the strict boxed verifier. Stage II's DocQA-RL-1.6K rows (data_source
    `docmath*`, `long_toc_choices*`) have answers the strict match almost never reproduces
    (6.4492577269408615, option B), so for them a boxed number within 0.15% relative error or
    the boxed option letter with or without parentheses also scores 1 (QwenLong-L1's rules).
    Neither paper says which reward stage II used; this is our decision (config/README.md).
    """
    strict = boxed_reward(response, ground_truths)
    if strict or not (data_source or "").startswith(("docmath", "long_toc_choices")):
        return strict
    boxed = extract_boxed(response.lower()[-VERIFIER_TAIL_CHARS:])
    if boxed is None:
        return 0.0
    pred = strip_string(boxed)
    matches = (_lenient_match(pred, gt.lower().strip()) for gt in ground_truths)
    return float(any(matches))


def _lenient_match(pred: str, gold: str) -> bool:
    options = _OPTION.match(pred), _OPTION.match(gold)
    if all(options):
        return options[0].group(1) == options[1].group(1)
    numbers = [_number(x) for x in (pred, gold)]
    if None in numbers:
        return False
    got, want = numbers
    return abs(got - want) <= NUMERIC_REL_TOLERANCE * max(abs(want), 1e-12)


def _number(text: str) -> float | None:
    text = text.replace(",", "").replace(" ", "")
    if not _NUMBER.match(text):
        return None
    return float(text.rstrip("%"))


def contains_any(response: str, ground_truths: Sequence[str]) -> float:
    """1.0 iff some GT, lowercased, is a substring of the lowercased response."""
    text = response.lower()
    return float(any(gt.lower() in text for gt in ground_truths))


def score_answer_is(response: str, gold: str) -> dict[str, str | float | None]:
    """Official RULER-HQA per-item scoring: extract after "the answer is", then sub_em/em/f1.

    `gold` is the item's first answer. A missing or empty prediction scores 0 on every metric;
    `sub_em_strict` beside it differs only for a prediction that normalises to "" ("???", "the"):
    the official sub_em counts it as contained in every gold (1), the strict one scores it 0.
    """
    pred = extract_answer(response)
    if not pred:
        return {"pred": pred, "sub_em": 0.0, "sub_em_strict": 0.0, "em": 0.0, "f1": 0.0}
    lenient = sub_em(pred, gold)
    return {
        "pred": pred,
        "sub_em": lenient,
        "sub_em_strict": lenient if normalize_answer(pred) else 0.0,
        "em": exact_match(pred, gold),
        "f1": f1(pred, gold),
    }
