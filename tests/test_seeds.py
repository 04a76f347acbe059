"""Honest selection: a system sampled at several seeds (its repeats `<id>.seed<k>`), the seeds
table's mean over seeds and questions with its interval, each seed, and best-of-N apart."""

from __future__ import annotations

import copy

import pytest

from memrepro import config as cfg
from memrepro.report.attribution import Evidence, Gap, Source, attribute
from memrepro.report.seeds import build_seeds_table, cell_text, seed_summary


@pytest.fixture(scope="module")
def smoke(repo):
    return cfg.load_config([repo / "config/smoke.yaml"])


@pytest.fixture(scope="module")
def trained_twice(repo):
    """The smoke config with its run trained twice (training.seeds: 2)."""
    return cfg.load_config([repo / "config/smoke.yaml"], overrides={"training.seeds": 2})


def test_a_system_with_two_seeds_gets_one_repeat_at_the_next_seed(smoke):
    systems = cfg.eval_systems(smoke)
    repeat = systems["rl-memagent-tiny-blind.seed1"]
    assert repeat["seed_of"] == "rl-memagent-tiny-blind" and repeat["sampling_seed"] == 1
    assert repeat["benchmarks"] == ["ruler_hqa"]
    jobs = {(j.benchmark, j.system, j.length): j for j in cfg.eval_jobs(smoke, systems)}
    base = cfg.eval_settings(smoke, jobs[("ruler_hqa", "rl-memagent-tiny-blind", 10)], 0)
    again = cfg.eval_settings(smoke, jobs[("ruler_hqa", "rl-memagent-tiny-blind.seed1", 10)], 0)
    assert base["sampling"]["seed"] == 0 and again["sampling"]["seed"] == 1
    assert {k: v for k, v in again.items() if k not in ("system", "sampling")} == {
        k: v for k, v in base.items() if k not in ("system", "sampling")
    }
    # the paper tables read the first seed only; the seeds table both
    assert not [j for j in cfg.report_jobs(smoke, "table1") if "seed" in j.system]
    assert {j.system for j in cfg.report_jobs(smoke, cfg.SEEDS_TABLE)} == {
        "rl-memagent-tiny-blind",
        "rl-memagent-tiny-blind.seed1",
    }


def test_a_run_trained_twice_is_a_second_run_at_shifted_seeds_and_its_systems_repeat(
    trained_twice,
):
    """training.seeds: 2 trains rl-memagent-tiny again as rl-memagent-tiny-seed1, at the run
    seed and the rollouts' sampling seed + 1, with everything else its run's; every system whose
    model it is gets a repeat on the same benchmarks, which only the seeds table shows."""
    runs = cfg.memagent_runs(trained_twice)
    assert runs["rl-memagent-tiny-seed1"] == {
        **runs["rl-memagent-tiny"],
        "of": "rl-memagent-tiny",
        "seed_offset": 1,
    }
    for stage in ("stage1", "stage2"):
        base = cfg.train_settings(trained_twice, "rl-memagent-tiny", stage)
        again = cfg.train_settings(trained_twice, "rl-memagent-tiny-seed1", stage)
        assert again["seed"] == base["seed"] + 1
        assert again["sampling"] == {**base["sampling"], "seed": base["sampling"]["seed"] + 1}
        same = ("run", "seed", "sampling", "recipe_run")
        assert {k: v for k, v in again.items() if k not in same} == {
            k: v for k, v in base.items() if k not in same
        }
        assert again["recipe_run"] == "rl-memagent-tiny"  # its run's per-run recipe values
    systems = cfg.eval_systems(trained_twice)
    repeat = systems["rl-memagent-tiny.train-seed1"]
    assert repeat["model"] == "rl-memagent-tiny-seed1"
    assert repeat["benchmarks"] == systems["rl-memagent-tiny"]["benchmarks"]
    assert cfg.is_variant(repeat) and "memagent-tiny-instruct.train-seed1" not in systems
    repeats = cfg.report_settings(trained_twice) | cfg.table_settings(
        trained_twice, cfg.SEEDS_TABLE
    )
    assert repeats["training_repeats"] == {
        "rl-memagent-tiny": ["rl-memagent-tiny.train-seed1"],
        "rl-memagent-tiny-blind": ["rl-memagent-tiny-blind.train-seed1"],
        "rl-memagent-tiny-aware": ["rl-memagent-tiny-aware.train-seed1"],
        "closedbook-rl-memagent-tiny": ["closedbook-rl-memagent-tiny.train-seed1"],
    }


