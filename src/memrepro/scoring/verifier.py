"""The `\\boxed{}` verifier of training and the data filter (MemAgent's official code).

Two verifiers, chosen by name wherever a filter or a training reward is built:
- "official" (the default): the official `hotpotqa_verifier.compute_score` (data filter) and
  `verl/utils/reward_score/hotpotqa.py` (training reward). The response's last 300 characters,
  lowercased; the box of `extract_boxed_official` (no `\\fbox`; the `\\boxed ` space form);
  both sides through the cut-down normaliser `strip_string_official`; exact string equality;
  the max over the ground truths.
- "extended": our verifier before the official one: `extract_boxed` (also `\\fbox`, the last box of
  either form) and the full MATH normaliser `strip_string` (plain `%`, units, fractions, square
  roots, "x =", ".5"), so it accepts more: `\\boxed{50%}` against gold "50" scores 1 here and 0
  officially.

The training reward defines what RL optimises, so training and the filter default to the
official one; the extended one stays available for comparison.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Literal, get_args

from memrepro.scoring.extract import (
    extract_boxed,
    extract_boxed_official,
    strip_string,
    strip_string_official,
)

Verifier = Literal["official", "extended"]
VERIFIERS: tuple[str, ...] = get_args(Verifier)
DEFAULT_VERIFIER: Verifier = "official"
TAIL_CHARS = 300  # the verifier reads only the end of the response
LENIENT_SOURCES = ("docmath", "long_toc_choices")  # stage II's DocQA rows (training_reward)
NUMERIC_REL_TOLERANCE = 1.5e-3  # QwenLong-L1's DocMath verifier: 0.15% relative error
_OPTION = re.compile(r"^\(?([a-z])\)?$")
_NUMBER = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)(e[-+]?\d+)?%?$")

_EXTRACT: dict[str, Callable[[str], str | None]] = {
    "official": extract_boxed_official,
    "extended": extract_boxed,
}
_NORMALISE: dict[str, Callable[[str], str]] = {
    "official": strip_string_official,
    "extended": strip_string,
}


def check_verifier(verifier: str) -> Verifier:
    """`verifier` itself when it names a verifier, else a ValueError listing them."""
    if verifier not in VERIFIERS:
        raise ValueError(f"unknown verifier {verifier!r}: choose one of {', '.join(VERIFIERS)}")
    return verifier  # type: ignore[return-value]


def normalise(answer: str, verifier: Verifier = DEFAULT_VERIFIER) -> str:
    """`answer` through the verifier's normaliser (no lowercasing: the callers lowercase)."""
    return _NORMALISE[check_verifier(verifier)](answer)


def boxed_content(response: str, verifier: Verifier = DEFAULT_VERIFIER) -> str | None:
    """The raw box content the verifier reads: from the response's last 300 characters,
    lowercased; None when that window holds no box it accepts."""
    # cut, then lowercase, as the official code does ("İ" lowercases to two characters)
    return _EXTRACT[check_verifier(verifier)](response[-TAIL_CHARS:].lower())


def boxed_answer(response: str, verifier: Verifier = DEFAULT_VERIFIER) -> str | None:
    """The normalised prediction the verifier compares with the ground truths, or None."""
    content = boxed_content(response, verifier)
    return None if content is None else normalise(content, verifier)


def boxed_reward(
    response: str, ground_truths: Sequence[str], verifier: Verifier = DEFAULT_VERIFIER
) -> float:
    """1.0 iff the verifier's boxed prediction equals some ground truth, lowercased and
    normalised the same way, else 0.0 (also with no ground truth: the official code would fail
    on an empty list). No article or punctuation removal: this is the strict `is_equiv`."""
    pred = boxed_answer(response, verifier)
    if pred is None:
        return 0.0
    golds = (normalise(gt.lower(), verifier) for gt in ground_truths)
    return max((float(pred == gold) for gold in golds), default=0.0)


def training_reward(
    response: str,
    ground_truths: Sequence[str],
    data_source: str | None,
    verifier: Verifier = DEFAULT_VERIFIER,
) -> float:
    """The reward of a training rollout (both trainers): `boxed_reward` with `verifier`.

    Stage II's DocQA-RL-1.6K rows (data_source `docmath*`, `long_toc_choices*`) also score 1
    for a boxed number within 0.15% relative error or the boxed option letter with or without
    parentheses (QwenLong-L1's rules; our decision, config/README.md), read from the same
    verifier's normalised box.
    """
    strict = boxed_reward(response, ground_truths, verifier)
    if strict or not (data_source or "").startswith(LENIENT_SOURCES):
        return strict
    pred = boxed_answer(response, verifier)
    if pred is None:
        return 0.0
    return float(any(_lenient_match(pred, gt.lower().strip()) for gt in ground_truths))


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
