"""MemAgent's Table 4 probe sets (§3.3.3): the RULER-HQA evaluation rows with the question's two
key-information groups (its supporting paragraphs, `hotpotqa.gold_groups`) moved to given
relative depths.

A probe row is built from the very row the random placement evaluates (`eval_<N>.jsonl`: the
released set or the one synthesized here, whichever the config reads): the same question and the
same documents, the gold groups placed (`place_groups`) and every other document in its order.
So a probe set differs from the random set of its length in the documents' order alone, and each
question's probe-minus-random difference is paired, whichever `ruler_hqa.eval_sets` is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from memrepro.data.official_hqa import parse_context, rows_with_questions
from memrepro.data.ruler_hqa import ContextTokens, DocPool, Tokenizer, sample_row


def check_placement(placement: Sequence[float]) -> tuple[float, float]:
    """The two relative depths of a probe placement, validated: 0 = the first slot, 1 = the last."""
    depths = tuple(float(d) for d in placement)
    if len(depths) != 2 or not all(0.0 <= d <= 1.0 for d in depths):
        raise ValueError(
            f"placement must be two depths in [0, 1] (0 = the beginning, 1 = the end), "
            f"got {list(placement)}"
        )
    return depths[0], depths[1]


def place_groups(
    doc_ids: Sequence[int], groups: Sequence[Sequence[int]], depths: Sequence[float]
) -> np.ndarray:
    """`doc_ids` (a sample, as `sample_doc_ids` returns it) with each of the two key-information
    `groups` moved to consecutive slots from round(depth * (N - len(group))): depth 0 makes it
    the first documents, 1 the last. The other documents (the question's other paragraphs and
    the distractors) fill the remaining slots in their order. A group id is taken at its first
    occurrence in the sample (a question may hold a paragraph twice); overlaps: `_group_starts`.
    """
    ids = np.asarray(doc_ids, dtype=np.int64)
    depths = check_placement(depths)
    gold = [np.asarray(g, dtype=np.int64) for g in groups]
    if len(gold) != 2:
        raise ValueError(f"expected two key-information groups, got {len(gold)}")
    for k, group in enumerate(gold, start=1):
        if not len(group):
            raise ValueError(f"key-information group {k} is empty")
    flat = np.concatenate(gold)
    if len(np.unique(flat)) < len(flat):
        raise ValueError(f"key-information groups repeat a doc id: {[g.tolist() for g in gold]}")
    rest = np.delete(ids, _first_positions(ids, flat))
    starts = _group_starts(len(ids), (len(gold[0]), len(gold[1])), depths)
    slots = np.concatenate([np.arange(s, s + len(g)) for s, g in zip(starts, gold, strict=True)])
    placed = np.empty_like(ids)
    placed[slots] = flat
    free = np.ones(len(ids), dtype=bool)
    free[slots] = False
    placed[free] = rest
    return placed


def _first_positions(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    matches = ids[None, :] == wanted[:, None]
    found = matches.any(axis=1)
    if not found.all():
        raise ValueError(f"key-information doc ids {wanted[~found].tolist()} are not in the sample")
    return matches.argmax(axis=1)


def _group_starts(n: int, sizes: tuple[int, int], depths: tuple[float, float]) -> list[int]:
    """Each group's first slot. Groups cannot share slots: when the later-starting group (group
    2 on a tie) would overlap the other, it starts right after it — the nearest arrangement that
    keeps the earlier group's depth and the order the depths ask for — and if that runs past the
    end the pair is moved back to end at the last slot, so a group asked at 100% still ends the
    context. Only small N or near depths overlap: Table 4's settings with groups of a few
    paragraphs never do at N >= 50. `round` ties to even; Table 4's depths never tie."""
    starts = [round(d * (n - size)) for d, size in zip(depths, sizes, strict=True)]
    first, second = sorted((0, 1), key=lambda k: (starts[k], k))
    if starts[second] < starts[first] + sizes[first]:
        starts[second] = starts[first] + sizes[first]
        overflow = max(0, starts[second] + sizes[second] - n)
        starts[first] -= overflow
        starts[second] -= overflow
    return starts


def row_doc_ids(row: Mapping[str, Any], lookup: Mapping[str, int], at: str) -> list[int]:
    """A RULER-HQA row's documents as dev-pool ids: stored (`doc_ids`) or parsed from its text."""
    if "doc_ids" in row:
        return [int(d) for d in row["doc_ids"]]
    return parse_context(row["context"], lookup, at)


def probe_rows(
    rows: Sequence[Mapping[str, Any]],
    pool: DocPool,
    placement: Sequence[float],
    *,
    tokenizer: Tokenizer | None,
    store_ids_above: int,
    where: str,
) -> list[dict[str, Any]]:
    """The probe set of `placement` (two depths) from the random rows of one length (`where`:
    their file, for errors): each row's own documents with its question's key-information
    groups placed, rendered as the random row is (text up to `store_ids_above` documents),
    `num_tokens` counted again (the last document's count depends on which it is), and
    `placement` recorded."""
    depths = check_placement(placement)
    lookup = {doc: i for i, doc in enumerate(pool.docs)}
    samples = []
    for at, row, question in rows_with_questions(rows, pool, where):
        if "gold_doc_ids" not in question:
            raise ValueError(
                f"{at}: the dev pool has no gold_doc_ids (a pool written before the probe "
                "existed: rebuild it)"
            )
        try:
            samples.append(
                place_groups(row_doc_ids(row, lookup, at), question["gold_doc_ids"], depths)
            )
        except ValueError as e:
            raise ValueError(f"{at}: {e}") from e
    counter = ContextTokens(tokenizer, pool.docs, pool.tokens) if tokenizer is not None else None
    if counter is not None:
        counter.prepare(samples)
    return [
        {
            **sample_row(row, row["num_docs"], ids, pool.docs, store_ids_above, counter),
            "placement": list(depths),
        }
        for row, ids in zip(rows, samples, strict=True)
    ]
