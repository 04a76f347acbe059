"""The Mem-α toy's scripted engines: the noisy memorisation expert (the SFT teacher) and the
frozen reader that stands in for Qwen3-32B as the QA model and the content judge.

Both are ChatEngines driven by the real workflows: the expert answers `memorize`'s toy prompts,
the reader answers the QA step's requests (`memrepro.agents.memalpha.qa_request`) and the content
judge's (`memrepro.train.memalpha_rewards.content_judge_request`) with what a careful model would.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memrepro.agents.structured_memory import EPISODIC, SEMANTIC
from memrepro.engines.base import ChatRequest, Completion, SamplingParams, prompt_ids
from memrepro.toy.memalpha_task import insert_call
from memrepro.toy.task import asked_key, fact, parse_facts

# The expert's action per chunk besides the right one ("concise"): see memalpha_task.ACTIONS.
NOISE_ACTIONS = ("skip", "verbatim", "episodic")
SKIP_REPLY = "Done"
_CHUNK = re.compile(r"<new_chunk>\n(.*?)\n</new_chunk>", re.DOTALL)
_JUDGED = re.compile(r"^Analyze this (\w+) memory content:\n\n(.*)$", re.DOTALL)
UNKNOWN = "unknown"


@dataclass(frozen=True)
class MemAlphaExpertSettings:
    """Per chunk, the expert's chance of each noisy action (NOISE_ACTIONS) instead of the
    concise write; all 0: a clean expert."""

    skip: float = 0.0
    verbatim: float = 0.0
    episodic: float = 0.0

    def __post_init__(self) -> None:
        noise = {action: getattr(self, action) for action in NOISE_ACTIONS}
        if any(p < 0 for p in noise.values()) or sum(noise.values()) > 1:
            raise ValueError(f"expert: probabilities must be >= 0 and sum to <= 1, got {noise}")


class ScriptedMemorizer:
    """Writes each chunk's fact concisely into semantic memory, except that with the
    probabilities of `noise` it skips the chunk, stores it verbatim or files the fact as
    episodic. Completions carry the prompt ids HFEngine would build and response ids = the
    encoded text + eos (what SFT teaches)."""

    def __init__(self, tokenizer: Any, noise: MemAlphaExpertSettings, seed: int = 0) -> None:
        self.tokenizer = tokenizer
        self.noise = noise
        self.rng = random.Random(seed)

    def chat(self, requests: Sequence[ChatRequest], sampling: SamplingParams) -> list[Completion]:
        return [self._complete(request) for request in requests]

    def respond(self, chunk: str) -> str:
        (key, value), *_ = parse_facts(chunk)
        draw, action = self.rng.random(), "concise"
        for name in NOISE_ACTIONS:
            draw -= getattr(self.noise, name)
            if draw < 0:
                action = name
                break
        if action == "skip":
            return SKIP_REPLY
        if action == "verbatim":
            return insert_call(SEMANTIC, chunk.strip())
        store = EPISODIC if action == "episodic" else SEMANTIC
        return insert_call(store, fact(key, value).strip())

    def _complete(self, request: ChatRequest) -> Completion:
        found = _CHUNK.search(request.messages[-1]["content"])
        if found is None:
            raise ValueError(f"not a toy memorisation prompt: {request.messages[-1]!r}")
        text = self.respond(found[1])
        response = self.tokenizer.encode(text, add_special_tokens=False)
        return Completion(
            text=text,
            prompt_ids=prompt_ids(self.tokenizer, request),
            response_ids=[*response, self.tokenizer.eos_token_id],
        )


def read_answer(question: str, memory_prompt: str) -> str:
    """The QA model's reply: the value of the asked key's last fact in the rendered memory."""
    key = asked_key(question)
    values = [value for k, value in parse_facts(memory_prompt) if k == key]
    return values[-1] if values else UNKNOWN


def judge_reply(memory_type: str, content: str) -> str:
    """The content judge's verdict: semantic content is valid when it states a fact; episodic
    content never is here (Figure 9 asks for clear temporal information, no toy fact has it)."""
    valid = memory_type == SEMANTIC and bool(parse_facts(content))
    issues = [] if valid else ["no fact" if memory_type == SEMANTIC else "no time of the event"]
    verdict = {"VALID": valid, "ISSUES": issues, "EXPLANATION": "toy judge"}
    return f"```json\n{json.dumps(verdict)}\n```"


class ScriptedReader:
    """The frozen QA model and content judge: deterministic replies (`read_answer`,
    `judge_reply`) to the QA step's and the judge's requests."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer  # the QA step measures its prompt with it

    def chat(self, requests: Sequence[ChatRequest], sampling: SamplingParams) -> list[Completion]:
        return [Completion(text=self.respond(request)) for request in requests]

    def respond(self, request: ChatRequest) -> str:
        system, user = (message["content"] for message in request.messages)
        judged = _JUDGED.match(user)
        if judged is not None:
            return judge_reply(judged[1], judged[2])
        return read_answer(user, system)
