"""The controls table: each memory system beside each control (closed-book, oracle, full context)
on the items both answered, paired, in the control's words; flagged where closed-book already
reaches it."""

from __future__ import annotations

import json
import random

import pytest

from memrepro import config as cfg
from memrepro.config.selection import Selection
from memrepro.report.controls import (
    build_controls_table,
    cell_text,
    load_item_scores,
    paired_gain,
)
from memrepro.systems import closedbook, fullcontext, oracle

CLOSED = closedbook.KIND.control
ANSWERABLE = CLOSED.reached

SYSTEMS = [
    {"id": "agent", "display": "Agent", "kind": "memagent"},
    {"id": "alpha", "display": "Mem-α", "kind": "memalpha"},
    {"id": "direct", "display": "Direct", "kind": "longcontext"},
    {"id": "closed", "display": "Closed-book", "kind": "closedbook"},
    {"id": "oracle", "display": "Oracle", "kind": "oracle"},
    {"id": "full", "display": "Full context", "kind": "fullcontext"},
]


def items(scores: list[float], task: str = "hqa") -> dict[str, float]:
    return {f"{task}#{i}": score for i, score in enumerate(scores)}


def with_units(records: list[dict]) -> list[dict]:
    """Records as load_item_scores gives them: one question per item, its score."""
    return [record | {"questions": record["items"]} for record in records]


def test_the_gain_is_over_the_shared_items_with_a_paired_interval():
    ours = items([1.0] * 30 + [0.0] * 10)
    control = {**items([1.0] * 10 + [0.0] * 30), "other#0": 1.0}  # one item ours never answered
    gain = paired_gain(ours, control)
    assert (gain["n"], gain["ours"], gain["control"], gain["gain"]) == (40, 75.0, 25.0, 50.0)
    low, high = gain["interval"]
    assert 30 < low < 50 < high < 70
    assert paired_gain(ours, items([1.0], task="other")) == {"n": 0}


def test_each_cell_says_what_the_gain_shows_and_flags_what_closed_book_already_answers():
    adds = cell_text(paired_gain(items([1.0] * 30 + [0.0] * 10), items([0.0] * 40)), CLOSED)
    assert adds.startswith("+75.0 [") and adds.endswith(
        "(ours 75.0, closed-book 0.0; n 40): memory adds"
    )
    answerable = cell_text(paired_gain(items([1.0, 0.0] * 20), items([1.0, 0.0] * 20)), CLOSED)
    assert answerable.endswith(f": too few items; {ANSWERABLE}")  # no discordant item: no width
    mixed = cell_text(paired_gain(items([1.0, 0.0] * 20), items([0.0, 1.0] * 20)), CLOSED)
    assert mixed.endswith(f": no difference shown; {ANSWERABLE}")
    nothing = cell_text(paired_gain(items([0.0] * 20), items([0.0] * 20)), CLOSED)
    assert nothing.endswith(": too few items")  # both wrong throughout: nothing answerable
    few = cell_text(paired_gain(items([1.0] * 5), items([0.0] * 5)), CLOSED)
    assert few.endswith(": too few items")
    assert cell_text({"n": 0}, CLOSED) == "— (no shared items)"


def test_a_perfectly_null_gain_reads_as_a_gain_or_loss_about_5_percent_of_the_time():
    """Seeded: 400 tables of 128 paired right/wrong items, memory and closed-book each right with
    probability 0.5 independently (no true gain). The paired interval excludes 0 in 5 % of them
    up to Monte-Carlo error (sd 1.1 points at 400 trials)."""
    rng = random.Random(7)
    shown = 0
    for _ in range(400):
        ours = items([float(rng.random() < 0.5) for _ in range(128)])
        control = items([float(rng.random() < 0.5) for _ in range(128)])
        text = cell_text(paired_gain(ours, control), CLOSED)
        shown += "memory adds" in text or "closed-book higher" in text
    assert 0.02 <= shown / 400 <= 0.09


