"""The reproduction report: verdict counts, misses and notes per table, grouped by paper."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from test_intervals import PAPER, SYSTEMS, record

from memrepro.report.cells import mark_machinery_only
from memrepro.report.claims import HOLDS, NOT_CHECKABLE, ClaimCheck, write_claims
from memrepro.report.records import load_metrics
from memrepro.report.render import NOT_COMPARABLE, write_table
from memrepro.report.reproduction import write_reproduction
from memrepro.report.table_summaries import footnotes, summarize_table
from memrepro.report.tables import build_paper_table
from memrepro.scoring.compare import CONSISTENT, DIFFERS_ABOVE, DIFFERS_BELOW, REPRODUCED


def write_table1(results: Path, systems=SYSTEMS) -> Path:
    metrics = results / "metrics.json"
    metrics.write_text(
        json.dumps([record(50, 103), record(100, 107), record(200, 64), record(400, 100)])
    )
    table = build_paper_table("table1", load_metrics([metrics]), systems, PAPER)
    mark_machinery_only(table, systems)
    table.attrs["notes"] = ["Erratum: the paper's 25,600-document cell is read from its figure."]
    write_table(table, results / "tables/table1", "Table 1")
    return results / "tables/table1.md"


def test_a_table_summary_counts_verdicts_and_lists_the_largest_misses_first(tmp_path):
    summary = summarize_table(write_table1(tmp_path))
    assert summary.paper == "MemAgent"
    counts = {REPRODUCED: 0, CONSISTENT: 2, DIFFERS_ABOVE: 1, DIFFERS_BELOW: 1}
    assert summary.counts == {**counts, NOT_COMPARABLE: 0}
    # 50.0 vs 25.0 (+25.0) is a larger miss than 78.1 vs 95.0 (−16.9); consistent cells are none
    assert summary.misses[0].startswith(
        "RL-MemAgent-14B (ours) @ 28K: ours 50.0, paper 25.0, differs above: ours − paper +25.0 ["
    )
    assert (
        "@ 56K: ours 78.1, paper 95.0, differs below: ours − paper -16.9 [-" in (summary.misses[1])
    )
    assert len(summary.misses) == 2
    assert summary.notes[0].startswith("Erratum:")
    assert not any(note.startswith("Cells:") for note in summary.notes)  # the legend is no note


def counts_keys() -> tuple[str, ...]:
    return (REPRODUCED, CONSISTENT, DIFFERS_ABOVE, DIFFERS_BELOW)


def test_footnotes_are_the_lines_under_the_table():
    text = "**T**\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nCells: legend\nnote one\n\nnote two\n"
    assert footnotes(text) == ["note one", "note two"]


def test_the_report_groups_tables_by_paper_and_links_figures_and_lineage(tmp_path):
    table = write_table1(tmp_path)
    figure = tmp_path / "figures/figure1.png"
    figure.parent.mkdir()
    figure.write_bytes(b"png")
    study = tmp_path / "case_studies/ruler_hqa/ours/50.md"
    claims = tmp_path / "figures/figure5.claims.json"
    check = ClaimCheck(
        "niah-95",
        "RL-MemAgent keeps NIAH above 95 %",
        "RL-MemAgent (ours)",
        97.0,
        HOLDS,
        "min 97.0 from 8K to 512K",
        (96.0, 98.0),
    )
    write_claims([check], claims)  # as the figure job writes it
    md, page, cells, _ = write_reproduction(
        {"run": "smoke"}, [table], [figure], [claims], [study], tmp_path / "reproduction"
    )
    text = md.read_text()
    assert "- **MemAgent**: 0 of 4 cells reproduced within the margin; 2 consistent" in text
    assert (
        "2 differ; 0.05 × 4 = 0.2 expected by chance in a perfect reproduction, 95 % range 0–1 "
        "(ours above in 1, below in 1); 1 of 1 claim checks hold" in text
    )
    # the two that differ stand out across the paper's four cells, smallest q first
    assert "  - Worth a look (Benjamini–Hochberg q < 0.1 across the paper's 4 cells" in text
    assert "    - table1: RL-MemAgent-14B (ours) @ 28K: ours 50.0, paper 25.0" in text
    assert "one test of 'every cell reproduced' (Σz² = " in text
    rows = list(csv.DictReader(cells.open()))
    assert len(rows) == 4 and {r["paper"] for r in rows} == {"MemAgent"}
    for row in rows:  # q >= p, and below 0.10 exactly for the two that differ
        assert float(row["q_value"]) >= float(row["p_value"])
        assert (float(row["q_value"]) < 0.1) == row["verdict"].startswith("differs")
    assert (
        "- **Mem-α**: no cell compared (no paper number or no interval); no claim checked" in text
    )
    assert (
        "- [holds] RL-MemAgent keeps NIAH above 95 % (figure5) ours, RL-MemAgent (ours): "
        "min 97.0 from 8K to 512K" in text
    )
    assert '### <a id="table-table1"></a>[table1](tables/table1.md): ' in text
    assert f"- Lineage: `memrepro lineage {table}`" in text
    assert "- [figure1](figures/figure1.png): RULER-HQA accuracy" in text
    assert "(case_studies/ruler_hqa/ours/50.md)" in text
    page_text = page.read_text()  # the page links each case study's page, not its Markdown
    assert '<a href="case_studies/ruler_hqa/ours/50.html">' in page_text
    assert "<title>Reproduction report: run smoke</title>" in page_text
    html = page.read_text()
    assert "<img src='figures/figure1.png'" in html and "<details><summary>Notes" in html
    # the replication summary, the ranked gaps, the key numbers, both papers, both at once,
    # training curves, case studies, the diagnoses
    assert html.count("<h2>") == 9
    # the summary in the field's words: 2 differ (falsified), 2 consistent (inconclusive)
    assert "Scope: 1 table (MemAgent 1), 1 figure." in text
    assert "| table cells | 0 | 2 | 0 | 2 |" in text and "| claims | 1 | 0 | 0 | 0 |" in text
    # the report opens with its diagnoses, ranked by the gap left unexplained: +25.0, then -16.9
    ranked = text.split("## What explains the gaps (2 of 2, ranked)")[1].split("## Key numbers")[0]
    anchor = "diagnosis-table1-rl-memagent-14b-ours-28k"  # table, row, column: stable
    assert ranked.index(f"1. [table1: RL-MemAgent-14B (ours) @ 28K](#{anchor}): ") < ranked.index(
        "2. [table1: RL-MemAgent-14B (ours) @ 56K]"
    )
    # no evaluation among the inputs: said, never guessed
    assert "no attribution: the cell's evaluation is not among the report's inputs" in ranked
    assert text.count('### <a id="diagnosis-') == 2 and f'<h3 id="{anchor}">' in html
    assert text.count("([diagnosis](#diagnosis-") == 2  # each largest miss links its diagnosis
    diagnosis = text.split(f'<a id="{anchor}"></a>')[1].split("###")[0]
    assert diagnosis.startswith("1. [table1](tables/table1.md): RL-MemAgent-14B (ours) @ 28K")
    assert "Its table in this report: [table1](#table-table1)." in diagnosis
    assert "- Recipe: not trained here" in diagnosis
    assert "- Chance: 0 of 4 cells reproduced within the margin" in diagnosis


MADE_BY = "Made by commit abc1234, config 9f3e, invocation 20261129T101522-x; its lineage: r.md"


def test_the_report_opens_with_each_papers_key_numbers_as_its_table_states_them(tmp_path):
    """Table 1's RL-MemAgent-14B row (its headline), ours [interval] beside the paper and the
    verdict as the table's CSV has them, above everything else; what made them under them."""
    table = write_table1(tmp_path)
    md, page, _, _ = write_reproduction(
        {"run": "smoke"}, [table], [], [], [], tmp_path / "reproduction", MADE_BY
    )
    text = md.read_text()
    key = text.split("## Key numbers\n")[1].split(MADE_BY)[0]  # what made them, under them
    assert text.index(MADE_BY) < text.index("- **MemAgent**: ")  # then the verdict counts
    assert "**MemAgent**, [table1](tables/table1.md): " in key
    expected = [
        f"| {row['system']} @ {row['label']} | {float(row['ours']):.1f} "
        f"[{float(row['ci_low']):.1f}, {float(row['ci_high']):.1f}] | "
        f"{float(row['paper']):.1f} | {row['verdict']} |"
        for row in csv.DictReader(table.with_suffix(".csv").open())
        if row["paper_row"] == "RL-MEMAGENT-14B"
    ]
    assert len(expected) == 4 and [line for line in key.splitlines() if "@" in line] == expected
    assert f"| RL-MemAgent-14B (ours) @ 28K | {100 * 64 / 128:.1f} [" in key  # record(200, 64)
    assert "**Mem-α**: none of its headline rows ran in this run." in key
    html = page.read_text()
    assert html.index('<table class="key">') < html.index("<h2>MemAgent</h2>")
    assert html.count("<tr><td>RL-MemAgent-14B (ours) @ ") == 4 and MADE_BY in html


