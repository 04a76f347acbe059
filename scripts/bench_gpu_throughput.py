"""Prefill and decode throughput, and peak GPU memory against context length, of Qwen2.5-shaped
models through transformers in bfloat16: the measured rates `memrepro cost` states beside its FLOPs.

    python scripts/bench_gpu_throughput.py --out gpu.json  # 7B, 14B, 32B on CUDA
    python scripts/bench_gpu_throughput.py --shapes tiny --device cpu --out x.json  # a check on CPU

The weights are random (no download is needed, and speed does not depend on their values): each
model has Qwen2.5-{7B,14B,32B}-Instruct's published sizes (memrepro.report.flops). Prefill runs the
decoder on one sequence of L tokens and the LM head on its last position only, as a chat engine
does; decode is `model.generate` (the HF engine's call) for a batch of prompts, greedy, a fixed
number of new tokens. `memrepro cost` prices work at the FLOP rate the prefill points achieve.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # runs without installing
from memrepro.report.flops import PUBLISHED_SHAPES, Qwen2Shape

SHAPES = {
    "7b": PUBLISHED_SHAPES["qwen2.5", "7b"],
    "14b": PUBLISHED_SHAPES["qwen2.5", "14b"],
    "32b": PUBLISHED_SHAPES["qwen2.5", "32b"],
    "tiny": Qwen2Shape(64, 128, 2, 4, 2, 1000),
}


def build(shape: str, device: str, max_positions: int) -> Qwen2ForCausalLM:
    sizes = SHAPES[shape]
    config = Qwen2Config(
        hidden_size=sizes.hidden_size,
        intermediate_size=sizes.intermediate_size,
        num_hidden_layers=sizes.num_layers,
        num_attention_heads=sizes.num_heads,
        num_key_value_heads=sizes.num_kv_heads,
        vocab_size=sizes.vocab_size,
        max_position_embeddings=max_positions,
        rope_theta=1_000_000.0,
        tie_word_embeddings=False,
        attn_implementation="sdpa",
    )
    torch.set_default_dtype(torch.bfloat16)
    with torch.device(device):
        model = Qwen2ForCausalLM(config)
    torch.set_default_dtype(torch.float32)
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    return model.eval()


def synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def peak_gb(device: str) -> float | None:
    return torch.cuda.max_memory_allocated() / 2**30 if device == "cuda" else None


def reset_peak(device: str) -> None:
    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


@torch.inference_mode()
def prefill(model: Qwen2ForCausalLM, length: int, device: str) -> dict:
    ids = torch.randint(0, model.config.vocab_size, (1, length), device=device)
    reset_peak(device)
    synchronize(device)
    start = time.perf_counter()
    hidden = model.model(input_ids=ids, use_cache=True).last_hidden_state
    model.lm_head(hidden[:, -1:])
    synchronize(device)
    seconds = time.perf_counter() - start
    return {
        "tokens": length,
        "seconds": round(seconds, 3),
        "tokens_per_s": round(length / seconds),
        "peak_gb": peak_gb(device),
    }


@torch.inference_mode()
def decode(model: Qwen2ForCausalLM, batch: int, prompt: int, new: int, device: str) -> dict:
    ids = torch.randint(1, model.config.vocab_size, (batch, prompt), device=device)
    mask = torch.ones_like(ids)

    def generate(tokens: int) -> float:
        synchronize(device)
        start = time.perf_counter()
        model.generate(
            input_ids=ids,
            attention_mask=mask,
            max_new_tokens=tokens,
            min_new_tokens=tokens,
            do_sample=False,
        )
        synchronize(device)
        return time.perf_counter() - start

    reset_peak(device)
    with_prefill_only = generate(1)
    total = generate(new)
    per_step = (total - with_prefill_only) / (new - 1)
    return {
        "batch": batch,
        "prompt_tokens": prompt,
        "new_tokens": new,
        "seconds": round(total, 3),
        "seconds_per_step": round(per_step, 4),
        "decode_tokens_per_s": round(batch / per_step),
        "peak_gb": peak_gb(device),
    }


def measure(shape: str, device: str, lengths: list[int], batches: list[int], prompt: int, new: int):
    model = build(shape, device, max([*lengths, prompt + new]))
    parameters = sum(p.numel() for p in model.parameters())
    prefill(model, min(lengths), device)  # warm-up: kernels, allocator
    record = {"shape": shape, "parameters": parameters, "prefill": [], "decode": []}
    for length in lengths:
        try:
            record["prefill"].append(prefill(model, length, device))
        except torch.cuda.OutOfMemoryError:
            record["prefill"].append({"tokens": length, "error": "out of memory"})
        print(json.dumps(record["prefill"][-1]), flush=True)
    for batch in batches:
        try:
            record["decode"].append(decode(model, batch, prompt, new, device))
        except torch.cuda.OutOfMemoryError:
            record["decode"].append({"batch": batch, "error": "out of memory"})
        print(json.dumps(record["decode"][-1]), flush=True)
    del model
    reset_peak(device)
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=["7b", "14b", "32b"], choices=sorted(SHAPES))
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--lengths", nargs="+", type=int, default=[8192, 32768, 131072])
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 16])
    parser.add_argument("--prompt", type=int, default=7168, help="decode prompt tokens")
    parser.add_argument("--new", type=int, default=64, help="decode tokens per sequence")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    device_name = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
    result = {
        "device": device_name,
        "torch": torch.__version__,
        "transformers": __import__("transformers").__version__,
        "dtype": "bfloat16",
        "attention": "sdpa",
        "models": [],
    }
    for shape in args.shapes:
        print(f"== {shape} on {device_name}", flush=True)
        result["models"].append(
            measure(shape, args.device, args.lengths, args.batches, args.prompt, args.new)
        )
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
