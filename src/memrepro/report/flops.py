"""FLOPs of MemAgent's Figure 10 (Appendix B): the long-context model against MemAgent, 8K to 4M.

The paper prices each sequence with verl's FLOP estimator for Qwen2 (forward and backward: 6 FLOPs
per parameter per token over the dense weights, embedding and LM head included, plus attention's
6 n² d_head x heads per layer) and sums the sequences each method processes for a context of c
tokens:

- the long-context model: one sequence of q + c + o tokens;
- MemAgent: q + 200 + o to start the workflow, k = ceil(c / N) memory updates of q + 200 + N + o,
  and the final answer of q + 100 + o (200 and 100: the workflow's prompt tokens),

with q = 1024 (problem), o = 1024 (output) and N = 5000 (chunk). The first grows as n², the second
as n; `fitted_exponent` measures that on the computed points.

The attention term's coefficient (`ATTENTION_COEFFICIENTS`): the verl fork the paper used counts
12 n² d_head x heads per layer, which the figure reproduces by default ("fork"); verl 0.9.1 (which
tests/verl checks us against) counts causal attention, 6 ("verl"). For Qwen2.5-14B from 8K to 4M
the fork's doubles the long-context model's 4M cost (2.6e19 -> 5.2e19) and moves its fitted
exponent from 1.65 to 1.74; MemAgent's stays at 0.94.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from memrepro.agents.memagent import FINAL_PROMPT_TOKENS, WORKFLOW_PROMPT_TOKENS

QUERY_TOKENS = 1024  # q
OUTPUT_TOKENS = 1024  # o
CHUNK_TOKENS = 5000  # N
FIGURE_LENGTHS = tuple(8192 * 2**k for k in range(10))  # 8K … 4M
ATTENTION_COEFFICIENTS = {"fork": 12, "verl": 6}  # report.flops_attention -> the coefficient


@dataclass(frozen=True)
class Qwen2Shape:
    """The sizes of a Qwen2 decoder that its FLOPs depend on."""

    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    vocab_size: int
    head_dim: int | None = None  # hidden_size / num_heads unless the config says otherwise

    @classmethod
    def from_config(cls, config: Any) -> Qwen2Shape:
        """From a Hugging Face config (object or config.json dict)."""
        get = config.get if isinstance(config, dict) else lambda key: getattr(config, key, None)
        return cls(
            hidden_size=get("hidden_size"),
            intermediate_size=get("intermediate_size"),
            num_layers=get("num_hidden_layers"),
            num_heads=get("num_attention_heads"),
            num_kv_heads=get("num_key_value_heads"),
            vocab_size=get("vocab_size"),
            head_dim=get("head_dim"),
        )

    @property
    def attention_dim(self) -> int:
        return self.head_dim or self.hidden_size // self.num_heads


# Published config.json sizes of the model families the configs name, for pricing a model before
# it is downloaded (`memrepro cost`; the figure reads the downloaded config instead). Keyed by
# family and size as Hugging Face ids spell them; fine-tunes (R1-Distill, QwenLong-L1, MEM1, the 1M
# variants, RL-MemoryAgent, Memalpha) keep their base model's shape.
PUBLISHED_SHAPES = {
    ("qwen2.5", "7b"): Qwen2Shape(3584, 18944, 28, 28, 4, 152064),
    ("qwen2.5", "14b"): Qwen2Shape(5120, 13824, 48, 40, 8, 152064),
    ("qwen2.5", "32b"): Qwen2Shape(5120, 27648, 64, 40, 8, 152064),
    ("qwen3", "4b"): Qwen2Shape(2560, 9728, 36, 32, 8, 151936, head_dim=128),
    ("qwen3", "32b"): Qwen2Shape(5120, 25600, 64, 64, 8, 151936, head_dim=128),
}
BASE_FAMILIES = {"memalpha": "qwen3", "qwen3": "qwen3"}  # id fragment -> family; else Qwen2.5


def published_shape(model_id: str) -> Qwen2Shape | None:
    """The shape of a Hugging Face id's family and size (`Qwen/Qwen2.5-14B-Instruct`,
    `YuWangX/Memalpha-4B`), or None for a size not listed."""
    name = model_id.lower()
    size = re.search(r"(?<![\d.])(\d+(?:\.\d+)?b)\b", name)
    family = next((f for part, f in BASE_FAMILIES.items() if part in name), "qwen2.5")
    return PUBLISHED_SHAPES.get((family, size[1])) if size else None


def dense_parameters(shape: Qwen2Shape) -> int:
    """Weights every token passes through: per layer the SwiGLU MLP (gate, up, down) and the
    query, key, value and output projections; then the embedding and the LM head."""
    queries = shape.num_heads * shape.attention_dim
    keys_values = 2 * shape.num_kv_heads * shape.attention_dim
    projections = shape.hidden_size * (2 * queries + keys_values)  # q, k, v in; o out
    mlp = 3 * shape.hidden_size * shape.intermediate_size
    return shape.num_layers * (projections + mlp) + 2 * shape.vocab_size * shape.hidden_size


def sequence_flops(shape: Qwen2Shape, lengths: Iterable[int], attention: str = "fork") -> float:
    """verl's estimate for sequences of these lengths (forward and backward), with the attention
    coefficient of the paper's fork (12) or of verl 0.9.1 (6)."""
    lengths = list(lengths)
    dense = 6 * dense_parameters(shape) * sum(lengths)
    coefficient = attention_coefficient(attention)
    attention_flops = (
        coefficient * sum(n * n for n in lengths) * shape.attention_dim * shape.num_heads
    )
    return float(dense + attention_flops * shape.num_layers)


