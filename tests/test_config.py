"""The config schema and the experiment matrix built from it."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from memrepro import config as cfg
from memrepro.benchmarks import PROBE_BENCHMARK

SCHEMA = Path(__file__).resolve().parents[1] / "workflow/schemas/config.schema.yaml"


@pytest.fixture(params=["config.yaml", "smoke.yaml"])
def config(request, repo):
    return cfg.load_yaml(repo / "config" / request.param)


@pytest.fixture
def paper(repo):
    return cfg.load_yaml(repo / "config/config.yaml")


def test_shipped_configs_validate(config):
    cfg.validate_config(config, SCHEMA)


@pytest.mark.parametrize("name", ["config.yaml", "smoke.yaml"])
def test_validating_a_config_imports_no_ml_framework(repo, name):
    # Snakemake validates while planning, in every invocation: torch alone takes seconds.
    code = (
        "import sys; from memrepro import config as cfg; "
        f"cfg.validate_config(cfg.load_yaml({str(repo / 'config' / name)!r}), cfg.SCHEMA); "
        "heavy = sorted({'torch', 'transformers', 'vllm'} & set(sys.modules)); "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda c: c["agent"].update(chunk_size=5000),
            "config key agent: unknown key(s) chunk_size",
        ),
        (lambda c: c["agent"].update(chunk_tokens="5000"), "config key agent.chunk_tokens: '5000'"),
        (lambda c: c["training"]["stage1"].pop("lr"), "config key training.stage1: lr missing"),
        (lambda c: c["evaluation"].update(final_prompt="x"), "config key evaluation.final_prompt"),
        (
            lambda c: c["evaluation"]["systems"]["rl-memagent-7b"].update(model="nope"),
            "config key evaluation.systems.rl-memagent-7b.model: unknown model 'nope'",
        ),
        (lambda c: c["filter"].update(models=["gpt"]), "config key filter.models.0: unknown model"),
        (
            lambda c: c["evaluation"].update(shards={"ruler_hqa": 4}),
            "config key evaluation.shards.ruler_hqa: 4 must be a mapping (a YAML section of keys)",
        ),
        (
            lambda c: c["evaluation"].update(shards={"ruler_hqa": {6400: 0}}),
            "config key evaluation.shards.ruler_hqa.6400: 0 must be at least 1",
        ),
        (
            lambda c: c["evaluation"]["systems"]["qwen3-4b-memalpha"].update(benchmarks=["ruler"]),
            "config key evaluation.systems.qwen3-4b-memalpha.benchmarks: a memalpha system runs "
            "only on ['memalpha', 'mab', 'ruler_hqa']",
        ),
        (
            lambda c: c["evaluation"]["systems"]["memalpha-4b-released"].update(
                benchmarks=["longbench"]
            ),
            "config key evaluation.systems.memalpha-4b-released.benchmarks: a memalpha system "
            "runs only",
        ),
        (
            lambda c: c["memalpha"]["ruler_hqa"].update(source="hqa"),
            "config key memalpha.ruler_hqa.source: no query prompt for 'hqa'",
        ),
        (lambda c: c.pop("memalpha"), "config key memalpha: required by the systems"),
        (
            lambda c: c["memalpha"]["training"].pop("qa_server"),
            "config key memalpha.training: training.backend verl needs qa_server",
        ),
        (
            lambda c: c["memalpha"]["mab"]["sources"].append("locomo"),
            "config key memalpha.mab.sources: no query prompt for ['locomo']",
        ),
        (
            lambda c: c["memalpha"]["qa"].update(model="qwen3-72b"),
            "config key memalpha.qa.model: unknown model 'qwen3-72b'",
        ),
        (
            lambda c: c["memalpha"].update(memory_tokenizer="cl100k"),
            "config key memalpha.memory_tokenizer: unknown model 'cl100k'",
        ),
        (
            lambda c: c["report"]["rl_ablation"]["7B"].update(rl="rl-memagent-7"),
            "config key report.rl_ablation.7B.rl: unknown system 'rl-memagent-7'",
        ),
        (
            lambda c: c["report"]["rl_ablation"]["7B"].update(workflow="qwen2.5-7b-instruct-128k"),
            "config key report.rl_ablation.7B.workflow: system 'qwen2.5-7b-instruct-128k' is a "
            "longcontext, not a memagent",
        ),
        (
            lambda c: c["evaluation"]["systems"]["rl-memagent-14b"].update(
                benchmarks=["ruler_hqa", "ruler"]
            ),
            "config key report.rl_ablation.14B.rl: system 'rl-memagent-14b' does not run longbench",
        ),
        (
            lambda c: c["report"]["rl_ablation"]["7B"].pop("backbone"),
            "config key report.rl_ablation.7B: backbone missing (required here)",
        ),
        (
            lambda c: c["evaluation"]["memory_ablation"]["systems"].update(
                {"qwenlong-l1-32b": "x"}
            ),
            "config key evaluation.memory_ablation.systems: 'qwenlong-l1-32b' is not a memagent",
        ),
        (
            lambda c: (
                c["evaluation"]["memory_ablation"]["systems"].update(
                    {"rl-memoryagent-14b-released": "14B"}
                )
                or c["evaluation"]["memory_ablation"].update(retrain=True)
            ),
            "config key evaluation.memory_ablation.retrain: system 'rl-memoryagent-14b-released'",
        ),
        (
            lambda c: c["evaluation"]["memory_ablation"]["tasks"].update(ruler=["niah_single_9"]),
            "config key evaluation.memory_ablation.tasks.ruler: ['niah_single_9'] not in",
        ),
        (
            lambda c: c["evaluation"]["memory_ablation"].update(settings=[[1024]]),
            "config key evaluation.memory_ablation.settings.0: [1024] must be a list of 2 or more",
        ),
        (
            lambda c: c["evaluation"]["systems"]["rl-memagent-7b"].update(agent={"chunk": 1}),
            "config key evaluation.systems.rl-memagent-7b.agent: unknown key(s) chunk",
        ),
        (
            lambda c: c["evaluation"]["probe"].update(n_docs=[75]),
            "config key evaluation.probe.n_docs: [75] not in ruler_hqa.n_docs",
        ),
        (
            lambda c: c["evaluation"]["probe"]["systems"].update({"qwenlong-l1-32b": "32B"}),
            "config key evaluation.probe.systems: 'qwenlong-l1-32b' is not a memagent system",
        ),
        (
            lambda c: c["evaluation"]["probe"].update(placements=[[0, 120]]),
            "config key evaluation.probe.placements.0.1: 120 must be at most 100",
        ),
        (
            lambda c: c["evaluation"]["systems"]["rl-memagent-7b"].update(max_docs=800),
            "config key evaluation.probe.n_docs: above 'rl-memagent-7b'",
        ),
        (
            lambda c: c["report"]["equivalence_margin"].update(table1=-2),
            "config key report.equivalence_margin.table1: -2 must be at least 0",
        ),
        (
            lambda c: c["report"]["equivalence_margin"].update(default="five"),
            "config key report.equivalence_margin.default: 'five' must be a number",
        ),
        (
            lambda c: c["evaluation"].update(shardz={}),
            "config key evaluation: unknown key(s) shardz (did you mean shards?)",
        ),
        (
            lambda c: c["ruler_hqa"]["official"].update(rows=100),
            "config key ruler_hqa.eval_questions: exceeds ruler_hqa.official.rows (100)",
        ),
        (
            lambda c: (
                c["ruler_hqa"].update(questions="filtered", eval_sets="synthesized")
                or c["filter"].update(keep_dev=100)
            ),
            "config key ruler_hqa.eval_questions: exceeds filter.keep_dev (100)",
        ),
        (  # the released files feed the eval sets: the filter's count does not limit them
            lambda c: c["filter"].update(keep_dev=100) or c["ruler_hqa"]["official"].update(rows=9),
            "config key ruler_hqa.eval_questions: exceeds ruler_hqa.official.rows (9)",
        ),
        (
            lambda c: c["ruler_hqa"].pop("official"),
            "config key ruler_hqa.official: needed by ruler_hqa.questions: official",
        ),
        (
            lambda c: c["ruler_hqa"].update(eval_sets="released"),
            "config key ruler_hqa.eval_sets: 'released' must be one of official, synthesized",
        ),
        (
            lambda c: c["report"]["equivalence_margin"].update(tabel1=3),
            "config key report.equivalence_margin.tabel1: not a table (tables: table1, ",
        ),
        (
            lambda c: c["report"]["equivalence_margin"].update(table1=float("inf")),
            "config key report.equivalence_margin.table1: inf is not a finite number",
        ),
        (
            lambda c: c["report"]["equivalence_margin"].update(default=float("nan")),
            "config key report.equivalence_margin.default: nan is not a finite number",
        ),
        (  # YAML 1.1 reads 1e9 as text
            lambda c: c["report"]["equivalence_margin"].update(default=yaml.safe_load("1e9")),
            "config key report.equivalence_margin.default: '1e9' must be a number (YAML "
            "reads 1e9 without a decimal point as text: write it with one, e.g. 1.0e9)",
        ),
    ],
)
def test_bad_config_fails_with_one_line_naming_the_key(paper, mutate, message):
    bad = copy.deepcopy(paper)
    mutate(bad)
    with pytest.raises(cfg.ConfigError) as error:
        cfg.validate_config(bad, SCHEMA)
    assert str(error.value).startswith(message)
    assert "\n" not in str(error.value)


def test_an_error_names_the_config_file_or_the_override_that_set_its_key(repo, tmp_path):
    mine = tmp_path / "mine.yaml"
    mine.write_text("agent:\n  chunk_tokens: 0\n")
    smoke = repo / "config/smoke.yaml"
    with pytest.raises(cfg.ConfigError) as error:
        cfg.load_config([smoke, mine])
    said = f"config key agent.chunk_tokens: 0 must be at least 1 (set in {mine})"
    assert str(error.value) == said
    with pytest.raises(cfg.ConfigError, match=r"memory_tokens: 'x' must .* \(set in --config\)$"):
        cfg.load_config([smoke], {"agent.memory_tokens": "x"})
    mine.write_text("ruler_hqa:\n  eval_sets: oficial\n")  # a key the file sets, misspelt
    with pytest.raises(cfg.ConfigError) as error:
        cfg.load_config([smoke, mine])
    said = f"must be one of official, synthesized (did you mean official?) (set in {mine})"
    assert str(error.value).endswith(said)
    with pytest.raises(cfg.ConfigError) as error:  # a missing key: the file that set its section
        cfg.load_config([smoke], {"training.stage1": {"lr": 1e-6}})
    assert str(error.value).startswith("config key training.stage1: ")
    assert str(error.value).endswith(" (set in --config)")


def test_paper_matrix_covers_every_system_benchmark_and_length(paper):
    jobs = cfg.eval_jobs(paper)
    by_system = {}
    for job in jobs:
        by_system.setdefault(job.system, []).append(job)
    # the memory agent runs RULER-HQA to 3.5M tokens, RULER to 512K (qa_1 to 256K), LongBench
    # (one job per benchmark and length, covering its tasks)
    rl = {(j.benchmark, j.length): j for j in by_system["rl-memagent-14b"]}
    assert {n for b, n in rl if b == "ruler_hqa"} >= {50, 25600}
    ruler = [j for (b, _), j in rl.items() if b == "ruler"]
    assert len(ruler) == 7 and sum(len(j.tasks) for j in ruler) == 11 * 7 - 1
    assert "qa_1" in rl[("ruler", 262144)].tasks and "qa_1" not in rl[("ruler", 524288)].tasks
    assert len(rl[("longbench", 0)].tasks) == 7
    # long RULER-HQA evaluations of a memory agent are sharded; RAG is never
    assert [rl[("ruler_hqa", n)].shards for n in (3200, 6400, 25600)] == [1, 4, 4]
    assert {j.shards for s, js in by_system.items() if s.startswith("rag-") for j in js} == {1}
    # long-context baselines stop at 896K on RULER-HQA (N/A above in Table 1)
    baseline = by_system["qwen2.5-14b-instruct-128k"]
    assert max(j.length for j in baseline if j.benchmark == "ruler_hqa") == 6400
    # RAG: whole documents on RULER-HQA (Table 10), C-token chunks on LongBench (Table 11)
    rag = [s for s in by_system if s.startswith("rag-qwen2.5-14b.")]
    assert len(by_system["rag-qwen2.5-14b.bm25-k8-c2048"][0].tasks) == 5  # LongBench QA only
    assert len(rag) == 3 * 4 * 3  # retrievers (the paper's, BM25, MiniLM) x K x (doc, c1024, c2048)
    assert {j.benchmark for j in by_system["rag-qwen2.5-14b.dense-k4-doc"]} == {"ruler_hqa"}
    assert {j.benchmark for j in by_system["rag-qwen2.5-14b.bm25-k8-c2048"]} == {"longbench"}
    assert len(set(jobs)) == len(jobs)


def test_memalpha_jobs_memorize_with_the_policy_and_answer_with_the_qa_model(paper):
    jobs = {(j.benchmark, j.system): j for j in cfg.eval_jobs(paper)}
    mab = jobs[("mab", "memalpha-4b-released")]
    assert mab.length == 0 and mab.shards == 1 and len(mab.tasks) == 9
    assert ("mab", "qwen3-4b-memalpha") not in jobs  # Table 3 is validation only
    memorize = cfg.memorize_settings(paper, mab)
    assert memorize["engine"]["tensor_parallel_size"] == 1  # Memalpha-4B
    assert memorize["sampling"]["temperature"] == 0.0 and memorize["agent"]["visible_items"] == 5
    answer = cfg.eval_settings(paper, mab, 0)
    assert answer["engine"]["tensor_parallel_size"] == 2  # Qwen3-32B
    assert answer["qa"]["top_k"] == 20 and "model" not in answer["qa"]


def test_memalpha_baselines_jobs_and_settings(paper):
    jobs = {(j.benchmark, j.system): j for j in cfg.eval_jobs(paper)}
    systems = cfg.eval_systems(paper)
    # the released MemAgent memorises and answers with its own model, the QA model judges
    memagent = jobs[("mab", "rl-memoryagent-14b-released")]
    assert cfg.memorizes(systems["rl-memoryagent-14b-released"], "mab")
    assert not cfg.memorizes(systems["rl-memoryagent-14b-released"], "ruler_hqa")
    settings = cfg.memorize_settings(paper, memagent)
    assert settings["kind"] == "memagent" and settings["engine"]["tensor_parallel_size"] == 2
    assert (settings["memory_tokens"], settings["final_tokens"]) == (1024, 1024)
    assert settings["sampling"] == {"temperature": 0.1, "top_p": 0.95, "seed": None}
    assert cfg.eval_model(paper, systems["rl-memoryagent-14b-released"], "mab") == "qwen3-32b"
    # long context and RAG-Top2 answer (and judge) on their own model in one job
    lc = cfg.eval_settings(paper, jobs[("memalpha", "qwen3-32b-longcontext")], 0)
    assert lc["kind"] == "longcontext"
    assert (lc["max_input_tokens"], lc["max_output_tokens"]) == (30000, 2048)
    assert lc["sampling"] == {"temperature": 0.1, "top_p": 1.0, "seed": None}
    rag = cfg.eval_settings(paper, jobs[("mab", "qwen3-32b-rag.bm25-k2-doc")], 0)
    assert (rag["retriever"], rag["top_k"]) == ("bm25", 2) and len(rag["tasks"]) == 9
    assert not any(s.startswith("qwen3-32b-rag.") and b == "longbench" for b, s in jobs)
    # MEM1 writes its summary with its own model; the QA model answers over it as context
    mem1 = jobs[("memalpha", "mem1-7b")]
    assert cfg.memorizes(systems["mem1-7b"], "memalpha") and cfg.memorizes(
        systems["mem1-7b"], "ruler_hqa"
    )
    settings = cfg.memorize_settings(paper, mem1)
    assert settings["kind"] == "mem1" and settings["memory_tokens"] == 1024
    assert settings["sampling"] == {"temperature": 0.01, "top_p": 0.95, "seed": None}
    answer = cfg.eval_settings(paper, mem1, 0)
    assert answer["engine"]["tensor_parallel_size"] == 2  # Qwen3-32B's
    assert (answer["max_input_tokens"], answer["max_output_tokens"]) == (30000, 2048)
    assert answer["sampling"] == {"temperature": 0.1, "top_p": 1.0, "seed": None}


def test_mem1_runs_only_on_memalphas_benchmarks_and_ruler_hqa(paper):
    paper["evaluation"]["systems"]["mem1-7b"]["benchmarks"] = ["mab", "ruler"]
    with pytest.raises(cfg.ConfigError, match=r"mem1-7b.benchmarks: a mem1 system runs only"):
        cfg.validate_config(paper, SCHEMA)


def test_shards_grow_with_the_length_from_each_configured_step(paper):
    paper["evaluation"]["shards"] = {"ruler_hqa": {6400: 4, 100: 2}}
    memagent = {"kind": "memagent"}
    shards = [
        cfg.eval_shards(paper, memagent, "ruler_hqa", n) for n in (50, 100, 3200, 6400, 25600)
    ]
    assert shards == [1, 2, 2, 4, 4]
    assert cfg.eval_shards(paper, memagent, "ruler", 524288) == 1  # no steps for RULER
    assert cfg.eval_shards(paper, {"kind": "rag"}, "ruler_hqa", 25600) == 1


def test_max_docs_limits_a_system(paper):
    paper["evaluation"]["systems"]["memagent-qwen2.5-7b-instruct"]["max_docs"] = 6400
    lengths = [
        j.length
        for j in cfg.eval_jobs(paper)
        if j.system == "memagent-qwen2.5-7b-instruct" and j.benchmark == "ruler_hqa"
    ]
    assert max(lengths) == 6400 and len(lengths) == 8


def test_system_settings_reach_the_evaluation_job(paper):
    job = cfg.EvalJob("ruler_hqa", "qwen2.5-14b-instruct-128k", 800, ("hqa",), 4)
    settings = cfg.eval_settings(paper, job, 0)
    assert settings["kind"] == "longcontext"
    assert (settings["max_input_tokens"], settings["max_output_tokens"]) == (120000, 10000)
    assert settings["context_extension"] == "yarn"
    assert settings["engine"]["max_model_len"] == 131072
    assert (settings["shard"], settings["shards"]) == (0, 4)
    rag = cfg.eval_settings(
        paper, cfg.EvalJob("longbench", "rag-qwen2.5-7b.bm25-k2-c1024", 0, ("qasper",), 1), 0
    )
    assert (rag["retriever"], rag["top_k"], rag["unit_tokens"]) == ("bm25", 2, 1024)


def test_context_extension_needs_the_vllm_engine(paper):
    paper["evaluation"]["systems"]["qwen2.5-7b-instruct-128k"]["engine"] = {"kind": "hf"}
    with pytest.raises(cfg.ConfigError, match="context_extension: yarn is a vLLM engine setting"):
        cfg.validate_config(paper, SCHEMA)


def test_trained_models_resolve_to_their_final_checkpoint(paper):
    assert cfg.model_dir(paper, "rl-memagent-7b").parts[-2:] == ("rl-memagent-7b", "stage2")
    assert cfg.model_dir(paper, "qwen2.5-7b").parts[-2:] == ("models", "qwen2.5-7b")
    # a trained run inherits its base model's tensor-parallel size
    assert cfg.model_gpus(paper, "rl-memagent-14b") == 2


def test_paper_hyperparameters_reach_the_training_job(paper):
    settings = cfg.train_settings(paper, "rl-memagent-14b", "stage1")
    assert (settings["group_size"], settings["rollout_batch"]) == (16, 256)
    for stage in cfg.STAGES:  # the official 7B script's batch (run_memory_7B.sh)
        assert cfg.train_settings(paper, "rl-memagent-7b", stage)["rollout_batch"] == 128
    assert (settings["lr"], settings["warmup_steps"], settings["kl_coef"]) == (1e-6, 20, 1e-3)
    assert settings["agent"] == {
        "query_tokens": 1024,
        "chunk_tokens": 5000,
        "memory_tokens": 1024,
        "final_tokens": 1024,
    }
    assert cfg.train_settings(paper, "rl-memagent-14b", "stage2")["max_chunks"] >= 12


def test_vllm_engine_gets_the_models_tensor_parallel_size(paper):
    job = cfg.EvalJob("ruler_hqa", "memagent-qwen2.5-32b-instruct", 50, ("hqa",), 1)
    settings = cfg.eval_settings(paper, job, 0)
    assert settings["engine"]["tensor_parallel_size"] == 4


def test_longbench_sources_are_pinned_to_the_loaders_revision(paper):
    from memrepro.data.longbench import LONGBENCH_REVISION, parquet_url

    for task in paper["longbench"]["tasks"]:
        url = paper["sources"][cfg.longbench_source(task)]["url"]
        assert url == parquet_url(task) and LONGBENCH_REVISION in url


def test_unknown_sources_of_a_benchmark_fail_naming_the_key(paper):
    paper["ruler"]["essays"] = "nope"
    with pytest.raises(cfg.ConfigError, match=r"config key ruler\.essays: unknown source 'nope'"):
        cfg.validate_config(paper, SCHEMA)


def test_memalpha_and_mem1_read_ruler_hqa_as_instances_in_one_job_per_length(paper):
    jobs = [j for j in cfg.eval_jobs(paper) if j.benchmark == "ruler_hqa"]
    memalpha = [j for j in jobs if j.system == "memalpha-4b-released"]
    assert [j.length for j in memalpha] == paper["ruler_hqa"]["n_docs"]
    assert {j.shards for j in memalpha} == {1}  # one memorize job, read whole
    job = memalpha[-1]
    memorize = cfg.memorize_settings(paper, job)
    assert memorize["ruler_hqa"] == {**paper["memalpha"]["ruler_hqa"]}
    assert memorize["ruler_hqa"]["source"] == "ruler_qa2_421K"
    answer = cfg.eval_settings(paper, job, 0)
    assert answer["kind"] == "memalpha" and answer["ruler_hqa"]["chunk_tokens"] == 2048
    assert cfg.eval_model(paper, cfg.eval_systems(paper)["memalpha-4b-released"], "ruler_hqa") == (
        "qwen3-32b"
    )
    # MemAgent's Table 1 keeps to its own systems; the suites table has them all
    assert not any(j.system == "memalpha-4b-released" for j in cfg.report_jobs(paper, "table1"))
    assert job in cfg.report_jobs(paper, "suites")


def test_memalpha_training_runs_feed_evaluation_and_carry_their_reward_weights(repo):
    smoke = cfg.load_yaml(repo / "config/smoke.yaml")
    runs = cfg.memalpha_runs(smoke)
    assert runs == {"memalpha-tiny-grpo": {"base": "tiny-instruct", "beta": 0.05, "gamma": 0.1}}
    settings = cfg.memalpha_train_settings(smoke, "memalpha-tiny-grpo")
    assert (settings["beta"], settings["gamma"], settings["backend"]) == (0.05, 0.1, "cpu")
    assert settings["agent"]["prompt_cap"] == 4000  # the training cap (evaluation: none)
    assert settings["sources"] == smoke["memalpha"]["train"]["sources"]
    assert "runs" not in settings and settings["judge"]["max_tokens"] == 8
    trained = cfg.model_dir(smoke, "memalpha-tiny-grpo")
    assert trained.parts[-3:] == ("checkpoints", "memalpha-tiny-grpo", "grpo")
    assert cfg.model_gpus(smoke, "memalpha-tiny-grpo") == 0  # its base's
    smoke["memalpha"]["training"]["runs"]["rl-memagent-tiny"] = {"base": "x", "beta": 0, "gamma": 0}
    with pytest.raises(cfg.ConfigError, match=r"also used in training\.runs"):
        cfg.validate_config(smoke, SCHEMA)


def test_the_memalpha_recipe_switch_picks_steps_kl_and_checkpoint(paper):
    """Official by default (the script: 85 steps, KL loss 0.001, the last checkpoint); `paper`
    is its §4.1 (205 steps, no KL, the best validated checkpoint). Both validate every 50 steps
    on the validation split's sources."""
    run = "memalpha-4b-b0.05-g0.1"
    settings = cfg.memalpha_train_settings(paper, run)
    assert {
        k: settings[k] for k in ("recipe", "steps", "warmup_steps", "kl_coef", "checkpoint")
    } == {
        "recipe": "official",
        "steps": 85,
        "warmup_steps": 4,
        "kl_coef": 1e-3,
        "checkpoint": "last",
    }
    assert (
        settings["validation"]["every"] == 50
        and settings["validation"]["sampling"]["temperature"] == 0
    )
    assert settings["validation_sources"] == paper["memalpha"]["memalpha"]["sources"]
    assert "recipes" not in settings
    switched = copy.deepcopy(paper)
    switched["memalpha"]["training"]["recipe"] = "paper"
    settings = cfg.memalpha_train_settings(switched, run)
    assert (settings["steps"], settings["kl_coef"], settings["checkpoint"]) == (205, 0.0, "best")
    trained = cfg.report_settings(switched)["systems"]
    (ours,) = [s for s in trained if s["id"] == "memalpha-4b-trained-here"]
    assert ours["training"]["recipe"] == "paper" and ours["reward_weights"] == [0.05, 0.1]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"recipe": "fast"}, r"memalpha\.training\.recipe: unknown recipe 'fast'"),
        (
            {"recipe": "paper", "validation": {"every": 0, "n": 1}},
            r"memalpha\.training\.validation\.every: recipe 'paper' keeps the best",
        ),
    ],
)
def test_a_memalpha_recipe_that_cannot_run_names_its_key(paper, change, message):
    config = copy.deepcopy(paper)
    config["memalpha"]["training"].update(change)
    with pytest.raises(cfg.ConfigError, match=message):
        cfg.validate_config(config, SCHEMA)


