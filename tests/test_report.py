"""Report: the transcribed paper numbers (config/paper/memagent.yaml), the table builders
(Tables 1, 2, 3, 10, 11, NIAH), the figures (Figure 1, heatmaps, training curve)."""

from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from memrepro import config as cfg
from memrepro.config import (
    ABLATION_TABLES,
    KEYWORDS_TABLE,
    NIAH_CONFIG_TABLE,
    PATTERNS_TABLE,
    STATS_TABLES,
    TRACE_TABLE,
)
from memrepro.report.cells import DASH, PARTIAL_MARK
from memrepro.report.claims import FAILS, HOLDS, NOT_CHECKABLE, UNDECIDED
from memrepro.report.figures import figure_claims, plot_paper_figure
from memrepro.report.memagent_claims import check_ablation_claims, check_claims
from memrepro.report.memagent_figures import (
    ablation_rows,
    heatmap,
    memory_panels,
    plot_accuracy_vs_length,
    plot_niah_heatmaps,
    plot_ood_heatmaps,
)
from memrepro.report.memagent_figures import ruler_records as figure_ruler_records
from memrepro.report.memagent_tables import (
    NIAH_TASKS,
    build_longbench_qa_table,
    build_longbench_sum_table,
    build_rag_longbench_table,
    build_rag_ruler_hqa_table,
    build_table1,
    niah_paper_rows,
)
from memrepro.report.plots import claim_lines, figure_series
from memrepro.report.records import load_metrics
from memrepro.report.render import (
    failure_notes,
    format_cell,
    length_label,
    tidy,
    to_markdown,
    write_table,
)
from memrepro.report.rows import rag_model, rag_paper_row, system_kind
from memrepro.report.tables import (
    PAPER_TABLES,
    build_paper_table,
    load_table_records,
    write_paper_table,
)
from memrepro.report.training_curves import (
    TRAIN_METRICS_FILE,
    plot_training_curve,
    read_training_curve,
    training_metrics_files,
)
from memrepro.scoring.intervals import wilson

REPO = Path(__file__).resolve().parents[1]
# their own inputs: below, and in test_memory_patterns.py
# tested in their own files (tests/test_recipes.py, tests/test_controls.py)
TESTED_ALONE = (
    cfg.CONTROLS_TABLE,
    cfg.PROTOCOLS_TABLE,
    cfg.SCORERS_TABLE,
    cfg.SEEDS_TABLE,
    cfg.PAPER_CLAIMS_TABLE,
    TRACE_TABLE,
    NIAH_CONFIG_TABLE,
    "table4",
    PATTERNS_TABLE,
    KEYWORDS_TABLE,
    cfg.BUILD_TABLE,  # tests/test_memalpha_build.py
    cfg.MEMAGENT_RECIPES_TABLE,
    cfg.MEMALPHA_RECIPES_TABLE,
)
PAPER_FILE = REPO / "config/paper/memagent.yaml"
N_DOCS = [50, 100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600]

SYSTEMS = {
    "rl-14b": {
        "display": "RL-MemAgent-14B (ours)",
        "paper_row": "RL-MEMAGENT-14B",
        "kind": "memagent",
    },
    "norl_7b": {"display": "MemAgent w/o RL & co_7B", "paper_row": None, "kind": "memagent"},
}
PAPER = {"RL-MEMAGENT-14B": {50: 80.47, 200: 82.03, 12800: 78.91, 25600: None}}
LABELS = {50: "7K", 200: "28K"}

pytestmark = pytest.mark.usefixtures("checked_figures")  # every saved figure checked