def test_the_table_pairs_each_memory_system_with_each_control_at_its_benchmark_and_length():
    records = [
        {
            "system": "agent",
            "benchmark": "ruler_hqa",
            "length": 50,
            "items": items([1.0] * 10 + [0.0] * 2),
        },
        {"system": "closed", "benchmark": "ruler_hqa", "length": 50, "items": items([0.0] * 12)},
        {"system": "agent", "benchmark": "ruler_hqa", "length": 100, "items": items([1.0] * 12)},
        {"system": "direct", "benchmark": "ruler_hqa", "length": 50, "items": items([1.0] * 12)},
        {"system": "alpha", "benchmark": "mab", "length": 0, "items": items([0.5] * 12, "squad")},
        {"system": "closed", "benchmark": "mab", "length": 0, "items": items([1.0] * 12, "squad")},
    ]
    table = build_controls_table(with_units(records), SYSTEMS)
    assert list(table.index) == ["Agent vs Closed-book", "Mem-α vs Closed-book"]
    # closed-book's one RULER-HQA run stands at every length: its questions are the same
    assert list(table.columns) == ["ruler_hqa@50", "ruler_hqa@100", "mab"]
    assert table.loc["Agent vs Closed-book", "ruler_hqa@50"].endswith("memory adds")
    assert (
        "(ours 100.0, closed-book 0.0; n 12)" in table.loc["Agent vs Closed-book", "ruler_hqa@100"]
    )
    assert table.loc["Agent vs Closed-book", "mab"] == "—"
    assert table.loc["Mem-α vs Closed-book", "mab"].endswith(ANSWERABLE)
    assert table.attrs["notes"][-1].startswith("1 cell(s) where closed-book reaches")


def test_a_memory_cell_is_set_only_beside_controls_of_the_model_that_answers_it():
    systems = [
        {"id": "agent", "display": "Agent 7B", "kind": "memagent", "model": "7b"},
        {"id": "big", "display": "Agent 14B", "kind": "memagent", "model": "14b"},
        {
            "id": "alpha",
            "display": "Mem-α",
            "kind": "memalpha",
            "model": "4b",
            "answered_by": {"mab": "32b"},
        },
        {"id": "c7", "display": "Closed-book 7B", "kind": "closedbook", "model": "7b"},
        {"id": "c32", "display": "Closed-book 32B", "kind": "closedbook", "model": "32b"},
    ]
    hqa, mab = {"benchmark": "ruler_hqa", "length": 50}, {"benchmark": "mab", "length": 0}
    records = [
        {**hqa, "system": "agent", "items": items([1.0] * 12)},
        {**hqa, "system": "big", "items": items([1.0] * 12)},
        {**hqa, "system": "c7", "items": items([0.0] * 12)},
        {**mab, "system": "alpha", "items": items([1.0] * 12, "squad")},
        {**mab, "system": "c7", "items": items([0.0] * 12, "squad")},
        {**mab, "system": "c32", "items": items([0.0] * 12, "squad")},
    ]
    table = build_controls_table(with_units(records), systems)
    # the 14B has no closed-book of its own: never read against the 7B's knowledge
    assert list(table.index) == ["Agent 7B vs Closed-book 7B", "Mem-α vs Closed-book 32B"]


def test_the_oracle_and_full_context_are_read_in_their_own_words_and_never_flagged():
    agent = {"system": "agent", "benchmark": "ruler_hqa", "length": 50}
    records = [
        {**agent, "items": items([1.0] * 6 + [0.0] * 14)},
        {**agent, "system": "oracle", "items": items([1.0] * 20)},
        {**agent, "system": "full", "items": items([1.0] * 6 + [0.0] * 14)},
    ]
    table = build_controls_table(with_units(records), SYSTEMS)
    below_oracle = table.loc["Agent vs Oracle", "ruler_hqa@50"]
    assert "(ours 30.0, oracle 100.0; n 20)" in below_oracle
    assert below_oracle.endswith(": oracle higher")  # reached, but the oracle flags nothing
    same = table.loc["Agent vs Full context", "ruler_hqa@50"]
    assert same.endswith("(ours 30.0, full context 30.0; n 20): too few items")
    mostly, rarely = items([1.0] * 25 + [0.0] * 5), items([0.0] * 25 + [1.0] * 5)
    ahead = cell_text(paired_gain(mostly, rarely), fullcontext.KIND.control)
    assert ahead.endswith(": memory beats full context")
    assert cell_text(paired_gain(rarely, mostly), oracle.KIND.control).endswith(": oracle higher")
    assert not any("reaches" in note for note in table.attrs["notes"])  # no closed-book here