# --- the memory ablation (Tables 8, 9; Figures 8, 9) ------------------------------------------


def test_memory_ablation_variants_run_the_same_checkpoint_with_other_budgets(paper):
    systems = cfg.eval_systems(paper)
    variant = systems["rl-memagent-14b.m4096-c1928"]
    assert variant["model"] == "rl-memagent-14b"  # retrain: false, inference only
    assert variant["paper_row"] == "14B-m4096-c1928" and variant["ablation_of"] == "rl-memagent-14b"
    assert sum("ablation_of" in s for s in systems.values()) == 2 * 7
    jobs = [j for j in cfg.eval_jobs(paper, systems) if j.system == "rl-memagent-14b.m4096-c1928"]
    assert {j.benchmark for j in jobs} == {"ruler", "longbench"} and len(jobs) == 7 + 1
    assert {t for j in jobs if j.benchmark == "ruler" for t in j.tasks} == {
        "niah_single_1",
        "niah_single_2",
        "niah_single_3",
    }
    (longbench,) = [j for j in jobs if j.benchmark == "longbench"]
    assert "gov_report" not in longbench.tasks and len(longbench.tasks) == 5
    settings = cfg.eval_settings(paper, longbench, 0, systems)
    assert settings["agent"] == {**paper["agent"], "memory_tokens": 4096, "chunk_tokens": 1928}
    base = next(j for j in cfg.eval_jobs(paper, systems) if j.system == "rl-memagent-14b")
    assert cfg.eval_settings(paper, base, 0, systems)["agent"] == paper["agent"]


