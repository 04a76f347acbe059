"""The verl launch, without verl: settings -> Hydra overrides, the Ray launcher, checkpoints.

verl itself checks these overrides in tests/verl/test_verl_config.py (its own environment).
"""

from __future__ import annotations

import copy
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memrepro.config import load_yaml, memalpha_train_settings, train_settings
from memrepro.verl import AGENT_NAME, MEMALPHA_AGENT_NAME, PACKAGE_DIR, REWARD_NAME
from memrepro.verl.checkpoints import latest_step, merge_command
from memrepro.verl.overrides import (
    MEMALPHA,
    SettingsError,
    VerlPaths,
    hydra_value,
    verl_command,
    verl_overrides,
)

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "workflow" / "scripts" / "ray_job.sh"
# the official run's verl-only settings (MemAgent's official code), used where config.yaml has
# no training.verl block
PATHS = VerlPaths(
    train_files="results/paper/ckpt/.stage1.verl/data/train.parquet",
    val_files="results/paper/ckpt/.stage1.verl/data/val.parquet",
    model="results/paper/models/qwen2.5-7b-instruct",
    checkpoints="results/paper/ckpt/.stage1.verl/checkpoints",
)


def paper_settings(
    run: str = "rl-memagent-7b", stage: str = "stage1", recipe: str = "official"
) -> dict[str, Any]:
    config = load_yaml(REPO / "config" / "config.yaml")
    config["training"]["recipe"] = recipe
    return train_settings(config, run, stage)


def memalpha_paper_settings(run: str = "memalpha-4b-b0.05-g0.1") -> dict[str, Any]:
    return memalpha_train_settings(load_yaml(REPO / "config" / "config.yaml"), run)


def test_memalpha_paper_settings_give_the_official_grpo_run() -> None:
    """train_memory_grpo_qwen3-4b-4node-compression0.05-content0.1.sh (memalpha_official §3.4):
    GRPO with std, 32 instances x 8 rollouts, 32 rows per update, 6144 + 2048 tokens, the
    Mem-α loop, shuffled instances, thinking off, greedy validation every 50 steps (not before
    training), the KL loss of the script, the last checkpoint."""
    o = as_dict(verl_overrides(memalpha_paper_settings(), PATHS, MEMALPHA))
    actor, rollout = "actor_rollout_ref.actor", "actor_rollout_ref.rollout"
    expected = {
        "algorithm.adv_estimator": "grpo",
        "algorithm.norm_adv_by_std_in_grpo": "true",
        "data.train_batch_size": "32",
        "data.shuffle": "true",
        f"{rollout}.n": "8",
        f"{actor}.ppo_mini_batch_size": "4",  # x n = 32 rows per update
        f"{actor}.optim.lr": "1e-06",
        f"{actor}.kl_loss_coef": "0.001",
        f"{actor}.kl_loss_type": "low_var_kl",
        f"{rollout}.prompt_length": "6144",
        f"{rollout}.response_length": "2048",
        f"{rollout}.gpu_memory_utilization": "0.8",
        f"{rollout}.agent.default_agent_loop": MEMALPHA_AGENT_NAME,
        "+data.apply_chat_template_kwargs.enable_thinking": "false",
        "trainer.nnodes": "4",
        "trainer.n_gpus_per_node": "8",
        "trainer.total_training_steps": "85",
        "trainer.test_freq": "50",
        "trainer.val_before_train": "false",
        f"{rollout}.val_kwargs.n": "1",
        f"{rollout}.val_kwargs.temperature": "0.0",
        f"{rollout}.val_kwargs.do_sample": "false",
        f"{actor}.use_kl_loss": "true",
        "trainer.save_freq": "5",
        "trainer.max_actor_ckpt_to_keep": "2",
        "trainer.experiment_name": "memalpha-4b-b0.05-g0.1-grpo",
        f"{actor}.loss_agg_mode": "token-mean",  # the script's (its recipe's)
    }
    assert {key: o[key] for key in expected} == expected


def test_the_papers_per_action_loss_is_verls_seq_mean_token_mean() -> None:
    config = load_yaml(REPO / "config" / "config.yaml")
    config["memalpha"]["training"]["recipes"]["official"]["loss_agg"] = "seq-mean-token-mean"
    settings = memalpha_train_settings(config, "memalpha-4b-b0.05-g0.1")
    o = as_dict(verl_overrides(settings, PATHS, MEMALPHA))
    assert o["actor_rollout_ref.actor.loss_agg_mode"] == "seq-mean-token-mean"
    with pytest.raises(SettingsError, match=r"loss_agg must be one of"):
        verl_overrides({**settings, "loss_agg": "token-sum"}, PATHS, MEMALPHA)


