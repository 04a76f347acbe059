"""Provenance: records written by jobs without MLflow, loaded into MLflow once per invocation."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from unittest.mock import ANY

import pytest

from memrepro import mlflow_notes as notes
from memrepro.tracking.invocation import (
    ENV_GIT_COMMIT,
    ENV_GIT_DIFF,
    ENV_GIT_DIRTY,
    ENV_INVOCATION,
    commit_text,
    end_invocation,
    git_state,
    now_ms,
    start_invocation,
)
from memrepro.tracking.loader import RUNS_FILE, load
from memrepro.tracking.record import RECORD_SUFFIX, job_run, read_record, record_path
from memrepro.tracking.results_dir import records_under
from memrepro.tracking.store import EXPERIMENT

CONFIG = {"run": "t", "seed": 1}
INVOKED = {"command": ["snakemake", "--profile", "profiles/smoke", "table3"], "targets": ["table3"]}


@pytest.fixture
def results(tmp_path, monkeypatch) -> Path:
    return tracked_results(tmp_path, monkeypatch)


def tracked_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """results/t under `tmp_path`, the working directory, with tracking on and no invocation."""
    for name in (
        ENV_INVOCATION,
        ENV_GIT_COMMIT,
        ENV_GIT_DIRTY,
        "MLFLOW_TRACKING_URI",
        "MLFLOW_RUN_ID",
    ):  # set then deleted: monkeypatch restores the variable's absence after the test
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    monkeypatch.setenv("MEMREPRO_TRACKING", "on")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "results/t"


def run_job(results: Path, name: str, body=None, metrics=({"accuracy": 50.0},)) -> Path:
    log = results / f"logs/rule_{name}/{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("job log\n")
    out = results / f"out/{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    with job_run(
        f"rule_{name}", {"k": name}, {"a": {"b": 1}, "xs": [1, 2]}, [log], [out], log
    ) as record:
        for step, values in enumerate(metrics):
            record.log_metrics(values, step=step)
        out.write_text("{}")
        if body is not None:
            body(record)
    return record_path(log)


def mark_ended(results: Path, status: str = "FINISHED") -> None:
    """What `end_invocation` writes before it loads (which these tests do themselves)."""
    [path] = (results / "provenance").glob("*.json")
    invocation = json.loads(path.read_text())
    path.write_text(json.dumps({**invocation, "end_ms": now_ms(), "status": status}))


def mlflow_runs(results: Path) -> dict[str, dict]:
    db = sqlite3.connect(results / "mlflow.db")
    runs = {
        run: {"name": name, "status": status, "tags": {}, "params": {}, "metrics": {}}
        for run, name, status in db.execute("select run_uuid, name, status from runs")
    }
    for table in ("tags", "params"):
        for run, key, value in db.execute(f"select run_uuid, key, value from {table}"):
            runs[run][table][key] = value
    for run, key, value, step in db.execute("select run_uuid, key, value, step from metrics"):
        runs[run]["metrics"][(key, step)] = value
    return runs


def test_a_job_writes_its_record_next_to_its_log_without_importing_mlflow(tmp_path):
    script = f"""
import sys
from pathlib import Path
from memrepro import mlflow_notes as notes
from memrepro.tracking.record import job_run
log = Path({str(tmp_path)!r}) / "logs/x.log"
log.parent.mkdir(parents=True)
with job_run("x", {{}}, {{}}, [], [], log) as record:
    record.log_metrics({{"m": 1}})
assert "mlflow" not in sys.modules, "a job imported mlflow"
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    record = read_record(tmp_path / "logs/x.provenance.jsonl")
    assert record["status"] == "FINISHED" and record["metrics"][0]["values"] == {"m": 1.0}


def test_record_holds_tags_params_digests_metrics_and_resources(results):
    path = run_job(results, "a", metrics=({"loss": 2.0}, {"loss": 1.0}))
    record = read_record(path)
    assert record["rule"] == "rule_a" and record["wildcards"] == {"k": "a"}
    assert record["params"] == {"a.b": "1", "xs": "[1, 2]"}
    assert set(record["tags"]) >= {"git.commit", "git.dirty", "host", "config.hash"}
    assert record["inputs"][str(results / "logs/rule_a/a.log")].startswith("sha256:")
    assert record["outputs"][str(results / "out/a.json")] == (
        "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
    )
    assert [m["values"]["loss"] for m in record["metrics"]] == [2.0, 1.0]
    assert record["status"] == "FINISHED" and record["wall_s"] >= 0 and record["peak_rss_mb"] > 0


