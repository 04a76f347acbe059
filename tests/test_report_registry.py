"""A table or a figure is declared in two halves: its plan (`memrepro.config.ReportPlan`: caption,
paper key, evaluations, settings, inputs) and its build in its own report module (`PaperTable`:
builder, loader, kind, section; `PaperFigure`: drawing, claims, section); the plan, the jobs, the
reproduction report and the writers read the declarations and never dispatch on a name."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from memrepro import config as cfg
from memrepro.config import FIGURES, TABLES
from memrepro.config.report_plans import declared_once
from memrepro.report import tables
from memrepro.report.figures import PAPER_FIGURES
from memrepro.report.registry import (
    BOTH_PAPERS,
    MEMALPHA,
    FigureInput,
    PaperFigure,
    PaperTable,
    TableInput,
    gathered,
)
from memrepro.report.table_summaries import paper_of_table

SRC = Path(__file__).resolve().parents[1] / "src/memrepro"
WORKFLOW = SRC.parents[1] / "workflow"
# a table's or figure's name compared with a literal name or a constant naming tables/figures
DISPATCH = re.compile(
    r"(?<!for )\bname\s*(==|!=|in)\s*(cfg\.)?(\(\s*[\"']|[\"'](table|figure|memalpha)|"
    r"(?!PAPER_|TABLES\b|FIGURES\b)[A-Z_]*(TABLES?|FIGURES?)\b)"
)
# the modules that declare tables and figures (each may look at its own names)
DECLARING = {
    "report/memagent_tables.py",
    "report/memagent_probe.py",
    "report/niah_config.py",
    "report/memory_patterns.py",
    "report/memalpha_tables.py",
    "report/keywords.py",
    "report/suites.py",
    "report/custom.py",
    "report/memagent_paper_figures.py",
    "report/flops_figure.py",
    "report/memalpha_figures.py",
}
# none left: the plan's side of each table and figure is its `ReportPlan` (memrepro.config.REPORTS)
STILL_DISPATCHING: set[str] = set()


def test_no_module_but_a_tables_own_dispatches_on_its_name():
    found = set()
    for path in [*SRC.rglob("*.py"), *WORKFLOW.rglob("*.smk"), WORKFLOW.parent / "Snakefile"]:
        name = path.relative_to(SRC).as_posix() if path.is_relative_to(SRC) else path.name
        if name not in DECLARING and DISPATCH.search(path.read_text()):
            found.add(name)
    assert found == STILL_DISPATCHING, sorted(found ^ STILL_DISPATCHING)


def test_every_planned_table_and_figure_is_declared_once_in_the_plans_order():
    assert list(tables.PAPER_TABLES) == list(TABLES)
    assert list(PAPER_FIGURES) == list(FIGURES)
    one = {"t": PaperTable(lambda t: pd.DataFrame(), BOTH_PAPERS)}
    with pytest.raises(ValueError, match="table 't' is declared twice"):
        gathered("table", TABLES, one, one)
    with pytest.raises(ValueError, match=r"tables declared but not planned .*: \['t'\]"):
        gathered("table", TABLES, dict(tables.PAPER_TABLES), one)
    with pytest.raises(ValueError, match="that no module declares: \\['table1'"):
        gathered("table", TABLES, {k: v for k, v in tables.PAPER_TABLES.items() if k != "table1"})
    plan = cfg.REPORTS["table1"]  # the plan's half: one declaration per name too
    assert all(name == p.name for name, p in cfg.REPORTS.items())
    with pytest.raises(cfg.ConfigError, match="'table1' is declared twice"):
        declared_once(plan, cfg.REPORTS["table2"], plan)


def test_a_new_table_is_its_declaration_builder_loader_and_kind_included(tmp_path, monkeypatch):
    """A throwaway table registered by name is loaded, built, sized, written and placed as it
    declares, through the same functions every table job calls."""
    seen: dict[str, object] = {}

    def load(paths):
        seen["paths"] = list(paths)
        return [{"text": "a"}]

    def build(t: TableInput) -> pd.DataFrame:
        seen["input"] = t
        table = pd.DataFrame({"what": ["a"]}, index=pd.Index(["ours"], name="system"))
        table.attrs["notes"] = ["A note."]
        return table

    declared = PaperTable(build, BOTH_PAPERS, load=load, text=True, sizes=lambda paper: 7)
    monkeypatch.setitem(tables.PAPER_TABLES, "throwaway", declared)
    monkeypatch.setitem(
        cfg.REPORTS, "throwaway", cfg.ReportPlan("throwaway", "A throwaway table", list)
    )
    records = tables.load_table_records("throwaway", ["x.json"])
    table = tables.build_paper_table("throwaway", records, [], {"k": 1}, {50: "7K"})
    assert seen["paths"] == ["x.json"] and seen["input"].length_labels == {50: "7K"}
    assert seen["input"].records == [{"text": "a"}] and seen["input"].paper == {"k": 1}
    assert declared.paper_sizes({}, None) == 7 and paper_of_table("throwaway") == BOTH_PAPERS
    written = tables.write_paper_table("throwaway", table, tmp_path / "throwaway", "caption")
    assert {p.suffix for p in written} >= {".md", ".csv", ".json"}
    assert "| a |" in (tmp_path / "throwaway.md").read_text()  # a text table: cells as written
    with pytest.raises(ValueError, match="unknown table 'nope'; expected one of table1"):
        tables.build_paper_table("nope", [], [], {})


def test_a_new_figure_is_its_declaration_drawing_and_claims_included(tmp_path, monkeypatch):
    from memrepro.report import figures
    from memrepro.report.reproduction import figure_caption, paper_of_figure

    drawn = {}

    def plot(f: FigureInput, out, title, checks):
        drawn.update(records=f.records, out=out, title=title, checks=list(checks))
        return [tmp_path / "throwaway.png"]

    declared = PaperFigure(plot, MEMALPHA, lambda f: ["a claim"])
    monkeypatch.setitem(figures.PAPER_FIGURES, "throwaway", declared)
    monkeypatch.setitem(
        cfg.REPORTS,
        "throwaway",
        cfg.ReportPlan("throwaway", "A throwaway figure", list, figure=True),
    )
    records = [{"system": "s"}]
    assert figures.figure_claims("throwaway", records, [], {}) == ["a claim"]
    figures.plot_paper_figure("throwaway", records, [], {}, tmp_path / "throwaway", "T")
    assert drawn == {
        "records": records,
        "out": tmp_path / "throwaway",
        "title": "T",
        "checks": ["a claim"],
    }
    assert paper_of_figure("throwaway") == MEMALPHA
    assert figure_caption("throwaway") == "A throwaway figure"
    with pytest.raises(ValueError, match="unknown figure 'nope'; expected one of figure1"):
        figures.plot_paper_figure("nope", [], [], {}, tmp_path / "x", "T")


def test_a_new_tables_plan_is_its_declaration_jobs_settings_and_inputs(monkeypatch):
    """The plan's half: a throwaway table's ReportPlan picks its evaluations, settings, paper
    file and inputs through the functions the Snakefile calls."""
    smoke = cfg.load_config([Path(__file__).resolve().parents[1] / "config/smoke.yaml"])
    declared = cfg.ReportPlan(
        "throwaway",
        "A throwaway table",
        lambda s: s.select("longbench", kind="memagent"),
        paper="memalpha_paper",
        needs="evaluation.systems on LongBench",
        settings=lambda config: {"seed": config["seed"]},
    )
    monkeypatch.setitem(cfg.REPORTS, "throwaway", declared)
    jobs = cfg.report_jobs(smoke, "throwaway")
    assert jobs and {j.benchmark for j in jobs} == {"longbench"}
    assert cfg.report_inputs(smoke, "throwaway") == [
        f"{cfg.eval_prefix(smoke, j)}.metrics.json" for j in jobs
    ]
    settings = cfg.table_settings(smoke, "throwaway")
    # its memory cells' gain over closed-book, with no word of its own: closed-book ran there
    beside = {s["id"]: s["kind"] for s in settings.pop("control_systems")}
    assert set(beside.values()) == {"memagent", "closedbook"}
    assert {p.split("/")[-2] for p in cfg.control_inputs(smoke, "throwaway")} == set(beside)
    assert settings == {"seed": smoke["seed"], "margin": 5.0}
    assert cfg.paper_file(smoke, "throwaway") == smoke["report"]["memalpha_paper"]
    assert cfg.report_needs("throwaway") == "evaluation.systems on LongBench"
    with pytest.raises(cfg.ConfigError, match="unknown table or figure 'nope'"):
        cfg.report_jobs(smoke, "nope")


@pytest.mark.parametrize(
    ("select", "error"),
    [
        (lambda s: s.select("longbenhc"), "throwaway: selects unknown benchmark 'longbenhc'"),
        (
            lambda s: s.select("ruler", systems=["rl-memagent-tiny", "nobody"]),
            "throwaway: selects systems not in evaluation.systems: nobody",
        ),
    ],
)
def test_a_plan_selecting_an_unknown_benchmark_or_system_stops_naming_the_table(
    monkeypatch, select, error
):
    smoke = cfg.load_config([Path(__file__).resolve().parents[1] / "config/smoke.yaml"])
    monkeypatch.setitem(
        cfg.REPORTS, "throwaway", cfg.ReportPlan("throwaway", "A throwaway table", select)
    )
    with pytest.raises(cfg.ConfigError, match=error):
        cfg.report_inputs(smoke, "throwaway")


def test_a_paper_file_without_a_tables_numbers_stops_the_plan_naming_the_table(tmp_path):
    smoke = cfg.load_config([Path(__file__).resolve().parents[1] / "config/smoke.yaml"])
    cfg.check_paper_key(smoke, "table1")  # the shipped file holds every key
    truncated = tmp_path / "memagent.yaml"
    truncated.write_text("ruler_hqa: {}\n")  # cut after its first table
    smoke["report"]["paper"] = str(truncated)
    cfg.check_paper_key(smoke, "table1")
    with pytest.raises(
        cfg.ConfigError, match=r"table3: its paper file .* has no key 'longbench_qa'"
    ):
        cfg.check_paper_key(smoke, "table3")
    cfg.check_paper_key(smoke, "custom")  # no numbers of the paper to find
