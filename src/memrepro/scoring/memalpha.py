"""Mem-α's per-source answer metrics, as the official `evaluate_agent_results.py` scores them
(Mem-α's official code):

- booksum, infbench_sum*: keyword hit ratio (gold keywords split on ", " when a string);
- pubmed-rct and every `icl*` source: the label (the first \\boxed{} content, else the whole
  answer) must be all digits and equal the gold (EM); the official repository's <answer>/\\box{}
  extractor is gone from it, so `<answer>0</answer>` and `\\box{2}` score 0;
- squad, hotpotqa: lower-cased containment of the gold;
- perltqa: the fraction of ";"-separated gold parts found in the prediction (the parts are
  lower-cased, the prediction is not: the official case bug, kept), else containment;
- lme_train, longmemeval*: a yes/no verdict of the judge model (`judge_prompt`, `judge_verdict`);
- anything else (RULER-QA): normalised substring EM, max over golds, of the raw answer and of the
  answer after "Answer:" (or its first line).

The baselines' protocol ("baseline", `long_context_eval.py`) differs in two places: RULER by
lower-cased containment of the first gold, and the `icl*` sources by a loose match on the
answer's first line (the normalised first gold inside it: `\boxed{12}` or `Label: 2` match gold
`2`). "baseline-strict" (a config switch) keeps RULER's but scores labels as Mem-α's own protocol
does, so that every method's labels are read the same way.

GRPO's r1 (`naive.py`, protocol "train", §3.2) differs in two places: keyword golds are split on
"," (then stripped), and `ttl_train*` sources are labels too.

`strip_think` first: the text after the first `</think>`; an unclosed `<think>` scores as "Empty".
Scores are per question; an instance is the mean of its questions, a source the mean of its
instances (`memrepro.evaluation.summarize`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from memrepro.scoring.metrics import normalize_answer

JUDGED_SOURCES = ("lme_train", "longmemeval")  # prefixes scored by the judge model
JUDGE_TEMPLATE = (
    "I will give you a question, a rubric for desired personalized response, and a response "
    "from a model. Please answer yes if the response satisfies the desired response. Otherwise, "
    "answer no. The model does not need to reflect all the points in the rubric. The response is "
    "correct as long as it recalls and utilizes the user's personal information correctly.\n\n"
    "Question: {}\n\nRubric: {}\n\nModel Response: {}\n\n"
    "Is the model response correct? Answer yes or no only."
)
EMPTY = "Empty"
Gold = str | Sequence[Any]
# evaluate_agent_results.py, long_context_eval.py (official / labels read strictly), naive.py
PROTOCOLS = ("agent", "baseline", "baseline-strict", "train")


def strip_think(prediction: str) -> str:
    if "</think>" in prediction:
        prediction = prediction.split("</think>")[1].strip()
    return EMPTY if "<think>" in prediction else prediction


def is_judged(source: str) -> bool:
    return source.startswith(JUDGED_SOURCES)


def score_answer(source: str, prediction: str, gold: Gold, protocol: str = "agent") -> float:
    """The score of one answer (not for judged sources: see `judge_prompt`) under `protocol`:
    "agent" (Mem-α's evaluate_agent_results.py), "baseline" (long_context_eval.py),
    "baseline-strict" (that, with labels read as "agent" reads them) or "train" (GRPO's r1,
    naive.py)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown scoring protocol {protocol!r} (known: {PROTOCOLS})")
    prediction = strip_think(prediction)
    training = protocol == "train"
    if _is_summary(source):
        if training and isinstance(gold, str):
            gold = [keyword.strip() for keyword in gold.split(",")]
        return keyword_hit(prediction, gold)
    if protocol == "baseline" and source.startswith("icl_"):
        return first_line_match(prediction, gold)
    if _is_label(source) or (training and source.startswith("ttl_train")):
        return label_em(prediction, gold)
    if source in ("squad", "hotpotqa"):
        return containment(prediction, gold)
    if source == "perltqa":
        return perltqa(prediction, _first(gold))
    if is_judged(source):
        raise ValueError(f"{source}: answers are scored by the judge model (judge_prompt)")
    if protocol.startswith("baseline") and source.startswith("ruler_"):
        return containment(prediction, gold)
    return normalized_sub_em(prediction, gold)


def gold_keywords(gold: Gold) -> list[str]:
    """A keyword gold as a list: a string is split on ", " (the evaluation's split)."""
    return gold.split(", ") if isinstance(gold, str) else [str(k) for k in gold]


def keyword_hit(prediction: str, gold: Gold) -> float:
    keywords = gold_keywords(gold)
    if not keywords:
        raise ValueError("a keyword gold with no keywords")
    lowered = prediction.lower()
    return sum(str(k).lower() in lowered for k in keywords) / len(keywords)


def extract_label(text: str) -> str:
    """The first \\boxed{…} content (balanced braces), else the whole text; stripped."""
    boxed = _braced(text, "\\boxed{")
    return (text if boxed is None else boxed).strip()


def label_em(prediction: str, gold: Gold) -> float:
    """The label, quotes and spaces stripped, all digits and equal to the first gold."""
    label = extract_label(prediction).strip("\"'").strip()
    if not re.match(r"^\d+$", label):
        return 0.0
    return float(label == str(_first(gold)).strip("\"'").strip())


def first_line_match(prediction: str, gold: Gold) -> float:
    """The baselines' loose label match: the normalised first gold inside the normalised first
    line of the answer (an empty gold matches nothing)."""
    target = normalize_answer(str(_first(gold)))
    first_line = prediction.strip().split("\n", 1)[0]
    return float(bool(target) and target in normalize_answer(first_line))


def containment(prediction: str, gold: Gold) -> float:
    return float(str(_first(gold)).lower() in prediction.lower())


def perltqa(prediction: str, gold: str) -> float:
    if ";" in gold:
        parts = gold.split(";")
        return sum(part.lower().strip() in prediction for part in parts) / len(parts)
    return float(gold.lower() in prediction.lower())


def normalized_sub_em(prediction: str, gold: Gold) -> float:
    golds = _flatten(gold)
    candidates = [prediction, _after_answer_prefix(prediction)]
    return float(any(normalize_answer(g) in normalize_answer(c) for g in golds for c in candidates))


def judge_prompt(question: str, gold: Gold, prediction: str) -> str:
    """The LongMemEval rubric prompt (gold is the rubric; a list shows as its Python repr, as
    the official str.format does)."""
    return JUDGE_TEMPLATE.format(question, gold, strip_think(prediction))


def judge_verdict(reply: str) -> float:
    """1 iff the reply says "yes" and nowhere contains "no" (so "not" fails too: official)."""
    reply = reply.strip().lower()
    return float("yes" in reply and "no" not in reply)


def _is_summary(source: str) -> bool:
    return source == "booksum" or source.startswith("infbench_sum")


def _is_label(source: str) -> bool:
    return source == "pubmed-rct" or "icl" in source


def _first(gold: Gold) -> Any:
    if isinstance(gold, str):
        return gold
    return gold[0] if len(gold) else ""


def _flatten(gold: Gold) -> list[str]:
    if isinstance(gold, str):
        return [gold]
    if gold and isinstance(gold[0], list | tuple):
        return [str(g) for sub in gold for g in sub]
    return [str(g) for g in gold]


def _after_answer_prefix(text: str) -> str:
    """The rest of the line after the first "Answer:", else the first line; stripped."""
    match = re.search(r"Answer:(.*)(?:\n|$)", text, re.IGNORECASE) or re.search(
        r"^(.*)(?:\n|$)", text
    )
    found = match.group(1).strip() if match else ""
    return re.sub(r"^Answer:", "", found, flags=re.IGNORECASE).strip()


def _braced(text: str, command: str) -> str | None:
    start = text.find(command)
    if start < 0:
        return None
    depth = 0
    open_at = start + len(command) - 1
    for i in range(open_at, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[open_at + 1 : i]
    return None
