"""The haystack-size search and the sample draws every family shares: the fork's linear search
or HEAD's binary one, evaluated with few token counts."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from memrepro.data.ruler.tasks import MEMAGENT_CHUNKS, Sample, Tokenizer, numbered_words


def _count(tokenizer: Tokenizer, text: str) -> int:
    return len(tokenizer.encode(text, add_special_tokens=False))


_MAX_PROBES = 100


def search_size(
    measure: Callable[[int], int], budget: int, lo: int, step: int, hi: int, strict: bool = False
) -> int | None:
    """The largest size on the grid lo, lo+step, ... <= hi whose measure fits the budget.

    Fits means measure <= budget (< when `strict`). None when `lo` already does not fit. The
    measure is assumed to grow with the size (a token count of a haystack of that size): the
    linear scan of MemAgent's fork and the binary search of RULER HEAD then both return this
    size. Each step extrapolates the crossing from the measured counts and also measures the next
    grid point, so a near-linear measure settles in a few counts; bisection every other step
    bounds the worst case.
    """

    def fits(m: int) -> bool:
        return m < budget if strict else m <= budget

    top = lo + max(0, hi - lo) // step * step
    seen: dict[int, int] = {}

    def probe(n: int) -> int:
        if n not in seen:
            seen[n] = measure(n)
        return seen[n]

    def snap(x: float) -> int:
        return min(top, max(lo, lo + math.floor((x - lo) / step) * step))

    if not fits(probe(lo)):
        return None
    good, bad = lo, None
    for attempt in range(_MAX_PROBES):
        if good >= top or (bad is not None and bad - good <= step):
            return good
        if bad is None:
            below = [n for n in seen if n < good and fits(seen[n])]
            base = max(below) if below else 0
            slope = (seen[good] - (seen[base] if below else 0)) / (good - base)
            cand = snap(good + (budget - seen[good]) / max(slope, 1e-9))
            cand = max(cand, good + step)
        elif attempt % 2:
            cand = snap((good + bad) / 2)
        else:
            slope = (seen[bad] - seen[good]) / (bad - good)
            cand = snap(good + (budget - seen[good]) / max(slope, 1e-9))
        cand = max(good + step, cand if bad is None else min(cand, bad - step))
        if fits(probe(cand)):
            good = cand
            nxt = cand + step
            if nxt <= top and (bad is None or nxt < bad):
                good, bad = (nxt, bad) if fits(probe(nxt)) else (good, nxt)
        else:
            bad = cand
            prev = cand - step
            if prev > good:
                good, bad = (prev, bad) if fits(probe(prev)) else (good, prev)
    raise RuntimeError(f"size search did not converge after {_MAX_PROBES} counts")


def too_small(task: str, length: int, detail: str) -> ValueError:
    return ValueError(f"RULER {task} @ {length}: length too small for the task ({detail})")


@dataclass
class Build:
    """Everything one (task, length, variant) build shares."""

    task: str
    variant: str
    length: int
    config: dict[str, Any]
    tokenizer: Tokenizer
    seed: int

    @property
    def ttg(self) -> int:
        return self.config["tokens_to_generate"]

    def count(self, text: str) -> int:
        return _count(self.tokenizer, text)

    def incremental(self, essay: bool) -> int:
        """Units added per step of the fork's scan / removed per over-budget retry (NIAH)."""
        if essay:
            return 500
        return 5 if self.length < 4096 else 25


def _chunks(n_samples: int, seed: int, variant: str) -> Iterator[tuple[int, range]]:
    """(seed, global sample indices) per chunk: MemAgent's 8 chunks seeded seed+i, or one."""
    if variant == "upstream":
        yield seed, range(n_samples)
        return
    start = 0
    for i in range(MEMAGENT_CHUNKS):
        size = n_samples // MEMAGENT_CHUNKS + (1 if i < n_samples % MEMAGENT_CHUNKS else 0)
        yield seed + i, range(start, start + size)
        start += size


# A generator: (size, rng, shuffle_seed, sample index) -> Sample. The shuffle seed is the chunk
# seed: the scripts shuffle needles, word lists and documents with a fresh Random(random_seed).
Generate = Callable[[int, random.Random, int, int], Sample]


def draw_sample(
    build: Build,
    generate: Generate,
    size: int,
    rng: random.Random,
    shuffle_seed: int,
    index: int,
    shrink: int,
    floor: int,
) -> tuple[Sample, int]:
    """One sample at `size`, regenerated `shrink` units smaller while it is over budget.

    Returns the sample and its token count (memagent: input + context; upstream: the prompt).
    """
    while True:
        sample = generate(size, rng, shuffle_seed, index)
        if build.variant == "memagent":
            tokens = build.count(sample.input + sample.context)
        else:
            tokens = build.count(sample.prompt())
        if tokens + build.ttg <= build.length:
            return sample, tokens
        if size <= floor:
            raise too_small(
                build.task, build.length, f"sample {index} has {tokens} tokens at size {size}"
            )
        size = max(floor, size - shrink)


def _search_text(build: Build, sample: Sample) -> str:
    """What the size search counts: the fork appends the answers (its quirk, kept)."""
    if build.variant == "upstream":
        return sample.prompt()
    family = build.config["family"]
    if family == "niah":
        return sample.input + " ".join(sample.answers) + " " + sample.context
    if family == "common_words_extraction":
        return sample.input + sample.context + " " + numbered_words(sample.answers)
    return sample.input + f" {sample.answers}" + sample.context  # vt, qa: the list's repr


def size_probe(build: Build, generate: Generate, extra: int = 0) -> Callable[[int], int]:
    """The search's measure: tokens of a probe sample (fresh probe generator) + the budget."""

    def measure(size: int) -> int:
        sample = generate(size, random.Random(build.seed), build.seed, 0)
        return build.count(_search_text(build, sample)) + build.ttg + extra

    return measure


def draw_rows(build: Build, n_samples: int, draw: Callable[..., tuple[Sample, int]]) -> list[dict]:
    rows = []
    for chunk_seed, indices in _chunks(n_samples, build.seed, build.variant):
        rng = random.Random(chunk_seed)
        for index in indices:
            sample, tokens = draw(rng, chunk_seed, index)
            row = {
                "index": index,
                "task": build.task,
                "length": build.length,
                "input": sample.input,
                "context": sample.context,
                "answers": sample.answers,
                "answer_prefix": sample.prefix,
                "num_tokens": tokens,
            }
            if build.variant == "upstream":
                row["context_at"] = len(sample.before)
            rows.append(row)
    return rows


def grid_search(
    build: Build, generate: Generate, lo: int, step: int, hi: int, extra: int = 0
) -> int:
    """Size by the variant's search; a ValueError when even the smallest size is over budget."""
    measure = size_probe(build, generate, extra)
    size = search_size(measure, build.length, lo, step, hi)
    if size is None:
        raise too_small(build.task, build.length, f"{measure(lo)} tokens at the smallest size")
    return size


def upstream_upper_bound(
    build: Build, generate: Generate, lo: int, extra: int = 0, factor: int = 3
) -> int:
    """HEAD's upper bound: `factor` x the size the tokens-per-unit estimate at `lo` allows."""
    per_unit = max(size_probe(build, generate, extra)(lo) - build.ttg - extra, 1) / lo
    return max(int(build.length / per_unit * factor), 2 * lo)
