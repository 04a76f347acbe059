"""The controls, systems that need no memory: closed-book (the question alone, in each benchmark's
own prompt with no context, on MemAgent's benchmarks and on Mem-α's instances), oracle (the gold
evidence alone, where a benchmark marks it) and full context (MemAgent's answer prompt over the
whole context, middle-truncated); planned and priced like any kind."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from memalpha_fakes import RuleQA
from test_evaluation import HQA, ScriptedEngine, rows
from test_memalpha_baselines import ROWS, judge

from memrepro import config as cfg
from memrepro.agents.memagent import final_prompt_text
from memrepro.baselines.longcontext import middle_truncate
from memrepro.benchmarks import Task
from memrepro.benchmarks.ruler_hqa import gold_contexts
from memrepro.data.ruler_hqa import DocPool, render_context, write_pool
from memrepro.engines.base import SamplingParams
from memrepro.evaluation import direct_prompt, evaluate, instance_qa_runner, workflow_runner
from memrepro.jobs.evaluate import with_evidence
from memrepro.systems import closedbook, fullcontext, oracle, system_kind
from memrepro.systems.base import InstanceShape

SETTINGS = {
    "benchmark": "memalpha",
    "max_input_tokens": 10**6,
    "max_output_tokens": 7,
    "sampling": {"temperature": 0.1, "top_p": 1.0, "seed": None},
    "protocol": "baseline",
    "prompt": "direct",
}


def test_on_a_memagent_benchmark_it_asks_the_direct_prompt_without_the_context(tmp_path):
    row = rows(1, context_chars=400)[0]
    engine = ScriptedEngine()
    system = closedbook.workflows(HQA, SETTINGS, engine.tokenizer, None)
    [prediction] = evaluate([row], workflow_runner(HQA, system, engine, None), tmp_path / "p", 1)
    [request] = engine.requests
    prompt = request.messages[0]["content"]
    assert prompt == direct_prompt(HQA, row, "") and row["input"] in prompt
    assert row["context"][:40] not in prompt  # nothing of the document
    assert request.max_tokens == 7 and prediction["n_calls"] == 1


def test_on_mem_alphas_instances_each_question_is_asked_over_no_context(tmp_path):
    engine = RuleQA(lambda text: "Germany" if "Berlin" in text else "no idea")
    prepare, sampling, protocol = closedbook.questions(SETTINGS, engine, judge())
    runner = instance_qa_runner(engine, sampling, judge(), prepare, protocol)
    [record] = evaluate(ROWS[:1], runner, tmp_path / "p.jsonl", batch_size=1)
    assert record["memory_tokens"] == 0  # it read nothing
    for request in engine.requests:
        content = request.messages[1]["content"]
        assert not any(chunk in content for chunk in ROWS[0]["chunks"])
    # a model that knows where Berlin is answers it without the document; Rome it cannot
    assert record["scores"] == [1.0, 0.0] and sampling == SamplingParams(0.1, 1.0)


def test_its_cost_does_not_grow_with_the_context():
    settings = {"max_input_tokens": 4096, "max_output_tokens": 1024}
    assert closedbook.calls(settings, 10**6) == closedbook.calls(settings, 0) == [(100, 1024)]
    shape = InstanceShape(chunks=300, chunk_tokens=2000, questions=3)
    assert closedbook.instance_calls(settings, shape) == [(100, 1024)] * 3


def test_in_memagents_filter_prompt_it_asks_the_question_alone_for_a_boxed_answer(tmp_path):
    row = rows(1, context_chars=400)[0]
    engine = ScriptedEngine()
    system = closedbook.workflows(HQA, {**SETTINGS, "prompt": "filter"}, engine.tokenizer, None)
    evaluate([row], workflow_runner(HQA, system, engine, None), tmp_path / "p", 1)
    [request] = engine.requests
    # MemAgent's filter: the question, then where to put the answer; no empty "text" to read
    assert request.messages[0]["content"] == f"{row['input']}\nYour final answer in \\boxed{{}}."
    settings = closedbook.job_settings({}, {"max_input_tokens": 9, "max_output_tokens": 3})
    assert settings["prompt"] == "direct" and settings["answer_format"] == "answer_is"
    system = {"max_input_tokens": 9, "max_output_tokens": 3, "prompt": "filter"}
    assert closedbook.job_settings({}, system)["answer_format"] == "boxed"


def test_the_paper_plan_runs_it_once_on_ruler_hqa_for_every_model_a_memory_cell_reads(repo):
    config = cfg.load_yaml(repo / "config/config.yaml")
    systems = cfg.eval_systems(config)
    every = cfg.eval_jobs(config, systems)
    jobs = [j for j in every if systems[j.system]["kind"] == "closedbook"]
    # the same questions at every length, no context: one job stands for all of them
    hqa = [j for j in jobs if j.benchmark == "ruler_hqa"]
    assert {j.length for j in hqa} == {min(config["ruler_hqa"]["n_docs"])}
    assert len(hqa) == len({j.system for j in hqa}) and {j.shards for j in hqa} == {1}
    longbench = [j for j in jobs if j.benchmark == "longbench"]
    assert {tuple(sorted(j.tasks)) for j in longbench} == {
        ("2wikimqa", "hotpotqa", "musique", "narrativeqa", "qasper")
    }
    assert Task("longbench", "gov_report").task not in longbench[0].tasks
    # every model that answers a memory cell of a closed-book's benchmarks has its own
    kinds = {s: system_kind(spec["kind"]) for s, spec in systems.items()}
    closed = {(systems[j.system]["model"], j.benchmark) for j in jobs}
    for job in every:
        kind, spec = kinds[job.system], systems[job.system]
        if kind.memory and job.benchmark in {"ruler_hqa", "longbench", "memalpha", "mab"}:
            answers = cfg.qa_model(config) if kind.answers_with_qa_model(job.benchmark) else None
            assert (answers or spec["model"], job.benchmark) in closed, job


def test_a_prompt_is_refused_on_a_system_that_is_not_a_closed_book(repo):
    config = cfg.load_yaml(repo / "config/smoke.yaml")
    config["evaluation"]["systems"]["oracle-tiny"]["prompt"] = "filter"
    with pytest.raises(cfg.ConfigError, match=r"oracle-tiny\.prompt: only a closedbook"):
        cfg.validate_config(config, repo / "workflow/schemas/config.schema.yaml")


DOCS = [f"Title {i}\nParagraph {i} says {i * 7}." for i in range(8)]


@pytest.fixture
def pool(tmp_path):
    """A pool of 8 paragraphs; question 3's supporting paragraphs are 1 and 5 (its two hops)."""
    questions = [
        {
            "index": 3,
            "question": "q3?",
            "answers": ["x"],
            "doc_ids": [1, 5, 6],
            "gold_doc_ids": [[1], [5]],
        },
        {
            "index": 4,
            "question": "q4?",
            "answers": ["y"],
            "doc_ids": [2, 0],
            "gold_doc_ids": [[2], [0]],
        },
    ]
    docs, questions_path = tmp_path / "pool_docs.parquet", tmp_path / "pool_questions.parquet"
    write_pool(docs, questions_path, DocPool(DOCS, np.ones(len(DOCS), np.int64), questions))
    return docs, questions_path