def test_items_are_read_from_each_evaluations_metrics_and_predictions(tmp_path):
    prefix = tmp_path / "50"
    metrics = tmp_path / "50.metrics.json"
    predictions = tmp_path / "50.predictions.jsonl"
    metrics.write_text(json.dumps([{"system": "agent", "benchmark": "ruler_hqa", "length": 50}]))
    predictions.write_text('{"task": "hqa", "index": 3, "score": 1.0, "memory_trace": []}\n')
    [record] = load_item_scores([metrics, predictions])
    assert record == {
        "system": "agent",
        "benchmark": "ruler_hqa",
        "length": 50,
        "items": {"hqa#3": 1.0},
        "questions": {"hqa#3": [1.0]},
    }
    with pytest.raises(ValueError, match=r"50\.metrics\.json: its predictions .* not among"):
        load_item_scores([metrics])
    predictions.write_text('{"task": "hqa", "index": 3}\n')
    with pytest.raises(ValueError, match=rf"{prefix}\.predictions\.jsonl:1: no score"):
        load_item_scores([metrics, predictions])


def test_the_smoke_plan_selects_the_controls_and_the_memory_systems_beside_them(repo):
    config = cfg.load_yaml(repo / "config/smoke.yaml")
    jobs = cfg.report_jobs(config, cfg.CONTROLS_TABLE)
    kinds = {sid: spec["kind"] for sid, spec in cfg.eval_systems(config).items()}
    assert {kinds[j.system] for j in jobs} == {
        "closedbook",
        "oracle",
        "fullcontext",
        "memagent",
        "memalpha",
        "mem1",
    }
    control_kinds = ("closedbook", "oracle", "fullcontext")
    controls = [j for j in jobs if kinds[j.system] in control_kinds]
    # a closed-book's one RULER-HQA job stands for every length the plan runs
    cells = {(j.benchmark, j.length) for j in cfg.eval_jobs(config) if j.benchmark == "ruler_hqa"}
    [closed] = [j for j in controls if j.system == "closedbook-tiny" and j.benchmark == "ruler_hqa"]
    assert Selection(config).cells(closed) == cells and len(cells) > 1
    stood = {cell for j in controls for cell in Selection(config).cells(j)}
    assert {(j.benchmark, j.length) for j in jobs} == stood
    inputs = cfg.report_inputs(config, cfg.CONTROLS_TABLE)
    assert len(inputs) == 2 * len(jobs) and inputs[1].endswith(".predictions.jsonl")


def gained_table1(tmp_path):
    """Table 1 of a MemAgent system at two lengths, each cell with its gain over closed-book's
    one run (the same questions at every length): closed-book answers 14 of 40; at 50 documents
    ours answers 30 (ours well above); at 100 ours 12 (closed-book reaches ours)."""
    from test_intervals import PAPER, record

    from memrepro.report.control_gains import attach_control_gains
    from memrepro.report.render import write_table
    from memrepro.report.tables import build_paper_table

    systems = {
        "ours": {"display": "Ours", "paper_row": "RL-MEMAGENT-14B", "kind": "memagent"},
        "closed": {"display": "Closed-book", "paper_row": None, "kind": "closedbook"},
    }
    table = build_paper_table("table1", [record(50, 30, 40), record(100, 12, 40)], systems, PAPER)
    scores = {
        ("ours", 50): [1.0] * 30 + [0.0] * 10,
        ("ours", 100): [1.0] * 12 + [0.0] * 28,
        ("closed", 50): [0.0] * 26 + [1.0] * 14,
    }
    evaluations = [
        {"system": s, "benchmark": "ruler_hqa", "length": n, "items": items(v)}
        for (s, n), v in scores.items()
    ]
    scores[("closed", 100)] = scores[("closed", 50)]
    attach_control_gains(table, with_units(evaluations), systems)
    write_table(table, tmp_path / "tables/table1", "Table 1")
    return table, scores