def test_the_paper_recipe_trains_205_steps_without_kl_keeping_every_validated_checkpoint() -> None:
    """Mem-α §4.1: 205 steps, no KL term (no reference model loaded), the best checkpoint by
    validation: verl saves at every validation (steps 50, 100, 150, 200 and 205) and keeps all."""
    config = load_yaml(REPO / "config" / "config.yaml")
    config["memalpha"]["training"]["recipe"] = "paper"
    settings = memalpha_train_settings(config, "memalpha-4b-b0.05-g0.1")
    assert (settings["recipe"], settings["checkpoint"]) == ("paper", "best")
    o = as_dict(verl_overrides(settings, PATHS, MEMALPHA))
    actor = "actor_rollout_ref.actor"
    expected = {
        "trainer.total_training_steps": "205",
        f"{actor}.optim.lr_warmup_steps": "10",
        f"{actor}.use_kl_loss": "false",
        f"{actor}.kl_loss_coef": "0.0",
        "trainer.test_freq": "50",
        "trainer.save_freq": "50",
        "trainer.max_actor_ckpt_to_keep": "null",
    }
    assert {key: o[key] for key in expected} == expected


def test_keeping_the_best_checkpoint_without_validation_names_the_key() -> None:
    settings = {**memalpha_paper_settings(), "checkpoint": "best"}
    settings["validation"] = {**settings["validation"], "every": 0}
    with pytest.raises(SettingsError, match=r"checkpoint 'best' needs validation"):
        verl_overrides(settings, PATHS, MEMALPHA)
    with pytest.raises(SettingsError, match=r"checkpoint must be 'last' or 'best', got 'first'"):
        verl_overrides({**settings, "checkpoint": "first"}, PATHS, MEMALPHA)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("mini_batch_rows", 12, "mini_batch_rows=12 must be a multiple of group_size=8"),
        ("agent", {"max_new_tokens": 2048, "prompt_cap": None}, "agent.prompt_cap must be set"),
    ],
)
def test_memalpha_settings_verl_cannot_run_name_their_key(key, value, message) -> None:
    settings = memalpha_paper_settings()
    settings[key] = value
    with pytest.raises(SettingsError, match=message):
        verl_overrides(settings, PATHS, MEMALPHA)


def as_dict(overrides: list[str]) -> dict[str, str]:
    pairs = [item.split("=", 1) for item in overrides]
    assert len({key for key, _ in pairs}) == len(pairs), "an override key appears twice"
    return dict(pairs)


