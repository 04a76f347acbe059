"""Direct long-context generation: the whole context in one prompt, middle-truncated.

This is MemAgent's baseline path (MemAgent's official code, paper Table 6): the official prompt,
the whole prompt tokenized and middle-truncated to 120,000 tokens (990,000 for the 1M models),
one user message answered with up to 10,000 tokens. The context extension that lets vLLM 0.33
serve those windows (YaRN for Qwen2.5-Instruct, the 1M models' own window) is in
`rope_engine_settings`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memrepro.agents.chunking import window_ids
from memrepro.agents.driver import Workflow
from memrepro.agents.memagent import user
from memrepro.engines.base import ChatRequest

# The official direct-generation prompt (utils/openai_api.py `template_0shot`), exact layout:
# blank lines between the blocks, the context and the question stripped, and the period after
# the closing quote. No trailing newline.
OFFICIAL_PROMPT = """Please read the following text and answer the question below.

<text>
{context}
</text>

{question}

Format your response as follows: "Therefore, the answer is (insert answer here)"."""

MAX_INPUT_TOKENS = 120_000  # Table 6: 128K models (990_000 for the Qwen2.5-1M models)
MAX_OUTPUT_TOKENS = 10_000


def official_prompt(context: str, question: str) -> str:
    """The official prompt around `context` and `question` (both stripped, as upstream)."""
    return OFFICIAL_PROMPT.format(context=context.strip(), question=question.strip())


def middle_truncate(tokenizer: Any, text: str, max_tokens: int) -> str:
    """Keep the first max_tokens//2 and the last max_tokens - max_tokens//2 tokens of `text`.

    As the official code does: the whole prompt (no chat template) is tokenized with the
    tokenizer's default special tokens (Qwen2.5 adds none; a BOS-adding tokenizer such as
    R1-Distill's counts its BOS in the head half), and only a prompt over the limit is decoded
    back, with skip_special_tokens=True; a prompt within the limit is returned untouched.
    Upstream's `ids[:L//2] + ids[-L//2:]` keeps ceil(L/2) tail tokens for odd L (Python floors
    -L//2), i.e. exactly these halves: the question at the end survives. Only the two ends are
    tokenized (`window_ids`: the same ids), so a 50 MB context costs the window's memory.
    """
    if max_tokens <= 0:
        raise ValueError(f"max_tokens must be positive, got {max_tokens}")
    head = max_tokens // 2
    ids, cut = window_ids(tokenizer, text, head, max_tokens - head, add_special_tokens=True)
    return tokenizer.decode(ids, skip_special_tokens=True) if cut else text


def longcontext(
    prompt_text: str, tokenizer: Any, max_input_tokens: int, max_output_tokens: int
) -> Workflow:
    """One conversation: the middle-truncated prompt as a single user message; returns the text.

    The engine applies the model's own chat template (Qwen's adds its default system prompt), as
    the official OpenAI-compatible requests did.
    """
    if max_input_tokens <= 0 or max_output_tokens <= 0:
        raise ValueError(
            f"token budgets must be positive, got {max_input_tokens} in, {max_output_tokens} out"
        )
    prompt = middle_truncate(tokenizer, prompt_text, max_input_tokens)
    del prompt_text  # a 1M-token text must not wait in memory for the engine
    completion = yield ChatRequest(user(prompt), max_output_tokens)
    return completion.text


ROPE_KINDS: tuple[str, ...] = ("none", "yarn", "no_dca", "dca")


@dataclass(frozen=True)
class DropConfigKeys:
    """An `hf_overrides` callable that deletes keys from the loaded Hugging Face config.

    vLLM 0.33 takes `hf_overrides` as a dict or as a callable over the config. Deleting (rather
    than overriding with None) matters: vLLM still probes `hasattr(config,
    "dual_chunk_attention_config")` and would write into a None. A frozen dataclass pickles to
    vLLM's engine process and has a stable repr for logged parameters.
    """

    keys: tuple[str, ...]

    def __call__(self, config: Any) -> Any:
        for key in self.keys:
            if key in vars(config):
                delattr(config, key)
        return config


DCA_UNSUPPORTED = (
    "dual chunk attention (DCA) is not available in vLLM 0.33: its only implementation was the "
    "V0 attention backend DUAL_CHUNK_FLASH_ATTN (VLLM_ATTENTION_BACKEND=DUAL_CHUNK_FLASH_ATTN on "
    "the V0 engine, vLLM <= 0.10), removed with the V0 engine in vLLM 0.11 "
    "(vllm-project/vllm#25351) and never ported to V1 (vllm-project/vllm#49296). vLLM 0.33 "
    "even fails to load a config that carries dual_chunk_attention_config (FlashAttentionImpl "
    "gets an unexpected 'layer_idx'; vllm-project/vllm#24048, #33470). Fallback: kind "
    "'no_dca', plain full attention over the 1M models' native window (rope_theta 1e7, "
    "1,010,000 positions), which is what the MemAgent evaluation most likely ran too: the vLLM "
    "of its era ignored the DCA config."
)


@dataclass(frozen=True)
class EngineSetup:
    """What a context extension needs from the engine."""

    settings: dict[str, Any]  # extra `VLLMEngine` / `vllm.LLM` keyword arguments
    env: dict[str, str]  # environment variables to set before vLLM is imported
    note: str  # what it does, for the log


def rope_engine_settings(
    kind: str,
    *,
    max_model_len: int | None,
    original_max_position_embeddings: int = 32768,
    factor: float = 4.0,
    rope_theta: float = 1e6,
) -> EngineSetup:
    """The vLLM 0.33 engine settings of a baseline's context extension.

    - "none": the model as configured (Qwen2.5-Instruct at 32K, R1-Distill at 128K).
    - "yarn": static YaRN (Qwen2.5-Instruct-128K, the official "-128k" copies with
      rope_scaling added to config.json). vLLM 0.33 applies dict overrides after loading and
      does not multiply the max length by the YaRN factor, so the override carries rope_type
      and rope_theta and the post-YaRN `max_position_embeddings` (vLLM's YaRN settings).
    - "no_dca": the Qwen2.5-*-1M models without their dual_chunk_attention_config (the only way
      vLLM 0.33 loads them), at `max_model_len`.
    - "dca": raises ValueError (`DCA_UNSUPPORTED`).
    No kind needs an environment variable in vLLM 0.33 (`env` is empty); DCA needed one.
    """
    if kind == "none":
        return EngineSetup({}, {}, "the model's own configuration")
    if kind == "dca":
        raise ValueError(DCA_UNSUPPORTED)
    if kind not in ROPE_KINDS:
        raise ValueError(f"unknown context extension {kind!r}; expected one of {ROPE_KINDS}")
    if max_model_len is None or max_model_len <= 0:
        raise ValueError(f"context extension {kind!r} needs a positive max_model_len")
    if kind == "no_dca":
        settings = {
            "hf_overrides": DropConfigKeys(("dual_chunk_attention_config",)),
            "max_model_len": max_model_len,
        }
        note = "dual_chunk_attention_config dropped: plain full attention (no DCA in vLLM 0.33)"
        return EngineSetup(settings, {}, f"{note}, max_model_len {max_model_len}")
    if factor <= 1 or original_max_position_embeddings <= 0:
        raise ValueError(
            f"YaRN needs factor > 1 and original_max_position_embeddings > 0, got "
            f"{factor}, {original_max_position_embeddings}"
        )
    if max_model_len > factor * original_max_position_embeddings:
        raise ValueError(
            f"max_model_len {max_model_len} exceeds the YaRN window "
            f"{factor} x {original_max_position_embeddings}"
        )
    rope = {
        "rope_type": "yarn",
        "factor": factor,
        "original_max_position_embeddings": original_max_position_embeddings,
        "rope_theta": rope_theta,
    }
    settings = {
        "hf_overrides": {"rope_parameters": rope, "max_position_embeddings": max_model_len},
        "max_model_len": max_model_len,
    }
    note = f"static YaRN x{factor} of {original_max_position_embeddings} positions"
    return EngineSetup(settings, {}, f"{note}, max_model_len {max_model_len}")
