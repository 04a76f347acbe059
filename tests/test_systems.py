"""System kinds as modules: the registry, and a new kind planned without editing memrepro.config."""

from __future__ import annotations

import pytest

from memrepro import config as cfg
from memrepro.benchmarks import MEMAGENT_BENCHMARKS, MEMALPHA_BENCHMARKS
from memrepro.systems import KINDS, system_kind
from memrepro.systems.base import SystemKind


def test_the_registry_is_the_schemas_kind_enum(repo):
    schema = cfg.load_yaml(repo / "workflow/schemas/config.schema.yaml")
    systems = schema["properties"]["evaluation"]["properties"]["systems"]
    enum = systems["additionalProperties"]["properties"]["kind"]["enum"]
    assert list(KINDS) == enum
    assert all(name == kind.name for name, kind in KINDS.items())
    with pytest.raises(ValueError, match="unknown system kind 'notes'; known: memagent, "):
        system_kind("notes")


def test_a_memorizer_comes_with_its_memorize_settings():
    with pytest.raises(ValueError, match="'notes': a memorizer needs memorize_settings"):
        SystemKind("notes", memorizer=lambda *args: None)
    with pytest.raises(ValueError, match="'notes': a memorizer needs memorize_settings"):
        SystemKind("notes", memorize_settings=lambda config, system: {})
    memorizing = [name for name, kind in KINDS.items() if kind.memorizer is not None]
    assert memorizing == ["memagent", "memalpha", "mem1"]
    every = (*MEMAGENT_BENCHMARKS, *MEMALPHA_BENCHMARKS)
    assert [b for b in every if KINDS["memagent"].memorizes(b)] == list(MEMALPHA_BENCHMARKS)
    assert KINDS["memalpha"].memorizes("ruler_hqa") and not KINDS["memagent"].memorizes("ruler_hqa")


def notes_kind() -> SystemKind:
    """A kind the config has never heard of: its own budgets, a memorize job on Mem-α's."""
    return SystemKind(
        "notes",
        benchmarks=("ruler_hqa", "memalpha"),
        sharded=False,
        job_settings=lambda config, system: {"notes": system["notes"]},
        instance_settings=lambda config, system: {"protocol": "notes-protocol"},
        memorize_settings=lambda config, system: {"sampling": {"temperature": 0.0}},
        memorizer=lambda *args: None,
    )


def test_a_new_kind_plans_its_jobs_and_settings_with_no_edit_of_the_config(repo, monkeypatch):
    monkeypatch.setitem(KINDS, "notes", notes_kind())
    config = cfg.load_yaml(repo / "config/smoke.yaml")
    config["evaluation"]["systems"] = {
        "notes-tiny": {"kind": "notes", "model": "tiny-instruct", "display": "Notes", "notes": 7}
    }
    systems = cfg.eval_systems(config)
    assert systems["notes-tiny"]["benchmarks"] == ["ruler_hqa", "memalpha"]
    jobs = cfg.eval_jobs(config, systems)
    hqa = [j for j in jobs if j.benchmark == "ruler_hqa"]
    assert [j.length for j in hqa] == config["ruler_hqa"]["n_docs"]
    assert {j.shards for j in jobs} == {1}  # not sharded, whatever evaluation.shards says
    (memalpha,) = [j for j in jobs if j.benchmark == "memalpha"]
    assert memalpha.tasks == tuple(config["memalpha"]["memalpha"]["sources"])

    settings = cfg.eval_settings(config, hqa[0], 0, systems)
    assert settings["kind"] == "notes" and settings["notes"] == 7
    assert not cfg.memorizes(systems["notes-tiny"], "ruler_hqa")

    assert cfg.memorizes(systems["notes-tiny"], "memalpha")
    qa = cfg.eval_settings(config, memalpha, 0, systems)
    assert qa["protocol"] == "notes-protocol" and "notes" not in qa
    assert cfg.eval_model(config, systems["notes-tiny"], "memalpha") == cfg.qa_model(config)
    memorize = cfg.memorize_settings(config, memalpha, systems)
    assert memorize["kind"] == "notes" and memorize["sampling"] == {"temperature": 0.0}


def test_a_kind_runs_only_its_allowed_benchmarks(repo):
    config = cfg.load_yaml(repo / "config/smoke.yaml")
    config["evaluation"]["systems"]["rag-tiny"] = {
        **next(s for s in config["evaluation"]["systems"].values() if s["kind"] == "rag"),
        "benchmarks": ["ruler"],
    }
    with pytest.raises(cfg.ConfigError, match=r"rag-tiny.benchmarks: a rag system runs only on"):
        cfg.validate_config(config, repo / "workflow/schemas/config.schema.yaml")