def test_paper_settings_give_the_official_run() -> None:
    o = as_dict(verl_overrides(paper_settings(), PATHS))
    actor, rollout = "actor_rollout_ref.actor", "actor_rollout_ref.rollout"
    expected = {
        "trainer.use_v1": "true",
        "trainer.v1.trainer_mode": "sync",
        "algorithm.adv_estimator": "grpo",
        "algorithm.norm_adv_by_std_in_grpo": "false",
        "algorithm.use_kl_in_reward": "false",
        "algorithm.filter_groups.enable": "false",
        "critic.enable": "false",
        f"{actor}.loss_agg_mode": "token-mean",
        f"{actor}.clip_ratio_low": "0.2",
        f"{actor}.clip_ratio_high": "0.2",
        f"{actor}.clip_ratio_c": "3.0",
        f"{actor}.use_kl_loss": "true",
        f"{actor}.kl_loss_coef": "0.001",
        f"{actor}.kl_loss_type": "low_var_kl",
        f"{actor}.entropy_coeff": "0",
        f"{actor}.ppo_epochs": "1",
        f"{actor}.optim.lr": "1e-06",
        f"{actor}.optim.weight_decay": "0.01",
        f"{actor}.optim.clip_grad": "1.0",
        f"{actor}.optim.lr_scheduler_type": "constant",
        f"{actor}.optim.lr_warmup_steps": "20",  # training steps: verl steps the LR once a step
        f"{actor}.optim.lr_warmup_steps_ratio": "0.0",
        # RL-MemAgent-7B: 128 questions (run_memory_7B.sh), 16 updates a step -> 8 questions'
        # groups per mini-batch, the script's ppo_mini_batch_size
        "data.train_batch_size": "128",
        f"{actor}.ppo_mini_batch_size": "8",
        f"{rollout}.n": "16",
        # the 8K window: 1024 query + 1024 memory + 5000 chunk + 1144 template; 1024 out
        "data.max_prompt_length": "8192",
        "data.max_response_length": "1024",
        f"{rollout}.prompt_length": "8192",
        f"{rollout}.response_length": "1024",
        f"{rollout}.max_model_len": "9216",
        f"{rollout}.temperature": "1.0",
        f"{rollout}.top_p": "1.0",
        f"{rollout}.seed": "42",
        f"{rollout}.gpu_memory_utilization": "0.6",
        f"{rollout}.val_kwargs.n": "4",
        f"{rollout}.val_kwargs.top_p": "0.7",
        f"{rollout}.val_kwargs.temperature": "1.0",
        f"{rollout}.val_kwargs.do_sample": "true",
        f"{rollout}.agent.default_agent_loop": AGENT_NAME,
        f"{rollout}.agent.agent_loop_config_path": "${memrepro_verl:agent_loop_config}",
        "reward.custom_reward_function.path": "${memrepro_verl:reward_file}",
        "reward.custom_reward_function.name": REWARD_NAME,
        "trainer.total_training_steps": "400",
        "trainer.test_freq": "5",
        "trainer.val_before_train": "true",
        "trainer.save_freq": "10",
        "trainer.nnodes": "4",
        "trainer.n_gpus_per_node": "8",
        "trainer.logger": "[console,mlflow,file]",
        "trainer.resume_mode": "auto",
        "trainer.experiment_name": "rl-memagent-7b-stage1",
        "trainer.default_local_dir": str(PATHS.checkpoints),
        "data.train_files": str(PATHS.train_files),
        "data.val_files": str(PATHS.val_files),
        "actor_rollout_ref.model.path": str(PATHS.model),
    }
    assert {key: o.get(key) for key in expected} == expected


def test_algorithm_1s_recipe_puts_the_kl_in_the_reward_and_divides_by_the_std() -> None:
    """training.recipe: algorithm1: verl's in-reward KL at the KL factor with the same
    estimator, no KL loss (verl still loads the reference for the reward), the std division;
    the paper recipe's other keys unchanged. Mem-α's trainer refuses the switch."""
    o = as_dict(verl_overrides(paper_settings(recipe="algorithm1"), PATHS))
    paper = as_dict(verl_overrides(paper_settings(recipe="paper"), PATHS))
    actor = "actor_rollout_ref.actor"
    changed = {key: o.get(key) for key in o.keys() | paper.keys() if o.get(key) != paper.get(key)}
    assert changed == {
        "algorithm.norm_adv_by_std_in_grpo": "true",
        "algorithm.use_kl_in_reward": "true",
        "algorithm.kl_penalty": "low_var_kl",
        "algorithm.kl_ctrl.type": "fixed",
        "algorithm.kl_ctrl.kl_coef": "0.001",
        f"{actor}.use_kl_loss": "false",
        f"{actor}.kl_loss_coef": "0.0",
    }
    memalpha = {**memalpha_paper_settings(), "kl_in_reward": True}
    with pytest.raises(SettingsError, match="kl_in_reward: Mem-α's trainer takes no KL"):
        verl_overrides(memalpha, PATHS, MEMALPHA)


def test_the_14b_run_and_stage2() -> None:
    o = as_dict(verl_overrides(paper_settings("rl-memagent-14b", "stage2"), PATHS))
    assert o["trainer.nnodes"] == "16"
    assert o["trainer.total_training_steps"] == "100"
    assert o["trainer.experiment_name"] == "rl-memagent-14b-stage2"


def test_the_command_is_deterministic_and_machine_independent() -> None:
    settings = paper_settings()
    command = verl_command(settings, PATHS)
    assert command == verl_command(copy.deepcopy(settings), PATHS)
    assert command[:11] == [
        "bash",
        "workflow/scripts/ray_job.sh",
        "--nodes",
        "4",
        "--gpus-per-node",
        "8",
        "--",
        "python",
        "-u",
        "-m",
        "memrepro.verl.main",
    ]
    assert command[11:] == verl_overrides(settings, PATHS)
    assert str(PACKAGE_DIR) not in " ".join(command)  # package paths resolve where verl runs