def test_repeats_run_only_where_the_evaluation_samples_and_unseeded_stays_unseeded(repo):
    config = copy.deepcopy(cfg.load_yaml(repo / "config/smoke.yaml"))
    config["evaluation"]["seeds"] = 3
    config["evaluation"]["sampling"]["seed"] = None
    cfg.validate_config(config, cfg.SCHEMA)
    systems = cfg.eval_systems(config)
    assert systems["memagent-tiny-instruct.seed2"]["sampling_seed"] is None
    # Mem-α's instances sample with memalpha's own settings: its framework gets no repeat
    assert "memalpha-tiny.seed1" not in systems
    assert systems["rl-memagent-tiny.seed1"]["benchmarks"] == ["ruler_hqa", "ruler", "longbench"]


@pytest.mark.parametrize("where", ["evaluation", "system", "training"])
def test_seeds_below_one_name_their_key(repo, where):
    config = copy.deepcopy(cfg.load_yaml(repo / "config/smoke.yaml"))
    target = config["training" if where == "training" else "evaluation"]
    if where == "system":
        target = target["systems"]["rl-memagent-tiny-blind"]
    target["seeds"] = 0
    with pytest.raises(cfg.ConfigError, match=r"seeds.*0 must be at least 1"):
        cfg.validate_config(config, cfg.SCHEMA)


def test_the_mean_over_seeds_and_items_with_each_seed_and_best_of_n_apart():
    first = {f"hqa#{i}": float(i < 4) for i in range(10)}  # 40 %
    second = {f"hqa#{i}": float(i < 6) for i in range(10)}  # 60 %
    summary = seed_summary([first, second])
    assert summary["mean"] == pytest.approx(50.0) and summary["each"] == [40.0, 60.0]
    assert summary["best"] == 60.0 and summary["n"] == 10
    low, high = summary["interval"]
    assert low < 50.0 < high
    assert cell_text(summary).startswith("50.0 [") and "best-of-2 60.0" in cell_text(summary)
    partial = seed_summary([first, {"hqa#0": 1.0}])  # only the items every seed scored count
    assert partial["n"] == 1 and partial["each"] == [100.0, 100.0]
    assert cell_text(seed_summary([{"a": 1.0}, {"b": 1.0}])).endswith("(no item every seed scored)")


def test_the_table_has_a_row_per_sampled_system_and_the_diagnosis_reads_it():
    def record(system, scores):
        items = {f"hqa#{i}": s for i, s in enumerate(scores)}
        return {"system": system, "benchmark": "ruler_hqa", "length": 50, "items": items}

    records = [record("a", [1.0, 0.0]), record("a.seed1", [1.0, 1.0]), record("b", [0.0, 0.0])]
    systems = [{"id": "a", "display": "Agent"}, {"id": "b", "display": "Other"}]
    records.append(record("a.train-seed1", [0.0, 0.0]))
    frame = build_seeds_table(records, systems, {"a": ["a.seed1"]}, {"a": ["a.train-seed1"]})
    sampled, trained = "Agent, over sampling seeds", "Agent, over training seeds"
    assert list(frame.index) == [sampled, trained] and list(frame.columns) == ["ruler_hqa@50"]
    assert "each seed 50.0 / 100.0; best-of-2 100.0" in frame.loc[sampled, "ruler_hqa@50"]
    assert "each seed 50.0 / 0.0; best-of-2 50.0" in frame.loc[trained, "ruler_hqa@50"]
    # a diagnosis reads the same repeats as bounds on noise, the seeds table's rows named
    ids = {"a": {}, "a.seed1": {"seed_of": "a"}, "a.train-seed1": {"training_seed_of": "a"}}
    evidence = Evidence(
        {
            (r["system"], "ruler_hqa", 50, "the benchmark's"): {
                key: {"score": s} for key, s in r["items"].items()
            }
            for r in records
        },
        {sid: {"id": sid, "display": "Agent", **spec} for sid, spec in ids.items()},
    )
    found = attribute(Gap(-40.0, (-60.0, -20.0), Source("ruler_hqa", "hqa", "a", 50)), evidence)
    bounds = {e.factor: (e.effect, e.row) for e in found.effects if e.bound}
    assert bounds == {"sampling": (50.0, sampled), "training seeds": (50.0, trained)}
    assert found.verdict == "explained"  # a 40-point gap within a 50-point move of the seeds
