"""Plain sentences: a page rewritten for readers keeps its median sentence at most 20 words and
none over 60, outside tables and code (tests/prose.py splits them as a reader reads them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from prose import MEDIAN_WORDS, MOST_WORDS, figures, lengths, offenders

# the pages rewritten so far; `python tests/prose.py docs/*.md` gives every page's figures
REWRITTEN = (
    "README.md",
    "docs/commands.md",
    "docs/containers.md",
    "docs/extending.md",
    "docs/memalpha-data.md",
    "docs/own-data.md",
)


@pytest.mark.parametrize("page", REWRITTEN)
def test_a_rewritten_page_reads_in_plain_sentences(repo, page):
    median, longest, _ = figures(repo / page)
    too_long = offenders(repo / page)
    assert median <= MEDIAN_WORDS and not too_long, (median, longest, too_long)


def test_sentences_are_counted_as_a_reader_reads_them(tmp_path):
    """Tables, code blocks and headings are not prose; each list item stands alone; a code span
    is one word; "e.g." ends no sentence."""
    page = tmp_path / "page.md"
    page.write_text(
        "# A heading of many many words here\n\n"
        "One two three. Four `five six seven` eight, e.g. nine.\n"
        "- an item of five words\n"
        "- a second item\n\n"
        "| a table | of words words words |\n\n"
        "```\nthe code block holds many words that are not counted\n```\n"
    )
    assert lengths(page.read_text()) == [3, 5, 5, 3]
    page.write_text(" ".join(["word"] * (MOST_WORDS + 1)) + ".\n")
    assert offenders(Path(page)) and figures(page)[1] == MOST_WORDS + 1
