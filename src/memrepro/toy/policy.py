"""The scripted memory policy (the SFT teacher), as a ChatEngine the real MemAgent workflow drives.

Memory turn: if the section holds the asked key's fact, memory := that fact; otherwise keep the
memory verbatim. Final turn: \\boxed{the value in memory} (a guessed digit when it holds none).
With `eps` > 0 the expert is noisy, in one of two ways (`noise`):
- "forget": it overlooks the needle with probability eps (keeps its memory), then guesses;
- "distract": on a section holding another key's fact it records that (wrong) fact with
  probability eps; recorded after the needle it loses the answer, before it it does no harm.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memrepro.engines.base import ChatRequest, Completion, SamplingParams
from memrepro.toy.task import VALUES, asked_key, fact, parse_facts

NOISE_KINDS = ("forget", "distract")


@dataclass(frozen=True)
class ExpertSettings:
    """The SFT teacher's noise: its error rate and kind (`memory_update`)."""

    eps: float = 0.3
    noise: str = "forget"  # "forget": overlooks the needle; "distract": records another fact

    def __post_init__(self) -> None:
        if not 0 <= self.eps <= 1:
            raise ValueError(f"expert.eps must be in [0, 1], got {self.eps}")
        if self.noise not in NOISE_KINDS:
            raise ValueError(
                f"expert.noise must be one of {', '.join(NOISE_KINDS)}, got {self.noise!r}"
            )


_FIELD = {
    name: re.compile(rf"<{name}>\s?\n(.*?)\n</{name}>", re.DOTALL)
    for name in ("problem", "memory", "section")
}


def memory_update(
    key: str,
    memory: str,
    section: str,
    rng: random.Random,
    eps: float,
    noise: str = "forget",
) -> str:
    """The expert's new memory after reading `section` for the question about `key`.

    Clean: the section's fact about `key` if it has one, else the old memory. Noise "forget":
    with probability eps the needle is overlooked (the old memory is kept); noise "distract":
    with probability eps a section without the needle has its (wrong) fact recorded.
    """
    facts = parse_facts(section)
    for fact_key, value in facts:
        if fact_key == key:
            if noise == "forget" and rng.random() < eps:
                return memory
            return fact(fact_key, value)
    if noise == "distract" and facts and rng.random() < eps:
        return fact(*facts[0])
    return memory


def final_answer(memory: str, rng: random.Random) -> str:
    """\\boxed{value} of the last fact in memory; a guessed value when memory holds none."""
    facts = parse_facts(memory)
    return f"\\boxed{{{facts[-1][1] if facts else rng.choice(VALUES)}}}"


def prompt_ids(tokenizer: Any, request: ChatRequest) -> list[int]:
    """The prompt token ids exactly as HFEngine builds them (chat template + generation prompt)."""
    text = tokenizer.apply_chat_template(
        list(request.messages), tokenize=False, add_generation_prompt=True
    )
    return tokenizer.encode(text, add_special_tokens=False)


class ScriptedEngine:
    """A ChatEngine answering MemAgent's prompts with the scripted policy.

    Completions carry prompt ids as HFEngine would build them and response ids = the encoded
    text + eos, i.e. what the model is taught to generate. Sampling parameters are ignored; the
    expert's noise comes from its own generator seeded with `seed`.
    """

    def __init__(
        self,
        tokenizer: Any,
        eps: float = 0.0,
        seed: int = 0,
        noise: str = "forget",
    ) -> None:
        if not 0 <= eps <= 1:
            raise ValueError(f"the expert's eps must be in [0, 1], got {eps}")
        if noise not in NOISE_KINDS:
            raise ValueError(f"the expert's noise must be one of {NOISE_KINDS}, got {noise!r}")
        self.tokenizer = tokenizer
        self.eps = eps
        self.noise = noise
        self.rng = random.Random(seed)

    def chat(self, requests: Sequence[ChatRequest], sampling: SamplingParams) -> list[Completion]:
        return [self._complete(request) for request in requests]

    def respond(self, prompt: str) -> str:
        """The expert's response text to one MemAgent prompt (memory update or final answer)."""
        fields = {name: pattern.search(prompt) for name, pattern in _FIELD.items()}
        if fields["problem"] is None or fields["memory"] is None:
            raise ValueError(f"not a MemAgent prompt: {prompt[:80]!r}...")
        memory = fields["memory"][1]
        if fields["section"] is None:
            return final_answer(memory, self.rng)
        key = asked_key(fields["problem"][1])
        return memory_update(key, memory, fields["section"][1], self.rng, self.eps, self.noise)

    def _complete(self, request: ChatRequest) -> Completion:
        text = self.respond(request.messages[-1]["content"])
        response = self.tokenizer.encode(text, add_special_tokens=False)
        return Completion(
            text=text,
            prompt_ids=prompt_ids(self.tokenizer, request),
            response_ids=[*response, self.tokenizer.eos_token_id],
        )
