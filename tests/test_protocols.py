"""One method, two protocols: MemAgent's memory written for the question (its own) or for
MemoryAgentBench's task description alone (the question first seen at the final answer), and the
protocols table that sets the two side by side with both papers' numbers."""

from __future__ import annotations

import copy

import pytest
from test_controls import items, with_units
from test_evaluation import HQA, ScriptedEngine, rows

from memrepro import config as cfg
from memrepro.agents.memagent import MemAgentConfig
from memrepro.evaluation import evaluate, workflow_runner
from memrepro.report.protocols import build_protocols_table
from memrepro.systems import memagent

AGENT = MemAgentConfig(chunk_tokens=10, memory_tokens=8, final_tokens=8)
READING = "I will provide you with sequential information chunks."


def test_a_question_blind_memory_never_sees_the_question_until_the_answer(tmp_path):
    row = rows(1, context_chars=25)[0]
    engine = ScriptedEngine()
    system = memagent.memagent_system(HQA, engine.tokenizer, None, AGENT, READING)
    [prediction] = evaluate([row], workflow_runner(HQA, system, engine, None), tmp_path / "p", 1)
    *updates, final = [r.messages[0]["content"] for r in engine.requests]
    assert len(updates) == 3 and prediction["n_calls"] == 4  # 25 characters, 10-token chunks
    assert all(READING in u and row["input"] not in u for u in updates)
    assert row["input"] in final and READING not in final
    aware = ScriptedEngine()
    system = memagent.memagent_system(HQA, aware.tokenizer, None, AGENT)
    evaluate([row], workflow_runner(HQA, system, aware, None), tmp_path / "q", 1)
    assert all(row["input"] in r.messages[0]["content"] for r in aware.requests)


def test_the_blind_switch_reads_mem_alphas_task_description(repo):
    config = cfg.load_yaml(repo / "config/config.yaml")
    systems = config["evaluation"]["systems"]
    blind = memagent.job_settings(config, systems["rl-memoryagent-14b-blind"])
    assert blind["reading"] == config["memalpha"]["ruler_hqa"]["prompt"]
    assert "reading" not in memagent.job_settings(config, systems["rl-memoryagent-14b-released"])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda s: s.update(benchmarks=["ruler_hqa", "mab"]),
            "config key evaluation.systems.rl-memagent-tiny-blind.benchmarks: a question-blind "
            "MemAgent runs MemAgent's benchmarks; on mab every MemAgent system reads",
        ),
        (lambda s: s.update(question_blind="yes"), "'yes' must be true or false"),
    ],
)
def test_a_bad_question_blind_system_names_its_key(repo, change, message):
    config = copy.deepcopy(cfg.load_yaml(repo / "config/smoke.yaml"))
    change(config["evaluation"]["systems"]["rl-memagent-tiny-blind"])
    with pytest.raises(cfg.ConfigError, match=message.replace("(", r"\(")):
        cfg.validate_config(config, cfg.SCHEMA)


SYSTEMS = [
    {"id": "aware", "display": "Agent", "kind": "memagent", "model": "m", "paper_row": "RL-14B"},
    {
        "id": "blind",
        "display": "Agent blind",
        "kind": "memagent",
        "model": "m",
        "question_blind": True,
        "paper_row": None,
    },
    {"id": "other", "display": "Other", "kind": "memagent", "model": "n", "paper_row": None},
    # repeats at another sampling seed: of the aware and the blind system (never a row)
    {
        "id": "aware.seed1",
        "display": "Agent (seed 1)",
        "kind": "memagent",
        "model": "m",
        "paper_row": "RL-14B",
        "seed_of": "aware",
    },
    {
        "id": "blind.seed1",
        "display": "Agent blind (seed 1)",
        "kind": "memagent",
        "model": "m",
        "question_blind": True,
        "paper_row": None,
        "seed_of": "blind",
    },
]
PAPER = {"ruler_hqa": {"RL-14B": {50: 80.47, 3200: 79.69}}}
MAB = {"task": "ruler_qa2_421K", "paper": {"RL-14B": 0.16}, "where": "Table 2"}


def test_the_table_pairs_each_blind_system_with_the_aware_systems_of_its_model():
    hqa = {"benchmark": "ruler_hqa", "length": 3200}
    records = [
        {**hqa, "system": "aware", "items": items([1.0] * 16 + [0.0] * 4)},
        {**hqa, "system": "blind", "items": items([1.0] * 4 + [0.0] * 16)},
        {**hqa, "system": "other", "items": items([0.0] * 20)},
        {**hqa, "system": "aware.seed1", "items": items([1.0] * 20)},
        {**hqa, "system": "blind.seed1", "items": items([0.0] * 20)},
        {
            "system": "aware",
            "benchmark": "mab",
            "length": 0,
            "items": {"ruler_qa2_421K#0": 0.2, "ruler_qa1_197K#0": 0.9},
        },
    ]
    records.insert(0, {**records[0], "length": 50, "system": "blind"})  # no aware run at 50
    table = build_protocols_table(with_units(records), SYSTEMS, PAPER, MAB)
    assert list(table.index) == ["Agent blind vs Agent"]
    assert list(table.columns) == ["ruler_hqa@3200", "mab: ruler_qa2_421K"]
    hqa_cell = table.loc["Agent blind vs Agent", "ruler_hqa@3200"]
    assert "(ours 20.0, question-aware 80.0; n 20): the question helps" in hqa_cell
    assert hqa_cell.endswith("; paper (question-aware) 79.69")
    mab_cell = table.loc["Agent blind vs Agent", "mab: ruler_qa2_421K"]
    assert mab_cell == "20.0 (blind; 1 instance(s)); Mem-α's Table 2 16.0"
    records[-1]["items"] = {"ruler_qa1_197K#0": 0.9}
    elsewhere = build_protocols_table(
        with_units(records), SYSTEMS, PAPER, MAB
    )  # no instance of the source
    assert list(elsewhere.columns) == ["ruler_hqa@3200"]


