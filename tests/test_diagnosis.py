"""Why a number differs: each cell's diagnosis, its attribution first, then its setup (recipe,
protocol, chance) from the recipes tables and the systems of the same run
(memrepro.report.diagnosis)."""

from __future__ import annotations

from memrepro.report.attribution import Evidence, Gap, Source
from memrepro.report.diagnosis import Cell, Context, Diagnosis, diagnose, parse_markdown_table

RECIPES = """**caption**

| Setting | Paper | Official script | rl-14b stage1 (official recipe, verl) | other stage1 (x) |
|---|---|---|---|---|
| training steps | 400 | 400 | 400 | 2 (≠ both) |
| clip high | 0.28 | 0.2 | 0.2 (≠ paper) | 0.2 (≠ paper) |
| KL | 0.001 | 0.001 | 0.002 (≠ script) | 0.001 |
| Verdict |  |  | 1 key drifts from the official-script recipe: KL | x |
"""
SYSTEMS = {
    "Agent": {"id": "agent", "kind": "memagent", "model": "rl-14b", "memagent_recipe": "official"},
    "Direct": {"id": "direct", "kind": "longcontext", "model": "qwen"},
}
SOURCE = Source("ruler_hqa", "hqa", "agent", 50)
CELL = Cell("table1", "Agent", "7K", Gap(-20.0, (-30.0, -10.0), SOURCE))


def context(**kw):
    tables = {"memagent_recipes": parse_markdown_table(RECIPES)}
    return Context(SYSTEMS, tables, {"table1": "2 differ; p = 0.01"}, **kw)


def test_a_markdown_table_is_read_by_row_label_and_header():
    rows = parse_markdown_table(RECIPES)
    assert list(rows) == ["training steps", "clip high", "KL", "Verdict"]
    assert rows["clip high"]["rl-14b stage1 (official recipe, verl)"] == "0.2 (≠ paper)"
    assert parse_markdown_table("no table here") == {}


def test_the_recipe_line_counts_keys_against_the_recipe_behind_the_printed_numbers():
    """The official script produced MemAgent's printed numbers: the line counts drift from it
    (KL), not from the paper's stated recipe (clip high); the Verdict row is no key."""
    official = diagnose(CELL, context(printed_by={"memagent_recipes": "official"}))
    assert official.lines[0] == (
        "Recipe: trained here (training.recipe: official); rl-14b stage1 (official recipe, "
        "verl): 1 of 3 keys differ from the official script's: KL (memagent_recipes; the "
        "official script's is the recipe behind the printed numbers)"
    )
    paper = diagnose(CELL, context())
    assert "1 of 3 keys differ from the paper's stated recipe: clip high" in paper.lines[0]
    assert "written for the question (MemAgent's protocol)" in paper.lines[1]
    assert paper.lines[2] == "Chance: 2 differ; p = 0.01"


def test_what_the_run_did_not_make_is_said_not_guessed():
    cell = Cell(
        "table3", "Direct", "HQA", Gap(-5.0, (-8.0, -2.0), Source("longbench", "hqa", "direct", 0))
    )
    found = diagnose(cell, context())
    assert (
        found.lines[0]
        == "Recipe: not trained here (a released checkpoint, a base or a hosted model)"
    )
    assert "no memory" in found.lines[1]
    assert diagnose(Cell("t", "Agent", "x"), context()).lines[2] == "Chance: no table-level test"
    bare = diagnose(CELL, Context(SYSTEMS, {}))
    assert bare.lines[0].endswith("the memagent_recipes table is not part of this run")
    assert bare.attribution is None and bare.unexplained == 20.0  # no evidence: the whole gap


def test_a_cell_with_its_evaluation_opens_with_its_attribution():
    scores = {f"hqa#{i}": {"score": float(i < 30), "scores": [float(i < 30)]} for i in range(40)}
    evidence = Evidence(
        {("agent", "ruler_hqa", 50, "the benchmark's"): scores}, {"agent": SYSTEMS["Agent"]}
    )
    found = diagnose(CELL, context(evidence=evidence))
    assert isinstance(found, Diagnosis) and found.attribution is not None
    assert found.attribution.line().startswith("ours − paper -20.0 [-30.0, -10.0]: unexplained")
    assert found.unexplained == 20.0


def test_the_page_shows_ten_diagnoses_in_full_and_anchors_the_rest_the_csv_keeps_all(tmp_path):
    import csv

    from memrepro.report.diagnosis_pages import (
        SHOWN,
        markdown_ranked,
        markdown_rest,
        write_diagnoses,
    )

    found = [
        diagnose(
            Cell("table1", "Agent", f"{k}K", Gap(-float(k), (-k - 3.0, -k + 3.0), SOURCE)),
            context(),
        )
        for k in range(1, 13)
    ]
    ranked = sorted(found, key=lambda d: -d.unexplained)
    opening = markdown_ranked(ranked)
    assert opening[0] == f"## What explains the gaps ({SHOWN} of 12, ranked)"
    assert opening[2].startswith("1. [table1: Agent @ 12K](#diagnosis-table1-agent-12k): ")
    assert sum(line[:3].strip().rstrip(".").isdigit() for line in opening) == SHOWN
    assert "2 more are in `reproduction.diagnoses.csv`." in opening[-2]
    rest = markdown_rest(ranked[SHOWN:])
    assert '- <a id="diagnosis-table1-agent-2k"></a>11. table1: Agent @ 2K: ' in rest[2]
    rows = list(csv.DictReader(write_diagnoses(ranked, tmp_path / "d.csv").open()))
    assert [int(r["rank"]) for r in rows] == list(range(1, 13))
    assert rows[0]["label"] == "12K" and rows[0]["unexplained"] == "12.0"
