"""ChatEngine over a transformers causal LM (CPU runs, tiny models, the CPU reference trainer)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from itertools import groupby
from typing import Any, Literal

import torch
from transformers import AutoModelForCausalLM, GenerationConfig

from memrepro.engines.base import ChatRequest, Completion, SamplingParams, prompt_ids
from memrepro.models import load_named, load_tokenizer

log = logging.getLogger(__name__)

Device = Literal["auto", "cpu", "cuda"]


class HFEngine:
    """Batched chat generation with `model.generate`.

    Requests are grouped by `max_tokens`, left-padded into micro-batches of `batch_size`, and
    answered in request order. A micro-batch that raises (e.g. out of memory) yields failed
    Completions (`error` set) instead of aborting the call. The model is used in place (no copy),
    so a trainer can pass the policy it is training: it is switched to eval mode for generation
    and switched back afterwards.

    Sampling mirrors vLLM's `SamplingParams`: only temperature and top_p apply (no top-k, no
    repetition penalty), whatever the checkpoint's generation_config.json says. With a `seed`,
    the n-th micro-batch of a call samples from a generator seeded with `seed + n`, so a call
    is reproducible and leaves the global RNG untouched.
    """

    def __init__(self, model: Any, tokenizer: Any, batch_size: int = 8) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.pad_id = _pad_id(tokenizer)
        self.stop_ids = _stop_ids(model, tokenizer)

    @classmethod
    def load(
        cls,
        path: str,
        device: Device = "auto",
        dtype: str = "auto",
        batch_size: int = 8,
    ) -> HFEngine:
        """Load a local checkpoint. dtype "auto": the checkpoint's on GPU, float32 on CPU."""
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if device not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'auto', 'cpu' or 'cuda', got {device!r}")
        torch_dtype = _resolve_dtype(dtype, device)
        tokenizer = load_tokenizer(path)
        model = load_named("model", path, AutoModelForCausalLM.from_pretrained, dtype=torch_dtype)
        model = model.to(device)
        return cls(model, tokenizer, batch_size=batch_size)

    def chat(self, requests: Sequence[ChatRequest], sampling: SamplingParams) -> list[Completion]:
        prompts = [prompt_ids(self.tokenizer, request) for request in requests]
        results: dict[int, Completion] = {}
        was_training = self.model.training
        self.model.eval()
        try:
            for n, batch in enumerate(self._micro_batches(requests)):
                seed = None if sampling.seed is None else sampling.seed + n
                max_tokens = requests[batch[0]].max_tokens
                done = self._run_batch([prompts[i] for i in batch], max_tokens, sampling, seed)
                results.update(zip(batch, done, strict=True))
        finally:
            self.model.train(was_training)
        return [results[i] for i in range(len(requests))]

    def _micro_batches(self, requests: Sequence[ChatRequest]) -> list[list[int]]:
        """Request indices grouped by max_tokens, in chunks of at most batch_size."""
        order = sorted(range(len(requests)), key=lambda i: requests[i].max_tokens)
        batches = []
        for _, group in groupby(order, key=lambda i: requests[i].max_tokens):
            members = list(group)
            batches += [
                members[start : start + self.batch_size]
                for start in range(0, len(members), self.batch_size)
            ]
        return batches

    def _run_batch(
        self,
        prompts: list[list[int]],
        max_tokens: int,
        sampling: SamplingParams,
        seed: int | None,
    ) -> list[Completion]:
        try:
            rows = self._generate(prompts, max_tokens, sampling, seed)
        except Exception as exc:  # a failed micro-batch is reported, never dropped
            log.warning("generation failed for a micro-batch of %d: %r", len(prompts), exc)
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            return [Completion(text="", prompt_ids=p, error=repr(exc)) for p in prompts]
        completions = []
        for prompt, row in zip(prompts, rows, strict=True):
            response = self._cut(row)
            content = response[:-1] if response and response[-1] in self.stop_ids else response
            text = self.tokenizer.decode(content, skip_special_tokens=True)
            completions.append(Completion(text=text, prompt_ids=prompt, response_ids=response))
        return completions

    def _generate(
        self,
        prompts: list[list[int]],
        max_tokens: int,
        sampling: SamplingParams,
        seed: int | None,
    ) -> list[list[int]]:
        device = self.model.device
        width = max(len(p) for p in prompts)
        input_ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)
        attention_mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, prompt in enumerate(prompts):
            input_ids[row, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
            attention_mask[row, width - len(prompt) :] = 1
        config = self._generation_config(max_tokens, sampling)
        devices = [device] if device.type == "cuda" else []
        with torch.no_grad(), torch.random.fork_rng(devices=devices):
            if seed is not None:
                torch.manual_seed(seed)
            output = self.model.generate(
                input_ids=input_ids.to(device),
                attention_mask=attention_mask.to(device),
                generation_config=config,
            )
        return output[:, width:].tolist()

    def _generation_config(self, max_tokens: int, sampling: SamplingParams) -> GenerationConfig:
        common = {
            "max_new_tokens": max_tokens,
            "repetition_penalty": 1.0,
            "pad_token_id": self.pad_id,
            "eos_token_id": sorted(self.stop_ids),
        }
        if sampling.temperature <= 0:  # greedy; sampling-only flags left unset
            return GenerationConfig(do_sample=False, **common)
        return GenerationConfig(
            do_sample=True,
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            top_k=0,
            **common,
        )

    def _cut(self, row: list[int]) -> list[int]:
        """Response ids up to and including the first stop token; padding after it removed."""
        for position, token in enumerate(row):
            if token in self.stop_ids:
                return row[: position + 1]
            if token == self.pad_id:
                return row[:position]
        return row


def _pad_id(tokenizer: Any) -> int:
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    if pad is None:
        raise ValueError("the tokenizer has neither a pad nor an eos token; cannot left-pad")
    return int(pad)


def _stop_ids(model: Any, tokenizer: Any) -> frozenset[int]:
    """EOS ids of the tokenizer and of the model's generation config (Qwen lists two)."""
    ids: set[int] = set()
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(eos, int):
        ids.add(eos)
    elif eos is not None:
        ids.update(int(i) for i in eos)
    if not ids:
        raise ValueError("neither the tokenizer nor the generation config defines an eos token")
    return frozenset(ids)


def _resolve_dtype(dtype: str, device: str) -> torch.dtype | str:
    if dtype == "auto":
        return "auto" if device == "cuda" else torch.float32
    resolved = getattr(torch, dtype, None)
    if not isinstance(resolved, torch.dtype):
        raise ValueError(f"unknown dtype {dtype!r} (use 'auto', 'float32', 'bfloat16', ...)")
    return resolved
