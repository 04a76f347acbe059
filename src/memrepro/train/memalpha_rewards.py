"""Mem-α's GRPO reward (paper §3, and its official code): four terms, one scalar per chunk.

- r1, QA correctness of the final memory: the mean over an instance's questions of the training
  metric (`memrepro.scoring.memalpha.score_answer(..., protocol="train")`), answered by the frozen
  QA step; a trajectory-level term.
- r2_t, tool-call format: the share of chunk t's calls that executed and were not skipped (a
  duplicate insert is a failure); a chunk without calls scores 0.
- r3, compression: 1 − l_m / l_c, the final memory's tokens over the chunks' (o200k, as the
  official code counts both); trajectory-level, negative when the memory outgrows the input.
- r4_t, content: the mean over *every* call of chunk t of a 0/1 verdict of the judge model on
  the written content (Figures 7–9); only inserts and updates with a known memory type and
  non-empty text content are judged, every other call scores 0; a chunk without calls scores 0.

Chunk t's row gets r1 + β·r3 + r2_t + γ·r4_t on its last response token (`naive.py`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from memrepro.agents.memalpha_tools import ToolCall, ToolResult, parse_arguments
from memrepro.engines.base import ChatRequest

_VERDICT_FORMAT = (
    "Respond ONLY with a JSON code block in this exact format:\n```json\n{\n"
    '  "VALID": true/false,\n  "ISSUES": [list any problems found],\n'
    '  "EXPLANATION": "brief explanation of the assessment"\n}\n```'
)
# memory_server.py `_get_analysis_prompt` (the paper's Figures 7, 9 and 8), verbatim
CONTENT_JUDGE_PROMPTS = {
    "core": (
        "You are an expert memory analyst. Analyze the quality of core memory content.\n\n"
        "The core memory is invalid if any of the following meets:\n"
        '(1) The literal content "core memory" appears in the memory such as "This is core '
        'memory ...", "The core memory has been updated ...".\n'
        '(2) The core memory is apparently a placeholder such as "Here we save the summary" '
        'while not stating what the "summary" is, "Here are some rules" and not stating what '
        'the "rules" are.\n\n'
        "Otherwise, the core memory is valid.\n\n" + _VERDICT_FORMAT
    ),
    "semantic": (
        "You are an expert memory analyst. Analyze the quality of semantic memory content.\n\n"
        "Semantic memory should contain:\n"
        "- Information or Knowledge about somebody or something\n"
        "- Definitions, theories, principles, or explanations\n"
        "- How-to knowledge or procedural information\n"
        "- Research findings or established facts\n\n"
        "Two other memories are Core memory (User Personalities) and Episodic memory (User "
        "Experiences). The information not suitable for these two memories should be "
        "considered as semantic memory.\n\n" + _VERDICT_FORMAT
    ),
    "episodic": (
        "You are an expert memory analyst. Analyze the quality of episodic memory content.\n\n"
        "Episodic memory should contain:\n"
        "- Experiences or events\n"
        "- Clear temporal information (when it happened)\n"
        "- Contextual details (what happened)\n\n" + _VERDICT_FORMAT
    ),
}
JUDGED_TOOLS = {"new_memory_insert": "content", "memory_update": "new_content"}
_FENCED_OBJECT = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)


def tool_call_reward(results: Sequence[ToolResult]) -> float:
    """r2_t: the share of a chunk's calls that succeeded (0 without calls)."""
    return sum(r.succeeded for r in results) / len(results) if results else 0.0


def compression_reward(memory_tokens: int, chunk_tokens: int) -> float:
    """r3 = 1 − l_m / l_c."""
    if chunk_tokens <= 0:
        raise ValueError(f"an instance with {chunk_tokens} chunk tokens has no compression ratio")
    return 1.0 - memory_tokens / chunk_tokens


def judged_content(call: ToolCall) -> tuple[str, str] | None:
    """(memory type without its `_memory` suffix, written text) of a call the judge sees: an
    insert or update whose arguments parse to an object with a known type and non-empty text
    content; None for every other call (it scores 0)."""
    field = JUDGED_TOOLS.get(call.name)
    if field is None or call.malformed is not None:
        return None
    try:
        arguments = parse_arguments(call)
    except ValueError:
        return None
    if not isinstance(arguments, dict):
        return None
    memory_type = str(arguments.get("memory_type", "")).replace("_memory", "")
    content = arguments.get(field)
    if memory_type not in CONTENT_JUDGE_PROMPTS or not isinstance(content, str):
        return None
    return (memory_type, content) if content.strip() else None


def content_judge_request(memory_type: str, content: str, max_tokens: int) -> ChatRequest:
    """The judge's conversation for one written content (thinking off, as the server renders)."""
    messages = (
        {"role": "system", "content": CONTENT_JUDGE_PROMPTS[memory_type]},
        {"role": "user", "content": f"Analyze this {memory_type} memory content:\n\n{content}"},
    )
    return ChatRequest(messages, max_tokens, enable_thinking=False)


def content_verdict(reply: str) -> float:
    """1 iff the reply holds a ```json block of strict JSON whose VALID is the boolean true,
    ISSUES a list and EXPLANATION a string (the batch endpoint's rule); else 0."""
    if "```json" not in reply:
        return 0.0
    found = _FENCED_OBJECT.search(reply)
    if found is None:
        return 0.0
    try:
        verdict: Any = json.loads(found.group(1).strip())
    except json.JSONDecodeError:
        return 0.0
    if not isinstance(verdict, dict):
        return 0.0
    well_formed = (
        isinstance(verdict.get("VALID"), bool)
        and isinstance(verdict.get("ISSUES"), list)
        and isinstance(verdict.get("EXPLANATION"), str)
    )
    return float(well_formed and verdict["VALID"])


def content_reward(verdicts: Sequence[float | None]) -> float:
    """r4_t from one verdict per call of the chunk (None: not judged, counts 0); 0 without
    calls."""
    return sum(v or 0.0 for v in verdicts) / len(verdicts) if verdicts else 0.0


def step_rewards(
    r1: float, r3: float, r2: Sequence[float], r4: Sequence[float], beta: float, gamma: float
) -> list[float]:
    """Each chunk row's scalar: r1 + β·r3 + r2_t + γ·r4_t."""
    if len(r2) != len(r4):
        raise ValueError(f"{len(r2)} tool-call rewards for {len(r4)} content rewards")
    return [
        r1 + beta * r3 + format_t + gamma * content_t
        for format_t, content_t in zip(r2, r4, strict=True)
    ]