def metric(system: str, n_docs: int, accuracy: float, **extra) -> dict:
    """A RULER-HQA metrics record (length = n_docs) in the evaluation's schema."""
    record = {
        "benchmark": "ruler_hqa",
        "task": "hqa",
        "system": system,
        "length": n_docs,
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
        where = tmp_path / "eval" / record["benchmark"] / record["task"] / record["system"]
        path = where / f"{record['length']}.metrics.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps([record]))
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
        # another benchmark: ignored
        metric("norl_7b", 8192, 40.0, benchmark="ruler", task="niah_single_1"),
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
        (json.dumps(metric("x", 50, 1.0)), "expected a list of metrics records"),
        (
            json.dumps([{k: v for k, v in metric("x", 50, 1.0).items() if k != "accuracy"}]),
            "accuracy",
        ),
        (json.dumps([metric("x", 50, "81")]), "accuracy"),
        (json.dumps([metric("x", 50, 1.0, n_failed=200)]), "n_failed"),
        (json.dumps([metric("x", 50, 120.0)]), "percentage"),
        (json.dumps([metric("x", 50, 1.0, mean_tokens=True)]), "mean_tokens"),
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
    cell = table.loc["RL-MemAgent-14B (ours)", 200]  # 3 failed: the official figure is shown
    assert cell.ours == 81.6 and cell.delta == pytest.approx(81.6 - 82.03)
    assert (cell.n_dropped, cell.extras["over all"]) == (3, 79.6875)
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
    systems = {"rl-14b": {"display": "x", "paper_row": "RL-MEMAGENT-99B", "kind": "memagent"}}
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
    assert [p.name for p in paths] == ["table1.csv", "table1.md", "table1.tex", "table1.html"]
    assert sorted(p.name for p in (tmp_path / "tables").iterdir()) == sorted(p.name for p in paths)

    csv = pd.read_csv(paths[0])
    assert list(csv.columns[:6]) == ["system", "n_docs", "label", "ours", "paper", "delta"]
    assert len(csv) == 6
    first = csv.iloc[0]
    assert (first.system, first.n_docs, first.label) == ("RL-MemAgent-14B (ours)", 50, "7K")
    assert (first.ours, first.paper, first.delta) == (81.25, 80.47, 0.78)
    assert csv.iloc[2].label == "1.79M"  # 12800 docs is not in LABELS: measured 1,792,000 tokens
    assert pd.isna(csv.iloc[3].paper) and pd.isna(csv.iloc[3].delta)

    md = paths[1].read_text()
    assert "| System | 7K | 28K | 1.79M |" in md
    assert "81.2 (paper 80.5, +0.8)" in md
    assert "81.6† (paper 82.0, -0.4; over all 79.7)" in md  # the official figure, ours beside
    assert "12.5 (paper —)" in md
    assert "| MemAgent w/o RL & co_7B | 12.5 (paper —) | 10.2 (paper —) | — |" in md
    assert "3/128 outputs empty (3 failed requests), dropped as the official" in md
    assert "81.60 (shown beside the paper's); 79.69 counting them wrong" in md

    tex = paths[2].read_text()
    for needle in (r"\toprule", r"\midrule", r"\bottomrule", r"\begin{tabular}{lrrr}"):
        assert needle in tex
    assert r"MemAgent w/o RL \& co\_7B" in tex
    assert r"RULER-HQA 100\% \_test\_" in tex
    assert r"81.2 {\scriptsize(paper 80.5, +0.8)}" in tex
    assert r"81.6$^\dagger$" in tex
    assert "—" not in tex


def test_no_failure_footnote_without_failures(tmp_path: Path):
    table = build_table1([metric("rl-14b", 50, 81.25)], SYSTEMS, PAPER, LABELS)
    md = write_table(table, tmp_path / "t", caption="c")[1].read_text()
    assert "†" not in md


def test_a_note_counts_answers_the_official_sub_em_credits_for_nothing(tmp_path: Path):
    lenient = metric("rl-14b", 50, 81.25, sub_em_strict=78.125, n_lenient_sub_em=4)
    table = build_table1(load_metrics(write_metrics(tmp_path, [lenient])), SYSTEMS, PAPER, LABELS)
    md = write_table(table, tmp_path / "t", caption="c")[1].read_text()
    assert "RL-MemAgent-14B (ours) @ 7K: 4/128 answers normalise to nothing" in md
    assert "strict sub_em 78.12" in md
    plain = build_table1([metric("rl-14b", 50, 81.25)], SYSTEMS, PAPER, LABELS)
    assert (
        "normalise to nothing" not in write_table(plain, tmp_path / "p", caption="c")[1].read_text()
    )


def test_tidy_has_one_row_per_cell(table: pd.DataFrame):
    assert len(tidy(table)) == table.size


# --- figure ----------------------------------------------------------------------------------


def test_figure_series_positions(table: pd.DataFrame):
    series, column_x = figure_series(table)
    assert column_x == {50: 7000.0, 200: 28000.0, 12800: 1792000.0}
    rl, norl = series
    assert rl.xs == [7000.0, 28000.0, 1792000.0] and rl.ys == [81.25, 81.6, 75.0]
    assert rl.paper_xs == [7000.0, 28000.0, 1792000.0] and rl.paper_ys == [80.47, 82.03, 78.91]
    assert norl.paper_xs == [] and norl.xs == [7000.0, 28000.0]


def test_plot_writes_png_and_pdf(table: pd.DataFrame, tmp_path: Path):
    out = tmp_path / "figures" / "figure1"
    paths = plot_accuracy_vs_length(table, out, title="RULER-HQA")
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
    from memrepro.train.cpu_trainer import METRICS_FILE

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
    from memrepro import cli

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


# === the other tables: transcribed numbers ==================================================

QA_TASKS = ["2wikimqa", "hotpotqa", "musique", "narrativeqa", "qasper"]


@pytest.fixture(scope="module")
def paper() -> dict:
    return yaml.safe_load(PAPER_FILE.read_text())


def test_table2_longbench_sum_numbers(paper: dict):
    rows = paper["longbench_sum"]
    assert set(rows) == set(paper["ruler_hqa"])  # the same 11 rows, under Table 1's names
    for name, datasets in rows.items():
        assert list(datasets) == ["gov_report", "qmsum"], name
        for dataset, cells in datasets.items():
            assert list(cells) == ["rouge_1", "rouge_2", "rouge_l", "avg"], (name, dataset)
            mean = (cells["rouge_1"] + cells["rouge_2"] + cells["rouge_l"]) / 3
            # the components are rounded to 2 decimals, the AVG was taken before rounding them
            assert cells["avg"] == pytest.approx(mean, abs=0.01), (name, dataset)
    # spot checks against seed 000, Table 2
    assert rows["RL-MEMAGENT-14B"]["gov_report"]["rouge_1"] == 37.16
    assert rows["RL-MEMAGENT-7B"]["qmsum"]["rouge_2"] == 14.41
    assert rows["DS-Distill-Qwen-7B"]["qmsum"]["avg"] == 20.62
    assert rows["QwenLong-L1-32B"]["gov_report"]["rouge_l"] == 13.07  # printed "QwenLong-L1"
    assert paper["sources"]["longbench_sum"]["printed_names"]["QwenLong-L1-32B"] == "QwenLong-L1"


def test_table3_longbench_qa_numbers(paper: dict):
    rows = paper["longbench_qa"]
    assert set(rows) == set(paper["ruler_hqa"])
    for name, cells in rows.items():
        assert list(cells) == [*QA_TASKS, "avg"], name
        # k/200 per dataset: every score is a multiple of 0.5
        assert all((2 * cells[task]).is_integer() for task in QA_TASKS), name
        mean = sum(cells[task] for task in QA_TASKS) / 5
        assert cells["avg"] == pytest.approx(mean, abs=0.051), name
    assert rows["QwenLong-L1-32B"]["2wikimqa"] == 83.0
    assert rows["RL-MEMAGENT-14B"]["avg"] == 51.0  # printed "MEMAGENT-14B"
    assert rows["RL-MEMAGENT-7B"]["qasper"] == 29.0
    assert rows["DS-Distill-Qwen-7B"]["musique"] == 7.5
    assert rows["Qwen2.5-Instruct-7B"]["avg"] == 34.7


def test_table10_rag_ruler_hqa_numbers(paper: dict):
    rows = paper["rag_ruler_hqa"]
    assert len(rows) == 10
    for name, cells in rows.items():
        assert sorted(cells) == N_DOCS, name
        # k/128 questions, printed to two decimals
        assert all(abs(v * 1.28 - round(v * 1.28)) < 0.01 for v in cells.values()), name
    for size in ("14B", "7B"):
        assert [f"RAG + Qwen2.5-{size} K={k}" in rows for k in (2, 4, 6, 8)] == [True] * 4
        memagent = f"RL-MEMAGENT-{size}"
        assert rows[memagent] == paper["ruler_hqa"][memagent]  # Table 10 repeats Table 1
    assert rows["RAG + Qwen2.5-14B K=2"][50] == 57.03
    assert rows["RAG + Qwen2.5-14B K=8"][400] == 81.25
    assert rows["RAG + Qwen2.5-7B K=2"][25600] == 46.09
    assert rows["RAG + Qwen2.5-7B K=6"][1600] == 73.44


def test_table11_rag_longbench_numbers_and_the_sum_over_6_erratum(paper: dict):
    rows = paper["rag_longbench_qa"]
    assert len(rows) == 18
    for name, cells in rows.items():
        assert list(cells) == [*QA_TASKS, "avg"], name
        total = sum(cells[task] for task in QA_TASKS)
        if name.startswith("RL-MEMAGENT"):
            assert cells == paper["longbench_qa"][name]  # = Table 3's rows
            assert cells["avg"] == pytest.approx(total / 5, abs=0.006)
        else:  # the paper's RAG AVG divides by 6 (sources.rag_longbench_qa.erratum)
            assert cells["avg"] == pytest.approx(total / 6, abs=0.006), name
            assert cells["avg"] != pytest.approx(total / 5, abs=0.05), name
    assert rows["Qwen2.5-14B + RAG C=1024 K=2"]["2wikimqa"] == 51.5
    assert rows["Qwen2.5-14B + RAG C=2048 K=8"]["qasper"] == 27.5
    assert rows["Qwen2.5-7B + RAG C=1024 K=2"]["avg"] == 25.25
    assert rows["Qwen2.5-7B + RAG C=2048 K=6"]["narrativeqa"] == 22.0
    assert (
        "sum of its five datasets divided by 6" in paper["sources"]["rag_longbench_qa"]["erratum"]
    )


def test_tables_8_9_memory_ablation_numbers(paper: dict):
    niah, qa = paper["memory_ablation"]["niah"], paper["memory_ablation"]["longbench_qa"]
    lengths = [8192 * 2**i for i in range(7)]
    assert len(niah) == len(qa) == 8
    for name, cells in niah.items():
        assert sorted(cells) == lengths, name
        # the mean of three tasks x 128 samples: near multiples of 1/384 (two cells are off by
        # 0.005 from rounding per-task scores first: 97.13 and 96.62)
        assert all(abs(v * 3.84 - round(v * 3.84)) < 0.03 for v in cells.values()), name
    for cells in qa.values():
        assert cells["avg"] == pytest.approx(sum(cells[t] for t in QA_TASKS) / 5, abs=0.051)
    assert qa["14B-m1024-c5000"] == paper["longbench_qa"]["RL-MEMAGENT-14B"]
    assert qa["7B-m1024-c5000"] == paper["longbench_qa"]["RL-MEMAGENT-7B"]
    assert niah["14B-m1024-c5000"][524288] == 98.18
    assert niah["7B-m2048-c3976"][262144] == 94.53
    assert niah["14B-m4096-c1928"][8192] == 100.0
    assert niah_paper_rows(paper) == {
        "RL-MEMAGENT-14B": niah["14B-m1024-c5000"],
        "RL-MEMAGENT-7B": niah["7B-m1024-c5000"],
    }


def test_figure_claims_are_recorded(paper: dict):
    assert paper["niah"]["tasks"] == list(NIAH_TASKS)
    assert len(paper["ood"]["average_tasks"]) == 10 and "qa_1" not in paper["ood"]["average_tasks"]
    ood = {claim["id"]: claim for claim in paper["ood"]["claims"]}
    assert ood["ood_avg_over_95_14b"]["value"] == 95.0
    assert ood["ood_avg_over_95_14b"]["lengths"] == [8192, 524288]
    niah = {claim["id"]: claim for claim in paper["niah"]["claims"]}
    assert niah["niah_512k_over_95"]["op"] == ">" and niah["niah_loss_under_5"]["value"] == 5.0
    for claim in [*paper["ood"]["claims"], *paper["niah"]["claims"]]:
        assert {"id", "text", "where"} <= set(claim), claim
        assert all(row in paper["ruler_hqa"] for row in claim.get("rows", [])), claim


# === the other tables: builders on synthetic records ========================================


def record(benchmark: str, task: str, system: str, length: int = 0, **scores) -> dict:
    """A metrics record of any benchmark; `accuracy` defaults to 50."""
    base = {
        "benchmark": benchmark,
        "task": task,
        "system": system,
        "length": length,
        "n_items": 200,
        "n_failed": 0,
        "accuracy": 50.0,
        "accuracy_official": None,
        "mean_tokens": 9000.0,
        "mean_calls": 3.0,
    }
    base.update(scores)
    if base["accuracy_official"] is None:
        base["accuracy_official"] = base["accuracy"]
    return base


# The report settings' list of systems (config.report_settings), one of each kind.
REPORT_SYSTEMS = [
    {"id": "rl-14b", "display": "RL-14B", "paper_row": "RL-MEMAGENT-14B", "kind": "memagent"},
    {"id": "norl", "display": "w/o RL", "paper_row": None, "kind": "memagent"},
    {
        "id": "q14",
        "display": "Qwen 14B",
        "paper_row": "Qwen2.5-Instruct-14B",
        "kind": "longcontext",
    },
    {
        "id": "rag14.bm25-k4-doc",
        "display": "RAG bm25 K=4",
        "paper_row": "RAG + Qwen2.5-14B",
        "kind": "rag",
        "retriever": "bm25",
        "top_k": 4,
        "unit": "doc",
    },
    {
        "id": "rag14.dense-k3-doc",
        "display": "RAG dense K=3",
        "paper_row": "RAG + Qwen2.5-14B",
        "kind": "rag",
        "retriever": "dense",
        "top_k": 3,
        "unit": "doc",
    },
    {
        "id": "rag14.dense-k2-c1024",
        "display": "RAG dense C=1024 K=2",
        "paper_row": "RAG + Qwen2.5-14B",  # the group name: Table 11's row is derived
        "kind": "rag",
        "retriever": "dense",
        "top_k": 2,
        "unit": "c1024",
    },
]


def qa_records(system: str, scores: dict[str, float], f1: float = 40.0) -> list[dict]:
    return [
        record("longbench", task, system, accuracy=v, sub_em=v, qa_f1=f1)
        for task, v in scores.items()
    ]


def test_longbench_qa_table(paper: dict):
    records = [
        *qa_records("rl-14b", dict(zip(QA_TASKS, [80.0, 70.0, 50.0, 30.0, 20.0], strict=True))),
        *qa_records("q14", {"2wikimqa": 60.0, "hotpotqa": 65.0}, f1=30.0),
        record("longbench", "gov_report", "rl-14b", rouge_1_recall=30.0),  # Table 2's
        *qa_records("rag14.dense-k2-c1024", {"2wikimqa": 1.0}),  # Table 11's
    ]
    table = build_longbench_qa_table(records, REPORT_SYSTEMS, paper["longbench_qa"])
    assert list(table.index) == ["RL-14B", "w/o RL", "Qwen 14B"]  # no RAG rows
    assert list(table.columns) == [*QA_TASKS, "avg"]
    cell = table.loc["RL-14B", "2wikimqa"]
    assert (cell.ours, cell.paper, cell.extras) == (80.0, 79.0, {"F1": 40.0})
    assert cell.delta == pytest.approx(1.0)
    full = table.loc["RL-14B", "avg"]
    assert full.ours == pytest.approx(50.0) and full.paper == pytest.approx(51.0)
    assert full.mark == "" and full.extras == {"F1": pytest.approx(40.0)}
    # two of five datasets: marked, against the paper's mean over the same two (67.0, 63.5)
    partial = table.loc["Qwen 14B", "avg"]
    assert partial.ours == pytest.approx(62.5) and partial.paper == pytest.approx(65.25)
    assert partial.mark == PARTIAL_MARK
    assert format_cell(partial) == "62.5* (paper 65.2, -2.8; F1 30.0)"
    missing = table.loc["Qwen 14B", "qasper"]
    assert (missing.ours, missing.paper, format_cell(missing)) == (None, 20.5, "— (paper 20.5)")
    assert format_cell(table.loc["w/o RL", "avg"]) == "—"
    notes = table.attrs["partial_notes"]
    assert notes == [
        "Qwen 14B: AVG over 2 of 5 columns (missing: MuSiQue, NQA, Qasper); its paper value "
        "is the paper's mean over the same columns."
    ]
    assert "k/200" in table.attrs["notes"][0]


def test_longbench_sum_table(paper: dict):
    records = [
        record(
            "longbench",
            "gov_report",
            "rl-14b",
            accuracy=20.0,
            rouge_1_recall=36.0,
            rouge_2_recall=12.0,
            rouge_l_recall=12.0,
            n_failed=2,
            accuracy_official=20.2,
        ),
        record("longbench", "2wikimqa", "rl-14b", accuracy=10.0),  # Table 3's: ignored
    ]
    table = build_longbench_sum_table(records, REPORT_SYSTEMS, paper["longbench_sum"])
    assert list(table.columns) == [
        "gov_report.rouge_1",
        "gov_report.rouge_2",
        "gov_report.rouge_l",
        "gov_report.avg",
        "qmsum.rouge_1",
        "qmsum.rouge_2",
        "qmsum.rouge_l",
        "qmsum.avg",
    ]
    cell = table.loc["RL-14B", "gov_report.rouge_1"]
    assert (cell.ours, cell.paper) == (36.0, 37.16) and cell.delta == pytest.approx(-1.16)
    avg = table.loc["RL-14B", "gov_report.avg"]
    assert avg.ours == pytest.approx(20.0) and avg.paper == pytest.approx(21.8067, abs=1e-4)
    assert avg.n_dropped == 6 and format_cell(avg).startswith("20.0† (paper 21.8, -1.8")
    assert table.loc["RL-14B", "qmsum.avg"].ours is None
    # one failure note for the one metrics file behind the three ROUGE cells
    assert len(failure_notes(table)) == 1
    assert failure_notes(table)[0].startswith("RL-14B @ GovReport: 2/200 outputs empty")


def with_paper_retriever(*systems: dict) -> list[dict]:
    """RAG systems retrieving as the paper's did (text-embedding-3-large: `openai`)."""
    return [
        {**s, "id": s["id"].replace(s["retriever"], "openai"), "retriever": "openai"}
        for s in systems
    ]


def test_rag_ruler_hqa_table_derives_rows_from_k(paper: dict):
    openai = with_paper_retriever(REPORT_SYSTEMS[3], REPORT_SYSTEMS[4])
    openai = [{**s, "display": s["display"].replace("bm25", "openai")} for s in openai]
    openai[1]["display"] = "RAG openai K=3"
    records = [
        metric("rl-14b", 50, 81.25),
        metric("rag14.openai-k4-doc", 50, 60.0),
        metric("rag14.openai-k3-doc", 50, 55.0),
        metric("rag14.bm25-k4-doc", 50, 62.0),  # another retriever than the paper's
        metric("q14", 50, 70.0),  # long-context: Table 1 only
        metric("rag14.dense-k2-c1024", 50, 1.0),  # chunks are Table 11's: ignored
    ]
    table = build_rag_ruler_hqa_table(
        records, [*REPORT_SYSTEMS, *openai], paper["rag_ruler_hqa"], paper["length_labels"]
    )
    assert list(table.index) == [
        "RL-14B",
        "w/o RL",
        "RAG bm25 K=4",
        "RAG dense K=3",
        "RAG openai K=4",
        "RAG openai K=3",
    ]
    assert table.attrs["paper_rows"]["RAG openai K=4"] == "RAG + Qwen2.5-14B K=4"
    rag = table.loc["RAG openai K=4", 50]
    assert (rag.ours, rag.paper) == (60.0, 66.41) and rag.delta == pytest.approx(-6.41)
    bm25 = table.loc["RAG bm25 K=4", 50]  # BM25 is not the paper's retriever: nothing to judge
    assert (bm25.ours, bm25.paper, table.attrs["paper_rows"]["RAG bm25 K=4"]) == (62.0, None, None)
    assert table.loc["RL-14B", 50].paper == 80.47
    assert table.loc["RAG openai K=3", 50].paper is None  # the paper ran K = 2, 4, 6, 8
    notes = table.attrs["notes"]
    assert notes[0] == (
        "Our RAG retrieves with BM25, all-MiniLM-L6-v2 (dense), OpenAI embeddings "
        "(evaluation.embedding.model); the paper's RAG with OpenAI's text-embedding-3-large."
    )
    assert notes[1].startswith("3 RAG row(s) of another retriever than the paper's")
    assert "RAG openai K=3: the paper did not run 'RAG + Qwen2.5-14B K=3'." in notes
    assert length_label(table, 50) == "7K"


def test_d2s_claim_is_checked_against_the_papers_retriever_and_mem0(paper: dict):
    """MemAgent's margin over every RAG row that retrieved as the paper's (not BM25's) and over
    Mem0, at every length, each margin's interval judged (the smallest shown)."""
    [openai] = with_paper_retriever(REPORT_SYSTEMS[3])
    openai = {**openai, "display": "RAG openai K=4"}
    mem0 = {"id": "mem0", "display": "Mem0", "paper_row": None, "kind": "mem0"}
    systems = [*REPORT_SYSTEMS, openai, mem0]

    def rw(system: str, n_docs: int, right: int) -> dict:  # right of 128, with its interval
        return with_interval(metric(system, n_docs, 100 * right / 128), *wilson(right, 128))

    records = [
        *(rw("rl-14b", n, 115) for n in (50, 100)),
        *(rw("rag14.openai-k4-doc", n, 60) for n in (50, 100)),
        rw("rag14.bm25-k4-doc", 50, 127),  # another retriever: no rival of the paper's claim
        rw("mem0", 50, 90),
        rw("mem0", 100, 114),  # one question behind: its margin's interval spans 0
    ]
    table10 = build_paper_table("table10", records, systems, paper, LABELS)
    [claim] = table10.attrs["claims"]
    assert (claim.claim_id, claim.system, claim.outcome) == (
        "d2_outperforms_rag",
        "RL-14B",
        "holds",
    )
    assert claim.value == pytest.approx(100 * 55 / 128)
    assert "on the paper's own numbers +14.1" in claim.detail  # 80.47 - 66.41 at 7K
    table1 = build_paper_table("table1", records, systems, paper, LABELS)
    [mem0_claim] = table1.attrs["claims"]
    assert mem0_claim.claim_id == "d2_outperforms_mem0" and mem0_claim.outcome == "undecided"
    assert mem0_claim.value == pytest.approx(100 / 128) and "paper's own" not in mem0_claim.detail
    assert "the lowest of 2" in mem0_claim.detail  # at 7K and 14K
    alone = build_paper_table("table1", records[:2], systems, paper, LABELS)
    assert [c.outcome for c in alone.attrs["claims"]] == ["not checkable"]


def test_rag_longbench_table_recomputes_the_papers_avg(paper: dict):
    scores = dict(zip(QA_TASKS, [50.0, 55.0, 25.0, 15.0, 25.0], strict=True))
    records = [*qa_records("rag14.openai-k2-c1024", scores), *qa_records("q14", scores)]
    systems = [*REPORT_SYSTEMS[:5], *with_paper_retriever(REPORT_SYSTEMS[5])]
    table = build_rag_longbench_table(records, systems, paper["rag_longbench_qa"])
    assert list(table.index) == ["RL-14B", "w/o RL", "RAG dense C=1024 K=2"]
    assert table.attrs["paper_rows"]["RAG dense C=1024 K=2"] == "Qwen2.5-14B + RAG C=1024 K=2"
    avg = table.loc["RAG dense C=1024 K=2", "avg"]
    assert avg.ours == pytest.approx(34.0)
    assert avg.paper == pytest.approx(34.6)  # 173/5, not the printed 28.83 (= 173/6)
    assert avg.delta == pytest.approx(-0.6)
    assert table.loc["RL-14B", "avg"].paper == pytest.approx(51.0)
    assert any("28.83" in note and "34.60" in note for note in table.attrs["notes"])


def test_rag_setting_the_paper_did_not_run_has_no_paper_value(paper: dict):
    [openai] = with_paper_retriever(REPORT_SYSTEMS[5])
    c512 = {**openai, "id": "rag14.openai-k2-c512", "unit": "c512", "display": "C512"}
    records = qa_records("rag14.openai-k2-c512", {"qasper": 20.0})
    table = build_rag_longbench_table(records, [c512], paper["rag_longbench_qa"])
    assert table.loc["C512", "qasper"].paper is None
    assert "C512: the paper did not run 'Qwen2.5-14B + RAG C=512 K=2'." in table.attrs["notes"]


def test_paper_row_of_another_table_is_an_error(paper: dict):
    systems = [{"id": "x", "display": "X", "paper_row": "RL-MEMAGENT-99B", "kind": "memagent"}]
    with pytest.raises(ValueError, match=r"RL-MEMAGENT-99B.*Table 3"):
        build_longbench_qa_table([], systems, paper["longbench_qa"])
    rag = [{**with_paper_retriever(REPORT_SYSTEMS[3])[0], "paper_row": "RAG + Llama-70B"}]
    with pytest.raises(ValueError, match="Llama-70B"):
        build_rag_ruler_hqa_table([], rag, paper["rag_ruler_hqa"], {})


def test_table1_leaves_rag_systems_out(paper: dict):
    records = [metric("rl-14b", 50, 81.25), metric("rag14.bm25-k4-doc", 50, 60.0)]
    table = build_table1(records, REPORT_SYSTEMS, paper["ruler_hqa"], paper["length_labels"])
    assert list(table.index) == ["RL-14B", "w/o RL", "Qwen 14B"]
    assert table.loc["Qwen 14B", 50].paper == 75.0 and table.loc["Qwen 14B", 50].ours is None


def niah_record(
    system: str, task: str, length: int, accuracy: float, spread: float | None = None
) -> dict:
    """A RULER record of 128 items; `spread`: a 95 % interval of ±spread (a claim needs one)."""
    ci95 = {} if spread is None else {"ci95": {"accuracy": [accuracy - spread, accuracy + spread]}}
    return record("ruler", task, system, length, accuracy=accuracy, n_items=128, **ci95)


def test_niah_table_means_three_tasks(paper: dict):
    records = [
        *(
            niah_record("rl-14b", task, 8192, v)
            for task, v in zip(NIAH_TASKS, [100, 99, 98], strict=True)
        ),
        *(niah_record("rl-14b", task, 16384, 90.0) for task in NIAH_TASKS[:2]),
        niah_record("q14", "niah_single_1", 8192, 60.0),
        niah_record("rl-14b", "vt", 8192, 10.0),  # not a NIAH task here
    ]
    table = build_paper_table("table_niah", records, REPORT_SYSTEMS, paper)
    assert list(table.columns) == [8192, 16384]
    assert [length_label(table, n) for n in table.columns] == ["8K", "16K"]
    cell = table.loc["RL-14B", 8192]
    assert cell.ours == pytest.approx(99.0) and cell.paper == 99.74
    partial = table.loc["RL-14B", 16384]
    # the paper prints only the mean of all three: no paper value for a mean of two
    assert (partial.ours, partial.paper, partial.mark) == (90.0, None, PARTIAL_MARK)
    assert table.loc["Qwen 14B", 8192].paper is None  # Table 8 has MemAgent rows only
    assert "niah_single_3 @ 16K" in table.attrs["partial_notes"][0]


@pytest.mark.parametrize("name", [n for n in PAPER_TABLES if n not in TESTED_ALONE])  # below
def test_build_paper_table_writes_every_table(paper: dict, tmp_path: Path, name: str):
    if name in STATS_TABLES:  # Mem-α's dataset statistics
        records = [stats(split, "squad", 3, 2.0, 900.0, 5.0) for split in STATS_TABLES[name]]
        paper, systems = MEMALPHA_PAPER, []
    elif name == "suites":  # both papers' systems on both suites
        records = memagent_table_records() + memalpha_records("mab", ["rl-14b"])
        paper, systems = MEMALPHA_PAPER, REPORT_SYSTEMS
    elif name == "custom":  # one's own datasets: the systems that ran them, no paper
        records, systems = custom_records(), REPORT_SYSTEMS
    elif name in ABLATION_TABLES:  # systems of our own Mem-α runs, rows by (β, γ)
        records = memalpha_records(ABLATION_TABLES[name], ["b05g0", "b0g01"])
        paper, systems = MEMALPHA_PAPER, ABLATION_SYSTEMS
    elif name.startswith("memalpha_"):  # Mem-α's numbers, systems and benchmarks
        benchmark = "mab" if name == "memalpha_table2" else "memalpha"
        records = memalpha_records(benchmark, ["ma"])
        paper, systems = MEMALPHA_PAPER, MEMALPHA_SYSTEMS
    else:
        records, systems = memagent_table_records(), REPORT_SYSTEMS
    table = build_paper_table(name, records, systems, paper)
    filled = [cell for _, row in table.iterrows() for cell in row if cell.ours is not None]
    assert filled and all(cell.delta is not None for cell in filled if cell.paper is not None)
    paths = write_table(table, tmp_path / name, caption=cfg.report_plan(name).caption)
    assert [p.stat().st_size > 100 for p in paths] == [True] * 4
    assert len(pd.read_csv(paths[0])) == table.size


def memagent_table_records() -> list[dict]:
    return [
        metric("rl-14b", 50, 81.25),
        metric("rag14.bm25-k4-doc", 50, 60.0),
        *qa_records("rl-14b", {"hotpotqa": 70.0}),
        *qa_records("rag14.dense-k2-c1024", {"hotpotqa": 60.0}),
        record("longbench", "qmsum", "rl-14b", **{f"rouge_{k}_recall": 30.0 for k in "12l"}),
        niah_record("rl-14b", "niah_single_1", 8192, 100.0),
    ]


def custom_records() -> list[dict]:
    return [
        record("custom", "long_qa", "rl-14b", accuracy=40.0, mean_memory_tokens=None),
        record("custom", "minutes", "rl-14b", accuracy=20.0, mean_memory_tokens=None),
        record("custom", "long_qa", "rag14.bm25-k4-doc", accuracy=30.0, mean_memory_tokens=1500.0),
        record("custom", "minutes", "rag14.bm25-k4-doc", accuracy=10.0, mean_memory_tokens=500.0),
    ]


def test_the_custom_table_shows_each_dataset_their_average_and_memory(paper: dict):
    table = build_paper_table("custom", custom_records(), REPORT_SYSTEMS, paper)
    assert list(table.columns) == ["long_qa.perf", "minutes.perf", "perf", "mem"]
    assert len(table) == 2  # only the systems that ran the datasets
    agent, rag = table.loc["RL-14B"], table.loc["RAG bm25 K=4"]
    assert (agent["long_qa.perf"].ours, agent["perf"].ours, agent["mem"].ours) == (40.0, 30.0, None)
    assert rag["mem"].ours == pytest.approx(1.0) and rag["perf"].paper is None
    assert table.attrs["paper"] is False


def test_build_paper_table_unknown_name(paper: dict):
    with pytest.raises(ValueError, match="table4"):
        build_paper_table("table4", [], REPORT_SYSTEMS, paper)


def test_longbench_markdown_and_csv_extras(paper: dict, tmp_path: Path):
    records = qa_records("rl-14b", dict.fromkeys(QA_TASKS, 60.0), f1=45.0)
    table = build_longbench_qa_table(records, REPORT_SYSTEMS[:1], paper["longbench_qa"])
    csv_path, md_path, tex_path, _ = write_table(table, tmp_path / "table3", caption="LongBench-QA")
    md = md_path.read_text()
    assert "| System | 2Wiki | HQA | MuSiQue | NQA | Qasper | AVG |" in md
    assert "60.0 (paper 79.0, -19.0; F1 45.0)" in md
    csv = pd.read_csv(csv_path)
    assert list(csv.columns[:3]) == ["system", "column", "label"] and "F1" in csv.columns
    assert csv.set_index("column").loc["avg", "paper"] == pytest.approx(51.0)
    assert r"60.0 {\scriptsize(paper 79.0, -19.0; F1 45.0)}" in tex_path.read_text()


@pytest.mark.parametrize(
    ("model", "top_k", "unit", "row"),
    [
        ("Qwen2.5-14B", 4, "doc", "RAG + Qwen2.5-14B K=4"),
        ("Qwen2.5-7B", 8, "c2048", "Qwen2.5-7B + RAG C=2048 K=8"),
    ],
)
def test_rag_paper_row(model: str, top_k: int, unit: str, row: str):
    assert rag_paper_row(model, top_k, unit) == row
    assert rag_model(f"RAG + {model}") == rag_model(f"{model} + RAG") == model


def test_rag_paper_row_rejects_unknown_unit():
    with pytest.raises(ValueError, match="unit"):
        rag_paper_row("Qwen2.5-14B", 2, "sentences")


def test_system_kind_is_read_from_the_settings_never_guessed_from_the_id():
    assert system_kind("qwen2.5-7b-instruct-128k", {"kind": "longcontext"}) == "longcontext"
    with pytest.raises(ValueError, match="no 'kind'"):
        system_kind("rag-qwen2.5-14b.dense-k4-c1024", {})


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"length": 0}, "length=0"),
        ({"qa_f1": "high"}, "qa_f1"),
        ({"sub_em": 101.0}, "percentage"),
    ],
)
def test_load_metrics_new_fields(tmp_path: Path, changes: dict, message: str):
    bad = tmp_path / "bad.metrics.json"
    bad.write_text(json.dumps([metric("x", 50, 1.0, **changes)]))
    with pytest.raises(ValueError, match=message):
        load_metrics([bad])


