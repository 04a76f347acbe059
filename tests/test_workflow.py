"""The workflow as users run it: the paper plan under the SLURM profile, and the whole smoke DAG."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from docs_pages import docs_text

from memrepro.config import ENV_OVERRIDES, load_config
from memrepro.data.io import read_jsonl
from memrepro.digests import file_digest
from memrepro.report.claims import OUTCOMES
from memrepro.report_digests import compare, report_jobs
from memrepro.scoring.memalpha import is_judged
from memrepro.tracking.record import RECORD_SUFFIX, read_record

pytestmark = pytest.mark.workflow

WORKFLOW_FILES = ("Snakefile", "workflow", "config", "profiles", "envs", "examples")
CUSTOM_EXAMPLE = ("--configfile", "config/smoke.yaml", "examples/custom/config.yaml")
# a folder where the smoke run is kept, as it was before the own-data example (.ci/run sets it):
# tests/containers compares its containerised run with this one instead of running it again
KEEP_SMOKE = "MEMREPRO_KEEP_SMOKE"


def kept_smoke() -> Path | None:
    """The venv smoke run `make test` kept (results/smoke as it was), if this CI run has one."""
    kept = Path(os.environ.get(KEEP_SMOKE, "/nonexistent")) / "smoke"
    return kept if (kept / "reproduction.md").is_file() else None


def snakemake_env() -> dict[str, str]:
    """This environment with the test's interpreter (its snakemake, its memrepro) first on PATH."""
    return {
        **os.environ,
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
    }


def snakemake(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "snakemake", *args],
        cwd=cwd,
        env=snakemake_env(),
        capture_output=True,
        text=True,
        check=False,
    )


def copy_workflow(repo: Path, dest: Path) -> None:
    for name in WORKFLOW_FILES:
        source = repo / name
        copy = shutil.copytree if source.is_dir() else shutil.copy
        copy(source, dest / name)


def job_counts(output: str) -> dict[str, int]:
    table = output.split("Job stats:")[1]
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.MULTILINE)}


def planned_settings(output: str, cwd: Path) -> str:
    """The settings files the planned commands pass by reference (`--settings @FILE`)."""
    files = dict.fromkeys(re.findall(r"--settings @(\S+)", output))
    return "\n".join((cwd / name).read_text() for name in files)


def test_slurm_profile_plans_every_paper_job(repo):
    # The profile runs jobs in apptainer images; planning needs no apptainer (nor conda, nor GPU).
    done = snakemake("-n", "-p", "--profile", "profiles/slurm", "all", cwd=repo)
    assert done.returncode == 0, done.stderr
    counts = job_counts(done.stdout)
    # HotpotQA x2, SQuAD, DocQA, essays, 7 LongBench configs, Memalpha train, validation and the
    # full training set (Table 6), MAB; Mem-α's training sources (memalpha.build: SQuAD train,
    # PerLTQA x2, LongMemEval's oracle, MAB's TTL rows, PubMed-RCT, BookSum x2)
    assert counts["download_data"] == 24
    assert counts["memalpha_source"] == counts["memalpha_filter"] == 7
    # gpt-4.1 (PerLTQA's filter), gpt-4.1-mini, gpt-5.1, gpt-4o: their tokenizer; not Qwen2.5-7B
    # base, which only the filter asks
    assert counts["download_model"] == 20
    # MemAgent's released questions (train, dev) and evaluation sets, one per length
    n_docs = load_config([repo / "config/config.yaml"])["ruler_hqa"]["n_docs"]
    assert counts["download_official_hqa"] == 2 + len(n_docs) == counts["official_eval_set"] + 2
    assert counts["official_questions"] == 2 and "filter_questions" not in counts
    assert "synthesize_eval" not in counts and "synthesize_ruler_hqa" not in counts
    assert counts["synthesize_ruler"] == 11 * 7 - 1  # qa_1 stops at 256K
    assert counts["stage2_data"] == 1
    assert counts["train_stage1"] == counts["train_stage2"] == counts["plot_training_curve"] == 2
    # one job per (system, benchmark, length) for all its tasks; long RULER-HQA ones in 4 shards
    # (the released checkpoints' repeats at two more sampling seeds among them)
    from memrepro import config as cfg

    jobs = cfg.eval_jobs(cfg.load_yaml(repo / "config/config.yaml"))
    sharded = [j for j in jobs if j.shards > 1]
    assert len(sharded) == 46 and {j.shards for j in sharded} == {4}
    # ... the memory ablation: 2 systems x 7 settings x (7 NIAH lengths + LongBench-QA), and
    # Table 4's probe: 2 systems x 7 lengths, each job all 5 placements (5 x 7 probe sets)
    # D.2's RAG with the paper's retriever (text-embedding-3-large) beside BM25 and MiniLM: 2 models
    # x 4 K x (RULER-HQA's 10 lengths + LongBench's 2 chunk sizes);
    # Mem0 (D.2) on RULER-HQA's 7 unsharded lengths and LongBench-QA; the closed-book controls,
    # one per question set (one RULER-HQA job for every length) for each model a memory cell
    # reads: the released 14B and 7B on RULER-HQA, LongBench-QA and Mem-α's two (2 x 4), the
    # trained 14B and 7B, Qwen2.5-7B/14B/32B-Instruct and GPT-5.1 on RULER-HQA and LongBench-QA
    # (6 x 2), Qwen3-32B (Mem-α's QA model) on RULER-HQA and Mem-α's two (3); the oracle on
    # RULER-HQA's 10 lengths, the full context on its 7 unsharded lengths up to 6,400 documents
    # (6,400 itself in shards) and LongBench-QA; the
    # released 14B question-blind on RULER-HQA's 7 lengths to 448K, and question-aware on
    # MemoryAgentBench's RULER-QA source
    # (Table 5's example is memorised and never asked: no table reads its answers)
    asked = [j for j in jobs if j.benchmark != "memalpha_example"]
    assert (
        counts["evaluate"]
        == len(asked) - len(sharded)
        == 446
        + 2 * 4 * 12
        + (2 * 10 + 5 * 2 + 2 * 7 * 8 + 14 + 8 + (2 * 4 + 6 * 2 + 3) + 10 + 7 + 1 + 7 + 1)
        # the released 14B and 7B at 2 more sampling seeds: RULER-HQA's 7 unsharded lengths,
        # RULER's 7 and LongBench-QA, each (Mem-α's instances sample with memalpha's settings)
        + 2 * 2 * (7 + 7 + 1)
    )
    assert counts["probe_set"] == 5 * 7
    # Mem-α: Memalpha-4B on validation and MemoryAgentBench, Qwen3-4B and gpt-4.1-mini on
    # validation, the released MemAgents and MEM1 (its baselines) on both, Memalpha-4B and
    # MEM1 on RULER-HQA's 10 lengths too (the suites table), the question-aware released 14B on
    # MemoryAgentBench's RULER-QA source; the QA model (Qwen3-32B, 2 GPUs) answers or judges in
    # the evaluate job, apart from the policy; Table 5's example, memorised alone by the released
    # and trained Mem-α, Qwen3-4B and gpt-4.1-mini once it is found in the splits
    assert counts["memorize"] == 4 + 4 + 2 + 2 * 10 + 5 * 2 + 1 + 4
    assert counts["memalpha_example"] == 1
    # the (β, γ) ablation: five GRPO runs on verl, each evaluated on both Mem-α benchmarks
    assert counts["train_memalpha"] == counts["plot_memalpha_training_curve"] == 5
    assert "eval/mab/memalpha-4b-released/0.memories.jsonl" in done.stdout
    assert counts["merge_eval"] == 46 and counts["evaluate_shard"] == 4 * 46
    # MemAgent's 10, its recipes and failure patterns, Mem-α's 9, its recipes and its rebuilt
    # sets, the controls, the protocols, the scorers, the seeds (the released checkpoints' 3),
    # the papers' sentences and the suites; 8 figures and the frontier
    assert counts["make_table"] == 12 + 11 + 6 and counts["plot_figure"] == 8 + 1
    # scores without regenerating: the whole reply on the four trained or released MemAgents'
    # RULER-HQA (10 lengths) and LongBench-QA, Mem-α's two under its baselines' protocol on
    # both Mem-α benchmarks, and GPT-4o judging every system there with a judged (LongMemEval)
    # source; the leniency probe of GPT-4o and of the evaluations' own judge (Qwen3-32B)
    judged = [
        j for j in jobs if j.benchmark in ("memalpha", "mab") and any(map(is_judged, j.tasks))
    ]
    assert counts["rescore"] == 4 * 11 + 2 * 2 + len(judged) == 62
    assert counts["judge_probe"] == 2
    assert counts["case_study"] == 3 and counts["reproduction"] == 1
    # the README's numbers of this plan are this plan's
    readme = docs_text(repo)
    evaluations = counts["evaluate"] + counts["merge_eval"]
    assert f"({counts['total']:,} jobs in about" in readme
    assert f"in {evaluations} evaluation jobs: {counts['evaluate']} `evaluate` jobs" in readme
    assert f"{counts['memorize']} memorize jobs" in readme
    assert f"{counts['make_table']} tables, {counts['plot_figure']} figures" in readme
    assert counts["dataset_stats"] == 4  # Mem-α's train, validation, full set and MemoryAgentBench
    # baselines reach vLLM with their context extension; RAG systems expand over their grid
    # every job's settings by reference: one short command line each, the JSON in a file
    assert "--settings '" not in done.stdout
    settings = planned_settings(done.stdout, repo)
    assert '"context_extension": "yarn"' in settings
    assert '"context_extension": "no_dca"' in settings
    assert "eval/ruler_hqa/rl-memagent-14b/25600.shard3of4.jsonl" in done.stdout
    assert "eval/longbench/rag-qwen2.5-7b.dense-k8-c2048/0.metrics.json" in done.stdout
    # 16 nodes x 8 GPUs for RL-MemAgent-14B: the job's total GPU count goes to SLURM
    assert "gpu=128, nodes=16" in done.stdout
    # the plan shows the real verl command: Ray across the job's nodes, then verl's overrides
    launches = re.findall(r"-- bash workflow/scripts/ray_job\.sh (.*)", done.stdout)
    assert len(launches) == 4 + 5  # MemAgent's 2 runs x 2 stages, Mem-α's 5 runs
    # in apptainer (the profile's): srun on the host, every node's Ray and verl in the train image,
    # planned alike on a machine without apptainer
    assert all(" --container containers/train.sif -- " in line for line in launches)
    # Mem-α: Ray on 4 nodes, the QA server on a fifth (40 GPUs), the Mem-α loop and trainer
    assert "gpu=40, nodes=5" in done.stdout
    memalpha = next(line for line in launches if "memalpha-4b-b0.2-g0.1" in line)
    for override in (
        "actor_rollout_ref.rollout.agent.default_agent_loop=memalpha",
        "algorithm.norm_adv_by_std_in_grpo=true",
        "+data.apply_chat_template_kwargs.enable_thinking=false",
    ):
        assert override in memalpha, override
    assert (
        "train-memalpha" in done.stdout
        and "--qa-model results/paper/models/qwen3-32b" in done.stdout
    )
    stage1_14b = next(line for line in launches if "--nodes 16" in line and ".stage1.verl" in line)
    for override in (
        "-- python -u -m memrepro.verl.main",
        "algorithm.adv_estimator=grpo",
        "algorithm.norm_adv_by_std_in_grpo=false",
        "actor_rollout_ref.actor.loss_agg_mode=token-mean",
        "actor_rollout_ref.actor.kl_loss_type=low_var_kl",
        "actor_rollout_ref.rollout.n=16",
        "actor_rollout_ref.rollout.tensor_model_parallel_size=2",
        "trainer.nnodes=16",
        "trainer.test_freq=5",
        "trainer.save_freq=10",
        "trainer.resume_mode=auto",
    ):
        assert override in stage1_14b, override


