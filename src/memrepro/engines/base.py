"""The one protocol every inference engine implements: batched chat generation + its tokenizer.

Agents and trainers only ever see this module; they never import an engine's internals.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

Message = dict[str, str]  # {"role": "user" | "system" | "assistant", "content": str}


@dataclass(frozen=True)
class SamplingParams:
    """Sampling shared by every request of one engine call (the official eval: 0.7 / 0.95)."""

    temperature: float = 0.7
    top_p: float = 0.95
    seed: int | None = None


@dataclass(frozen=True)
class ChatRequest:
    """One independent conversation turn: a fresh context, answered by one completion."""

    messages: tuple[Message, ...]
    max_tokens: int
    # Qwen3's chat-template switch (`enable_thinking`); None leaves the template's default.
    enable_thinking: bool | None = None
    # The last message is an assistant turn the completion continues (a prefill, as MEM1
    # feeds back its memory); the completion's text is the continuation alone.
    continue_final: bool = False

    def __post_init__(self) -> None:
        if self.continue_final and (not self.messages or self.messages[-1]["role"] != "assistant"):
            raise ValueError("continue_final needs an assistant message last")

    def template_options(self) -> dict[str, Any]:
        """Keyword options for `apply_chat_template` / vLLM's `chat_template_kwargs`."""
        return {} if self.enable_thinking is None else {"enable_thinking": self.enable_thinking}

    def prompt_end(self) -> dict[str, bool]:
        """How the templated prompt ends: a new assistant turn, or the open final message
        (`apply_chat_template`'s, vLLM's and vLLM's server's keywords alike)."""
        return {
            "add_generation_prompt": not self.continue_final,
            "continue_final_message": self.continue_final,
        }


def prompt_ids(tokenizer: Any, request: ChatRequest) -> list[int]:
    """The request's chat-templated prompt in `tokenizer`'s ids, as the engines render it."""
    text = tokenizer.apply_chat_template(
        list(request.messages),
        tokenize=False,
        **request.prompt_end(),
        **request.template_options(),
    )
    return tokenizer.encode(text, add_special_tokens=False)


def prompt_length(tokenizer: Any) -> Callable[[ChatRequest], int]:
    """A request's prompt length in `tokenizer`'s ids (`prompt_ids`): what a prompt cap measures."""
    return lambda request: len(prompt_ids(tokenizer, request))


@dataclass
class Completion:
    """What came back for one request. A failed request has `error` set and empty text."""

    text: str
    prompt_ids: list[int] = field(default_factory=list)  # chat-templated prompt, as generated from
    response_ids: list[int] = field(default_factory=list)
    error: str | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None


class ChatEngine(Protocol):
    """Batched chat generation. `chat` returns one Completion per request, in request order."""

    tokenizer: Any  # a Hugging Face tokenizer (encode/decode/apply_chat_template)

    def chat(
        self, requests: Sequence[ChatRequest], sampling: SamplingParams
    ) -> list[Completion]: ...