def test_validation_and_saving_off() -> None:
    settings = paper_settings()
    settings["validation"] = {"every": 0, "n": 1}  # no sampling needed when never validating
    settings["save_every"] = 0
    o = as_dict(verl_overrides(settings, PATHS))
    assert o["trainer.test_freq"] == "-1"
    assert o["trainer.val_before_train"] == "false"
    assert o["trainer.save_freq"] == "400"  # the last step is still saved, for the merge


def test_a_sampling_seed_is_the_rollout_seed() -> None:
    settings = paper_settings()
    settings["sampling"]["seed"] = 7
    assert as_dict(verl_overrides(settings, PATHS))["actor_rollout_ref.rollout.seed"] == "7"


def _set(settings: dict, key: str, value: Any) -> None:
    *parents, last = key.split(".")
    for part in parents:
        settings = settings[part]
    if value is _DELETE:
        del settings[last]
    else:
        settings[last] = value


_DELETE = object()


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("mini_batches_per_step", 7, "mini_batches_per_step=7"),
        ("gpus_per_node", 0, "gpus_per_node must be >= 1"),
        ("verl.tensor_parallel_size", 3, "verl.tensor_parallel_size=3"),
        ("verl.fsdp_size", 5, "verl.fsdp_size=5"),
        ("verl.rollout_tp", 1, "verl: unknown key(s) rollout_tp"),
        ("verl.max_num_seqs", _DELETE, "missing key verl.max_num_seqs"),
        ("verl.ppo_max_token_len_per_gpu", 8192, "verl.ppo_max_token_len_per_gpu=8192"),
        ("verl.gpu_memory_utilization", 1.5, "verl.gpu_memory_utilization"),
        ("verl.enforce_eager", "no", "verl.enforce_eager must be bool"),
        ("lr", "1e-6", "lr must be float"),
        ("steps", True, "steps must be int"),
        ("validation.sampling", _DELETE, "missing key validation.sampling"),
        ("validation.sampling.seed", 3, "validation.sampling.seed must be null"),
        ("agent.chunk_tokens", 0, "agent.chunk_tokens must be >= 1"),
        ("backend", "cpu", "backend must be 'verl'"),
    ],
)
def test_bad_settings_fail_naming_the_key(key: str, value: Any, message: str) -> None:
    settings = paper_settings()
    _set(settings, key, value)
    with pytest.raises(SettingsError) as error:
        verl_overrides(settings, PATHS)
    assert message in str(error.value)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (True, "true"),
        (None, "null"),
        (1e-6, "1e-06"),
        (["console", "mlflow"], "[console,mlflow]"),
        ("results/run 1/x.parquet", "'results/run 1/x.parquet'"),
        ("true", "'true'"),
        ("123", "'123'"),
        ("it's", "'it\\'s'"),
        ("1e-06", "'1e-06'"),
        ("~/models", "'~/models'"),
        (Path("results/x"), "results/x"),
    ],
)
def test_hydra_values(value: Any, text: str) -> None:
    assert hydra_value(value) == text


# --- checkpoints ---------------------------------------------------------------------------------


def _checkpoint(root: Path, step: int) -> None:
    (root / f"global_step_{step}" / "actor").mkdir(parents=True)


def test_latest_step_follows_verls_tracker(tmp_path: Path) -> None:
    assert latest_step(tmp_path / "missing") is None
    _checkpoint(tmp_path, 10)
    _checkpoint(tmp_path, 20)
    assert latest_step(tmp_path) is None  # no tracker: verl starts afresh
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("10")
    assert latest_step(tmp_path) == 10  # step 20 was never completed
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("30")
    assert latest_step(tmp_path) is None  # its directory is gone
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("ten")
    with pytest.raises(ValueError, match=r"latest_checkpointed_iteration\.txt"):
        latest_step(tmp_path)


def test_merge_command() -> None:
    assert merge_command(Path("ck"), 400, Path("out")) == [
        "python",
        "-m",
        "verl.model_merger",
        "merge",
        "--backend",
        "fsdp",
        "--local_dir",
        str(Path("ck") / "global_step_400" / "actor"),
        "--target_dir",
        "out",
    ]


