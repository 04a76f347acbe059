"""ChatEngine over any OpenAI-compatible chat endpoint (`vllm serve`, hosted APIs).

The official evaluation served its models this way (MemAgent's official code).
The URL and key come from `MEMREPRO_OPENAI_BASE_URL` / `OPENAI_API_KEY` unless given.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
from collections.abc import Sequence
from typing import Any

from memrepro.data.io import storable
from memrepro.engines.base import ChatRequest, Completion, SamplingParams, prompt_ids
from memrepro.models import load_tokenizer
from memrepro.secrets import redact

log = logging.getLogger(__name__)

BASE_URL_ENV = "MEMREPRO_OPENAI_BASE_URL"
API_KEY_ENV = "OPENAI_API_KEY"
# Client errors that no retry can fix (bad request, auth, not found, unprocessable).
NON_RETRYABLE_STATUS = frozenset({400, 401, 403, 404, 422})
# Seconds one request may take (the client's default is 600): a long-context answer from a busy
# server takes minutes, a dead one must not hold a job for (1 + max_retries) x 10 minutes.
DEFAULT_TIMEOUT_S = 300.0
# a token decodes to a few characters (rarely 20); a reply longer than this per allowed token is
# not a model's reply and is cut before it is tokenised
MAX_REPLY_CHARS_PER_TOKEN = 32


class OpenAIEngine:
    """Concurrent chat completions with retries; a request that still fails comes back failed.

    Token ids are not returned by the chat API: `prompt_ids` is the local chat-templated prompt
    and `response_ids` the local re-tokenisation of the text, both with the tokenizer loaded from
    `tokenizer_path` (which must match the served model).

    `vllm_server` (default) means the endpoint is vLLM's: chat-template switches and prefill
    continuation travel in the body as vLLM reads them. A hosted API (gpt-4.1-mini) has neither:
    the switches are dropped (they configure a chat template it does not have) and a request to
    continue a prefilled turn is refused.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        concurrency: int = 64,
        max_retries: int = 3,
        tokenizer_path: str | None = None,
        retry_delay: float = 1.0,
        client: Any | None = None,
        vllm_server: bool = True,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self.model = model
        self.timeout_s = timeout_s
        self.vllm_server = vllm_server
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.retry_delay = retry_delay
        self.base_url = base_url or os.environ.get(BASE_URL_ENV)
        self.api_key = api_key or os.environ.get(API_KEY_ENV)
        if client is None:
            if not self.base_url:
                raise ValueError(f"no OpenAI base URL: pass base_url or set {BASE_URL_ENV}")
            if importlib.util.find_spec("openai") is None:
                raise ImportError("the openai engine needs the `openai` package (memrepro[openai])")
        self.client = client
        self.tokenizer = load_tokenizer(tokenizer_path or model)

    def chat(self, requests: Sequence[ChatRequest], sampling: SamplingParams) -> list[Completion]:
        if not self.vllm_server and any(r.continue_final for r in requests):
            raise ValueError(
                f"{self.model}: a hosted API cannot continue a prefilled assistant turn "
                "(continue_final needs a vLLM server: engine vllm_server true)"
            )
        return asyncio.run(self._chat_all(requests, sampling))

    async def _chat_all(
        self, requests: Sequence[ChatRequest], sampling: SamplingParams
    ) -> list[Completion]:
        # An async client is bound to the event loop it first ran in: one per call unless injected.
        client = self.client if self.client is not None else self._new_client()
        semaphore = asyncio.Semaphore(self.concurrency)

        async def one(index: int, request: ChatRequest) -> Completion:
            async with semaphore:
                seed = None if sampling.seed is None else sampling.seed + index
                return await self._chat_one(client, request, sampling, seed)

        try:
            return list(await asyncio.gather(*(one(i, r) for i, r in enumerate(requests))))
        finally:
            if client is not self.client:
                await client.close()

    async def _chat_one(
        self, client: Any, request: ChatRequest, sampling: SamplingParams, seed: int | None
    ) -> Completion:
        messages = list(request.messages)
        prompt = prompt_ids(self.tokenizer, request)
        options: dict[str, Any] = {
            "max_tokens": request.max_tokens,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
        }
        extra: dict[str, Any] = {}  # vLLM's server reads these from the body
        if self.vllm_server and request.template_options():
            extra["chat_template_kwargs"] = request.template_options()
        if request.continue_final:
            extra.update(request.prompt_end())
        if extra:
            options["extra_body"] = extra
        if seed is not None:
            options["seed"] = seed
        attempt = 0
        while True:
            try:
                response = await client.chat.completions.create(
                    model=self.model, messages=messages, **options
                )
            except Exception as exc:
                retryable = getattr(exc, "status_code", None) not in NON_RETRYABLE_STATUS
                if not retryable or attempt == self.max_retries:
                    error = redact(repr(exc), [self.api_key])  # a body may echo the key
                    log.warning("request failed after %d attempt(s): %s", attempt + 1, error)
                    return Completion(text="", prompt_ids=prompt, error=error)
                await asyncio.sleep(self.retry_delay * 2**attempt)
                attempt += 1
                continue
            text = response_text(response)
            if text is None:
                # redacted before it is cut: a cut key would no longer match whole
                error = f"malformed response: {redact(str(response), [self.api_key])[:500]}"
                log.warning("request failed: %s", error)
                return Completion(text="", prompt_ids=prompt, error=error)
            text = bounded_reply(text, request.max_tokens)
            response_ids = self.tokenizer.encode(text, add_special_tokens=False)
            return Completion(text=text, prompt_ids=prompt, response_ids=response_ids)

    def _new_client(self) -> Any:
        from openai import AsyncOpenAI  # lazy: an optional dependency

        # Local servers (vllm serve) accept any key; the client insists on a non-empty one.
        # Retries are ours (with backoff and failure accounting), not the client's.
        return AsyncOpenAI(
            base_url=self.base_url,
            api_key=self.api_key or "EMPTY",
            max_retries=0,
            timeout=self.timeout_s,
        )


def bounded_reply(text: str, max_tokens: int) -> str:
    """`text` cut to MAX_REPLY_CHARS_PER_TOKEN x max_tokens characters: more than a model's
    max_tokens can say, but no runaway endpoint's megabytes reach the tokenizer or the files."""
    limit = MAX_REPLY_CHARS_PER_TOKEN * max_tokens
    if len(text) <= limit:
        return text
    log.warning(
        "a reply of %d characters for max_tokens=%d: cut to %d", len(text), max_tokens, limit
    )
    return text[:limit]


def response_text(response: Any) -> str | None:
    """The first choice's text, storable as UTF-8 (a lone surrogate becomes U+FFFD); None for a
    response without one (no choices, content that is not text)."""
    try:
        content = response.choices[0].message.content
    except (AttributeError, IndexError, TypeError):
        return None
    if content is None:
        return ""
    return storable(content) if isinstance(content, str) else None
