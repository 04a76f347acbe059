"""The `\\boxed{}` verifier of training and the filter: official (the default) and
extended, against hand-computed values (MemAgent's official code)."""

from __future__ import annotations

import pytest

from memrepro.scoring.extract import extract_boxed_official, strip_string_official
from memrepro.scoring.verifier import (
    DEFAULT_VERIFIER,
    VERIFIERS,
    boxed_answer,
    boxed_content,
    boxed_reward,
    check_verifier,
    normalise,
    training_reward,
)
from memrepro.verl.reward import compute_score


def both(response: str, golds: list[str]) -> tuple[float, float]:
    """(official, extended) rewards."""
    return boxed_reward(response, golds), boxed_reward(response, golds, "extended")


def test_the_official_verifier_is_the_default():
    assert DEFAULT_VERIFIER == "official" and VERIFIERS == ("official", "extended")
    assert check_verifier("extended") == "extended"
    with pytest.raises(ValueError, match="unknown verifier 'strict': choose one of official"):
        check_verifier("strict")
    with pytest.raises(ValueError, match="unknown verifier"):
        boxed_reward("\\boxed{a}", ["a"], "strict")  # type: ignore[arg-type]


def test_percent_is_kept_officially():
    # an example: only the escaped \% is dropped by the official normaliser
    assert both("\\boxed{50%}", ["50"]) == (0.0, 1.0)
    assert both("\\boxed{50\\%}", ["50"]) == (1.0, 1.0)
    assert both("\\boxed{50%}", ["50%"]) == (1.0, 1.0)


@pytest.mark.parametrize(
    ("response", "golds", "official", "extended"),
    [
        ("\\boxed{\\frac12}", ["1/2"], 0.0, 1.0),  # fractions
        ("\\boxed{0.5}", ["\\frac{1}{2}"], 0.0, 1.0),  # "0.5" -> \frac{1}{2}
        ("\\boxed{\\sqrt3}", ["\\sqrt{3}"], 0.0, 1.0),  # square roots
        ("\\boxed{5 \\text{ km}}", ["5"], 0.0, 1.0),  # units
        ("\\boxed{x = 1954}", ["1954"], 0.0, 1.0),  # a short "x =" prefix
        ("\\boxed{.5}", ["0.5"], 0.0, 1.0),  # leading zero of a string starting with "."
        ("\\boxed{x .5}", ["x 0.5"], 1.0, 1.0),  # " ." -> " 0." is in both
        ("\\boxed{\\dfrac{1}{2}}", ["\\frac{1}{2}"], 1.0, 1.0),  # dfrac -> frac in both
        ("\\boxed{Barack  Obama}", ["barack obama"], 1.0, 1.0),  # every space removed
        ("\\boxed{the Beatles}", ["Beatles"], 0.0, 0.0),  # no article removal
        ("\\boxed{Paris.}", ["Paris"], 0.0, 0.0),  # no punctuation removal
    ],
)
def test_what_only_the_extended_normaliser_accepts(response, golds, official, extended):
    assert both(response, golds) == (official, extended)


def test_fbox_is_rejected_officially():
    assert both("\\fbox{Paris}", ["Paris"]) == (0.0, 1.0)
    assert boxed_content("\\fbox{paris}") is None
    # officially a \fbox is never read: an earlier \boxed still counts; extended takes the last
    assert both("\\boxed{Paris} or \\fbox{Rome}", ["Paris"]) == (1.0, 0.0)
    assert both("\\boxed{Paris} or \\fbox{Rome}", ["Rome"]) == (0.0, 1.0)


def test_only_the_last_300_characters_are_read():
    assert both("\\boxed{Paris}" + "x" * 287, ["Paris"]) == (1.0, 1.0)  # 13 + 287 = 300
    assert both("\\boxed{Paris}" + "x" * 288, ["Paris"]) == (0.0, 0.0)  # the "\" is cut off
    # an answer box earlier than the last 300 characters is not seen, even with no later box
    assert both("\\boxed{Paris}" + " filler" * 50, ["Paris"]) == (0.0, 0.0)
    # and a later box in the window wins over it
    assert both("\\boxed{Rome}" + "." * 400 + "\\boxed{Paris}", ["Paris"]) == (1.0, 1.0)