# --- ray_job.sh ----------------------------------------------------------------------------------


def _ray_job(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=60
    )


def _fake_tools(bin_dir: Path, log: Path) -> None:
    """srun/scontrol/ray stand-ins: srun logs its argv, scontrol knows three nodes."""
    bin_dir.mkdir()
    tools = {
        "srun": f'echo "$*" >> {log}\n',
        "scontrol": 'if [[ "$1" == show && "$2" == node ]]; then\n'
        '  echo "NodeName=$3 Arch=x86_64 NodeAddr=10.0.0.${3#gpu0} NodeHostName=$3"\n'
        'else printf "gpu01\\ngpu02\\ngpu03\\n"; fi\n',
        "ray": "exit 0\n",
        "apptainer": "exit 0\n",
    }
    for name, body in tools.items():
        path = bin_dir / name
        path.write_text("#!/usr/bin/env bash\n" + body)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)


def test_one_node_runs_the_command_itself() -> None:
    done = _ray_job(["--nodes", "1", "--gpus-per-node", "1", "--", "echo", "a b"], dict(os.environ))
    assert (done.returncode, done.stdout) == (0, "a b\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--nodes", "2", "--gpus-per-node", "8", "--", "true"], "needs a SLURM allocation"),
        (["--nodes", "0", "--gpus-per-node", "8", "--", "true"], "--nodes must be"),
        (["--nodes", "1", "--gpus-per-node", "8"], "no command after --"),
        (["--nodes", "1", "--gpu", "8", "--", "true"], "unknown argument '--gpu'"),
        (
            ["--nodes", "1", "--gpus-per-node", "8", "--container", "t.sif", "--", "true"],
            "no-such-apptainer not found (MEMREPRO_APPTAINER): --container t.sif needs apptainer",
        ),
    ],
)
def test_launcher_errors(args: list[str], message: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env["MEMREPRO_APPTAINER"] = "no-such-apptainer"
    done = _ray_job(args, env)
    assert done.returncode == 2
    assert message in done.stderr


def test_multi_node_symmetric_run_advertises_the_heads_slurm_address(tmp_path: Path) -> None:
    # the manual default runs on a real SLURM cluster in tests/cluster/test_ray.py
    log = tmp_path / "srun.log"
    _fake_tools(tmp_path / "bin", log)
    env = {
        "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin",
        "SLURM_JOB_ID": "1",
        "SLURM_JOB_NODELIST": "gpu[01-03]",
        "SLURM_CPUS_PER_TASK": "64",
        "MEMREPRO_RAY_LAUNCH": "symmetric",
    }
    done = _ray_job(["--nodes", "2", "--gpus-per-node", "8", "--", "python", "-m", "x"], env)
    assert done.returncode == 0, done.stderr
    assert log.read_text().splitlines() == [
        "--export=ALL --overlap --gpus-per-node=8 --nodes=2 --ntasks=2 --ntasks-per-node=1 "
        "-w gpu01,gpu02 ray symmetric-run --address 10.0.0.1:6379 --min-nodes 2 "
        "--num-cpus=64 --num-gpus=8 -- python -m x"
    ]


def test_with_an_image_srun_stays_on_the_host_and_ray_runs_in_the_image(tmp_path: Path) -> None:
    log = tmp_path / "srun.log"
    _fake_tools(tmp_path / "bin", log)
    (tmp_path / "bin" / "ray").unlink()  # the host has no Ray: the image has
    env = {
        "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin",
        "SLURM_JOB_ID": "1",
        "SLURM_JOB_NODELIST": "gpu[01-03]",
        "MEMREPRO_RAY_LAUNCH": "symmetric",
    }
    args = ["--nodes", "2", "--gpus-per-node", "8", "--container", "/c/train.sif", "--", "x"]
    done = _ray_job(args, env)
    assert done.returncode == 0, done.stderr
    assert (
        log.read_text()
        .split(" -w gpu01,gpu02 ")[1]
        .startswith("apptainer exec --nv /c/train.sif ray symmetric-run --address 10.0.0.1:6379")
    )
    log.unlink()
    done = _ray_job(args, {**env, "MEMREPRO_CONTAINER_ARGS": "--nv --bind /scratch"})
    assert (
        " -w gpu01,gpu02 apptainer exec --nv --bind /scratch /c/train.sif ray " in log.read_text()
    )


def test_multi_node_needs_enough_nodes(tmp_path: Path) -> None:
    _fake_tools(tmp_path / "bin", tmp_path / "srun.log")
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "SLURM_JOB_ID": "1"}
    env["SLURM_JOB_NODELIST"] = "gpu[01-03]"
    done = _ray_job(["--nodes", "4", "--gpus-per-node", "8", "--", "true"], env)
    assert done.returncode == 2
    assert "has 3 node(s)" in done.stderr


