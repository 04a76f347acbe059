"""`memrl verify` on runs it cannot check: one sentence naming the file, rc 1. The smoke run's
own check and its tamperings are in tests/test_workflow.py (they need the run)."""

from __future__ import annotations

import pytest

from memrl import verify


def run_verify(path) -> str:
    with pytest.raises(SystemExit) as done:
        verify.main([str(path)])
    return str(done.value.code)


def test_a_directory_without_job_records_is_not_a_run(tmp_path):
    assert (
        run_verify(tmp_path)
        == f"memrl verify: {tmp_path}: not a results directory (no logs/ with job records)"
    )


def test_a_metrics_file_needs_its_predictions_and_a_job_that_wrote_it(tmp_path):
    (tmp_path / "logs").mkdir()
    metrics = tmp_path / "eval/ruler/sys/1024.metrics.json"
    metrics.parent.mkdir(parents=True)
    metrics.write_text("[]")
    assert run_verify(tmp_path).endswith(
        "1024.metrics.json: no predictions file beside it (1024.predictions.jsonl)"
    )
    (tmp_path / "eval/ruler/sys/1024.predictions.jsonl").write_text('{"task": "t", "index": 0}\n')
    assert run_verify(tmp_path).endswith("1024.metrics.json: no finished job of this run wrote it")


@pytest.mark.parametrize(
    ("held", "derived", "same"),
    [
        (0.1 + 0.2, 0.3, True),  # rounding in the last places
        (1.0, 1, False),  # a float turned int is a change of type
        ({"a": [1.0, 2.0]}, {"a": [1.0, 2.0]}, True),
        ({"a": 1.0}, {"a": 1.0, "b": 2.0}, False),
        ([0.5], [0.5, 0.5], False),
    ],
)
def test_numbers_are_the_same_up_to_rounding_and_type(held, derived, same):
    assert verify.same_number(held, derived) is same