def test_tags_learnt_while_a_job_runs_join_its_starts_tags(results):
    ray = {"ray.container.env": "train", "ray.container.image": "/shared/train.sif"}
    path = run_job(results, "t", body=lambda record: record.add_tags(ray))
    tags = read_record(path)["tags"]
    assert tags["ray.container.env"] == "train" and "git.commit" in tags  # the start's kept
    assert tags["container.image"].startswith("none (ran in ")  # the job itself: on the host


def test_metric_names_keep_only_what_mlflow_accepts(results):
    path = run_job(results, "m", metrics=({"longmemeval_s*.accuracy": 1.0, "a b/c:d-e.f": 2},))
    [metrics] = read_record(path)["metrics"]
    assert metrics["values"] == {"longmemeval_s_.accuracy": 1.0, "a b/c:d-e.f": 2.0}


def test_failed_and_interrupted_jobs_say_so(results):
    def fail(_):
        raise ValueError("bad row")

    def interrupt(_):
        raise KeyboardInterrupt

    with pytest.raises(ValueError):
        run_job(results, "f", body=fail)
    with pytest.raises(KeyboardInterrupt):
        run_job(results, "i", body=interrupt)
    assert read_record(results / "logs/rule_f/f.provenance.jsonl")["status"] == "FAILED"
    assert read_record(results / "logs/rule_i/i.provenance.jsonl")["status"] == "KILLED"


def test_a_rerun_keeps_the_earlier_attempt_even_a_damaged_one(results, caplog):
    first = read_record(run_job(results, "a"))
    path = run_job(results, "a")
    second = read_record(path)
    assert second["record"] != first["record"] and len(second["metrics"]) == 1
    kept = path.with_name(f"a.{first['record']}{RECORD_SUFFIX}")
    assert read_record(kept)["record"] == first["record"]
    # a damaged line costs that line: the attempt is kept under its id, the rest readable
    path.write_text('{"event": "start", "record": "x"}\ngarbage\n{"event": "end"}\n')
    third = read_record(run_job(results, "a"))  # a damaged record never stops a job
    assert third["record"] not in (first["record"], second["record"])
    kept_aside = path.with_name(f"a.x{RECORD_SUFFIX}")
    aside = read_record(kept_aside)
    assert aside["damaged"] == [f"{kept_aside}:2: not a JSON line (Expecting value, column 1)"]
    # one without a readable start line is set aside, out of the loader's way
    path.write_text('garbage\n{"event": "end"}\n')
    run_job(results, "a")
    [damaged] = path.parent.glob("a.damaged-*")
    assert "garbage" in damaged.read_text() and not damaged.name.endswith(RECORD_SUFFIX)
    assert f"{path}:1: not a JSON line" in caplog.text
    # a job killed mid-write: the cut line is reported, what came before is kept
    with path.open("a") as handle:
        handle.write('{"event": "metr')
    cut = read_record(path)
    assert cut["status"] == "FINISHED"
    assert cut["damaged"] == [f"{path}:4: cut mid-line (the job was killed while writing it)"]


