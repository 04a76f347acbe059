"""Engines for the Mem-α tests: the ChatEngine protocol, answered by a script or a rule."""

from __future__ import annotations

import json
from collections.abc import Callable

from memrepro.agents.memalpha_tools import ARGS, FUNCTION
from memrepro.engines.base import Completion

JUDGE_PREFIX = "I will give you a question"  # the LongMemEval judge prompt's first words
VALID = '```json\n{"VALID": true, "ISSUES": [], "EXPLANATION": "fine"}\n```'  # an r4 verdict


def words(text: str) -> int:
    """A memory token counter: one token per word."""
    return len(text.split())


def call(name: str, **arguments: str) -> str:
    """A tool call as the policy writes it (Qwen-Agent's function-call format)."""
    return f"{FUNCTION}: {name}\n{ARGS}: {json.dumps(arguments)}\n"


class WordTokenizer:
    """One token per whitespace-separated word; a chat template of "<role> content" words plus
    an assistant header (one token per role marker)."""

    def encode(self, text, add_special_tokens=False):
        return text.split()

    def decode(self, ids, skip_special_tokens=False):
        return " ".join(ids)

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True, **_):
        ids = [t for m in messages for t in [f"<{m['role']}>", *m["content"].split()]]
        return " ".join(ids + (["<assistant>"] if add_generation_prompt else []))


class Replying:
    """Replies from a script, in order; records every request."""

    tokenizer = WordTokenizer()

    def __init__(self, replies):
        self.replies, self.requests = iter(replies), []

    def chat(self, requests, sampling):
        self.requests += requests
        return [Completion(next(self.replies)) for _ in requests]


class RuleQA:
    """Answers each request by `reply(last message)` (a text, or a Completion such as a failed
    one); says "yes" to the LongMemEval judge; records every request."""

    tokenizer = WordTokenizer()

    def __init__(self, reply: Callable[[str], str | Completion]):
        self.reply, self.requests = reply, []

    def chat(self, requests, sampling):
        self.requests += requests
        out = []
        for request in requests:
            text = request.messages[-1]["content"]
            answer = "yes" if text.startswith(JUDGE_PREFIX) else self.reply(text)
            out.append(answer if isinstance(answer, Completion) else Completion(answer))
        return out


class QAAndJudge:
    """The frozen QA model and r4's judge: answers "Caldre" when the memory shows it, judges
    every content valid; records every request."""

    def __init__(self, tokenizer=None):
        self.tokenizer, self.requests = tokenizer or WordTokenizer(), []

    def chat(self, requests, sampling):
        self.requests += requests
        replies = []
        for request in requests:
            system = request.messages[0]["content"]
            if system.startswith("You are an expert memory analyst"):
                replies.append(Completion(VALID))
            else:
                replies.append(Completion("Caldre" if "Caldre" in system else "unknown"))
        return replies