def test_claims_that_cannot_be_checked_are_collapsed_below_the_judged_ones(tmp_path):
    table = write_table1(tmp_path)
    claims = tmp_path / "figures/figure5.claims.json"
    checks = [
        ClaimCheck("a", "NIAH stays above 95 %", "ours", 97.0, HOLDS, "min 97.0", (96.0, 98.0)),
        ClaimCheck("b", "3.5M within 10 %", "ours", None, NOT_CHECKABLE, "3.5M not run", None),
    ]
    write_claims(checks, claims)
    md, page, _, _ = write_reproduction(
        {"run": "smoke"}, [table], [], [claims], [], tmp_path / "reproduction"
    )
    text = md.read_text()
    judged, collapsed = text.split("<details><summary>1 not checkable here</summary>")
    assert "[holds] NIAH stays above 95 %" in judged
    assert "[not checkable] 3.5M within 10 %" in collapsed.split("</details>")[0]
    page_text = page.read_text()
    assert "<details><summary>1 not checkable here</summary><ul><li>[not checkable] 3.5M" in (
        page_text
    )


def links(page: Path, pattern: str) -> list[tuple[Path, str]]:
    """The (file, anchor) of each link of `page` into the reproduction report."""
    found = re.findall(pattern, page.read_text())
    return [((page.parent / target).resolve(), anchor) for target, anchor in found]