def test_load_metrics_old_n_docs_file_names_length(tmp_path: Path):
    old = {k: v for k, v in metric("x", 50, 1.0).items() if k != "length"} | {"n_docs": 50}
    path = tmp_path / "old.metrics.json"
    path.write_text(json.dumps([old]))
    with pytest.raises(ValueError, match="missing key 'length'"):
        load_metrics([path])


def test_load_metrics_longbench_length_zero(tmp_path: Path):
    path = tmp_path / "lb.metrics.json"
    path.write_text(json.dumps([record("longbench", "qasper", "x", mean_tokens=None)]))
    assert load_metrics([path])[0]["length"] == 0


# === heatmaps ===============================================================================

HEAT_SYSTEMS = REPORT_SYSTEMS[:3]
RULER_LENGTHS = [8192, 16384, 524288]
TEN_TASKS = [*NIAH_TASKS, "niah_multikey_1", "niah_multikey_2", "niah_multikey_3"]
TEN_TASKS += ["niah_multivalue", "niah_multiquery", "vt", "fwe"]


def ruler_records(good: float = 97.0, spread: float | None = None) -> list[dict]:
    """RL-14B: every task and length (qa_1 up to 256K only); Qwen 14B: two NIAH tasks at 8K;
    `spread`: RL-14B's with 95 % intervals of ±spread."""
    # per-length means over the ten tasks: good - 0.5 at 8K and 16K, good - 1.5 at 512K
    out = [
        niah_record("rl-14b", task, n, good - i % 2 - (n == 524288), spread)
        for i, task in enumerate(TEN_TASKS)
        for n in RULER_LENGTHS
    ]
    out += [niah_record("rl-14b", "qa_1", n, 80.0) for n in RULER_LENGTHS[:2]]
    out += [niah_record("q14", task, 8192, 40.0) for task in NIAH_TASKS[:2]]
    return out


