"""Planning a subset of systems (config/eval-released.yaml) and the machine a profile describes."""

from __future__ import annotations

import pytest

from memrepro import config as cfg
from memrepro.config.select import apply_selection


@pytest.fixture
def released(repo):
    """The paper config with config/eval-released.yaml laid over it, as Snakemake merges them."""
    return cfg.load_config([repo / "config/config.yaml", repo / "config/eval-released.yaml"])


def test_released_config_evaluates_only_the_released_checkpoints(released):
    # and the closed-books of the models answering their cells (Memalpha-4B's: the QA model)
    assert set(released["evaluation"]["systems"]) == {
        "rl-memoryagent-14b-released",
        "rl-memoryagent-7b-released",
        "memalpha-4b-released",
        "closedbook-rl-memoryagent-14b",
        "closedbook-rl-memoryagent-7b",
        "closedbook-qwen3-32b",
    }
    # nothing trains: no system evaluates a run trained here
    assert not cfg.memagent_runs(released) and not cfg.memalpha_runs(released)
    models = {
        cfg.eval_model(released, spec, job.benchmark)
        for job in cfg.eval_jobs(released)
        for spec in [cfg.eval_systems(released)[job.system]]
    }
    assert "rl-memagent-14b" not in models and "rl-memoryagent-14b" in models


def test_released_checkpoints_stand_in_for_the_runs_trained_here(released):
    evaluation, report = released["evaluation"], released["report"]
    # Table 4's probe, the memory ablation (Tables 8, 9, Figures 8, 9) and the case studies
    assert evaluation["probe"]["systems"] == {
        "rl-memoryagent-14b-released": "14B",
        "rl-memoryagent-7b-released": "7B",
    }
    assert set(evaluation["memory_ablation"]["systems"]) == {
        "rl-memoryagent-14b-released",
        "rl-memoryagent-7b-released",
    }
    systems = {study["system"] for study in report["case_studies"]}
    assert systems == {"rl-memoryagent-14b-released", "rl-memoryagent-7b-released"}
    # the RL ablation needs the plain backbones, which the selection leaves out
    assert report["rl_ablation"] == {}
    ablated = {job.system for job in cfg.eval_jobs(released)}
    assert "rl-memoryagent-14b-released.m4096-c1928" in ablated


def test_a_selected_trained_run_is_still_trained(repo):
    paper = cfg.load_yaml(repo / "config/config.yaml")
    paper["evaluation"]["select"] = {"systems": ["rl-memagent-7b", "memalpha-4b-trained-here"]}
    cfg.validate_config(paper, cfg.SCHEMA)
    assert set(cfg.memagent_runs(paper)) == {"rl-memagent-7b"}
    assert set(cfg.memalpha_runs(paper)) == {"memalpha-4b-b0.05-g0.1"}
    # the 14B probe and ablation entries name an unselected system: left out
    assert set(paper["evaluation"]["probe"]["systems"]) == {"rl-memagent-7b"}


@pytest.mark.parametrize(
    ("select", "message"),
    [
        ({"systems": ["nope"]}, "config key evaluation.select.systems: unknown system(s) nope"),
        (
            {"systems": ["rl-memagent-7b"], "replace": {"rl-memagent-14b": "nope"}},
            "config key evaluation.select.replace: unknown system(s) nope",
        ),
        ({"systems": []}, "config key evaluation.select.systems: [] must be a list that is not"),
        (  # a misspelt key: nothing would be swapped, and the probe & co. silently dropped
            {"systems": ["rl-memagent-7b"], "replace": {"rl-memagent-7": "rl-memagent-7b"}},
            "config key evaluation.select.replace: unknown system(s) rl-memagent-7 (did you mean",
        ),
        (  # spelt right, but what it puts in a key the user never wrote is refused there
            {
                "systems": ["rl-memoryagent-7b-released", "memalpha-4b-released"],
                "replace": {"rl-memagent-7b": "memalpha-4b-released"},
            },
            "config key evaluation.memory_ablation.systems: 'memalpha-4b-released' is not a "
            "memagent system (put there by evaluation.select.replace.rl-memagent-7b → "
            "memalpha-4b-released)",
        ),
    ],
)
def test_a_bad_selection_names_its_key(repo, select, message):
    paper = cfg.load_yaml(repo / "config/config.yaml")
    paper["evaluation"]["select"] = select
    with pytest.raises(cfg.ConfigError) as error:
        cfg.validate_config(paper, cfg.SCHEMA)
    assert message in str(error.value)