def test_memory_ablation_reports_keep_the_variants_to_themselves(paper):
    def systems_of(name):
        return {j.system for j in cfg.report_jobs(paper, name)}

    assert not any("." in s and ".m" in s for s in systems_of("table3") | systems_of("figure5"))
    assert systems_of("table8") == {
        "rl-memagent-14b",
        "rl-memagent-7b",
        *(
            f"rl-memagent-{n}.m{m}-c{c}"
            for n in ("14b", "7b")
            for m, c in ((4096, 1928), (3072, 2952), (2048, 3976))
        ),
    }
    assert systems_of("figure9") == {
        "rl-memagent-14b",
        "rl-memagent-7b",
        *(f"rl-memagent-{n}.m{m}-c5000" for n in ("14b", "7b") for m in (256, 512, 2048, 4096)),
    }
    assert {j.benchmark for j in cfg.report_jobs(paper, "figure8")} == {"ruler"}
    shown = {s["id"] for s in cfg.report_settings(paper)["systems"]}
    assert "rl-memagent-14b.m256-c5000" not in shown  # every other report
    own = cfg.table_settings(paper, "table9")
    assert {s["id"] for s in own["systems"]} == systems_of("table9")
    assert own["agent"] == paper["agent"]


def test_memory_ablation_retrain_trains_a_run_per_setting(paper):
    paper["evaluation"]["memory_ablation"]["retrain"] = True
    cfg.validate_config(paper, SCHEMA)
    run = "rl-memagent-7b-m256-c5000"
    assert cfg.memagent_runs(paper)[run]["agent"] == {"memory_tokens": 256, "chunk_tokens": 5000}
    assert cfg.eval_systems(paper)["rl-memagent-7b.m256-c5000"]["model"] == run
    settings = cfg.train_settings(paper, run, "stage1")
    assert settings["agent"]["memory_tokens"] == 256 and settings["rollout_batch"] == 128
    assert cfg.model_dir(paper, run).parts[-2:] == (run, "stage2")


