"""`memrepro cost`: the plan's jobs, the measured rate and the work each job prices."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from docs_pages import docs_text

from memrepro import config as cfg
from memrepro.benchmarks.ruler_hqa import context_tokens
from memrepro.cost import command
from memrepro.cost.actual import actual_rows, render_actual
from memrepro.cost.gpu import MEASURED, prefill_flop_rate
from memrepro.cost.plan import DEFAULT_CONFIG, PlannedJob, config_files, parse_plan
from memrepro.cost.price import Price, price_job
from memrepro.cost.pricing import Pricing, model_shapes
from memrepro.cost.report import COLUMNS, cells, summarise
from memrepro.cost.responses import measured_response_tokens
from memrepro.cost.storage import kept_states
from memrepro.cost.training import memalpha_training_flops, policy_update_flops, training_flops
from memrepro.cost.work import (
    evaluate_job_work,
    forward_flops,
    job_instances,
    job_questions,
    lengths,
    memorize_work,
    split_instances,
    work_flops,
)
from memrepro.report.flops import dense_parameters, published_shape, sequence_flops
from memrepro.scoring.memalpha import JUDGE_TEMPLATE
from memrepro.systems import system_kind
from memrepro.systems.base import InstanceShape, template_tokens
from memrepro.systems.memalpha import ITEM_TOKENS

PLAN = """\
[Thu Nov 26 06:54:07 2026]
rule train_stage1:
    input: results/paper/data/ruler_hqa/train.jsonl
    output: results/paper/checkpoints/rl-memagent-7b/stage1
    wildcards: train_run=rl-memagent-7b
    resources: tmpdir=/tmp, mem_mb=480000, runtime=5760, gpu=32, nodes=4, slurm_extra=--exclusive
Shell command: memrepro --job '{"rule": "train_stage1"}' train \
--settings '{"steps": 2, "a": "b c"}' --out x

[Thu Nov 26 06:54:07 2026]
localrule make_table:
    output: results/paper/tables/table1.md
    wildcards: table=table1
    resources: tmpdir=/tmp
