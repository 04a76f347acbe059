"""System kinds, one module each, registered by name (the config's `kind`): what each
contributes to an evaluation job is a `SystemKind` (memrepro.systems.base). Adding a kind is one
module here, its entry below, and its block in the config schema."""

from __future__ import annotations

from memrepro.systems import (
    closedbook,
    fullcontext,
    longcontext,
    mem0,
    mem1,
    memagent,
    memalpha,
    oracle,
    rag,
)
from memrepro.systems.base import SystemKind

KINDS: dict[str, SystemKind] = {
    module.KIND.name: module.KIND
    for module in (
        memagent,
        longcontext,
        rag,
        memalpha,
        mem1,
        mem0,
        closedbook,
        oracle,
        fullcontext,
    )
}


def system_kind(name: str) -> SystemKind:
    """The registered kind `name`; an unknown one names the known ones."""
    if name not in KINDS:
        raise ValueError(f"unknown system kind {name!r}; known: {', '.join(KINDS)}")
    return KINDS[name]
