"""Drop questions a model answers without the context (MemAgent's official code: filter.py +
filter2.py).

Every question is asked alone, `n_samples` times, to every engine (officially Qwen2.5-7B base and
Instruct, temperature 1.0, top_p 0.7, 512 tokens). A row is dropped if ANY engine produced, in
any sample, either a correct last `\\boxed{}` answer or a response containing a gold answer
(lowercased substring). Failed requests count as "not answered" and are reported. The boxed
criterion is the official verifier by default (`memrl.scoring.verifier`, `verifier="extended"`
for ours).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial

from memrl.agents.memagent import NO_CONTEXT_PROMPT
from memrl.engines.base import ChatEngine, ChatRequest, SamplingParams
from memrl.scoring.metrics import contains_any
from memrl.scoring.verifier import DEFAULT_VERIFIER, Verifier, boxed_reward, check_verifier

FILTER_SAMPLING = SamplingParams(temperature=1.0, top_p=0.7)


def filter_flags(verifier: Verifier = DEFAULT_VERIFIER) -> dict[str, Callable[..., float]]:
    """The drop criteria by name: (response, answers) -> score; > 0 drops the row."""
    boxed = partial(boxed_reward, verifier=check_verifier(verifier))
    return {"boxed": boxed, "contains": contains_any}


def no_context_request(question: str, max_tokens: int) -> ChatRequest:
    content = NO_CONTEXT_PROMPT.format(question=question)
    return ChatRequest(messages=({"role": "user", "content": content},), max_tokens=max_tokens)


def filter_questions(
    rows: Sequence[dict],
    engines: Mapping[str, ChatEngine],
    *,
    n_samples: int = 2,
    sampling: SamplingParams = FILTER_SAMPLING,
    max_tokens: int = 512,
    keep: int | None = None,
    verifier: Verifier = DEFAULT_VERIFIER,
) -> tuple[list[dict], dict]:
    """Return the rows (with `input` and `answers`) no engine answers without context, in order,
    cut to the first `keep`, and a report of what was dropped and why.

    Each engine gets one batched `chat` call holding every row's request `n_samples` times.
    `verifier` ("official" | "extended") scores the boxed criterion.
    """
    flags = filter_flags(verifier)
    dropped = [False] * len(rows)
    dropped_by: dict[str, int] = {}
    n_failed = 0
    for name, engine in engines.items():
        requests = [
            no_context_request(row["input"], max_tokens) for row in rows for _ in range(n_samples)
        ]
        completions = engine.chat(requests, sampling)
        if len(completions) != len(requests):
            raise RuntimeError(
                f"engine {name!r} returned {len(completions)} completions "
                f"for {len(requests)} requests"
            )
        n_failed += sum(c.failed for c in completions)
        counts = dict.fromkeys(flags, 0)
        for r, row in enumerate(rows):
            samples = completions[r * n_samples : (r + 1) * n_samples]
            texts = [c.text for c in samples if not c.failed]
            for flag, score in flags.items():
                if any(score(text, row["answers"]) > 0 for text in texts):
                    counts[flag] += 1
                    dropped[r] = True
        dropped_by.update({f"{name}/{flag}": k for flag, k in counts.items()})
    survivors = [row for row, d in zip(rows, dropped, strict=True) if not d]
    kept = survivors if keep is None else survivors[:keep]
    report = {
        "n_in": len(rows),
        "n_kept": len(kept),
        "n_dropped": sum(dropped),
        "n_survivors": len(survivors),
        "dropped_by": dropped_by,
        "n_failed_requests": n_failed,
        "kept_limit": keep,
        "verifier": verifier,
    }
    return kept, report