def test_a_variant_beyond_the_tiny_models_window_is_named(repo):
    smoke = cfg.load_yaml(repo / "config/smoke.yaml")
    smoke["evaluation"]["memory_ablation"]["settings"].append([4096, 256])
    with pytest.raises(cfg.ConfigError, match=r"evaluation\.systems\.rl-memagent-tiny\.m4096-c256"):
        cfg.validate_config(smoke, SCHEMA)


# --- Table 4's probe ------------------------------------------------------------------------------


def test_probe_jobs_read_every_placement_at_each_length(paper):
    jobs = [j for j in cfg.eval_jobs(paper) if j.benchmark == PROBE_BENCHMARK]
    assert {(j.system, j.length) for j in jobs} == {
        (s, n)
        for s in ("rl-memagent-14b", "rl-memagent-7b")
        for n in (50, 100, 200, 400, 800, 1600, 3200)
    }
    assert jobs[0].tasks == ("p0_20", "p0_100", "p20_80", "p40_60", "p80_100")
    # the rows of the random set reordered (whichever eval_sets): the form it is written in
    settings = cfg.probe_set_settings(paper, "p20_80", 400)
    store = paper["ruler_hqa"]["store_ids_above"]
    assert settings == {"n_docs": 400, "store_ids_above": store, "placement": [0.2, 0.8]}
    table4 = cfg.report_jobs(paper, "table4")
    random = {(j.system, j.length) for j in table4 if j.benchmark == "ruler_hqa"}
    assert random == {(j.system, j.length) for j in jobs}
    assert not any(j.benchmark == PROBE_BENCHMARK for j in cfg.report_jobs(paper, "table1"))
    assert cfg.table_settings(paper, "table4")["probe"]["systems"] == {
        "rl-memagent-14b": "14B",
        "rl-memagent-7b": "7B",
    }


