"""The verl backend's job wrapper (memrepro.verl.job) with the launch and the merger faked."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from test_verl_overrides import paper_settings

from memrepro.verl import job
from memrepro.verl.checkpoints import TRACKER

ROWS = [{"index": i, "input": f"q{i}?", "answers": [f"a{i}"], "context": f"d{i}"} for i in (0, 1)]


def verl_log(path: Path, steps: dict[int, dict[str, float]], torn: bool = False) -> None:
    lines = [json.dumps({"step": step, "data": data}) + "\n" for step, data in steps.items()]
    path.write_text("".join(lines) + ('{"step": 9, "da' if torn else ""), encoding="utf-8")


def test_later_attempts_win_their_steps_and_a_torn_last_line_is_ignored(tmp_path):
    first, second = tmp_path / "attempt-1.jsonl", tmp_path / "attempt-2.jsonl"
    verl_log(first, {1: {"critic/score/mean": 0.1}, 2: {"critic/score/mean": 0.2}}, torn=True)
    verl_log(second, {2: {"critic/score/mean": 0.3}, 3: {"critic/score/mean": 0.4}})
    steps = job.read_verl_logs([first, second])
    assert {step: data["critic/score/mean"] for step, data in steps.items()} == {
        1: 0.1,
        2: 0.3,
        3: 0.4,
    }
    first.write_text("not json\n" + json.dumps({"step": 1, "data": {}}) + "\n")
    with pytest.raises(ValueError, match=r"attempt-1\.jsonl:1"):
        job.read_verl_logs([first])


def test_curve_rows_map_verl_names_to_the_cpu_trainers_keys():
    rows = job.curve_rows(
        {
            2: {
                "memagent/trajectory_reward/mean": 0.5,
                "critic/score/mean": 0.1,  # per conversation: the trajectory mean wins
                "actor/kl_loss": 0.01,
                "actor/pg_clipfrac": 0.2,
                "response_length/mean": 412.5,  # per row: a conversation's response
                "val-core/ruler_hqa/reward/mean@4": 0.6,
            },
            1: {"critic/score/mean": 0.25, "actor/kl_loss": 0.0, "actor/pg_clipfrac": 0.0},
            0: {"val-core/ruler_hqa/reward/mean@4": 0.3},  # validation before training only
        }
    )
    assert rows == [
        {"step": 1, "reward_mean": 0.25, "kl": 0.0, "pg_clipfrac": 0.0},
        {
            "step": 2,
            "reward_mean": 0.5,
            "kl": 0.01,
            "pg_clipfrac": 0.2,
            "response_tokens_mean": 412.5,
            "val_reward": 0.6,
            "val/ruler_hqa": 0.6,
        },
    ]


def test_the_validation_score_is_the_unweighted_mean_of_the_sources_final_rewards():
    """Mem-α validates on several sources: val-core/<source>/reward/mean@n each (n = the
    highest, verl's core metric); the auxiliary ones are not scores."""
    data = {
        "val-core/squad/reward/mean@1": 0.5,
        "val-core/booksum/reward/mean@1": 0.25,
        "val-aux/squad/reward/std@1": 0.1,
        "val-aux/squad/r2/mean@1": 1.0,
        "critic/score/mean": 0.9,
    }
    assert job.validation_metrics(data) == {
        "val_reward": 0.375,
        "val/booksum": 0.25,
        "val/squad": 0.5,
    }
    assert job.validation_metrics({"critic/score/mean": 0.9}) == {}


def test_the_best_validated_step_is_the_highest_score_the_latest_of_equal_ones():
    curve = [
        {"step": 50, "val_reward": 0.4},
        {"step": 60},
        {"step": 100, "val_reward": 0.6},
        {"step": 150, "val_reward": 0.6},
        {"step": 205, "val_reward": 0.5},
    ]
    assert job.best_validated_step(curve) == (150, 0.6)
    with pytest.raises(SystemExit, match="no validation score"):
        job.best_validated_step([{"step": 1}])


def test_the_dry_run_command_and_the_job_agree_on_every_path(tmp_path):
    settings = paper_settings()
    out = tmp_path / "ckpt" / "stage1"
    command = job.launch_command(settings, str(out), "models/base")
    paths = job.job_paths(out, "models/base")
    for path in (paths.train_files, paths.val_files, paths.checkpoints):
        assert str(path).startswith(str(tmp_path / "ckpt" / ".stage1.verl"))
        assert any(arg.endswith(f"={path}") for arg in command), path


def fake_verl(
    monkeypatch,
    final_step: int,
    logged: dict[int, dict[str, float]] | None = None,
    image_marker: Path | None = None,
) -> list[list[str]]:
    """subprocess.run as the launch (a checkpoint of every logged step and of the final one, a
    metric log; given `image_marker`, the driver in an image with that identity file, which
    writes where it ran as memrepro.verl.main does) and the merger would act."""
    from memrepro import software
    from memrepro.verl import write_ran_in

    calls: list[list[str]] = []
    logged = logged or {1: {"critic/score/mean": 0.5}}
    if image_marker is not None:
        inside = software.container_tags
        monkeypatch.setattr(software, "container_tags", lambda: inside(image_marker))

    def run(argv, env=None, check=False):
        calls.append(list(argv))
        if "verl.model_merger" in argv:
            target = Path(argv[argv.index("--target_dir") + 1])
            target.mkdir(parents=True)
            (target / "config.json").write_text("{}")
        else:
            checkpoints = Path(next(a for a in argv if "default_local_dir=" in a).split("=", 1)[1])
            for step in {*logged, final_step}:
                (checkpoints / f"global_step_{step}" / "actor").mkdir(parents=True)
            (checkpoints / TRACKER).write_text(str(final_step))
            verl_log(Path(env["VERL_FILE_LOGGER_PATH"]), logged)
            if image_marker is not None:
                write_ran_in(env)
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(job.subprocess, "run", run)
    return calls


def test_run_prepares_data_launches_and_publishes_the_merged_model(tmp_path, monkeypatch):
    settings = {**paper_settings(), "steps": 3}
    out = tmp_path / "stage1"
    launch = job.launch_command(settings, str(out), "base")
    calls = fake_verl(monkeypatch, final_step=3)
    summary = job.run(settings, ROWS, ROWS[:1], Path("base"), out, launch, {"PATH": "/bin"})
    assert calls[0] == launch and "verl.model_merger" in calls[1]
    assert (out / "config.json").exists() and not (tmp_path / ".stage1.partial").exists()
    metrics = [json.loads(line) for line in (out / job.METRICS_FILE).read_text().splitlines()]
    assert metrics == [{"step": 1, "reward_mean": 0.5}]
    assert summary["steps"] == 3 and summary["final_reward_mean"] == 0.5
    assert job.job_paths(out, "base").train_files.exists()  # kept for a later resume
    # a launch whose driver wrote nowhere where it ran is recorded as unknown, not as none
    assert summary["ran_in"]["ray.container.image"].startswith("unknown (the driver wrote no ")


def test_run_fails_without_the_last_checkpoint_and_on_a_stale_command(tmp_path, monkeypatch):
    settings = {**paper_settings(), "steps": 3}
    out = tmp_path / "stage1"
    launch = job.launch_command(settings, str(out), "base")
    fake_verl(monkeypatch, final_step=2)
    with pytest.raises(SystemExit, match="without a checkpoint of step 3"):
        job.run(settings, ROWS, ROWS, Path("base"), out, launch, {})
    assert not out.exists()
    with pytest.raises(SystemExit, match="differs from the one the config generates"):
        job.run(settings, ROWS, ROWS, Path("base"), out, [*launch, "extra=1"], {})


def test_in_the_train_image_ray_verl_and_the_merger_run_in_it_srun_and_the_job_on_the_host(
    tmp_path, monkeypatch
):
    settings = {**paper_settings(), "steps": 3}
    out = tmp_path / "stage1"
    image = "/shared/images/train.sif"
    launch = job.launch_command(settings, str(out), "base", container=image)
    assert launch[: launch.index("--")][-2:] == ["--container", image]
    assert job.launch_container(launch) == image
    assert job.launch_container(job.launch_command(settings, str(out), "base")) is None
    marker = tmp_path / "image.json"  # the train image's identity file, as the build writes it
    marker.write_text('{"env": "train", "lock_digest": "sha256:abc"}')
    calls = fake_verl(monkeypatch, final_step=3, image_marker=marker)
    env = {"PATH": "/bin", "MEMREPRO_CONTAINER_ARGS": "--nv --bind /scratch"}
    summary = job.run(settings, ROWS, ROWS[:1], Path("base"), out, launch, env)
    assert calls[0] == launch  # ray_job.sh on the host; it puts Ray and verl in the image
    # the job (on the host) records the image its driver read from inside, under `ray.`
    assert summary["ran_in"]["ray.container.env"] == "train"
    assert summary["ran_in"]["ray.container.lock.digest"] == "sha256:abc"
    merger = calls[1]
    assert merger[:6] == ["apptainer", "exec", "--nv", "--bind", "/scratch", image]
    assert merger[6:9] == ["python", "-m", "verl.model_merger"]
    # memrepro is not installed in the image: its Python (and Ray's workers) find this source tree
    assert job.image_env(image, env)["APPTAINERENV_PYTHONPATH"] == str(job.SOURCE_ROOT)
    assert (job.SOURCE_ROOT / "memrepro" / "verl" / "main.py").is_file()
    assert "APPTAINERENV_PYTHONPATH" not in job.image_env(None, env)
    # the default exec options give the image the node's GPUs, as ray_job.sh does
    assert job.in_image(image, {}) == ["apptainer", "exec", "--nv", image]
    bare = {"MEMREPRO_APPTAINER": "singularity", "MEMREPRO_CONTAINER_ARGS": ""}
    assert job.in_image(image, bare) == ["singularity", "exec", image]


@pytest.mark.parametrize(
    ("extra", "verifier"), [({}, "official"), ({"verifier": "extended"}, "extended")]
)
def test_prepared_rows_carry_the_jobs_verifier_official_by_default(tmp_path, extra, verifier):
    import pyarrow.parquet as pq

    settings = {**paper_settings(), **extra}
    paths = job.job_paths(tmp_path / "stage1", "base")
    job.prepare_data(settings, ROWS, ROWS[:1], paths)
    for parquet in (paths.train_files, paths.val_files):
        infos = [r["extra_info"] for r in pq.read_table(parquet).to_pylist()]
        assert {info["verifier"] for info in infos} == {verifier}


def test_a_memalpha_run_validates_on_its_own_rows_and_merges_the_recipes_checkpoint(
    tmp_path, monkeypatch
):
    """Train rows score the full reward, validation rows r1 alone (their settings say so); the
    paper recipe merges the best validated step, the official one the last."""
    import contextlib

    import pyarrow.parquet as pq
    from test_verl_overrides import memalpha_paper_settings

    from memrepro.data.memalpha import instances_by_source
    from memrepro.data.sources import fixture_path
    from memrepro.engines import server
    from memrepro.verl.overrides import MEMALPHA

    @contextlib.contextmanager
    def served(command, port, log, host, timeout, env):
        yield f"http://{host}:{port}/v1"

    monkeypatch.setattr(server, "served", served)
    train = [
        rows[0] for rows in instances_by_source(fixture_path("memalpha/train.parquet")).values()
    ]
    held_out = instances_by_source(fixture_path("memalpha/validation.parquet"))["squad"]
    env = {"CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}
    score = "val-core/squad/reward/mean@1"
    logged = {
        step: {"critic/score/mean": 0.1, score: val}
        for step, val in ((50, 0.4), (100, 0.7), (150, 0.5), (205, 0.6))
    }
    for recipe, merged in (("paper", 100), ("official", 205)):
        settings = {
            **memalpha_paper_settings(),
            "nodes": 1,
            "gpus_per_node": 4,
            "steps": 205,
            "checkpoint": "best" if recipe == "paper" else "last",
        }
        out = tmp_path / recipe / "grpo"
        launch = job.launch_command(settings, str(out), "base", MEMALPHA)
        calls = fake_verl(monkeypatch, final_step=205, logged=logged)
        summary = job.run_memalpha(
            settings, train, held_out, Path("base"), Path("qa"), None, out, launch, env
        )
        merger = calls[1]
        assert merger[merger.index("--local_dir") + 1].endswith(f"global_step_{merged}/actor")
        assert summary["checkpoint_step"] == merged and summary["steps"] == 205
        paths = job.job_paths(out, "base")
        for parquet, rows, validation in (
            (paths.train_files, train, False),
            (paths.val_files, held_out, True),
        ):
            infos = [r["extra_info"] for r in pq.read_table(parquet).to_pylist()]
            assert len(infos) == len(rows)
            assert {json.loads(info["settings"])["validation"] for info in infos} == {validation}