def test_a_question_aware_system_on_the_instances_is_set_beside_the_blind_one_of_its_model():
    """MemAgent's protocol on MemoryAgentBench: aware − blind on the source's instances both
    answered, paired, beside Mem-α's printed (blind) number; a system of another model is not."""
    aware = {"id": "per-question", "display": "Agent per question", "kind": "memagent"}
    systems = [*SYSTEMS, {**aware, "model": "m", "question_aware": True, "paper_row": None}]
    mab = {"benchmark": "mab", "length": 0}
    source = [1.0] * 12 + [0.0] * 8
    records = [
        {**mab, "system": "aware", "items": items([0.0] * 20, "ruler_qa2_421K")},
        {**mab, "system": "per-question", "items": items(source, "ruler_qa2_421K")},
        {**mab, "system": "other", "items": items([1.0] * 20, "ruler_qa2_421K")},
    ]
    table = build_protocols_table(with_units(records), systems, PAPER, MAB)
    row = "Agent per question vs Agent"
    assert list(table.index) == [row] and list(table.columns) == ["mab: ruler_qa2_421K"]
    cell = table.loc[row, "mab: ruler_qa2_421K"]
    assert cell.startswith("+60.0 [") and "(ours 60.0, blind 0.0; n 20): the question helps" in cell
    assert cell.endswith("; Mem-α's Table 2 (blind) 16.0")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda s: s.update(benchmarks=["ruler_hqa", "mab"]),
            "rl-memagent-tiny-aware.benchmarks: a question-aware MemAgent runs Mem-α's "
            "benchmarks; on ruler_hqa every MemAgent system writes its memory for the question",
        ),
        (
            lambda s: s.update(question_blind=True),
            "rl-memagent-tiny-aware: question_blind and question_aware, at once",
        ),
        (
            lambda s: s.update(kind="mem1", model="mem1-tiny"),
            "rl-memagent-tiny-aware.question_aware: only a memagent system has it",
        ),
        (
            lambda s: s.update(sources=["ruler_qa2_421K", "squad"]),
            "rl-memagent-tiny-aware.sources: squad is not a source of its Mem-α benchmarks (mab)",
        ),
    ],
)
def test_a_bad_question_aware_system_names_its_key(repo, change, message):
    config = copy.deepcopy(cfg.load_yaml(repo / "config/smoke.yaml"))
    change(config["evaluation"]["systems"]["rl-memagent-tiny-aware"])
    with pytest.raises(cfg.ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        cfg.validate_config(config, cfg.SCHEMA)


def test_a_system_runs_only_its_sources_and_the_memorize_job_is_question_aware(repo):
    config = cfg.load_config([repo / "config/smoke.yaml"])
    systems = cfg.eval_systems(config)
    [job] = [j for j in cfg.eval_jobs(config, systems) if j.system == "rl-memagent-tiny-aware"]
    assert (job.benchmark, job.tasks) == ("mab", ("ruler_qa2_421K",))
    settings = memagent.memorize_settings(config, systems["rl-memagent-tiny-aware"])
    assert settings["question_aware"] is True
    assert "question_aware" not in memagent.memorize_settings(config, systems["rl-memagent-tiny"])


def test_the_smoke_and_paper_plans_select_both_protocols_on_the_same_sets(repo):
    for name in ("smoke.yaml", "config.yaml"):
        config = cfg.load_yaml(repo / "config" / name)
        jobs = cfg.report_jobs(config, cfg.PROTOCOLS_TABLE)
        systems = cfg.eval_systems(config)
        blind = {(j.benchmark, j.length) for j in jobs if systems[j.system].get("question_blind")}
        aware = {
            (j.benchmark, j.length) for j in jobs if not systems[j.system].get("question_blind")
        }
        assert blind <= aware and aware - blind == {("mab", 0)}, name
        per_question = [j for j in jobs if systems[j.system].get("question_aware")]
        assert [(j.benchmark, j.tasks) for j in per_question] == [("mab", ("ruler_qa2_421K",))]
        settings = cfg.table_settings(config, cfg.PROTOCOLS_TABLE)
        assert settings["mab"]["paper"] == {"RL-MEMAGENT-14B": 0.16}  # Mem-α's Table 2
    assert max(n for _, n in blind) == 3200  # the paper plan: to 448K, Table 1's 79.69