def test_one_parent_per_invocation_one_child_per_job_and_loading_twice_adds_nothing(results):
    start_invocation(results, "sqlite:///results/t/mlflow.db", CONFIG, "9.0", **INVOKED)
    run_job(results, "a", metrics=({"accuracy": 50.0}, {"accuracy": 75.0}))
    run_job(results, "b")
    # what the run reproduced: two judged cells and a table's claims
    (results / "reproduction.cells.csv").write_text(
        "paper,table,system,label,verdict,kind,p_value,q_value\n"
        "MemAgent,table1,A,50,reproduced,cell,0.8,0.9\nMemAgent,table1,A,100,differs below,cell,"
        "0.001,0.002\n"
    )
    (results / "tables").mkdir()
    (results / "tables/table1.claims.json").write_text('[{"outcome": "holds"}]')
    mark_ended(results)

    assert load(results) == {"invocations": 1, "jobs": 2, "waiting": 0, "traces": 0}
    assert load(results) == {"invocations": 0, "jobs": 0, "waiting": 0, "traces": 0}
    runs = mlflow_runs(results)
    [parent] = [r for r in runs if "memrepro.invocation.parent" in runs[r]["tags"]]
    assert runs[parent]["params"] == {"run": "t", "seed": "1"}  # the resolved config
    summary = {k: v for (k, _), v in runs[parent]["metrics"].items()}
    assert summary["cells.reproduced"] == summary["cells.differs_below"] == 1.0
    assert summary["cells.consistent"] == 0.0 and summary["claims.holds"] == 1.0
    assert summary["claims.does_not_hold"] == 0.0
    assert re.fullmatch(r"t \d\d-\d\d \d\d:\d\d table3", runs[parent]["name"])  # start, targets
    assert runs[parent]["tags"]["command"] == "snakemake --profile profiles/smoke table3"
    assert runs[parent]["tags"]["profile"] == "profiles/smoke"
    described = runs[parent]["tags"][notes.NOTE_TAG]
    assert "- command: `snakemake --profile profiles/smoke table3`" in described
    assert "**Run `t`**: FINISHED; 2 jobs (2 finished)" in described
    children = {runs[r]["name"]: runs[r] for r in runs if r != parent}
    assert set(children) == {"rule_a a", "rule_b b"}  # the rule, then the log's own path
    a = children["rule_a a"]
    assert a["tags"]["mlflow.parentRunId"] == parent and a["status"] == "FINISHED"
    assert a["tags"]["git.commit"] == runs[parent]["tags"]["git.commit"]
    assert a["params"] == {"a.b": "1", "xs": "[1, 2]"}
    assert a["metrics"][("accuracy", 0)] == 50.0 and a["metrics"][("accuracy", 1)] == 75.0
    assert ("job.wall_s", 0) in a["metrics"] and ("job.peak_rss_mb", 0) in a["metrics"]
    assert "| `out/a.json` | `sha256:" in a["tags"][notes.NOTE_TAG]  # outputs with digests
    assert "Metrics: `accuracy` 75" in a["tags"][notes.NOTE_TAG]  # each at its last value
    artifacts = results / "mlartifacts"
    assert list(artifacts.rglob("a.json")) and list(artifacts.rglob("log/a.log"))
    assert "pkg.mlflow" in a["tags"] and a["tags"]["accelerator"]
    record_ids = json.loads((results / "provenance" / RUNS_FILE).read_text())
    assert sorted(record_ids.values()) == sorted(r for r in runs if r != parent)


def test_a_damaged_line_is_skipped_by_the_load_and_marked_on_its_run(results, caplog):
    start_invocation(results, "sqlite:///results/t/mlflow.db", CONFIG, "9.0", **INVOKED)
    path = run_job(results, "a", metrics=({"accuracy": 50.0}, {"accuracy": 75.0}))
    lines = path.read_bytes().split(b"\n")
    lines[1] = b'{"event": "metrics", "values": {"accuracy": \xff}}'  # not UTF-8, not the last
    path.write_bytes(b"\n".join(lines))
    run_job(results, "b")
    mark_ended(results)
    assert load(results) == {"invocations": 1, "jobs": 2, "waiting": 0, "traces": 0}
    assert f"skipped damaged provenance lines: {path}:2: not UTF-8 at byte" in caplog.text
    [a] = [run for run in mlflow_runs(results).values() if run["name"] == "rule_a a"]
    assert a["metrics"] == {**a["metrics"], ("accuracy", 1): 75.0}  # the rest is loaded
    assert ("accuracy", 0) not in a["metrics"]
    assert a["tags"]["memrepro.damaged"].startswith(f"{path}:2: not UTF-8 at byte")


