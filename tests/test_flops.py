"""Figure 10's FLOP model: verl's per-sequence estimate and Appendix B's stages."""

from __future__ import annotations

import math

import pytest

from memrl.report.flops import (
    FIGURE_LENGTHS,
    Qwen2Shape,
    dense_parameters,
    fitted_exponent,
    long_context_sequences,
    memagent_sequences,
    sequence_flops,
)

# hidden 8, MLP 16, 2 layers, 2 query heads of 4, 1 key/value head, vocabulary 10
TINY = Qwen2Shape(8, 16, 2, 2, 1, 10)


def test_dense_parameters_by_hand():
    # per layer: q 8x8 + k 8x4 + v 8x4 + o 8x8 = 192; MLP 3 x 8 x 16 = 384; embedding + head 160
    assert dense_parameters(TINY) == 2 * (192 + 384) + 160


def test_sequence_flops_by_hand():
    # 6 x 1312 x (3 + 5) + 6 x (9 + 25) x 4 x 2 heads x 2 layers
    assert sequence_flops(TINY, [3, 5]) == 6 * 1312 * 8 + 6 * 34 * 4 * 2 * 2


def test_a_shape_reads_a_config_dict_or_object():
    config = {
        "hidden_size": 8,
        "intermediate_size": 16,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "vocab_size": 10,
    }
    assert Qwen2Shape.from_config(config) == TINY
    assert Qwen2Shape.from_config(type("Config", (), config)()) == TINY


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
