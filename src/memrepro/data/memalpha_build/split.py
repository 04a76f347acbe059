"""Mem-α's training and validation sets from the per-source instances (Appendix A.1, Table 7).

Each source is shuffled (seed 42) and cut at 90 % into training and validation instances. The
training part of each merge group is then capped at 100 instances by a seeded sample, and the
merged training set shuffled once more. Validation is never capped. NLU and TREC-C form one
group (`ttl_train`): its 100 are shared between them, as in the released set.

LongMemEval-Train's cut (`train_ratio`) differs between the two accounts:
- the official script uses 1.0: all 50 instances train, none validate (Table 7's row: 50, "-");
- the paper's totals count 45 and 5 (Table 6's row), that is the 0.9 of every other source.
So the official cut gives 567 training instances, the paper's 562 (Table 7's printed total).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

SEED = 42
RATIO = 0.9
LIMIT = 100
# the official merge command's order; a group's instances may come from several sources
GROUPS = ("pubmed-rct", "lme_train", "squad", "hotpotqa", "perltqa", "ttl_train", "booksum")
TRAIN_RATIO = {
    "official": {"lme_train": 1.0},
    "paper": {},
}


def cut(
    instances: Sequence[dict[str, Any]], ratio: float, seed: int = SEED
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The instances shuffled by `seed` and cut into (training, validation) at `ratio`."""
    order = list(instances)
    random.Random(seed).shuffle(order)
    n_train = int(len(order) * ratio)
    return order[:n_train], order[n_train:]


def merge(
    groups: Mapping[str, Sequence[dict[str, Any]]],
    ratios: Mapping[str, float],
    limit: int = LIMIT,
    seed: int = SEED,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The training and validation sets from each group's instances (`ratios`: a group's
    training share, RATIO where unnamed); `instance_id` numbers each set's rows."""
    unknown = sorted(set(groups) - set(GROUPS))
    if unknown:
        raise ValueError(f"unknown merge groups {unknown}; expected some of {list(GROUPS)}")
    train, validation = [], []
    for name in GROUPS:
        if name not in groups:
            continue
        part, held = cut(groups[name], ratios.get(name, RATIO), seed)
        if len(part) > limit:
            part = random.Random(seed).sample(part, limit)
        train += part
        validation += held
    random.Random(seed).shuffle(train)
    return _numbered(train), _numbered(validation)


def _numbered(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"instance_id": i, **row} for i, row in enumerate(rows)]


def per_source(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Instances per data source, in first-seen order."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["data_source"]] = counts.get(row["data_source"], 0) + 1
    return counts
