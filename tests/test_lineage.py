"""`memrepro lineage`: from a file back through the jobs that made it, by recorded digests."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from memrepro import cli
from memrepro.digests import file_digest
from memrepro.lineage import lineage, render
from memrepro.mlflow_notes import short_digest
from memrepro.tracking.invocation import ENV_INVOCATION
from memrepro.tracking.record import job_run
from memrepro.tracking.results_dir import records_under


@pytest.fixture
def run(tmp_path, monkeypatch) -> Path:
    """A miniature run as Snakemake leaves it: download → train → two evaluations → table, each
    job writing its record; paths relative to the working directory, as in a real run."""
    monkeypatch.setenv("MEMREPRO_TRACKING", "on")
    monkeypatch.delenv(ENV_INVOCATION, raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results/r/provenance").mkdir(parents=True)
    raw = Path("data/hotpot.json")
    raw.parent.mkdir()
    raw.write_text("[]")
    job("download_model", {}, [], ["results/r/models/base"], lambda: write_dir("models/base"))
    job(
        "train",
        {"stage": "2"},
        ["results/r/models/base", str(raw)],
        ["results/r/checkpoints/rl"],
        lambda: write_dir("checkpoints/rl"),
    )
    # Snakemake marks a directory output after its job ended; readers must still match
    Path("results/r/checkpoints/rl/.snakemake_timestamp").write_text("")
    for length in ("50", "100"):
        job(
            "evaluate",
            {"length": length},
            ["results/r/checkpoints/rl", str(raw)],
            [f"results/r/metrics/{length}.json"],
            lambda length=length: Path(f"results/r/metrics/{length}.json").write_text(length),
        )
    job(
        "make_table",
        {"table": "table3"},
        ["results/r/metrics/50.json", "results/r/metrics/100.json"],
        ["results/r/tables/table3.md"],
        lambda: Path("results/r/tables/table3.md").write_text("| a |"),
    )
    return tmp_path


def write_dir(name: str) -> None:
    out = Path("results/r") / name
    out.mkdir(parents=True)
    (out / "model.safetensors").write_bytes(name.encode())


def job(rule, wildcards, inputs, outputs, body) -> None:
    label = "_".join(wildcards.values()) or "all"
    log = Path(f"results/r/logs/{rule}/{label}.log")
    log.parent.mkdir(parents=True, exist_ok=True)
    for out in outputs:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
    paths = [Path(p) for p in inputs]
    with job_run(rule, wildcards, {}, paths, [Path(p) for p in outputs], log):
        body()


def names(graph) -> list[str]:
    return sorted(job["name"] for job in graph["jobs"].values())


def test_a_table_leads_back_through_the_checkpoint_to_the_base_model_and_the_raw_data(run):
    records = records_under(run / "results/r")
    graph = lineage(Path("results/r/tables/table3.md"), records)
    assert names(graph) == [
        "download_model all",
        "evaluate 100",
        "evaluate 50",
        "make_table table3",
        "train 2",
    ]
    assert graph["sources"] == {
        str(run / "data/hotpot.json"): file_digest(run / "data/hotpot.json")
    }
    train = next(j for j in graph["jobs"].values() if j["name"] == "train 2")
    base = str(run / "results/r/models/base")
    assert graph["jobs"][train["inputs"][base]["producer"]]["name"] == "download_model all"
    assert train["tags"]["git.commit"] and "accelerator" in train["tags"]
    text = render(graph, {graph["target"]["producer"]: "abc123"}, run)
    assert text.startswith("results/r/tables/table3.md  sha256:")
    assert "<- make_table table3  FINISHED" in text and "mlflow run abc123" in text
    assert text.count("<- train 2") == 2 and "<- train 2  (above)" in text
    assert "5 jobs; 1 source written by none:\n  data/hotpot.json  sha256:" in text


def test_a_file_changed_after_its_job_has_no_producer_and_says_who_wrote_it(run):
    records = records_under(run / "results/r")
    table = Path("results/r/tables/table3.md")
    written = file_digest(table)
    table.write_text("| edited by hand |")
    graph = lineage(table, records)
    assert graph["target"]["producer"] is None and graph["jobs"] == {}
    assert graph["target"]["rewritten"]["digest"] == written
    assert "(changed since record" in render(graph, {}, run)


def test_memrepro_lineage_prints_the_chain_or_json(run, capsys):
    cli.main(["lineage", "results/r/checkpoints/rl"])
    text = capsys.readouterr().out
    assert text.splitlines()[1].startswith("  <- train 2  FINISHED")
    cli.main(["lineage", "--json", "results/r/metrics/50.json"])
    graph = json.loads(capsys.readouterr().out)
    assert names(graph) == ["download_model all", "evaluate 50", "train 2"]
    with pytest.raises(SystemExit, match="not inside a results directory"):
        cli.main(["lineage", "data/hotpot.json"])
    with pytest.raises(SystemExit, match="no such file"):
        cli.main(["lineage", "results/r/tables/nothing.md"])


def test_a_damaged_record_line_is_skipped_and_named_never_read_as_no_producer(run, capsys):
    record = Path("results/r/logs/evaluate/50.provenance.jsonl")
    lines = record.read_text().splitlines(keepends=True)
    # a bad line that is not the last (a metrics line: the job's outputs stay known)
    record.write_text(lines[0] + "not json\n" + "".join(lines[1:]))
    train = Path("results/r/logs/train/2.provenance.jsonl")
    data = train.read_bytes()
    train.write_bytes(data[: data.rindex(b"\n", 0, -1) + 20])  # its end line cut mid-write
    cli.main(["lineage", "results/r/tables/table3.md"])
    text = capsys.readouterr().out
    assert "<- evaluate 50  FINISHED" in text  # the rest of the damaged record is used
    assert f"{record}:2: not a JSON line" in text
    with pytest.raises(SystemExit) as exited:  # no lineage is never a success
        cli.main(["lineage", "results/r/checkpoints/rl"])
    assert exited.value.code == 1
    text = capsys.readouterr().out
    assert "no readable record wrote this file; the damaged lines below may have" in text
    assert f"{train}:2: cut mid-line (the job was killed while writing it)" in text
    assert "0 jobs" not in text


def test_a_file_no_job_wrote_says_so_without_an_empty_summary(run, capsys):
    Path("results/r/notes.txt").write_text("by hand")
    with pytest.raises(SystemExit, match="1"):
        cli.main(["lineage", "results/r/notes.txt"])
    text = capsys.readouterr().out
    assert text.splitlines()[1:] == ["  (no job of this run wrote this file)"]


def test_lineage_into_a_closed_pipe_ends_quietly(run):
    """As `memrepro lineage … | head`, whose reader is gone before the report is written."""
    import subprocess
    import sys

    for extra in ([], ["--json"]):
        command = [
            sys.executable,
            "-m",
            "memrepro.cli",
            "lineage",
            *extra,
            "results/r/tables/table3.md",
        ]
        job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        job.stdout.close()  # long before the process has imported anything
        stderr = job.stderr.read().decode()
        assert job.wait() == 141 and stderr == ""


def test_a_copy_elsewhere_with_the_original_gone_keeps_its_lineage(run, capsys, caplog):
    """Records name paths as their jobs saw them: a copied or moved results directory is read
    rebased onto where it lies now, and says so in one line."""
    caplog.set_level("INFO", logger="memrepro.tracking")
    copy = run.with_name(f"{run.name}-laptop")
    shutil.copytree(run, copy, symlinks=True)
    shutil.rmtree(run / "results")
    os.chdir(copy)
    cli.main(["lineage", "--json", "results/r/tables/table3.md"])
    graph = json.loads(capsys.readouterr().out)
    assert len(graph["jobs"]) == 5 and graph["target"]["path"].startswith(str(copy))
    checkpoint = str(copy / "results/r/checkpoints/rl")
    assert any(checkpoint in job["inputs"] for job in graph["jobs"].values())
    assert f"records written in {run / 'results/r'}, read here" in caplog.text


def test_a_results_directory_reached_through_a_symlink_keeps_its_lineage(run, capsys):
    """`results` a link to another disk (scratch space): the footnote's command still works."""
    shutil.move(run / "results", run / "scratch")
    (run / "results").symlink_to(run / "scratch")
    cli.main(["lineage", "results/r/tables/table3.md"])
    text = capsys.readouterr().out
    assert "<- make_table table3  FINISHED" in text
    assert "5 jobs; 1 source written by none:" in text