def test_heatmap_cells_missing_and_partial():
    specs, found = figure_ruler_records(ruler_records(), HEAT_SYSTEMS)
    panel = heatmap(found, specs, tuple(TEN_TASKS), "avg")
    assert panel.rows == ["RL-14B", "Qwen 14B"] and panel.lengths == RULER_LENGTHS
    assert panel.values[0] == [pytest.approx(96.5), pytest.approx(96.5), pytest.approx(95.5)]
    assert panel.partial[0] == [False] * 3
    assert panel.values[1] == [40.0, None, None] and panel.partial[1] == [True, False, False]
    qa = heatmap(found, specs, ("qa_1",), "qa", ["rl-14b"], RULER_LENGTHS)
    assert qa.values == [[80.0, 80.0, None]]  # not run at 512K: blank, not 0


def test_plot_niah_heatmaps_files_and_determinism(tmp_path: Path, paper: dict):
    args = (ruler_records(), HEAT_SYSTEMS)
    checks = check_claims(ruler_records(), HEAT_SYSTEMS, paper["niah"]["claims"])
    kwargs = {"checks": checks, "length_labels": {8192: "8K"}}
    first = plot_niah_heatmaps(*args, tmp_path / "a" / "figure5", "NIAH", **kwargs)
    second = plot_niah_heatmaps(*args, tmp_path / "b" / "figure5", "NIAH", **kwargs)
    assert [p.name for p in first] == ["figure5.png", "figure5.pdf"]
    assert first[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert first[1].read_bytes()[:5] == b"%PDF-"
    assert all(p.stat().st_size > 1000 for p in first)
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]


def test_plot_ood_heatmaps_files(tmp_path: Path, paper: dict):
    png, pdf = plot_ood_heatmaps(
        ruler_records(),
        HEAT_SYSTEMS,
        tmp_path / "ood",
        "RULER OOD",
        average_tasks=paper["ood"]["average_tasks"],
        checks=check_claims(ruler_records(), HEAT_SYSTEMS, paper["ood"]["claims"]),
    )
    assert png.stat().st_size > 1000 and pdf.read_bytes()[:5] == b"%PDF-"


def test_plot_heatmaps_without_ruler_metrics_is_an_error(tmp_path: Path):
    with pytest.raises(ValueError, match="no RULER metrics"):
        plot_niah_heatmaps([metric("rl-14b", 50, 80.0)], HEAT_SYSTEMS, tmp_path / "x", "t")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(("good", "outcome", "value"), [(97.0, HOLDS, 95.5), (96.0, FAILS, 94.5)])
def test_check_ood_claim(paper: dict, good: float, outcome: str, value: float):
    checks = check_claims(
        ruler_records(good, spread=0.5),
        HEAT_SYSTEMS,
        paper["ood"]["claims"],
        average_tasks=paper["ood"]["average_tasks"],
    )
    by_id = {(c.claim_id, c.system): c for c in checks}
    check = by_id[check_id := ("ood_avg_over_95_14b", "RL-14B")]
    assert (check.outcome, check.value) == (outcome, pytest.approx(value))  # min of tasks' means
    assert by_id[("ood_squad_stable", None)].outcome == NOT_CHECKABLE  # no number
    lines = claim_lines(checks)
    assert any("over 95% accuracy" in line for line in lines)
    assert any(line.strip().startswith("ours, RL-14B: min over 8K–512K") for line in lines)
    # judged length by length, the interval the lowest length's: 512K, 1 point below the others
    assert "(the interval: at 512K, the lowest of 3)" in check.detail
    unsampled = check_claims(
        ruler_records(good),
        HEAT_SYSTEMS,
        paper["ood"]["claims"],
        average_tasks=paper["ood"]["average_tasks"],
    )
    [alone] = [c for c in unsampled if (c.claim_id, c.system) == check_id]
    assert alone.outcome == NOT_CHECKABLE and alone.value == pytest.approx(value)  # no interval


def test_check_niah_claims_need_every_length(paper: dict):
    records = [r for r in ruler_records() if r["length"] != 524288]
    checks = check_claims(records, HEAT_SYSTEMS, paper["niah"]["claims"])
    check = next(c for c in checks if c.claim_id == "niah_512k_over_95")
    assert check.outcome == NOT_CHECKABLE and "not all of 512K run" in check.detail
    drop = next(
        c
        for c in check_claims(ruler_records(spread=0.5), HEAT_SYSTEMS, paper["niah"]["claims"])
        if c.claim_id == "niah_loss_under_5"
    )
    assert drop.outcome == HOLDS and drop.value == pytest.approx(1.0)  # 8K minus 512K


@pytest.mark.parametrize("name", ["figure1", "figure5", "figure_ood"])
def test_plot_paper_figure(paper: dict, tmp_path: Path, name: str):
    records = [*ruler_records(), metric("rl-14b", 50, 81.25)]
    png, pdf = plot_paper_figure(
        name, records, HEAT_SYSTEMS, paper, tmp_path / name, "t", ruler_length_labels={8192: "8K"}
    )
    assert (png.name, pdf.name) == (f"{name}.png", f"{name}.pdf")
    assert png.stat().st_size > 1000 and pdf.stat().st_size > 1000


def test_plot_paper_figure_unknown_name(paper: dict, tmp_path: Path):
    with pytest.raises(ValueError, match="figure99"):
        plot_paper_figure("figure99", [], HEAT_SYSTEMS, paper, tmp_path / "x", "t")


# --- the RL ablation (Figures 6 and 7) ------------------------------------------------------------

GROUPS = {"14B": {"backbone": "q14", "workflow": "norl", "rl": "rl-14b"}}


def with_spread(record: dict, spread: float = 2.0) -> dict:
    """The record with a 95 % interval of ±spread on its accuracy (a claim is judged on it)."""
    accuracy = record["accuracy"]
    return {**record, "ci95": {"accuracy": [accuracy - spread, accuracy + spread]}}


def ablation_records() -> list[dict]:
    hqa = {"q14": [60.0, 20.0], "norl": [70.0, 30.0], "rl-14b": [82.0, 79.0]}
    qa = {"q14": [50.0, 40.0], "norl": [45.0, 41.0], "rl-14b": [70.0, 60.0]}
    return [
        *(
            with_spread(metric(sid, n, v))
            for sid, values in hqa.items()
            for n, v in zip((50, 800), values, strict=True)
        ),
        *(
            with_spread(r)
            for sid, v in qa.items()
            for r in qa_records(sid, dict(zip(QA_TASKS[:2], v, strict=True)))
        ),
    ]


def ablation_panels(name: str, paper: dict) -> dict[str, pd.DataFrame]:
    table = build_paper_table(name, ablation_records(), REPORT_SYSTEMS, paper, {})
    return ablation_rows(table, GROUPS)


def test_ablation_claims_are_checked_per_group(paper: dict):
    claims = {c["id"]: c for c in paper["rl_ablation"]["claims"]}
    hqa = check_ablation_claims(ablation_panels("table1", paper), paper["rl_ablation"]["claims"])
    by_id = {c.claim_id: c for c in hqa}
    # RULER-HQA: the workflow is 10 points above the backbone, RL 30.5 above the workflow
    assert by_id["workflow_beats_backbone_hqa"].value == pytest.approx(10.0)
    assert by_id["workflow_beats_backbone_hqa"].outcome == HOLDS
    assert by_id["rl_improves_hqa"].value == pytest.approx(30.5)
    declines = by_id["workflow_declines_hqa"]  # no number in the paper: reported only
    assert declines.value == pytest.approx(40.0) and declines.outcome == NOT_CHECKABLE
    assert "gives no number" in declines.detail and declines.system == "14B"
    qa = check_ablation_claims(
        ablation_panels("table3", paper),
        [claims["workflow_marginal_longbench"], claims["rl_improves_longbench"]],
    )
    assert [c.value for c in qa] == pytest.approx([-2.0, 22.0])  # AVG left out
    assert [c.outcome for c in qa] == [NOT_CHECKABLE, HOLDS]


def test_ablation_claim_fails_when_rl_does_not_help(paper: dict):
    records = [r for r in ablation_records() if r["system"] != "rl-14b"]
    records += [with_spread(metric("rl-14b", n, 10.0)) for n in (50, 800)]
    table = build_paper_table("table1", records, REPORT_SYSTEMS, paper, {})
    claim = next(c for c in paper["rl_ablation"]["claims"] if c["id"] == "rl_improves_hqa")
    (check,) = check_ablation_claims(ablation_rows(table, GROUPS), [claim])
    assert check.outcome == FAILS and check.value == pytest.approx(-40.0)


def test_ablation_rows_name_a_system_the_table_lacks(paper: dict):
    table = build_paper_table("table1", ablation_records(), REPORT_SYSTEMS, paper, {})
    with pytest.raises(ValueError, match=r"system\(s\) rag14\.bm25-k4-doc not in the table"):
        ablation_rows(table, {"14B": {**GROUPS["14B"], "backbone": "rag14.bm25-k4-doc"}})


@pytest.mark.parametrize("name", ["figure6", "figure7"])
def test_plot_rl_ablation_figures(paper: dict, tmp_path: Path, name: str):
    png, pdf = plot_paper_figure(
        name, ablation_records(), REPORT_SYSTEMS, paper, tmp_path / name, "t", rl_ablation=GROUPS
    )
    assert png.stat().st_size > 1000 and pdf.stat().st_size > 1000
    again = plot_paper_figure(
        name, ablation_records(), REPORT_SYSTEMS, paper, tmp_path / "b", "t", rl_ablation=GROUPS
    )
    assert again[0].read_bytes() == png.read_bytes()  # deterministic


# --- the memory ablation (Tables 8, 9; Figures 8, 9) -------------------------------------------

