"""Table 1 / Figure 1 builders and the transcribed paper numbers (config/paper/memagent.yaml)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from memrl.report.figures import (
    TRAIN_METRICS_FILE,
    figure_series,
    plot_accuracy_vs_length,
    plot_training_curve,
    read_training_curve,
    training_metrics_files,
)
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


# --- the training curve ------------------------------------------------------------------------


def step_record(step: int, reward: float, **extra) -> dict:
    """One line of train_metrics.jsonl as the CPU trainer writes it (a few of its keys)."""
    return {
        "step": step,
        "reward_mean": reward,
        "kl": 0.001 * step,
        "pg_clipfrac": 0.1,
        "pg_clipfrac_lower": 0.0,
        "pg_loss": -0.2,
        "grad_norm": 0.5,
        "lr": 1e-6,
        "seconds": 2.0,
        **extra,
    }


def write_steps(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_training_metrics_file_name_is_the_trainers():
    from memrl.train.cpu_trainer import METRICS_FILE

    assert TRAIN_METRICS_FILE == METRICS_FILE


def test_read_training_curve_columns(tmp_path: Path):
    path = write_steps(tmp_path / "m.jsonl", [step_record(0, 0.0), step_record(1, 0.5)])
    curve = read_training_curve(path)
    assert curve["step"] == [0.0, 1.0] and curve["reward_mean"] == [0.0, 0.5]
    assert curve["kl"] == [0.0, 0.001] and curve["pg_clipfrac"] == [0.1, 0.1]
    assert curve["pg_clipfrac_lower"] == [0.0, 0.0]


def test_read_training_curve_needs_only_the_three_keys(tmp_path: Path):
    """The verl path writes reward_mean, kl and pg_clipfrac; no step: its position is used."""
    lines = [{"reward_mean": 0.25, "kl": 0.0, "pg_clipfrac": 0.0}] * 3
    curve = read_training_curve(write_steps(tmp_path / "m.jsonl", lines))
    assert curve["step"] == [0.0, 1.0, 2.0] and "pg_clipfrac_lower" not in curve


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([], "no training step recorded"),
        ([{"step": 0, "reward_mean": 0.0, "pg_clipfrac": 0.0}], "line 1: missing training metric"),
        ([step_record(0, 0.0), step_record(1, "high")], "line 2: 'reward_mean' must be a number"),
        ([step_record(0, 0.0), step_record(1, True)], "line 2: 'reward_mean' must be a number"),
        ([step_record(1, 0.0), step_record(0, 0.0)], "line 2: step 0 does not follow step 1"),
    ],
)
def test_read_training_curve_rejects_bad_files_naming_file_and_line(
    tmp_path: Path, lines: list[dict], message: str
):
    path = write_steps(tmp_path / "bad.jsonl", lines)
    with pytest.raises(ValueError, match=message) as error:
        read_training_curve(path)
    assert str(path) in str(error.value)


def test_read_training_curve_truncated_line_is_named(tmp_path: Path):
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps(step_record(0, 0.0)) + '\n{"step": 1, "rew')
    with pytest.raises(ValueError, match=re.escape(f"{path}:2: invalid JSON")):
        read_training_curve(path)


def test_training_metrics_files_labels(tmp_path: Path):
    stage1 = write_steps(tmp_path / "run" / "stage1" / TRAIN_METRICS_FILE, [step_record(0, 0)])
    stage2 = write_steps(tmp_path / "run" / "stage2" / TRAIN_METRICS_FILE, [step_record(0, 0)])
    # a directory resolves to the metrics file inside it
    assert training_metrics_files([stage1.parent, stage2]) == {"stage1": stage1, "stage2": stage2}
    seed = write_steps(tmp_path / "seed1" / "stage1" / TRAIN_METRICS_FILE, [step_record(0, 0)])
    assert list(training_metrics_files([stage1, seed])) == ["run/stage1", "seed1/stage1"]
    assert list(training_metrics_files([stage1, stage2], ["I", "II"])) == ["I", "II"]
    with pytest.raises(ValueError, match="1 labels for 2 metrics files"):
        training_metrics_files([stage1, stage2], ["I"])
    with pytest.raises(ValueError, match="labels must be distinct"):
        training_metrics_files([stage1, stage2], ["I", "I"])


def test_plot_training_curve_writes_png_and_pdf(tmp_path: Path):
    stage1 = write_steps(tmp_path / "s1.jsonl", [step_record(k, 0.1 * k) for k in range(4)])
    verl = [{"reward_mean": 0.5, "kl": 0.01, "pg_clipfrac": 0.02}] * 2  # no dual-clip key
    stage2 = write_steps(tmp_path / "s2.jsonl", verl)
    out = tmp_path / "figures" / "training_curve"
    png, pdf = plot_training_curve({"stage1": stage1, "stage2": stage2}, out, title="Training")
    assert (png.name, pdf.name) == ("training_curve.png", "training_curve.pdf")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and pdf.read_bytes()[:5] == b"%PDF-"
    assert sorted(p.name for p in out.parent.iterdir()) == [pdf.name, png.name]


def test_plot_training_curve_bad_file_writes_nothing(tmp_path: Path):
    good = write_steps(tmp_path / "good.jsonl", [step_record(0, 0.0)])
    empty = write_steps(tmp_path / "empty.jsonl", [])
    out = tmp_path / "figures" / "curve"
    with pytest.raises(ValueError, match=r"empty\.jsonl: no training step"):
        plot_training_curve({"a": good, "b": empty}, out, title="x")
    assert not out.parent.exists() or not list(out.parent.iterdir())


def test_cli_training_curve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from memrl import cli

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)  # no tracking in this test
    stage1 = write_steps(tmp_path / "ckpt" / "stage1" / TRAIN_METRICS_FILE, [step_record(0, 0.0)])
    stage2 = write_steps(tmp_path / "ckpt" / "stage2" / TRAIN_METRICS_FILE, [step_record(0, 1.0)])
    prefix = tmp_path / "figures" / "training_curve"
    settings = json.dumps({"title": "Stage I and II"})
    argv = ["training-curve", "--settings", settings, "--metrics", str(stage1.parent)]
    cli.main([*argv, str(stage2.parent), "--out-prefix", str(prefix)])
    assert sorted(p.name for p in prefix.parent.iterdir()) == [
        "training_curve.pdf",
        "training_curve.png",
    ]