def test_one_machine_plans_the_released_checkpoints_and_refuses_multi_node_training(repo):
    released = snakemake(
        "-n",
        "--profile",
        "profiles/local",
        "all",
        "--configfile",
        "config/config.yaml",
        "config/eval-released.yaml",
        cwd=repo,
    )
    assert released.returncode == 0, released.stderr
    counts = job_counts(released.stdout)
    assert not {"train_stage1", "train_stage2", "train_memalpha"} & set(counts)
    assert counts["evaluate"] > 100 and counts["memorize"] > 0
    # the paper's own evaluation sets and questions: no filter, no synthesis, no train questions
    assert not {"filter_questions", "synthesize_ruler_hqa", "synthesize_eval"} & set(counts)
    n_docs = load_config([repo / "config/config.yaml"])["ruler_hqa"]["n_docs"]
    assert counts["official_eval_set"] == len(n_docs)
    # (the probe reorders these sets' rows: nothing reads the released dev questions)
    fetched = set(re.findall(r"raw/memagent_hotpotqa/([\w.]+)\.manifest\.json", released.stdout))
    assert fetched == {f"eval_{n}.json" for n in n_docs}
    assert "results/released/tables/table1.md" in released.stdout
    # only the models its jobs read: the released checkpoints, not the paper's other backbones
    downloaded = set(
        re.findall(r"results/released/models/([\w.-]+)\.manifest\.json", released.stdout)
    )
    assert {"rl-memoryagent-14b", "rl-memoryagent-7b", "memalpha-4b"} <= downloaded
    assert "qwen2.5-14b-instruct" not in downloaded
    readme = docs_text(repo)
    assert (
        f"`all` under it\nplans {counts['total']} jobs ({counts['evaluate']} `evaluate`, "
        f"{counts['evaluate_shard']} shards, {counts['memorize']} `memorize`; no training)"
    ) in readme
    paper_models = load_config([repo / "config/config.yaml"])["models"]
    assert f"downloads {len(downloaded)} of the paper config's {len(paper_models)}" in readme
    # every GPU job claims the machine's 8 GPUs: Snakemake runs them one at a time (a rescoring
    # by a metric or a hosted judge claims none)
    gpus = set(re.findall(r"\bgpu=(\d+)", released.stdout))
    assert gpus == {"0", "8"}
    paper = snakemake("-n", "--profile", "profiles/local", "table1", cwd=repo)
    assert paper.returncode != 0
    # whichever multi-node run the plan reaches first is refused (the order follows files on disk)
    refusals = {
        "rl-memagent-7b": "needs 4 nodes with 32 GPUs",
        "rl-memagent-14b": "needs 16 nodes with 128 GPUs",
    }
    assert any(
        f"training run {run} {needs} (training.runs.{run}.nodes and .gpus_per_node), "
        "but this profile runs on 1 node with 8 GPUs" in paper.stdout + paper.stderr
        for run, needs in refusals.items()
    ), paper.stdout[-2000:]


def memrepro_cost(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).parent / "memrepro"), "cost", *args],
        cwd=repo,
        env=snakemake_env(),
        capture_output=True,
        text=True,
        check=False,
    )


def test_cost_of_the_paper_plan_is_the_readmes(repo):
    done = memrepro_cost(repo, "--profile", "profiles/slurm", "all", "--markdown")
    assert done.returncode == 0, done.stderr
    readme = docs_text(repo)
    block = readme.split("<!-- cost:paper -->\n")[1].split("<!-- /cost:paper -->")[0]
    assert block.strip() == done.stdout.strip()
    rows = {line.split(" | ")[0].strip("| `*"): line.split(" | ") for line in block.splitlines()}
    assert rows["train_stage1"][3] == "2" and rows["evaluate"][4] != "—"  # both estimated
    assert rows["train_memalpha"][3] == "5" and rows["memorize"][4] != "—"  # Mem-α's too
    assert "filter_questions" not in rows  # the released questions: nothing filtered here
    # what the target holds beyond evaluations, and what the command was doing meanwhile
    [note] = [line for line in block.splitlines() if line.startswith("The target includes")]
    for run in ("rl-memagent-7b", "rl-memagent-14b", "memalpha-4b-b0.05-g0.1"):
        assert run in note
    assert note.endswith("add --configfile config/config.yaml config/eval-released.yaml.")
    said = done.stderr.splitlines()
    assert said[0].startswith("memrepro cost: planning all with Snakemake (a dry run) (")
    assert re.match(r"memrepro cost: planned [\d,]+ jobs; pricing them \(\d+ s\)$", said[1])
    # every hosted call priced: Mem0's, the embeddings', the judges' and the Mem-α framework's
    assert not any(row[-1].strip(" |").endswith("+") for row in rows.values())
    assert rows["evaluate"][-3] != "—" and rows["evaluate_shard"][-3] != "—"
    rebuilt = memrepro_cost(
        repo,
        "--profile",
        "profiles/slurm",
        "all",
        "--config",
        "ruler_hqa.questions=filtered",
        "--json",
    )
    assert rebuilt.returncode == 0, rebuilt.stderr
    by_rule = {row["rule"]: row for row in json.loads(rebuilt.stdout)["rows"]}
    assert by_rule["filter_questions"]["estimated_jobs"] == 0  # not modelled: its allocation alone
    assert by_rule["filter_questions"]["allocation_gpu_h"] > 0
    assert by_rule["download_model"]["jobs"] == int(rows["download_model"][1]) + 1  # its base model
    released = memrepro_cost(
        repo,
        "--profile",
        "profiles/local",
        "table1",
        "table2",
        "table3",
        "memalpha_table1",
        "memalpha_table2",
        "--configfile",
        "config/config.yaml",
        "config/eval-released.yaml",
        "--json",
    )
    assert released.returncode == 0, released.stderr
    found = json.loads(released.stdout)["rows"]
    estimate = sum(row["estimate_gpu_h"] for row in found)
    downloads = sum(row["download_gb"] for row in found)
    prose = " ".join(readme.split())
    released_bill = f"about {estimate:.0f} GPU-hours estimated and {downloads:.0f} GB of weights"
    assert released_bill in prose


