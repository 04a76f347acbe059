"""Mem-α's per-source metrics against hand-computed cases of the official scorer's behaviour."""

from __future__ import annotations

import pytest

from memrepro.scoring.memalpha import (
    extract_label,
    judge_prompt,
    judge_verdict,
    score_answer,
    strip_think,
)


def test_strip_think_keeps_the_text_after_the_first_close_and_empties_an_open_think():
    assert strip_think("<think>x</think> Paris") == "Paris"
    assert strip_think("a</think>b</think>c") == "b"  # official split()[1]
    assert strip_think("<think>still thinking") == "Empty"
    assert strip_think("plain") == "plain"


@pytest.mark.parametrize(
    ("prediction", "gold", "expected"),
    [
        ("The Hobbit is about Bilbo and a dragon.", "bilbo, dragon, ring", 2 / 3),
        ("The Hobbit is about Bilbo and a dragon.", ["Bilbo", "Gandalf"], 1 / 2),
        ("nothing", "a, b", 0.0),
        ("<think>bilbo</think>no names", "bilbo", 0.0),  # only the text after </think>
    ],
)
def test_keyword_hit_ratio(prediction, gold, expected):
    assert score_answer("booksum", prediction, gold) == pytest.approx(expected)
    assert score_answer("infbench_sum_eng_shots2", prediction, gold) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("prediction", "gold", "expected"),
    [
        ("The label is \\boxed{3}.", "3", 1.0),
        ("\\boxed{ '3' }", ["3"], 1.0),  # quotes and spaces stripped
        ("\\boxed{3.0}", "3", 0.0),  # digits only
        ("\\boxed{label 3}", "3", 0.0),
        ("<answer>12</answer> \\boxed{4}", "4", 1.0),  # the box, never <answer>
        ("<answer>0</answer>", "0", 0.0),  # officially no <answer> extractor: not digits
        ("\\boxed{4} then \\boxed{5}", "4", 1.0),  # the first box
        ("7", "7", 1.0),  # no box: the whole answer
        ("\\box{2}", "2", 0.0),  # nor \box{}
        ("\\boxed{{1}", "1", 0.0),  # unbalanced: the whole text, not digits
    ],
)
def test_boxed_label_exact_match(prediction, gold, expected):
    assert score_answer("pubmed-rct", prediction, gold) == expected
    assert score_answer("icl_trec_coarse_6600shot_balance", prediction, gold) == expected


@pytest.mark.parametrize(
    ("prediction", "gold", "official", "strict"),
    [
        ("\\boxed{12}", "2", 1.0, 0.0),  # "2" inside the first line "boxed12"
        ("Label: 2", "2", 1.0, 0.0),
        ("\\boxed{2}", ["2"], 1.0, 1.0),
        ("I think\nLabel: 2", "2", 0.0, 0.0),  # the first line only
        ("3", "2", 0.0, 0.0),
    ],
)
def test_the_baselines_match_icl_labels_loosely_on_the_first_line(
    prediction, gold, official, strict
):
    source = "icl_trec_coarse_6600shot_balance"
    assert score_answer(source, prediction, gold, "baseline") == official
    assert score_answer(source, prediction, gold, "baseline-strict") == strict
    assert score_answer(source, prediction, gold, "agent") == strict
    assert score_answer("pubmed-rct", prediction, gold, "baseline") == strict  # icl_* only


def test_extract_label_reads_nested_braces():
    assert extract_label("\\boxed{\\text{A}}") == "\\text{A}"


@pytest.mark.parametrize(
    ("source", "prediction", "gold", "expected"),
    [
        ("squad", "It was in PARIS, France", "Paris", 1.0),
        ("squad", "It was in Lyon", ["Paris", "Lyon"], 0.0),  # only the first gold counts
        ("hotpotqa", "yes", "Yes", 1.0),
        ("perltqa", "tom and anna went", "Tom; Anna", 1.0),  # parts lower-cased, stripped
        ("perltqa", "Tom and anna went", "tom; Anna", 0.5),
        ("perltqa", "Tom and Anna went", "tom;Anna", 0.0),  # "tom" not in "Tom ..." (case bug)
        ("perltqa", "Anna went", "ANNA", 1.0),  # no ';': lower-cased containment
    ],
)
def test_containment_metrics(source, prediction, gold, expected):
    assert score_answer(source, prediction, gold) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("prediction", "gold", "expected"),
    [
        ("The answer is The Eiffel Tower!", ["Eiffel tower"], 1.0),  # normalised substring
        ("Reasoning...\nAnswer: Lyon\nmore", [["Paris"], ["Lyon"]], 1.0),  # nested golds
        ("Answer: Rome", ["Paris"], 0.0),
        ("first line\nsecond", "second", 1.0),  # the raw text is searched too
    ],
)
def test_ruler_sources_use_normalised_substring_em(prediction, gold, expected):
    assert score_answer("ruler_qa1_197K", prediction, gold) == expected


def test_judged_sources_go_through_the_judge_prompt_and_verdict():
    with pytest.raises(ValueError, match="judge"):
        score_answer("longmemeval_s*", "x", "y")
    prompt = judge_prompt("Q?", "likes tea", "<think>hm</think>You like tea")
    assert prompt.startswith("I will give you a question, a rubric")
    assert "Question: Q?\n\nRubric: likes tea\n\nModel Response: You like tea\n\n" in prompt
    assert prompt.endswith("Is the model response correct? Answer yes or no only.")
    assert judge_verdict(" Yes ") == 1.0
    assert judge_verdict("yes, it is not wrong") == 0.0  # contains "no" (official)
    assert judge_verdict("No.") == 0.0
