"""Which gold answers can tell a right reply from a wrong one, under the metric that scores them.

A gold is refused by every data reader (custom data, the released and synthesized RULER-HQA
sets, RULER, LongBench) before any model work, on one rule per metric (the second for one's own
data only):

- nothing left: the gold is empty as the metric compares it (`sub_em`, `em`, `f1`: SQuAD
  normalisation, so "A", "The", "?", "…" are empty; `string_match`: lowercased, blank;
  `rouge`: no word once split on "." and whitespace, as pltrdy's ROUGE splits). Every reply
  then scores the same on it: 1 under containment (the empty string is in every reply), 0
  under exact match, F1 and ROUGE.
- one character other than a digit, for the containment metrics (`sub_em`, `string_match`): a
  letter occurs inside almost every word, so nearly any reply contains it and scores 1 (a
  multiple-choice set with letter answers, "B"); a lone symbol ("…") is no answer. The line is
  drawn there and no further, so the published benchmarks' golds pass: a digit ("3",
  HotpotQA's counts) is found only in a reply that states a number holding it, and two
  characters suffice for HotpotQA's "no" (which the official sub_em also finds inside "not":
  that is the metric as published, kept). A published set (RULER's SQuAD and HotpotQA
  questions, LongBench, RULER-HQA) keeps such a gold: it is scored as its paper scored it, so
  that our numbers compare with the published ones; one's own data has no published number to
  match, and is held to the rule.
"""

from __future__ import annotations

from collections.abc import Sequence

from memrepro.scoring.metrics import normalize_answer

CONTAINMENT = ("sub_em", "string_match")
_NORMALISED = ("sub_em", "em", "f1")


def one_letter(form: str) -> bool:
    """Whether a compared form is one character other than a digit: inside almost any text."""
    return len(form) == 1 and not form.isdigit()


def compared_form(metric: str, gold: str) -> str:
    """The gold as `metric` compares it with a reply."""
    if metric in _NORMALISED:
        return normalize_answer(gold)
    if metric == "string_match":
        return gold.lower().strip()
    if metric == "rouge":
        return " ".join(word for sentence in gold.split(".") for word in sentence.split())
    raise ValueError(f"unknown metric {metric!r}")


def gold_problem(metric: str, gold: str, published: bool = False) -> str | None:
    """Why `gold` cannot discriminate under `metric` (module docstring), or None."""
    form = compared_form(metric, gold)
    if not form:
        return f"{gold!r} leaves nothing to compare under {metric}, so every reply scores the same"
    if not published and metric in CONTAINMENT and one_letter(form):
        return (
            f"{gold!r} is one character: {metric} would find it inside almost any reply; "
            "write the answer out (an option's text, not its letter)"
        )
    return None


def bad_gold(
    golds: Sequence[str], metrics: Sequence[str], field: str = "answers", published: bool = False
) -> str | None:
    """The first of `golds` (a row's `field`) that cannot discriminate under one of `metrics`,
    as "field 'answers[j]': why"; None when every gold can. `published`: a benchmark's own set."""
    for j, gold in enumerate(golds):
        for metric in metrics:
            problem = gold_problem(metric, gold, published)
            if problem is not None:
                return f"field '{field}[{j}]': {problem}"
    return None
