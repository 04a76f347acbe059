"""`./pipeline`: Snakemake without activating the venv, and the command-line mistakes it answers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memrepro import config as cfg
from memrepro import launch
from memrepro.launch import check_targets, split_overrides

REPO = Path(__file__).resolve().parents[1]


def test_nested_config_entries_become_typed_overrides_and_plain_ones_stay():
    args, overrides = split_overrides(
        ["-n", "--config", "evaluation.allow_failures=0.5", "run=x", "report.flag=true", "-p"]
    )
    assert args == ["-n", "--config", "run=x", "-p"]
    assert overrides == {"evaluation.allow_failures": 0.5, "report.flag": True}
    args, overrides = split_overrides(["--config", "a.b=[1, 2]", "--profile", "profiles/smoke"])
    assert args == ["--profile", "profiles/smoke"] and overrides == {"a.b": [1, 2]}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--configfile", "config/smoke.yaml", "table3"], "'table3' after --configfile is read"),
        (["--config", "seed=1", "table3"], "'table3' after --config is read as one of its values"),
        (["--configfile", "configs/mine.yaml"], "--configfile configs/mine.yaml: no such file"),
        # every option of Snakemake's that takes every word after it, not a hand list
        (
            ["--forcerun", "evaluate", "results/smoke/tables/table1.md"],
            "'results/smoke/tables/table1.md' after --forcerun is read as one of its values",
        ),
        (["-R", "evaluate", "table1"], "'table1' after -R is read as one of its values"),
        (["--until", "make_table", "table3"], "'table3' after --until is read"),
        # an option with fixed choices: Snakemake's parser would print its 117-line usage
        (["--quiet", "reason", "table3"], "'table3' after --quiet is read as one of its values"),
        (["--configfile", "config"], "--configfile config: a directory, not a config file: give"),
        (["--configfile=config"], "--configfile config: a directory"),
        (["--config", "evaluation.x=@file"], r"evaluation.x=@file: the value is not YAML \("),
        (["--config", "evaluation.x=*alias"], "the value is not YAML"),
        (["--config", "evaluation.x=[unclosed"], "the value is not YAML"),
        (
            ["--config", "evaluation.x=2026-01-01"],
            "YAML reads the value as date, which a config cannot hold; quote it for a string: "
            """evaluation.x='"2026-01-01"'""",
        ),
        (["--config", "evaluation.x=!!binary aGk="], "reads the value as bytes"),
        (  # a list holding a date: the date named, not the list
            ["--config", "evaluation.x=[1, 2026-01-01]"],
            "YAML reads 2026-01-01 in the value as date, which a config cannot hold",
        ),
        (
            ["--config", "evaluation..allow_failures=0.5"],
            "the key 'evaluation..allow_failures' has",
        ),
    ],
)
def test_a_target_after_a_list_option_or_a_missing_file_is_named(argv, message, monkeypatch):
    monkeypatch.chdir(REPO)
    with pytest.raises(SystemExit, match=message):
        split_overrides(argv)


def test_targets_first_keep_list_options_free_and_the_equals_form_is_spaced(monkeypatch):
    monkeypatch.chdir(REPO)
    args, _ = split_overrides(["table1", "--forcerun", "evaluate", "results/x/y.md"])
    assert args == ["table1", "--forcerun", "evaluate", "results/x/y.md"]
    args, overrides = split_overrides(["--config=evaluation.allow_failures=0.5", "run=x"])
    assert args == ["--config", "run=x"] and overrides == {"evaluation.allow_failures": 0.5}
    args, _ = split_overrides(["--forcerun", "evaluate"])  # a rule, no target: every target
    assert args == ["--forcerun", "evaluate"]


def test_a_misspelt_target_gets_the_closest_names():
    check_targets(["table3", "results/smoke/tables/table3.md", "all"], listed=[])
    with pytest.raises(SystemExit, match="no target 'tabel3': did you mean table3"):
        check_targets(["tabel3"], listed=["table3", "stage2_data"])
    check_targets(["stage2_data"], listed=["table3", "stage2_data"])  # a rule of no table


def test_overrides_set_nested_keys_and_name_a_key_that_is_no_mapping():
    config = {"evaluation": {"allow_failures": 0.0}, "run": "smoke"}
    cfg.apply_overrides(config, '{"evaluation.allow_failures": 0.5, "evaluation.new.x": 1}')
    assert config["evaluation"] == {"allow_failures": 0.5, "new": {"x": 1}}
    with pytest.raises(cfg.ConfigError, match=r"--config run\.x: run is not a mapping"):
        cfg.apply_overrides(config, '{"run.x": 1}')


def pipeline(*args: str) -> subprocess.CompletedProcess[str]:
    """The script itself, from the repository, with no venv on PATH."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(Path.home())}
    return subprocess.run(
        [str(REPO / "pipeline"), *args], cwd=REPO, env=env, capture_output=True, text=True
    )


