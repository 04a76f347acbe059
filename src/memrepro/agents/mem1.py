"""MEM1 as Mem-α's baseline runs it: one generation per chunk that rewrites a `<think>` summary.

As the official MEM1 code (MEM1/Mem1/inference/data_pipelines.py, models.py): the
user message is the instruction below (task = the instance's task prompt) plus the chunk; the
previous memory, `<think>…</think>` with its tags, is prefilled as the assistant turn the model
continues (empty before the first chunk: a plain new assistant turn, which is the same prompt).
The new memory is the first `<think>…</think>` of the continuation, inside stripped; a response
without one keeps the old memory. The official stop strings (`</search>`, `</answer>`) only end
generation early: text after the first think block is never used, so they are not needed here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from memrepro.agents.driver import Workflow
from memrepro.engines.base import ChatRequest

MEM1_INSTRUCTION = (
    "You will see a sequential list of chunks. Your task is described as:\n{task}\n"
    "You need to memorize the important information in the chunks. At each step, you can see "
    "the new chunk in <new_chunk> ... </new_chunk> and previous summary in <think> ... </think>. "
    "Then, you should conduct reasoning, and then update a concise, cumulative summary with "
    "essential information inside <think> </think>. This is your persistent memory and should "
    "include all important information from previous <think> </think> and <new_chunk> "
    "</new_chunk>."
)
NEW_CONTEXT = "\n\nThis is the new context:\n"
_THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL)


def mem1_request(task: str, chunk: str, memory: str, max_tokens: int) -> ChatRequest:
    """One chunk's step: the instruction and chunk, continuing the previous memory if any."""
    user = {"role": "user", "content": MEM1_INSTRUCTION.format(task=task) + NEW_CONTEXT + chunk}
    if not memory:
        return ChatRequest((user,), max_tokens)
    prefill = {"role": "assistant", "content": memory}
    return ChatRequest((user, prefill), max_tokens, continue_final=True)


def think_state(text: str) -> str | None:
    """The first `<think>…</think>` of a response, inside stripped, tags kept; None if absent."""
    found = _THINK.search(text)
    return None if found is None else f"<think>{found.group(1).strip()}</think>"


def mem1(task: str, chunks: Iterable[str], max_tokens: int) -> Workflow:
    """MEM1 over an instance's chunks; returns the final memory ("" if no step wrote one)."""
    memory = ""
    for chunk in chunks:
        completion = yield mem1_request(task, chunk, memory, max_tokens)
        memory = think_state(completion.text) or memory
    return memory