def attention_coefficient(attention: str) -> int:
    if attention not in ATTENTION_COEFFICIENTS:
        raise ValueError(
            f"unknown attention count {attention!r} (known: {', '.join(ATTENTION_COEFFICIENTS)})"
        )
    return ATTENTION_COEFFICIENTS[attention]


def long_context_sequences(
    context: int,
    query: int = QUERY_TOKENS,
    output: int = OUTPUT_TOKENS,
    max_input: int | None = None,
) -> list[int]:
    """One sequence of q + c + o tokens; a model that truncates its input to `max_input`
    tokens (the 128K baselines) reads no more than that."""
    prompt = query + context if max_input is None else min(query + context, max_input)
    return [prompt + output]


def memagent_sequences(
    context: int,
    query: int = QUERY_TOKENS,
    output: int = OUTPUT_TOKENS,
    chunk: int = CHUNK_TOKENS,
) -> list[int]:
    """Appendix B's stages: start, ceil(c / N) memory updates, final answer."""
    update = query + WORKFLOW_PROMPT_TOKENS + chunk + output
    return [
        query + WORKFLOW_PROMPT_TOKENS + output,
        *[update] * math.ceil(context / chunk),
        query + FINAL_PROMPT_TOKENS + output,
    ]


def fitted_exponent(lengths: Sequence[float], costs: Sequence[float]) -> float:
    """The slope p of the least-squares line through (log n, log cost): cost ~ n^p."""
    if len(lengths) != len(costs) or len(lengths) < 2:
        raise ValueError("fitted_exponent needs two or more (length, cost) pairs")
    xs = [math.log(n) for n in lengths]
    ys = [math.log(c) for c in costs]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread


def predicted_flops(
    shape: Qwen2Shape,
    contexts: Iterable[float],
    method: str,
    agent: dict[str, int] | None = None,
    max_input: int | None = None,
    attention: str = "fork",
) -> list[float]:
    """`sequence_flops` of each context for `method` ("long_context" or "memagent"), with the
    agent's q, N and o (config `agent`: query_tokens, chunk_tokens, final_tokens; default the
    paper's 1024, 5000, 1024) and the `attention` count."""
    agent = agent or {
        "query_tokens": QUERY_TOKENS,
        "chunk_tokens": CHUNK_TOKENS,
        "final_tokens": OUTPUT_TOKENS,
    }
    query, chunk, output = agent["query_tokens"], agent["chunk_tokens"], agent["final_tokens"]
    if method == "long_context":
        return [
            sequence_flops(
                shape, long_context_sequences(round(c), query, output, max_input), attention
            )
            for c in contexts
        ]
    if method == "memagent":
        return [
            sequence_flops(shape, memagent_sequences(round(c), query, output, chunk), attention)
            for c in contexts
        ]
    raise ValueError(f"unknown method {method!r} (long_context, memagent)")
