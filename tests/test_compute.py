"""The replication summary's hardware and measured compute: read from Snakemake's benchmark files
of the evaluations, and masked where two runs' reports are compared byte for byte."""

from __future__ import annotations

from pathlib import Path

from memrepro.report.compute import compute_lines, hardware_text, measured
from memrepro.report_digests import input_digest, masked_digest

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def _benchmark(root: Path, system: str, wall: float, cpu: float) -> Path:
    path = root / "benchmarks/evaluate/ruler_hqa" / system / "50.tsv"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + f"{wall}\t0:01:00\t1\t1\t1\t1\t0\t0\t50\t{cpu}\n")
    return path


def test_wall_cpu_and_gpu_hours_sum_the_evaluations_and_a_broken_file_is_counted(tmp_path):
    files = [
        _benchmark(tmp_path, "memagent-14b", 3600.0, 1800.0),
        _benchmark(tmp_path, "closedbook", 7200.0, 7200.0),
    ]
    broken = tmp_path / "benchmarks/evaluate/ruler_hqa/x/50.tsv"
    broken.parent.mkdir(parents=True)
    broken.write_text(HEADER)  # a header and no row
    found = measured([*files, broken], {"memagent-14b": 2, "closedbook": 1})
    assert (found.jobs, found.wall_h, found.cpu_h, found.gpu_h, found.unread) == (
        2,
        3.0,
        2.5,
        4.0,
        1,
    )
    lines = compute_lines({"machine": {"gpus": 8, "nodes": 1}, "gpus": {}}, files)
    assert lines[0] == "Hardware: 8 GPUs on 1 node, as the profile declares."
    assert "2 evaluation jobs behind these tables ran 3.00 wall-hours" in lines[1]


def test_the_machine_in_words():
    assert hardware_text({"gpus": 0, "nodes": None}) == "CPU only"
    assert hardware_text({}).startswith("the profile declares no GPUs or nodes")


def test_two_runs_reports_differ_in_their_measured_compute_alone_and_compare_the_same(tmp_path):
    one, two = tmp_path / "a.md", tmp_path / "b.md"
    one.write_text("Scope: 2 tables.\n\nMeasured compute: 3 evaluation jobs ran 0.15 wall-hours.\n")
    two.write_text("Scope: 2 tables.\n\nMeasured compute: 3 evaluation jobs ran 0.22 wall-hours.\n")
    assert masked_digest(one) == masked_digest(two)
    two.write_text("Scope: 3 tables.\n\nMeasured compute: 3 evaluation jobs ran 0.22 wall-hours.\n")
    assert masked_digest(one) != masked_digest(two)
    record = {"rule": "reproduction", "log": "results/smoke/logs/reproduction.log", "cwd": "."}
    path = "results/smoke/benchmarks/evaluate/ruler_hqa/x/50.tsv"
    assert input_digest(record, path, tmp_path) == "a measured time, masked"
    figure = {**record, "rule": "plot_figure"}  # Figure 10 reads them as numbers it plots
    assert input_digest(figure, path, tmp_path) == "absent"