def test_a_job_run_names_the_runs_that_made_its_inputs_and_the_parent_keeps_diff_and_log(
    results, monkeypatch
):
    monkeypatch.setattr(
        "memrepro.tracking.invocation.git_state", lambda: {"git.commit": "c0", "git.dirty": "true"}
    )
    monkeypatch.setattr("memrepro.tracking.invocation.git_diff", lambda: "--- a/x\n+++ b/x\n")
    start_invocation(results, "sqlite:///results/t/mlflow.db", CONFIG, "9.0", **INVOKED)
    monkeypatch.setenv(ENV_GIT_DIFF, os.environ[ENV_GIT_DIFF])
    run_job(results, "a")
    out = results / "out/a.json"
    for reader in ("r", "s"):
        (results / f"logs/rule_{reader}").mkdir()
    with job_run("rule_r", {}, {}, [out], [], results / "logs/rule_r/r.log"):
        pass
    out.write_text('{"changed": 1}')  # a later write: the next reader's input has no producer
    with job_run("rule_s", {}, {}, [out], [], results / "logs/rule_s/s.log"):
        pass
    snakemake_log = results / "snakemake.log"
    snakemake_log.write_text("Finished jobs\n")
    # Snakemake 9's handlers get `log` as a list; the load runs in a subprocess
    end_invocation(results, succeeded=True, snakemake_log=[str(snakemake_log)])
    summary = json.loads((results / "run.json").read_text())  # memrepro.tracking.pipeline_info's
    assert summary["invocation"]["status"] == "FINISHED"
    runs = mlflow_runs(results)
    by_name = {run["name"]: run_id for run_id, run in runs.items()}
    experiment = "1"
    reader = runs[by_name["rule_r r"]]["tags"][notes.NOTE_TAG]
    link = f"[rule_a a]({notes.run_link(experiment, by_name['rule_a a'])})"
    assert "| `out/a.json` | `sha256:" in reader and link in reader
    later = runs[by_name["rule_s s"]]["tags"][notes.NOTE_TAG]
    assert "| no job of this run (a source) |" in later and "rule_a" not in later
    artifacts = results / "mlartifacts"
    [made] = artifacts.glob(f"{by_name['rule_r r']}/artifacts/provenance.json")
    assert json.loads(made.read_text())["inputs"] == {
        str(out): {"digest": ANY, "run": by_name["rule_a a"]}
    }
    diffs = list(artifacts.rglob("git/*.diff"))  # the parent's and each job's
    assert len(diffs) == 4 and {d.read_text() for d in diffs} == {"--- a/x\n+++ b/x\n"}
    assert (next(artifacts.rglob("snakemake/snakemake.log"))).read_text() == "Finished jobs\n"


def test_a_killed_job_waits_while_its_invocation_runs_and_then_loads_as_killed(results):
    start_invocation(results, "sqlite:///results/t/mlflow.db", CONFIG, "9.0", **INVOKED)
    path = run_job(results, "a")
    lines = path.read_text().splitlines()
    path.write_text("\n".join(line for line in lines if '"end"' not in line) + "\n")
    assert load(results)["waiting"] == 1
    mark_ended(results, "FAILED")
    assert load(results)["jobs"] == 1
    runs = mlflow_runs(results).values()
    [job] = [r for r in runs if r["name"] == "rule_a a"]
    [parent] = [r for r in runs if "memrepro.invocation.parent" in r["tags"]]  # closed now
    assert job["status"] == "KILLED" and parent["status"] == "FAILED"


def test_a_job_that_logs_to_mlflow_itself_gets_a_live_run_that_the_loader_adopts(results):
    start_invocation(results, "sqlite:///results/t/mlflow.db", CONFIG, "9.0", **INVOKED)
    seen = {}

    def launch(record):
        seen.update(record.child_env())
        assert record.child_env() == seen  # one live run per job

    run_job(results, "train", body=launch)
    assert Path(seen["MLFLOW_TRACKING_URI"].removeprefix("sqlite:///")).is_absolute()
    end_invocation(results, succeeded=True)  # marks the end, loads in a subprocess
    runs = mlflow_runs(results)
    assert len(runs) == 2  # the parent and the adopted live run, nothing else
    assert runs[seen["MLFLOW_RUN_ID"]]["name"] == "rule_train train"


def test_tracking_off_writes_nothing(results, monkeypatch):
    monkeypatch.setenv("MEMREPRO_TRACKING", "off")
    assert start_invocation(results, "sqlite:///x.db", CONFIG, "9.0", **INVOKED) is None
    path = run_job(results, "a")
    assert not path.exists() and not (results / "provenance").exists()


def dead_process(invocation_file: Path, pid: int) -> None:
    """Make an invocation record's Snakemake process `pid`, one that has exited."""
    info = json.loads(invocation_file.read_text())
    info["process"] = {**info["process"], "pid": pid, "started": 1}
    invocation_file.write_text(json.dumps(info))