def test_each_cell_that_differs_links_its_diagnosis_from_the_table_itself(tmp_path):
    """A table's Markdown and HTML link every *differs* cell (and, with its one test of the
    table below 0.05, the table) to the reproduction report's diagnosis, where the workflow
    writes both: <run>/tables/<name>.* and <run>/reproduction.*."""
    table = write_table1(tmp_path)
    write_reproduction({"run": "smoke"}, [table], [], [], [], tmp_path / "reproduction")
    md_links = links(table, r"\]\((\.\./reproduction\.md)#([\w-]+)\)")
    html_links = links(table.with_suffix(".html"), r'href="(\.\./reproduction\.html)#([\w-]+)"')
    assert len(md_links) == 2  # the two cells that differ, not the consistent ones
    assert len(html_links) == 3  # ... and the table's test (p < 0.001) in its notes
    for target, anchor in [*md_links, *html_links]:
        assert f'id="{anchor}"' in target.read_text(), (target, anchor)
    assert "its cells worth a look, with their diagnoses: ../reproduction.html#table-table1" in (
        table.read_text()
    )


def test_a_run_that_cannot_reproduce_opens_with_its_banner_and_counts_nothing(tmp_path):
    """The same numbers from a model that cannot reproduce (a random tiny model, SmolLM2):
    the table, its CSV and the report say so first, and no cell counts as reproduced."""
    random = {sid: {**spec, "reproduces": False} for sid, spec in SYSTEMS.items()}
    table = write_table1(tmp_path, random)
    markdown = table.read_text()
    assert markdown.splitlines()[2].startswith("> Machinery check only: every system here runs")
    assert ", not comparable)" in markdown
    assert "✓" not in markdown.split("Cells:")[0]
    assert "Verdicts none: the cells are not comparable (machinery check only)." in markdown
    html = table.with_suffix(".html").read_text()
    assert html.index('class="banner"') < html.index("<table>")
    summary = summarize_table(table)
    assert summary.counts == {**dict.fromkeys(counts_keys(), 0), NOT_COMPARABLE: 4}
    assert summary.misses == [] and summary.banner.startswith("Machinery check only: ")
    md, page, _, _ = write_reproduction(
        {"run": "smoke"}, [table], [], [], [], tmp_path / "reproduction"
    )
    text = md.read_text()
    assert text.splitlines()[2].startswith("> Machinery check only: 1 of this run's 1 tables")
    assert "- **MemAgent**: no cell compared: 4 not comparable (machinery check only)" in text
    assert "cells reproduced" not in text
    assert '<p class="banner">Machinery check only: ' in page.read_text()
    # nothing differs, so the page diagnoses each table's largest gap (one table here: one)
    assert text.count('### <a id="diagnosis-') == 1