"""


@pytest.fixture
def paper(repo):
    return cfg.load_config([repo / "config/config.yaml"])


def test_the_plan_gives_each_jobs_rule_wildcards_resources_and_settings():
    train, table = parse_plan(PLAN)
    assert train.rule == "train_stage1" and train.wildcards == {"train_run": "rl-memagent-7b"}
    assert train.resources["gpu"] == "32" and train.resources["slurm_extra"] == "--exclusive"
    assert train.settings == {"steps": 2, "a": "b c"}
    assert table.rule == "make_table" and table.settings is None


def test_the_rate_is_what_the_measured_prefill_achieved():
    measured = json.loads(MEASURED.read_text())
    rate = prefill_flop_rate(measured)
    # 7B at 8,192 tokens by hand: 2 FLOPs per dense weight per token, causal attention
    shape = published_shape("Qwen/Qwen2.5-7B-Instruct")
    n, dense = 8192, dense_parameters(shape)
    by_hand = 2 * dense * n + 2 * n * n * 128 * 28 * 28
    assert forward_flops(shape, [n]) == pytest.approx(by_hand)
    point = measured["models"][0]["prefill"][0]
    assert rate == pytest.approx(by_hand / point["seconds"], rel=0.15)
    assert 3e14 < rate < 9.9e14  # below the H200's dense bf16 peak


def test_contexts_come_from_the_length_labels(paper):
    assert context_tokens(paper, 50) == 7000 and context_tokens(paper, 25600) == 3_500_000
    assert context_tokens(paper, 75) == pytest.approx(75 * 140, rel=0.05)  # between labels
    settings = {"benchmark": "longbench", "tasks": ["hotpotqa", "qasper"], "length": 0}
    assert job_questions(paper, settings) == [(200, 11896), (200, 4705)]
    sharded = {"benchmark": "ruler_hqa", "tasks": ["hqa"], "length": 6400, "shards": 4}
    assert job_questions(paper, sharded) == [(32, 896000)]


def test_each_kind_says_what_one_question_asks_of_the_engine():
    agent = {
        "query_tokens": 1024,
        "chunk_tokens": 5000,
        "memory_tokens": 1024,
        "final_tokens": 1024,
    }
    calls = system_kind("memagent").calls({"agent": agent}, 12_000)
    assert calls == [(7248, 1024)] * 3 + [(2148, 1024)]
    long = {"max_input_tokens": 120_000, "max_output_tokens": 10_000}
    assert system_kind("longcontext").calls(long, 500_000) == [(120_000, 10_000)]
    rag = {**long, "top_k": 4, "unit_tokens": None, "length": 100}
    assert system_kind("rag").calls(rag, 14_000) == [(4 * 140 + 100, 10_000)]
    assert system_kind("memalpha").calls is None  # it runs on Mem-α's instances only


def test_a_training_stage_counts_every_pass_of_every_conversation(paper):
    settings = cfg.train_settings(paper, "rl-memagent-7b", "stage1")
    shape = published_shape("Qwen/Qwen2.5-7B-Instruct")
    # 200 documents, 28K tokens: 6 updates of 8,272 tokens and the final answer's 3,172
    lengths = [8272] * 6 + [3172]
    backward = sequence_flops(shape, lengths, attention="verl")
    passes = backward * (1 + 4 / 3)  # rollout, old policy, reference, recomputation
    expected = 400 * 128 * 16 * passes
    assert training_flops(paper, settings, shape) == pytest.approx(expected)
    job = PlannedJob(
        "train_stage1", {"train_run": "rl-memagent-7b"}, {"gpu": "32", "runtime": "5760"}, settings
    )
    pricing = Pricing.of(paper, 5e14)
    price = price_job(job, pricing)
    assert price.estimate_gpu_h == pytest.approx(expected / 5e14 / 3600)
    on_cpu = price_job(PlannedJob("train_stage1", {}, {"gpu": "0"}, settings), pricing)
    assert on_cpu.estimate_gpu_h is None  # no GPU-hours for a job on no GPU
    assert price.allocation_gpu_h == 96 * 32
    # two kept training states and the merged model, 14 and 2 bytes per parameter
    assert price.checkpoint_gb == pytest.approx(dense_parameters(shape) * 30 / 1e9)


def test_mem_alphas_instances_are_the_papers_tables(paper):
    published = Pricing.of(paper, RATE).instances
    # Table 8 (MemoryAgentBench), Table 7's decimals, Table 6's LME-Train (Table 7 prints "-")
    assert split_instances(published, "mab", ["ruler_qa2_421K"]) == [
        (1, InstanceShape(219, 2164, 100), "ruler_qa2_421K")
    ]
    assert published["memalpha"]["hotpotqa"] == [219, 9.2, 1051.6, 17.0]
    assert published["memalpha"]["lme_train"] == [5, 13.4, 1576, 4.0]
    assert split_instances(published, "mab", ["ruler_qa2_421K", "my_source"]) is None


def test_table_5s_example_is_priced_as_the_largest_instance_it_may_be_found_in(paper):
    """The example's job has one task, the example, whichever source holds it: `memrepro cost`
    prices one instance as large as the largest of the searched sources' (here every source of
    every split; MemoryAgentBench's LongMemEval, Table 8's 5 instances of 60 questions)."""
    pricing = Pricing.of(paper, RATE)
    [job] = [j for j in cfg.eval_jobs(paper) if j.benchmark == "memalpha_example"][:1]
    assert job.tasks == ("example",)
    [(n, instance, source)] = job_instances(pricing, cfg.memorize_settings(paper, job))
    published = pricing.instances
    sizes = [
        shape.chunks * shape.chunk_tokens
        for split in published
        for _, shape, _ in split_instances(published, split, list(published[split])) or []
    ]
    assert n == 1 and instance.chunks * instance.chunk_tokens == max(sizes)
    narrowed = copy.deepcopy(paper)
    narrowed["memalpha"]["example"]["sources"] = ["lme_train"]
    [(_, instance, source)] = job_instances(
        Pricing.of(narrowed, RATE), cfg.memorize_settings(narrowed, job)
    )
    lme_train = [
        shape
        for split in published
        for _, shape, _ in split_instances(published, split, ["lme_train"]) or []
    ]
    assert len(lme_train) > 1  # the training and the validation set's
    assert source == "lme_train"
    assert instance == max(lme_train, key=lambda shape: shape.chunks * shape.chunk_tokens)


def test_each_kind_says_what_one_instance_asks_of_its_models():
    instance = InstanceShape(chunks=3, chunk_tokens=1000, questions=2)
    memagent = {"memory_tokens": 1024, "final_tokens": 512}
    update, final = (100 + 200 + 1000 + 1024, 1024), (100 + 100 + 1024, 512)
    assert system_kind("memagent").memorize_calls(memagent, instance) == [update] * 3 + [final] * 2
    assert system_kind("memagent").instance_calls({}, instance) == []  # the answers are given
    mem1 = {"memory_tokens": 1024, "max_input_tokens": 30_000, "max_output_tokens": 2048}
    assert system_kind("mem1").memorize_calls(mem1, instance) == [(2124, 1024)] * 3
    after = {**mem1, "memorized": {"memory_tokens": 256}}  # the summary is the context
    assert system_kind("mem1").instance_calls(after, instance) == [(356, 2048)] * 2
    baseline = {"max_input_tokens": 2500, "max_output_tokens": 64, "top_k": 2}
    assert system_kind("longcontext").instance_calls(baseline, instance) == [(2500, 64)] * 2
    assert system_kind("rag").instance_calls(baseline, instance) == [(2100, 64)] * 2
    agent = {"max_new_tokens": 2048, "visible_items": 5, "prompt_cap": None}
    (prompt, output), *rest = system_kind("memalpha").memorize_calls({"agent": agent}, instance)
    # its template with the tool schemas (~1,250 tokens), the core's 512, 10 items, the chunk
    assert 1200 + 512 + 1000 + 1000 < prompt < 1400 + 512 + 1000 + 1000 and output == 2048
    assert len(rest) == 2
    capped = {"agent": {**agent, "prompt_cap": 3000}, "disabled_memory": ["core"]}
    assert system_kind("memalpha").memorize_calls(capped, instance)[0] == (3000, 2048)
    qa = {"qa": {"top_k": 20, "prompt_cap": 30_000, "max_tokens": 2048}}
    (prompt, output), _ = system_kind("memalpha").instance_calls(qa, instance)
    assert 512 + 40 * 100 + 100 < prompt < 512 + 40 * 100 + 100 + 300 and output == 2048


def test_an_evaluation_after_a_memorize_job_runs_on_the_qa_model(paper):
    pricing = Pricing.of(paper, RATE)
    job = cfg.EvalJob("mab", "mem1-7b", 0, ("longmemeval_s*",), 1)
    settings = cfg.eval_settings(paper, job, 0)
    (n, instance, source), *_ = job_instances(pricing, settings)
    assert (n, instance.questions, source) == (5, 60, "longmemeval_s*")
    answer = (100 + 1024, 2048)  # over MEM1's 1,024-token summary
    judge = template_tokens(JUDGE_TEMPLATE) + 100 + 2048
    calls = [answer] * 60 + [(judge, 256)] * 60  # LongMemEval's answers are judged
    qwen3_32b = published_shape("Qwen/Qwen3-32B")
    expected = 5 * forward_flops(qwen3_32b, lengths(calls))
    model, work = evaluate_job_work(pricing, settings)
    assert model == "qwen3-32b"
    assert work_flops(qwen3_32b, work) == pytest.approx(expected)
    memorize = cfg.memorize_settings(paper, job)
    price = price_job(PlannedJob("memorize", {}, {"gpu": "1"}, memorize), pricing)
    summaries = [(100 + 1591 + 1024, 1024)] * 219  # 218.6 chunks of 1,591.4 tokens
    seven_b = published_shape("Qwen/Qwen2.5-7B")
    assert price.estimate_gpu_h * RATE * 3600 == pytest.approx(
        5 * forward_flops(seven_b, lengths(summaries))
    )


def test_mem_alphas_training_counts_rollouts_and_the_qa_models_rewards(paper):
    pricing = Pricing.of(paper, RATE)
    policy, qa = published_shape("Qwen/Qwen3-4B"), published_shape("Qwen/Qwen3-32B")
    with_judge = cfg.memalpha_train_settings(paper, "memalpha-4b-b0.05-g0.1")
    without = cfg.memalpha_train_settings(paper, "memalpha-4b-b0.05-g0")
    # the same rollouts; γ = 0 leaves r4's content judge out
    judged = memalpha_training_flops(pricing, with_judge, policy, qa)
    assert judged > memalpha_training_flops(pricing, without, policy, qa)
    # one source alone: 85 steps x 32 x 8 rollouts of its instance
    only = {**without, "sources": ["booksum"]}
    ((_, instance, _),) = split_instances(pricing.instances, "train", ["booksum"])
    rollout = system_kind("memalpha").memorize_calls(only, instance)
    assert len(rollout) == 8 and all(prompt <= 6144 for prompt, _ in rollout)  # 7.8 chunks
    answer = system_kind("memalpha").instance_calls(only, instance)
    expected = policy_update_flops(policy, rollout, only)
    expected += forward_flops(qa, lengths(answer))
    assert memalpha_training_flops(pricing, only, policy, qa) == pytest.approx(
        85 * 32 * 8 * expected
    )


def test_config_files_follow_snakemakes_order(repo):
    assert config_files(["--profile", str(repo / "profiles/slurm"), "all"]) == [
        "config/config.yaml"
    ]
    args = ["table1", "--configfile", "a.yaml", "b.yaml", "--cores", "2"]
    assert config_files(args) == ["a.yaml", "b.yaml"]
    assert config_files(["all"]) == [DEFAULT_CONFIG]


def test_a_missing_profile_or_a_config_directory_is_one_sentence(repo, monkeypatch):
    monkeypatch.chdir(repo)
    with pytest.raises(SystemExit, match=r"--profile profiles/nope: no such profile \(profiles: "):
        command.main(["--profile", "profiles/nope", "all"])
    assert config_files(["--profile", "slurm", "all"]) == ["config/config.yaml"]
    with pytest.raises(SystemExit, match="--configfile config: a directory, not a config file"):
        command.main(["--configfile", "config", "all"])


def test_a_model_is_priced_by_its_downloaded_config_before_its_family(tmp_path, monkeypatch, paper):
    monkeypatch.chdir(tmp_path)
    shapes = model_shapes(paper)
    assert shapes["rl-memagent-14b"] == shapes["qwen2.5-14b-instruct"]
    assert shapes["qwen2.5-0.5b-instruct"] is None  # no published shape: no estimate
    downloaded = cfg.model_dir(paper, "qwen2.5-0.5b-instruct")
    downloaded.mkdir(parents=True)
    sizes = {"hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24}
    heads = {"num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936}
    (downloaded / "config.json").write_text(json.dumps({**sizes, **heads}))
    shape = model_shapes(paper)["qwen2.5-0.5b-instruct"]
    assert (shape.hidden_size, shape.num_layers, shape.attention_dim) == (896, 24, 64)


def test_the_readmes_training_estimates_are_these(repo, paper):
    readme = " ".join(docs_text(repo).split())
    pricing = Pricing.of(paper, RATE)
    hours = {}
    for run in ("rl-memagent-7b", "rl-memagent-14b"):
        for stage in ("stage1", "stage2"):
            settings = cfg.train_settings(paper, run, stage)
            job = PlannedJob(f"train_{stage}", {"train_run": run}, {"gpu": "1"}, settings)
            hours[run, stage] = round(price_job(job, pricing).estimate_gpu_h)
    seven = hours["rl-memagent-7b", "stage1"], hours["rl-memagent-7b", "stage2"]
    fourteen = hours["rl-memagent-14b", "stage1"], hours["rl-memagent-14b", "stage2"]
    assert (
        f"estimated at {seven[0]:,} GPU-hours for stage I and {seven[1]:,} for stage II" in readme
    )
    assert f"({sum(seven):,} in all;" in readme
    assert f"14B at {fourteen[0]:,} + {fourteen[1]:,} = {sum(fourteen):,}" in readme
    assert f"on one NVIDIA H200: {RATE / 1e12:.0f} TFLOP/s" in readme


RATE = prefill_flop_rate(json.loads(MEASURED.read_text()))


def test_the_readmes_mem_alpha_training_estimates_are_these(repo, paper):
    readme = " ".join(docs_text(repo).split())

    def hours(config, run):
        settings = cfg.memalpha_train_settings(config, run)
        job = PlannedJob("train_memalpha", {}, {"gpu": "1"}, settings)
        return price_job(job, Pricing.of(config, RATE)).estimate_gpu_h

    main, no_content = hours(paper, "memalpha-4b-b0.05-g0.1"), hours(paper, "memalpha-4b-b0.05-g0")
    settings = cfg.memalpha_train_settings(paper, "memalpha-4b-b0.05-g0.1")
    pricing = Pricing.of(paper, RATE)
    work = split_instances(pricing.instances, "train", settings["sources"])
    kind, policy = system_kind("memalpha"), published_shape("Qwen/Qwen3-4B")
    rollouts = settings["steps"] * settings["rollout_batch"] * settings["group_size"]
    on_policy = sum(
        n * policy_update_flops(policy, kind.memorize_calls(settings, instance), settings)
        for n, instance, _ in work
    ) / sum(n for n, _, _ in work)
    qa_share = 1 - rollouts * on_policy / RATE / 3600 / main
    paper_recipe = copy.deepcopy(paper)
    paper_recipe["memalpha"]["training"]["recipe"] = "paper"
    longer = hours(paper_recipe, "memalpha-4b-b0.05-g0.1")
    assert (
        f"a run of the official recipe ({settings['steps']} steps) is estimated at {main:,.0f} "
        f"GPU-hours ({no_content:,.0f} with γ = 0, which drops r4's content judge), "
        f"{qa_share:.0%} of it on the QA model"
    ) in readme
    assert f"the paper's 205 steps would take {longer:,.0f}" in readme
    assert f"no budget caps, is taken as {ITEM_TOKENS} tokens" in readme


def test_the_readmes_gpu_measurements_are_the_packaged_ones(repo):
    readme = " ".join(docs_text(repo).split())
    measured = json.loads(MEASURED.read_text())
    rates = [point["tokens_per_s"] for model in measured["models"] for point in model["prefill"]]
    assert f"prefill reached {min(rates):,}–{max(rates):,} tokens/s" in readme
    peaks = [model["prefill"][-1]["peak_gb"] for model in measured["models"]]
    expected = "peaked at {:.1f} GB (7B), {:.1f} GB (14B) and {:.1f} GB (32B)".format(*peaks)
    assert expected in readme


def test_after_a_run_each_rules_estimate_stands_beside_what_its_jobs_used():
    jobs = [
        PlannedJob("evaluate", {"system": "a", "length": "50"}, {"gpu": "2"}),
        PlannedJob("evaluate", {"system": "b", "length": "50"}, {"gpu": "1"}),
        PlannedJob("evaluate", {"system": "c", "length": "50"}, {"gpu": "1"}),  # never ran
        PlannedJob("make_table", {"table": "table1"}, {}),
    ]
    prices = [
        Price("evaluate", estimate_gpu_h=1.0, gpu=True),
        Price("evaluate", estimate_gpu_h=None, gpu=True),  # work not modelled
        Price("evaluate", estimate_gpu_h=4.0, gpu=True),
        Price("make_table"),
    ]
    records = [
        {"rule": "evaluate", "wildcards": {"length": "50", "system": "a"}, "status": "FAILED"}
        | {"wall_s": 99.0, "end_ms": 1},
        {"rule": "evaluate", "wildcards": {"length": "50", "system": "a"}, "status": "FINISHED"}
        | {"wall_s": 5400.0, "end_ms": 2},  # the rerun that finished: 1.5 h on 2 GPUs
        {"rule": "evaluate", "wildcards": {"length": "50", "system": "b"}, "status": "FINISHED"}
        | {"wall_s": 3600.0, "end_ms": 3},
        {"rule": "make_table", "wildcards": {"table": "table1"}, "status": "FINISHED"}
        | {"wall_s": 36.0, "end_ms": 4},
    ]
    evaluate, table = actual_rows(jobs, prices, records)
    assert (evaluate["jobs"], evaluate["ran"]) == (3, 2)
    assert evaluate["wall_h"] == pytest.approx(2.5) and evaluate["actual_gpu_h"] == pytest.approx(
        4.0
    )
    assert evaluate["estimate_gpu_h"] == pytest.approx(1.0)  # of the jobs that ran
    assert evaluate["ratio"] == pytest.approx(3.0)  # 3 GPU-h used where 1 was estimated
    assert (table["ran"], table["actual_gpu_h"], table["ratio"]) == (1, 0.0, None)
    text = render_actual([evaluate, table], Path("results/paper"))
    assert "3.00×" in text and "results/paper" in text


def test_a_memalpha_run_keeps_its_last_states_or_one_per_validation():
    last = {"checkpoint": "last", "steps": 85, "verl": {"max_checkpoints": 2}}
    best = {"checkpoint": "best", "steps": 205, "validation": {"every": 50}, "verl": {}}
    assert kept_states(last) == 2
    assert kept_states(best) == 5  # steps 50, 100, 150, 200 and the last, 205
    assert kept_states({"verl": {"max_checkpoints": None}}) == 1  # none set: priced as one


def test_a_hosted_models_calls_are_counted_and_priced_not_put_on_our_gpus(paper):
    pricing = Pricing.of(paper, RATE)
    job = cfg.EvalJob("memalpha", "gpt-4.1-mini-memalpha", 0, ("booksum",), 1)
    settings = cfg.memorize_settings(paper, job)
    price = price_job(PlannedJob("memorize", {}, {"gpu": "0"}, settings), pricing)
    work = memorize_work(pricing, settings)
    calls = sum(n * len(c) for n, c in work)
    tokens_in = sum(n * prompt for n, c in work for prompt, _ in c)
    tokens_out = sum(n * out for n, c in work for _, out in c)
    assert price.hosted and price.estimate_gpu_h is None and calls > 0
    assert (price.api.calls, price.api.input_tokens) == (calls, tokens_in)
    assert price.api.usd == pytest.approx((tokens_in * 0.40 + tokens_out * 1.60) / 1e6)
    # without a price: counted, left out of the dollars and marked
    unpriced = copy.deepcopy(paper)
    del unpriced["models"]["gpt-4.1-mini"]["price"]
    bare = price_job(PlannedJob("memorize", {}, {"gpu": "0"}, settings), Pricing.of(unpriced, RATE))
    assert bare.api.usd is None and bare.api.calls == calls
    [row] = summarise([bare])
    shown = dict(zip([title for title, _, _ in COLUMNS], cells(row), strict=True))
    assert shown["API $"] == "0+" and shown["API calls"] == f"{calls:,}"
    # a hosted model whose calls are not modelled: "—+"
    [unmodelled] = summarise([Price("evaluate", hosted=True)])
    assert cells(unmodelled)[-3:] == ["—", "—", "—+"]


def evaluate_job(config: dict, system: str, benchmark: str, length: int) -> PlannedJob:
    [job] = [
        j
        for j in cfg.eval_jobs(config)
        if (j.system, j.benchmark, j.length) == (system, benchmark, length)
    ]
    return PlannedJob("evaluate", {}, {"gpu": "1"}, cfg.eval_settings(config, job, 0))


def test_mem0_is_priced_on_its_engine_its_own_llm_and_its_embedder(paper):
    """GPT-5.1 answers once per question and extracts the facts of every 5,000-token chunk;
    text-embedding-3-large embeds each chunk, its facts and the question."""
    from memrepro.systems import mem0

    job = evaluate_job(paper, "mem0-gpt-5.1", "ruler_hqa", 50)
    price = price_job(job, Pricing.of(paper, RATE))
    context = context_tokens(paper, 50)  # 7K: two chunks
    chunks = mem0.chunk_sizes(context, 5000)
    assert chunks == [5000, context - 5000]
    facts = mem0.FACTS_PER_CHUNK * mem0.FACT_TOKENS
    extract = [
        (mem0.EXTRACTION_PROMPT_TOKENS + 5000, facts),
        (mem0.EXTRACTION_PROMPT_TOKENS + chunks[1] + 75 + 10 * 30, facts),  # the first's start
    ]
    answer = [(100 + 100 + 30 * 30, 1024)]  # the question, MemAgent's final prompt, 30 memories
    embed_in = sum(chunks) + 2 * facts + 100
    gpt = [(p, o) for p, o in extract + answer]
    tokens_in = 128 * (sum(p for p, _ in gpt) + embed_in)
    assert price.hosted and price.estimate_gpu_h is None
    assert price.api.calls == 128 * (2 + 1 + 2 * 2 + 1)
    assert price.api.input_tokens == tokens_in
    assert price.api.output_tokens == 128 * sum(o for _, o in gpt)
    gpt_in = 128 * sum(p for p, _ in gpt)
    usd = (gpt_in * 1.25 + price.api.output_tokens * 10.0 + 128 * embed_in * 0.13) / 1e6
    assert price.api.usd == pytest.approx(usd)


def test_mem0s_extraction_prompt_is_the_installed_packages():
    from mem0.configs.prompts import (
        ADDITIVE_EXTRACTION_PROMPT,
        PAST_MESSAGE_TRUNCATION_LIMIT,
        generate_additive_extraction_prompt,
    )

    from memrepro.systems import mem0

    empty = generate_additive_extraction_prompt(existing_memories=[], new_messages="")
    assert template_tokens(ADDITIVE_EXTRACTION_PROMPT + empty) == mem0.EXTRACTION_PROMPT_TOKENS
    assert template_tokens("x" * PAST_MESSAGE_TRUNCATION_LIMIT) == mem0.PAST_MESSAGE_TOKENS


def test_the_papers_retriever_embeds_each_pool_document_once_per_job(paper):
    from memrepro.benchmarks.ruler_hqa import DEV_POOL_DOCS
    from memrepro.systems.rag import distinct_pool_docs

    pricing = Pricing.of(paper, RATE)
    hqa = evaluate_job(paper, "rag-qwen2.5-14b.openai-k4-doc", "ruler_hqa", 3200)
    price = price_job(hqa, pricing)
    assert price.hosted and price.estimate_gpu_h > 0  # Qwen2.5-14B on our GPU, embeddings hosted
    distinct = distinct_pool_docs(DEV_POOL_DOCS, 3200, 128)
    assert 0.99 * DEV_POOL_DOCS < distinct < DEV_POOL_DOCS  # nearly every document, once
    tokens = distinct * context_tokens(paper, 3200) / 3200 + 128 * 100
    assert price.api.input_tokens == pytest.approx(tokens, abs=price.api.calls)
    assert price.api.output_tokens == 0
    assert price.api.calls == -(-(distinct + 128) // 256)  # 256 texts a request
    assert price.api.usd == pytest.approx(price.api.input_tokens * 0.13 / 1e6)
    assert distinct_pool_docs(100, 10, 1) == pytest.approx(10)
    assert distinct_pool_docs(100, 200, 3) == 100  # a sample as large as the pool
    # fixed chunks of LongBench: each sample's own; BM25 and MiniLM embed nothing hosted
    chunks = price_job(
        evaluate_job(paper, "rag-qwen2.5-7b.openai-k2-c1024", "longbench", 0), pricing
    )
    assert chunks.api.input_tokens > 0 and chunks.api.usd > 0
    bm25 = price_job(evaluate_job(paper, "rag-qwen2.5-14b.bm25-k4-doc", "ruler_hqa", 3200), pricing)
    assert not bm25.hosted and bm25.api is None


def test_a_hosted_model_is_priced_by_its_key_or_its_served_name(paper):
    from memrepro.cost.api import Usage, model_price

    assert model_price(paper, "gpt-4o") == model_price(paper, "gpt-4o-2024-08-06")
    assert model_price(paper, "text-embedding-3-large") == {"input": 0.13, "output": 0.0}
    assert model_price(paper, "an-unknown-model") is None
    priced, unpriced = Usage(1, 10, 1, 2.0), Usage(2, 20, 0, None)
    assert priced + priced == Usage(2, 20, 2, 4.0)
    assert (priced + unpriced).usd is None and (priced + unpriced).calls == 3


def test_the_keyword_rebuild_is_priced_per_released_instance(repo):
    config = cfg.load_config([repo / "config/config.yaml", repo / "config/keywords.yaml"])
    pricing = Pricing.of(config, RATE)
    settings = cfg.keywords_settings(config, "booksum")
    price = price_job(PlannedJob("rebuild_keywords", {}, {"gpu": "0"}, settings), pricing)
    released = sum(pricing.instances[split]["booksum"][0] for split in ("train", "memalpha"))
    assert price.api.calls == released > 0
    assert price.api.output_tokens == released * settings["max_tokens"]
    assert price.api.usd > 0


def test_a_training_estimate_takes_the_response_length_a_run_measured(paper, tmp_path):
    settings = cfg.train_settings(paper, "rl-memagent-7b", "stage1")
    job = PlannedJob("train_stage1", {}, {"gpu": "32"}, settings)
    shape = published_shape("Qwen/Qwen2.5-7B-Instruct")
    budgets = price_job(job, Pricing.of(paper, RATE, tmp_path))
    assert not budgets.measured  # no run there: the budgets
    out = tmp_path / "checkpoints" / "rl-memagent-7b" / "stage1"
    # verl's logs of a killed run (two attempts, the second repeating step 2)
    logs = out.parent / ".stage1.verl" / "metrics"
    logs.mkdir(parents=True)

    def line(step: int, length: int) -> str:
        data = {"memagent/trajectory_reward/mean": 0.1, "response_length/mean": length}
        return json.dumps({"step": step, "data": data}) + "\n"

    (logs / "attempt-1.jsonl").write_text(line(1, 300) + line(2, 999))
    (logs / "attempt-2.jsonl").write_text(line(2, 500))
    assert measured_response_tokens(out) == pytest.approx(400)
    price = price_job(job, Pricing.of(paper, RATE, tmp_path))
    expected = training_flops(paper, settings, shape, 400)
    assert price.measured and price.estimate_gpu_h == pytest.approx(expected / RATE / 3600)
    assert price.estimate_gpu_h < budgets.estimate_gpu_h
    # the CPU trainer's growing file wins over verl's logs; a finished run's over both
    partial = out.parent / ".stage1.partial"
    partial.mkdir()
    rows = [{"step": 0, "response_tokens": 600, "n_conversations": 3}]  # before the mean was logged
    (partial / "train_metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert measured_response_tokens(out) == pytest.approx(200)
    out.mkdir()
    (out / "train_metrics.jsonl").write_text('{"step": 0, "response_tokens_mean": 128.0}\n')
    assert measured_response_tokens(out) == pytest.approx(128)
    [row] = summarise([price])
    assert cells(row)[4].endswith("*")
