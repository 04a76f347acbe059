"""run.json and pipeline_info/: one run in one place, from the job records and benchmarks."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_tracking import CONFIG, INVOKED, mark_ended, run_job, tracked_results

from memrepro.tracking.invocation import start_invocation
from memrepro.tracking.pipeline_info import INFO_DIR, RUN_SUMMARY, container_of, write_pipeline_info
from memrepro.tracking.record import read_record


@pytest.fixture
def results(tmp_path, monkeypatch) -> Path:
    return tracked_results(tmp_path, monkeypatch)


BENCHMARK = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def two_jobs_and_a_table(results: Path) -> dict[str, dict]:
    """Jobs a and b (a with a Snakemake benchmark), a score table, its q-values, a claim."""
    start_invocation(results, "sqlite:///results/t/mlflow.db", CONFIG, "9.0", **INVOKED)
    records = {name: read_record(run_job(results, name)) for name in ("a", "b")}
    benchmark = results / "benchmarks/rule_a/a.tsv"
    benchmark.parent.mkdir(parents=True)
    benchmark.write_text(BENCHMARK + "6.1\t0:00:06\t2048.5\t1\t1\t1\t0\t0\t80\t3.25\n")
    tables = results / "tables"
    tables.mkdir()
    (tables / "table1.csv").write_text(
        "system,label,kind,ours,ci_low,ci_high,paper,delta,diff_low,diff_high,verdict,p_value\n"
        "Ours,50 docs,cell,81.2,73.0,87.5,80.5,0.7,-6.9,8.2,reproduced,0.85\n"
        "Ours,100 docs,cell,70.0,61.0,78.0,,,,,,\n"
    )
    (tables / "recipes.csv").write_text("system,key,ours,paper\nOurs,lr,1e-6,1e-6\n")  # text
    (results / "reproduction.cells.csv").write_text(
        "paper,table,system,label,verdict,kind,p_value,q_value\n"
        "MemAgent,table1,Ours,50 docs,reproduced,cell,0.85,0.85\n"
    )
    check = {"text": "holds above 95 %", "system": "Ours", "outcome": "holds", "detail": "97"}
    (results / "figures").mkdir()
    (results / "figures/figure5.claims.json").write_text(json.dumps([check]))
    mark_ended(results)
    return records


def test_the_trace_run_json_and_timeline_state_what_the_records_and_benchmarks_say(results):
    records = two_jobs_and_a_table(results)
    written = write_pipeline_info(results)
    assert {p.name for p in written} >= {"trace.tsv", "software_versions.json", RUN_SUMMARY}
    info = results / INFO_DIR
    trace = {row["job"]: row for row in csv.DictReader((info / "trace.tsv").open(), delimiter="\t")}
    assert set(trace) == {"rule_a a", "rule_b b"}
    a, b = trace["rule_a a"], trace["rule_b b"]
    assert float(a["wall_s"]) == records["a"]["wall_s"] and a["status"] == "FINISHED"
    assert float(a["cpu_s"]) == 3.25 and b["cpu_s"] == ""  # b has no benchmark
    assert float(a["peak_rss_mb"]) == 2048.5  # the benchmark's, above the process's own
    assert float(b["peak_rss_mb"]) == records["b"]["peak_rss_mb"]
    [stack] = json.loads((info / "software_versions.json").read_text())
    assert stack["rules"] == ["rule_a", "rule_b"]
    assert stack["env.lock.digest"] == records["a"]["tags"]["env.lock.digest"]
    summary = json.loads((results / RUN_SUMMARY).read_text())
    assert summary["invocation"]["command"] == " ".join(INVOKED["command"])
    assert summary["invocation"]["targets"] == "table3" and summary["config"] == CONFIG
    assert summary["config_hash"] == records["a"]["tags"]["config.hash"]
    assert summary["invocation"]["status"] == "FINISHED"
    cells = summary["cells"]  # the score table's two cells, not the text table's row
    assert [(c["label"], c["q_value"]) for c in cells] == [("50 docs", "0.85"), ("100 docs", "")]
    assert cells[0]["ci_low"] == "73.0" and cells[0]["verdict"] == "reproduced"
    assert summary["claims"] == [{"source": "figure5", **json.loads(
        (results / "figures/figure5.claims.json").read_text()
    )[0]}]  # fmt: skip
    [timeline] = info.glob("timeline_*.html")
    assert timeline.read_text().count("<rect ") == 2


def test_a_summary_that_cannot_be_made_replaces_nothing_and_exits_non_zero(results):
    two_jobs_and_a_table(results)
    write_pipeline_info(results)
    before = {p: p.read_bytes() for p in [*(results / INFO_DIR).iterdir(), results / RUN_SUMMARY]}
    (results / "figures/figure5.claims.json").write_text("[{")  # damaged
    run_job(results, "c")  # a new job the trace would list
    done = subprocess.run(
        [sys.executable, "-m", "memrepro.tracking.pipeline_info", str(results)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0 and "figure5.claims.json" in done.stderr
    assert {p: p.read_bytes() for p in before} == before


def test_the_report_files_it_reads_are_named_as_the_report_writes_them():
    """tracking cannot import report (the layers): its copies of the two names must agree."""
    from memrepro.report.claims import CLAIMS_SUFFIX
    from memrepro.report.reproduction import CELLS_SUFFIX
    from memrepro.tracking import pipeline_info

    assert pipeline_info.CLAIMS_SUFFIX == CLAIMS_SUFFIX
    assert f"reproduction{CELLS_SUFFIX}" == pipeline_info.CELLS_FILE


def test_a_verl_jobs_container_names_where_its_ray_and_driver_ran():
    own = {"container.image": "none (ran in /venv)"}
    assert container_of(own) == "none (ran in /venv)"
    ray = {**own, "ray.container.image": "/shared/train.sif"}
    assert container_of(ray) == "none (ran in /venv); Ray and verl: /shared/train.sif"


def test_each_cell_names_the_job_that_wrote_its_table_and_marks_one_no_job_wrote(results):
    """A table left by another config (or by hand) is marked, not passed off as this run's."""
    import os

    from memrepro.tracking.invocation import ENV_INVOCATION
    from memrepro.tracking.record import job_run, settings_digest

    two_jobs_and_a_table(results)  # its table1.csv is written by no job
    made = results / "tables/table2.csv"
    log = results / "logs/make_table/table2.log"
    log.parent.mkdir(parents=True)
    settings = {"table": "table2", "caption": "c"}
    with job_run("make_table", {"name": "table2"}, settings, [], [made], log):
        made.write_text(
            "system,label,kind,ours,ci_low,ci_high,paper,delta,diff_low,diff_high,verdict,p_value\n"
            "Ours,7K,cell,50.0,41.0,59.0,,,,,,\n"
        )
    write_pipeline_info(results)
    cells = {c["table"]: c for c in json.loads((results / RUN_SUMMARY).read_text())["cells"]}
    assert cells["table2"]["written_by"] == {
        "invocation": os.environ[ENV_INVOCATION],
        "config_hash": json.loads((results / RUN_SUMMARY).read_text())["config_hash"],
        "settings_digest": settings_digest(settings),
    }
    assert cells["table2"]["same_config"] is True
    assert cells["table1"]["written_by"] is None and cells["table1"]["same_config"] is False


@pytest.mark.parametrize("text", [BENCHMARK, BENCHMARK + "x\ty\tz\n", b"\xff\xfe"])
def test_a_damaged_benchmark_reads_as_none_with_a_warning_naming_it(results, text, caplog):
    two_jobs_and_a_table(results)
    benchmark = results / "benchmarks/rule_a/a.tsv"
    benchmark.write_bytes(text if isinstance(text, bytes) else text.encode())
    write_pipeline_info(results)
    trace = csv.DictReader((results / INFO_DIR / "trace.tsv").open(), delimiter="\t")
    assert {row["job"]: row["cpu_s"] for row in trace}["rule_a a"] == ""
    assert f"{benchmark}: not a Snakemake benchmark" in caplog.text


@pytest.mark.parametrize("damaged", ["[{", "[1]", '{"a": 1}'])
def test_a_damaged_claims_file_is_one_sentence_naming_it(results, damaged):
    two_jobs_and_a_table(results)
    claims = results / "figures/figure5.claims.json"
    claims.write_text(damaged)
    done = subprocess.run(
        [sys.executable, "-m", "memrepro.tracking.pipeline_info", str(results)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"pipeline_info: {claims}")
    assert not (results / RUN_SUMMARY).exists()
