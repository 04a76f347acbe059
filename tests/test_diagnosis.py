"""Why a number differs: each cell's diagnosis gathered from the recipes, controls, protocols and
scorers tables of the same run (memrl.report.diagnosis)."""

from __future__ import annotations

from memrl.report.diagnosis import Cell, Context, columns_of, diagnose, parse_markdown_table

RECIPES = """**caption**

| Setting | Paper | Official script | rl-14b stage1 (official recipe, verl) | other stage1 (x) |
|---|---|---|---|---|
| training steps | 400 | 400 | 400 | 2 (≠ both) |
| clip high | 0.28 | 0.2 | 0.2 (≠ paper) | 0.2 (≠ paper) |
| KL | 0.001 | 0.001 | 0.001 | 0.001 |
"""
CONTROLS = """| Memory system vs control | ruler_hqa@50 | mab |
|---|---|---|
| Agent vs Closed-book (m) | +40.0 [+30.0, +50.0] (n 128): memory adds | — |
| Agent vs Oracle (m) | -10.0 [-15.0, -5.0]: oracle higher | — |
| Other vs Closed-book (m) | +1.0 | — |
"""
SCORERS = """| Scorer: system | ruler_hqa@50 | ruler_hqa@100 |
|---|---|---|
| whole-reply: Agent | 85.0 vs 80.0: +5.0 [+2.0, +8.0]; 7 of 128 answers scored differently | x |
"""
PROTOCOLS = """| Question-blind vs question-aware | ruler_hqa@50 |
|---|---|
| Agent blind vs Agent | -30.0 [-40.0, -20.0]: the question helps |
"""
SYSTEMS = {
    "Agent": {"kind": "memagent", "model": "rl-14b", "memagent_recipe": "official"},
    "Direct": {"kind": "longcontext", "model": "qwen"},
}
CELL = Cell("table1", "Agent", "7K", ["ruler_hqa"], 50)


def context(**kw):
    tables = {
        name: parse_markdown_table(text)
        for name, text in (
            ("memagent_recipes", RECIPES),
            ("controls", CONTROLS),
            ("scorers", SCORERS),
            ("protocols", PROTOCOLS),
        )
    }
    return Context(SYSTEMS, tables, {"table1": "2 differ; p = 0.01"}, **kw)


def test_a_markdown_table_is_read_by_row_label_and_header():
    rows = parse_markdown_table(RECIPES)
    assert list(rows) == ["training steps", "clip high", "KL"]
    assert rows["clip high"]["rl-14b stage1 (official recipe, verl)"] == "0.2 (≠ paper)"
    assert parse_markdown_table("no table here") == {}


def test_the_diagnosis_gathers_recipe_protocol_controls_scorers_seeds_and_chance():
    lines = diagnose(CELL, context())
    assert [line.split(":")[0] for line in lines] == [
        "Recipe",
        "Protocol",
        "Without memory",
        "Scorers",
        "Seeds",
        "Chance",
    ]
    recipe, protocol, controls, scorers, seeds, chance = lines
    assert recipe == (
        "Recipe: trained here (training.recipe: official); rl-14b stage1 (official recipe, "
        "verl): 1 of 3 keys differ from the paper's: clip high (memagent_recipes)"
    )
    assert "written for the question (MemAgent's protocol)" in protocol
    assert (
        "Agent blind vs Agent @ ruler_hqa@50: -30.0 [-40.0, -20.0]: the question helps" in protocol
    )
    assert controls.count(" @ ruler_hqa@50: ") == 2 and "Other vs" not in controls
    assert "memory adds" in controls and "oracle higher" in controls
    assert scorers == (
        "Scorers: whole-reply: Agent @ ruler_hqa@50: 85.0 vs 80.0: +5.0 [+2.0, +8.0]; "
        "7 of 128 answers scored differently"
    )
    assert seeds.startswith(
        "Seeds: one sample per question; no spread over sampling or training seeds"
    )
    assert chance == "Chance: 2 differ; p = 0.01"


def test_what_the_run_did_not_make_is_said_not_guessed():
    cell = Cell("table3", "Direct", "HQA", ["longbench"], 0)
    lines = diagnose(cell, context())
    assert columns_of(cell) == ["longbench"]
    assert lines[0] == "Recipe: not trained here (a released checkpoint, a base or a hosted model)"
    assert "no memory" in lines[1]
    assert lines[2].startswith("Without memory: not a memory system")
    assert diagnose(Cell("t", "Agent", "x", ["ruler"], 8), context())[2] == (
        "Without memory: none run at this benchmark and length"
    )
    assert lines[5] == "Chance: no table-level test"
    bare = diagnose(CELL, Context(SYSTEMS, {}))
    assert bare[0].endswith("the memagent_recipes table is not part of this run")