AGENT = {"query_tokens": 1024, "chunk_tokens": 5000, "memory_tokens": 1024, "final_tokens": 1024}
MEMORY_SYSTEMS = [
    {"id": "rl", "display": "RL-14B", "paper_row": "RL-MEMAGENT-14B", "kind": "memagent"},
    *(
        {
            "id": f"rl.m{m}-c{c}",
            "display": f"RL-14B m{m}-c{c}",
            "paper_row": f"14B-m{m}-c{c}",
            "kind": "memagent",
            "agent": {"memory_tokens": m, "chunk_tokens": c},
            "ablation_of": "rl",
        }
        for m, c in ((4096, 1928), (256, 5000))
    ),
]


def memory_records() -> list[dict]:
    niah = [
        niah_record(sid, task, n, v)
        for sid, v in (("rl", 100.0), ("rl.m4096-c1928", 90.0), ("rl.m256-c5000", 60.0))
        for task in NIAH_TASKS
        for n in (8192, 524288)
    ]
    qa = [
        r
        for sid, v in (("rl", 80.0), ("rl.m4096-c1928", 70.0), ("rl.m256-c5000", 50.0))
        for r in qa_records(sid, dict.fromkeys(QA_TASKS, v))
    ]
    return niah + qa


def test_table8_puts_each_setting_beside_its_printed_row(paper: dict):
    table = build_paper_table("table8", memory_records(), MEMORY_SYSTEMS, paper, {8192: "8K"})
    wide = table.loc["RL-14B m4096-c1928", 8192]
    assert wide.ours == pytest.approx(90.0) and wide.paper == pytest.approx(100.00)
    default = table.loc["RL-14B", 524288]  # the system itself: Table 8's 14B-m1024-c5000
    assert default.paper == pytest.approx(98.18) and default.ours == pytest.approx(100.0)
    assert table.loc["RL-14B m256-c5000", 8192].paper is None  # Figure 8 only: not printed
    assert any("no row '14B-m256-c5000' in Table 8" in note for note in table.attrs["notes"])


def test_table9_longbench_qa_by_setting(paper: dict):
    table = build_paper_table("table9", memory_records(), MEMORY_SYSTEMS, paper)
    cell = table.loc["RL-14B m4096-c1928", "2wikimqa"]
    assert cell.ours == pytest.approx(70.0) and cell.paper == pytest.approx(74.5)
    assert table.loc["RL-14B", "avg"].paper == pytest.approx(51.0)  # 14B-m1024-c5000


def test_memory_panels_order_each_systems_rows_by_memory(paper: dict):
    table = build_paper_table("table9", memory_records(), MEMORY_SYSTEMS, paper)
    (panel,) = memory_panels(table, MEMORY_SYSTEMS, AGENT).values()
    assert list(panel.index) == ["memory 256", "memory 1024", "memory 4096"]
    assert panel.loc["memory 256", "qasper"].ours == pytest.approx(50.0)


@pytest.mark.parametrize("name", ["figure8", "figure9"])
def test_plot_memory_figures(paper: dict, tmp_path: Path, name: str):
    png, pdf = plot_paper_figure(
        name, memory_records(), MEMORY_SYSTEMS, paper, tmp_path / name, "t", agent=AGENT
    )
    assert png.stat().st_size > 1000 and pdf.read_bytes()[:5] == b"%PDF-"
    with pytest.raises(ValueError, match="need the agent's budgets"):
        plot_paper_figure(name, memory_records(), MEMORY_SYSTEMS, paper, tmp_path / name, "t")


def test_bars_show_a_zero_and_put_the_papers_mark_in_its_bars_colour(tmp_path: Path):
    from matplotlib.colors import to_rgba

    from memrepro.report import memagent_figures
    from memrepro.report.cells import Cell

    panel = pd.DataFrame(
        {"hotpotqa": [Cell(0.0, 70.0, -70.0), Cell(None, 60.0, None)]},
        index=pd.Index(["m256", "m4096"]),
        dtype=object,
    )
    figures = []
    original = memagent_figures.save
    memagent_figures.save = lambda fig, prefix: figures.append(fig) or original(fig, prefix)
    try:
        memagent_figures.plot_bar_panels({"14B": panel}, tmp_path / "bars", "t")
    finally:
        memagent_figures.save = original
    [ax] = [ax for ax in figures[0].axes if ax.patches]
    assert [text.get_text() for text in ax.texts] == ["0", "—"]  # a zero bar still says so
    marks = [line for line in ax.get_lines() if line.get_marker() == "D"]
    bars = {round(patch.get_x() + patch.get_width() / 2, 6): patch for patch in ax.patches}
    for mark in marks:  # each paper value sits on its own bar, filled in that bar's colour
        [x] = mark.get_xdata()
        bar = bars[round(x, 6)]
        assert to_rgba(mark.get_markerfacecolor()) == to_rgba(bar.get_facecolor())
    assert len(marks) == 2


# --- Table 4: the probe -----------------------------------------------------------------------

PROBE = {"systems": {"rl-14b": "14B"}, "placements": [[0, 20], [40, 60]]}


def scored(record: dict, right: int, dropped: tuple[int, ...] = ()) -> dict:
    """`record` with its items (as load_metrics_with_items gives them): the first `right`
    questions right, `dropped` left out as the official evaluator does, the others wrong."""
    n = record["n_items"]
    items = {i: None if i in dropped else float(i < right) for i in range(n)}
    return {**record, "items": items, "accuracy": 100 * right / n}


def probe_records() -> list[dict]:
    probe = {("p0_20", 50): 84, ("p0_20", 100): 70, ("p40_60", 50): 78}
    return [
        scored(metric("rl-14b", 50, 80.0, n_items=100), 80),
        scored(metric("rl-14b", 100, 75.0, n_items=100, n_failed=2), 75, dropped=(98, 99)),
        metric("rl-14b", 200, 70.0),  # no probe at 28K: not a column
        metric("norl", 50, 10.0),  # not a probe system
        *(
            scored(record("ruler_hqa_probe", task, "rl-14b", n, n_items=100), right)
            for (task, n), right in probe.items()
        ),
    ]


def test_table4_prints_differences_from_random_beside_the_papers(paper: dict):
    table = build_paper_table("table4", probe_records(), REPORT_SYSTEMS, paper, LABELS, probe=PROBE)
    assert list(table.columns) == [50, 100, "avg"]
    random, early, middle = (table.loc[f"RL-14B: {k}"] for k in ("random", "0% 20%", "40% 60%"))
    assert random[50].ours == 80.0 and random[50].paper == 80.47
    assert random[50].delta == pytest.approx(-0.47)
    assert early[50].ours == pytest.approx(4.0) and early[50].paper == 3.91  # 84 - 80
    # over the 98 questions both answered: 70 right in the probe, 75 at random
    assert early[100].ours == pytest.approx(-500 / 98) and early[100].paper == -3.91
    assert early[100].n_scored == 98
    assert early["avg"].ours == pytest.approx((4.0 - 500 / 98) / 2)
    assert early["avg"].paper is None  # the paper's "AVG" is its 3,200-document column
    assert (
        paper["probe"]["rows"]["14B"]["random"][3200] == paper["ruler_hqa"]["RL-MEMAGENT-14B"][3200]
    )
    assert middle[100].ours is None and middle["avg"].mark == PARTIAL_MARK  # 56K not run
    assert any("2 of 100 outputs empty" in note for note in table.attrs["failure_notes"])
    md = to_markdown(table, "Table 4")
    assert "| RL-14B: 0% 20% | 4.0 [-0–9] (paper 3.9, +0.1 ○)" in md  # paired, from the items
    assert "3,200-document (448K)" in md
    with pytest.raises(ValueError, match="table4 needs the probe"):
        build_paper_table("table4", probe_records(), REPORT_SYSTEMS, paper, LABELS)


def with_interval(record: dict, low: float, high: float) -> dict:
    """A record whose accuracy has a 95 % interval and is a proportion (every item 0 or 1)."""
    return {**record, "ci95": {"accuracy": [low, high]}, "right_wrong": ["accuracy"]}


def test_table4_cells_have_paired_intervals_and_verdicts_and_the_claim_is_checked(paper: dict):
    from memrepro.scoring.intervals import paired_difference_interval

    records = [
        scored(with_interval(metric("rl-14b", 50, 0.0, n_items=200), 72.0, 86.0), 160),
        scored(with_interval(metric("rl-14b", 100, 0.0, n_items=100), 65.6, 82.6), 75),
        scored(with_interval(record("ruler_hqa_probe", "p0_20", "rl-14b", 50), 77.5, 88.8), 168),
        scored(
            with_interval(
                record("ruler_hqa_probe", "p0_20", "rl-14b", 100, n_items=100), 50.2, 69.0
            ),
            60,
        ),
    ]
    table = build_paper_table("table4", records, REPORT_SYSTEMS, paper, LABELS, probe=PROBE)
    early = table.loc["RL-14B: 0% 20%", 50]
    # the same 200 questions: 160 right in both, 8 more in the probe
    pairs = [(float(i < 168), float(i < 160)) for i in range(200)]
    assert early.ours == pytest.approx(4.0) and early.ci == paired_difference_interval(pairs)
    independent = 2 * math.hypot(*((hi - lo) / 2 for lo, hi in ((77.5, 88.8), (72, 86))))
    assert early.ci[1] - early.ci[0] < independent / 2  # pairing removes the shared questions
    assert early.paper_n == 128 and early.comparison is not None  # judged beside 3.91
    assert table.loc["RL-14B: random", 50].comparison is not None
    [claim] = table.attrs["claims"]
    assert claim.claim_id == "no_catastrophic_degradation" and claim.system == "RL-14B"
    assert claim.value == pytest.approx(-15.0)  # 60 - 75 at 100 docs: below -10
    assert claim.outcome == "undecided" and "-3.9" in claim.detail  # its interval spans -10
    assert claim.detail.startswith("worst_difference -15.0")
    none = build_paper_table("table4", records[:2], REPORT_SYSTEMS, paper, LABELS, probe=PROBE)
    assert [c.outcome for c in none.attrs["claims"]] == ["not checkable"]
    typo = copy.deepcopy(paper)
    typo["probe"]["claims"][0]["statistic"] = "worst"
    with pytest.raises(ValueError, match="unknown statistic 'worst' \\(worst_difference\\)"):
        build_paper_table("table4", records, REPORT_SYSTEMS, typo, LABELS, probe=PROBE)


# --- Mem-α (seed 004) ---------------------------------------------------------------------------

MEMALPHA_PAPER = yaml.safe_load(
    (Path(__file__).resolve().parents[1] / "config/paper/memalpha.yaml").read_text()
)
MEMALPHA_SYSTEMS = [
    {"id": "ma", "display": "Mem-α", "paper_row": "Mem-α", "kind": "memalpha"},
    {
        "id": "q4",
        "display": "Qwen3-4B",
        "paper_row": "Qwen3-4B",
        "kind": "memalpha",
        "benchmarks": ["memalpha"],
    },
    {"id": "lc", "display": "LC", "paper_row": "Long-Context", "kind": "longcontext"},
    {
        "id": "mem14",
        "display": "RL-MemoryAgent-14B",
        "paper_row": "RL-MEMAGENT-14B",
        "kind": "memagent",
    },
    {
        "id": "mem7",
        "display": "RL-MemoryAgent-7B",
        "paper_row": "RL-MEMAGENT-7B",
        "kind": "memagent",
    },
]


OFFICIAL_RECIPE = {"recipe": "official", "steps": 85, "kl_coef": 0.001, "checkpoint": "last"}
ABLATION_SYSTEMS = [
    *MEMALPHA_SYSTEMS,
    {  # the main run: Mem-α in Tables 1-3, its (β, γ) row in Tables 4 and 9
        "id": "ours",
        "display": "Mem-α (trained here)",
        "paper_row": "Mem-α",
        "kind": "memalpha",
        "reward_weights": [0.05, 0.1],
        "training": OFFICIAL_RECIPE,
    },
    {
        "id": "b05g0",
        "display": "β=0.05 γ=0",
        "paper_row": None,
        "kind": "memalpha",
        "reward_weights": [0.05, 0.0],
        "training": OFFICIAL_RECIPE,
    },
    {
        "id": "b0g01",
        "display": "β=0 γ=0.1",
        "paper_row": None,
        "kind": "memalpha",
        "reward_weights": [0, 0.1],
        "training": OFFICIAL_RECIPE,
    },
]


