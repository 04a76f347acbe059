"""What explains a gap: the attribution that opens a cell's diagnosis.

It starts from the gap (ours − paper, with its 95 % interval). Each difference in setup that
the run measured is then its own counterfactual, paired on the cell's items:
- scorer: each rescoring − ours;
- protocol: the same model under the other protocol − ours;
- training: the released checkpoint of the same paper row − ours (a model trained here);
- memory: each control of the cell's own model − ours (closed-book, oracle, full context);
- sampling: the seeds' spread, or one sample per question's Wilson 95 % half-width (a bound);
- recipe: the keys that differ from the recipe behind the printed number (not measured).

A factor's gap left (its residual) is gap + effect: the gap had that factor alone been changed.
Effects are never added: each was measured alone, and two may overlap.

The verdict, per cell:
- *explained*: a measured effect (interval off 0) whose gap left holds 0 in its interval;
- *partly explained*: an effect that shrinks the gap (interval off 0, against it), gap left off 0;
- *unexplained*: no factor does either; the whole gap is left.
The factor leaving the smallest gap names the verdict. Last, what would measure more."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepro.benchmarks import benchmark as benchmark_of
from memrepro.report.controls import MIN_ITEMS, items_of_task, n_text, paired_gain, same_model
from memrepro.report.records import evaluation_files, prediction_lines
from memrepro.report.rows import answering_model
from memrepro.report.scorers import OWN as OWN_SCORER
from memrepro.report.seeds import SAMPLINGS, TRAININGS, row_label
from memrepro.scoring.intervals import wilson_bounds
from memrepro.scoring.rescore import unit_scores
from memrepro.systems import system_kind

Interval = tuple[float, float]
Lines = Mapping[str, Mapping[str, Any]]  # an evaluation's prediction lines by "task#index"
EXPLAINED, PARTLY, UNEXPLAINED = "explained", "partly explained", "unexplained"
MOVED_SHOWN = 3  # items shown per effect: the ones that moved most
RESPONSE_CHARS = 120


@dataclass(frozen=True)
class Source:
    """The evaluation behind a cell: its benchmark, task, system id and length."""

    benchmark: str
    task: str
    system: str
    length: int


@dataclass(frozen=True)
class Gap:
    """A cell's gap: ours − paper with its 95 % interval (None where the cell is not comparable:
    a machinery check), and the evaluation behind it."""

    delta: float
    interval: Interval | None
    source: Source

    @property
    def bounds(self) -> Interval:
        """Its interval; a point where it has none (only the effect's error then counts)."""
        return self.interval or (self.delta, self.delta)

    def text(self) -> str:
        if self.interval is None:
            return f"ours − paper {self.delta:+.1f} (no interval: not comparable)"
        low, high = self.interval
        return f"ours − paper {self.delta:+.1f} [{low:+.1f}, {high:+.1f}]"


@dataclass(frozen=True)
class Moved:
    """An item the factor moved: its key, both responses, ours' score and the other's."""

    key: str
    ours: str
    other: str
    scores: tuple[float, float]


@dataclass(frozen=True)
class Effect:
    """One factor's counterfactual: what changes, its measured effect on the number (points,
    the other − ours; None where not measured), and where it shows (a table and its row)."""

    factor: str
    change: str
    effect: float | None = None
    interval: Interval | None = None
    n: str = ""
    judgeable: bool = True  # enough paired items, and an interval of some width
    bound: bool = False  # sampling: a bound on noise, not a change of setup
    table: str | None = None
    row: str | None = None
    moved: tuple[Moved, ...] = ()
    files: tuple[Path | None, Path | None] = (None, None)  # ours' predictions, the other's

    def residual(self, gap: Gap) -> tuple[float, Interval] | None:
        """gap + effect with its 95 % interval (the two halves' widths combined in quadrature,
        the two intervals taken as independent); None where not measured or a bound."""
        if self.effect is None or self.interval is None or self.bound:
            return None
        value = gap.delta + self.effect
        low = math.hypot(gap.delta - gap.bounds[0], self.effect - self.interval[0])
        high = math.hypot(gap.bounds[1] - gap.delta, self.interval[1] - self.effect)
        return value, (value - low, value + high)

    def accounts(self, gap: Gap) -> str | None:
        """EXPLAINED or PARTLY where this factor alone closes or shrinks the gap; else None."""
        if self.bound:
            return EXPLAINED if self.effect is not None and abs(gap.delta) <= self.effect else None
        found = self.residual(gap)
        if found is None or not self.judgeable or self.interval is None:
            return None
        low, high = self.interval
        if low <= 0 <= high:
            return None  # no measured move
        value, (r_low, r_high) = found
        if r_low <= 0 <= r_high:
            return EXPLAINED
        return PARTLY if abs(value) < abs(gap.delta) and (high < 0) == (gap.delta > 0) else None


@dataclass(frozen=True)
class Suggestion:
    """A config change that would measure a factor this run could not, and how to price it."""

    factor: str
    change: str
    override: str  # `--config` of memrepro cost, or a systems entry

    def text(self) -> str:
        price = f"memrepro cost ... --config '{self.override}'"
        return f"{self.factor}: {self.change} (price it: `{price}`)"


@dataclass(frozen=True)
class Attribution:
    gap: Gap
    effects: Sequence[Effect]
    suggestions: Sequence[Suggestion] = field(default_factory=tuple)

    @property
    def best(self) -> Effect | None:
        """The factor that accounts for most of the gap: explaining first, then the smallest
        residual."""
        found = [e for e in self.effects if e.accounts(self.gap)]
        order = {EXPLAINED: 0, PARTLY: 1}

        def rank(effect: Effect) -> tuple[int, float]:
            residual = effect.residual(self.gap)
            return order[effect.accounts(self.gap) or PARTLY], abs(residual[0]) if residual else 0.0

        return min(found, key=rank, default=None)

    @property
    def verdict(self) -> str:
        best = self.best
        return UNEXPLAINED if best is None else best.accounts(self.gap) or UNEXPLAINED

    @property
    def unexplained(self) -> float:
        """The gap no factor accounts for (points): the best factor's residual (0 where a bound
        covers it, or it is explained), else the whole gap."""
        best = self.best
        if best is None:
            return abs(self.gap.delta)
        if self.verdict == EXPLAINED:
            return 0.0
        residual = best.residual(self.gap)
        return abs(residual[0]) if residual else 0.0

    def line(self) -> str:
        """The attribution line: the gap, then the verdict and its residual."""
        text = f"{self.gap.text()}: {self.verdict}"
        best = self.best
        if best is None:
            measured = sum(e.effect is not None for e in self.effects)
            text += f"; none of the {measured} measured factors accounts for it"
        elif (residual := best.residual(self.gap)) is None:
            text += f" by {best.factor} ({best.change}: a bound of ±{best.effect:.1f})"
        else:
            value, (r_low, r_high) = residual
            text += (
                f" by {best.factor} ({best.change}): gap left {value:+.1f} "
                f"[{r_low:+.1f}, {r_high:+.1f}]"
            )
        return text + _training_reading(self)


def _training_reading(attribution: Attribution) -> str:
    """Where the released checkpoint of the same paper row was measured, what it says."""
    training = [e for e in attribution.effects if e.factor == "training" and e.effect is not None]
    if not training or not training[0].judgeable:
        return ""
    if training[0].accounts(attribution.gap) == EXPLAINED:
        return "; the released checkpoint reaches the paper on these items: the training differs"
    if training[0].accounts(attribution.gap) is None:
        return "; the released checkpoint misses alike: look at the evaluation, not the training"
    return ""


# --- the evidence: every evaluation's predictions, by system, benchmark, length and scorer ---


KEPT = ("score", "scores", "responses")  # what the attribution keeps of a prediction line


@dataclass(frozen=True)
class Evidence:
    """What the attribution reads: each scored evaluation's lines by (system id, benchmark,
    length, scorer) and its predictions file, every system by id, and the run's sampling."""

    lines: Mapping[tuple[str, str, int, str], Lines]
    systems: Mapping[str, Mapping[str, Any]]
    sampling: Mapping[str, Any] = field(default_factory=dict)
    files: Mapping[tuple[str, str, int, str], Path] = field(default_factory=dict)

    def task_lines(self, system: str, source: Source, scorer: str = OWN_SCORER) -> Lines | None:
        found = self.lines.get(self._key(system, source, scorer))
        return None if found is None else items_of_task(found, source.task)

    def file(self, system: str, source: Source, scorer: str = OWN_SCORER) -> Path | None:
        return self.files.get(self._key(system, source, scorer))

    def _key(self, system: str, source: Source, scorer: str) -> tuple[str, str, int, str]:
        """The evaluation of `system` at the cell: its own length's, or the one that stands
        for every length (`SystemKind.one_length`: a closed-book on RULER-HQA)."""
        key = (system, source.benchmark, source.length, scorer)
        spec = self.systems.get(system, {})
        if key in self.lines or "kind" not in spec:
            return key
        if not system_kind(spec["kind"]).one_length(source.benchmark):
            return key
        same = (k for k in self.lines if (k[0], k[1], k[3]) == (system, source.benchmark, scorer))
        return next(same, key)


def load_evidence(
    paths: Sequence[str | Path],
    systems: Sequence[Mapping[str, Any]],
    sampling: Mapping[str, Any] | None = None,
) -> Evidence:
    """Every evaluation and rescoring among `paths` (metrics and predictions side by side),
    each prediction line cut to its scores and responses (a memory trace stays in its file)."""
    lines: dict[tuple[str, str, int, str], Lines] = {}
    files: dict[tuple[str, str, int, str], Path] = {}
    for metrics, predictions in evaluation_files(paths):
        records = json.loads(metrics.read_text(encoding="utf-8"))
        if not isinstance(records, list) or not records:
            raise ValueError(f"{metrics}: not a list of metrics records")
        first = records[0]
        key = (
            first["system"],
            first["benchmark"],
            int(first["length"]),
            first.get("scorer", OWN_SCORER),
        )
        lines[key] = prediction_lines(predictions, KEPT)
        files[key] = predictions
    return Evidence(lines, {s["id"]: s for s in systems}, sampling or {}, files)


def attribute(gap: Gap, evidence: Evidence) -> Attribution | None:
    """The gap's attribution over every factor the evidence measured on its items; None where
    the evidence lacks the cell's own evaluation."""
    ours = evidence.task_lines(gap.source.system, gap.source)
    spec = evidence.systems.get(gap.source.system, {})
    if not ours:
        return None
    effects = [
        *_scorers(gap.source, ours, evidence),
        *_protocols(gap.source, ours, spec, evidence),
        *_trainings(gap.source, ours, spec, evidence),
        *_memories(gap.source, ours, spec, evidence),
        _sampling(gap.source, ours, spec, evidence),
        *filter(None, [_repeats_bound(gap.source, ours, spec, evidence, TRAININGS)]),
    ]
    return Attribution(gap, tuple(effects), tuple(_suggestions(gap.source, spec, effects)))


def _measured(
    factor: str,
    change: str,
    ours: Lines,
    other: Lines,
    where: tuple[str | None, str | None],
    files: tuple[Path | None, Path | None],
) -> Effect:
    """The paired effect of `other` − ours, the items it moved most, and where it shows (its
    table and row, both predictions files)."""
    table, row = where
    gain = paired_gain(_units(other), _units(ours))
    if gain["n"] == 0:
        return Effect(factor, change, n="no shared items", judgeable=False, table=table, row=row)
    low, high = gain["interval"]
    return Effect(
        factor,
        change,
        gain["gain"],
        (low, high),
        n_text(gain),
        gain["n"] >= MIN_ITEMS and low != high,
        table=table,
        row=row,
        moved=_moved(ours, other),
        files=files,
    )


def _units(lines: Lines) -> dict[str, list[float]]:
    return {key: unit_scores(line) for key, line in lines.items()}


def _moved(ours: Lines, other: Lines) -> tuple[Moved, ...]:
    """The items whose score moved most between the two, largest first (ties in item order)."""
    shared = sorted(set(ours) & set(other), key=_item_order)
    changes = [(float(other[key]["score"]) - float(ours[key]["score"]), key) for key in shared]
    found = sorted((c for c in changes if c[0]), key=lambda c: -abs(c[0]))
    return tuple(
        Moved(
            key,
            _response(ours[key]),
            _response(other[key]),
            (float(ours[key]["score"]), float(other[key]["score"])),
        )
        for _, key in found[:MOVED_SHOWN]
    )


def _item_order(key: str) -> tuple[str, int]:
    task, _, index = key.rpartition("#")
    return task, int(index) if index.isdigit() else -1


def _response(line: Mapping[str, Any]) -> str:
    responses = line.get("responses") or [line.get("response", "")]
    text = " | ".join(str(r) for r in responses).strip()
    return text if len(text) <= RESPONSE_CHARS else text[: RESPONSE_CHARS - 1] + "…"


def _display(evidence: Evidence, system: str) -> str:
    return evidence.systems.get(system, {}).get("display", system)


def _scorers(source: Source, ours: Lines, evidence: Evidence) -> list[Effect]:
    found = []
    for (system, benchmark, length, scorer), lines in sorted(evidence.lines.items()):
        if (system, benchmark, length) != (source.system, source.benchmark, source.length):
            continue
        if scorer == OWN_SCORER:
            continue
        row = f"{scorer}: {_display(evidence, system)}"
        other = items_of_task(lines, source.task)
        files = (evidence.file(system, source), evidence.file(system, source, scorer))
        where = ("scorers", row)
        found.append(_measured("scorer", f"rescored by {scorer}", ours, other, where, files))
    return found


def _protocol_of(spec: Mapping[str, Any]) -> str:
    if spec.get("question_blind"):
        return "question-blind"
    return "question-aware (per question)" if spec.get("question_aware") else "its own"


def _own_system(spec: Mapping[str, Any]) -> bool:
    """Not a repeat at another seed, nor a memory-ablation variant."""
    return not (spec.get("seed_of") or spec.get("ablation_of"))


def _twins(spec: Mapping[str, Any], evidence: Evidence) -> list[str]:
    """The systems of the same kind and model whose protocol differs (the protocols table's)."""
    return [
        sid
        for sid, other in evidence.systems.items()
        if other.get("kind") == spec.get("kind") == "memagent"
        and other.get("model") == spec.get("model")
        and _protocol_of(other) != _protocol_of(spec)
        and _own_system(other)
    ]


def _against(
    factor: str,
    source: Source,
    ours: Lines,
    evidence: Evidence,
    others: Sequence[tuple[str, str, tuple[str | None, str | None]]],
) -> list[Effect]:
    """Each (system, what changes, where it shows) measured against ours, where that system
    answered the cell's items."""
    found = []
    for sid, change, where in others:
        other = evidence.task_lines(sid, source)
        if other:
            files = (evidence.file(source.system, source), evidence.file(sid, source))
            found.append(_measured(factor, change, ours, other, where, files))
    return found


def _protocols(
    source: Source, ours: Lines, spec: Mapping[str, Any], evidence: Evidence
) -> list[Effect]:
    others = [
        (
            sid,
            f"the {_protocol_of(evidence.systems[sid])} protocol ({_display(evidence, sid)})",
            ("protocols", _protocol_row(spec, evidence.systems[sid])),
        )
        for sid in _twins(spec, evidence)
    ]
    return _against("protocol", source, ours, evidence, others)


def _protocol_row(ours: Mapping[str, Any], other: Mapping[str, Any]) -> str:
    """The protocols table's row of the pair: the other protocol's system vs the paper's own."""
    switched = ours if _protocol_of(ours) != "its own" else other
    own = other if switched is ours else ours
    return f"{switched.get('display')} vs {own.get('display')}"


def _trained_here(spec: Mapping[str, Any]) -> bool:
    return "memagent_recipe" in spec or "training" in spec


def _released(spec: Mapping[str, Any], evidence: Evidence) -> list[str]:
    """The systems not trained here that stand for the same paper row, of the same kind."""
    if not _trained_here(spec) or not spec.get("paper_row"):
        return []
    return [
        sid
        for sid, other in evidence.systems.items()
        if other.get("paper_row") == spec["paper_row"]
        and other.get("kind") == spec.get("kind")
        and not _trained_here(other)
        and _protocol_of(other) == _protocol_of(spec)
        and _own_system(other)
    ]


def _trainings(
    source: Source, ours: Lines, spec: Mapping[str, Any], evidence: Evidence
) -> list[Effect]:
    others = [
        (sid, f"the released checkpoint ({_display(evidence, sid)})", (None, None))
        for sid in _released(spec, evidence)
    ]
    return _against("training", source, ours, evidence, others)


def _controls_of(spec: Mapping[str, Any], benchmark: str, evidence: Evidence) -> list[str]:
    """The control systems (closed-book, oracle, full context) of the model that answers the
    cell's questions (its own, or the QA model over its memory: `answering_model`)."""
    return [
        sid
        for sid, other in evidence.systems.items()
        if "kind" in other
        and system_kind(other["kind"]).control is not None
        and same_model(spec, other, benchmark)
        and not other.get("seed_of")
    ]


def _memories(
    source: Source, ours: Lines, spec: Mapping[str, Any], evidence: Evidence
) -> list[Effect]:
    if "kind" not in spec or not system_kind(spec["kind"]).memory:
        return []
    others = [
        (
            sid,
            f"no memory: {_display(evidence, sid)}",
            ("controls", f"{spec.get('display')} vs {_display(evidence, sid)}"),
        )
        for sid in _controls_of(spec, source.benchmark, evidence)
    ]
    return _against("memory", source, ours, evidence, others)


def _repeats_bound(
    source: Source, ours: Lines, spec: Mapping[str, Any], evidence: Evidence, varies: str
) -> Effect | None:
    """The largest move of the cell's score over its repeats (`varies`: SAMPLINGS, the system's
    `seed_of` repeats; TRAININGS, its `training_seed_of` ones), as a bound; None without any."""
    key = {SAMPLINGS: "seed_of", TRAININGS: "training_seed_of"}[varies]
    moves = []
    for sid, other in evidence.systems.items():
        if other.get(key) != source.system:
            continue
        found = evidence.task_lines(sid, source) or {}
        shared = sorted(set(found) & set(ours))
        if shared:
            moves.append(abs(_mean_gap(ours, found, shared)))
    if not moves:
        return None
    factor = "sampling" if varies == SAMPLINGS else "training seeds"
    change = f"{len(moves) + 1} {varies}: the largest move of the score"
    row = row_label(str(spec.get("display")), varies)
    return Effect(
        factor, change, max(moves), bound=True, n=f"n {len(ours)}", table="seeds", row=row
    )


def _sampling(source: Source, ours: Lines, spec: Mapping[str, Any], evidence: Evidence) -> Effect:
    """The seeds' largest move of the cell's score (a bound), or the Wilson 95 % half-width of one
    sample per question at the sampling temperature (0: greedy, no bound to state)."""
    seeds = _repeats_bound(source, ours, spec, evidence, SAMPLINGS)
    if seeds is not None:
        return seeds
    temperature = float(evidence.sampling.get("temperature", 0.0))
    scores = [float(line["score"]) for line in ours.values()]
    if temperature == 0 or not scores:
        return Effect(
            "sampling",
            "greedy decoding, one sample per question: no noise measured",
            judgeable=False,
        )
    p, n = sum(scores) / len(scores), len(scores)
    low, high = wilson_bounds(p * n, n)  # right/wrong items; graded ones: as wide at their mean
    bound = 100 * max(p - low, high - p)
    change = (
        f"one sample per question at temperature {temperature:g}: the Wilson 95 % half-width "
        f"at n {len(scores)}, a bound"
    )
    return Effect("sampling", change, bound, bound=True, n=f"n {len(scores)}")


def _mean_gap(ours: Lines, other: Lines, shared: Sequence[str]) -> float:
    return (
        100 * sum(float(other[k]["score"]) - float(ours[k]["score"]) for k in shared) / len(shared)
    )


def _suggestions(
    source: Source, spec: Mapping[str, Any], effects: Sequence[Effect]
) -> list[Suggestion]:
    """The config changes that would measure a factor this run left unmeasured."""
    measured = {e.factor for e in effects if e.effect is not None and not e.bound}
    found = []
    if not any(e.factor == "sampling" and e.table for e in effects):  # no seeds ran
        found.append(
            Suggestion("sampling", "sample every question at 3 seeds", "evaluation.seeds=3")
        )
    if _trained_here(spec) and "training" not in measured and spec.get("paper_row"):
        row = spec["paper_row"]
        found.append(
            Suggestion(
                "training",
                f"evaluate the released checkpoint of {row} beside it",
                f"evaluation.systems.{source.system}-released={{kind: {spec.get('kind')}, "
                f"model: <released model>, display: {row} (released), paper_row: {row}, "
                f"benchmarks: [{source.benchmark}]}}",
            )
        )
    if spec.get("memagent_recipe") == "official":
        found.append(
            Suggestion(
                "recipe", "train again at the paper's stated recipe", "training.recipe=paper"
            )
        )
    kind = system_kind(spec["kind"]) if "kind" in spec else None
    if kind is not None and kind.memory and "memory" not in measured:
        answers = answering_model(spec, source.benchmark)
        # MemAgent's filter prompt where rows are asked one by one (not Mem-α's instances)
        prompt = "" if benchmark_of(source.benchmark).instances else "prompt: filter, "
        found.append(
            Suggestion(
                "memory",
                f"a closed-book control of {answers}",
                f"evaluation.systems.closedbook-{answers}={{kind: closedbook, model: {answers}, "
                f"display: Closed-book ({answers}), {prompt}max_input_tokens: 4096, "
                f"max_output_tokens: 1024, benchmarks: [{source.benchmark}]}}",
            )
        )
    return found
