"""Our verl launch through verl 0.9.1's own machinery (skipped where verl is absent).

The overrides are composed onto verl's ppo_trainer config and checked by verl's validate_config
and config dataclasses; MemAgentTrainer's update split runs through verl's real
TrainingWorker.train_mini_batch with a fake engine. Run in the verl env:
    PYTHONPATH=src /tmp/verlvenv/bin/python -m pytest -q tests/verl/test_verl_config.py
"""

from __future__ import annotations

import contextlib
import copy
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

verl = pytest.importorskip("verl")
pytest.importorskip("transfer_queue")

import torch  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from tensordict import TensorDict  # noqa: E402
from test_verl_overrides import (  # noqa: E402 (tests/ is on sys.path)
    memalpha_paper_settings,
    paper_settings,
)
from transfer_queue import KVBatchMeta  # noqa: E402
from verl.trainer.ppo.reward import get_custom_reward_fn  # noqa: E402
from verl.trainer.ppo.v1.trainer_base import PPOTrainer  # noqa: E402
from verl.utils import tensordict_utils as tu  # noqa: E402
from verl.utils.config import omega_conf_to_dataclass  # noqa: E402
from verl.utils.config import validate_config as verl_validate_config  # noqa: E402
from verl.utils.torch_functional import get_constant_schedule_with_warmup  # noqa: E402
from verl.workers.engine_workers import TrainingWorker  # noqa: E402

from memrepro.verl import AGENT_LOOP_CONFIG, AGENT_NAME, REWARD_FILE  # noqa: E402
from memrepro.verl import trainer as trainer_module  # noqa: E402
from memrepro.verl.main import compose, prepare  # noqa: E402
from memrepro.verl.overrides import MEMALPHA, VerlPaths, hydra_value, verl_overrides  # noqa: E402
from memrepro.verl.trainer import (  # noqa: E402
    MemAgentTrainer,
    MemAlphaTrainer,
    TaskRunner,
    actor_update_info,
    num_mini_batches,
    trajectory_metrics,
)

pytestmark = pytest.mark.filterwarnings(
    "ignore::UserWarning", "ignore::DeprecationWarning", "ignore::FutureWarning"
)

PATHS = VerlPaths("run/data/train.parquet", "run/data/val.parquet", "run/model", "run/ckpt")
ENV = {
    "MLFLOW_TRACKING_URI": "sqlite:///results/paper/mlflow.db",
    "MLFLOW_RUN_ID": "0123abcd",
    "VERL_FILE_LOGGER_PATH": "run/metrics/attempt.jsonl",
    "HF_HUB_OFFLINE": "1",
    "HF_TOKEN": "hf_secret",  # inherited by Ray processes, never printed in the runtime env
    "UNRELATED": "not forwarded",
}
DP = 2  # the fake small GPU count: one node, two GPUs


def small_settings() -> dict[str, Any]:
    settings = paper_settings()
    settings["nodes"], settings["gpus_per_node"] = 1, DP
    return settings


