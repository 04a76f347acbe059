"""The `seeds` table: honest selection. A system sampled at several seeds (its `seeds`, or
evaluation.seeds; memrepro.config.matrix: its repeats `<id>.seed<k>`), or whose model was trained at
several (training.seeds: its repeats `<id>.train-seed<k>`), has, per benchmark and length,
the mean over seeds and questions with the 95 % interval of both (the questions resampled, then the
seeds within each: memrepro.scoring.intervals.nested_interval), each seed's score, and, apart and
labelled, best-of-N (the best seed's score, as some reruns report it: biased upwards by the choice).
The paper tables show the first seed, as every system's single run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from memrepro.config import SEEDS_TABLE
from memrepro.report.cells import DASH, text_frame
from memrepro.report.controls import column, load_item_scores
from memrepro.report.registry import BOTH_PAPERS, PaperTable, TableInput
from memrepro.report.rows import system_specs
from memrepro.scoring.intervals import nested_interval


def seed_summary(runs: Sequence[Mapping[str, float]]) -> dict[str, Any]:
    """Over the items every seed scored: the mean over seeds and items (in %) with its nested
    95 % interval, each seed's mean, best-of-N, and the items and seeds counted."""
    shared = sorted(set.intersection(*(set(run) for run in runs)))
    if not shared:
        return {"n": 0, "seeds": len(runs)}
    by_item = [[run[key] for run in runs] for key in shared]
    each = [100 * sum(run[key] for key in shared) / len(shared) for run in runs]
    return {
        "n": len(shared),
        "seeds": len(runs),
        "mean": sum(each) / len(each),
        "interval": nested_interval(by_item),
        "each": each,
        "best": max(each),
    }


def cell_text(summary: Mapping[str, Any]) -> str:
    if summary["n"] == 0:
        return f"{DASH} (no item every seed scored)"
    low, high = summary["interval"]
    each = " / ".join(f"{value:.1f}" for value in summary["each"])
    return (
        f"{summary['mean']:.1f} [{low:.1f}, {high:.1f}] over {summary['seeds']} seeds × "
        f"{summary['n']} items; each seed {each}; best-of-{summary['seeds']} {summary['best']:.1f}"
    )


# how a row names what its repeats vary: another sampling, another training of the model
SAMPLINGS, TRAININGS = "sampling seeds", "training seeds"


def build_seeds_table(
    records: Sequence[Mapping[str, Any]],
    systems: Any,
    repeats: Mapping[str, Sequence[str]],
    training_repeats: Mapping[str, Sequence[str]] | None = None,
) -> pd.DataFrame:
    """A row per system and what its repeats vary (`repeats`: other sampling seeds;
    `training_repeats`: other trainings of its model), a column per benchmark and length."""
    specs = system_specs(systems)
    found = {(r["system"], r["benchmark"], r["length"]): r["items"] for r in records}
    rows: dict[str, dict[str, str]] = {}
    for varies, groups in ((SAMPLINGS, repeats), (TRAININGS, training_repeats or {})):
        for base, others in groups.items():
            for (system, benchmark, length), items in found.items():
                runs = [items, *(found.get((o, benchmark, length)) for o in others)]
                if system != base or any(run is None for run in runs):
                    continue  # another system's, or a repeat that does not run here
                place = {"benchmark": benchmark, "length": length}
                label = row_label(specs[base]["display"], varies)
                rows.setdefault(label, {})[column(place)] = cell_text(seed_summary(runs))
    notes = [
        "Mean over seeds and items with the 95 % interval of both (items resampled, then the "
        "seeds within each); each seed's score in the order of its seed; best-of-N is the best "
        "seed's score, as some reruns report it: chosen after the fact, it is biased upwards and "
        "is never the verdict's number (the paper tables show the first seed).",
        f"{SAMPLINGS}: the same model sampled again at evaluation.sampling.seed + k; "
        f"{TRAININGS}: the model trained again at its run's seeds + k (training.seeds: the run "
        "seed and the rollouts' sampling seed), each training evaluated once.",
    ]
    return text_frame(rows, "System (first seed as in the paper tables), over", notes)


def row_label(display: str, varies: str) -> str:
    """A row's label: the system, and what its repeats vary (the diagnosis reads it back)."""
    return f"{display}, over {varies}"


def _build(table: TableInput) -> pd.DataFrame:
    s = table.settings
    return build_seeds_table(table.records, table.systems, s["repeats"], s["training_repeats"])


SEEDS_TABLES = {SEEDS_TABLE: PaperTable(_build, BOTH_PAPERS, load=load_item_scores, text=True)}
