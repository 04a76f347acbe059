"""memrepro.run_compare: what a run computed, compared between two results directories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memrepro import run_compare


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def step(seconds: float, loss: float) -> str:
    return json.dumps({"step": 0, "pg_loss": loss, "seconds": seconds}) + "\n"


RUN = {
    "eval/ruler_hqa/s/10.metrics.json": '{"accuracy": 0.5}',
    "tables/table1.csv": "a,b\n1,2\n",
    "tables/table1.md": "run smoke, invocation 1",
    "raw/x.json.manifest.json": '{"path": "results/smoke/raw/x.json"}',
    "checkpoints/r/stage1/train_metrics.jsonl": step(1.5, 0.25),
    "logs/evaluate/x.log": "took 3 s",
}


def test_equal_numbers_compare_equal_whatever_the_run_name_times_and_logs(tmp_path):
    a = write(tmp_path / "a", RUN)
    b = write(tmp_path / "b", {**RUN, "tables/table1.md": "run other, invocation 2",
                               "raw/x.json.manifest.json": '{"path": "results/other/raw/x.json"}',
                               "checkpoints/r/stage1/train_metrics.jsonl": step(0.9, 0.25),
                               "logs/evaluate/x.log": "took 5 s"})  # fmt: skip
    found = run_compare.differences(a, b)
    assert found["differ"] == found["only_a"] == found["only_b"] == []
    assert found["equal"] == [
        "checkpoints/r/stage1/train_metrics.jsonl",
        "eval/ruler_hqa/s/10.metrics.json",
        "tables/table1.csv",
    ]


def test_a_changed_number_or_a_missing_file_is_named_and_fails(tmp_path, capsys):
    a = write(tmp_path / "a", RUN)
    b = write(tmp_path / "b", {**RUN, "checkpoints/r/stage1/train_metrics.jsonl": step(1.5, 0.26),
                               "eval/ruler_hqa/s/20.metrics.json": "{}"})  # fmt: skip
    (b / "tables/table1.csv").unlink()
    found = run_compare.differences(a, b)
    assert found["differ"] == ["checkpoints/r/stage1/train_metrics.jsonl"]
    assert (found["only_a"], found["only_b"]) == (
        ["tables/table1.csv"],
        ["eval/ruler_hqa/s/20.metrics.json"],
    )
    with pytest.raises(SystemExit) as exit_:
        run_compare.main([str(a), str(b)])
    assert exit_.value.code == 1
    assert "differ: checkpoints/r/stage1/train_metrics.jsonl" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="not a results directory"):
        run_compare.main([str(a), str(tmp_path)])


def prediction(index: int, score: float, row: str = "r", prompt: str = "p", **extra) -> dict:
    return {"task": "hqa", "index": index, "score": score, "failed": False,
            "row_sha256": row, "prompt_sha256": prompt, **extra}  # fmt: skip


def predictions_file(root: Path, lines: list[dict]) -> Path:
    path = root / "eval/ruler_hqa/s/10.predictions.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return root


def test_items_are_matched_by_task_and_index_and_each_change_says_what_else_changed(tmp_path):
    a = predictions_file(tmp_path / "a", [
        prediction(0, 1.0), prediction(1, 1.0), prediction(2, 0.0), prediction(3, 1.0),
        prediction(4, 1.0, id="harbor-1"), prediction(5, 0.0), prediction(6, 1.0),
    ])  # fmt: skip
    b = predictions_file(tmp_path / "b", [
        prediction(0, 1.0, prompt="other"),  # a new prompt, the same outcome: not listed
        prediction(1, 0.0),
        prediction(2, 1.0, prompt="other"),
        prediction(3, 0.0, row="other", prompt="other"),
        {**prediction(4, 0.0), "row_sha256": None},  # a run before the digests were recorded
        {**prediction(5, 0.0), "failed": True},
        prediction(7, 1.0),
    ])  # fmt: skip
    (found,) = run_compare.item_differences(a, b).values()
    assert (found.matched, found.only_a, found.only_b) == (6, 1, 1)
    assert [(c.index, c.score_a, c.score_b, c.why) for c in found.changed] == [
        (1, 1.0, 0.0, "same input and prompt (the model, its sampling or chance)"),
        (2, 0.0, 1.0, "first prompt differs"),
        (3, 1.0, 0.0, "input row differs"),
        (4, 1.0, 0.0, "input row not recorded"),
        (5, 0.0, 0.0, "same input and prompt (the model, its sampling or chance)"),
    ]
    assert found.changed[3].line() == "hqa/4 (harbor-1): 1 -> 0, input row not recorded"


def test_compare_runs_prints_the_changed_items_of_each_predictions_file(tmp_path, capsys):
    a = predictions_file(write(tmp_path / "a", RUN), [prediction(i, 1.0) for i in range(4)])
    b = predictions_file(write(tmp_path / "b", RUN), [prediction(i, 0.0) for i in range(4)])
    with pytest.raises(SystemExit) as exit_:
        run_compare.main([str(a), str(b), "--items", "2"])
    assert exit_.value.code == 1
    out = capsys.readouterr().out.splitlines()
    assert "differ: eval/ruler_hqa/s/10.predictions.jsonl" in out
    assert "4 items matched in 1 predictions files, 4 changed outcome" in out
    at = out.index("items: eval/ruler_hqa/s/10.predictions.jsonl: 4 of 4 changed outcome, "
                   "0 only in a, 0 only in b")  # fmt: skip
    assert (
        out[at + 1].startswith("  hqa/0: 1 -> 0")
        and out[at + 3] == "  ... 2 more (--items N shows N)"
    )


def test_every_output_family_is_compared_but_the_records_of_how_the_run_ran(tmp_path):
    """Rescorings, judges' probes and keyword rebuilds are computed numbers: a changed one is a
    difference; logs, Snakemake's benchmarks, provenance and pipeline_info never are."""
    families = {
        "rescore/whole-reply/ruler_hqa/s/10.metrics.json": '{"accuracy": 0.5}',
        "judges/gpt-4o.json": '{"lenient": 2}',
        "keywords/booksum.jsonl": '{"keywords": ["a"]}\n',
        "benchmarks/evaluate/x.tsv": "s\n1.0\n",
        "provenance/1.json": '{"host": "a"}',
        "pipeline_info/trace.tsv": "job\n",
        "mlartifacts/0/meta.yaml": "run_id: 1\n",
    }
    a = write(tmp_path / "a", {**RUN, **families})
    changed = {
        "rescore/whole-reply/ruler_hqa/s/10.metrics.json": '{"accuracy": 0.6}',
        "judges/gpt-4o.json": '{"lenient": 3}',
        "keywords/booksum.jsonl": '{"keywords": ["b"]}\n',
        "benchmarks/evaluate/x.tsv": "s\n2.0\n",
        "provenance/1.json": '{"host": "b"}',
        "pipeline_info/trace.tsv": "job, again\n",
        "mlartifacts/0/meta.yaml": "run_id: 2\n",
    }
    b = write(tmp_path / "b", {**RUN, **changed})
    assert run_compare.differences(a, b)["differ"] == [
        "judges/gpt-4o.json",
        "keywords/booksum.jsonl",
        "rescore/whole-reply/ruler_hqa/s/10.metrics.json",
    ]