def test_the_oracle_reads_the_supporting_paragraphs_alone_in_the_order_the_context_holds_them(
    pool,
):
    docs, questions = pool
    by_ids = {"index": 3, "input": "q3?", "answers": ["x"], "doc_ids": [7, 5, 2, 1, 6]}
    as_text = {
        "index": 4,
        "input": "q4?",
        "answers": ["y"],
        "context": render_context([0, 3, 2], DOCS),
    }
    first, second = gold_contexts([by_ids, as_text], questions, docs)
    assert first == render_context([5, 1], DOCS)  # paragraph 5 comes first in its context
    assert second == render_context([0, 2], DOCS) and "Title 3" not in second
    missing = {**as_text, "index": 9}
    with pytest.raises(SystemExit, match=r"pool_questions\.parquet: no question of index \[9\]"):
        gold_contexts([missing], questions, docs)


def test_the_oracle_asks_the_benchmarks_own_prompt_over_the_evidence_alone(pool, tmp_path):
    docs, questions = pool
    row = {"index": 3, "input": "q3?", "answers": ["Paris"], "doc_ids": [7, 5, 2, 1, 6]}
    [given] = with_evidence([row], "ruler_hqa", questions, docs)
    engine = ScriptedEngine()
    system = oracle.workflows(HQA, {**SETTINGS, "max_output_tokens": 9}, engine.tokenizer, None)
    [prediction] = evaluate([given], workflow_runner(HQA, system, engine, None), tmp_path / "p", 1)
    [request] = engine.requests
    prompt = request.messages[0]["content"]
    assert prompt == direct_prompt(HQA, row, render_context([5, 1], DOCS))
    assert "Title 7" not in prompt and request.max_tokens == 9 and prediction["sub_em"] == 1.0
    with pytest.raises(SystemExit, match="benchmark longbench marks no evidence"):
        with_evidence([row], "longbench", questions, docs)
    assert with_evidence([row], "longbench", None, None) == [row]  # no --evidence: untouched


