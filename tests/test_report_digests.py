"""memrepro.report_digests: report jobs' outputs recorded against what they read, and compared."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memrepro import report_digests

FOOTNOTE = "Made by commit {commit}, config c0ffee, invocation {invocation}; its lineage: x\n"


def finished_job(root: Path, name: str, table: str, read: str, start_ms: int = 1) -> None:
    """A results directory with one make_table job that read `read` and wrote `table`, and its
    provenance record as the jobs write it (a start line, then an end line)."""
    results = root / "results/smoke"
    (results / "eval").mkdir(parents=True, exist_ok=True)
    (results / "tables").mkdir(exist_ok=True)
    (results / f"eval/{name}.metrics.json").write_text(read)
    (results / f"tables/{name}.md").write_text(table)
    logs = results / "logs/make_table"
    logs.mkdir(parents=True, exist_ok=True)
    events = [
        {
            "event": "start",
            "rule": "make_table",
            "start_ms": start_ms,
            "cwd": str(root),
            "log": f"results/smoke/logs/make_table/{name}.log",
            "inputs": {f"results/smoke/eval/{name}.metrics.json": "sha256:x"},
            "params": {"name": name},
        },
        {
            "event": "end",
            "status": "FINISHED",
            "outputs": {f"results/smoke/tables/{name}.md": "sha256:y"},
        },
    ]
    record = logs / f"{name}.{start_ms}.provenance.jsonl"
    record.write_text("".join(json.dumps(e) + "\n" for e in events))


def test_the_footnote_is_masked_and_nothing_else(tmp_path):
    one, two = tmp_path / "one.md", tmp_path / "two.md"
    one.write_text("| 1.0 |\n" + FOOTNOTE.format(commit="abc", invocation="20261128T1-a"))
    two.write_text("| 1.0 |\n" + FOOTNOTE.format(commit="def", invocation="20261129T2-b"))
    assert report_digests.masked_digest(one) == report_digests.masked_digest(two)
    two.write_text("| 1.1 |\n" + FOOTNOTE.format(commit="def", invocation="20261129T2-b"))
    assert report_digests.masked_digest(one) != report_digests.masked_digest(two)
    csv = tmp_path / "one.csv"  # a CSV is compared whole
    csv.write_text(FOOTNOTE.format(commit="abc", invocation="i"))
    other = tmp_path / "two.csv"
    other.write_text(FOOTNOTE.format(commit="def", invocation="i"))
    assert report_digests.masked_digest(csv) != report_digests.masked_digest(other)


def test_a_job_that_read_the_same_must_write_the_same(tmp_path):
    before, after = tmp_path / "before", tmp_path / "after"
    finished_job(before, "table1", "| 40.0 |\n", read='{"acc": 0.4}')
    finished_job(before, "table2", "| 10.0 |\n", read='{"acc": 0.1}')
    recorded = report_digests.report_jobs(before / "results/smoke")
    finished_job(after, "table1", "| 41.0 |\n", read='{"acc": 0.4}')  # same input, new text
    found = report_digests.compare(recorded, report_digests.report_jobs(after / "results/smoke"))
    assert found["differ"] == ["results/smoke/tables/table1.md"]
    assert found["missing"] == ["results/smoke/tables/table2.md"]  # recorded, not run


def test_a_job_that_read_something_else_is_not_compared(tmp_path):
    before, after = tmp_path / "before", tmp_path / "after"
    finished_job(before, "table1", "| 40.0 |\n", read='{"acc": 0.4}')
    finished_job(after, "table1", "| 50.0 |\n", read='{"acc": 0.5}', start_ms=1)
    finished_job(after, "table1", "| 50.0 |\n", read='{"acc": 0.5}', start_ms=2)  # a rerun
    found = report_digests.compare(
        report_digests.report_jobs(before / "results/smoke"),
        report_digests.report_jobs(after / "results/smoke"),
    )
    assert found["not_compared"] == ["results/smoke/tables/table1.md"]
    assert found["same"] == found["differ"] == []


def test_the_command_records_then_checks(tmp_path, capsys):
    finished_job(tmp_path, "table1", "| 40.0 |\n", read="{}")
    results, digests = tmp_path / "results/smoke", tmp_path / "digests.json"
    report_digests.main(["record", str(results), str(digests)])
    with pytest.raises(SystemExit) as done:
        report_digests.main(["check", str(results), str(digests)])
    assert done.value.code == 0
    assert "1 same, 0 differ, 0 not compared, 0 missing, 0 new" in capsys.readouterr().out
    (results / "tables/table1.md").write_text("| 41.0 |\n")
    with pytest.raises(SystemExit) as done:
        report_digests.main(["check", str(results), str(digests)])
    assert done.value.code == 1
    assert "differ: results/smoke/tables/table1.md" in capsys.readouterr().out
