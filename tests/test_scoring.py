"""Answer extraction and metrics against hand-computed values."""

from __future__ import annotations

import pytest

from memrepro.scoring.extract import (
    answer_part,
    extract_answer,
    extract_boxed,
    extract_solution,
    final_answer,
    strip_string,
)
from memrepro.scoring.longbench import score_longbench
from memrepro.scoring.metrics import (
    contains_any,
    exact_match,
    f1,
    normalize_answer,
    score_answer_is,
    sub_em,
)
from memrepro.scoring.ruler import score_ruler
from memrepro.scoring.verifier import boxed_reward, training_reward


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain memory", "plain memory"),
        ("<think>a</think>memory", "memory"),
        ("<think>a</think>x<think>b</think> last", " last"),
        ("", ""),
    ],
)
def test_extract_solution(text: str, expected: str) -> None:
    assert extract_solution(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Therefore, the answer is Paris.", "Paris"),
        ("Therefore, the answer is **Paris**.", "Paris"),
        ("the answer is x; no wait, the answer is  Rome . ", "Rome"),
        ("Therefore, the answer is Oslo<｜end▁of▁sentence｜>", "Oslo"),
        ("the answer is <｜Assistant｜>Bern.", "Bern"),
        ("The answer is Paris.", None),  # case-sensitive marker
        ("no marker at all", None),
        ("Therefore, the answer is .", ""),
        ("the answer is 3.14.", "3.14"),
    ],
)
def test_extract_answer(text: str, expected: str | None) -> None:
    assert extract_answer(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("so \\boxed{42}.", "42"),
        ("\\boxed{1} then \\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
        ("\\boxed{a{b{c}}d} tail", "a{b{c}}d"),
        ("\\fbox{x}", "x"),
        ("\\boxed{1} and \\fbox{2}", "2"),
        ("answer: \\boxed 7$ done", "7"),
        ("answer: \\boxed 7", "7"),
        ("\\boxed{unclosed", None),
        ("no box", None),
        ("\\boxed", None),
    ],
)
def test_extract_boxed(text: str, expected: str | None) -> None:
    assert extract_boxed(text) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("barack obama", "barackobama"),
        ("line\nbreak", "linebreak"),
        ("\\left( 1, 2 \\right)", "(1,2)"),
        ("90^\\circ", "90"),
        ("90^{\\circ}", "90"),
        ("\\$5", "5"),
        ("50\\%", "50"),
        ("50%", "50"),
        (".5", "\\frac{1}{2}"),
        ("0.25", "0.25"),
        ("{.25}", "{0.25}"),
        ("x = 3", "3"),
        ("long = 3", "long=3"),
        ("\\frac12", "\\frac{1}{2}"),
        ("\\dfrac{1}2", "\\frac{1}{2}"),
        ("\\tfrac1{2}", "\\frac{1}{2}"),
        ("\\sqrt3", "\\sqrt{3}"),
        ("3/4", "\\frac{3}{4}"),
        ("a/b", "a/b"),
        ("5 \\text{ cm}", "5"),
        ("\\!7", "7"),
        ("", ""),
    ],
)
def test_strip_string(raw: str, expected: str) -> None:
    assert strip_string(raw) == expected


def test_normalize_answer() -> None:
    assert normalize_answer("The  Eiffel-Tower, an icon!") == "eiffeltower icon"
    assert normalize_answer("Theatre") == "theatre"  # articles only as whole words


def test_exact_match_and_sub_em() -> None:
    assert exact_match("The Beatles", "beatles") == 1.0
    assert exact_match("Beatles band", "beatles") == 0.0
    assert sub_em("the Beatles band", "Beatles") == 1.0  # gold in pred
    assert sub_em("Beatles", "The Beatles band") == 1.0  # pred in gold
    assert sub_em("Stones", "Beatles") == 0.0
    assert sub_em("a", "Beatles") == 1.0  # official quirk: empty normalised pred is contained