def memalpha_records(benchmark: str, systems: list[str], accuracy: float = 50.0) -> list[dict]:
    columns = MEMALPHA_PAPER["table1" if benchmark == "memalpha" else "table2"]["columns"]
    return [
        record(benchmark, source, system, accuracy=accuracy, mean_memory_tokens=2000.0 + i)
        for system in systems
        for i, source in enumerate(columns)
    ]


def test_memalpha_paper_rows_match_their_columns_and_recompute_averages():
    from memrepro.report.memalpha_tables import memalpha_paper_rows

    off = set()
    for key in ("table1", "table2", "table3", "table4", "table9"):
        rows = memalpha_paper_rows(MEMALPHA_PAPER[key])
        for name, cells in rows.items():
            perf = [cells[s]["perf"] for s in MEMALPHA_PAPER[key]["columns"]]
            if abs(sum(perf) / len(perf) - cells["avg"]["perf"]) > 0.5:
                off.add((key, name))
    # the printed averages that are not their columns' mean (checked by hand; footnoted)
    assert off == {
        ("table1", "MemAgent"),  # 0.236 printed, 0.226 mean
        ("table1", "Mem-α"),  # 0.642 printed, 0.619 mean
        ("table2", "Long-Context"),  # 0.461 printed, 0.480 mean
        ("table2", "RAG-Top2"),  # 0.502 printed, 0.532 mean
        ("table3", "Mem-α"),
        ("table4", "β=0, γ=0.1"),  # 0.630 printed, 0.620 mean
        ("table4", "β=0.05, γ=0.1"),  # Table 1's Mem-α row
        ("table4", "β=0.2, γ=0.1"),  # 0.525 printed, 0.515 mean
        ("table9", "β=0.2, γ=0.1"),  # 0.351 printed, 0.382 mean
    }
    with pytest.raises(ValueError, match="3 perf values for 7 columns"):
        memalpha_paper_rows(
            {
                "columns": MEMALPHA_PAPER["table1"]["columns"],
                "rows": {"x": {"perf": [1, 2, 3], "mem": [1] * 7, "avg": {}}},
            }
        )


def test_memalpha_table1_cells_averages_categories_and_the_printed_average_note():
    from memrepro.report.memalpha_tables import build_memalpha_table

    records = memalpha_records("memalpha", ["ma", "q4", "lc"], accuracy=60.0)
    table = build_memalpha_table(records, MEMALPHA_SYSTEMS, MEMALPHA_PAPER, "memalpha_table1")
    assert list(table.index) == [
        "Mem-α",
        "Qwen3-4B",
        "LC",
        "RL-MemoryAgent-14B",
        "RL-MemoryAgent-7B",
    ]
    squad = table.loc["Mem-α", "squad.perf"]
    assert squad.ours == 60.0 and squad.paper == pytest.approx(78.6)
    assert squad.delta == pytest.approx(-18.6)
    mem = table.loc["Mem-α", "squad.mem"]
    assert mem.ours == pytest.approx(2.0) and mem.paper == pytest.approx(10.1)  # K tokens
    avg = table.loc["Mem-α", "avg"]
    assert avg.ours == 60.0 and avg.paper == pytest.approx(61.9, abs=0.01)  # recomputed
    ar = table.loc["LC", "AR"]  # the paper's mean of SQuAD, HotpotQA, PerLTQA
    assert ar.paper == pytest.approx((74.2 + 85.2 + 60.5) / 3)
    assert table.loc["Qwen3-4B", "squad.perf"].paper is None  # a Table 3 row only
    assert table.loc["RL-MemoryAgent-14B", "squad.perf"].ours is None  # not run
    assert table.loc["RL-MemoryAgent-14B", "squad.perf"].paper == pytest.approx(9.1)
    assert table.loc["RL-MemoryAgent-7B", "squad.perf"].paper is None
    notes = " ".join(table.attrs["notes"])
    assert "printed as 64.20, but the mean of its 7 columns is 61.90" in notes
    assert "RL-MemoryAgent-14B is the paper's 'MemAgent' row" in notes
    labels = table.attrs["column_labels"]
    assert labels["squad.mem"] == "SQuAD Mem." and "‡" not in "".join(labels.values())
    # Markdown: Perf. and Mem. as two grids of the same rows, not one 19-column row
    from memrepro.report.render import to_markdown

    text = to_markdown(table, "t1")
    perf, mem = text.split("*Perf. (%)*")[1].split("*Mem. (K tokens)*")
    assert "| Avg. |" in perf and "Mem." not in perf.split("\n\n")[1]
    assert "| SQuAD Mem. |" in mem and "| Avg. Mem. |" in mem
    assert perf.count("| Mem-α |") == mem.count("| Mem-α |") == 1


def test_memalpha_table2_flags_the_contaminated_columns_and_table3_keeps_memalpha_systems():
    from memrepro.report.memalpha_tables import build_memalpha_table
    from memrepro.report.render import to_markdown

    records = memalpha_records("mab", ["ma", "lc"])
    table = build_memalpha_table(records, MEMALPHA_SYSTEMS, MEMALPHA_PAPER, "memalpha_table2")
    labels = table.attrs["column_labels"]
    assert labels["icl_trec_coarse_6600shot_balance.perf"] == "TREC-C‡"
    assert labels["icl_nlu_8296shot_balance.perf"] == "NLU‡"
    assert "Qwen3-4B" not in table.index  # runs the validation set only
    assert "reuse these test questions" in to_markdown(table, "T2")
    three = build_memalpha_table(
        memalpha_records("memalpha", ["ma", "q4"]),
        MEMALPHA_SYSTEMS,
        MEMALPHA_PAPER,
        "memalpha_table3",
    )
    assert list(three.index) == ["Mem-α", "Qwen3-4B"]
    assert three.loc["Qwen3-4B", "booksum.perf"].paper == pytest.approx(13.0)


def test_ablation_tables_pick_rows_by_reward_weights_and_tables_1_to_3_leave_them_out():
    from memrepro.report.memalpha_tables import build_memalpha_table

    records = memalpha_records("memalpha", ["ma", "ours", "b05g0", "b0g01"], accuracy=55.0)
    four = build_memalpha_table(records, ABLATION_SYSTEMS, MEMALPHA_PAPER, "memalpha_table4")
    assert list(four.index) == ["Mem-α (trained here)", "β=0.05 γ=0", "β=0 γ=0.1"]
    cell = four.loc["β=0.05 γ=0", "squad.perf"]
    assert cell.ours == 55.0 and cell.paper == pytest.approx(70.1)
    assert four.loc["β=0 γ=0.1", "booksum.mem"].paper == pytest.approx(4.5)
    assert four.loc["Mem-α (trained here)", "squad.perf"].paper == pytest.approx(78.6)
    one = build_memalpha_table(records, ABLATION_SYSTEMS, MEMALPHA_PAPER, "memalpha_table1")
    assert "Mem-α (trained here)" in one.index and "β=0.05 γ=0" not in one.index
    nine = build_memalpha_table(
        memalpha_records("mab", ["b0g01"]), ABLATION_SYSTEMS, MEMALPHA_PAPER, "memalpha_table9"
    )
    assert nine.loc["β=0 γ=0.1", "ruler_qa1_197K.perf"].paper == pytest.approx(77.0)
    for table in (four, nine):  # which recipe trained our rows, beside the paper's
        assert (
            "Our Mem-α runs were trained with the recipe 'official': 85 steps, a KL loss of "
            "0.001, the last checkpoint, a token-mean loss." in table.attrs["notes"]
        )
        assert any(
            note.startswith("The paper's trained rows: 205 steps") for note in table.attrs["notes"]
        )


def test_the_recipe_note_names_every_recipe_of_the_tables_runs():
    from memrepro.report.memalpha_tables import training_recipe_notes

    paper = {
        "recipe": "paper",
        "steps": 205,
        "kl_coef": 0.0,
        "checkpoint": "best",
        "loss_agg": "seq-mean-token-mean",
    }
    notes = training_recipe_notes(
        {"a": {"training": paper}, "b": {"training": OFFICIAL_RECIPE}, "c": {"kind": "rag"}}
    )
    assert notes[0] == (
        "Our Mem-α runs were trained with the recipes 'official': 85 steps, a KL loss of 0.001, "
        "the last checkpoint, a token-mean loss; 'paper': 205 steps, no KL term, the best "
        "checkpoint by validation, a per-action mean loss (Eq. 2)."
    )
    assert training_recipe_notes({"c": {"kind": "rag"}}) == []


def test_memalpha_table_rejects_a_memalpha_paper_row_typo():
    from memrepro.report.memalpha_tables import build_memalpha_table

    systems = [{"id": "ma", "display": "M", "paper_row": "Mem-alpha", "kind": "memalpha"}]
    with pytest.raises(ValueError, match="paper_row 'Mem-alpha' is in no Mem-α table"):
        build_memalpha_table([], systems, MEMALPHA_PAPER, "memalpha_table1")


def test_memalpha_metrics_records_have_no_length_and_may_lack_a_memory_size(tmp_path):
    path = tmp_path / "m.json"
    path.write_text(json.dumps([record("mab", "ruler_qa1_197K", "ma", mean_memory_tokens=None)]))
    assert load_metrics([path])[0]["length"] == 0
    path.write_text(json.dumps([record("mab", "ruler_qa1_197K", "ma", mean_memory_tokens=-1)]))
    with pytest.raises(ValueError, match="mean_memory_tokens must be >= 0"):
        load_metrics([path])


# --- Mem-α dataset statistics (Tables 6-8) ---------------------------------------------------


def stats(split, task, instances, chunks, tokens, questions):
    return {
        "split": split,
        "task": task,
        "instances": instances,
        "chunks_per_instance": chunks,
        "tokens_per_chunk": tokens,
        "questions_per_instance": questions,
    }


def test_memalpha_table7_puts_each_split_beside_the_paper_with_printed_totals():
    from memrepro.report.render import to_markdown
    from memrepro.report.tables import build_paper_table

    records = [
        stats("train", "squad", 100, 9.9, 1090.1, 94.8),
        stats("memalpha", "squad", 30, 10.0, 1057.0, 96.8),
        stats("memalpha", "lme_train", 5, 13.4, 1576.0, 4.0),  # printed '-' in Table 7
        stats("mab", "squad", 1, 1.0, 1.0, 1.0),  # another split: ignored
    ]
    table = build_paper_table("memalpha_table7", records, [], MEMALPHA_PAPER)
    squad = table.loc["SQuAD"]
    assert squad["train.tokens_per_chunk"].ours == pytest.approx(1090.1)
    assert squad["train.tokens_per_chunk"].delta == pytest.approx(6.0)
    assert squad["memalpha.questions_per_instance"].delta == pytest.approx(0.0)
    lme = table.loc["LME-Train"]
    assert lme["memalpha.instances"].ours == 5.0 and lme["memalpha.instances"].paper is None
    assert table.loc["HotpotQA"]["train.instances"].ours is None  # not measured here
    total = table.loc["Total"]
    assert (total["train.instances"].ours, total["train.instances"].paper) == (100.0, 562.0)
    assert (total["memalpha.instances"].ours, total["memalpha.instances"].paper) == (35.0, 463.0)
    assert total["train.tokens_per_chunk"].ours is None
    text = to_markdown(table, "t7")
    assert "| Source | Training Ins. |" in text and "sum to 567" in text
    assert "QA model's tokenizer" in text and "scores in %" not in text
    # counts are whole numbers, means keep their decimal
    assert "| SQuAD | 100 (paper 100, +0) | 9.9 (paper 9.9, +0.0) |" in text
    assert "| Total | 100 (paper 562, -462) |" in text


def test_memalpha_table6_puts_the_full_training_set_beside_validation():
    from memrepro.report.tables import build_paper_table

    validation_only = [stats("memalpha", "squad", 30, 10.0, 1057.0, 96.8)]
    table = build_paper_table("memalpha_table6", validation_only, [], MEMALPHA_PAPER)
    assert list(table.columns)[:2] == ["full.instances", "full.chunks_per_instance"]
    squad, total = table.loc["SQuAD"], table.loc["Total"]
    assert squad["full.tokens_per_chunk"].paper == 1078.0 and squad["full.instances"].ours is None
    assert (total["full.instances"].paper, total["memalpha.instances"].paper) == (4139.0, 463.0)
    assert table.attrs["column_labels"]["full.instances"] == "Training Ins."
    assert (
        "Training columns: the paper's numbers alone (this run has no memalpha.full set)."
        in (table.attrs["notes"])
    )
    measured = [*validation_only, stats("full", "squad", 264, 10.0, 1080.0, 95.5)]
    table = build_paper_table("memalpha_table6", measured, [], MEMALPHA_PAPER)
    assert table.loc["SQuAD"]["full.tokens_per_chunk"].delta == pytest.approx(2.0)
    assert table.attrs["notes"][-2:] == [
        "Training columns: ours counted from the config's memalpha.full set, beside the paper's.",
        "Validation columns: ours counted from the config's memalpha.memalpha set, beside the "
        "paper's.",
    ]


