"""`python -m memrepro.verl.main <hydra overrides>`: verl 0.9.1's PPO entry point, our trainers.

The same steps as `verl.trainer.main_ppo.main` (verl's own `ppo_trainer` config from the installed
package, `auto_set_device`, `validate_config`, `run_ppo`), with four additions:
- the `memrepro_verl` resolver of memrepro.verl.overrides is registered and the config resolved
here,
  so package paths are those of the environment verl runs in;
- relative paths (data, model, checkpoints) become absolute against this process's working
  directory: Ray workers, on other nodes too, do not share it;
- the task runner trains with MemAlphaTrainer when the agent loop is Mem-α's, else with
  MemAgentTrainer (memrepro.verl.trainer.trainer_class);
- the image it runs in (memrepro.software.container_tags, read from inside: the train image's
identity
  file, or none on the host) is written to $MEMREPRO_RAN_IN where the job sets it, so the job, which
  runs on the host and starts Ray and this driver in the image, records where they ran;
- the job's MLflow run, file log and QA server address ($MEMREPRO_QA_BASE_URL) reach the Ray
  actors: MLFLOW_* (MLFLOW_TRACKING_URI,
  MLFLOW_RUN_ID: verl's Tracking, in the task-runner actor, resumes that run instead of creating
  one), HF_*, MEMREPRO_* and VERL_FILE_LOGGER_* (credentials excepted) go into
  `ray_kwargs.ray_init.runtime_env.env_vars`, which run_ppo merges into every actor's runtime env.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from omegaconf import DictConfig, OmegaConf, open_dict

from memrepro.tracking.store import absolute_uri
from memrepro.verl import write_ran_in
from memrepro.verl.overrides import RESOLVER, package_file

FORWARDED_PREFIXES = ("MLFLOW_", "HF_", "MEMREPRO_", "VERL_FILE_LOGGER_")
# run_ppo prints the runtime env: credentials stay out of it (Ray processes inherit them from
# the environment of the driver, or of `ray start` under workflow/scripts/ray_job.sh)
SECRET_MARKERS = ("TOKEN", "PASSWORD", "SECRET", "KEY")
PATH_KEYS = ("data.train_files", "data.val_files", "trainer.default_local_dir")
MODEL_KEY = "actor_rollout_ref.model.path"  # a local directory, or a hub id left as it is


def register_resolver() -> None:
    if OmegaConf.has_resolver(RESOLVER):
        return
    # omegaconf 2.4 deprecates register_new_resolver (the 2.3 API) for register_resolver
    if hasattr(OmegaConf, "legacy_register_resolver"):
        OmegaConf.register_resolver(RESOLVER, package_file)
    else:
        OmegaConf.register_new_resolver(RESOLVER, package_file)


def compose(overrides: Sequence[str]) -> DictConfig:
    """verl's `ppo_trainer` config (from the installed verl package) with the overrides applied."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module

    register_resolver()
    with initialize_config_module(config_module="verl.trainer.config", version_base=None):
        return hydra_compose(config_name="ppo_trainer", overrides=list(overrides))


def absolute(path: str, cwd: Path) -> str:
    if "://" in path or os.path.isabs(path) or path.startswith("~"):
        return path
    return str(cwd / path)


def forwarded_env(environ: Mapping[str, str], cwd: Path) -> dict[str, str]:
    """The variables every Ray actor needs (tracking run, file log, HF caches), paths absolute."""
    env = {
        key: value
        for key, value in environ.items()
        if key.startswith(FORWARDED_PREFIXES) and not any(m in key for m in SECRET_MARKERS)
    }
    if "MLFLOW_TRACKING_URI" in env:
        env["MLFLOW_TRACKING_URI"] = absolute_uri(env["MLFLOW_TRACKING_URI"], cwd)
    for key in ("VERL_FILE_LOGGER_PATH", "VERL_FILE_LOGGER_ROOT", "HF_HOME"):
        if key in env:
            env[key] = absolute(env[key], cwd)
    return dict(sorted(env.items()))


def prepare(config: DictConfig, environ: Mapping[str, str], cwd: Path) -> DictConfig:
    """verl's checks, then the config resolved, paths absolute and the environment forwarded."""
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config
    from verl.utils.device import auto_set_device

    if not config.trainer.use_v1 or config.trainer.v1.trainer_mode != "sync":
        raise ValueError(
            "memrepro.verl.main runs verl's v1 sync trainer: trainer.use_v1=true, "
            "trainer.v1.trainer_mode=sync"
        )
    auto_set_device(config)
    validate_config(
        config=config,
        use_reference_policy=need_reference_policy(config),
        use_critic=need_critic(config),
    )
    OmegaConf.resolve(config)  # the memrepro_verl resolver exists in this process only
    for key in PATH_KEYS:  # verl takes one path or a list of them
        value = OmegaConf.select(config, key)
        is_list = OmegaConf.is_list(value)
        OmegaConf.update(
            config, key, [absolute(p, cwd) for p in value] if is_list else absolute(value, cwd)
        )
    model = OmegaConf.select(config, MODEL_KEY)
    if (cwd / model).exists():
        OmegaConf.update(config, MODEL_KEY, absolute(model, cwd))
    env = forwarded_env(environ, cwd)
    if env:
        with open_dict(config):
            runtime_env = config.ray_kwargs.ray_init.runtime_env
            runtime_env.env_vars = {**runtime_env.get("env_vars", {}), **env}
    return config


def main(argv: Sequence[str] | None = None) -> None:
    overrides = sys.argv[1:] if argv is None else list(argv)
    write_ran_in(os.environ)
    config = prepare(compose(overrides), os.environ, Path.cwd())

    from verl.trainer.main_ppo import run_ppo

    from memrepro.verl.trainer import MemAgentTaskRunner

    run_ppo(config, task_runner_class=MemAgentTaskRunner)


if __name__ == "__main__":
    main()
