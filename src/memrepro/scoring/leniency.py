"""A leniency probe for an LLM judge: a fixed, self-written set of LongMemEval-style personal
questions, each with its rubric, an exact right answer and a vague-but-topical wrong one (it talks
about the subject and recalls nothing the rubric asks for). Each answer goes through the judge as
an evaluation sends it (`memrepro.scoring.memalpha.judge_prompt`, `judge_verdict`); the probe counts
how many wrong answers the judge accepts and how many right ones. A judge that accepts vague
answers inflates every judged score; one that refuses right ones deflates it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memrepro.scoring.intervals import wilson
from memrepro.scoring.memalpha import judge_prompt, judge_verdict


@dataclass(frozen=True)
class ProbeItem:
    question: str
    rubric: str
    right: str
    wrong: str  # vague but on topic: it recalls nothing the rubric asks for


PROBE = (
    ProbeItem(
        "What breed is my dog?",
        "The user's dog, Pip, is a border collie.",
        "Pip is a border collie.",
        "Dogs come in many breeds, and every breed has its own needs.",
    ),
    ProbeItem(
        "Which city did I move to last spring?",
        "The user moved to Porto in April.",
        "You moved to Porto last April.",
        "Moving to a new city is a big change; it takes time to settle in.",
    ),
    ProbeItem(
        "What instrument am I learning?",
        "The user is learning the cello.",
        "You are learning the cello.",
        "Learning an instrument takes regular practice and patience.",
    ),
    ProbeItem(
        "How many kilometres was the race I ran in March?",
        "The user ran a 21 km half marathon in March.",
        "A half marathon: 21 km.",
        "Races come in several distances, and training depends on the distance.",
    ),
    ProbeItem(
        "What is my sister's name?",
        "The user's sister is called Ines.",
        "Your sister is Ines.",
        "Siblings often share memories from childhood.",
    ),
    ProbeItem(
        "Which language did I say I wanted to learn before my trip?",
        "The user wants to learn Japanese before a trip to Kyoto.",
        "Japanese, before your trip to Kyoto.",
        "Learning a language before travelling helps you talk with local people.",
    ),
    ProbeItem(
        "What did I name my sourdough starter?",
        "The user's sourdough starter is named Bubbles.",
        "You named it Bubbles.",
        "A sourdough starter needs regular feeding with flour and water.",
    ),
    ProbeItem(
        "Which team do I support?",
        "The user supports Celtic.",
        "You support Celtic.",
        "Supporting a team is a big part of many people's weekends.",
    ),
    ProbeItem(
        "What allergy did I mention?",
        "The user is allergic to peanuts.",
        "You are allergic to peanuts.",
        "Allergies can be serious, so it is good to be careful with food.",
    ),
    ProbeItem(
        "What time does my yoga class start on Tuesdays?",
        "The user's Tuesday yoga class starts at 7 pm.",
        "At 7 pm.",
        "Yoga classes are held at many times of the day to suit different schedules.",
    ),
    ProbeItem(
        "Which book am I reading for my book club?",
        "The user is reading Middlemarch for the book club.",
        "Middlemarch.",
        "Book clubs usually pick a novel each month and discuss it together.",
    ),
    ProbeItem(
        "What colour did I paint my kitchen?",
        "The user painted the kitchen sage green.",
        "Sage green.",
        "Kitchen colours can change how bright and warm a room feels.",
    ),
)
KINDS = ("right", "wrong")


def probe_prompts(items: Sequence[ProbeItem] = PROBE) -> list[tuple[str, str]]:
    """(kind, the judge's prompt) for each item's right, then wrong, answer."""
    return [
        (kind, judge_prompt(item.question, item.rubric, getattr(item, kind)))
        for item in items
        for kind in KINDS
    ]


def tally(kinds: Sequence[str], replies: Sequence[str]) -> dict[str, Any]:
    """Per kind: answers, accepted ones and the Wilson 95 % interval of the share (in %); and
    each reply with its verdict."""
    if len(kinds) != len(replies):
        raise ValueError(f"{len(replies)} judge replies for {len(kinds)} probe answers")
    verdicts = [judge_verdict(reply) for reply in replies]
    counts = {}
    for kind in KINDS:
        mine = [v for k, v in zip(kinds, verdicts, strict=True) if k == kind]
        accepted = int(sum(mine))
        counts[kind] = {
            "n": len(mine),
            "accepted": accepted,
            "ci95": list(wilson(accepted, len(mine))),
        }
    replies_out = [
        {"kind": k, "reply": r, "verdict": v}
        for k, r, v in zip(kinds, replies, verdicts, strict=True)
    ]
    return {**counts, "replies": replies_out}