def test_cost_of_the_smoke_plan_has_no_gpu_hours(repo):
    # its training runs on the CPU trainer, which has no verl section to price
    done = memrepro_cost(repo, "--profile", "profiles/smoke", "all", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["rows"]
    assert sum(row["gpu_jobs"] for row in rows) == 0
    assert sum(row["estimate_gpu_h"] + row["allocation_gpu_h"] for row in rows) == 0


def test_the_readmes_added_model_plans_its_evaluations(repo, tmp_path):
    readme = docs_text(repo)
    example = "# my-model.yaml" + readme.split("```yaml\n# my-model.yaml")[1].split("```")[0]
    (tmp_path / "my-model.yaml").write_text(example)
    done = snakemake(
        "-n",
        "--profile",
        "profiles/local",
        "table1",
        "--configfile",
        "config/config.yaml",
        "config/eval-released.yaml",
        str(tmp_path / "my-model.yaml"),
        cwd=repo,
    )
    assert done.returncode == 0, done.stderr
    assert "eval/ruler_hqa/memagent-qwen2.5-7b-1m/50.metrics.json" in done.stdout
    assert "results/released/models/qwen2.5-7b-instruct-1m" in done.stdout


def test_mini_profile_plans_its_slice_with_the_infer_jobs_in_the_vllm_venv(repo, tmp_path):
    copy_workflow(repo, tmp_path)  # planned from scratch, whatever results/mini holds
    done = snakemake("-n", "-p", "--profile", "profiles/mini", "all", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    counts = job_counts(done.stdout)
    # MemAgent, direct and RAG on RULER-HQA x 3 and LongBench-QA; MemAgent and direct on NIAH
    # x 2; Mem-α on validation and MemoryAgentBench (memorize, then QA on the served model);
    # question-blind MemAgent and the oracle on RULER-HQA x 3; closed-book in its two prompts,
    # once on RULER-HQA (for every length) and on LongBench
    assert counts["evaluate"] == 3 * 4 + 2 * 2 + 2 + 3 + 3 + 2 * 2 and counts["memorize"] == 2
    assert counts["download_model"] == 1 and "train_stage1" not in counts
    # the whole reply rescores MemAgent (both protocols) and direct generation on RULER-HQA,
    # MemAgent and direct on LongBench-QA; no judge, so no leniency probe
    assert counts["rescore"] == 3 * 3 + 2 and "judge_probe" not in counts
    pattern = r"(\S+) --job '\{\"rule\": \"(evaluate|memorize|filter_questions)\""
    infer = re.findall(pattern, done.stdout)
    assert len(infer) == 28 + 2 + 1
    assert {launcher for launcher, _ in infer} == {".venv-vllm/bin/memrepro"}
    # Mem-α's QA model: a server its job starts
    assert '"kind": "served"' in planned_settings(done.stdout, tmp_path)
    # tables whose evaluations this slice does not run are not planned, and asking names why
    assert "table4" not in done.stdout and "memalpha_table4" not in done.stdout
    probe = snakemake("-n", "--profile", "profiles/mini", "table4", cwd=tmp_path)
    assert probe.returncode != 0
    assert "runs nothing it reads (evaluation.probe)" in probe.stdout + probe.stderr


def test_a_missing_infer_venv_stops_the_run_before_any_job(repo, tmp_path):
    copy_workflow(repo, tmp_path)
    done = snakemake(
        "--profile",
        "profiles/mini",
        "--config",
        "infer_venv=no-such-venv",
        "--",
        "all",
        cwd=tmp_path,
    )
    assert done.returncode != 0
    assert "infer_venv no-such-venv: no bin/memrepro there; build it with make vllm-env" in (
        done.stdout + done.stderr
    )
    assert not (tmp_path / "results").exists()


@pytest.mark.skipif(bool(shutil.which("apptainer") or shutil.which("singularity")), reason="has it")
def test_running_with_apptainer_on_a_host_without_it_stops_before_any_job(repo, tmp_path):
    copy_workflow(repo, tmp_path)
    done = snakemake("--profile", "profiles/smoke", "--sdm", "apptainer", cwd=tmp_path)
    assert done.returncode != 0
    assert "neither apptainer nor singularity is on PATH" in done.stdout + done.stderr
    assert not (tmp_path / "results").exists()  # no job ran


def test_an_edited_local_source_is_copied_again_and_a_stale_pin_stops_the_plan(repo, tmp_path):
    """A local file is tracked by its content: an edit reruns its copy (and so everything after
    it); a configured sha256 that no longer matches stops the plan, naming the key."""
    copy_workflow(repo, tmp_path)
    data = tmp_path / "examples/custom/minutes.jsonl"
    overlay = tmp_path / "unpinned.yaml"
    overlay.write_text("sources:\n  minutes: {url: examples/custom/minutes.jsonl, sha256: null}\n")
    target = "results/smoke/raw/minutes.jsonl"
    plan = (target, "--profile", "profiles/smoke", *CUSTOM_EXAMPLE, str(overlay))
    done = snakemake(*plan, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / target).read_bytes() == data.read_bytes()
    assert "Nothing to be done" in snakemake(*plan, "-n", cwd=tmp_path).stdout
    data.write_bytes(data.read_bytes().replace(b"reading room", b"reading hall", 1))
    again = snakemake(*plan, "-n", cwd=tmp_path)
    assert again.returncode == 0 and job_counts(again.stdout) == {"download_data": 1, "total": 1}
    pinned = snakemake(*plan[:-1], "-n", cwd=tmp_path)  # the example pins the file's sha256
    assert pinned.returncode != 0
    assert "config key sources.minutes: examples/custom/minutes.jsonl has sha256" in (
        pinned.stdout + pinned.stderr
    )


@pytest.fixture(scope="module")
def smoke(tmp_path_factory, repo) -> Path:
    """The whole smoke DAG, run once in a scratch copy of the workflow, then the README's own
    data example laid over it (its `custom` table)."""
    work = tmp_path_factory.mktemp("smoke")
    copy_workflow(repo, work)
    done = snakemake("--profile", "profiles/smoke", cwd=work)
    assert done.returncode == 0, done.stderr[-5000:]
    if keep := os.environ.get(KEEP_SMOKE):  # CI: the containerised run is compared with this one
        shutil.rmtree(keep, ignore_errors=True)
        shutil.copytree(work / "results/smoke", Path(keep) / "smoke", symlinks=True)
    custom = snakemake("custom", "--profile", "profiles/smoke", *CUSTOM_EXAMPLE, cwd=work)
    assert custom.returncode == 0, custom.stderr[-5000:]
    # a second named config of one's own data, one of the example's datasets on one system
    (work / "second.yaml").write_text(SECOND_CUSTOM)
    second = ("--configfile", "config/smoke.yaml", "second.yaml")
    custom = snakemake("custom", "--profile", "profiles/smoke", *second, cwd=work)
    assert custom.returncode == 0, custom.stderr[-5000:]
    return work


SECOND_CUSTOM = """\
sources:
  minutes:
    url: examples/custom/minutes.jsonl
    sha256: cee2fdfc6ad47835a06920455c3917f1abb027e237d618a3b1e365ad31fbb7d1
custom:
  name: minutes_only
  systems: [tiny-instruct-direct]
  datasets:
    minutes: {source: minutes, metric: rouge}
"""


def test_smoke_table_has_every_cell_with_sane_values(smoke):
    results = smoke / "results/smoke"
    with open(results / "tables/table1.csv") as handle:
        rows = list(csv.DictReader(handle))
    scored = [row for row in rows if row["ours"]]
    cells = {(row["system"], int(row["n_docs"])) for row in scored}
    # two memory agents (one also question-blind), the direct baseline, the oracle and the full
    # context x 3 lengths; the two closed-books once each (their one run, at the first length;
    # "—" at the others)
    assert len(cells) == 6 * 3 + 2 and len(rows) == 8 * 3
    assert {n for system, n in cells if system.startswith("Closed-book")} == {10}
    for row in scored:
        assert 0.0 <= float(row["ours"]) <= 100.0
    assert "paper" in (results / "tables/table1.md").read_text()
    assert (
        "MemAgent's prompts: the official code's wording"
        in (results / "tables/table1.md").read_text()
    )
    assert "\\begin{tabular}" in (results / "tables/table1.tex").read_text()
    [metrics] = json.loads(
        (results / "eval/ruler_hqa/rl-memagent-tiny/50.metrics.json").read_text()
    )
    assert metrics["n_items"] == 8 and metrics["mean_calls"] > 2  # merged from 2 shards


def test_smoke_evaluates_every_benchmark_system_and_table(smoke):
    results = smoke / "results/smoke"
    from memrepro.config import TABLES, report_stem

    example = load_config([smoke / "config/smoke.yaml", smoke / CUSTOM_EXAMPLE[-1]])
    for name in TABLES:  # the custom table's files carry its config's name
        assert (results / f"tables/{report_stem(example, name)}.md").read_text().strip(), name
    assert "TREC-C‡" in (results / "tables/memalpha_table2.md").read_text()
    stats = (results / "tables/memalpha_table7.md").read_text()  # measured on the fixtures
    assert "| LME-Train | 1 (paper 50, -49) |" in stats
    # (the own-data example's: eval/custom, test_smoke_runs_every_system_on_ones_own_data)
    files = [p for p in (results / "eval").rglob("*.metrics.json") if "custom" not in p.parts]
    metrics = [record for path in files for record in json.loads(path.read_text())]
    # one file per job, a record per task; beyond the 37 jobs of Tables 1-3, 10, 11 and Mem-α's:
    # MemAgent w/o RL on LongBench (7 tasks, Figure 7), the memory ablation's 2 settings on NIAH
    # at 2 lengths and LongBench-QA (2 x (3 + 3 + 5)), the probe's 2 placements at 20 docs, the
    # closed-book control once on RULER-HQA (for its 3 lengths), LongBench-QA and Mem-α's two
    # (1 + 5 + 16), and the trained agent's own on RULER-HQA, LongBench-QA and MemoryAgentBench
    # (1 + 5 + 9),
    # the oracle on RULER-HQA's 3 (3), the full context there and on LongBench-QA (3 + 5) and
    # the trained agent question-blind on RULER-HQA's 3 (3), again at a second sampling seed (3),
    # and question-aware on MemoryAgentBench's RULER-QA source (1)
    assert len(files) == 37 + 1 + 6 + 1 + (4 + 3) + 3 + 4 + 3 + 3 + 1
    assert len(metrics) == 147 + 7 + 22 + 2 + (22 + 15) + 3 + 8 + 3 + 3 + 1
    assert {m["benchmark"] for m in metrics} == {
        "ruler_hqa",
        "ruler",
        "longbench",
        "memalpha",
        "mab",
        "ruler_hqa_probe",
    }
    probe = {m["task"] for m in metrics if m["benchmark"] == "ruler_hqa_probe"}
    assert probe == {"p0_100", "p40_60"}
    assert {m["task"] for m in metrics if m["benchmark"] == "longbench"} == {
        "2wikimqa",
        "hotpotqa",
        "musique",
        "narrativeqa",
        "qasper",
        "gov_report",
        "qmsum",
    }
    systems = {m["system"] for m in metrics}
    assert {"tiny-instruct-direct", "rag-tiny.bm25-k2-doc", "rag-tiny.dense-k2-c64"} <= systems
    summary = next(
        m for m in metrics if m["task"] == "gov_report" and m["system"] == "rl-memagent-tiny"
    )
    assert {"rouge_1_recall", "rouge_l_f"} <= set(summary)


def test_smoke_rebuilds_the_released_keyword_golds_from_the_original_summaries(smoke):
    results = smoke / "results/smoke"
    booksum = read_jsonl(results / "keywords/booksum.jsonl")
    assert [(r["split"], r["original"]) for r in booksum] == [
        ("train", "booksum_chapters.parquet#0"),
        ("memalpha", "booksum_chapters.parquet#0"),
    ]
    [lru] = read_jsonl(results / "keywords/infbench_sum_eng_shots2.jsonl")
    assert lru["released"] == ["Lio", "ferryman", "salt", "boat", "town"]
    assert isinstance(lru["rebuilt"], list) and 0 <= lru["jaccard"] <= 1
    table = (results / "tables/memalpha_keywords.md").read_text()
    assert "| infbench_sum_eng_shots2 (MemoryAgentBench) | 1 | 1 of 1 |" in table
    assert "> Machinery check only" in table  # the tiny model's keywords


def test_smoke_runs_memalpha_memorisation_then_qa_on_every_source(smoke):
    results = smoke / "results/smoke/eval"
    for benchmark, n_sources in (("memalpha", 7), ("mab", 9)):
        lines = (results / f"{benchmark}/memalpha-tiny/0.memories.jsonl").read_text().splitlines()
        memories = [json.loads(line) for line in lines]
        assert len(memories) == n_sources  # the fixtures hold one instance per source
        assert all(len(m["steps"]) == m["n_calls"] >= 1 and not m["failed"] for m in memories)
        assert all(set(m["memory"]) == {"core", "semantic", "episodic"} for m in memories)
        metrics = json.loads((results / f"{benchmark}/memalpha-tiny/0.metrics.json").read_text())
        assert len(metrics) == n_sources and all(m["n_items"] == 1 for m in metrics)
        assert all(m["mean_memory_tokens"] is not None for m in metrics)
    lines = (results / "mab/mem1-tiny/0.memories.jsonl").read_text().splitlines()
    mem1 = [json.loads(line) for line in lines]  # MEM1: its summary, one per instance
    assert len(mem1) == 9 and all(m["n_calls"] >= 1 and not m["failed"] for m in mem1)


def test_smoke_runs_every_system_on_ones_own_data(smoke):
    from memrepro.config import eval_systems, is_variant

    results = smoke / "results/smoke"
    systems = eval_systems(load_config([smoke / "config/smoke.yaml"]))
    with open(results / "tables/custom_example.csv") as handle:
        rows = list(csv.DictReader(handle))
    # every system but the variants (memory ablation, seed repeats), the oracle (one's own rows
    # mark no evidence) and the question-aware MemAgent (on rows, its model's default), RAG with
    # both units of its grid
    assert {row["system_id"] for row in rows} == {
        sid
        for sid, spec in systems.items()
        if not is_variant(spec) and spec["kind"] != "oracle" and not spec.get("question_aware")
    }
    assert {row["label"] for row in rows} == {"long_qa", "minutes", "Avg.", "Mem. (K)"}
    scores = [row for row in rows if row["label"] != "Mem. (K)"]
    assert all(0.0 <= float(row["ours"]) <= 100.0 and row["ci_high"] for row in scores)
    metrics = json.loads((results / "eval/custom/memalpha-tiny/example.metrics.json").read_text())
    long_qa = next(m for m in metrics if m["task"] == "long_qa")
    assert long_qa["n_items"] == 3 and long_qa["n_questions"] == 8  # 3 contexts, 8 questions
    checked = (results / "data/custom/minutes.jsonl").read_text().splitlines()
    assert json.loads(checked[0])["metric"] == "rouge"
    # a prediction is found by the user's own id (an instance by its first row's)
    own = read_jsonl(results / "data/custom/long_qa.jsonl")
    agent = read_jsonl(results / "eval/custom/rl-memagent-tiny/example.predictions.jsonl")
    assert [p["id"] for p in agent if p["task"] == "long_qa"] == [row["id"] for row in own]
    assert agent[0]["task_label"] == own[0]["task_label"] == "history"  # the user's `task`
    grouped = read_jsonl(results / "eval/custom/memalpha-tiny/example.predictions.jsonl")
    assert all(
        p["instance_id"] in {row["id"] for row in own} for p in grouped if p["task"] == "long_qa"
    )
    # MemAgent keeps a memory: its Mem. column is filled, as Mem-α's
    memory = {row["system_id"]: row["ours"] for row in rows if row["label"] == "Mem. (K)"}
    assert (
        memory["rl-memagent-tiny"]
        and memory["memalpha-tiny"]
        and not memory["tiny-instruct-direct"]
    )
    # the second named config wrote its own evaluation and table beside the example's
    with open(results / "tables/custom_minutes_only.csv") as handle:
        second = list(csv.DictReader(handle))
    assert {(row["system_id"], row["label"]) for row in second} >= {
        ("tiny-instruct-direct", "minutes")
    }
    direct = results / "eval/custom/tiny-instruct-direct"
    assert sorted(p.name for p in direct.glob("*.metrics.json")) == [
        "example.metrics.json",
        "minutes_only.metrics.json",
    ]
    # the same rows and prompts, item by item, as their digests say
    again = read_jsonl(direct / "minutes_only.predictions.jsonl")
    first = [p for p in read_jsonl(direct / "example.predictions.jsonl") if p["task"] == "minutes"]
    sent = ("index", "row_sha256", "prompt_sha256")
    assert [[p[k] for k in sent] for p in again] == [[p[k] for k in sent] for p in first] != []


def test_memrepro_cost_after_the_run_finds_what_every_job_of_the_target_used(smoke):
    done = subprocess.run(
        [sys.executable, "-m", "memrepro.cost", "--actual", "results/smoke", "--json", "table3"],
        cwd=smoke,
        env=snakemake_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]  # (the Snakefile's default: the smoke config)
    rows = {row["rule"]: row for row in json.loads(done.stdout)["rows"]}
    assert "table3" not in rows  # a target gathers files: nothing ran for it
    for rule in ("train_stage1", "train_stage2", "evaluate", "make_table"):
        assert rows[rule]["ran"] == rows[rule]["jobs"] > 0, rule
    assert rows["evaluate"]["wall_h"] > 0 and rows["evaluate"]["actual_gpu_h"] == 0  # CPU


def test_smoke_reports_are_byte_for_byte_the_recorded_ones(smoke, repo):
    """Every table, figure, claims file, case study and the reproduction report of the smoke run
    is byte for byte the recorded one (tests/golden/smoke_reports.json, footnotes' commit and
    invocation masked) wherever its job read the same as then: report code that changes a number
    or a word fails here; a change meant to re-records it (docs/running.md)."""
    recorded = json.loads((repo / "tests/golden/smoke_reports.json").read_text())
    found = compare(recorded, report_jobs(smoke / "results/smoke"))
    assert found["differ"] == [] and found["missing"] == [], found
    # jobs whose inputs changed are not compared (Figure 10's measured times, always; the
    # evaluations, on a CPU where the tiny model answers otherwise); none compared: re-record
    assert found["same"], f"no report job read what was recorded: {found['not_compared']}"


def test_smoke_figures_exist_as_png_and_pdf(smoke):
    figures = smoke / "results/smoke/figures"
    for name in (
        "figure1",
        "figure5",
        "figure_ood",
        "figure6",
        "figure7",
        "figure8",
        "figure9",
        "figure10",
        "memalpha_frontier",
        "training_rl-memagent-tiny",
        "training_memalpha-tiny-grpo",
    ):
        assert (figures / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (figures / f"{name}.pdf").read_bytes()[:5] == b"%PDF-"
    from PIL import Image

    from memrepro.report.plots import CLIPPED_KEY

    for png in figures.glob("*.png"):  # every figure's text inside its canvas, as laid out
        with Image.open(png) as image:
            assert CLIPPED_KEY not in image.text, (png.name, image.text[CLIPPED_KEY])


def test_smoke_case_studies_trace_the_memory_of_chosen_samples(smoke):
    studies = smoke / "results/smoke/case_studies"
    hqa = (studies / "ruler_hqa/rl-memagent-tiny/50.md").read_text()  # doc-id rows, 2 shards
    assert hqa.count("## hqa · sample") == 2 and "Gold evidence in:" in hqa
    read = re.findall(r"\*\*Chunks:\*\* (\d+) of (\d+) read", hqa)
    assert len(read) == 2 and all(a == b != "0" for a, b in read)  # rebuilt as the run cut them
    niah = (studies / "ruler/rl-memagent-tiny/1024.html").read_text()
    assert niah.count("sample 0") >= 1 and "sample 1" in niah and "<html" in niah


def test_smoke_stage2_mixes_docqa_with_stage1_rows(smoke):
    lines = (smoke / "results/smoke/data/stage2/train.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    sources = {row["data_source"] for row in rows}
    assert len(rows) == 10 and "ruler_hqa" in sources and len(sources) > 1


def test_smoke_records_one_mlflow_child_run_per_job(smoke):
    results = smoke / "results/smoke"
    db = sqlite3.connect(results / "mlflow.db")
    runs = dict(db.execute("select run_uuid, name from runs"))
    tags = {}
    for run, key, value in db.execute("select run_uuid, key, value from tags"):
        tags.setdefault(run, {})[key] = value
    parents = [r for r in runs if "memrepro.invocation.parent" in tags[r]]
    # the smoke DAG's invocation, then the own-data example's and a second config's (target custom)
    assert len(parents) == 3 and sum(runs[r].endswith(" custom") for r in parents) == 2
    [parent] = [r for r in parents if not runs[r].endswith(" custom")]
    children = [r for r in runs if tags[r].get("mlflow.parentRunId") == parent]
    rules = sorted(tags[r]["rule"] for r in children)
    # 66 evaluation jobs: 53 score themselves, 13 (RULER-HQA and the probe from 20 docs) run in 2
    # shards each; 11 (Mem-α on its two sets and RULER-HQA's three lengths, after GRPO on both
    # sets, MemAgent on MAB and question-aware on its RULER-QA source, MEM1 on MAB and 10 docs)
    # read what 11 memorize jobs wrote; a 12th memorises Table 5's example, found in the full set
    assert rules.count("evaluate") == 53 and rules.count("evaluate_shard") == 26
    assert rules.count("merge_eval") == 13 and rules.count("memorize") == 12
    assert rules.count("memalpha_example") == 1
    assert rules.count("probe_set") == 2
    # rescored: the trained agent's RULER-HQA by the whole reply (3), Mem-α on MAB under the
    # baselines' protocol and by the second judge; both judges' leniency probes
    assert rules.count("rescore") == 5 and rules.count("judge_probe") == 2
    assert rules.count("train_memalpha") == 1
    assert rules.count("download_model") == 2 and rules.count("synthesize_ruler") == 11
    every_record = list(results.glob("logs/**/*.provenance.jsonl"))
    own_data = [r for r in every_record if re.search(r"custom|long_qa|minutes", r.as_posix())]
    records = [r for r in every_record if r not in own_data]
    # the example: 2 copies, 2 checks, 16 evaluations, 3 memorize jobs, its table; the second
    # config: 1 evaluation (the copy and check of its dataset are the example's), its table
    assert len(own_data) == 24 + 2
    assert len(children) == len(runs) - 3 - len(own_data) == len(records) == 230  # all but `all`
    readme = docs_text(Path(__file__).resolve().parents[1])
    # the README's smoke job count: the quickstart, the speed table, what was verified
    assert readme.count(f"{len(records) + 1} jobs") == 3
    for run in children:
        for key in ("git.commit", "git.dirty", "config.hash", "snakemake.version", "host"):
            assert tags[run][key], key
    evaluation = next(r for r in children if tags[r]["rule"] == "evaluate")
    assert "#### Outputs" in tags[evaluation]["mlflow.note.content"]
    metric_keys = {
        k for (k,) in db.execute("select key from metrics where run_uuid=?", (evaluation,))
    }
    assert {"job.wall_s", "job.peak_rss_mb"} <= metric_keys
    assert any(key.endswith(".accuracy") for key in metric_keys)  # per task


def planned_jobs(output: str) -> list[tuple[str, set[str], set[str]]]:
    """(rule, inputs, outputs) of each job a dry run prints."""
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:\n)", output):
        if rule := re.match(r"(?:local)?rule (\w+):\n", block):
            fields = {
                name: set(m[1].split(", ")) if (m := re.search(rf"^ +{name}: (.*)$", block, re.M))
                else set()
                for name in ("input", "output")
            }  # fmt: skip
            jobs.append((rule[1], fields["input"], fields["output"]))
    return jobs


def test_every_jobs_record_names_exactly_the_inputs_snakemake_gave_it(smoke):
    """What a job reads (its Snakemake inputs, NAME=PATH models, Figure 10's model shapes and
    timing files, the paper's numbers) is what its provenance record digests: none missing, none
    extra, for every job of the smoke DAG."""
    from memrepro.tracking.results_dir import records_under

    plan = snakemake("--profile", "profiles/smoke", "-n", "-F", "all", cwd=smoke)
    assert plan.returncode == 0, plan.stderr[-3000:]
    writers = {}
    for record in records_under((smoke / "results/smoke").resolve()):
        writers |= dict.fromkeys(record.get("outputs", {}), record)
    checked, differ = 0, []
    for rule, inputs, outputs in planned_jobs(plan.stdout):
        if rule == "all":
            continue
        [record] = {id(w): w for o in outputs if (w := writers.get(str(smoke / o)))}.values()
        recorded = set(record["inputs"])
        planned = {str(smoke / path) for path in inputs}
        if recorded != planned:
            differ.append((rule, sorted(planned - recorded), sorted(recorded - planned)))
        checked += 1
    assert checked == 230 and differ == []


def test_smoke_lineage_leads_from_table3_to_the_checkpoint_and_the_base_model(smoke):
    done = subprocess.run(
        ["memrepro", "lineage", "--json", "results/smoke/tables/table3.md"],
        cwd=smoke,
        env=snakemake_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    graph = json.loads(done.stdout)
    jobs = {job["name"]: job for job in graph["jobs"].values()}
    stage2 = jobs["train_stage2 rl-memagent-tiny"]
    assert "train_stage1 rl-memagent-tiny" in jobs
    assert "download_model tiny-instruct" in jobs
    # the checkpoint as its reader recorded it (after Snakemake marked the directory) is the
    # content its producer wrote
    checkpoint = str(smoke / "results/smoke/checkpoints/rl-memagent-tiny/stage2")
    readers = [job for job in jobs.values() if checkpoint in job["inputs"]]
    assert len(readers) == 2  # the agent's evaluation and its own closed-book's
    for reader in readers:
        assert graph["jobs"][reader["inputs"][checkpoint]["producer"]] == stage2
    assert (
        smoke / "results/smoke/checkpoints/rl-memagent-tiny/stage2/.snakemake_timestamp"
    ).exists()
    assert set(graph["runs"]) >= set(graph["jobs"])  # each job's MLflow run, once loaded
    assert {Path(p).name for p in graph["sources"]} == {"memagent.yaml"}  # the paper's numbers


def test_smoke_reproduction_report_shows_every_table_figure_and_claim(smoke):
    results = smoke / "results/smoke"
    report = (results / "reproduction.md").read_text()
    # the own-data example's table is its own target's, not `all`'s
    tables = sorted(
        t for t in (results / "tables").glob("*.md") if not t.stem.startswith("custom_")
    )
    figures = sorted((results / "figures").glob("*.png"))
    assert len(tables) == 30 and len(figures) == 11  # both papers' tables; 9 figures, 2 curves
    for table in tables:
        assert f'### <a id="table-{table.stem}"></a>[{table.stem}](tables/{table.name}): ' in report
        assert f"- Lineage: `memrepro lineage results/smoke/tables/{table.name}`" in report
    for figure in figures:
        assert f"- [{figure.stem}](figures/{figure.name}): " in report
    claims = [json.loads(p.read_text()) for p in results.glob("*/*.claims.json")]
    checks = sum(len(c) for c in claims)
    assert checks and sum(report.count(f"\n- [{outcome}] ") for outcome in OUTCOMES) == checks
    assert (results / "reproduction.html").read_text().count("<img ") == len(figures)
    assert "failure_patterns" in report and "## Training curves" in report
    # a random tiny model reproduces nothing, and every page says so first
    assert report.splitlines()[2].startswith("> Machinery check only: ")
    assert "cells reproduced" not in report and "\n- [holds] " not in report
    banner = {t.stem for t in tables if t.read_text().splitlines()[2].startswith("> Machinery")}
    outputs = {"table1", "table2", "table3", "table4", "memalpha_table1", "memalpha_table2"}
    outputs.add("memalpha_keywords")  # the tiny model's keywords
    assert outputs <= banner  # the models' outputs; the data sets' statistics stay comparable
    assert "memalpha_table6" not in banner
    # every judged cell with its p and q: none here, since none is comparable
    from memrepro.report.reproduction import CELL_COLUMNS

    judged = (results / "reproduction.cells.csv").read_text().splitlines()
    assert judged == [",".join(CELL_COLUMNS)]


def test_smoke_run_is_summarised_in_run_json_and_pipeline_info(smoke):
    """Every job of the run (smoke DAG and own-data example) once in the trace, finished; the
    summary names the last invocation and holds every claim check the figures and tables wrote."""
    results = smoke / "results/smoke"
    with open(results / "pipeline_info/trace.tsv", newline="") as handle:
        trace = list(csv.DictReader(handle, delimiter="\t"))
    # a rerun job's earlier records are kept beside its newest (another file, the same log)
    logs = {read_record(path)["log"] for path in (results / "logs").rglob(f"*{RECORD_SUFFIX}")}
    assert len(trace) == len(logs) and {row["status"] for row in trace} == {"FINISHED"}
    benchmarks = list((results / "benchmarks").rglob("*.tsv"))
    assert sum(row["cpu_s"] != "" for row in trace) == len(benchmarks)
    summary = json.loads((results / "run.json").read_text())
    assert summary["invocation"]["targets"] == "custom" and summary["run"] == "smoke"
    claims = sum(len(json.loads(p.read_text())) for p in results.glob("*/*.claims.json"))
    assert len(summary["claims"]) == claims
    [timeline] = (results / "pipeline_info").glob(f"timeline_{summary['invocation']['id']}.html")
    custom = sum(row["invocation"] == summary["invocation"]["id"] for row in trace)
    assert custom > 0 and timeline.read_text().count("<rect ") == custom


def test_smoke_rerun_is_up_to_date_and_one_target_reruns_alone(smoke, exited_pid):
    """A no-op rerun also runs the end steps a killed invocation left (Snakemake calls no
    handler when nothing is to be done); a dry run only says they wait."""
    from memrepro.tracking.invocation import END_PENDING

    mark = smoke / "results/smoke/provenance" / END_PENDING
    killed = {"host": socket.gethostname(), "pid": exited_pid, "started": 1}
    mark.write_text(json.dumps({"invocation": "20261202T000000-killed", "process": killed}))
    dry = snakemake("--profile", "profiles/smoke", "-n", cwd=smoke)
    said = dry.stdout + dry.stderr  # a dry run logs to stdout
    assert "invocation 20261202T000000-killed was killed while it wrote run.json" in said
    assert mark.is_file() and "provenance → " not in said  # a dry run loads nothing
    again = snakemake("--profile", "profiles/smoke", cwd=smoke)
    assert again.returncode == 0 and "Nothing to be done" in again.stderr + again.stdout
    assert "provenance → " in again.stderr and not mark.exists()  # loaded at its exit
    (smoke / "results/smoke/tables/table1.csv").unlink()
    table = snakemake("--profile", "profiles/smoke", "table1", cwd=smoke)
    assert table.returncode == 0, table.stderr
    assert job_counts(table.stdout + table.stderr) == {"make_table": 1, "table1": 1, "total": 2}


def test_a_second_run_beside_a_live_one_is_named_and_a_dry_run_still_plans(smoke):
    """A live run holds the locks and writes results/smoke (this test process stands in): a
    second real run into it stops with one sentence, never suggesting --unlock; a dry run,
    which takes no lock, plans as usual."""
    from memrepro import locks

    lock_dir = smoke / locks.LOCK_DIR
    planted = [lock_dir / "0.input.lock", lock_dir / f"{locks.HOLDER_PREFIX}test.json"]
    lock_dir.mkdir(parents=True, exist_ok=True)
    began = "2026-12-06 21:40:00 UTC"
    live = {**locks.process_identity(), "locks": ["0.input.lock"], "began": began,
            "results": "results/smoke", "targets": ["table3"]}  # fmt: skip
    try:
        planted[0].write_text("results/smoke/tables/table3.csv\n")
        planted[1].write_text(json.dumps(live))
        second = snakemake("--profile", "profiles/smoke", "table1", cwd=smoke)
        said = second.stdout + second.stderr
        assert second.returncode != 0
        assert f"A live run is writing results/smoke: pid {os.getpid()} on " in said
        assert "--config run=NAME" in said and "unlock" not in said.lower()
        dry = snakemake("--profile", "profiles/smoke", "-n", "table1", cwd=smoke)
        assert dry.returncode == 0, dry.stderr
    finally:
        for path in planted:
            path.unlink(missing_ok=True)


def test_smoke_reruns_a_job_whose_settings_changed(smoke):
    from memrepro.config import ENV_OVERRIDES

    overrides = {ENV_OVERRIDES: json.dumps({"evaluation.allow_failures": 0.5})}
    changed = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--profile", "profiles/smoke", "table3"],
        cwd=smoke,
        env={**snakemake_env(), **overrides},
        capture_output=True,
        text=True,
        check=False,
    )
    assert changed.returncode == 0, changed.stderr
    assert "Params have changed since last execution" in changed.stdout
    assert job_counts(changed.stdout)["evaluate"] > 0


def test_smoke_html_report_builds(smoke):
    done = snakemake("--profile", "profiles/smoke", "--report", "report.zip", cwd=smoke)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (smoke / "report.zip").stat().st_size > 10_000


@pytest.mark.parametrize(
    ("switches", "planned", "absent"),
    [
        ({}, {"official_eval_set", "filter_questions"}, {"synthesize_eval"}),
        (
            {"ruler_hqa.eval_sets": "synthesized"},
            {"synthesize_eval", "filter_questions"},
            {"official_eval_set"},
        ),
        ({"ruler_hqa.questions": "official"}, {"official_questions"}, {"filter_questions"}),
    ],
)
def test_the_data_switches_plan_the_released_files_or_our_builds(
    repo, tmp_path, switches, planned, absent
):
    """ruler_hqa.questions / eval_sets on the smoke config (filtered questions, the released
    sets in miniature): each picks the job that writes the same file."""
    copy_workflow(repo, tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--profile", "profiles/smoke", "all"],
        cwd=tmp_path,
        env={**snakemake_env(), ENV_OVERRIDES: json.dumps(switches)},  # as ./pipeline --config
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    counts = set(job_counts(done.stdout))
    assert planned <= counts and not absent & counts


def test_the_readmes_one_command_jobs_plan_as_they_say(repo):
    """Each command of the README's table, as a dry run: the released checkpoints' Table 3 plans
    no training on either profile; `all` trains."""
    readme = (repo / "README.md").read_text()
    commands = re.findall(r"\| `(\./pipeline [^`]+)` \|", readme)
    assert len(commands) == 3, commands
    local = next(c for c in commands if "profile local" in c)
    commands.append(f"{local} --resources gpu=2")  # "at least 2 GPUs": two suffice
    for command in commands:
        args = command.split()[1:]
        env = {**snakemake_env(), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
        done = subprocess.run(
            [sys.executable, "-m", "memrepro.launch", "-n", *args],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, (command, done.stderr[-2000:])
        counts = job_counts(done.stdout)
        assert ("train_stage1" in counts) == (args[2:] == ["all"]), command


def readme_dry_run(repo: Path, start: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """The docs' command line that begins with the pattern `start` (the README and docs/ pages
    may both give it: the same line), run (a dry run)."""
    found = set(re.findall(rf"^({start}.+)$", docs_text(repo), re.MULTILINE))
    [command] = found
    done = subprocess.run(
        [sys.executable, "-m", "memrepro.launch", *command.split()[1:], *extra],
        cwd=repo,
        env=snakemake_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_the_readmes_own_data_example_plans_every_paper_system(repo):
    """The README's paper-scale command for one's own data, as a dry run: a job of both datasets
    for every system of both papers (the memorizing kinds: a memorize job first)."""
    from memrepro import config as cfg

    done = readme_dry_run(repo, r"\./pipeline custom -n --profile slurm ")
    counts = job_counts(done.stdout)
    config = load_config([repo / "config/config.yaml", repo / "examples/custom/config.yaml"])
    systems = cfg.eval_systems(config)
    jobs = [job for job in cfg.eval_jobs(config, systems) if job.benchmark == "custom"]
    assert {job.system for job in jobs} == {
        s
        for s, spec in systems.items()
        if not cfg.is_variant(spec) and spec["kind"] != "oracle" and not spec.get("question_aware")
    }
    memorized = [job for job in jobs if cfg.memorizes(systems[job.system], "custom")]
    assert counts["custom_set"] == 2 and counts["memorize"] == len(memorized) >= 8
    assert counts["evaluate"] == len(jobs) > 40 and "train_stage1" in counts


def test_the_readmes_keyword_rebuild_plans_both_sources_on_the_hosted_model(repo):
    """The README's paper-scale keyword rebuild (Mem-α's Figure 4), as a dry run: one job per
    data source on GPT-4.1 through the API (no GPU), BookSum against train and validation."""
    done = readme_dry_run(repo, r"\./pipeline memalpha_keywords -n ", "-p")
    counts = job_counts(done.stdout)
    assert counts["rebuild_keywords"] == 2 and counts["make_table"] == 1
    assert counts["download_model"] == 1  # gpt-4.1: its tokenizer only
    resources = re.findall(r"rule rebuild_keywords:.*?resources: ([^\n]*)", done.stdout, re.S)
    assert len(resources) == 2 and all("gpu=0" in r and "partition=cpu" in r for r in resources)
    [booksum] = [
        line
        for line in done.stdout.splitlines()
        if "keywords/booksum.jsonl" in line and "--released" in line
    ]
    assert "memalpha_train.parquet" in booksum and "memalpha_validation.parquet" in booksum
    assert "booksum_chapters_test.parquet" in booksum
    settings = planned_settings(done.stdout, repo)
    assert '"model": "gpt-4.1"' in settings and '"kind": "openai"' in settings


def _verify_copy(smoke: Path, dest: Path) -> Path:
    """The smoke run, its job settings and the paper's numbers, copied where `memrepro verify`
    reads them (no MLflow)."""
    unloaded = shutil.ignore_patterns("mlartifacts", "mlflow.db")
    shutil.copytree(smoke / "results/smoke", dest / "results/smoke", symlinks=True, ignore=unloaded)
    shutil.copytree(smoke / ".snakemake/memrepro/settings", dest / ".snakemake/memrepro/settings")
    shutil.copytree(smoke / "config/paper", dest / "config/paper")
    return dest / "results/smoke"


def _forge(run: Path, rel: str, edit, workdir: bool = False) -> None:
    """Edit a file of the run (or, with `workdir`, of the workflow) and every record's digest of
    it, as a careful forger would: only the numbers derived again can tell."""
    from memrepro.digests import file_digest

    named = rel if workdir else f"results/smoke/{rel}"
    path = run.parent.parent / named
    old = file_digest(path)
    path.write_text(edit(path.read_text()))
    for record in run.glob(f"logs/**/*{RECORD_SUFFIX}"):
        if f'"{named}": "{old}"' in (text := record.read_text()):
            record.write_text(
                text.replace(f'"{named}": "{old}"', f'"{named}": "{file_digest(path)}"')
            )


def _cell(line: int, column: str, value: str):
    """An edit of one CSV cell (line 1 is the header)."""

    def edit(text):
        rows = list(csv.DictReader(io.StringIO(text)))
        rows[line - 2][column] = value
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return out.getvalue()

    return edit


def _json(change):
    """An edit of a JSON file's value."""

    def edit(text):
        value = json.loads(text)
        change(value)
        return json.dumps(value)

    return edit


def _lines(edit):
    """An edit of a JSON-lines file's list of lines."""
    return lambda text: "".join(f"{line}\n" for line in edit(text.splitlines()))


def _line(number: int, **changes):
    def edit(lines):
        line = json.loads(lines[number - 1])
        lines[number - 1] = json.dumps(line | changes)
        return lines

    return _lines(edit)


def _metrics(change):
    def edit(text):
        records = json.loads(text)
        change(records[0])
        return json.dumps(records)

    return edit


def _settings(run: Path) -> None:
    for path in (run.parent.parent / ".snakemake/memrepro/settings").glob("*.json"):
        path.write_text(json.dumps(json.loads(path.read_text()) | {"tampered": True}))


PREDICTIONS = "eval/ruler/rl-memagent-tiny/1024.predictions.jsonl"
METRICS = "eval/ruler/rl-memagent-tiny/1024.metrics.json"
RESCORED = "rescore/whole-reply/ruler_hqa/rl-memagent-tiny/10.predictions.jsonl"
# Each tampering, and the difference `memrepro verify` must name first.
TAMPERINGS = {
    "a prediction's score": (
        lambda run: _forge(run, PREDICTIONS, _line(1, score=1.0, string_match=1.0)),
        r"1024\.predictions\.jsonl:1 \(item 0\) score: the run holds 1\.0, its files give 0\.0",
    ),
    "a prediction's answer": (
        lambda run: _forge(run, PREDICTIONS, _line(1, response="the answer is 2867825")),
        r"1024\.predictions\.jsonl:1 \(item 0\) \w+: the run holds",
    ),
    "a dropped item": (
        lambda run: _forge(run, PREDICTIONS, _lines(lambda lines: lines[1:])),
        r"1024\.metrics\.json: record 0 \(niah_single_1\) \w+",
    ),
    "a repeated item": (
        lambda run: _forge(run, PREDICTIONS, _lines(lambda lines: [lines[0], *lines])),
        r"1024\.metrics\.json: record 0 \(niah_single_1\) \w+",
    ),
    "a metric": (
        lambda run: _forge(run, METRICS, _metrics(lambda m: m.update(accuracy=m["accuracy"] + 10))),
        r"1024\.metrics\.json: record 0 \(niah_single_1\) accuracy: the run holds",
    ),
    "an interval": (
        lambda run: _forge(run, METRICS, _metrics(lambda m: m["ci95"]["accuracy"].reverse())),
        r"1024\.metrics\.json: record 0 \(niah_single_1\) ci95",
    ),
    "a count": (
        lambda run: _forge(run, METRICS, _metrics(lambda m: m["n_nonzero"].update(accuracy=7))),
        r"1024\.metrics\.json: record 0 \(niah_single_1\) n_nonzero",
    ),
    "a rescored score": (
        lambda run: _forge(run, RESCORED, _line(1, score=1.0)),
        r"whole-reply/ruler_hqa/rl-memagent-tiny/10\.predictions\.jsonl:1 \(item \w+\) score",
    ),
    "a file against its digest": (
        lambda run: (run / METRICS).write_text((run / METRICS).read_text() + " "),
        r"1024\.metrics\.json \(sha256\): the run holds 'sha256:",
    ),
    "a record's digest": (
        lambda run: _zero_digest(run, "tables/table3.csv"),
        r"table3\.csv \(sha256\): the run holds 'sha256:0{64}'",
    ),
    "a deleted output": (
        lambda run: (run / "figures/figure5.png").unlink(),
        r"figure5\.png \(sha256\): .*'no such file'",
    ),
    "a settings file": (_settings, r"its content is not the settings its name digests"),
    "a Mem-α question's score": (
        lambda run: _forge(run, INSTANCES, _line(1, scores=[1.0])),
        r"memalpha-tiny/0\.predictions\.jsonl:1 \(item 0\) scores: the run holds \[1\.0\]",
    ),
    "a swapped judge verdict": (  # the judge's reply says no (LongMemEval), the line says yes
        lambda run: _forge(run, INSTANCES, _line(3, scores=[1.0], score=1.0)),
        r"memalpha-tiny/0\.predictions\.jsonl:3 \(item 2\) score: the run holds 1\.0",
    ),
    "an own-data prediction's score": (
        lambda run: _forge(run, OWN_DATA, _line(1, score=1.0, sub_em=1.0)),
        r"tiny-instruct-direct/example\.predictions\.jsonl:1 \(item 0\) score",
    ),
    "a table cell": (
        lambda run: _forge(run, "tables/table1.csv", _cell(2, "ours", "55.0")),
        r"table1\.csv:2 \(RL-MemAgent-tiny \(trained here\), 10 docs\) ours: the run holds '55\.0'",
    ),
    "a paper number in a table": (
        lambda run: _forge(run, "tables/table1.csv", _cell(4, "paper", "99.9")),
        r"table1\.csv:4 \(RL-MemAgent-tiny \(trained here\), 50 docs\) paper: .* '99\.9'",
    ),
    "a verdict": (
        lambda run: _forge(run, "tables/memalpha_table6.csv", _cell(2, "verdict", "agrees")),
        r"memalpha_table6\.csv:2 \(SQuAD, Training Ins\.\) verdict: .* 'agrees', .* 'not sampled'",
    ),
    "a table's note": (
        lambda run: _forge(run, "tables/table1.md", lambda text: text + "All cells agree.\n"),
        r"table1\.md \(lines, footnote apart\)",
    ),
    "a paper number, the paper file's digest forged": (
        lambda run: _forge(run, PAPER, lambda t: t.replace("{50: 80.47", "{50: 88.47"), True),
        r"the run holds '[^']*80\.47[^']*', its files give '[^']*88\.47",
    ),
    "a paper file against its digest": (
        lambda run: (run.parent.parent / PAPER).write_text("{}\n"),
        r"config/paper/memagent\.yaml \(sha256\)",
    ),
    "a table's claim": (
        lambda run: _forge(run, "tables/memalpha_table2.claims.json", _json(_first("outcome"))),
        r"memalpha_table2\.claims\.json: claim 0 \(memory_half\) outcome: the run holds 'holds'",
    ),
    "a figure's claim": (
        lambda run: _forge(run, "figures/figure1.claims.json", _json(_first("outcome"))),
        r"figure1\.claims\.json: claim 0 \(extrapolate_under_10\) outcome",
    ),
    "a diagnosis": (
        lambda run: _forge(run, "reproduction.diagnoses.csv", _cell(2, "gap", "-1.0")),
        r"reproduction\.diagnoses\.csv:2 \(.*\) gap: the run holds '-1\.0'",
    ),
    "a judged cell added, with its q-value": (
        lambda run: _forge(run, "reproduction.cells.csv", lambda t: t + JUDGED_CELL),
        r"reproduction\.cells\.csv \(rows\): the run holds 1, its files give 0",
    ),
    "run.json's cell": (
        lambda run: _json_file(run / "run.json", lambda d: d["cells"][0].update(ours="9.9")),
        r"run\.json: cells\[0\] \(\w+\) ours: the run holds '9\.9'",
    ),
    "run.json's claim": (
        lambda run: _json_file(run / "run.json", lambda d: d["claims"][0].update(outcome="holds")),
        r"run\.json: claims\[0\] \(figure1\) outcome: the run holds 'holds'",
    ),
}
INSTANCES = "eval/mab/memalpha-tiny/0.predictions.jsonl"  # its line 3: LongMemEval, judged
OWN_DATA = "eval/custom/tiny-instruct-direct/example.predictions.jsonl"
PAPER = "config/paper/memagent.yaml"
JUDGED_CELL = "memagent,table1,RL-MemAgent-tiny (trained here),10 docs,agrees,cell,0.5,0.01\n"


def _first(key: str):
    """A change of the first claim's `key` to "holds"."""
    return lambda claims: claims[0].update({key: "holds"})


def _json_file(path: Path, change) -> None:
    path.write_text(_json(change)(path.read_text()))


def _zero_digest(run: Path, rel: str) -> None:
    """The digest its writer's record gives a file, replaced by zeros."""
    recorded = re.compile(rf'("results/smoke/{re.escape(rel)}": "sha256:)[0-9a-f]{{64}}')
    for record in run.glob(f"logs/**/*{RECORD_SUFFIX}"):
        record.write_text(recorded.sub(rf"\g<1>{'0' * 64}", record.read_text()))


def memrepro_verify(run: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memrepro.cli", "verify", str(run)],
        capture_output=True,
        text=True,
        check=False,
    )


def test_verify_passes_the_smoke_run_moved_elsewhere_and_says_what_it_left(smoke, tmp_path):
    done = memrepro_verify(_verify_copy(smoke, tmp_path))
    assert done.returncode == 0, done.stderr
    assert re.search(r"checked: \d{3,} files against their digests", done.stdout)
    assert re.search(r"checked: \d{3,} predictions scored again", done.stdout)
    assert re.search(r"checked: \d{2,} tables built again", done.stdout)
    assert "not re-derived by this version: the pixels of the figures" in done.stdout


def verify_here(run: Path) -> str:
    """`memrepro verify RUN` in this process (its imports paid once for every tampering): the
    sentence it exits with."""
    from memrepro.verify import main

    with pytest.raises(SystemExit) as exited:
        main([str(run)])
    return str(exited.value.code)


@pytest.mark.parametrize("tampering", TAMPERINGS)
def test_verify_names_each_tampering_first(smoke, tmp_path, tampering):
    tamper, named = TAMPERINGS[tampering]
    run = _verify_copy(smoke, tmp_path)
    tamper(run)
    said = verify_here(run)
    assert said.startswith("memrepro verify: ") and re.search(named, said), said


def _key_pair(folder: Path) -> tuple[Path, Path]:
    """An ed25519 key pair as PEM files (what `openssl genpkey -algorithm ed25519` writes)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private, public = folder / "key.pem", folder / "key.pub.pem"
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return private, public


def _unpacked(archive: Path, where: Path) -> Path:
    import tarfile

    with tarfile.open(archive) as tar:
        tar.extractall(where, filter="data")
    return where / "smoke-bundle/results/smoke"


def memrepro_tool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memrepro.cli", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
    )


def test_a_signed_bundle_verifies_elsewhere_and_a_wrong_key_or_an_edit_is_named(smoke, tmp_path):
    keys, other = tmp_path / "keys", tmp_path / "other"
    keys.mkdir(), other.mkdir()
    private, public = _key_pair(keys)
    stranger = _key_pair(other)[1]
    archive = tmp_path / "smoke.tar.gz"
    done = memrepro_tool("bundle", "results/smoke", str(archive), "--sign", str(private), cwd=smoke)
    assert done.returncode == 0, done.stderr
    assert re.search(
        r"\d+ files carried, \d+ referenced by digest and origin, [\d.]+ MiB", done.stdout
    )
    run = _unpacked(archive, tmp_path / "elsewhere")
    assert not (run / "mlflow.db").exists()  # the store: loaded again from the records
    left = json.loads((run.parent.parent / "bundle.json").read_text())["referenced"]
    raw = {path: entry for path, entry in left.items() if path.startswith("results/smoke/raw/")}
    assert raw and all(entry["origin"]["sha256"] for entry in raw.values())  # whence, pinned
    assert not any((run.parent.parent / path).is_file() for path in raw)
    checked = memrepro_tool("verify", str(run), "--key", str(public), cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert f"a bundle signed by the key in {public} (ed25519)" in checked.stdout
    assert re.search(
        r"files a bundle references by digest and origin \(models, data\) \(\d+\)", checked.stdout
    )
    wrong = memrepro_tool("verify", str(run), "--key", str(stranger), cwd=tmp_path)
    assert wrong.returncode == 1 and "bundle.sig: not a signature of bundle.json" in wrong.stderr
    (run / "tables/table1.md").write_text("edited\n")
    edited = memrepro_tool("verify", str(run), cwd=tmp_path)
    assert edited.returncode == 1 and "table1.md (sha256 in bundle.json)" in edited.stderr


def test_an_unsigned_bundle_says_so_and_refuses_a_key(smoke, tmp_path):
    archive = tmp_path / "smoke.tar.gz"
    assert memrepro_tool("bundle", "results/smoke", str(archive), cwd=smoke).returncode == 0
    run = _unpacked(archive, tmp_path / "elsewhere")
    checked = memrepro_tool("verify", str(run), cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert "an unsigned bundle: who made it is not checked" in checked.stdout
    public = _key_pair(tmp_path)[1]
    keyed = memrepro_tool("verify", str(run), "--key", str(public), cwd=tmp_path)
    assert keyed.returncode == 1 and "the bundle is unsigned (no bundle.sig)" in keyed.stderr


def test_the_run_is_a_provenance_run_crate_that_the_ro_crate_library_reads_back(smoke):
    from rocrate.rocrate import ROCrate

    from memrepro.tracking.pipeline_info import newest_records
    from memrepro.tracking.results_dir import records_under

    results = smoke / "results/smoke"
    crate = ROCrate(results)
    profiles = {profile.id for profile in crate.root_dataset["conformsTo"]}
    assert "https://w3id.org/ro/wfrun/provenance/0.6" in profiles
    workflow = crate.mainEntity
    assert "ComputationalWorkflow" in workflow.type and workflow.id.endswith("workflow/Snakefile")
    assert workflow["programmingLanguage"]["name"] == "Snakemake"
    # the DAG's jobs as their records give them: one action each, its rule the tool and the step
    records = newest_records(records_under(results))
    steps = {step["workExample"].id for step in workflow["step"]}
    assert steps == {f"#rule-{record['rule']}" for record in records}
    for record in records:
        action = crate.get(f"#job-{record['record']}")
        assert (
            action.type == "CreateAction" and action["instrument"].id == f"#rule-{record['rule']}"
        )
        made = {entity.id.rstrip("/"): entity for entity in action.get("result", [])}
        expected = {os.path.relpath(path, results): d for path, d in record["outputs"].items()}
        assert set(made) == set(expected), record["path"]
        for name, digest in expected.items():
            assert made[name]["sha256"] == digest.removeprefix("sha256:")
            if (results / name).is_file():
                assert made[name]["contentSize"] == (results / name).stat().st_size
    paper = crate.get("pipeline_info/workflow/config/paper/memagent.yaml")
    assert paper["sha256"] == file_digest(smoke / "config/paper/memagent.yaml").removeprefix(
        "sha256:"
    )
    run = [a for a in crate.root_dataset["mentions"] if a.id.startswith("#run-")]
    assert len(run) == 1 and run[0]["instrument"].id == workflow.id


def _official_memagent(predictions: Path, out: Path, n_docs: int, reply=None) -> Path:
    """Our predictions as MemAgent's ruler_hqa.py writes its lines: the row without its context,
    `_id`, the raw `response`, `pred` and its `judge_*` scores (`reply`: another response)."""
    with out.open("w") as handle:
        for i, line in enumerate(read_jsonl(predictions)):
            response = reply(line) if reply else line["response"]
            official = {k: line[k] for k in ("input", "answers", "index")}
            official |= {"num_docs": n_docs, "_id": i, "response": response, "pred": line["pred"]}
            official |= {f"judge_{k}": line[k] for k in ("f1", "em", "sub_em")}
            handle.write(json.dumps(official) + "\n")
    return out


def _official_memalpha(predictions: Path, out: Path) -> Path:
    """Our instances as Mem-α's main.py leaves them: <index>/results.json, data_instance_info."""
    for line in read_jsonl(predictions):
        folder = out / str(line["index"])
        folder.mkdir(parents=True)
        asked = zip(line["questions"], line["responses"], line["answers"], strict=True)
        results = [{"question": q, "response": r, "answer": a} for q, r, a in asked]
        (folder / "results.json").write_text(json.dumps(results))
        (folder / "data_instance_info.json").write_text(json.dumps({"data_source": line["task"]}))
    return out


def _table_cells(table: Path, system: str) -> list[tuple]:
    """A table CSV's evaluation cells of one system: ours, interval, paper, verdict, word."""
    rows = csv.DictReader(io.StringIO(table.read_text()))
    numbers, words = ("ours", "ci_low", "ci_high", "paper"), ("verdict", "field_verdict")
    return [
        (*(float(row[k]) if row[k] else None for k in numbers), *(row[k] or None for k in words))
        for row in rows
        if row["system_id"] == system and row["source_task"]
    ]


def _their_cells(found: dict) -> list[tuple]:
    return [
        (
            c["ours"],
            *(c["interval"] or (None, None)),
            c["paper"],
            c["verdict"],
            c["field_verdict"] or None,
        )
        for c in found["cells"]
    ]


def test_someone_elses_predictions_in_the_official_formats_earn_the_runs_own_cells(
    smoke, tmp_path, capsys
):
    """The run's own predictions, written as MemAgent's and Mem-α's official scripts write
    theirs, are matched to the released set and give the run's cells back; right answers move
    ours; a missing item or a judged question without a judge is one sentence, rc 1."""
    from memrepro.verify import predictions as tool

    results = smoke / "results/smoke"
    run = ["--run", str(results)]

    def verified(*args: str) -> dict:
        tool.main([*args, *run, "--json"])
        return json.loads(capsys.readouterr().out)

    ours = results / "eval/ruler_hqa/rl-memagent-tiny/50.predictions.jsonl"
    official = _official_memagent(ours, tmp_path / "rl.jsonl", 50)
    hqa = ("--benchmark", "ruler_hqa", "--length", "50", "--system", "rl-memagent-tiny")
    found = verified(str(official), *hqa)
    assert found["format"] == "memagent" and found["items"] == len(read_jsonl(ours))
    assert found["agreement"].startswith("the file's own scores agree with ours on all")
    assert (
        _their_cells(found) == _table_cells(results / "tables/table1.csv", "rl-memagent-tiny")[2:3]
    )
    right = _official_memagent(
        ours, tmp_path / "right.jsonl", 50, lambda line: f"So the answer is {line['answers'][0]}"
    )
    [cell] = verified(str(right), *hqa)["cells"]
    assert cell["ours"] == 100.0 and cell["field_verdict"] == "toy"  # the row's model is tiny
    official.write_text("".join(official.read_text().splitlines(keepends=True)[1:]))
    with pytest.raises(SystemExit, match=r"1 of the released set's \d+ items has no prediction"):
        tool.main([str(official), *hqa, *run])

    mab = results / "eval/mab/memalpha-tiny/0.predictions.jsonl"
    agents = _official_memalpha(mab, tmp_path / "agents")
    asked = ("--benchmark", "mab", "--system", "memalpha-tiny")
    with pytest.raises(SystemExit, match="LongMemEval's questions are judged by a model"):
        tool.main([str(agents), *asked, *run])
    judge = ("--judge-model", str(results / "models/tiny-instruct"))
    found = verified(str(agents), *asked, *judge)
    assert found["format"] == "memalpha"
    assert _their_cells(found) == _table_cells(
        results / "tables/memalpha_table2.csv", "memalpha-tiny"
    )
    own = verified(str(mab), *asked)  # ours: the judge's replies read from the lines
    assert own["format"] == "memrepro" and own["cells"] == found["cells"]
