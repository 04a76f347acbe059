"""The turns of a MemAgent sample (one conversation per chunk read, then the answer) and the
papers' turn counts set against their arithmetic (the case studies' pages)."""

from __future__ import annotations

# The papers' turn counts, a turn being one conversation (a memory update, or the final answer),
# each at its context length in tokens, with MemAgent's 5,000-token chunks: (statement, tokens,
# the turns it allows)
PAPER_CHUNK_TOKENS = 5000
PAPER_TURNS = (
    ("seed 000 (NIAH): more than 100 turns at 512K", 524_288, range(101, 10**6)),
    ("seed 001: 5 to 7 turns for a training context of about 32K", 32_768, range(5, 8)),
)


def turns(updates: int) -> int:
    """A sample's turns: one conversation per chunk read (a memory update), then the answer."""
    return updates + 1


def paper_turns(chunk_tokens: int = PAPER_CHUNK_TOKENS) -> list[str]:
    """Each of the papers' turn counts set against the arithmetic at its length: the updates
    (one a chunk), with the answer and without it."""
    lines = []
    for statement, tokens, allowed in PAPER_TURNS:
        updates = -(-tokens // chunk_tokens)
        readings = {"with the answer": turns(updates), "updates alone": updates}
        held = [name for name, n in readings.items() if n in allowed]
        verdict = f"holds counting {' or '.join(held)}" if held else "holds in no reading"
        lines.append(
            f"{statement}: {tokens:,} tokens in {chunk_tokens:,}-token chunks make {updates} "
            f"memory updates and {turns(updates)} turns with the answer; it {verdict}."
        )
    return lines