def test_an_oracle_asked_of_a_benchmark_that_marks_no_evidence_stops_the_plan_naming_it(repo):
    config = cfg.load_yaml(repo / "config/smoke.yaml")
    bad = copy.deepcopy(config)
    bad["evaluation"]["systems"]["oracle-tiny"]["benchmarks"] = ["ruler_hqa", "longbench"]
    with pytest.raises(cfg.ConfigError) as error:
        cfg.validate_config(bad, cfg.SCHEMA)
    message = str(error.value)
    assert message.startswith("config key evaluation.systems.oracle-tiny.benchmarks: an oracle ")
    assert message.endswith("mark none), not on longbench") and "gold evidence" in message
    assert oracle.KIND.allowed == ("ruler_hqa",)


def test_the_full_context_control_asks_the_agents_answer_prompt_over_the_context_truncated(
    tmp_path,
):
    row = rows(1, context_chars=400)[0]
    engine = ScriptedEngine()
    settings = {"max_input_tokens": 300, "max_output_tokens": 8, "final_prompt": "answer_is"}
    system = fullcontext.workflows(HQA, settings, engine.tokenizer, None)
    [prediction] = evaluate([row], workflow_runner(HQA, system, engine, None), tmp_path / "p", 1)
    [request] = engine.requests
    whole = final_prompt_text(row["input"], row["context"], "answer_is")
    assert request.messages[0]["content"] == middle_truncate(engine.tokenizer, whole, 300)
    assert len(whole) > 300 and request.max_tokens == 8 and prediction["sub_em"] == 1.0


def test_the_full_context_answer_budget_is_the_agents_unless_the_system_sets_one(repo):
    config = cfg.load_yaml(repo / "config/config.yaml")
    spec = config["evaluation"]["systems"]["fullcontext-rl-memoryagent-14b"]
    settings = fullcontext.job_settings(config, spec)
    assert settings["max_output_tokens"] == config["agent"]["final_tokens"] == 1024
    assert settings["context_extension"] == "yarn" and settings["max_input_tokens"] == 120000
    assert (
        fullcontext.job_settings(config, {**spec, "max_output_tokens": 64})["max_output_tokens"]
        == 64
    )


def test_the_paper_plan_runs_the_oracle_on_every_length_and_full_context_to_6400(repo):
    config = cfg.load_yaml(repo / "config/config.yaml")
    systems = cfg.eval_systems(config)
    jobs = cfg.eval_jobs(config, systems)
    oracle_jobs = [j for j in jobs if j.system == "oracle-rl-memoryagent-14b"]
    assert [j.length for j in oracle_jobs] == config["ruler_hqa"]["n_docs"]
    full = [j for j in jobs if j.system == "fullcontext-rl-memoryagent-14b"]
    assert [j.length for j in full if j.benchmark == "ruler_hqa"] == [
        n for n in config["ruler_hqa"]["n_docs"] if n <= 6400
    ]
    [longbench] = [j for j in full if j.benchmark == "longbench"]
    assert "gov_report" not in longbench.tasks
    assert oracle.calls({"max_input_tokens": 4096, "max_output_tokens": 1024}, 10**6) == [
        (oracle.EVIDENCE_TOKENS + 100, 1024)
    ]


def test_the_schema_offers_exactly_the_prompts_the_closed_book_knows(repo):
    schema = cfg.load_yaml(repo / "workflow/schemas/config.schema.yaml")
    system = schema["properties"]["evaluation"]["properties"]["systems"]["additionalProperties"]
    assert system["properties"]["prompt"]["enum"] == list(closedbook.ANSWER_FORMATS)