def test_a_changed_intermediate_is_named_with_both_digests_and_fails(run, capsys):
    """Not only the file asked about: every file on the trace is hashed again."""
    metrics = Path("results/r/metrics/50.json")
    recorded = file_digest(metrics)
    metrics.write_text("50 ")  # one space appended by hand, after the table was made
    graph = lineage(Path("results/r/tables/table3.md"), records_under(run / "results/r"))
    assert graph["target"]["producer"]  # the table itself is as its job wrote it
    assert graph["changed"] == [
        {"path": str(run / metrics), "recorded": recorded, "now": file_digest(metrics)}
    ]
    with pytest.raises(SystemExit) as exited:
        cli.main(["lineage", "results/r/tables/table3.md"])
    assert exited.value.code == 1
    text = capsys.readouterr().out
    now = short_digest(file_digest(metrics))
    assert f"results/r/metrics/50.json  {short_digest(recorded)}  CHANGED: now {now}" in text
    assert (
        "1 file on the trace changed since its reader ran (recorded -> now):\n"
        f"  results/r/metrics/50.json  {short_digest(recorded)} -> {now}"
    ) in text


def test_a_changed_or_deleted_source_is_flagged_and_an_unchanged_trace_passes(run, capsys):
    cli.main(["lineage", "results/r/tables/table3.md"])  # nothing changed: exit 0
    assert "changed since" not in capsys.readouterr().out
    Path("data/hotpot.json").unlink()
    graph = lineage(Path("results/r/tables/table3.md"), records_under(run / "results/r"))
    assert [(c["path"], c["now"]) for c in graph["changed"]] == [
        (str(run / "data/hotpot.json"), None)
    ]
    assert "data/hotpot.json  sha256:" in render(graph, {}, run)
    assert "CHANGED: now gone" in render(graph, {}, run)