@pytest.mark.workflow
def test_the_script_plans_with_a_nested_override_and_the_schema_checks_it(tmp_path):
    done = pipeline(
        "-n", "--profile", "profiles/smoke", "table3", "--config", "evaluation.allow_failures=2"
    )
    assert done.returncode != 0
    said = [line for line in done.stderr.splitlines() if "allow_failures" in line]
    assert said == [
        "Config error: config key evaluation.allow_failures: 2 must be at most 1 (set in --config)"
    ]
    assert 'File "' not in done.stderr and "Traceback" not in done.stderr  # no Snakemake frames
    mine = tmp_path / "mine.yaml"  # a pin a local file does not match, found while planning
    text = (REPO / "examples/custom/config.yaml").read_text()
    mine.write_text(text.replace("sha256: 707bc4bc", "sha256: 000bc4bc"))
    own = pipeline(
        "custom", "-n", "--profile", "smoke", "--configfile", "config/smoke.yaml", str(mine)
    )
    said = [line for line in own.stderr.splitlines() if "Config error" in line]
    assert own.returncode != 0 and len(said) == 1 and "Traceback" not in own.stderr
    assert said[0].startswith("Config error: config key sources.long_qa: examples/custom/long_qa")
    assert said[0].endswith(f"(the file changed, or the pin is wrong) (set in {mine})")
    misspelt = pipeline("-n", "--profile", "profiles/smoke", "tabel3")
    assert misspelt.returncode == 1 and "did you mean table3" in misspelt.stderr


def fake_tools(root: Path, *names: str) -> str:
    """A PATH directory holding executables of these names (only their presence is read)."""
    root.mkdir()
    for name in names:
        (root / name).write_text("#!/bin/sh\n")
        (root / name).chmod(0o755)
    return str(root)


def test_the_podman_route_is_added_only_where_podman_is_and_apptainer_is_not(tmp_path, monkeypatch):
    route = str(launch.PODMAN_APPTAINER)
    for tools, added in ((("podman",), True), (("podman", "apptainer"), False), ((), False)):
        monkeypatch.setenv("PATH", fake_tools(tmp_path / "-".join(tools or ("none",)), *tools))
        path = launch.snakemake_env({})["PATH"].split(os.pathsep)
        assert (path[-1] == route) is added, tools
        assert path[0] == str(Path(sys.executable).parent)


def test_the_launchers_own_help_fits_a_screen_and_lists_the_profiles():
    done = pipeline("--help")
    assert done.returncode == 0 and len(done.stdout.splitlines()) <= 40
    for name in ("containers", "local", "mini", "slurm", "smoke"):
        assert f"\n  {name:<11} " in done.stdout
    assert "./pipeline --snakemake-help" in done.stdout and "launch.py" not in done.stdout
    full = pipeline("--snakemake-help")
    assert full.returncode == 0 and "--forcerun" in full.stdout  # Snakemake's own page


def test_a_profile_by_name_resolves_and_an_unknown_one_lists_them():
    args = launch.resolve_profiles(["-n", "--profile", "smoke", "table3", "--profile=slurm"])
    assert args == ["-n", "--profile", "profiles/smoke", "table3", "--profile=profiles/slurm"]
    assert launch.resolve_profiles(["--profile", "profiles/mini"])[1] == "profiles/mini"
    with pytest.raises(SystemExit, match=r"--profile smok: no such profile \(profiles: contai"):
        launch.resolve_profiles(["--profile", "smok"])
    with pytest.raises(SystemExit, match=r"did you mean smoke\?"):
        launch.resolve_profiles(["--profile", "smok"])


def test_a_config_file_that_is_not_yaml_is_named_with_its_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("run: x\nevaluation:\n\tallow_failures: 1\n")
    with pytest.raises(SystemExit, match=rf"--configfile {bad}: {bad}:3:1: .* holds a tab"):
        launch.split_overrides(["table3", "--configfile", str(bad)])


def test_a_real_run_under_a_profile_that_says_change_me_stops_naming_the_keys(tmp_path):
    profile = tmp_path / "cluster"
    profile.mkdir()
    (profile / "config.yaml").write_text(
        "executor: slurm\ndefault-resources:\n  slurm_account: CHANGE_ME\n  runtime: 60\n"
    )
    with pytest.raises(SystemExit, match=r"default-resources\.slurm_account still set to CHANGE"):
        launch.check_placeholders(["--profile", str(profile), "table3"])
    launch.check_placeholders(["-n", "--profile", str(profile), "table3"])  # a dry run plans
    shipped = pipeline("--profile", "slurm", "table3")  # the repository's own slurm profile
    assert shipped.returncode == 1 and "profiles/slurm/config.yaml: default-resources" in (
        shipped.stderr
    )


def test_a_path_of_another_run_names_the_config_that_plans_it(monkeypatch):
    monkeypatch.chdir(REPO)
    with pytest.raises(SystemExit, match=r"run 'paper' is planned by config/config\.yaml"):
        launch.check_run_paths(["-n", "--profile", "profiles/smoke", "results/paper/tables/t.md"])
    launch.check_run_paths(["-n", "--profile", "profiles/smoke", "results/smoke/tables/t.md"])
    files = ["--configfile", "config/config.yaml", "config/eval-released.yaml"]
    assert launch.config_files(["table1", *files]) == [Path(f) for f in files[1:]]
    launch.check_run_paths(["results/released/tables/table1.md", *files])
