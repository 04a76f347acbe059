"""verl 0.9.1 trains without flash-attn, which the `train` lock leaves out (an sdist only: it would
compile for about an hour on every cluster). Checked on verl's own code in the train-cpu
environment, which has no flash-attn either: the padding-free path (`use_remove_padding`) packs
a batch with verl's pure-torch helpers, and a model on `sdpa` attention (our
`training.verl.attn_implementation`) gives every packed sequence the logits it has alone, so no
token attends across sequences."""

from __future__ import annotations

import importlib.util

import pytest

verl = pytest.importorskip("verl")

import torch  # noqa: E402
from transformers import Qwen2Config, Qwen2ForCausalLM  # noqa: E402
from verl.utils import attention_utils  # noqa: E402
from verl.utils import torch_functional as verl_F  # noqa: E402

from memrepro.verl.overrides import MEMALPHA, verl_overrides  # noqa: E402


def test_this_environment_has_no_flash_attn_and_verl_takes_its_own_helpers():
    assert importlib.util.find_spec("flash_attn") is None
    _, pad_input, _, unpad_input = attention_utils._get_attention_functions()
    assert unpad_input is attention_utils._fallback_unpad_input
    assert pad_input is attention_utils._fallback_pad_input
    assert not verl_F.FLAH_ATTN_CROSS_ENTROPY_LOSS_AVAILABLE


def test_verls_log_probs_without_flash_attn_are_the_log_softmax():
    torch.manual_seed(0)
    logits, labels = torch.randn(6, 11), torch.randint(0, 11, (6,))
    expected = torch.log_softmax(logits, -1).gather(-1, labels[:, None])[:, 0]
    torch.testing.assert_close(verl_F.logprobs_from_logits(logits, labels), expected)


def tiny_qwen2() -> Qwen2ForCausalLM:
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        attn_implementation="sdpa",
    )
    return Qwen2ForCausalLM(config).eval()


def test_packed_sequences_on_sdpa_get_the_logits_each_has_alone():
    """verl's remove-padding forward (dp_actor): unpad with verl's helpers, one packed row with
    position ids restarting per sequence, no attention mask; then pad back."""
    model = tiny_qwen2()
    assert model.config._attn_implementation == "sdpa"
    lengths = [7, 4, 9]
    batch, width = len(lengths), max(lengths)
    input_ids = torch.zeros(batch, width, dtype=torch.long)
    attention_mask = torch.zeros(batch, width, dtype=torch.long)
    for row, length in enumerate(lengths):  # left-padded prompts, as verl's rollouts are
        input_ids[row, width - length :] = torch.randint(1, 64, (length,))
        attention_mask[row, width - length :] = 1
    position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)

    _, pad_input, _, unpad_input = attention_utils._get_attention_functions()
    ids_rmpad, indices, *_ = unpad_input(input_ids.unsqueeze(-1), attention_mask)
    positions_rmpad = attention_utils._fallback_index_first_axis(
        position_ids.reshape(-1, 1), indices
    ).transpose(0, 1)
    with torch.no_grad():
        packed = model(
            input_ids=ids_rmpad.transpose(0, 1), position_ids=positions_rmpad, use_cache=False
        ).logits[0]
        padded = pad_input(packed, indices, batch, width)
        for row, length in enumerate(lengths):
            alone = model(input_ids=input_ids[row : row + 1, width - length :]).logits[0]
            torch.testing.assert_close(padded[row, width - length :], alone, atol=1e-5, rtol=1e-5)
        # the check can fail: one sequence's positions over the whole row attend across all three
        running = torch.arange(ids_rmpad.shape[0])[None]
        crossed = model(input_ids=ids_rmpad.transpose(0, 1), position_ids=running, use_cache=False)
        last = model(input_ids=input_ids[-1:, width - lengths[-1] :]).logits[0]
        assert (crossed.logits[0, -lengths[-1] :] - last).abs().max() > 1e-3


def test_both_papers_runs_ask_verl_for_sdpa_attention_with_remove_padding():
    from test_verl_overrides import PATHS, as_dict, memalpha_paper_settings, paper_settings

    for overrides in (
        as_dict(verl_overrides(paper_settings(), PATHS)),
        as_dict(verl_overrides(memalpha_paper_settings(), PATHS, MEMALPHA)),
    ):
        assert overrides["+actor_rollout_ref.model.override_config.attn_implementation"] == "sdpa"
        assert overrides["actor_rollout_ref.model.use_remove_padding"] == "true"