def test_a_download_shows_the_origin_its_manifest_names(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MEMREPRO_TRACKING", "on")
    monkeypatch.delenv(ENV_INVOCATION, raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results/r/provenance").mkdir(parents=True)
    raw, manifest = "results/r/raw/hotpot.json", "results/r/raw/hotpot.json.manifest.json"
    url = "https://example.org/hotpot_dev_distractor_v1.json"

    def download() -> None:
        Path(raw).write_text("[]")
        entry = {"source": url, "path": raw, "sha256": "ab" * 32, "bytes": 2, "revision": "c0"}
        Path(manifest).write_text(json.dumps(entry))

    job("download_data", {"source": "hotpot"}, [], [raw, manifest], download)
    rows = Path("results/r/data/set.json")
    job("synth", {"n": "1"}, [raw], [str(rows)], lambda: rows.write_text("rows"))
    cli.main(["lineage", "results/r/data/set.json"])
    text = capsys.readouterr().out
    assert f"origin source={url} revision=c0 sha256={'ab' * 32}" in text
    assert "2 jobs; 0 sources written by none.\n" in text + "\n"  # no list: no colon


def test_a_folder_named_like_a_record_is_named_and_the_chain_still_read(run, capsys):
    Path("results/r/logs/stray/x.provenance.jsonl").mkdir(parents=True)
    cli.main(["lineage", "results/r/checkpoints/rl"])
    text = capsys.readouterr().out
    assert text.splitlines()[1].startswith("  <- train 2  FINISHED")
    assert "results/r/logs/stray/x.provenance.jsonl: not a file, so no job record" in text