def test_a_killed_invocation_and_its_live_runs_are_closed_as_killed_by_the_next_load(
    results, exited_pid
):
    start_invocation(results, "sqlite:///results/t/mlflow.db", CONFIG, "9.0", **INVOKED)
    seen = {}
    path = run_job(results, "train", body=lambda record: seen.update(record.child_env()))
    lines = path.read_text().splitlines()  # the job was killed with its invocation
    path.write_text("\n".join(line for line in lines if '"end"' not in line) + "\n")
    assert load(results)["waiting"] == 1  # its Snakemake process (this one) is alive
    assert mlflow_runs(results)[seen["MLFLOW_RUN_ID"]]["status"] == "RUNNING"
    [invocation] = (results / "provenance").glob("*.json")
    dead_process(invocation, exited_pid)
    assert load(results)["jobs"] == 1
    runs = mlflow_runs(results)
    assert {r["status"] for r in runs.values()} == {"KILLED"}  # the parent and the live run
    assert json.loads(invocation.read_text())["status"] == "KILLED"


def test_a_moved_results_directory_reads_and_writes_its_own_records_store_and_artifacts(
    results, tmp_path, caplog
):
    start_invocation(results, "sqlite:///results/t/mlflow.db", CONFIG, "9.0", **INVOKED)
    run_job(results, "a")
    mark_ended(results)
    load(results)
    moved = tmp_path / "elsewhere/t"
    shutil.copytree(results, moved)
    shutil.rmtree(tmp_path / "results")  # the original is gone
    out = moved / "out/a.json"
    (moved / "logs/rule_r").mkdir()
    (moved / "logs/rule_r/r.log").write_text("job log\n")
    with job_run("rule_r", {}, {}, [out], [], moved / "logs/rule_r/r.log"):
        pass  # a job of a new invocation reads the copy's file
    os.chdir(tmp_path / "elsewhere")  # anywhere: the store is found in the directory itself
    caplog.set_level("INFO", logger="memrepro.tracking")
    assert load(moved)["jobs"] == 1  # no --uri
    assert "records written in " + str(tmp_path / "results/t") in caplog.text
    assert not (tmp_path / "results").exists()  # nothing was written where the original lay
    db = sqlite3.connect(moved / "mlflow.db")
    locations = [loc for (loc,) in db.execute("select artifact_location from experiments")]
    assert locations == ["mlartifacts", "mlartifacts"]  # ours and MLflow's Default
    uris = {name: uri for name, uri in db.execute("select name, artifact_uri from runs")}
    assert all(uri.startswith("mlartifacts/") for uri in uris.values()) and len(uris) == 3
    assert list((moved / "mlartifacts").rglob("log/r.log"))  # the new job's, beside the copy
    [record] = [r for r in records_under(moved) if r["rule"] == "rule_a"]
    assert record["outputs"] == {str(out): ANY} and record["log"].startswith(str(moved))
    readers = mlflow_runs(moved)
    note = next(r for r in readers.values() if r["name"] == "rule_r r")["tags"][notes.NOTE_TAG]
    assert "[rule_a a](#/experiments/" in note  # its input's producer, found in the copy


def test_a_copy_of_a_run_recorded_before_invocations_said_where_loads_into_its_own_store(
    results, tmp_path
):
    """Invocation records of older runs hold only the configured URI (relative to where the
    pipeline ran): the default one is the run's own store, wherever its directory lies now."""
    start_invocation(results, "sqlite:///results/t/mlflow.db", CONFIG, "9.0", **INVOKED)
    run_job(results, "a")
    mark_ended(results)
    [path] = (results / "provenance").glob("*.json")
    info = json.loads(path.read_text())
    path.write_text(json.dumps({k: v for k, v in info.items() if k not in ("cwd", "results")}))
    copy = tmp_path / "archive/t-2026"  # another name, another depth
    shutil.copytree(results, copy)
    shutil.rmtree(tmp_path / "results")
    os.chdir(tmp_path / "archive")
    assert load(copy)["jobs"] == 1
    assert (copy / "mlflow.db").is_file() and not (tmp_path / "archive/results").exists()


