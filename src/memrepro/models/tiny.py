"""A tiny, randomly initialised Qwen2 model with a locally trained tokenizer, for offline runs.

It has the same interface as a real Qwen2.5-Instruct checkpoint (ChatML template with the stock
default system prompt, eos `<|im_end|>`, pad `<|endoftext|>`), so every code path of the pipeline
runs unchanged on CPU, with no download. Its outputs are noise; only the plumbing is exercised.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import torch
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers import GenerationConfig, PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

from memrepro.models import TINY_CONTEXT, model_directory

PAD_TOKEN = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
SPECIAL_TOKENS = [PAD_TOKEN, IM_START, IM_END]
DEFAULT_SYSTEM_PROMPT = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
# Qwen2's pre-tokenisation split (contractions, letter runs, single digits, punctuation, spaces).
# transformers' Qwen2Tokenizer rebuilds exactly this pipeline on load, so we train with it too.
QWEN_SPLIT_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)

# ChatML in the shape of Qwen2.5-Instruct's template (without its tool-calling branches):
# a system turn first (the default one when the conversation has none), then every turn as
# <|im_start|>role\ncontent<|im_end|>\n, then "<|im_start|>assistant\n" as the generation prompt.
CHAT_TEMPLATE = (
    "{%- if messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- set turns = messages[1:] %}"
    "{%- else %}"
    "{{- '<|im_start|>system\\n" + DEFAULT_SYSTEM_PROMPT + "<|im_end|>\\n' }}"
    "{%- set turns = messages %}"
    "{%- endif %}"
    "{%- for message in turns %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- endif %}"
)


def build_tiny_model(
    out_dir: str | os.PathLike[str],
    corpus: Iterable[str],
    *,
    vocab_size: int = 2048,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 2,  # head size 32: the smallest that vLLM's CPU attention supports
    num_kv_heads: int = 1,
    intermediate_size: int = 128,
    max_position_embeddings: int = TINY_CONTEXT,
    initializer_range: float = 0.02,
    seed: int = 0,
) -> Path:
    """Train a byte-level BPE tokenizer on `corpus`, initialise a Qwen2 model, save both to out_dir.

    Deterministic in (corpus, arguments). The directory appears atomically: it is built in a
    temporary sibling and renamed into place, replacing any previous build.
    """
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(corpus, vocab_size, max_position_embeddings)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        max_position_embeddings=max_position_embeddings,
        initializer_range=initializer_range,  # std of the normal init (Qwen2's default 0.02)
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=[tokenizer.eos_token_id, tokenizer.pad_token_id],
        pad_token_id=tokenizer.pad_token_id,
    )
    with model_directory(out) as tmp:
        tokenizer.save_pretrained(tmp)
        model.save_pretrained(tmp)
    return out


def build_tokenizer(
    corpus: Iterable[str], vocab_size: int, model_max_length: int
) -> PreTrainedTokenizerFast:
    """Byte-level BPE with Qwen2's normaliser and pre-tokeniser, ChatML tokens and template."""
    bpe = Tokenizer(models.BPE())
    bpe.normalizer = normalizers.NFC()
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN_SPLIT_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(corpus, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token=IM_END,
        pad_token=PAD_TOKEN,
        additional_special_tokens=[IM_START],
        chat_template=CHAT_TEMPLATE,
        model_max_length=model_max_length,
        clean_up_tokenization_spaces=False,
    )