def test_f1() -> None:
    assert f1("the big red dog", "big dog") == pytest.approx(0.8)  # p=2/3, r=1
    assert f1("red cat", "big dog") == 0.0
    assert f1("yes", "no") == 0.0
    assert f1("yes it is", "yes") == 0.0  # yes/no special case
    assert f1("Yes.", "yes") == 1.0


def test_boxed_reward() -> None:
    assert boxed_reward("... so \\boxed{Barack Obama}", ["barack obama"]) == 1.0
    assert boxed_reward("\\boxed{Obama}", ["Barack Obama", "obama"]) == 1.0
    assert boxed_reward("\\boxed{the beatles}", ["Beatles"]) == 0.0  # no article removal
    assert boxed_reward("\\boxed{Paris.}", ["Paris"]) == 0.0  # no punctuation removal
    assert boxed_reward("Paris", ["Paris"]) == 0.0
    assert boxed_reward("\\boxed{Paris}", []) == 0.0
    # Only the last 300 characters are read: a box further back is invisible.
    assert boxed_reward("\\boxed{Paris}" + "x" * 300, ["Paris"]) == 0.0
    assert boxed_reward("\\boxed{Paris}" + "x" * 287, ["Paris"]) == 1.0


def test_contains_any() -> None:
    assert contains_any("I think it is PARIS.", ["paris"]) == 1.0
    assert contains_any("I think it is Rome.", ["Paris", "Lyon"]) == 0.0


def test_score_answer_is() -> None:
    assert score_answer_is("Therefore, the answer is The Eiffel Tower.", "Eiffel Tower") == {
        "pred": "The Eiffel Tower",
        "sub_em": 1.0,
        "sub_em_strict": 1.0,
        "em": 1.0,
        "f1": 1.0,
    }
    scored = score_answer_is("Therefore, the answer is big red dog", "big dog")
    assert (scored["sub_em"], scored["em"], scored["f1"]) == (0.0, 0.0, pytest.approx(0.8))
    zeros = {"sub_em": 0.0, "sub_em_strict": 0.0, "em": 0.0, "f1": 0.0}
    assert score_answer_is("The answer is Paris", "Paris") == {"pred": None, **zeros}
    assert score_answer_is("the answer is .", "Paris") == {"pred": "", **zeros}


@pytest.mark.parametrize("pred", ["???", "a", "the", "-", "An ."])
def test_an_answer_that_normalises_to_nothing_is_contained_officially_not_strictly(pred) -> None:
    # The official sub_em is bidirectional containment: "" is a substring of every gold.
    scored = score_answer_is(f"Therefore, the answer is {pred}", "Paris")
    assert (scored["sub_em"], scored["sub_em_strict"], scored["em"]) == (1.0, 0.0, 0.0)


def test_training_reward_is_strict_except_for_docqa_numbers_and_options() -> None:
    assert training_reward("\\boxed{Paris}", ["paris"], "ruler_hqa") == 1.0
    assert training_reward("\\boxed{6.449}", ["6.4492577269408615"], "ruler_hqa") == 0.0
    assert training_reward("\\boxed{6.449}", ["6.4492577269408615"], "docmath_0_20000") == 1.0
    assert training_reward("\\boxed{6.5}", ["6.4492577269408615"], "docmath_0_20000") == 0.0
    assert training_reward("\\boxed{1,234}", ["1234"], "docmath_20000_40000") == 1.0
    assert training_reward("\\boxed{(B)}", ["B"], "long_toc_choices_0_20000") == 1.0
    assert training_reward("\\boxed{(C)}", ["B"], "long_toc_choices_0_20000") == 0.0
    assert training_reward("6.449", ["6.449"], "docmath_0_20000") == 0.0  # still needs a box


# --- the official evaluator on every input ----------------------------------------


def test_the_answer_is_counts_only_after_the_last_think():
    draft = "the answer is Paris</think>I am not sure"
    assert score_answer_is(draft, "Paris")["sub_em"] == 0.0  # officially: no answer after it
    assert score_answer_is("<think>hmm</think>Therefore, the answer is Paris.", "Paris")["em"] == 1