def test_the_openai_retriever_gets_the_embedding_endpoint_and_the_others_do_not(paper):
    assert paper["evaluation"]["systems"]["rag-qwen2.5-14b"]["retrievers"][0] == "openai"  # D.2's
    systems = cfg.eval_systems(paper)
    jobs = {j.system: j for j in cfg.eval_jobs(paper, systems) if j.benchmark == "ruler_hqa"}
    openai = cfg.eval_settings(paper, jobs["rag-qwen2.5-14b.openai-k4-doc"], 0, systems)
    assert openai["retriever_options"]["model"] == "text-embedding-3-large"
    bm25 = cfg.eval_settings(paper, jobs["rag-qwen2.5-14b.bm25-k4-doc"], 0, systems)
    assert "retriever_options" not in bm25


def test_case_studies_name_a_memagent_evaluation(paper):
    (study, *_) = cfg.case_studies(paper)
    assert (study.benchmark, study.system, study.length) == ("ruler_hqa", "rl-memagent-14b", 800)
    settings = cfg.case_study_settings(paper, study)
    assert settings["agent"]["chunk_tokens"] == 5000 and settings["tasks"] == ("hqa",)
    assert (settings["first"], settings["only"]) == (5, "all")
    for change, message in (
        ({"system": "qwenlong-l1-32b"}, "'qwenlong-l1-32b' is not a memagent system"),
        ({"length": 75}, "'rl-memagent-14b' has no ruler_hqa evaluation at length 75"),
    ):
        bad = copy.deepcopy(paper)
        bad["report"]["case_studies"][0].update(change)
        with pytest.raises(cfg.ConfigError, match=message):
            cfg.validate_config(bad, SCHEMA)
    bad = copy.deepcopy(paper)
    bad["report"]["case_studies"].append(dict(bad["report"]["case_studies"][0]))
    with pytest.raises(cfg.ConfigError, match="a second case study"):
        cfg.validate_config(bad, SCHEMA)


