"""Table 4's differences are paired: each probe question is its random row reordered, so the
interval of a difference comes from the questions both answered (Newcombe's paired method),
read from the predictions beside each metrics file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from memrepro.report.records import load_metrics_with_items
from memrepro.scoring.compare import _newcombe
from memrepro.scoring.intervals import (
    Z95,
    bootstrap,
    paired_difference_interval,
    paired_proportions_bounds,
)


def table(both: int, first_only: int, second_only: int, neither: int) -> list[tuple[float, float]]:
    """Pairs (first, second) of a paired 2x2 table's counts."""
    return (
        [(1.0, 1.0)] * both
        + [(1.0, 0.0)] * first_only
        + [(0.0, 1.0)] * second_only
        + [(0.0, 0.0)] * neither
    )


def test_uncorrelated_pairs_give_newcombes_interval_for_two_samples():
    # ad = bc: no correlation, so the paired interval is the two Wilson intervals combined
    pairs = table(30, 20, 30, 20)
    low, high = paired_proportions_bounds(pairs)
    assert (low, high) == pytest.approx(_newcombe(50, 100, 60, 100, Z95))


def test_correlated_pairs_give_a_narrower_interval_centred_on_the_difference():
    pairs = table(70, 8, 2, 20)  # the same questions mostly right or wrong together
    low, high = paired_difference_interval(pairs)
    unpaired = _newcombe(78, 100, 72, 100, Z95)
    assert low < 6.0 < high
    assert high - low < 0.6 * 100 * (unpaired[1] - unpaired[0])


@pytest.mark.parametrize("pairs", [table(0, 0, 0, 128), table(128, 0, 0, 0), table(0, 0, 9, 0)])
def test_a_paired_interval_never_has_zero_width(pairs):
    low, high = paired_difference_interval(pairs)
    assert low < high and low <= 100 * np.mean([x - y for x, y in pairs]) <= high


def test_graded_pairs_get_the_bootstrap_of_their_differences():
    pairs = [(0.5, 0.25), (1.0, 0.0), (0.75, 0.75), (0.2, 0.4)] * 5
    assert paired_difference_interval(pairs) == bootstrap([x - y for x, y in pairs])
    with pytest.raises(ValueError, match="at least one item"):
        paired_difference_interval([])


TRIALS = 2000
MC = 3 * np.sqrt(0.05 * 0.95 / TRIALS)  # three Monte-Carlo standard errors at 95 %


@pytest.mark.parametrize(
    "cells",
    [
        (0.60, 0.05, 0.10, 0.25),  # Table 4's case: -5 points, most questions agree
        (0.40, 0.15, 0.15, 0.30),  # no true difference, less agreement
        (0.85, 0.02, 0.08, 0.05),  # near the ceiling
    ],
)
def test_the_paired_interval_covers_the_true_difference_95_percent_at_128_questions(cells):
    """Seeded simulation: 128 questions drawn from a paired 2x2 table of `cells` (both right,
    probe only, random only, neither); the share of intervals holding the true difference is
    95 % within three Monte-Carlo errors (1.5 points) and one point for the score method."""
    rng = np.random.default_rng(128)
    truth = 100 * (cells[1] - cells[2])
    covered = 0
    for counts in rng.multinomial(128, cells, size=TRIALS):
        low, high = paired_difference_interval(table(*counts))
        covered += low <= truth <= high
    assert abs(covered / TRIALS - 0.95) < MC + 0.01


# --- the items behind each record ------------------------------------------------------------


def write_evaluation(where: Path, scores: dict[str, list[float | None]]) -> list[Path]:
    """An evaluation's two files: a metrics record per task and a prediction per item (None: an
    empty output, dropped as the official evaluator does)."""
    records, lines = [], []
    for task, items in scores.items():
        answered = [s for s in items if s is not None]
        records.append(
            {
                "benchmark": "ruler_hqa_probe",
                "task": task,
                "system": "rl",
                "length": 50,
                "n_items": len(items),
                "n_failed": 0,
                "n_dropped": len(items) - len(answered),
                "accuracy": 100 * sum(answered) / len(items),
                "accuracy_official": 100 * sum(answered) / len(answered),
                "mean_tokens": 7000.0,
            }
        )
        for index, score in enumerate(items):
            response = "" if score is None else "the answer is x"
            lines.append(
                {
                    "task": task,
                    "index": index,
                    "score": score or 0.0,
                    "failed": False,
                    "response": response,
                }
            )
    metrics, predictions = where / "50.metrics.json", where / "50.predictions.jsonl"
    where.mkdir(parents=True, exist_ok=True)
    metrics.write_text(json.dumps(records))
    predictions.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return [metrics, predictions]


def test_each_record_carries_its_tasks_items_and_the_dropped_ones_as_none(tmp_path):
    paths = write_evaluation(tmp_path, {"p0_20": [1.0, 0.0, None, 1.0], "p40_60": [0.0, 1.0]})
    first, second = load_metrics_with_items(paths)
    assert first["items"] == {0: 1.0, 1: 0.0, 2: None, 3: 1.0}
    assert second["items"] == {0: 0.0, 1: 1.0} and second["task"] == "p40_60"


def test_records_their_predictions_do_not_give_are_named(tmp_path):
    metrics, predictions = write_evaluation(tmp_path, {"p0_20": [1.0, 0.0, 1.0]})
    with pytest.raises(ValueError, match=r"50\.predictions\.jsonl are not among the inputs"):
        load_metrics_with_items([metrics])
    lines = predictions.read_text().splitlines()
    predictions.write_text("\n".join(lines[:2]) + "\n")
    with pytest.raises(ValueError, match=r"metrics.json and .*'p0_20': 2 predictions .*3 items"):
        load_metrics_with_items([metrics, predictions])
    predictions.write_text(
        "\n".join([*lines[:2], lines[2].replace('"score": 1.0', '"score": 0.0')])
    )
    with pytest.raises(ValueError, match=r"predictions score 33.3333, the metrics 66.66"):
        load_metrics_with_items([metrics, predictions])
