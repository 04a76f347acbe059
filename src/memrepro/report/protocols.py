"""The `protocols` table: one method, two protocols. MemAgent writes its memory for the question
(its own protocol: MemAgent's Table 1); MemoryAgentBench has every agent read the context once
and only then asks the questions (Mem-α's Table 2 scores MemAgent so). Each question-blind
MemAgent system beside the question-aware systems of its model, on the RULER-HQA items both
answered: the paired difference with its 95 % interval and the paper's question-aware number; and
the question-aware system's own MemoryAgentBench score on the multi-document RULER-QA source (its
memorize job reads each instance before its questions) beside Mem-α's printed one. Whether the
cross-paper gap is the protocol's shows in the difference; what else differs there (chunk size,
answer prompt, metric) is said in the notes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from memrepro.config import PROTOCOLS_TABLE
from memrepro.report.cells import DASH
from memrepro.report.controls import (
    cell_text,
    column,
    items_of_task,
    load_item_scores,
    paired_gain,
)
from memrepro.report.registry import BOTH_PAPERS, PaperTable, TableInput
from memrepro.report.rows import system_specs
from memrepro.systems.base import Control

# read as controls: each paper's own protocol is what the other is set against
AWARE = Control("question-aware", above="blind higher", below="the question helps")
BLIND = Control("blind", above="the question helps", below="blind higher")


def build_protocols_table(
    records: Sequence[Mapping[str, Any]],
    systems: Any,
    paper: Mapping[str, Any],
    mab: Mapping[str, Any],
) -> pd.DataFrame:
    """A row per (question-blind system, question-aware system of its model); a column per
    RULER-HQA length both ran (the paired difference, with the paper's question-aware number
    at that length), and one for MemoryAgentBench's `mab.task` (the question-aware system's
    score there, which its memorize job reads blind, beside Mem-α's printed one)."""
    specs = system_specs(systems)
    blind = [
        r
        for r in records
        if specs[r["system"]].get("question_blind") and not _repeat(specs[r["system"]])
    ]
    rows: dict[str, dict[str, str]] = {}
    for ours in blind:
        model = specs[ours["system"]]["model"]
        for aware in records:
            spec = specs[aware["system"]]
            if _switched(spec) or spec["model"] != model:
                continue
            label = f"{specs[ours['system']]['display']} vs {spec['display']}"
            done = rows.get(label, {})
            if (aware["benchmark"], aware["length"]) != (ours["benchmark"], ours["length"]):
                name = f"{aware['benchmark']}: {mab['task']}"
                if name not in done and _reads_source(aware, mab["task"]):  # once per pair
                    rows.setdefault(label, {})[name] = _mab_cell(aware, spec, mab)
            else:
                printed = paper.get(ours["benchmark"], {}).get(spec.get("paper_row"), {})
                value = printed.get(ours["length"])
                text = cell_text(paired_gain(ours["questions"], aware["questions"]), AWARE)
                said = f"; paper (question-aware) {value:.2f}" if value is not None else ""
                rows.setdefault(label, {})[column(ours)] = text + said
    for label, name, cell in _aware_on_instances(records, specs, mab):
        rows.setdefault(label, {})[name] = cell
    frame = pd.DataFrame.from_dict(rows, orient="index")
    lengths = sorted((r["length"], column(r)) for r in blind if column(r) in frame.columns)
    ordered = [*dict.fromkeys(name for _, name in lengths)]
    frame = frame[[*ordered, *(c for c in frame.columns if c not in ordered)]].fillna(DASH)
    frame.index.name = "The other protocol vs the paper's own"
    frame.attrs["notes"] = [
        "RULER-HQA: blind − aware on the items both answered, with the 95 % percentile-bootstrap "
        "interval of the per-item differences (paired); the same model, chunks, memory budget, "
        "answer prompt and metric, only what the memory is written for differs: the question, "
        "or MemoryAgentBench's task description (the question first seen at the final answer).",
        f"MemoryAgentBench ({mab['task']}): every MemAgent system reads an instance before its "
        "questions there (Mem-α's protocol: the instance's own chunks, its questions answered in "
        "\\boxed{} and scored by its metric), so its score is the blind protocol's; beside it "
        f"Mem-α's printed number for that model ({mab['where']}), in %.",
        f"A question-aware MemAgent on MemoryAgentBench ({mab['task']}) writes a memory per "
        "question, for it (MemAgent's protocol on Mem-α's instances: the question as the "
        "problem of every memory update), and answers each over its own: aware − blind on the "
        "instances both answered, beside Mem-α's printed (blind) number. The questions are "
        "paired inside each instance: the instances held fixed, their questions resampled.",
    ]
    return frame


def _repeat(spec: Mapping[str, Any]) -> bool:
    """A system's repeat at another seed, or its memory-ablation variant: never a row here."""
    return any(spec.get(key) for key in ("seed_of", "training_seed_of", "ablation_of"))


def _switched(spec: Mapping[str, Any]) -> bool:
    """Not the model's own question-aware system: switched to the other protocol, or a repeat
    (another seed) or a memory-ablation variant of a system."""
    return bool(spec.get("question_blind") or spec.get("question_aware")) or _repeat(spec)


def _aware_on_instances(
    records: Sequence[Mapping[str, Any]],
    specs: Mapping[str, Mapping[str, Any]],
    mab: Mapping[str, Any],
) -> list[tuple[str, str, str]]:
    """Each question-aware system on the source's instances beside the blind (default) system
    of its model there (row, column, cell): the paired difference and Mem-α's printed number of
    that model."""
    found = []
    for ours in records:
        spec = specs[ours["system"]]
        if not spec.get("question_aware") or _repeat(spec) or not _reads_source(ours, mab["task"]):
            continue
        for blind in records:
            other = specs[blind["system"]]
            same = (blind["benchmark"], blind["length"]) == (ours["benchmark"], ours["length"])
            if not same or _switched(other) or other["model"] != spec["model"]:
                continue
            mine, theirs = (items_of_task(r["questions"], mab["task"]) for r in (ours, blind))
            printed = mab["paper"].get(other.get("paper_row"))
            said = f"; Mem-α's Table 2 (blind) {100 * printed:.1f}" if printed is not None else ""
            text = cell_text(paired_gain(mine, theirs), BLIND) + said
            name = f"{ours['benchmark']}: {mab['task']}"
            found.append((f"{spec['display']} vs {other['display']}", name, text))
    return found


def _reads_source(record: Mapping[str, Any], task: str) -> bool:
    return bool(items_of_task(record["items"], task))


def _mab_cell(record: Mapping[str, Any], spec: Mapping[str, Any], mab: Mapping[str, Any]) -> str:
    """The mean score of the source's instances (in %), and Mem-α's printed one for the model."""
    scores = list(items_of_task(record["items"], mab["task"]).values())
    ours = 100 * sum(scores) / len(scores)
    printed = mab["paper"].get(spec.get("paper_row"))
    said = f"; Mem-α's Table 2 {100 * printed:.1f}" if printed is not None else ""
    return f"{ours:.1f} (blind; {len(scores)} instance(s)){said}"


def _build(table: TableInput) -> pd.DataFrame:
    return build_protocols_table(table.records, table.systems, table.paper, table.settings["mab"])


PROTOCOLS_TABLES = {
    PROTOCOLS_TABLE: PaperTable(_build, BOTH_PAPERS, load=load_item_scores, text=True)
}