def test_the_window_is_cut_before_lowercasing():
    # "İ" lowercases to two characters: cut first (official), the box stays in the window
    response = "\\boxed{Paris}" + "İ" * 287
    assert both(response, ["Paris"]) == (1.0, 1.0)
    assert both(response + "x", ["Paris"]) == (0.0, 0.0)  # one more character: out of it


def test_lowercasing():
    assert both("\\boxed{PARIS}", ["Paris"]) == (1.0, 1.0)  # both sides lowercased
    assert both("\\BOXED{Paris}", ["paris"]) == (1.0, 1.0)  # the window is lowercased first
    assert boxed_answer("So \\boxed{New York}") == "newyork"


def test_the_space_form():
    assert both("so the answer is \\boxed Paris", ["Paris"]) == (1.0, 1.0)
    assert both("$\\boxed Paris$ as said", ["Paris"]) == (1.0, 1.0)  # up to the first "$"
    assert boxed_content("\\boxed paris and more") == "paris and more"
    assert both("\\boxed Paris.", ["Paris"]) == (0.0, 0.0)  # nothing is stripped but spaces
    # officially the space form wins wherever it is, even before a later \boxed{...}
    assert extract_boxed_official("\\boxed rome, i mean \\boxed{paris}") == (
        "rome, i mean \\boxed{paris}"
    )
    assert both("\\boxed Rome, I mean \\boxed{Paris}", ["Paris"]) == (0.0, 1.0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("so \\boxed{42}.", "42"),
        ("\\boxed{1} then \\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
        ("\\boxed{a{b{c}}d} tail", "a{b{c}}d"),
        ("\\boxed{{paris}}", "{paris}"),
        ("\\boxed{paris", None),  # never closes
        ("\\boxed{pa{ris}", None),
        ("\\boxed{paris} and \\boxed{rome", None),  # the last box is unclosed: no fallback
        ("\\boxedx{paris}", None),  # `{` must follow `\boxed` directly
        ("\\boxed{paris} \\boxed", None),  # a bare trailing \boxed
        ("\\fbox{paris}", None),
        ("no box", None),
        ("", None),
    ],
)
def test_extract_boxed_official(text, expected):
    assert extract_boxed_official(text) == expected


def test_unbalanced_braces_score_zero():
    assert both("\\boxed{Paris", ["Paris"]) == (0.0, 0.0)
    assert both("\\boxed{Paris} and \\boxed{Rome", ["Paris"]) == (0.0, 0.0)
    assert both("\\boxed{{Paris}}", ["Paris"]) == (0.0, 0.0)
    assert both("\\boxed{Pa}ris}", ["Pa"]) == (1.0, 1.0)


def test_the_max_over_several_golds():
    assert both("\\boxed{Obama}", ["Barack Obama", "obama"]) == (1.0, 1.0)
    assert both("\\boxed{Obama}", ["Barack Obama", "Michelle Obama"]) == (0.0, 0.0)
    assert both("\\boxed{Obama}", []) == (0.0, 0.0)
    assert both("Obama", ["Obama"]) == (0.0, 0.0)  # no box, no reward
    assert both("\\boxed{50%}", ["fifty", "50"]) == (0.0, 1.0)
    assert both("\\boxed{50%}", ["fifty", "50%"]) == (1.0, 1.0)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("barack obama", "barackobama"),
        ("line\nbreak", "linebreak"),
        ("\\!7", "7"),
        ("a\\\\b", "a\\b"),
        ("\\tfrac{1}{2}", "\\frac{1}{2}"),
        ("\\left( 1, 2 \\right)", "(1,2)"),
        ("90^\\circ", "90"),
        ("90^{\\circ}", "90"),
        ("\\$5", "5"),
        ("50\\%", "50"),
        ("x .5", "x0.5"),
        ("{.25}", "{0.25}"),
        ("", ""),
        # what the cut-down normaliser lacks (the extended one has it)
        ("$5", "$5"),
        ("50%", "50%"),
        (".5", ".5"),
        ("0.5", "0.5"),
        ("x = 3", "x=3"),
        ("\\frac12", "\\frac12"),
        ("\\sqrt3", "\\sqrt3"),
        ("3/4", "3/4"),
        ("5 \\text{ cm}", "5\\text{cm}"),
        ("Paris\t", "Paris\t"),  # only spaces and newlines go
    ],
)
def test_strip_string_official(raw, expected):
    assert strip_string_official(raw) == expected
    assert normalise(raw) == expected