def test_each_memory_cell_shows_its_gain_over_closed_book_and_the_flag(tmp_path):
    import csv

    table, scores = gained_table1(tmp_path)
    rows = {
        int(r["n_docs"]): r
        for r in csv.DictReader((tmp_path / "tables/table1.csv").open())
        if r["system_id"] == "ours"  # closed-book's own row has no gain
    }
    for n_docs in (50, 100):  # the CSV's gain is the paired mean difference, recomputed here
        ours, closed = scores[("ours", n_docs)], scores[("closed", n_docs)]
        expected = 100 * sum(a - b for a, b in zip(ours, closed, strict=True)) / len(ours)
        row = rows[n_docs]
        assert float(row["control_gain"]) == pytest.approx(expected)
        assert float(row["control_gain_low"]) <= expected <= float(row["control_gain_high"])
        assert row["control"] == "Closed-book" and float(row["control_items"]) == 40
    assert float(rows[50]["control_gain_low"]) > 0 and not rows[50]["control_flag"]
    assert rows[100]["control_flag"] == ANSWERABLE  # 14 of 40 >= ours' 12 of 40
    markdown = (tmp_path / "tables/table1.md").read_text()
    assert "; vs closed-book +40.0 [+" in markdown
    assert "; vs closed-book -5.0 [" in markdown and f"]: {ANSWERABLE})" in markdown
    assert f"1 cell(s) flagged '{ANSWERABLE}'" in markdown
    assert table.loc["Ours", 50].gain.n == 40


def test_a_score_table_plans_its_memory_cells_beside_closed_book(repo):
    """The smoke plan's Table 1 reads its memory systems' items and closed-book's at the same
    lengths; a table that declares its own inputs, or a figure, reads none for it."""
    config = cfg.load_config([repo / "config/smoke.yaml"])
    kinds = {sid: spec["kind"] for sid, spec in cfg.eval_systems(config).items()}
    inputs = cfg.control_inputs(config, "table1")
    systems = {path.split("/")[-2] for path in inputs}
    assert {kinds[s] for s in systems} == {"memagent", "closedbook"}
    assert sum(p.endswith(".predictions.jsonl") for p in inputs) == len(inputs) // 2
    settings = cfg.table_settings(config, "table1")
    assert {s["id"] for s in settings["control_systems"]} == systems
    assert cfg.control_inputs(config, cfg.CONTROLS_TABLE) == []
    assert cfg.control_inputs(config, "figure1") == []


def test_a_scorers_row_of_a_machinery_model_gives_the_table_its_banner():
    import pandas as pd

    from memrepro.report.cells import mark_machinery_only

    systems = {
        "tiny": {"display": "Tiny (trained here)", "reproduces": False},
        "real": {"display": "Real model"},
    }
    rows = ["whole-reply: Tiny (trained here)", "judge: Real model"]
    table = pd.DataFrame({"mab": ["0.0 vs 0.0", "1 vs 2"]}, index=rows)
    mark_machinery_only(table, systems)
    assert "only: whole-reply: Tiny (trained here) run a model" in table.attrs["banner"]
    other = pd.DataFrame({"mab": ["1 vs 2"]}, index=["whole-reply: Real model"])
    mark_machinery_only(other, systems)
    assert "banner" not in other.attrs


def test_each_task_of_a_benchmark_is_a_column_of_its_own():
    """LongBench's five QA tasks are never pooled: each gain is the cell's own column."""
    both = {**items([1.0] * 12, "hotpotqa"), **items([0.0] * 12, "musique")}
    records = [
        {"system": "agent", "benchmark": "longbench", "length": 0, "items": both},
        {"system": "closed", "benchmark": "longbench", "length": 0, "items": items([0.0] * 24)},
    ]
    records[1]["items"] = {**items([0.0] * 12, "hotpotqa"), **items([0.0] * 12, "musique")}
    table = build_controls_table(with_units(records), SYSTEMS)
    assert list(table.columns) == ["longbench: hotpotqa", "longbench: musique"]
    assert table.loc["Agent vs Closed-book", "longbench: hotpotqa"].startswith("+100.0 [")
    assert table.loc["Agent vs Closed-book", "longbench: musique"].startswith("+0.0 [")
