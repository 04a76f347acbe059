"""Sentence lengths of a Markdown page, split as a reader reads it: tables, code blocks and
headings apart, each list item and paragraph on its own, code spans as one word.

    python tests/prose.py README.md docs/*.md   # each page: median, longest; then the offenders
"""

from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

MEDIAN_WORDS = 20  # a page's median sentence, at most
MOST_WORDS = 60  # any one sentence, at most
ITEM = re.compile(r"^\s*(?:[-*+]|\d+\.)\s+")
# words whose full stop ends no sentence
ABBREVIATIONS = ("e.g.", "i.e.", "vs.", "et al.", "cf.", "approx.", "Fig.", "Eq.", "Eqs.", "No.")
END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9*(\[\"'`_])")


def units(text: str) -> list[str]:
    """A page's paragraphs and list items, each as one line; tables, code, headings and HTML
    comments left out."""
    found: list[str] = []
    current: list[str] = []
    code = False

    def close() -> None:
        if current:
            found.append(" ".join(current))
            current.clear()

    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            close()
            code = not code
            continue
        if code or not stripped or stripped.startswith(("|", "#", "<!--", ">")):
            close()
            continue
        if ITEM.match(line):
            close()
            stripped = ITEM.sub("", line).strip()
        current.append(stripped)
    close()
    return found


def sentences(unit: str) -> list[str]:
    """A paragraph's sentences: a code span counts as one word, an abbreviation ends none."""
    text = re.sub(r"`[^`]*`", "CODE", unit)
    text = re.sub(r"\]\([^)]*\)", "]", text)  # a link's target is not read
    for n, word in enumerate(ABBREVIATIONS):
        text = text.replace(word, f"ABBREVIATION{n}")
    return [part for part in END.split(text) if part.strip()]


def lengths(text: str) -> list[int]:
    return [len(sentence.split()) for unit in units(text) for sentence in sentences(unit)]


def figures(path: Path) -> tuple[float, int, int]:
    """(median words, most words, sentences) of a page."""
    counted = lengths(path.read_text(encoding="utf-8"))
    return (statistics.median(counted), max(counted), len(counted)) if counted else (0.0, 0, 0)


def offenders(path: Path, most: int = MOST_WORDS) -> list[str]:
    """The page's sentences over `most` words, each with its length and its start."""
    text = path.read_text(encoding="utf-8")
    return [
        f"{path}: {len(sentence.split())} words: {sentence[:90]}"
        for unit in units(text)
        for sentence in sentences(unit)
        if len(sentence.split()) > most
    ]


def main(paths: list[str]) -> None:
    for name in paths:
        median, longest, count = figures(Path(name))
        print(f"{name}: median {median:g}, longest {longest}, {count} sentences")
    for name in paths:
        for line in offenders(Path(name)):
            print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