@pytest.fixture(scope="module")
def cwd(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("job")


@pytest.fixture(scope="module")
def config(cwd: Path):
    """The paper's stage I overrides on one node with two GPUs, as main.py prepares them."""
    return prepare(compose(verl_overrides(small_settings(), PATHS)), ENV, cwd)


def test_paper_scale_overrides_pass_verls_validation(cwd: Path) -> None:
    config = prepare(compose(verl_overrides(paper_settings(), PATHS)), ENV, cwd)
    assert (config.trainer.nnodes, config.trainer.n_gpus_per_node) == (4, 8)


def test_memagents_paper_recipe_passes_verls_validation(cwd: Path) -> None:
    """§A.3 under DAPO's clip-higher (training.recipe: paper): 256 questions a step for the 7B
    too, ε_high 0.28; verl's own checks accept it."""
    config = prepare(compose(verl_overrides(paper_settings(recipe="paper"), PATHS)), ENV, cwd)
    actor = config.actor_rollout_ref.actor
    assert (config.data.train_batch_size, actor.clip_ratio_low, actor.clip_ratio_high) == (
        256,
        0.2,
        0.28,
    )


def test_algorithm_1s_recipe_passes_verls_validation_and_keeps_its_reference(cwd: Path) -> None:
    """training.recipe: algorithm1: verl's checks accept the in-reward KL, build its fixed KL
    controller at the KL factor, and still load the reference policy (for the reward)."""
    from verl.trainer.ppo.core_algos import get_kl_controller
    from verl.trainer.ppo.utils import need_reference_policy

    settings = paper_settings(recipe="algorithm1")
    config = prepare(compose(verl_overrides(settings, PATHS)), ENV, cwd)
    verl_validate_config(config, use_reference_policy=True, use_critic=False)
    assert need_reference_policy(config) and not config.actor_rollout_ref.actor.use_kl_loss
    algorithm = config.algorithm
    assert (algorithm.use_kl_in_reward, algorithm.norm_adv_by_std_in_grpo) == (True, True)
    assert get_kl_controller(algorithm.kl_ctrl).value == settings["kl_coef"]
    assert algorithm.kl_penalty == "low_var_kl"


def test_memalpha_overrides_pass_verls_validation_and_pick_its_trainer(cwd: Path) -> None:
    """Mem-α's GRPO run: verl's own checks and config dataclasses accept it (4 x 8 GPUs,
    32 instances x n 8, 4 instances = 32 rows per update), and the task runner trains it with
    MemAlphaTrainer; MemAgent's stays on MemAgentTrainer."""
    config = prepare(compose(verl_overrides(memalpha_paper_settings(), PATHS, MEMALPHA)), ENV, cwd)
    verl_validate_config(config, use_reference_policy=True, use_critic=False)
    actor = omega_conf_to_dataclass(config.actor_rollout_ref.actor)
    actor.validate(32, config.data.train_batch_size, config.actor_rollout_ref.model)
    assert (actor.ppo_mini_batch_size, config.actor_rollout_ref.rollout.n) == (4, 8)
    assert config.algorithm.norm_adv_by_std_in_grpo is True
    assert config.data.apply_chat_template_kwargs.enable_thinking is False
    assert trainer_module.trainer_class(config) is MemAlphaTrainer
    MemAlphaTrainer(config)  # builds on the paper run
    corrected = copy.deepcopy(config)
    corrected.algorithm.rollout_correction.rollout_is = "token"  # verl's, which ours would skip
    with pytest.raises(ValueError, match="does not apply algorithm\\.rollout_correction"):
        MemAlphaTrainer(corrected)
    memagent = prepare(compose(verl_overrides(paper_settings(), PATHS)), ENV, cwd)
    assert trainer_module.trainer_class(memagent) is MemAgentTrainer


def test_the_memalpha_paper_recipe_loads_no_reference_model_and_validates_greedily(
    cwd: Path,
) -> None:
    """Mem-α §4.1's recipe (no KL term): verl's own test says no reference policy is needed;
    validation every 50 steps, greedy (verl samples only when do_sample), never before training."""
    from verl.trainer.ppo.utils import need_reference_policy

    settings = {**memalpha_paper_settings(), "kl_coef": 0.0, "steps": 205, "checkpoint": "best"}
    config = prepare(compose(verl_overrides(settings, PATHS, MEMALPHA)), ENV, cwd)
    verl_validate_config(config, use_reference_policy=False, use_critic=False)
    assert not need_reference_policy(config)
    assert need_reference_policy(
        prepare(compose(verl_overrides(memalpha_paper_settings(), PATHS, MEMALPHA)), ENV, cwd)
    )
    val = config.actor_rollout_ref.rollout.val_kwargs
    assert (val.do_sample, val.temperature, val.n) == (False, 0.0, 1)
    assert (config.trainer.test_freq, config.trainer.val_before_train) == (50, False)
    assert (config.trainer.save_freq, config.trainer.max_actor_ckpt_to_keep) == (50, None)


def test_verls_config_dataclasses_hold_the_paper_run(config) -> None:
    verl_validate_config(config, use_reference_policy=True, use_critic=False)
    actor = omega_conf_to_dataclass(config.actor_rollout_ref.actor)
    actor.validate(DP, config.data.train_batch_size, config.actor_rollout_ref.model)
    assert (actor.loss_agg_mode, actor.clip_ratio_low, actor.clip_ratio_high) == (
        "token-mean",
        0.2,
        0.2,
    )
    assert (actor.clip_ratio_c, actor.entropy_coeff, actor.ppo_epochs) == (3.0, 0, 1)
    assert (actor.use_kl_loss, actor.kl_loss_coef, actor.kl_loss_type) == (True, 1e-3, "low_var_kl")
    # RL-MemAgent-7B: 128 questions a step (run_memory_7B.sh), 16 updates -> 8 per mini-batch
    assert (actor.ppo_mini_batch_size, actor.use_dynamic_bsz, actor.shuffle) == (8, True, False)
    assert (actor.optim.lr, actor.optim.lr_warmup_steps, actor.optim.clip_grad) == (1e-6, 20, 1.0)
    assert (actor.optim.weight_decay, actor.optim.lr_scheduler_type) == (0.01, "constant")
    assert actor.engine.param_offload and actor.engine.optimizer_offload

    rollout = omega_conf_to_dataclass(config.actor_rollout_ref.rollout)
    assert (rollout.name, rollout.mode, rollout.n) == ("vllm", "async", 16)
    assert (rollout.prompt_length, rollout.response_length, rollout.max_model_len) == (
        8192,
        1024,
        9216,
    )
    assert (rollout.temperature, rollout.top_p, rollout.gpu_memory_utilization) == (1.0, 1.0, 0.6)
    val = rollout.val_kwargs
    assert (val.n, val.temperature, val.top_p, val.do_sample) == (4, 1.0, 0.7, True)
    assert rollout.agent.default_agent_loop == AGENT_NAME

    algorithm = omega_conf_to_dataclass(config.algorithm)
    assert (algorithm.adv_estimator, algorithm.norm_adv_by_std_in_grpo) == ("grpo", False)
    assert not algorithm.use_kl_in_reward and not algorithm.filter_groups.enable


def test_package_files_resolve_to_this_environment(config) -> None:
    agent = config.actor_rollout_ref.rollout.agent
    assert agent.agent_loop_config_path == str(AGENT_LOOP_CONFIG)
    registry = {entry.name: entry for entry in OmegaConf.load(agent.agent_loop_config_path)}
    assert AGENT_NAME in registry  # what verl's agent-loop workers look the loop up by
    assert config.reward.custom_reward_function.path == str(REWARD_FILE)
    assert callable(get_custom_reward_fn(config))  # verl's own loader finds the function


def test_paths_are_absolute_and_the_run_reaches_ray_actors(config, cwd: Path) -> None:
    assert config.data.train_files == str(cwd / PATHS.train_files)
    assert config.data.val_files == str(cwd / PATHS.val_files)
    assert config.trainer.default_local_dir == str(cwd / PATHS.checkpoints)
    assert config.actor_rollout_ref.model.path == "run/model"  # not here: maybe a hub id
    env = dict(config.ray_kwargs.ray_init.runtime_env.env_vars)
    assert env == {
        "HF_HUB_OFFLINE": "1",
        "MLFLOW_RUN_ID": "0123abcd",
        "MLFLOW_TRACKING_URI": f"sqlite:///{cwd}/results/paper/mlflow.db",
        "VERL_FILE_LOGGER_PATH": str(cwd / "run/metrics/attempt.jsonl"),
    }


def test_the_job_run_reaches_verls_ray_actors(config, tmp_path: Path, monkeypatch) -> None:
    """verl's run_ppo starts Ray with our runtime env: a stand-in task runner sees the run."""
    import ray
    from omegaconf import open_dict
    from verl.trainer.main_ppo import run_ppo

    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # no token file in the home directory
    monkeypatch.setenv("RAY_ADDRESS", "local")  # its own Ray, whatever else runs on this machine
    seen = tmp_path / "seen.json"

    @ray.remote(num_cpus=0)
    class Probe:  # defined here, so Ray ships it by value
        def run(self, config) -> None:
            import json
            import os

            keys = ("MLFLOW_RUN_ID", "MLFLOW_TRACKING_URI", "VERL_FILE_LOGGER_PATH", "UNRELATED")
            seen.write_text(json.dumps({key: os.environ.get(key) for key in keys}))

    small = copy.deepcopy(config)
    with open_dict(small):
        small.ray_kwargs.ray_init.num_cpus = 1
    for key in ("MLFLOW_RUN_ID", "MLFLOW_TRACKING_URI", "VERL_FILE_LOGGER_PATH"):
        monkeypatch.delenv(key, raising=False)  # only the runtime env may set them
    try:
        run_ppo(small, task_runner_class=Probe)
    finally:
        ray.shutdown()
    env = config.ray_kwargs.ray_init.runtime_env.env_vars
    assert json.loads(seen.read_text()) == {
        "MLFLOW_RUN_ID": "0123abcd",
        "MLFLOW_TRACKING_URI": env.MLFLOW_TRACKING_URI,
        "VERL_FILE_LOGGER_PATH": env.VERL_FILE_LOGGER_PATH,
        "UNRELATED": None,
    }


@pytest.mark.parametrize(
    "value", ["run 1/x.parquet", "it's", "a\\'b", "end\\", "x\\y", "true", "1e-06", "~/m", "a,b=c"]
)
def test_strings_survive_hydras_override_parser(value: str) -> None:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_override(f"data.train_files={hydra_value(value)}")
    assert parsed.value() == value


# --- a fixed number of updates per step ----------------------------------------------------------


class _Engine:
    def __init__(self, rank: int) -> None:
        self.rank = rank

    def get_data_parallel_size(self) -> int:
        return DP

    def get_data_parallel_rank(self) -> int:
        return self.rank

    @contextlib.contextmanager
    def train_mode(self, **_: Any):
        yield

    def is_mp_src_rank_with_outputs(self) -> bool:
        return False


def _run_worker(rank: int, rows: list[int], extra_info: dict, on_update) -> None:
    """verl's TrainingWorker.train_mini_batch on one DP rank's rows, with a fake engine."""
    data = TensorDict({"row": torch.tensor(rows)}, batch_size=[len(rows)])
    tu.assign_non_tensor(data, **copy.deepcopy(extra_info))
    worker = SimpleNamespace(
        engine=_Engine(rank),
        profiler=SimpleNamespace(step=lambda: None),
        train_batch=lambda mini: on_update(rank, mini["row"].tolist(), mini),
    )
    TrainingWorker.train_mini_batch(worker, data)


def _keys(conversations: dict[tuple[str, int], int]) -> list[str]:
    return [f"{uid}_{s}_{i}" for (uid, s), n in conversations.items() for i in range(n)]


def _batch(keys: list[str], multiple: int) -> KVBatchMeta:
    """A step's rows padded like verl's upsample_batch_to_divisible_size (is_padding tags)."""
    pad = -len(keys) % multiple
    tags = [{"response_len": 10} for _ in keys] + [{"is_padding": True}] * pad
    return KVBatchMeta(keys=keys + [f"padx_{i}_0" for i in range(pad)], tags=tags)


def test_each_step_makes_exactly_mini_batches_per_step_updates(config) -> None:
    trainer = MemAgentTrainer(config)
    assert trainer.mini_batches == num_mini_batches(config) == 16
    multiple = trainer._get_required_batch_multiple(DP)
    assert multiple == DP * 16
    # verl's own rule pads to ppo_mini_batch_size x n rows and updates once per that many rows
    trainer.global_steps = 1
    assert PPOTrainer._get_required_batch_multiple(trainer, DP) == 8 * 16

    # 3 questions x 16 rollouts with 1-9 conversations each: uneven rows, as in a real step
    conversations = {(f"q{q}", s): 1 + (q * 16 + s) % 9 for q in range(3) for s in range(16)}
    batch = _batch(_keys(conversations), multiple)
    sent: dict = {}
    trainer.actor_rollout_wg = SimpleNamespace(
        update_actor=lambda b: sent.update(b.extra_info) or {"metrics": {"pg_loss": [0.1, 0.3]}}
    )
    batch.extra_info["mini_batch_size"] = 999  # left over from elsewhere: must not win
    metrics: dict = {}
    trainer._update_actor(batch, metrics)
    assert "mini_batch_size" not in sent and sent["num_mini_batch"] == 16
    assert metrics["actor/pg_loss"] == pytest.approx(0.2)
    assert metrics["memagent/optimizer_updates"] == 16

    updates: dict[int, list[list[int]]] = {0: [], 1: []}
    lr_steps: list[int] = []

    def on_update(rank: int, rows: list[int], mini) -> None:
        updates[rank].append(rows)
        if tu.get(mini, "update_lr_scheduler"):
            lr_steps.append(rank)

    share = len(batch) // DP  # verl's dispatch: contiguous equal chunks per DP rank
    for rank in range(DP):
        _run_worker(rank, list(range(rank * share, (rank + 1) * share)), sent, on_update)
    assert [len(updates[rank]) for rank in range(DP)] == [16, 16]
    global_batches = [updates[0][i] + updates[1][i] for i in range(16)]
    assert sorted(row for rows in global_batches for row in rows) == list(range(len(batch)))
    assert {len(rows) for rows in global_batches} == {len(batch) // 16}
    assert lr_steps == [0, 1]  # the LR scheduler steps once per training step on each rank


def test_warmup_counts_training_steps(config) -> None:
    """verl's scheduler with our optim settings, stepped as its worker does: lr 0 at step 1."""
    optim = omega_conf_to_dataclass(config.actor_rollout_ref.actor.optim)
    optimizer = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=optim.lr)
    scheduler = get_constant_schedule_with_warmup(optimizer, optim.lr_warmup_steps)
    info = actor_update_info(config, num_rows=64, mini_batches=16)
    lrs = []
    for _ in range(22):  # training steps
        step_lrs = []

        def on_update(_rank, _rows, mini, step_lrs=step_lrs) -> None:
            step_lrs.append(optimizer.param_groups[0]["lr"])
            if tu.get(mini, "update_lr_scheduler"):
                scheduler.step()

        _run_worker(0, list(range(32)), info, on_update)
        assert len(set(step_lrs)) == 1  # one LR for all 16 updates of a step
        lrs.append(step_lrs[0])
    assert lrs[0] == 0.0
    assert lrs[1] == pytest.approx(1e-6 / 20)
    assert lrs[19] == pytest.approx(1e-6 * 19 / 20)
    assert lrs[20:] == [pytest.approx(1e-6)] * 2


def test_uneven_splits_and_critics_are_refused(config) -> None:
    with pytest.raises(ValueError, match="do not split into 16"):
        actor_update_info(config, num_rows=40, mini_batches=16)
    bad = copy.deepcopy(config)
    bad.actor_rollout_ref.actor.ppo_mini_batch_size = 15
    with pytest.raises(ValueError, match="ppo_mini_batch_size=15"):
        num_mini_batches(bad)
    critic = copy.deepcopy(config)
    critic.critic.enable = True
    with pytest.raises(ValueError, match="without a critic"):
        MemAgentTrainer(critic)


# --- per-trajectory metrics ----------------------------------------------------------------------


def test_trajectory_metrics_weigh_each_rollout_once() -> None:
    conversations = {("a", 0): 3, ("a", 1): 1, ("b", 0): 4, ("b", 1): 2}
    batch = _batch(_keys(conversations), 4)  # 10 rows + 2 padding rows
    rewards = {("a", "0"): 1.0, ("a", "1"): 0.0, ("b", "0"): 1.0, ("b", "1"): 1.0}
    metrics = trajectory_metrics(batch.keys, batch.tags, rewards)
    assert metrics == {
        "memagent/trajectories": 4.0,
        "memagent/trajectory_reward/mean": 0.75,  # verl's per-row mean would be 9/10
        "memagent/conversations_per_trajectory/mean": 2.5,
        "memagent/conversations_per_trajectory/max": 4.0,
        "memagent/conversations_per_trajectory/min": 1.0,
        "memagent/groups_with_signal": 0.5,  # group b is all correct: zero advantage
        "memagent/trajectory_response_tokens/mean": 25.0,
    }
    with pytest.raises(ValueError, match="no reward for trajectories"):
        trajectory_metrics(batch.keys, batch.tags, {("a", "0"): 1.0})


def test_final_rewards_come_from_the_last_conversation(config, monkeypatch) -> None:
    import transfer_queue

    conversations = {("a", 0): 3, ("a", 1): 1}
    batch = _batch(_keys(conversations), 8)
    batch.partition_id = "train"
    asked: list[str] = []

    def kv_batch_get(keys, partition_id, select_fields):
        asked.extend(keys)
        assert (partition_id, select_fields) == ("train", ["rm_scores"])
        scores = [torch.tensor([0.0, 0.0, 1.0]) if k == "a_0_2" else torch.zeros(2) for k in keys]
        return TensorDict(
            {"rm_scores": torch.nested.as_nested_tensor(scores, layout=torch.jagged)},
            batch_size=[len(keys)],
        )

    monkeypatch.setattr(transfer_queue, "kv_batch_get", kv_batch_get)
    rewards = MemAgentTrainer._final_rewards(SimpleNamespace(), batch)
    assert sorted(asked) == ["a_0_2", "a_1_0"]
    assert rewards == {("a", "0"): 1.0, ("a", "1"): 0.0}


# --- the task runner verl's run_ppo starts ------------------------------------------------------


@pytest.mark.parametrize("fails", [False, True])
def test_task_runner_runs_our_trainer_and_always_closes(config, monkeypatch, fails: bool) -> None:
    calls: list = []

    class Trainer:
        def __init__(self, config) -> None:
            calls.append(("trainer", config.transfer_queue.enable))
            self.logger = SimpleNamespace(
                finish=lambda exit_code: calls.append(("finish", exit_code))
            )

        def init(self) -> None:
            calls.append("init")

        def get_llm_client(self):
            return "llm"

        def get_teacher_client(self):
            return None

        def get_reward_handles(self):
            return ["reward"]

        def fit(self, manager) -> None:
            calls.append(("fit", manager))
            if fails:
                raise RuntimeError("out of memory")

    def create(**kwargs):
        return (
            kwargs["llm_client"],
            kwargs["teacher_client"],
            kwargs["reward_loop_worker_handles"],
        )

    monkeypatch.setattr(trainer_module, "MemAgentTrainer", Trainer)
    monkeypatch.setattr(trainer_module, "AgentLoopManagerTQ", SimpleNamespace(create=create))
    monkeypatch.setattr(trainer_module.tq, "init", lambda cfg: calls.append("tq.init"))
    monkeypatch.setattr(trainer_module.tq, "close", lambda: calls.append("tq.close"))
    with contextlib.nullcontext() if not fails else pytest.raises(RuntimeError):
        TaskRunner().run(copy.deepcopy(config))
    assert calls == [
        "tq.init",
        ("trainer", True),
        "init",
        ("fit", ("llm", None, ["reward"])),
        ("finish", 1 if fails else 0),
        "tq.close",
    ]