def test_a_record_moved_away_from_its_log_is_named_with_the_fix(results, caplog):
    start_invocation(results, "sqlite:///results/t/mlflow.db", CONFIG, "9.0", **INVOKED)
    path = run_job(results, "a")
    elsewhere = results / "logs/other" / path.name
    elsewhere.parent.mkdir()
    path.rename(elsewhere)
    damaged: list[str] = []
    assert records_under(results, damaged) == []
    assert damaged == [f"{elsewhere}: its job logged to {results}/logs/rule_a/a.log (moved "
                       "away from its log: put it back beside it)"]  # fmt: skip
    assert "put each back beside its log" in caplog.text


@pytest.mark.parametrize("store", ["sqlite", "server"])
def test_concurrent_loads_of_one_results_directory_create_each_run_once(results, tmp_path, store):
    """Two loaders at once (onsuccess and a hand-run load, say), on a fresh store: each waits
    for the other's load lock, so every record gets one run and neither crashes."""
    import contextlib

    from mlflow_server import mlflow_server

    start_invocation(results, "sqlite:///results/t/mlflow.db", CONFIG, "9.0", **INVOKED)
    for i in range(12):
        run_job(results, f"j{i}")
    mark_ended(results)
    server = tmp_path / "server"
    server.mkdir()
    if store == "server":
        serving = mlflow_server(server, "127.0.0.1")
    else:
        serving = contextlib.nullcontext(f"sqlite:///{tmp_path / 'fresh.db'}")
    with serving as uri:
        loads = [
            subprocess.Popen(
                [sys.executable, "-m", "memrepro.tracking", str(results), "--uri", uri],
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for _ in range(2)
        ]
        outputs = [process.communicate(timeout=300)[0] for process in loads]
        assert [process.returncode for process in loads] == [0, 0], outputs
        import mlflow

        client = mlflow.MlflowClient(uri)
        experiment = client.get_experiment_by_name(EXPERIMENT).experiment_id
        runs = client.search_runs([experiment], max_results=1000)
    records = [run.data.tags.get("memrepro.record") for run in runs]
    assert len(runs) == 13 and len(set(records)) == 13  # 12 jobs and the pipeline's run
    assert sum("'jobs': 12" in output for output in outputs) == 1  # the other found them loaded


def test_a_killed_attempt_reaches_mlflow_after_its_job_is_rerun(results):
    """The rerun of a killed job used to delete the killed attempt's record: it now loads as a
    KILLED run beside the rerun's FINISHED one."""
    start_invocation(results, "sqlite:///results/t/mlflow.db", CONFIG, "9.0", **INVOKED)

    def killed(record):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_job(results, "a", body=killed)
    run_job(results, "a")
    mark_ended(results)
    assert load(results)["jobs"] == 2
    statuses = sorted(r["status"] for r in mlflow_runs(results).values() if r["name"] == "rule_a a")
    assert statuses == ["FINISHED", "KILLED"]


def test_the_commit_is_unknown_with_the_reason_where_git_cannot_answer(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_GIT_COMMIT, raising=False)
    state = git_state(tmp_path)  # not a checkout
    assert state["git.commit"] == "unknown" and "not a git checkout" in state["git.unknown_reason"]
    monkeypatch.setenv("PATH", str(tmp_path))  # no git at all, as in a minimal image
    state = git_state()
    assert state == {
        "git.commit": "unknown",
        "git.dirty": "unknown",
        "git.unknown_reason": "no git here",
    }
    assert commit_text() == "commit unknown (no git here)"
    monkeypatch.setenv(ENV_GIT_COMMIT, "0123456789abcdef")  # the invocation's, exported
    monkeypatch.setenv(ENV_GIT_DIRTY, "false")
    assert commit_text() == "commit 0123456789ab"


def test_a_checkout_with_its_virtualenvs_symlinked_is_not_dirty(repo, tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_GIT_COMMIT, raising=False)
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    shutil.copy(repo / ".gitignore", checkout / ".gitignore")
    git = ["git", "-C", str(checkout), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], check=True)
    for name in (".venv", ".venv-verl", ".venv-vllm"):  # e.g. on a faster disk
        (tmp_path / name).mkdir()
        (checkout / name).symlink_to(tmp_path / name)
    assert git_state(checkout)["git.dirty"] == "false"


