"""Progress of a long job as plain lines, never a progress bar's redraw codes: one line at the
start, then at most one every `every_s` seconds and one at the end, each on the console (stdout:
Snakemake shows a local job's, SLURM writes it to the job's output file) and in the job's log.

    hqa (rl-memagent-14b ruler_hqa@800): 40/128 samples (31 %), 0.21 samples/s, ETA 7 min
    · wave: 1,204 engine calls, 12 samples unfinished

Between waves, the engine calls of the current wave keep the line coming (`call`), so a wave of
long samples (hundreds of chunks each) is not silent for an hour.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TextIO

log = logging.getLogger(__name__)

EVERY_S = 10.0

# The progress of the loop now running in this context: engine-call ticks go to it
CURRENT: ContextVar[Progress | None] = ContextVar("memrepro_progress", default=None)


def plural(noun: str, n: int) -> str:
    """`noun` as it reads after a count of `n`: job/jobs, summary/summaries, batch/batches."""
    if n == 1:
        return noun
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "i", "o", "u"):
        return noun[:-1] + "ies"
    return noun + ("es" if noun.endswith(("s", "x", "ch", "sh")) else "s")


def quantity(n: int, noun: str) -> str:
    """'1 job', '2 jobs', '0 sources'."""
    return f"{n:,} {plural(noun, n)}"


@dataclass
class Progress:
    label: str
    total: int
    done: int = 0
    unit: str = "sample"
    every_s: float = EVERY_S
    clock: Callable[[], float] = time.monotonic
    out: TextIO | None = None  # None: sys.stdout as it is when a line is written
    calls: int = 0  # engine calls of the current wave
    unfinished: int = 0
    _started: float = field(init=False)
    _first: int = field(init=False)
    _last: float | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self._started, self._first = self.clock(), self.done

    def line(self) -> str:
        """`label: done/total units (pct), rate, ETA` (+ the current wave's engine calls)."""
        elapsed = self.clock() - self._started
        rate = (self.done - self._first) / elapsed if elapsed > 0 else 0.0
        left = self.total - self.done
        eta = "—" if rate <= 0 or left <= 0 else format_seconds(left / rate)
        pct = 100 * self.done / self.total if self.total else 100.0
        units = plural(self.unit, 2)
        text = (
            f"{self.label}: {self.done}/{self.total} {units} ({pct:.0f} %), "
            f"{rate:.2f} {units}/s, ETA {eta}"
        )
        if self.calls:
            text += f" · wave: {self.calls:,} engine calls, {self.unfinished} unfinished"
        return text

    def emit(self, force: bool = False) -> None:
        now = self.clock()
        if not force and self._last is not None and now - self._last < self.every_s:
            return
        self._last = now
        text = self.line()
        print(text, file=self.out or sys.stdout, flush=True)
        log.info(text)

    def advance(self, n: int) -> None:
        """`n` more units finished (a wave): the wave's call count starts again."""
        self.done += n
        self.calls = self.unfinished = 0
        self.emit(force=self.done >= self.total)

    def call(self, n_requests: int, n_unfinished: int) -> None:
        """One engine call of the current wave (run_batched's `on_step`)."""
        self.calls += 1
        self.unfinished = n_unfinished
        self.emit()


@contextmanager
def progress(label: str, total: int, done: int = 0, unit: str = "sample") -> Iterator[Progress]:
    """A Progress for the loop inside, its first line written at once, the current one here."""
    current = Progress(label, total, done, unit)
    current.emit(force=True)
    token = CURRENT.set(current)
    try:
        yield current
    finally:
        CURRENT.reset(token)


def on_engine_call(n_requests: int, n_unfinished: int) -> None:
    """`run_batched`'s `on_step`: a tick of the loop now running, if any."""
    current = CURRENT.get()
    if current is not None:
        current.call(n_requests, n_unfinished)


def format_seconds(seconds: float) -> str:
    """42 s, 7 min, 3.2 h."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