# --- Mem-α: the QA server inside the training job's allocation ---------------------------------


def test_the_qa_server_shares_one_node_by_splitting_its_gpus() -> None:
    from memrepro.verl.job import qa_server_plan

    settings = {**memalpha_paper_settings(), "nodes": 1, "gpus_per_node": 4}
    plan = qa_server_plan(
        settings, "models/qwen3-32b", {"CUDA_VISIBLE_DEVICES": "3,4,5,6,7,8,9,10"}, 8001, []
    )
    assert plan.trainer_env == {"CUDA_VISIBLE_DEVICES": "3,4,5,6"}
    assert plan.server_env == {"CUDA_VISIBLE_DEVICES": "7,8,9,10"}  # qa_server.gpus = 4
    assert plan.host == "127.0.0.1" and plan.command[2:5] == [
        "vllm.entrypoints.openai.api_server",
        "--model",
        "models/qwen3-32b",
    ]
    command = " ".join(plan.command)
    assert "--served-model-name qwen3-32b" in command and "--tensor-parallel-size 4" in command
    assert "--port 8001" in command and "--max-model-len 40960" in command
    with pytest.raises(SettingsError, match="need 8"):
        qa_server_plan(settings, "m", {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}, 8001, [])


def test_a_multi_node_runs_qa_server_takes_the_node_after_rays() -> None:
    from memrepro.verl.job import qa_server_plan

    settings = memalpha_paper_settings()  # 4 nodes for Ray
    nodes = ["gpu01", "gpu02", "gpu03", "gpu04", "gpu05"]
    plan = qa_server_plan(settings, "m", {}, 8001, nodes)
    assert plan.host == "gpu05" and plan.trainer_env == {} and plan.server_env == {}
    assert plan.command[:7] == [
        "srun",
        "--overlap",
        "--nodes=1",
        "--ntasks=1",
        "-w",
        "gpu05",
        "--gpus-per-node=4",
    ]
    assert plan.command[plan.command.index("--host") + 1] == "0.0.0.0"
    with pytest.raises(SettingsError, match="need 5 nodes"):
        qa_server_plan(settings, "m", {}, 8001, nodes[:4])


def test_in_the_train_image_the_qa_server_runs_in_it_with_the_images_python() -> None:
    from memrepro.verl.job import qa_server_plan

    image = "containers/train.sif"
    one = {**memalpha_paper_settings(), "nodes": 1, "gpus_per_node": 4}
    env = {"CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}
    plan = qa_server_plan(one, "m", env, 8001, [], image)
    assert plan.command[:6] == ["apptainer", "exec", "--nv", image, "python", "-m"]
    nodes = ["gpu01", "gpu02", "gpu03", "gpu04", "gpu05"]
    plan = qa_server_plan(memalpha_paper_settings(), "m", {}, 8001, nodes, image)
    assert plan.command[0] == "srun" and plan.command[7:11] == ["apptainer", "exec", "--nv", image]


def test_a_memalpha_verl_run_requests_its_qa_servers_gpus_and_node() -> None:
    from memrepro.config import train_gpus, train_nodes

    config = load_yaml(REPO / "config" / "config.yaml")
    run = "memalpha-4b-b0.05-g0.1"
    assert (train_gpus(config, run), train_nodes(config, run)) == (40, 5)  # 4 x 8 + a node
    one = copy.deepcopy(config)
    one["memalpha"]["training"]["runs"][run].update(nodes=1, gpus_per_node=4)
    assert (train_gpus(one, run), train_nodes(one, run)) == (8, 1)  # 4 + qa_server.gpus 4
    one["training"]["backend"] = "cpu"
    assert (train_gpus(one, run), train_nodes(one, run)) == (4, 1)  # no server on the CPU
    assert (train_gpus(config, "rl-memagent-7b"), train_nodes(config, "rl-memagent-7b")) == (32, 4)