def test_longbench_summaries_are_scored_whole_unless_asked(paper):
    systems = cfg.eval_systems(paper)
    job = next(j for j in cfg.eval_jobs(paper, systems) if j.benchmark == "longbench")
    assert "strip_think" not in cfg.eval_settings(paper, job, 0, systems)  # LongBench's own
    paper["evaluation"]["longbench_strip_think"] = True
    cfg.validate_config(paper, SCHEMA)
    assert cfg.eval_settings(paper, job, 0, systems)["strip_think"] is True


def test_the_verifier_reaches_the_filter_and_the_training_jobs(paper):
    assert cfg.filter_settings(paper)["verifier"] == "official"
    assert cfg.train_settings(paper, "rl-memagent-14b", "stage1")["verifier"] == "official"
    paper["training"]["verifier"] = "extended"
    paper["filter"]["verifier"] = "extended"
    cfg.validate_config(paper, SCHEMA)
    assert cfg.filter_settings(paper)["verifier"] == "extended"
    assert cfg.train_settings(paper, "rl-memagent-14b", "stage2")["verifier"] == "extended"
    paper["training"]["verifier"] = "lenient"
    with pytest.raises(cfg.ConfigError, match=r"key training\.verifier: 'lenient' must be one of"):
        cfg.validate_config(paper, SCHEMA)


