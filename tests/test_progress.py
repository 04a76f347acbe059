"""Progress as plain lines: at the start, at most every few seconds, at the end; no redraws."""

from __future__ import annotations

import io
import logging

import pytest

from memrepro.evaluation import evaluate
from memrepro.progress import Progress, format_seconds, on_engine_call, progress, quantity


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_lines_give_done_rate_and_eta_and_come_at_most_every_interval():
    clock, out = Clock(), io.StringIO()
    shown = Progress("hqa (rl ruler_hqa@50)", total=10, done=2, clock=clock, out=out)
    shown.emit(force=True)
    clock.now = 4.0
    shown.advance(2)  # 4 s after the first line: too soon
    clock.now = 20.0
    shown.call(8, 3)  # an engine call of the next wave, 20 s in
    clock.now = 21.0
    shown.advance(6)  # the last: always shown
    lines = out.getvalue().splitlines()
    assert lines == [
        "hqa (rl ruler_hqa@50): 2/10 samples (20 %), 0.00 samples/s, ETA —",
        "hqa (rl ruler_hqa@50): 4/10 samples (40 %), 0.10 samples/s, ETA 60 s"
        " · wave: 1 engine calls, 3 unfinished",
        "hqa (rl ruler_hqa@50): 10/10 samples (100 %), 0.38 samples/s, ETA —",
    ]
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()


def test_seconds_read_as_a_person_would():
    assert [format_seconds(s) for s in (42, 420, 12_000)] == ["42 s", "7 min", "3.3 h"]


def test_an_evaluation_prints_its_progress_on_the_console_and_in_the_log(tmp_path, capsys, caplog):
    rows = [{"index": i, "num_tokens": 10} for i in range(5)]

    def run_wave(wave):
        on_engine_call(len(wave), 0)  # what drive() does for each engine call
        return [{"index": row["index"], "failed": False} for row in wave]

    with caplog.at_level(logging.INFO, logger="memrepro.progress"):
        evaluate(rows, run_wave, tmp_path / "p.jsonl", batch_size=2, label="task (sys)")
    console = capsys.readouterr().out.splitlines()
    assert console[0].startswith("task (sys): 0/5 samples (0 %)")
    assert console[-1].startswith("task (sys): 5/5 samples (100 %)")
    assert [r.getMessage() for r in caplog.records] == console  # the log has the same lines
    with progress("nothing", total=0):
        pass
    on_engine_call(1, 0)  # outside any loop: nothing to tick


@pytest.mark.parametrize(
    ("noun", "n", "expected"),
    [
        ("job", 1, "1 job"),
        ("job", 0, "0 jobs"),
        ("summary", 2, "2 summaries"),
        ("day", 3, "3 days"),
        ("batch", 2, "2 batches"),
        ("sample", 1_000, "1,000 samples"),
    ],
)
def test_a_count_reads_in_english(noun, n, expected):
    assert quantity(n, noun) == expected


def test_a_progress_line_of_summaries_says_summaries():
    out = io.StringIO()
    bar = Progress("keywords booksum", 3, unit="summary", out=out, clock=lambda: 0.0)
    assert "0/3 summaries (0 %), 0.00 summaries/s" in bar.line()
