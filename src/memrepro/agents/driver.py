"""Drive many agent workflows at once, batching every workflow's current step into one engine call.

A workflow is a generator: it yields a `ChatRequest`, receives the `Completion`, and finally
returns its answer (the generator's return value). Each yielded request is one *conversation*;
a `Rollout` is the list of a workflow's conversations, final answer last.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from memrepro.engines.base import ChatEngine, ChatRequest, Completion, SamplingParams

log = logging.getLogger(__name__)

Workflow = Generator[ChatRequest, Completion, str]


@dataclass
class Conversation:
    request: ChatRequest
    completion: Completion


@dataclass
class Rollout:
    conversations: list[Conversation] = field(default_factory=list)
    answer: str = ""
    failed: bool = False  # a request failed; the workflow was abandoned (the official eval's '')

    @property
    def final(self) -> Conversation:
        return self.conversations[-1]


def run_batched(
    workflows: Sequence[Workflow],
    engine: ChatEngine,
    sampling: SamplingParams,
    on_step: Callable[[int, int], None] | None = None,
) -> list[Rollout]:
    """Run all workflows to completion; each engine call carries every unfinished workflow's step.

    `on_step(n_requests, n_unfinished)` is called after each engine call (progress reporting).
    A failed request ends its workflow with `failed=True` and an empty answer. A reply longer
    than its request's `max_tokens` (an OpenAI-compatible server may ignore the limit) is cut to
    it: a memory never outgrows its budget.
    """
    rollouts = [Rollout() for _ in workflows]
    pending: dict[int, ChatRequest] = {}
    for i, workflow in enumerate(workflows):
        _advance(i, workflow, None, rollouts, pending)
    while pending:
        ids = list(pending)
        requests = [pending.pop(i) for i in ids]
        completions = engine.chat(requests, sampling)
        if len(completions) != len(requests):
            raise RuntimeError(
                f"engine returned {len(completions)} completions for {len(requests)} requests"
            )
        checked = [
            within_budget(request, completion, engine.tokenizer)
            for request, completion in zip(requests, completions, strict=True)
        ]
        if cut := sum(a is not b for a, b in zip(checked, completions, strict=True)):
            log.warning("%d replies exceeded their max_tokens (a server ignoring it?): cut", cut)
        for i, request, completion in zip(ids, requests, checked, strict=True):
            rollouts[i].conversations.append(Conversation(request, completion))
            if completion.failed:
                workflows[i].close()
                rollouts[i].failed = True
            else:
                _advance(i, workflows[i], completion, rollouts, pending)
        if on_step is not None:
            on_step(len(requests), len(pending))
    return rollouts


def within_budget(request: ChatRequest, completion: Completion, tokenizer: Any) -> Completion:
    """`completion` cut to the request's `max_tokens` tokens if it is longer."""
    ids = completion.response_ids
    if completion.failed or len(ids) <= request.max_tokens:
        return completion
    kept = ids[: request.max_tokens]
    return replace(
        completion, text=tokenizer.decode(kept, skip_special_tokens=True), response_ids=kept
    )


def _advance(
    i: int,
    workflow: Workflow,
    completion: Completion | None,
    rollouts: list[Rollout],
    pending: dict[int, ChatRequest],
) -> None:
    try:
        pending[i] = workflow.send(completion)
    except StopIteration as stop:
        rollouts[i].answer = stop.value or ""
