"""Our FLOP estimate (Figure 10) against verl's own FlopsCounter for Qwen2 configs."""

from __future__ import annotations

import pytest
from transformers import Qwen2Config
from verl.utils import flops_counter

from memrepro.report.flops import Qwen2Shape, memagent_sequences, sequence_flops

SHAPES = {  # Qwen2.5-7B and -14B, and a small model with an explicit head_dim
    "7b": dict(
        hidden_size=3584,
        intermediate_size=18944,
        num_hidden_layers=28,
        num_attention_heads=28,
        num_key_value_heads=4,
        vocab_size=152064,
    ),
    "14b": dict(
        hidden_size=5120,
        intermediate_size=13824,
        num_hidden_layers=48,
        num_attention_heads=40,
        num_key_value_heads=8,
        vocab_size=152064,
    ),
    "small": dict(
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=1000,
        head_dim=32,
    ),
}


@pytest.mark.parametrize("name", SHAPES)
@pytest.mark.parametrize("lengths", [[8192 + 2048], memagent_sequences(131_072), [17, 4000, 9]])
def test_our_estimate_is_verls_within_one_percent(name, lengths, monkeypatch):
    # the device's peak FLOPs (the second value, unused here) needs a GPU to look up
    monkeypatch.setattr(flops_counter, "get_device_flops", lambda *args, **kwargs: 1.0)
    config = Qwen2Config(**SHAPES[name])
    verl_tflops, _ = flops_counter.FlopsCounter(config).estimate_flops(lengths, delta_time=1.0)
    ours = sequence_flops(Qwen2Shape.from_config(config), lengths, "verl")
    assert ours == pytest.approx(verl_tflops * 1e12, rel=0.01)
