"""Figure 10's FLOP model: verl's per-sequence estimate and Appendix B's stages."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from memrepro.report.figures import plot_paper_figure
from memrepro.report.flops import (
    FIGURE_LENGTHS,
    Qwen2Shape,
    dense_parameters,
    fitted_exponent,
    long_context_sequences,
    memagent_sequences,
    predicted_flops,
    sequence_flops,
)
from memrepro.report.flops_figure import measured_costs, model_shape, read_wall_seconds

# hidden 8, MLP 16, 2 layers, 2 query heads of 4, 1 key/value head, vocabulary 10
TINY = Qwen2Shape(8, 16, 2, 2, 1, 10)
TINY_CONFIG = {
    "hidden_size": 8,
    "intermediate_size": 16,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "vocab_size": 10,
}

pytestmark = pytest.mark.usefixtures("checked_figures")  # every saved figure checked


def test_dense_parameters_by_hand():
    # per layer: q 8x8 + k 8x4 + v 8x4 + o 8x8 = 192; MLP 3 x 8 x 16 = 384; embedding + head 160
    assert dense_parameters(TINY) == 2 * (192 + 384) + 160


def test_sequence_flops_by_hand():
    # 6 x 1312 x (3 + 5) + 12 x (9 + 25) x 4 x 2 heads x 2 layers: the paper's fork counts 12
    assert sequence_flops(TINY, [3, 5]) == 6 * 1312 * 8 + 12 * 34 * 4 * 2 * 2
    assert sequence_flops(TINY, [3, 5], "verl") == 6 * 1312 * 8 + 6 * 34 * 4 * 2 * 2
    with pytest.raises(ValueError, match="unknown attention count 'flash'"):
        sequence_flops(TINY, [3], "flash")


def test_a_shape_reads_a_config_dict_or_object():
    assert Qwen2Shape.from_config(TINY_CONFIG) == TINY
    assert Qwen2Shape.from_config(type("Config", (), TINY_CONFIG)()) == TINY


def test_appendix_b_stages():
    assert long_context_sequences(8192) == [1024 + 8192 + 1024]
    stages = memagent_sequences(12_000)
    assert stages == [2248, 7248, 7248, 7248, 2148]  # ceil(12000 / 5000) = 3 updates
    assert len(memagent_sequences(10_000)) == 2 + 2


def test_the_long_context_model_grows_quadratically_and_memagent_linearly():
    shape = Qwen2Shape(3584, 18944, 28, 28, 4, 152064)  # Qwen2.5-7B's sizes
    long_context = [sequence_flops(shape, long_context_sequences(n)) for n in FIGURE_LENGTHS]
    memagent = [sequence_flops(shape, memagent_sequences(n)) for n in FIGURE_LENGTHS]
    assert FIGURE_LENGTHS[0] == 8192 and FIGURE_LENGTHS[-1] == 4 * 2**20
    assert fitted_exponent(FIGURE_LENGTHS[-4:], long_context[-4:]) > 1.8
    # the constant start and final stages bend the short end; the tail is linear
    assert fitted_exponent(FIGURE_LENGTHS[-4:], memagent[-4:]) == pytest.approx(1.0, abs=0.02)
    assert long_context[-1] / memagent[-1] > 10  # at 4M tokens


def test_fitted_exponent_recovers_a_power_law():
    lengths = [10, 100, 1000]
    assert fitted_exponent(lengths, [3 * n**2 for n in lengths]) == pytest.approx(2.0)
    assert fitted_exponent(lengths, [math.sqrt(n) for n in lengths]) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        fitted_exponent([10], [1.0])


# --- Figure 10 from results: predicted beside measured ------------------------------------------

AGENT = {"query_tokens": 4, "chunk_tokens": 10, "final_tokens": 2}


def test_predicted_flops_uses_the_agents_budgets_and_the_baselines_truncation():
    (memagent,) = predicted_flops(TINY, [25], "memagent", AGENT)
    # start 4 + 200 + 2, ceil(25 / 10) = 3 updates of 4 + 200 + 10 + 2, final 4 + 100 + 2
    assert memagent == sequence_flops(TINY, [206, 216, 216, 216, 106])
    assert predicted_flops(TINY, [25], "long_context", AGENT) == [sequence_flops(TINY, [31])]
    capped = predicted_flops(TINY, [25, 1000], "long_context", AGENT, max_input=20)
    assert capped == [sequence_flops(TINY, [22])] * 2  # 20 input tokens + 2 output
    with pytest.raises(ValueError, match="unknown method 'rag'"):
        predicted_flops(TINY, [25], "rag", AGENT)


def write_bench(path: Path, seconds: list[float]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = "".join(f"{s}\t0:00:01\t100\n" for s in seconds)
    path.write_text("s\th:m:s\tmax_rss\n" + rows)
    return path


def hqa_metrics(system: str, n_docs: int, tokens: float, n_items: int = 4) -> dict:
    return {
        "benchmark": "ruler_hqa",
        "task": "hqa",
        "system": system,
        "length": n_docs,
        "mean_tokens": tokens,
        "n_items": n_items,
    }


def flops_case(tmp_path: Path) -> tuple[dict, list[dict]]:
    model = tmp_path / "models" / "tiny"
    model.mkdir(parents=True)
    (model / "config.json").write_text(json.dumps(TINY_CONFIG))
    bench = tmp_path / "benchmarks"
    flops = {
        "agent": AGENT,
        "attention": "fork",
        "groups": {"tiny": {"backbone": "lc", "rl": "ma", "backbone_max_input": 50}},
        "models": {"tiny": str(model)},
        "benchmarks": {
            "ma/10": [write_bench(bench / "ma10.tsv", [4.0])],
            # two shards, the first run twice (two rows: their mean)
            "ma/20": [
                write_bench(bench / "ma20a.tsv", [3.0, 5.0]),
                write_bench(bench / "b", [4.0]),
            ],
            "lc/10": [write_bench(bench / "lc10.tsv", [2.0])],
            "lc/20": [write_bench(bench / "lc20.tsv", [8.0])],  # no metrics: left out
        },
    }
    records = [
        hqa_metrics("ma", 10, 100.0),
        hqa_metrics("ma", 20, 200.0),
        hqa_metrics("lc", 10, 100.0),
        hqa_metrics("other", 10, 100.0),
    ]
    return flops, records


def test_measured_costs_sum_shards_and_divide_by_samples(tmp_path: Path):
    flops, records = flops_case(tmp_path)
    measured = measured_costs(records, flops)["tiny"]
    assert measured["rl"].tokens == [100.0, 200.0]
    assert measured["rl"].seconds == [1.0, 2.0]  # 4 s / 4 samples; (4 + 4) s / 4
    assert measured["backbone"].tokens == [100.0] and measured["backbone"].seconds == [0.5]


def test_read_wall_seconds_names_a_file_that_is_not_a_benchmark(tmp_path: Path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("x\ty\n1\t2\n")
    with pytest.raises(ValueError, match=r"bad\.tsv: not a Snakemake benchmark file"):
        read_wall_seconds([bad])


def test_model_shape_reads_the_model_directory(tmp_path: Path):
    flops, _ = flops_case(tmp_path)
    assert model_shape(flops["models"]["tiny"]) == TINY
    (tmp_path / "models" / "tiny" / "config.json").write_text(json.dumps({"hidden_size": 8}))
    with pytest.raises(ValueError, match=r"config\.json: no intermediate_size"):
        model_shape(flops["models"]["tiny"])


def test_figure10_plots_predicted_and_measured(tmp_path: Path):
    flops, records = flops_case(tmp_path)
    png, pdf = plot_paper_figure("figure10", records, [], {}, tmp_path / "f10", "t", flops=flops)
    assert png.stat().st_size > 1000 and pdf.read_bytes()[:5] == b"%PDF-"
    with pytest.raises(ValueError, match="figure10 needs its settings"):
        plot_paper_figure("figure10", records, [], {}, tmp_path / "f10", "t")