def test_a_change_to_what_a_data_job_writes_reaches_its_params(paper):
    # Snakemake reruns a job whose params change: the format numbers carry code changes there
    assert cfg.ruler_set_settings(paper, "niah_single_1", 8192)["format"] == cfg.RULER_ROWS_FORMAT
    assert cfg.hqa_pool_settings() == {"format": cfg.HQA_POOL_FORMAT}


def test_mem0_runs_ruler_hqa_and_longbench_qa_with_its_settings(paper):
    systems = cfg.eval_systems(paper)
    jobs = [j for j in cfg.eval_jobs(paper, systems) if j.system == "mem0-gpt-5.1"]
    assert {j.benchmark for j in jobs} == {"ruler_hqa", "longbench"} and len(jobs) == 10 + 1
    longbench = next(j for j in jobs if j.benchmark == "longbench")
    assert "gov_report" not in longbench.tasks and len(longbench.tasks) == 5  # D.2: QA
    settings = cfg.eval_settings(paper, longbench, 0, systems)
    assert (settings["mem0"]["chunk_tokens"], settings["mem0"]["top_k"]) == (5000, 30)
    assert settings["agent"]["final_tokens"] == 1024 and settings["engine"]["kind"] == "openai"
    bad = copy.deepcopy(paper)
    bad["evaluation"]["systems"]["mem0-gpt-5.1"]["benchmarks"] = ["mab"]
    with pytest.raises(cfg.ConfigError, match=r"mem0-gpt-5.1.benchmarks: a mem0 system runs only"):
        cfg.validate_config(bad, SCHEMA)
    del bad["evaluation"]["systems"]["mem0-gpt-5.1"]["mem0"]
    with pytest.raises(cfg.ConfigError, match="mem0 missing"):
        cfg.validate_config(bad, SCHEMA)


