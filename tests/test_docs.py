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


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def broken_links(repo) -> list[str]:
    """Every relative link of the README, docs/ and the other READMEs whose file is missing, as
    `page:line: target`. Web links, anchors within a page and code blocks (a report's text
    quoted) are not followed."""
    pages = [repo / "README.md", *sorted((repo / "docs").glob("*.md")), *repo.glob("*/README.md")]
    found = []
    for page in pages:
        code = False
        for number, line in enumerate(page.read_text().splitlines(), 1):
            code ^= line.lstrip().startswith("```")
            for target in [] if code else LINK.findall(line):
                path = target.split("#")[0]
                if not path or "://" in path or path.startswith("mailto:"):
                    continue
                if not (page.parent / path).exists():
                    found.append(f"{page.relative_to(repo)}:{number}: {target}")
    return found


def test_every_page_links_files_that_exist(repo):
    assert broken_links(repo) == []


def test_the_link_check_names_the_page_and_line_of_a_broken_link(tmp_path):
    (tmp_path / "docs").mkdir()
    page = "# x\n\nSee [the guide](docs/guide.md), [here](docs/a.md).\n```\n[quoted](t.md)\n```\n"
    (tmp_path / "README.md").write_text(page)
    (tmp_path / "docs" / "a.md").write_text("[back](../README.md) [web](https://example.org)\n")
    assert broken_links(tmp_path) == ["README.md:3: docs/guide.md"]


def test_the_cli_reference_is_what_the_parsers_print(repo):
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "cli_reference", repo / "scripts/cli_reference.py"
    )
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    page = repo / "docs/cli.md"
    assert page.read_text() == generator.reference(), (
        "docs/cli.md is out of date: run python scripts/cli_reference.py"
    )
