"""The config schema and the experiment matrix built from it."""

from __future__ import annotations

import copy

import pytest

from memrl import config as cfg

SCHEMA = cfg.Path(__file__).resolve().parents[1] / "workflow/schemas/config.schema.yaml"


@pytest.fixture(params=["config.yaml", "smoke.yaml"])
def config(request, repo):
    return cfg.load_yaml(repo / "config" / request.param)


@pytest.fixture
def paper(repo):
    return cfg.load_yaml(repo / "config/config.yaml")


def test_shipped_configs_validate(config):
    cfg.validate_config(config, SCHEMA)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda c: c["agent"].update(chunk_size=5000),
            "config key agent: unknown key(s) chunk_size",
        ),
        (lambda c: c["agent"].update(chunk_tokens="5000"), "config key agent.chunk_tokens: '5000'"),
        (lambda c: c["training"]["stage1"].pop("lr"), "config key training.stage1: 'lr' is a"),
        (lambda c: c["evaluation"].update(final_prompt="x"), "config key evaluation.final_prompt"),
        (
            lambda c: c["evaluation"]["systems"]["rl-memagent-7b"].update(model="nope"),
            "config key evaluation.systems.rl-memagent-7b.model: unknown model 'nope'",
        ),
        (lambda c: c["filter"].update(models=["gpt"]), "config key filter.models.0: unknown model"),
    ],
)
def test_bad_config_fails_with_one_line_naming_the_key(paper, mutate, message):
    bad = copy.deepcopy(paper)
    mutate(bad)
    with pytest.raises(cfg.ConfigError) as error:
        cfg.validate_config(bad, SCHEMA)
    assert str(error.value).startswith(message)
    assert "\n" not in str(error.value)


def test_paper_matrix_covers_every_system_and_length(paper):
    jobs = cfg.eval_jobs(paper)
    assert len(jobs) == len(paper["evaluation"]["systems"]) * 10
    assert ("rl-memagent-14b", 25600) in jobs


def test_max_docs_limits_a_system(paper):
    paper["evaluation"]["systems"]["memagent-qwen2.5-7b-instruct"]["max_docs"] = 6400
    lengths = [n for s, n in cfg.eval_jobs(paper) if s == "memagent-qwen2.5-7b-instruct"]
    assert max(lengths) == 6400 and len(lengths) == 8


def test_trained_models_resolve_to_their_final_checkpoint(paper):
    assert cfg.model_dir(paper, "rl-memagent-7b").parts[-2:] == ("rl-memagent-7b", "stage2")
    assert cfg.model_dir(paper, "qwen2.5-7b").parts[-2:] == ("models", "qwen2.5-7b")
    # a trained run inherits its base model's tensor-parallel size
    assert cfg.model_gpus(paper, "rl-memagent-14b") == 2


def test_paper_hyperparameters_reach_the_training_job(paper):
    settings = cfg.train_settings(paper, "rl-memagent-14b", "stage1")
    assert (settings["group_size"], settings["rollout_batch"]) == (16, 256)
    assert (settings["lr"], settings["warmup_steps"], settings["kl_coef"]) == (1e-6, 20, 1e-3)
    assert settings["agent"] == {
        "query_tokens": 1024,
        "chunk_tokens": 5000,
        "memory_tokens": 1024,
        "final_tokens": 1024,
    }
    assert cfg.train_settings(paper, "rl-memagent-14b", "stage2")["max_chunks"] >= 12


def test_vllm_engine_gets_the_models_tensor_parallel_size(paper):
    settings = cfg.eval_settings(paper, "memagent-qwen2.5-32b-instruct", 50)
    assert settings["engine"]["tensor_parallel_size"] == 4