def test_a_tiny_model_a_marked_one_and_runs_trained_from_them_reproduce_nothing(repo, paper):
    smoke = cfg.load_config([repo / "config/smoke.yaml"])
    assert not cfg.model_reproduces(smoke, "tiny-instruct")  # random weights
    assert not cfg.model_reproduces(smoke, "rl-memagent-tiny")  # trained from one
    assert not cfg.model_reproduces(smoke, "memalpha-tiny-grpo")
    mini = cfg.load_config([repo / "config/mini.yaml"])
    assert not cfg.model_reproduces(mini, "smollm2-135m-instruct")  # reproduces: false
    assert cfg.model_reproduces(paper, "qwen2.5-7b-instruct")
    assert cfg.model_reproduces(paper, "rl-memagent-14b")  # trained from a real base
    marked = copy.deepcopy(paper)
    marked["models"]["qwen2.5-14b-instruct"]["reproduces"] = False
    assert not cfg.model_reproduces(marked, "rl-memagent-14b")


def test_each_table_job_gets_its_margin_and_figures_none(paper):
    paper["report"]["equivalence_margin"] = {"default": 4.0, "memalpha_table2": 10}
    assert cfg.table_settings(paper, "table1")["margin"] == 4.0
    assert cfg.table_settings(paper, "memalpha_table2")["margin"] == 10.0
    assert "margin" not in cfg.table_settings(paper, "figure1")
    del paper["report"]["equivalence_margin"]
    assert cfg.table_settings(paper, "table3")["margin"] == 5.0  # the documented default


def test_the_papers_wording_changes_the_evaluations_settings_not_the_trainings(repo):
    """`agent.wording` is evaluation's: switching it reruns evaluations, never training."""
    official = cfg.load_config([repo / "config/config.yaml"])
    paper = copy.deepcopy(official)
    paper["agent"]["wording"] = "paper"
    for run in cfg.memagent_runs(official):
        for stage in ("stage1", "stage2"):
            assert cfg.train_settings(paper, run, stage) == cfg.train_settings(official, run, stage)
    job = cfg.EvalJob("ruler_hqa", "rl-memagent-14b", 50, ("hqa",), 1)
    evaluation = cfg.eval_settings(paper, job, 0)
    assert evaluation["agent"]["wording"] == "paper"
    assert "wording" not in cfg.eval_settings(official, job, 0)["agent"]