@pytest.mark.parametrize("tail", ["", "\n  "])
def test_with_nothing_after_the_last_think_the_whole_reply_is_searched(tail):
    reply = "the answer is Paris</think>" + tail
    assert answer_part(reply) == reply
    scores = score_answer_is(reply, "Paris")
    assert scores["pred"] == "Paris</think>"  # the official prediction, tag and all
    # "paristhink" contains "paris"
    assert (scores["sub_em"], scores["em"], scores["f1"]) == (1.0, 0.0, 0.0)
    assert (
        score_ruler("niah_single_1", "the answer is 1234</think>", ["1234"], "memagent")["score"]
        == 1.0
    )
    assert score_longbench("hotpotqa", reply, ["Paris"])["sub_em"] == 1.0


@pytest.mark.parametrize(
    ("response", "answer"),
    [
        ("so the answer is  U.S.A. .", "U.S.A."),  # whitespace, dots, whitespace: one dot kept
        ("the answer is Paris.", "Paris"),
        ("the answer is Paris...  ", "Paris"),
        ("the answer is .\u00a0.", ""),  # dots around a non-breaking space: nothing left
        ("the answer is 42<｜end▁of▁sentence｜>", "42"),
    ],
)
def test_official_trailing_strip(response, answer):
    assert extract_answer(response) == answer


def test_an_answer_of_dots_and_non_breaking_spaces_scores_zero():
    scores = score_answer_is("the answer is .\u00a0.", "Paris")
    assert scores["pred"] == "" and scores["sub_em"] == 0.0  # not "contained in every gold"


def test_f1_is_rounded_to_two_decimals_per_item():
    # pred "paris france" vs gold "paris": precision 1/2, recall 1 -> F1 2/3
    assert score_answer_is("the answer is Paris France", "Paris")["f1"] == 0.67


BOXED_REPLY = "<think>maybe Rome</think>The memory says \\boxed{Paris}."


def test_a_boxed_final_prompts_answer_is_read_from_its_box_by_every_scorer_that_reads_one():
    """Under `final_prompt: boxed` each MemAgent benchmark's scorer reads the last box, as the
    training verifier does; under the official prompt a reply without "the answer is" has no
    answer (0), as officially."""
    from memrepro.scoring.answers import score_answers

    assert final_answer(BOXED_REPLY, "boxed") == "Paris"
    assert final_answer(BOXED_REPLY) is None  # the official extraction
    assert final_answer("no box at all", "boxed") is None
    assert score_answer_is(BOXED_REPLY, "Paris", "boxed")["sub_em"] == 1.0
    assert score_answer_is(BOXED_REPLY, "Paris")["sub_em"] == 0.0
    assert score_ruler("qa_1", BOXED_REPLY, ["Paris"], "memagent", "boxed")["score"] == 1.0
    assert score_ruler("niah_single_1", "\\boxed{42}", ["42"], "memagent", "boxed")["score"] == 1
    boxed_qa = score_longbench("hotpotqa", BOXED_REPLY, ["Paris"], answer_format="boxed")
    assert (boxed_qa["pred"], boxed_qa["sub_em"]) == ("Paris", 1.0)
    official = score_longbench("hotpotqa", BOXED_REPLY, ["Paris"])  # the whole part, stripped
    assert official["pred"] == "The memory says \\boxed{Paris}."
    assert score_answers("em", BOXED_REPLY, ["Paris"], "boxed")["score"] == 1.0
    assert score_answers("em", BOXED_REPLY, ["Paris"])["score"] == 0.0
    with pytest.raises(ValueError, match="unknown answer format 'json'"):
        final_answer(BOXED_REPLY, "json")


def test_only_the_kinds_that_ask_memagents_final_prompt_read_its_answer_format():
    from memrepro.jobs.evaluate import answer_format
    from memrepro.systems import system_kind

    settings = {"final_prompt": "boxed"}
    asked = {name for name in ("memagent", "fullcontext", "mem0", "longcontext", "rag")
             if answer_format(system_kind(name), settings) == "boxed"}  # fmt: skip
    assert asked == {"memagent", "fullcontext", "mem0"}
    assert answer_format(system_kind("memagent"), {"final_prompt": "answer_is"}) == "answer_is"
