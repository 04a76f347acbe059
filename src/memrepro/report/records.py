"""Evaluation jobs' metrics records as the tables read them: each file checked field by field (a
bad record stops the table job naming its file), indexed by (benchmark, task, system, length),
and the accuracy the official evaluator reports."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from memrepro.benchmarks import registered
from memrepro.data.io import read_json
from memrepro.scoring.intervals import wilson

# benchmarks without a length axis: their records have length 0
UNLENGTHED = tuple(name for name, found in registered().items() if not found.lengths)

Key = tuple[str, str, str, int]  # a metrics record's (benchmark, task, system, length)

_NUMBER = (int, float)

# How far, in points, a score may lie outside its interval and an interval from the one its
# counts give: the evaluation keeps 4 decimals; one rounded to 2 still reads as written.
ROUNDING = 0.01

# key -> accepted types; bool is rejected separately (it is an int subclass).
_METRIC_FIELDS: dict[str, tuple[type, ...]] = {
    "benchmark": (str,),
    "task": (str,),
    "system": (str,),
    "length": (int,),
    "n_items": (int,),
    "n_failed": (int,),
    "accuracy": _NUMBER,
    "accuracy_official": (*_NUMBER, type(None)),
    "mean_tokens": (*_NUMBER, type(None)),
}

# Counts of items, each within 0..n_items when present: answers the official sub_em counts
# right though they normalise to nothing; one's own data's answers right only inside a gold.
_ITEM_COUNTS = ("n_lenient_sub_em", "n_inside_gold_sub_em")

# Percentages checked when present (the builders read them).
_SCORE_FIELDS = (
    "sub_em",
    "sub_em_strict",
    "em",
    "f1",
    "qa_f1",
    "string_match",
    "rouge_1_recall",
    "rouge_2_recall",
    "rouge_l_recall",
    "rouge_l_f",
)


def _check_metrics(data: Any, path: Path) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ValueError(
            f"{path}: a metrics record must be a JSON object, got {type(data).__name__}"
        )
    for key, types in _METRIC_FIELDS.items():
        if key not in data:
            raise ValueError(f"{path}: missing key {key!r}")
        _check_type(path, key, data[key], types)
    for key in _SCORE_FIELDS:
        if key in data:
            _check_type(path, key, data[key], _NUMBER)
    if data["length"] < 0 or (data["benchmark"] not in UNLENGTHED and data["length"] == 0):
        raise ValueError(f"{path}: length={data['length']} (0 only for {', '.join(UNLENGTHED)})")
    memory = data.get("mean_memory_tokens")
    if memory is not None:
        _check_type(path, "mean_memory_tokens", memory, _NUMBER)
        if memory < 0:
            raise ValueError(f"{path}: mean_memory_tokens must be >= 0, got {memory}")
    if data["mean_tokens"] is not None and data["mean_tokens"] <= 0:
        raise ValueError(f"{path}: mean_tokens must be positive, got {data['mean_tokens']}")
    for key in ("n_dropped", "n_questions", *_ITEM_COUNTS):
        if key in data:
            _check_type(path, key, data[key], (int,))
    _check_intervals(path, data.get("ci95", {}))
    _check_intervals(path, data.get("ci95_fixed_instances", {}), "ci95_fixed_instances")
    right_wrong = data.get("right_wrong", [])
    if not (isinstance(right_wrong, list) and all(isinstance(k, str) for k in right_wrong)):
        raise ValueError(f"{path}: key 'right_wrong' must list score names, got {right_wrong!r}")
    patterns = data.get("memory_patterns", {})
    if not isinstance(patterns, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in patterns.values()
    ):
        raise ValueError(f"{path}: key 'memory_patterns' must map patterns to sample counts")
    if data["n_items"] < 1:  # an empty evaluation set has no accuracy, not 0.0
        raise ValueError(f"{path}: n_items={data['n_items']}: no sample was evaluated")
    if data.get("n_questions") is not None and data["n_questions"] < data["n_items"]:
        raise ValueError(
            f"{path}: n_questions={data['n_questions']} is below n_items={data['n_items']} "
            "(every instance has a question)"
        )
    for key in ("n_failed", "n_dropped", *_ITEM_COUNTS):
        if key in data and not 0 <= data[key] <= data["n_items"]:
            raise ValueError(f"{path}: {key}={data[key]} not within 0..n_items")
    for key in ("accuracy", "accuracy_official", *_SCORE_FIELDS):
        if data.get(key) is not None and not 0 <= data[key] <= 100:
            raise ValueError(f"{path}: {key}={data[key]} is not a percentage")
    _check_scores_against_intervals(path, data)
    _check_nonzero(path, data)
    return data


def _check_nonzero(path: Path, data: Mapping[str, Any]) -> None:
    """`n_nonzero` (optional: records before it lack it) maps scores to whole counts of sampled
    units within 0..n (a Mem-α record's questions, else its items), and a count is 0 exactly
    where its score is."""
    counts = data.get("n_nonzero", {})
    if not isinstance(counts, dict):
        raise ValueError(f"{path}: key 'n_nonzero' must map score names to counts")
    units = data.get("n_questions") or data["n_items"]
    for key, count in counts.items():
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= units:
            raise ValueError(
                f"{path}: n_nonzero[{key!r}]={count!r} is no whole count within 0..{units}"
            )
        score = data.get(key)
        scored = isinstance(score, _NUMBER) and not isinstance(score, bool)
        if scored and (score > 0) != (count > 0):
            raise ValueError(
                f"{path}: n_nonzero[{key!r}]={count} disagrees with its score {key}={score}"
            )
        if scored and "n_questions" not in data:
            _check_listed_right_wrong(path, data, key, score, count)


def _check_listed_right_wrong(
    path: Path, data: Mapping[str, Any], key: str, score: float, count: int
) -> None:
    """Items score within 0..1, so a mean equal to its share of non-zero items means every item
    is 0 or 1: such a score is a proportion, and `right_wrong` must list it (else its Wilson
    interval would be read as a bootstrap one); a listed one must be that share."""
    n = scored_items(data, key)
    proportion = n >= 1 and abs(score * n / 100 - count) <= 1e-6 * n
    listed = key in data.get("right_wrong", [])
    if proportion and not listed and (key in data.get("ci95", {})):
        raise ValueError(
            f"{path}: {key}={score} is {count}/{n} items right (n_nonzero), yet 'right_wrong' "
            "does not list it: its interval would be read as a bootstrap one"
        )
    if listed and not proportion:
        raise ValueError(
            f"{path}: 'right_wrong' lists {key!r}, but {key}={score} over {n} items is not its "
            f"{count} non-zero items (n_nonzero)"
        )


def _check_scores_against_intervals(path: Path, data: dict[str, Any]) -> None:
    """Each score lies inside its intervals, and a right/wrong score (`right_wrong`) is k/n of
    the items behind it with the Wilson interval of k/n. A record with intervals says which
    scores are right/wrong: else a proportion would be judged as a graded score on whatever
    interval it carries. Bootstrap intervals (graded scores, Mem-α's instances) are not
    recomputable from the record: only the score inside them is checked."""
    fixed = data.get("ci95_fixed_instances", {})
    if (data.get("ci95") or fixed) and "right_wrong" not in data:
        raise ValueError(
            f"{path}: intervals (ci95) but no key 'right_wrong': which scores are proportions "
            "of right answers, and so which intervals their counts give, cannot be told "
            "(a record written before 'right_wrong': evaluate again to rewrite it)"
        )
    for key, bounds in data.get("ci95", {}).items():
        _check_inside(path, data, key, bounds, "ci95")
    for key, bounds in fixed.items():
        _check_inside(path, data, key, bounds, "ci95_fixed_instances")
    for key in data.get("right_wrong", []):
        _check_counts(path, data, key)


def _check_counts(path: Path, data: Mapping[str, Any], key: str) -> None:
    """A score `right_wrong` lists is k/n of its items (all of them for `accuracy`, the answered
    ones for the rest) and its ci95 the Wilson interval of k/n, as the evaluation computes it."""
    score = data.get(key)
    if isinstance(score, bool) or not isinstance(score, _NUMBER):
        raise ValueError(f"{path}: key 'right_wrong' lists {key!r}, a score the record lacks")
    n = scored_items(data, key)
    successes = score * n / 100
    right = round(successes)
    if n < 1 or abs(successes - right) > 1e-6 * n:
        raise ValueError(
            f"{path}: {key}={score} over {n} items is no k/{n}, "
            "yet 'right_wrong' lists it as right/wrong"
        )
    bounds = data.get("ci95", {}).get(key)
    low, high = wilson(right, n)
    if bounds is not None and not _near(bounds, (low, high)):
        raise ValueError(
            f"{path}: ci95[{key!r}]={bounds} disagrees with its counts, {right}/{n} right "
            f"(their Wilson interval: [{low:.2f}, {high:.2f}])"
        )


def scored_items(data: Mapping[str, Any], key: str) -> int:
    """The items behind a score: all of them for `accuracy`, the answered ones for the rest."""
    return data["n_items"] - (0 if key == "accuracy" else n_dropped(data))


def _check_inside(
    path: Path, data: Mapping[str, Any], key: str, bounds: list[float], name: str
) -> None:
    score = data.get(key)
    if isinstance(score, bool) or not isinstance(score, _NUMBER):
        raise ValueError(f"{path}: {name}[{key!r}] is the interval of a score the record lacks")
    if not bounds[0] - ROUNDING <= score <= bounds[1] + ROUNDING:
        raise ValueError(f"{path}: {key}={score} lies outside {name}[{key!r}]={bounds}")


def _near(bounds: Iterable[float], expected: Iterable[float]) -> bool:
    return all(abs(a - b) <= ROUNDING for a, b in zip(bounds, expected, strict=True))


def _check_intervals(path: Path, intervals: Any, name: str = "ci95") -> None:
    """`ci95`: {score: [low, high]} in %, low <= high (a record written before it had none)."""
    if not isinstance(intervals, dict):
        raise ValueError(f"{path}: key {name!r} must map scores to [low, high], got {intervals!r}")
    for key, bounds in intervals.items():
        if not (isinstance(bounds, list) and len(bounds) == 2):
            raise ValueError(f"{path}: {name}[{key!r}] must be [low, high], got {bounds!r}")
        for bound in bounds:
            _check_type(path, f"{name}[{key!r}]", bound, _NUMBER)
        if not 0 <= bounds[0] <= bounds[1] <= 100:
            raise ValueError(f"{path}: {name}[{key!r}]={bounds} is not an interval within 0..100")


def _check_type(path: Path, key: str, value: Any, types: tuple[type, ...]) -> None:
    if isinstance(value, bool) or not isinstance(value, types):
        raise ValueError(f"{path}: key {key!r} has invalid value {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{path}: key {key!r} is not finite: {value!r}")


def load_metrics(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Read evaluation jobs' metrics files (each a JSON list of records, one per task); each
    record gains `path`. Raises an error naming the file when it is missing, not JSON, not a
    list, or a record lacks a field."""
    records = []
    for raw in paths:
        path = Path(raw)
        data = read_json(path)
        if not isinstance(data, list):
            raise ValueError(
                f"{path}: expected a list of metrics records, got {type(data).__name__}"
            )
        records += [{**_check_metrics(record, path), "path": str(path)} for record in data]
    return records


METRICS, PREDICTIONS = ".metrics.json", ".predictions.jsonl"  # an evaluation's two files


def evaluation_files(paths: Iterable[str | Path]) -> list[tuple[Path, Path]]:
    """(metrics, predictions) of each evaluation among `paths`: the two files side by side (the
    same prefix); a metrics file whose predictions are not among them stops, naming both."""
    paths = [Path(p) for p in paths]
    pairs = []
    for metrics in (p for p in paths if p.name.endswith(METRICS)):
        predictions = metrics.with_name(metrics.name.removesuffix(METRICS) + PREDICTIONS)
        if predictions not in paths:
            raise ValueError(f"{metrics}: its predictions {predictions} are not among the inputs")
        pairs.append((metrics, predictions))
    return pairs


def prediction_lines(
    predictions: Path, keep: tuple[str, ...] | None = None
) -> dict[str, dict[str, Any]]:
    """Each line of a predictions file by "task#index" (only `keep`'s fields, where given); a line
    without a score stops, naming the file and the line."""
    found = {}
    with predictions.open(encoding="utf-8") as handle:
        for number, text in enumerate(handle, 1):
            line = json.loads(text)
            if "score" not in line:
                raise ValueError(f"{predictions}:{number}: no score")
            kept = line if keep is None else {k: line[k] for k in keep if k in line}
            found[f"{line['task']}#{line['index']}"] = kept
    return found


def load_metrics_with_items(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """The metrics records of the evaluations among `paths` (load_metrics), each with `items`:
    its task's item scores by index from the predictions file beside its metrics, None for an
    item the official evaluator drops (`dropped_officially`). A record whose item count or
    accuracy its predictions do not give stops the job, naming both files."""
    from memrepro.data.io import iter_jsonl
    from memrepro.scoring.metrics import dropped_officially

    records = []
    for metrics, predictions in evaluation_files(paths):
        scored: dict[str, dict[int, tuple[float, bool]]] = {}
        for line in iter_jsonl(predictions, ("task", "index", "score", "failed")):
            scored.setdefault(line["task"], {})[int(line["index"])] = (
                float(line["score"]),
                dropped_officially(line),
            )
        for record in load_metrics([metrics]):
            found = scored.get(record["task"], {})
            _check_items(record, found, f"{metrics} and {predictions}")
            items = {i: None if dropped else score for i, (score, dropped) in found.items()}
            records.append({**record, "items": items})
    return records


def _check_items(
    record: Mapping[str, Any], scored: Mapping[int, tuple[float, bool]], where: str
) -> None:
    """The record's item count, dropped count and accuracy are its predictions'."""
    dropped = sum(d for _, d in scored.values())
    if len(scored) != record["n_items"] or dropped != n_dropped(record):
        raise ValueError(
            f"{where}: task {record['task']!r}: {len(scored)} predictions ({dropped} dropped), "
            f"the metrics say {record['n_items']} items ({n_dropped(record)} dropped)"
        )
    accuracy = 100 * sum(score for score, _ in scored.values()) / len(scored)
    if abs(accuracy - record["accuracy"]) > ROUNDING:
        raise ValueError(
            f"{where}: task {record['task']!r}: the predictions score {accuracy:.4f}, the "
            f"metrics {record['accuracy']}"
        )


def records_of(
    benchmark: str, tasks: Collection[str] | None = None
) -> Callable[[Mapping[str, Any]], bool]:
    """Which metrics records a table reads: those of `benchmark` (of `tasks` only, if given)."""

    def wanted(record: Mapping[str, Any]) -> bool:
        return record["benchmark"] == benchmark and (tasks is None or record["task"] in tasks)

    return wanted


def index_metrics(
    metrics: Iterable[Mapping[str, Any]],
    systems: Mapping[str, Any],
    in_scope: Callable[[Mapping[str, Any]], bool],
) -> dict[Key, Mapping[str, Any]]:
    """Records in scope by (benchmark, task, system, length); an unconfigured system or two
    records of one key are errors naming the file."""
    found: dict[Key, Mapping[str, Any]] = {}
    for record in metrics:
        if not in_scope(record):
            continue
        where = record.get("path", f"metrics of {record['system']!r}")
        if record["system"] not in systems:
            raise ValueError(
                f"{where}: system {record['system']!r} is not configured "
                f"(configured: {', '.join(systems)})"
            )
        key = (record["benchmark"], record["task"], record["system"], int(record["length"]))
        if key in found:
            other = found[key].get("path", "another record")
            raise ValueError(f"{where}: duplicate metrics for {key} (also in {other})")
        found[key] = record
    return found


def official_accuracy(record: Mapping[str, Any]) -> float:
    """The accuracy the official evaluator reports: empty outputs left out when there are any."""
    official = record["accuracy_official"]
    return float(official if n_dropped(record) and official is not None else record["accuracy"])


def n_dropped(record: Mapping[str, Any]) -> int:
    """Items the official evaluator leaves out: failed requests and empty outputs (a metrics
    file written before `n_dropped` existed counted the failed ones only)."""
    return int(record.get("n_dropped", record["n_failed"]))
