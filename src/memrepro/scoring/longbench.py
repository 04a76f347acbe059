"""LongBench scoring (LongBench's official eval.py) and the paper's metrics (seed 000, Tables 2/3).

- `qa_f1_score`: LongBench's QA metric: SQuAD normalisation (lowercase, drop
  `string.punctuation`, drop a/an/the, collapse whitespace), then bag-of-tokens F1. Unlike
  HotpotQA's F1 (`memrepro.scoring.metrics.f1`) there is no yes/no/noanswer rule.
- `rouge_scores`: pltrdy's `rouge` 1.0.1 (`from rouge import Rouge`), which LongBench uses, not
  Google's `rouge-score`: case-sensitive, no stemming, sentences split on ".", unique n-grams
  and summary-level union LCS. Any exception (an empty hypothesis, or Python's recursion
  limit in its recursive LCS on a sentence of about a thousand words) scores 0, as in LongBench.
- `score_longbench`: one item. QA: the paper's per-item binary score is `sub_em` (Table 3's
  values are all multiples of 1/200) on the answer after "the answer is" (MemAgent's final
  prompt asks for it) or, without that phrase, on the whole reply (LongBench's own prompts ask
  for the bare answer); LongBench's `qa_f1` on the raw reply is reported beside it. SUM: the
  ROUGE-1/2/L recalls of Table 2, `score` their mean; LongBench's own ROUGE-L F beside them.
"""

from __future__ import annotations

from collections.abc import Sequence

from memrepro.scoring.extract import answer_part, extract_solution, final_answer
from memrepro.scoring.metrics import best_over, normalize_answer, sub_em, token_f1

# LongBench's tasks by the metric they take: QA (F1) and summaries (ROUGE)
LONGBENCH_QA = ("2wikimqa", "hotpotqa", "musique", "narrativeqa", "qasper")
LONGBENCH_SUM = ("gov_report", "qmsum")
ROUGE_KEYS = ("rouge_1_recall", "rouge_2_recall", "rouge_l_recall", "rouge_l_f")
RECALL_KEYS = ROUGE_KEYS[:3]


def qa_f1_score(pred: str, gold: str) -> float:
    """LongBench's `qa_f1_score`: token F1 of the normalised strings (0 without common tokens)."""
    return token_f1(pred, gold)


def rouge_scores(pred: str, gold: str) -> dict[str, float]:
    """ROUGE-1/2/L recall and ROUGE-L F of pltrdy's `Rouge().get_scores([pred], [gold], avg=True)`.

    Every value is 0.0 when the package raises (e.g. "Hypothesis is empty." for "" or ".").
    """
    try:
        from rouge import Rouge
    except ImportError as e:  # a dependency of the package; say which one when it is missing
        raise ImportError(
            "LongBench ROUGE needs pltrdy's `rouge` (pip install rouge==1.0.1)"
        ) from e
    try:
        scores = Rouge().get_scores([pred], [gold], avg=True)
    except Exception:  # LongBench scores any failure 0 (metrics.py rouge_score)
        return dict.fromkeys(ROUGE_KEYS, 0.0)
    return {
        "rouge_1_recall": scores["rouge-1"]["r"],
        "rouge_2_recall": scores["rouge-2"]["r"],
        "rouge_l_recall": scores["rouge-l"]["r"],
        "rouge_l_f": scores["rouge-l"]["f"],
    }


def score_longbench(
    task: str,
    response: str,
    answers: Sequence[str],
    strip_think: bool = False,
    answer_format: str = "answer_is",
) -> dict:
    """Per-item scores of one model reply: {"pred", "score", ...metrics}, all in [0, 1].

    QA tasks: {"pred", "score" (= sub_em), "sub_em", "qa_f1"}. SUM tasks: {"pred", "score"
    (mean of the three recalls), "rouge_1_recall", "rouge_2_recall", "rouge_l_recall",
    "rouge_l_f"}. Every metric takes the maximum over the golds, as LongBench's `scorer` does.
    A summary is scored as generated, as LongBench does (`strip_think`: only its text after the
    last `</think>`, which spares a reasoning model's draft from the recalls). `answer_format`:
    where a QA reply gives its answer (memrepro.scoring.extract.final_answer).
    """
    if task in LONGBENCH_QA:
        return _score_qa(response, answers, answer_format)
    if task in LONGBENCH_SUM:
        return summary_scores(extract_solution(response) if strip_think else response, answers)
    raise ValueError(
        f"unknown LongBench task {task!r}; expected one of {LONGBENCH_QA + LONGBENCH_SUM}"
    )


def _score_qa(response: str, answers: Sequence[str], answer_format: str = "answer_is") -> dict:
    """`pred` = the text after the last "the answer is" (or in the last `\\boxed{}`, as
    `answer_format` says) of the reply's final part (after `</think>`, or the whole reply when
    nothing follows it: `answer_part`, as for RULER-HQA), else that whole part stripped. A
    prediction that normalises to "" (e.g. "", ".", "The") scores sub_em 0: the containment test
    would otherwise match every gold.
    `qa_f1` scores the raw reply, as LongBench does."""
    pred = qa_prediction(response, answer_format)
    hit = best_over(sub_em, pred, answers) if normalize_answer(pred) else 0.0
    return {
        "pred": pred,
        "score": hit,
        "sub_em": hit,
        "qa_f1": best_over(qa_f1_score, response, answers),
    }


def qa_prediction(response: str, answer_format: str = "answer_is") -> str:
    """The answer a QA reply gives: after the last "the answer is" (or in the last `\\boxed{}`)
    of its final part (after `</think>`, or the whole reply when nothing follows it), else that
    whole part stripped."""
    extracted = final_answer(response, answer_format)
    return answer_part(response).strip() if extracted is None else extracted


def summary_scores(pred: str, answers: Sequence[str]) -> dict:
    """ROUGE of a summary against its best gold (pltrdy's tokenisation already normalises
    whitespace): `score` the mean of the three recalls."""
    per_gold = [rouge_scores(pred, gold) for gold in answers]
    best = {key: max((s[key] for s in per_gold), default=0.0) for key in ROUGE_KEYS}
    return {"pred": pred, "score": sum(best[k] for k in RECALL_KEYS) / len(RECALL_KEYS), **best}
