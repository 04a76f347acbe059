"""The README and docs pages: a number given in several places comes from one measurement, and
no page reads like a changelog (what a newcomer reads is what holds now)."""

from __future__ import annotations

import re

from docs_pages import docs_text

CHANGELOG = ("before this change", "Upgrading a run", "(was ", "; was ", ", was ", "seed 00")


def test_the_smoke_time_each_page_gives_is_the_last_bench_measurement(repo):
    speed = (repo / "docs/speed.md").read_text()
    row = re.search(r"^\| smoke DAG \|(.*)$", speed, re.MULTILINE)[1]
    measured = float(re.search(r"([\d.]+) min", row)[1])
    lines = [line for line in docs_text(repo).splitlines() if "smoke" in line or "151 jobs" in line]
    said = [int(n) for line in lines for n in re.findall(r"about (\d+) min", line)]
    assert len(said) >= 3 and set(said) == {round(measured)}, (said, measured)


def test_no_page_reads_like_a_changelog(repo):
    text = docs_text(repo)
    found = [phrase for phrase in CHANGELOG if phrase in text]
    assert not found, found
