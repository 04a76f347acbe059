"""Table 1 / Figure 1 builders and the transcribed paper numbers (config/paper/memagent.yaml)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from memrl.report.figures import figure_series, plot_accuracy_vs_length
from memrl.report.tables import build_table1, format_cell, load_metrics, tidy, write_table

REPO = Path(__file__).resolve().parents[1]
PAPER_FILE = REPO / "config/paper/memagent.yaml"
N_DOCS = [50, 100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600]

SYSTEMS = {
    "rl-14b": {"display": "RL-MemAgent-14B (ours)", "paper_row": "RL-MEMAGENT-14B"},
    "norl_7b": {"display": "MemAgent w/o RL & co_7B", "paper_row": None},
}
PAPER = {"RL-MEMAGENT-14B": {50: 80.47, 200: 82.03, 12800: 78.91, 25600: None}}
LABELS = {50: "7K", 200: "28K"}


def metric(system: str, n_docs: int, accuracy: float, **extra) -> dict:
    record = {
        "benchmark": "ruler_hqa",
        "system": system,
        "n_docs": n_docs,
        "mean_tokens": 140.0 * n_docs,
        "n_items": 128,
        "n_failed": 0,
        "accuracy": accuracy,
        "accuracy_official": accuracy,
        "em": 50.0,
        "f1": 60.0,
    }
    record.update(extra)
    return record


def write_metrics(tmp_path: Path, records: list[dict]) -> list[Path]:
    paths = []
    for record in records:
        path = tmp_path / "eval" / record["system"] / f"{record['n_docs']}.metrics.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record))
        paths.append(path)
    return paths


@pytest.fixture
def metrics(tmp_path: Path) -> list[dict]:
    records = [
        metric("rl-14b", 50, 81.25),
        # 3 of 128 failed: 79.6875 counting them wrong, 102/125 = 81.6 dropping them.
        metric("rl-14b", 200, 79.6875, n_failed=3, accuracy_official=81.6),
        metric("rl-14b", 12800, 75.0),
        metric("norl_7b", 50, 12.5),
        metric("norl_7b", 200, 10.15625),
        metric("norl_7b", 100, 40.0, benchmark="niah"),  # another benchmark: ignored
    ]
    return load_metrics(write_metrics(tmp_path, records))


@pytest.fixture
def table(metrics: list[dict]) -> pd.DataFrame:
    return build_table1(metrics, SYSTEMS, PAPER, LABELS)


# --- the transcribed paper numbers -----------------------------------------------------------


def test_paper_file_has_all_rows_and_lengths():
    paper = yaml.safe_load(PAPER_FILE.read_text())
    rows = paper["ruler_hqa"]
    assert len(rows) == 11
    assert sorted(paper["length_labels"]) == N_DOCS
    assert paper["length_labels"][50] == "7K" and paper["length_labels"][25600] == "3.5M"
    for name, cells in rows.items():
        assert sorted(cells) == N_DOCS, name
        assert name in paper["provenance"], name
        assert (cells[12800] is None) == (cells[25600] is None) == ("MEMAGENT" not in name)
    # spot checks against seed 000, Table 1
    assert rows["RL-MEMAGENT-14B"][400] == 83.59
    assert rows["RL-MEMAGENT-7B"][25600] == 71.88
    assert rows["DS-Distill-Qwen-7B"][1600] == 0.78
    assert rows["Qwen2.5-Instruct-14B-1M"][6400] == 0.0


# --- loading ---------------------------------------------------------------------------------


def test_load_metrics_keeps_fields_and_path(metrics: list[dict]):
    assert len(metrics) == 6
    assert metrics[1]["n_failed"] == 3
    assert metrics[1]["path"].endswith("rl-14b/200.metrics.json")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "invalid JSON"),
        ("[1, 2]", "JSON object"),
        (
            json.dumps({k: v for k, v in metric("x", 50, 1.0).items() if k != "accuracy"}),
            "accuracy",
        ),
        (json.dumps(metric("x", 50, "81")), "accuracy"),
        (json.dumps(metric("x", 50, 1.0, n_failed=200)), "n_failed"),
        (json.dumps(metric("x", 50, 120.0)), "percentage"),
        (json.dumps(metric("x", 50, 1.0, mean_tokens=True)), "mean_tokens"),
    ],
)
def test_load_metrics_rejects_bad_file_naming_it(tmp_path: Path, content: str, message: str):
    good = write_metrics(tmp_path, [metric("ok", 50, 1.0)])[0]
    bad = tmp_path / "bad.metrics.json"
    bad.write_text(content)
    with pytest.raises(ValueError, match=message) as info:
        load_metrics([good, bad])
    assert str(bad) in str(info.value)


def test_load_metrics_missing_file_is_named(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match=r"nope\.json"):
        load_metrics([tmp_path / "nope.json"])


# --- building --------------------------------------------------------------------------------


def test_table_shape_order_and_golden_cells(table: pd.DataFrame):
    assert list(table.index) == ["RL-MemAgent-14B (ours)", "MemAgent w/o RL & co_7B"]
    assert list(table.columns) == [50, 200, 12800]
    cell = table.loc["RL-MemAgent-14B (ours)", 50]
    assert (cell.ours, cell.paper) == (81.25, 80.47)
    assert cell.delta == pytest.approx(0.78)
    cell = table.loc["RL-MemAgent-14B (ours)", 200]
    assert cell.delta == pytest.approx(79.6875 - 82.03)
    assert (cell.n_failed, cell.accuracy_official) == (3, 81.6)
    assert table.loc["RL-MemAgent-14B (ours)", 12800].delta == pytest.approx(75.0 - 78.91)
    no_paper = table.loc["MemAgent w/o RL & co_7B", 50]
    assert (no_paper.ours, no_paper.paper, no_paper.delta) == (12.5, None, None)
    missing = table.loc["MemAgent w/o RL & co_7B", 12800]
    assert (missing.ours, missing.paper, missing.delta) == (None, None, None)


def test_paper_keys_may_be_strings(metrics: list[dict]):
    paper = {"RL-MEMAGENT-14B": {"50": 80.47}}
    assert (
        build_table1(metrics, SYSTEMS, paper, {}).loc["RL-MemAgent-14B (ours)", 50].paper == 80.47
    )


def test_cell_text():
    table_cells = build_table1(
        [metric("rl-14b", 50, 81.25), metric("norl_7b", 50, 12.5)], SYSTEMS, PAPER, LABELS
    )
    assert format_cell(table_cells.loc["RL-MemAgent-14B (ours)", 50]) == "81.2 (paper 80.5, +0.8)"
    assert format_cell(table_cells.loc["MemAgent w/o RL & co_7B", 50]) == "12.5 (paper —)"


def test_unknown_paper_row_is_an_error(metrics: list[dict]):
    systems = {"rl-14b": {"display": "x", "paper_row": "RL-MEMAGENT-99B"}}
    with pytest.raises(ValueError, match="RL-MEMAGENT-99B"):
        build_table1(metrics[:1], systems, PAPER, LABELS)


def test_unconfigured_system_names_its_file(metrics: list[dict]):
    with pytest.raises(ValueError, match=r"norl_7b/50\.metrics\.json"):
        build_table1(metrics, {"rl-14b": SYSTEMS["rl-14b"]}, PAPER, LABELS)


def test_duplicate_metrics_are_an_error(metrics: list[dict]):
    with pytest.raises(ValueError, match="duplicate"):
        build_table1([*metrics, metrics[0]], SYSTEMS, PAPER, LABELS)


# --- writing ---------------------------------------------------------------------------------


def test_write_table_csv_md_tex(table: pd.DataFrame, tmp_path: Path):
    paths = write_table(table, tmp_path / "tables" / "table1", caption="RULER-HQA 100% _test_")
    assert [p.name for p in paths] == ["table1.csv", "table1.md", "table1.tex"]
    assert sorted(p.name for p in (tmp_path / "tables").iterdir()) == sorted(p.name for p in paths)

    csv = pd.read_csv(paths[0])
    assert list(csv.columns[:6]) == ["system", "n_docs", "length", "ours", "paper", "delta"]
    assert len(csv) == 6
    first = csv.iloc[0]
    assert (first.system, first.n_docs, first.length) == ("RL-MemAgent-14B (ours)", 50, "7K")
    assert (first.ours, first.paper, first.delta) == (81.25, 80.47, 0.78)
    assert csv.iloc[2].length == "1.79M"  # 12800 docs is not in LABELS: measured 1,792,000 tokens
    assert pd.isna(csv.iloc[3].paper) and pd.isna(csv.iloc[3].delta)

    md = paths[1].read_text()
    assert "| System | 7K | 28K | 1.79M |" in md
    assert "81.2 (paper 80.5, +0.8)" in md
    assert "79.7† (paper 82.0, -2.3)" in md
    assert "12.5 (paper —)" in md
    assert "| MemAgent w/o RL & co_7B | 12.5 (paper —) | 10.2 (paper —) | — |" in md
    assert "3/128 requests failed; accuracy 79.69" in md and "81.60 (failed dropped" in md

    tex = paths[2].read_text()
    for needle in (r"\toprule", r"\midrule", r"\bottomrule", r"\begin{tabular}{lrrr}"):
        assert needle in tex
    assert r"MemAgent w/o RL \& co\_7B" in tex
    assert r"RULER-HQA 100\% \_test\_" in tex
    assert r"81.2 {\scriptsize(paper 80.5, +0.8)}" in tex
    assert r"79.7$^\dagger$" in tex
    assert "—" not in tex


def test_no_failure_footnote_without_failures(tmp_path: Path):
    table = build_table1([metric("rl-14b", 50, 81.25)], SYSTEMS, PAPER, LABELS)
    md = write_table(table, tmp_path / "t", caption="c")[1].read_text()
    assert "†" not in md


def test_tidy_has_one_row_per_cell(table: pd.DataFrame):
    assert len(tidy(table)) == table.size


# --- figure ----------------------------------------------------------------------------------


def test_figure_series_positions(table: pd.DataFrame):
    series, column_x = figure_series(table)
    assert column_x == {50: 7000.0, 200: 28000.0, 12800: 1792000.0}
    rl, norl = series
    assert rl.xs == [7000.0, 28000.0, 1792000.0] and rl.ys == [81.25, 79.6875, 75.0]
    assert rl.paper_xs == [7000.0, 28000.0, 1792000.0] and rl.paper_ys == [80.47, 82.03, 78.91]
    assert norl.paper_xs == [] and norl.xs == [7000.0, 28000.0]


@pytest.mark.parametrize("from_metrics", [False, True])
def test_plot_writes_png_and_pdf(
    table: pd.DataFrame, metrics: list[dict], tmp_path: Path, from_metrics: bool
):
    data = metrics if from_metrics else table
    out = tmp_path / "figures" / "figure1"
    paths = plot_accuracy_vs_length(data, out, title="RULER-HQA")
    png, pdf = paths
    assert (png.name, pdf.name) == ("figure1.png", "figure1.pdf")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert pdf.read_bytes()[:5] == b"%PDF-"
    assert png.stat().st_size > 1000 and pdf.stat().st_size > 1000
    assert sorted(p.name for p in out.parent.iterdir()) == ["figure1.pdf", "figure1.png"]