def test_no_selection_changes_nothing(repo):
    paper = cfg.load_yaml(repo / "config/config.yaml")
    before = repr(paper)
    apply_selection(paper)
    assert repr(paper) == before


def test_one_machine_refuses_what_needs_more_and_names_the_keys(repo):
    paper = cfg.load_yaml(repo / "config/config.yaml")
    machine = cfg.Machine.from_resources({"gpu": 8, "nodes": 1, "_cores": 32})
    assert machine == cfg.Machine(gpus=8, nodes=1)
    keys = cfg.train_keys(paper, "rl-memagent-14b")
    with pytest.raises(cfg.ConfigError) as error:
        machine.claim("training run rl-memagent-14b", 128, 16, keys)
    assert str(error.value).startswith(
        "training run rl-memagent-14b needs 16 nodes with 128 GPUs (training.runs.rl-memagent-14b"
        ".nodes and .gpus_per_node), but this profile runs on 1 node with 8 GPUs"
    )
    assert "memalpha.training.qa_server.gpus" in cfg.train_keys(paper, "memalpha-4b-b0-g0.1")
    # a trained run's inference GPUs are its base model's
    assert cfg.gpu_keys(paper, "rl-memagent-14b") == "models.qwen2.5-14b-instruct.gpus"
    with pytest.raises(cfg.ConfigError, match=r"needs 1 node with 16 GPUs \(models.x.gpus\)"):
        cfg.Machine(gpus=8).claim("evaluation", 16, 1, "models.x.gpus")


def test_on_one_machine_a_gpu_job_claims_every_gpu_and_a_cpu_job_none():
    machine = cfg.Machine(gpus=8, nodes=1)
    assert machine.claim("evaluation", 2, 1, "k") == 8  # Snakemake gives no job its own devices
    assert machine.claim("evaluation", 0, 1, "k") == 0
    # a cluster profile declares no machine: SLURM gets the job's own count
    assert cfg.Machine().claim("training", 128, 16, "k") == 128


def test_a_selection_made_by_a_config_file_can_be_cleared_from_the_command_line(repo):
    files = [repo / "config/config.yaml", repo / "config/eval-released.yaml"]
    cleared = cfg.load_config(files, {"evaluation.select": None})
    assert "select" not in cleared["evaluation"]
    paper = cfg.load_config(files[:1])
    assert set(cleared["evaluation"]["systems"]) == set(paper["evaluation"]["systems"])


def without_api(repo, **select) -> dict:
    paper = cfg.load_yaml(repo / "config/config.yaml")
    paper["evaluation"]["hosted"] = False
    if select:
        paper["evaluation"]["select"] = select
    cfg.validate_config(paper, cfg.SCHEMA)
    return paper


def test_without_an_api_key_nothing_hosted_is_planned_and_everything_else_is(repo):
    from memrepro.cost.api import is_hosted

    paper = cfg.load_config([repo / "config/config.yaml"])
    offline = without_api(repo)
    jobs, systems = cfg.eval_jobs(offline), cfg.eval_systems(offline)
    assert jobs and not any(is_hosted(offline, systems[j.system]["model"]) for j in jobs)
    kinds = {systems[j.system]["kind"] for j in jobs}
    assert "mem0" not in kinds and {"rag", "memagent", "memalpha"} <= kinds
    retrievers = {systems[j.system].get("retriever") for j in jobs} - {None}
    assert retrievers == {"bm25", "dense"}  # the `openai` retriever alone left out
    assert "judge-gpt-4o" not in offline["rescore"] and "whole-reply" in offline["rescore"]
    # every other evaluation of the paper plan stays
    hosted = {
        s
        for s, spec in cfg.eval_systems(paper).items()
        if spec["kind"] == "mem0"
        or is_hosted(paper, spec["model"])
        or spec.get("retriever") == "openai"
    }
    kept = [j for j in cfg.eval_jobs(paper) if j.system not in hosted]
    assert set(jobs) == set(kept) and hosted
    assert "gpt-4.1-mini-memalpha" not in offline["evaluation"]["systems"]
    # a selection naming a hosted system says why it cannot be had
    with pytest.raises(cfg.ConfigError, match=r"mem0-gpt-5\.1 call\(s\) a hosted model, which "):
        without_api(repo, systems=["mem0-gpt-5.1"])
    assert set(without_api(repo, systems=["rag-qwen2.5-7b"])["evaluation"]["systems"]) == {
        "rag-qwen2.5-7b"
    }
