"""Secrets never reach anything the pipeline writes.

A secret is the value of one of the environment variables below (plus any named in
`MEMREPRO_SECRET_ENV`, comma-separated), the only place this project reads credentials from.
Endpoints may echo a key in an error body; every file writer (memrepro.data.io), the job's stderr
(its log) and the MLflow loader pass their text through `redact`. Text is cut in many places (a
reply at max_tokens, an error message at N characters), so `redact` also removes a cut secret:
any run of at least PARTIAL_SECRET_CHARS characters that starts a secret.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TextIO

SECRET_ENV_VARS = (
    "OPENAI_API_KEY",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "MLFLOW_TRACKING_PASSWORD",
    "MLFLOW_TRACKING_TOKEN",
    "WANDB_API_KEY",
)
EXTRA_ENV = "MEMREPRO_SECRET_ENV"
MIN_SECRET_CHARS = 8  # shorter values ("EMPTY", "1") are placeholders, and would mangle text
# a secret's start this long is redacted even when the rest was cut off; shorter starts are
# shared by every key of a kind ("sk-proj-", "hf_"), and tell nothing
PARTIAL_SECRET_CHARS = 12
REDACTED = "[REDACTED]"


def configured_secrets(environ: Mapping[str, str] | None = None) -> set[str]:
    """The secret values set in `environ` (default: the process environment)."""
    environ = os.environ if environ is None else environ
    names = [*SECRET_ENV_VARS, *filter(None, environ.get(EXTRA_ENV, "").split(","))]
    values = {environ.get(name.strip(), "") for name in names}
    return {v for v in values if len(v) >= MIN_SECRET_CHARS}


def redact(text: str, also: Sequence[str | None] = ()) -> str:
    """`text` with every configured secret (and each of `also`, e.g. a key passed as an argument)
    replaced by [REDACTED], and so is what is left of one that was cut (`redact_cut`); longest
    first, so a secret containing another goes whole."""
    secrets = configured_secrets() | {s for s in also if s and len(s) >= MIN_SECRET_CHARS}
    for secret in sorted(secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
        text = redact_cut(text, secret)
    return text


def redact_cut(text: str, secret: str) -> str:
    """`text` with every run that starts `secret` (PARTIAL_SECRET_CHARS characters or more, as
    long as it goes on matching) replaced by [REDACTED]."""
    head = secret[:PARTIAL_SECRET_CHARS]
    if len(head) < PARTIAL_SECRET_CHARS or head not in text:
        return text
    parts, start = [], 0
    while (found := text.find(head, start)) >= 0:
        end = found + len(head)
        while end < len(text) and end - found < len(secret) and text[end] == secret[end - found]:
            end += 1
        parts += [text[start:found], REDACTED]
        start = end
    return "".join([*parts, text[start:]])


class RedactingStream:
    """A text stream that redacts what is written to it (a job's stderr is its log file)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(redact(text))

    def __getattr__(self, name: str):  # flush, fileno, isatty, encoding, ...
        return getattr(self._stream, name)