@pytest.mark.parametrize(
    ("response", "golds", "source", "official", "extended"),
    [
        ("\\boxed{Paris}", ["paris"], "ruler_hqa", 1, 1),
        ("\\boxed{50%}", ["50"], "ruler_hqa", 0, 1),  # the example
        ("\\fbox{Paris}", ["Paris"], None, 0, 1),
        ("\\boxed Paris", ["Paris"], None, 1, 1),
        ("\\boxed Rome, I mean \\boxed{Paris}", ["Paris"], None, 0, 1),  # space form first
        ("\\boxed{\\frac12}", ["0.5"], "ruler_hqa", 0, 1),
        ("\\boxed{6.449}", ["6.4492577269408615"], "docmath_0_20000", 1, 1),
        ("\\boxed{6.5}", ["6.4492577269408615"], "docmath_0_20000", 0, 0),
        ("\\boxed{1,234}", ["1234"], "docmath_20000_40000", 1, 1),
        ("\\boxed{(B)}", ["B"], "long_toc_choices_0_20000", 1, 1),
        ("\\boxed{(C)}", ["B"], "long_toc_choices_0_20000", 0, 0),
        ("\\boxed{Paris}" + "x" * 300, ["Paris"], None, 0, 0),
        ("6.449", ["6.449"], "docmath_0_20000", 0, 0),
    ],
)
def test_training_reward_of_each_verifier(response, golds, source, official, extended):
    assert training_reward(response, golds, source) == official
    assert training_reward(response, golds, source, "extended") == extended


def test_the_training_reward_defaults_to_official_and_keeps_docqa_leniency():
    assert training_reward("\\boxed{50%}", ["50"], "ruler_hqa") == 0.0
    assert training_reward("\\boxed{50%}", ["50"], "ruler_hqa", "extended") == 1.0
    # stage II's DocQA rules read the official verifier's box
    assert training_reward("\\boxed{6.449}", ["6.4492577269408615"], "docmath_0_20000") == 1.0
    assert training_reward("\\boxed{1,234}", ["1234"], "docmath_20000_40000") == 1.0
    assert training_reward("\\boxed{(B)}", ["B"], "long_toc_choices_0_20000") == 1.0
    assert training_reward("\\fbox{(B)}", ["B"], "long_toc_choices_0_20000") == 0.0
    assert training_reward("\\fbox{(B)}", ["B"], "long_toc_choices_0_20000", "extended") == 1.0


def test_verls_compute_score_defaults_to_official():
    assert compute_score("ruler_hqa", "\\boxed{50%}", ["50"], {"index": 1}) == 0.0
    # the row names its verifier (memrepro.verl.dataset), a keyword overrides it
    row = {"index": 1, "verifier": "extended"}
    assert compute_score("ruler_hqa", "\\boxed{50%}", ["50"], row) == 1.0
    assert compute_score("ruler_hqa", "\\boxed{50%}", ["50"], row, verifier="official") == 0.0
    assert compute_score("ruler_hqa", "\\boxed{50%}", ["50"], None, verifier="extended") == 1.0
    assert compute_score("ruler_hqa", "\\boxed{50%}", ["50"], {"index": 1, "verifier": None}) == 0
    with pytest.raises(ValueError, match="unknown verifier"):
        compute_score("ruler_hqa", "\\boxed{a}", ["a"], {"index": 1, "verifier": "loose"})