def test_a_symlinked_subdirectory_is_followed(tmp_path):
    a = write(tmp_path / "a", RUN)
    elsewhere = write(tmp_path / "elsewhere", {"ruler_hqa/s/10.metrics.json": '{"accuracy": 0.5}'})
    b = write(tmp_path / "b", {k: v for k, v in RUN.items() if not k.startswith("eval/")})
    (b / "eval").symlink_to(elsewhere, target_is_directory=True)
    found = run_compare.differences(a, b)
    assert (
        found["only_a"] == found["only_b"] == []
        and "eval/ruler_hqa/s/10.metrics.json" in found["equal"]
    )


def test_a_damaged_or_repeated_predictions_file_is_named_and_the_rest_compared(tmp_path, capsys):
    a = predictions_file(tmp_path / "a", [prediction(0, 1.0), prediction(1, 1.0)])
    b = predictions_file(
        tmp_path / "b", [prediction(0, 1.0), prediction(1, 0.0), prediction(1, 1.0)]
    )
    for root in (a, b):  # a second file, torn in b by a killed write
        other = root / "eval/ruler_hqa/s/20.predictions.jsonl"
        other.write_text(json.dumps(prediction(0, 1.0)) + "\n")
    torn = b / "eval/ruler_hqa/s/20.predictions.jsonl"
    torn.write_bytes(torn.read_bytes() + b'{"task": "hq')
    found = run_compare.item_differences(a, b)
    repeated = found["eval/ruler_hqa/s/10.predictions.jsonl"]
    assert repeated.matched == 2 and not repeated.changed  # the last line of item 1 kept
    assert repeated.left_out == ("b: item hqa/1 appears more than once; its last line compared",)
    damaged = found["eval/ruler_hqa/s/20.predictions.jsonl"]
    assert damaged.matched == 0 and damaged.left_out[0].startswith("b: damaged, its items left out")
    assert "20.predictions.jsonl:2" in damaged.left_out[0]  # the file and line
    with pytest.raises(SystemExit):
        run_compare.main([str(a), str(b)])
    out = capsys.readouterr().out
    assert "warning: items: eval/ruler_hqa/s/20.predictions.jsonl: b: damaged" in out


def test_a_negative_item_count_is_refused(tmp_path, capsys):
    a = write(tmp_path / "a", RUN)
    with pytest.raises(SystemExit) as exit_:
        run_compare.main([str(a), str(a), "--items", "-1"])
    assert exit_.value.code == 2
    assert "'-1' is not a count (0 or more)" in capsys.readouterr().err


def test_the_records_left_out_are_the_ones_the_tracking_modules_write():
    from memrepro.tracking.invocation import invocations_dir
    from memrepro.tracking.pipeline_info import INFO_DIR
    from memrepro.tracking.store import ARTIFACTS

    records = {invocations_dir(Path("r")).name, INFO_DIR, ARTIFACTS, "logs", "benchmarks"}
    assert set(run_compare.NOT_COMPUTED) == records