def test_the_full_training_split_is_measured_only_where_the_config_names_it():
    from memrepro import config as cfg

    config = cfg.load_config([Path(__file__).resolve().parents[1] / "config/config.yaml"])
    assert cfg.stats_splits(config, "memalpha_table6") == ["full", "memalpha"]  # the paper's
    assert cfg.memalpha_splits(config)[-1] == "full"
    assert config["sources"]["memalpha_full"]["url"].endswith(
        "datasets/YuWangX/Memalpha-full/resolve/main/train/train.parquet"
    )
    del config["memalpha"]["full"]
    assert cfg.stats_splits(config, "memalpha_table6") == ["memalpha"]
    assert "full" not in cfg.memalpha_splits(config)


def test_the_full_training_sets_fixture_is_in_the_released_schema(tmp_path):
    """Table 6's training columns count the full set as any split; a file without a field the
    statistics read stops, naming the file and the field."""
    import pyarrow.parquet as pq

    from memrepro.data.memalpha import instances_by_source
    from memrepro.data.sources import fixture_path

    full = fixture_path("memalpha/full.parquet")
    sources = {source: len(rows) for source, rows in instances_by_source(full).items()}
    train = instances_by_source(fixture_path("memalpha/train.parquet"))
    assert set(sources) == set(train) and sources["squad"] == len(train["squad"]) + 1
    assert pq.read_schema(full) == pq.read_schema(fixture_path("memalpha/train.parquet"))
    narrow = tmp_path / "train.parquet"
    pq.write_table(pq.read_table(full).drop_columns(["chunks"]), narrow)
    with pytest.raises(ValueError, match=rf"{narrow}: missing column\(s\) \['chunks'\]"):
        instances_by_source(narrow)


def test_memalpha_table8_reports_a_measured_source_the_paper_lacks():
    from memrepro.report.render import tidy
    from memrepro.report.tables import build_paper_table

    records = [
        stats("mab", "ruler_qa1_197K", 1, 103.0, 2100.0, 100.0),
        stats("mab", "new", 2, 1, 1, 1),
    ]
    table = build_paper_table("memalpha_table8", records, [], MEMALPHA_PAPER)
    assert list(table.index)[-2:] == ["new", "Total"]
    assert table.loc["new"]["mab.instances"].paper is None
    assert table.loc["Total"]["mab.instances"].ours == 3.0
    assert table.loc["Total"]["mab.instances"].paper == 112.0
    rows = tidy(table)
    assert set(rows["label"]) == {"Ins.", "Ch/Ins", "Tok/Ch", "Q/Ins"}


def test_load_stats_names_the_file_and_the_missing_field(tmp_path):
    from memrepro.report.memalpha_tables import load_stats

    path = tmp_path / "s.json"
    path.write_text('[{"split": "mab", "task": "x", "instances": 1}]')
    with pytest.raises(ValueError, match=r"s\.json: record 0 lacks chunks_per_instance"):
        load_stats([path])
    path.write_text("{}")
    with pytest.raises(ValueError, match="list of dataset-stats records"):
        load_stats([path])


# --- Mem-α Table 5: final memories side by side ----------------------------------------------


def memories(system, source, memory, index=0, failed=False):
    return {"system": system, "task": source, "index": index, "memory": memory, "failed": failed}


def test_memalpha_table5_shows_each_policys_memory_in_the_papers_order(tmp_path):
    from memrepro.report.render import TRACE_CHARS
    from memrepro.report.tables import build_paper_table, write_paper_table

    systems = [
        {"id": "ma", "display": "Mem-α (ours)", "paper_row": "Mem-α"},
        {"id": "q4", "display": "Qwen3-4B (ours)", "paper_row": "Qwen3-4B"},
        {"id": "lc", "display": "LC", "paper_row": "Long-Context"},  # not a column
    ]
    long_item = "x" * (TRACE_CHARS + 50)
    full = {
        "core": "User plans a condo move.",
        "semantic": [{"a1b2": "Thick rugs cut noise."}, {"c3d4": long_item}],
        "episodic": [{"e5f6": f"event {n}"} for n in range(10)],
    }
    records = [
        memories("ma", "perltqa", {"core": "", "semantic": [], "episodic": []}, index=3),
        memories("ma", "perltqa", full, index=9),
        memories("ma", "squad", full, index=0),
        memories("q4", "perltqa", full, index=5),
        memories("q4", "perltqa", {}, index=6, failed=True),
        memories("lc", "perltqa", full, index=3),
    ]
    paper = {**MEMALPHA_PAPER, "table5": {**MEMALPHA_PAPER["table5"], "instance": 1}}
    table = build_paper_table(TRACE_TABLE, records, systems, paper)
    assert list(table.columns) == ["Qwen3-4B (ours)", "Mem-α (ours)"]  # the paper's order
    ours = table["Mem-α (ours)"]  # perltqa's second instance by index
    assert ours["Core"] == "User plans a condo move."
    assert ours["Semantic"] == f"- Thick rugs cut noise.\n- {long_item}"
    assert table["Qwen3-4B (ours)"]["Core"] == "(memorisation failed)"
    paths = write_paper_table(TRACE_TABLE, table, tmp_path / "t5", "Table 5")
    rows = pd.read_csv(paths[0])
    assert len(rows) == 6 and long_item in rows["content"].iloc[3]  # the CSV keeps all
    md = paths[1].read_text()
    assert "event 7" in md and "event 8" not in md and "(+2 more)" in md
    assert long_item not in md and "- " + "x" * (TRACE_CHARS - 2) + "…" in md  # cut per line
    assert "The paper on Mem-α" in md and "perltqa #1" in md
    assert "This run looks for no example (memalpha.example); shown instead: perltqa #1" in md
    assert r"\newline" in paths[2].read_text()
    paper["table5"]["instance"] = 5
    with pytest.raises(ValueError, match="q4: no instance 5 of perltqa"):
        build_paper_table(TRACE_TABLE, records, systems, paper)


def test_memalpha_table5_shows_the_policies_on_the_example_they_memorised_alone(tmp_path):
    """With memalpha.example, every column is its policy's memory of the example's instance
    (memorised alone: benchmark memalpha_example, its one row); a policy without it drops out."""
    from memrepro.report.memalpha_tables import _memory_records
    from memrepro.report.tables import build_paper_table

    systems = [
        {"id": "ma", "display": "Mem-α (ours)", "paper_row": "Mem-α"},
        {"id": "q4", "display": "Qwen3-4B (ours)", "paper_row": "Qwen3-4B"},
        {"id": "gm", "display": "gpt-4.1-mini (ours)", "paper_row": "gpt-4.1-mini"},
    ]
    condo = {"core": "User looks for a downtown condo.", "semantic": [], "episodic": []}
    other = {"core": "Something else.", "semantic": [], "episodic": []}
    lines = {
        "memalpha_example/ma": memories("ma", "example", condo),  # its one task
        "memalpha_example/q4": memories("q4", "example", other),
        "memalpha/gm": memories("gm", "lme_train", other),  # not the example's instance
    }
    paths = []
    for where, line in lines.items():
        path = tmp_path / "eval" / where / "0.memories.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(line) + "\n")
        paths.append(path)
    found = tmp_path / "example.json"
    found.write_text(
        json.dumps(
            {
                "split": "full",
                "row": 41,
                "source": "lme_train",
                "phrases": ["condo", "noise"],
                "what": "a user asking for advice on condo living",
            }
        )
    )
    records = _memory_records([*paths, found])
    table = build_paper_table(TRACE_TABLE, records, systems, MEMALPHA_PAPER)
    assert list(table.columns) == ["Qwen3-4B (ours)", "Mem-α (ours)"]
    assert table["Mem-α (ours)"]["Core"] == "User looks for a downtown condo."
    assert table.attrs["instance"] == "full / lme_train row 41: the paper's example"
    assert table.attrs["notes"][0] == (
        "The paper's example: a user asking for advice on condo living, found by its text "
        "(condo, noise) in the full split, row 41 (lme_train), and memorised alone by each "
        "policy."
    )


def test_the_example_is_found_wherever_it_lives_or_its_search_is_named(tmp_path):
    """Found by its text among every source's instances, in split order: here outside the
    validation set (the fixture's full training set); written alone in the released schema, and
    read back as the example's one task."""
    import pyarrow.parquet as pq
    from test_evaluation import CharTokenizer

    from memrepro.benchmarks import EXAMPLE_TASK
    from memrepro.benchmarks.memalpha_example import instance_rows
    from memrepro.data.memalpha_example import ExampleNotFound, find_example, write_example
    from memrepro.data.sources import fixture_path

    splits = {
        split: fixture_path(f"memalpha/{name}.parquet")
        for split, name in (("train", "train"), ("memalpha", "validation"), ("full", "full"))
    }
    split, row, source = find_example(splits, ["Condo", "NOISE"])
    assert (split, source) == ("full", "lme_train")
    assert row == len(pq.read_table(splits["train"]))  # after the training set
    assert find_example(splits, ["condo", "noise"], ["lme_train", "squad"]) == (split, row, source)
    out = tmp_path / "example.parquet"
    write_example(splits[split], row, out)
    assert pq.read_schema(out) == pq.read_schema(splits["full"])
    [instance] = instance_rows({}, CharTokenizer(), None)(EXAMPLE_TASK, out)
    assert "condo" in " ".join(instance["chunks"]) and instance["index"] == 0
    assert instance["num_tokens"] == sum(len(chunk) for chunk in instance["chunks"])
    assert instance["task"] == "lme_train"
    with pytest.raises(ExampleNotFound) as error:
        find_example({"memalpha": splits["memalpha"]}, ["condo", "noise"])
    assert "(every one of ['condo', 'noise']) is in no instance of every source" in str(error.value)
    assert f"memalpha ({splits['memalpha']})" in str(error.value)
    with pytest.raises(ExampleNotFound, match="is in no instance of the sources \\['squad'\\]"):
        find_example(splits, ["condo", "noise"], ["squad"])


def test_an_example_in_two_sources_is_one_instance_by_its_text_else_both_are_named(tmp_path):
    """The same dialogue in LME-Train and in MemoryAgentBench's LongMemEval is one instance (its
    first place); two different instances holding the phrases stop the search, naming both."""
    from memrepro.data.memalpha import write_instances
    from memrepro.data.memalpha_example import ExampleNotFound, find_example

    def instance(source: str, text: str) -> dict:
        return {
            "instance_id": 0,
            "prompt": "",
            "chunks": [text],
            "questions_and_answers": [{"question": "Where?", "answer": "a condo"}],
            "data_source": source,
        }

    dialogue = "<user> I bought a condo; the noise from upstairs keeps me awake."
    full, mab = tmp_path / "full.parquet", tmp_path / "mab.parquet"
    write_instances(full, [instance("squad", "An article."), instance("lme_train", dialogue)])
    write_instances(mab, [instance("longmemeval_s*", dialogue)])
    splits = {"mab": mab, "full": full}
    assert find_example(splits, ["condo", "noise"]) == ("mab", 0, "longmemeval_s*")
    write_instances(mab, [instance("longmemeval_s*", dialogue + " A second session.")])
    with pytest.raises(ExampleNotFound) as error:
        find_example(splits, ["condo", "noise"])
    said = str(error.value)
    assert "fits 2 instances of every source" in said
    assert "mab row 0 (longmemeval_s*), full row 1 (lme_train)" in said
    assert find_example(splits, ["condo", "noise"], ["lme_train"]) == ("full", 1, "lme_train")