def test_memrepro_ui_on_a_missing_or_damaged_store_says_what_to_do_without_a_traceback(tmp_path):
    from memrepro.ui import prepare

    with pytest.raises(SystemExit, match=r"mlflow\.db: no MLflow store here"):
        prepare(tmp_path)
    (tmp_path / "mlflow.db").write_bytes(b"\x00not sqlite at all" * 100)
    with pytest.raises(
        SystemExit, match=r"mlflow\.db: not a readable MLflow store .* memrepro\.track"
    ):
        prepare(tmp_path)


def test_memrepro_ui_waits_for_its_server_to_answer_and_says_when_it_never_does(tmp_path):
    """A real HTTP server that answers after 2 s: the wait returns only once it does."""
    import socket
    import time
    import urllib.request

    from memrepro.ui import wait_until_answering

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    late = (  # answers only after 2 s, as a UI server that takes time to start
        "import time, http.server as h; time.sleep(2); "
        f"h.test(h.SimpleHTTPRequestHandler, port={port}, bind='127.0.0.1')"
    )
    server = subprocess.Popen(
        [sys.executable, "-c", late],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        started = time.monotonic()
        wait_until_answering(server, f"http://127.0.0.1:{port}/", 60)
        assert time.monotonic() - started >= 2
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).close()  # answering now
    finally:
        server.terminate()
        server.wait()
    gone = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    with pytest.raises(SystemExit, match=r"exited \(3\) before answering"):
        wait_until_answering(gone, f"http://127.0.0.1:{port}/", 60)
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with pytest.raises(SystemExit, match=r"did not answer at .* within 1 s"):
            wait_until_answering(idle, f"http://127.0.0.1:{port}/", 1)
    finally:
        idle.kill()
        idle.wait()


def test_the_summary_counts_every_claim_outcome_the_report_knows():
    """The copy that memrepro.tracking.runs keeps (it sits below memrepro.report) cannot drift."""
    from memrepro.report.claims import OUTCOMES
    from memrepro.tracking.runs import SUMMARY_OUTCOMES

    assert SUMMARY_OUTCOMES == OUTCOMES


def _loader_of(results: Path) -> bool:
    """Whether a `python -m memrepro.tracking RESULTS` process (the MLflow load) is running."""
    wanted = ["-m", "memrepro.tracking", str(results)]
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if any(args[i : i + 3] == wanted for i in range(len(args))):
            return True
    return False


def test_a_kill_during_the_end_of_run_load_is_finished_by_the_next_invocation(results):
    """SIGKILL to the invocation's end steps while MLflow loads: nothing reaches MLflow, the
    mark stays, the next invocation names what waits and its end loads every record once."""
    import signal
    import time

    from memrepro.tracking.invocation import (
        END_PENDING,
        finish_killed_end,
        killed_end_warning,
    )

    start_invocation(results, "sqlite:///results/t/mlflow.db", CONFIG, "9.0", **INVOKED)
    run_job(results, "a")
    run_job(results, "b")
    code = (
        "import sys; from pathlib import Path; from memrepro.tracking.invocation import "
        "end_invocation; end_invocation(Path(sys.argv[1]), True)"
    )
    ending = subprocess.Popen(
        [sys.executable, "-c", code, str(results)], start_new_session=True, env=os.environ
    )
    deadline = time.monotonic() + 120
    while not _loader_of(results) and ending.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ending.poll() is None, "the end steps finished before the load could be killed"
    os.killpg(ending.pid, signal.SIGKILL)  # the invocation and its loader, mid-load
    ending.wait()
    mark = results / "provenance" / END_PENDING
    assert mark.is_file() and not (results / "provenance" / RUNS_FILE).exists()
    said = killed_end_warning(results)
    assert said is not None and os.environ[ENV_INVOCATION] in said
    assert f"python -m memrepro.tracking {results}" in said
    assert finish_killed_end(results) and not mark.exists()
    runs = mlflow_runs(results)
    assert sorted(r["name"] for r in runs.values() if r["name"].startswith("rule_")) == [
        "rule_a a",
        "rule_b b",
    ]
    assert {r["status"] for r in runs.values()} == {"FINISHED"}  # the invocation had ended
    assert not finish_killed_end(results) and killed_end_warning(results) is None
