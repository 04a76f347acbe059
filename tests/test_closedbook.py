"""The closed-book control: the question alone, in each benchmark's own prompt with no context, on
MemAgent's benchmarks and on Mem-α's instances; planned and priced like any kind."""

from __future__ import annotations

from memalpha_fakes import RuleQA
from test_evaluation import HQA, RecordingEngine, rows
from test_memalpha_baselines import ROWS, judge

from memrl import config as cfg
from memrl.benchmarks import Task
from memrl.engines.base import SamplingParams
from memrl.evaluation import direct_prompt, evaluate, instance_qa_runner, workflow_runner
from memrl.systems import closedbook
from memrl.systems.base import InstanceShape

SETTINGS = {
    "benchmark": "memalpha",
    "max_input_tokens": 10**6,
    "max_output_tokens": 7,
    "sampling": {"temperature": 0.1, "top_p": 1.0, "seed": None},
    "protocol": "baseline",
}


def test_on_a_memagent_benchmark_it_asks_the_direct_prompt_without_the_context(tmp_path):
    row = rows(1, context_chars=400)[0]
    engine = RecordingEngine()
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


def test_the_paper_plan_runs_it_on_every_length_and_the_qa_tasks_only(repo):
    config = cfg.load_yaml(repo / "config/config.yaml")
    systems = cfg.eval_systems(config)
    jobs = [j for j in cfg.eval_jobs(config, systems) if systems[j.system]["kind"] == "closedbook"]
    hqa = [j for j in jobs if j.benchmark == "ruler_hqa"]
    assert [j.length for j in hqa] == config["ruler_hqa"]["n_docs"] and {j.shards for j in hqa} == {
        1
    }
    [longbench] = [j for j in jobs if j.benchmark == "longbench"]
    assert set(longbench.tasks) == {"2wikimqa", "hotpotqa", "musique", "narrativeqa", "qasper"}
    assert {j.benchmark for j in jobs} == {"ruler_hqa", "longbench", "memalpha", "mab"}
    assert Task("longbench", "gov_report").task not in longbench.tasks