def test_an_example_no_split_holds_stops_the_plan_naming_what_and_where(repo):
    from memrepro import config as cfg

    smoke = cfg.load_config([repo / "config/smoke.yaml"])
    cfg.check_data(smoke)  # the fixture's full set holds it
    smoke["memalpha"]["example"]["phrases"] = ["condo", "balcony"]
    with pytest.raises(
        cfg.ConfigError, match=r"config key memalpha\.example: .*'balcony'.*full \("
    ):
        cfg.check_data(smoke)
    jobs = [j for j in cfg.eval_jobs(smoke) if j.benchmark == "memalpha_example"]
    assert [(j.system, j.tasks) for j in jobs] == [("memalpha-tiny", ("example",))]


@pytest.mark.parametrize("phrases", [["the"], [" "]])
def test_phrases_that_fit_many_instances_stop_the_plan_with_their_count(repo, phrases):
    """The first of many matches is not the paper's example: the plan stops, counting them."""
    from memrepro import config as cfg

    smoke = cfg.load_config([repo / "config/smoke.yaml"])
    smoke["memalpha"]["example"]["phrases"] = phrases
    with pytest.raises(
        cfg.ConfigError, match=r"memalpha\.example: .* fits \d+ instances of every source: train"
    ):
        cfg.check_data(smoke)


def ruler_set(path: Path, task: str, length: int, tokens: list[int]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [
        {"index": i, "task": task, "length": length, "num_tokens": n, "context": "x" * n}
        for i, n in enumerate(tokens)
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_table7_describes_the_niah_sets_that_ran(paper: dict, tmp_path: Path):
    paths = [
        ruler_set(tmp_path / "s3_8k.jsonl", "niah_single_3", 8192, [8000, 8100]),
        ruler_set(tmp_path / "s1_8k.jsonl", "niah_single_1", 8192, [7990, 8010, 8000]),
        ruler_set(tmp_path / "s1_16k.jsonl", "niah_single_1", 16384, [16000]),
    ]
    settings = {"variant": "memagent", "tokenizer": "Qwen/Qwen2.5-0.5B-Instruct", "seed": 42}
    records = load_table_records(NIAH_CONFIG_TABLE, paths)
    table = build_paper_table(
        NIAH_CONFIG_TABLE, records, [], paper, {8192: "8K"}, niah_config=settings
    )
    assert list(table.index) == ["niah_single_1", "niah_single_3"]  # RULER's order
    one, three = table.loc["niah_single_1"], table.loc["niah_single_3"]
    assert (three["Haystack"], three["Key"], three["Value"]) == ("essay", "words", "uuids")
    assert one["Haystack"] == "repeat"  # the memagent variant's name of the noise haystack
    assert one["Keys / values / queries"] == "1 / 1 / 1" and one["Answer tokens"] == "128"
    assert one["8K"] == "3 x 8,000 (max 8,010)" and one["16K"] == "1 x 16,000 (max 16,000)"
    assert three["16K"] == DASH  # not run at that length
    assert "tokenizer Qwen/Qwen2.5-0.5B-Instruct, seed 42" in table.attrs["notes"][0]
    # the paper's YAML, cell by cell: the fork's variant matches it everywhere
    assert "niah_single_1, niah_single_3: every cell matches it" in table.attrs["notes"][1]
    upstream = build_paper_table(
        NIAH_CONFIG_TABLE, records, [], paper, niah_config={**settings, "variant": "upstream"}
    )
    assert upstream.loc["niah_single_1", "Haystack"] == "noise (paper: repeat)"  # RULER HEAD's
    assert upstream.loc["niah_single_3", "Haystack"] == "essay"
    assert "1 cell(s) differ" in upstream.attrs["notes"][1]
    csv, md, _, page, claims = write_paper_table(
        NIAH_CONFIG_TABLE, table, tmp_path / "t7", "Table 7"
    )
    assert "<th>Task</th><th>Haystack</th>" in page.read_text()
    assert json.loads(claims.read_text()) == []
    assert len(pd.read_csv(csv)) == table.size and "| Task | Haystack |" in md.read_text()
    with pytest.raises(ValueError, match="needs the RULER settings"):
        build_paper_table(NIAH_CONFIG_TABLE, records, [], paper)


def test_table7_names_an_empty_or_bad_set(tmp_path: Path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ValueError, match=r"empty\.jsonl: no samples"):
        load_table_records(NIAH_CONFIG_TABLE, [empty])
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"task": "niah_single_1", "length": 8}) + "\n")
    with pytest.raises(ValueError, match=r"bad\.jsonl.*num_tokens"):
        load_table_records(NIAH_CONFIG_TABLE, [bad])


# --- beyond the papers: both suites, the memory frontier -------------------------------------


def test_suites_table_puts_every_system_on_ruler_hqa_and_memoryagentbench():
    from memrepro.report.tables import build_paper_table

    systems = [
        {"id": "mem14", "display": "MemAgent-14B", "kind": "memagent"},
        {"id": "ma", "display": "Mem-α", "kind": "memalpha", "benchmarks": ["memalpha", "mab"]},
        {"id": "q4", "display": "Qwen3-4B", "kind": "memalpha", "benchmarks": ["memalpha"]},
    ]
    records = [
        metric("mem14", 50, 80.0),
        metric("mem14", 800, 70.0),
        *memalpha_records("mab", ["mem14"], accuracy=40.0),
        *memalpha_records("mab", ["ma"], accuracy=60.0)[:-1],  # one source missing
        *memalpha_records("memalpha", ["ma", "q4"]),  # validation: not in this table
    ]
    table = build_paper_table("suites", records, systems, MEMALPHA_PAPER, {50: "7K"})
    assert list(table.index) == ["MemAgent-14B", "Mem-α"]  # Qwen3-4B ran neither suite
    labels = [table.attrs["column_labels"][c] for c in table.columns]
    assert labels[0] == "RULER-HQA 7K" and labels[1].startswith("RULER-HQA ")  # measured length
    assert labels[2:] == ["MemoryAgentBench Avg.", "MAB Mem. (K)"]
    memagent, memalpha = table.loc["MemAgent-14B"], table.loc["Mem-α"]
    assert (memagent[50].ours, memagent[800].ours, memagent["mab.perf"].ours) == (80.0, 70.0, 40.0)
    assert memagent["mab.mem"].ours == pytest.approx(2.004)  # mean of 2000..2008 tokens, in K
    assert memalpha[50].ours is None and memalpha["mab.perf"].ours == 60.0
    assert memalpha["mab.perf"].mark  # a partial average: 8 of 9 sources
    assert all(cell.paper is None for _, row in table.iterrows() for cell in row)


def test_memory_frontier_plots_both_suites(tmp_path):
    from memrepro.report.figures import plot_paper_figure

    records = memalpha_records("memalpha", ["ma", "q4", "lc"]) + memalpha_records("mab", ["ma"])
    png, pdf = plot_paper_figure(
        "memalpha_frontier", records, MEMALPHA_SYSTEMS, MEMALPHA_PAPER, tmp_path / "f", "t"
    )
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and pdf.read_bytes()[:5] == b"%PDF-"


def test_memalpha_training_curve_has_a_panel_per_reward_term(tmp_path):
    from memrepro.report.training_curves import (
        MEMALPHA_CURVE_PANELS,
        plot_training_curve,
        read_training_curve,
    )

    path = tmp_path / "train_metrics.jsonl"
    terms = {"r1_mean": 0.2, "r2_mean": 0.5, "r3_mean": 0.9, "r4_mean": 0.1}
    lines = [
        {"step": k, **terms, "kl": 0.01 * k, "memory_tokens_mean": 100.0 + k, "reward_mean": 1.0}
        for k in range(3)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    curve = read_training_curve(path, MEMALPHA_CURVE_PANELS)
    assert curve["memory_tokens_mean"] == [100.0, 101.0, 102.0] and curve["step"] == [0, 1, 2]
    png, _ = plot_training_curve({"GRPO": path}, tmp_path / "c", "t", MEMALPHA_CURVE_PANELS)
    assert png.stat().st_size > 1000
    path.write_text(json.dumps({"step": 0, "reward_mean": 1.0, "kl": 0.0}) + "\n")  # MemAgent's
    with pytest.raises(ValueError, match=r"missing training metric.*r1_mean"):
        read_training_curve(path, MEMALPHA_CURVE_PANELS)


def test_load_memories_needs_each_line_to_name_its_system(tmp_path):
    from memrepro.report.memalpha_tables import load_memories

    path = tmp_path / "0.memories.jsonl"
    line = {"system": "ma", "task": "squad", "index": 0, "memory": {}, "failed": False}
    path.write_text(json.dumps(line) + "\n")
    assert [r["system"] for r in load_memories([path])] == ["ma"]
    del line["system"]
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(ValueError, match=r"0\.memories\.jsonl: line 1 lacks system"):
        load_memories([path])


def test_the_lengths_note_names_only_columns_labelled_otherwise_than_by_documents(
    metrics: list[dict],
):
    named = to_markdown(build_table1(metrics, SYSTEMS, PAPER, LABELS), "t")
    assert "Lengths: 7K = 50 docs, 28K = 200 docs, 1.79M = 12800 docs." in named
    plain = to_markdown(build_table1(metrics, SYSTEMS, PAPER, {50: "50 docs"}), "t")
    # 200 and 12,800 documents are labelled by our measured tokens: they are named
    assert "Lengths: 28K = 200 docs, 1.79M = 12800 docs." in plain and "50 docs =" not in plain


def hqa_record(system: str, n_docs: int, right: int) -> dict:
    """A RULER-HQA record of `right` of 128 with its Wilson interval, as the evaluation writes."""
    return metric(system, n_docs, 100 * right / 128, ci95={"accuracy": list(wilson(right, 128))})


@pytest.mark.parametrize(
    ("last", "outcome"),
    # drops of -15.6, 50.8 and 3.9 points: at 128 questions a side the last is ±13 points wide
    [(125, HOLDS), (40, FAILS), (100, UNDECIDED)],
)
def test_figure1_checks_the_abstracts_loss_under_10_points_on_its_interval(paper, last, outcome):
    records = [hqa_record("rl-14b", 50, 105), hqa_record("rl-14b", 25600, last)]
    [check] = figure_claims("figure1", records, HEAT_SYSTEMS, paper)
    assert check.claim_id == "extrapolate_under_10" and check.system == "RL-14B"
    assert check.outcome == outcome and check.value == pytest.approx(100 * (105 - last) / 128)
    assert check.detail.startswith(f"drop over 50–25600 = {check.value:.1f} [")


def test_a_claim_against_another_system_takes_the_margin_at_every_length(paper):
    systems = [
        {"id": "rl-7b", "display": "RL-7B", "paper_row": "RL-MEMAGENT-7B", "kind": "memagent"},
        {"id": "q32", "display": "Qwen 32B", "paper_row": "Qwen2.5-Instruct-32B", "kind": "x"},
    ]
    claim = next(c for c in paper["ood"]["claims"] if c["id"] == "ood_7b_beats_32b")
    records = [
        niah_record(sid, task, n, score - (n == 524288) * 5, spread=3.0)
        for sid, score in (("rl-7b", 90.0), ("q32", 70.0))
        for task in TEN_TASKS
        for n in (8192, 524288)
    ]
    [check] = check_claims(records, systems, [claim], average_tasks=TEN_TASKS)
    assert check.value == pytest.approx(20.0) and check.outcome == HOLDS
    assert "margin over Qwen2.5-Instruct-32B" in check.detail
    assert "(the interval: over Qwen 32B at 8K, the lowest of 2)" in check.detail
    bare = [{k: v for k, v in r.items() if k != "ci95"} for r in records]
    [unsampled] = check_claims(bare, systems, [claim], average_tasks=TEN_TASKS)
    assert unsampled.outcome == NOT_CHECKABLE and unsampled.value == pytest.approx(20.0)
    mine = records[: len(records) // 2]  # RL-7B's alone
    [alone] = check_claims(mine, systems[:1], [claim], average_tasks=TEN_TASKS)
    assert alone.outcome == NOT_CHECKABLE and alone.detail == "no system of Qwen2.5-Instruct-32B"


def test_a_note_counts_answers_right_only_as_part_of_a_gold(tmp_path: Path):
    inside = metric("rl-14b", 50, 81.25, n_inside_gold_sub_em=3)
    table = build_table1(load_metrics(write_metrics(tmp_path, [inside])), SYSTEMS, PAPER, LABELS)
    md = write_table(table, tmp_path / "t", caption="c")[1].read_text()
    assert "RL-MemAgent-14B (ours) @ 7K: 3/128 answers score sub_em 1 only as part of a gold" in md
