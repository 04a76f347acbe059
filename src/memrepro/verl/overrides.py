"""A training job's settings -> the Hydra overrides of verl 0.9.1's `ppo_trainer` config.

Pure Python (no verl import): the Snakefile shows the launch command in dry-runs and hashes it,
so `verl_command` must give the same list for the same settings, on any machine. Paths inside
this package (agent-loop registry, reward function) are therefore written as interpolations of
the `memrepro_verl` resolver, which `memrepro.verl.main` registers and resolves where verl runs.

Multi-Conv DAPO as the official run did it (MemAgent's official code, on verl):
- v1 (TransferQueue) sync trainer: the agent loop returns one row per conversation;
- `adv_estimator=grpo` exactly (only that name takes verl's per-trajectory branch), without std
  normalisation: A_i = R_i - mean_group(R), broadcast to every conversation of rollout i;
- token-mean clipped loss (dual clip c) + kl_coef x low_var_kl loss to the reference policy
  (Mem-α: `loss_agg` may take Eq. 2's row mean, seq-mean-token-mean, for both);
- a MemAgent recipe may take Algorithm 1's variant instead (`kl_in_reward`, `norm_adv_by_std`):
  kl_coef x low_var_kl of the final answer's tokens subtracted from the reward, no KL loss, and
  the advantage divided by the group's std;
- a fixed number of optimizer updates per step: verl splits by rows (conversations), so
  `memrepro.verl.trainer.MemAgentTrainer` sends num_mini_batch = train_batch_size /
  ppo_mini_batch_size (the official td_split) instead of a row count; the overrides set
  ppo_mini_batch_size = rollout_batch / mini_batches_per_step for that;
- LR: constant with linear warm-up over `warmup_steps` *training steps*. verl 0.9.1 builds
  `get_constant_schedule_with_warmup(num_warmup_steps=optim.lr_warmup_steps)` and its worker
  steps the scheduler once per `train_mini_batch` call (after the last mini-batch), i.e. once per
  training step however many updates the step makes, so lr_warmup_steps = warmup_steps with no
  conversion; the first step runs at lr 0, as in the official run.
Mem-α's GRPO (recipe MEMALPHA of Mem-α's official code) differs where its official run does:
`norm_adv_by_std_in_grpo=true` (MemAlphaTrainer computes the advantage over each instance's
chunk rows), verl's own row mini-batches of `mini_batch_rows` = ppo_mini_batch_size x n rows,
shuffled instances, the capped memorisation prompt (6144) + 2048-token response, Qwen3's
thinking switched off in verl's chat template, validation every `validation.every` steps (not
before training) on Memalpha validation scored by r1 alone, and the recipe's checkpoint: the
last, or the best validated one (every validation saved and kept).
Known differences from the official fork: verl orders a step's rows by sequence-length balance
across DP ranks (the fork: turn-major), so a mini-batch mixes turns; vLLM takes one engine seed
(rollout.seed = sampling.seed, else the run seed), so validation.sampling.seed must be null.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from memrepro.tracking.store import EXPERIMENT
from memrepro.train import LOSS_AGG_MODES, TOKEN_MEAN
from memrepro.train.recipes import AGENT_FACTS
from memrepro.verl import (
    AGENT_LOOP_CONFIG,
    AGENT_NAME,
    MEMALPHA_AGENT_NAME,
    REWARD_FILE,
    REWARD_NAME,
)

RAY_JOB_SCRIPT = "workflow/scripts/ray_job.sh"
MAIN_MODULE = "memrepro.verl.main"
RESOLVER = "memrepro_verl"  # ${memrepro_verl:NAME} -> a file of this package, resolved by main.py
PACKAGE_FILES = {"agent_loop_config": AGENT_LOOP_CONFIG, "reward_file": REWARD_FILE}
LOGGERS = ("console", "mlflow", "file")  # file: VERL_FILE_LOGGER_PATH, read by memrepro.verl.job

# settings["verl"] (config: training.verl): what only verl reads; every key is required. In
# brackets the official run's value (run_memory_*.sh in MemAgent's official code).
VERL_KEYS: dict[str, tuple[type, ...]] = {
    "tensor_parallel_size": (int,),  # vLLM TP of a rollout replica (7B: 1, 14B: 2)
    "gpu_memory_utilization": (float,),  # vLLM share of GPU memory (0.6)
    "max_num_batched_tokens": (int,),  # vLLM (16384, chunked prefill)
    "max_num_seqs": (int,),  # vLLM (1024)
    "enforce_eager": (bool,),  # vLLM without CUDA graphs (false)
    "template_tokens": (int,),  # prompt allowance beyond query+memory+chunk (8192-7048 = 1144)
    "ppo_max_token_len_per_gpu": (int,),  # dynamic-batch tokens per GPU, update (16384)
    "log_prob_max_token_len_per_gpu": (int,),  # ... old/ref log-prob passes (32768)
    "param_offload": (bool,),  # FSDP actor params to CPU (true)
    "optimizer_offload": (bool,),  # FSDP optimizer state to CPU (true)
    "ref_param_offload": (bool,),  # FSDP reference params to CPU (true)
    "gradient_checkpointing": (bool,),  # (true)
    # the actor's attention (sdpa: the train lock has no flash-attn, an sdist that would compile on
    # the cluster; verl's padding-free path then uses its own torch helpers. envs/README.md)
    "attn_implementation": (str,),
    "fsdp_size": (int,),  # FSDP shard group, -1 = all GPUs (official: 8 for 7B, 16 for 14B)
    "agent_workers": (int,),  # verl agent-loop worker actors (8)
    "max_checkpoints": (int, type(None)),  # checkpoints kept, null = all (official: all)
}


# Mem-α's memorisation prompt is capped by agent.prompt_cap, so no template allowance
MEMALPHA_VERL_KEYS = {key: kinds for key, kinds in VERL_KEYS.items() if key != "template_tokens"}


class SettingsError(ValueError):
    """Training settings verl cannot run; the message names the key."""


@dataclass(frozen=True)
class VerlPaths:
    """Where one job's verl inputs and checkpoints live (relative paths are fine: main.py makes
    them absolute before Ray sees them)."""

    train_files: str | os.PathLike[str]  # parquet of memrepro.verl.dataset
    val_files: str | os.PathLike[str]
    model: str | os.PathLike[str]  # Hugging Face model directory to start from
    checkpoints: str | os.PathLike[str]  # verl's trainer.default_local_dir (global_step_N/)


def package_file(name: str) -> str:
    """The `memrepro_verl` resolver: a package file by name (see PACKAGE_FILES)."""
    if name not in PACKAGE_FILES:
        raise KeyError(f"{_package_ref(name)}: unknown name (known: {sorted(PACKAGE_FILES)})")
    return str(PACKAGE_FILES[name])


def _package_ref(name: str) -> str:
    return f"${{{RESOLVER}:{name}}}"


# --- reading and checking the settings -----------------------------------------------------------


def _get(settings: Mapping[str, Any], key: str) -> Any:
    value: Any = settings
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            raise SettingsError(f"training settings: missing key {key}")
        value = value[part]
    return value


def _typed(settings: Mapping[str, Any], key: str, kinds: tuple[type, ...]) -> Any:
    value = _get(settings, key)
    # bool is an int subclass: accepted only where a bool is asked; an int may stand for a float
    ok = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)
    if not ok and float in kinds and isinstance(value, int) and not isinstance(value, bool):
        ok = True
    if not ok:
        names = " or ".join("null" if k is type(None) else k.__name__ for k in kinds)
        raise SettingsError(f"training settings: {key} must be {names}, got {value!r}")
    return value


def _int(settings: Mapping[str, Any], key: str, minimum: int) -> int:
    value = _typed(settings, key, (int,))
    if value < minimum:
        raise SettingsError(f"training settings: {key} must be >= {minimum}, got {value}")
    return value


def _float(settings: Mapping[str, Any], key: str, low: float, high: float | None = None) -> float:
    value = float(_typed(settings, key, (float,)))
    if value < low or (high is not None and value > high):
        bounds = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise SettingsError(f"training settings: {key} must be {bounds}, got {value}")
    return value


def _verl(settings: Mapping[str, Any], keys: Mapping[str, tuple[type, ...]]) -> dict[str, Any]:
    block = _get(settings, "verl")
    if not isinstance(block, Mapping):
        raise SettingsError(f"training settings: verl must be a mapping, got {block!r}")
    unknown = sorted(set(block) - set(keys))
    if unknown:
        raise SettingsError(f"training settings: verl: unknown key(s) {', '.join(unknown)}")
    return {key: _typed(settings, f"verl.{key}", kinds) for key, kinds in keys.items()}


def _sampling(settings: Mapping[str, Any], key: str) -> tuple[float, float]:
    return _float(settings, f"{key}.temperature", 0.0), _float(settings, f"{key}.top_p", 0.0, 1.0)


def _seed(settings: Mapping[str, Any], key: str) -> int | None:
    """A sampling block's optional seed."""
    if "seed" not in _get(settings, key):
        return None
    return _typed(settings, f"{key}.seed", (int, type(None)))


def _validation_sampling(settings: Mapping[str, Any], every: int) -> tuple[float, float]:
    """Required only when validation runs; verl needs some value anyway, so the rollout's."""
    if every or "sampling" in _get(settings, "validation"):
        if _seed(settings, "validation.sampling") is not None:
            raise SettingsError(
                "training settings: validation.sampling.seed must be null for the verl backend "
                "(its vLLM engines take one seed: sampling.seed)"
            )
        return _sampling(settings, "validation.sampling")
    return _sampling(settings, "sampling")


@dataclass(frozen=True)
class Limits:
    """Token limits of one conversation in the MemAgent 8K window."""

    prompt: int  # query + memory + chunk + template
    response: int  # the longer of a memory update and a final answer
    model_len: int  # vLLM max_model_len


def token_limits(settings: Mapping[str, Any]) -> Limits:
    agent = {
        key: _int(settings, f"agent.{key}_tokens", 1)
        for key in ("query", "chunk", "memory", "final")
    }
    template = _int(settings, "verl.template_tokens", 0)
    prompt = agent["query"] + agent["memory"] + agent["chunk"] + template
    response = max(agent["memory"], agent["final"])
    return Limits(prompt, response, prompt + response)


def memalpha_token_limits(settings: Mapping[str, Any]) -> Limits:
    """A Mem-α chunk step: the capped memorisation prompt (official 6144) and its response."""
    prompt_cap = _get(settings, "agent.prompt_cap")
    if prompt_cap is None:
        raise SettingsError(
            "training settings: agent.prompt_cap must be set for verl (memalpha.training."
            "prompt_cap; official 6144): it is the rollout's prompt length"
        )
    prompt = _int(settings, "agent.prompt_cap", 1)
    response = _int(settings, "agent.max_new_tokens", 1)
    return Limits(prompt, response, prompt + response)


def memalpha_mini_batch_size(settings: Mapping[str, Any]) -> int:
    """Prompts per mini-batch such that verl updates on mini_batch_rows chunk rows at a time
    (ppo_mini_batch_size x rollout.n rows; official: 32 rows per update)."""
    rows = _int(settings, "mini_batch_rows", 1)
    group = _int(settings, "group_size", 1)
    batch = _int(settings, "rollout_batch", 1)
    if rows % group or batch % (rows // group):
        raise SettingsError(
            f"training settings: mini_batch_rows={rows} must be a multiple of group_size={group}"
            f" whose quotient divides rollout_batch={batch}"
        )
    return rows // group


@dataclass(frozen=True)
class Recipe:
    """What differs between the two agents' verl runs."""

    agent_loop: str
    verl_keys: Mapping[str, tuple[type, ...]]
    limits: Callable[[Mapping[str, Any]], Limits]
    mini_batch: Callable[[Mapping[str, Any]], int]  # ppo_mini_batch_size
    norm_adv_by_std: bool  # Mem-α's GRPO divides by the group std, MemAgent's does not
    shuffle: bool  # the official Mem-α run shuffles its instances, MemAgent's does not
    # MemAgent validates on RULER-HQA dev before training too; Mem-α (val_before_train=false)
    # only every validation.every steps, on Memalpha validation
    validates_before_training: bool
    # Mem-α's recipes keep the last or the best validated checkpoint (`checkpoint`); MemAgent
    # the last
    chooses_checkpoint: bool
    # Mem-α's agent.enable_thinking goes into verl's chat template (MemAgent: Qwen2.5, none)
    thinking_switch: bool


def _checkpoints(
    settings: Mapping[str, Any], recipe: Recipe, verl: Mapping[str, Any], every: int, steps: int
) -> tuple[int, int | None]:
    """(save_freq, checkpoints kept). The job merges the last checkpoint, so verl saves at least
    at the end (it always saves the last step when save_freq > 0); keeping the best validated
    one instead (`checkpoint: best`) saves at every validation (the same steps: verl validates
    every `every` steps and after the last) and keeps all of them."""
    if not recipe.chooses_checkpoint or _get(settings, "checkpoint") == "last":
        return _int(settings, "save_every", 0) or steps, verl["max_checkpoints"]
    if _get(settings, "checkpoint") != "best":
        raise SettingsError(
            f"training settings: checkpoint must be 'last' or 'best', got "
            f"{_get(settings, 'checkpoint')!r}"
        )
    if not every:
        raise SettingsError(
            "training settings: checkpoint 'best' needs validation (validation.every > 0)"
        )
    return every, None


def _check_hardware(settings: Mapping[str, Any], verl: Mapping[str, Any]) -> tuple[int, int]:
    nodes = _int(settings, "nodes", 1)
    gpus = _typed(settings, "gpus_per_node", (int,))
    if gpus < 1:
        raise SettingsError(
            f"training settings: gpus_per_node must be >= 1 for the verl backend, got {gpus} "
            "(training.runs.<run>.gpus_per_node)"
        )
    world = nodes * gpus
    tp = verl["tensor_parallel_size"]
    if tp < 1 or tp > gpus or world % tp:
        raise SettingsError(
            f"training settings: verl.tensor_parallel_size={tp} must be >= 1, at most "
            f"gpus_per_node={gpus} and divide the {world} GPUs"
        )
    fsdp = verl["fsdp_size"]
    if fsdp != -1 and (fsdp < 1 or world % fsdp):
        raise SettingsError(
            f"training settings: verl.fsdp_size={fsdp} must be -1 (all GPUs) or divide {world}"
        )
    return nodes, gpus


def _check_verl(verl: Mapping[str, Any], limits: Limits) -> None:
    if not 0 < verl["gpu_memory_utilization"] <= 1:
        raise SettingsError(
            "training settings: verl.gpu_memory_utilization must be in (0, 1], got "
            f"{verl['gpu_memory_utilization']}"
        )
    for key in ("ppo_max_token_len_per_gpu", "log_prob_max_token_len_per_gpu"):
        if verl[key] < limits.model_len:
            raise SettingsError(
                f"training settings: verl.{key}={verl[key]} is below one conversation's "
                f"{limits.model_len} tokens (prompt {limits.prompt} + response {limits.response})"
            )
    for key in ("max_num_batched_tokens", "max_num_seqs", "agent_workers"):
        if verl[key] < 1:
            raise SettingsError(f"training settings: verl.{key} must be >= 1, got {verl[key]}")
    if verl["max_checkpoints"] is not None and verl["max_checkpoints"] < 1:
        raise SettingsError(
            f"training settings: verl.max_checkpoints must be >= 1 or null, got "
            f"{verl['max_checkpoints']}"
        )


def ppo_mini_batch_size(settings: Mapping[str, Any]) -> int:
    """Prompts per mini-batch such that a step makes exactly mini_batches_per_step updates."""
    batch = _int(settings, "rollout_batch", 1)
    updates = _int(settings, "mini_batches_per_step", 1)
    if batch % updates:
        raise SettingsError(
            f"training settings: rollout_batch={batch} must be divisible by "
            f"mini_batches_per_step={updates} (each update takes whole questions' groups)"
        )
    return batch // updates


MEMAGENT = Recipe(
    agent_loop=AGENT_NAME,
    verl_keys=VERL_KEYS,
    limits=token_limits,
    mini_batch=ppo_mini_batch_size,
    norm_adv_by_std=AGENT_FACTS["memagent"]["norm_adv_by_std"],
    shuffle=AGENT_FACTS["memagent"]["verl_shuffle"],
    validates_before_training=True,
    chooses_checkpoint=False,
    thinking_switch=False,
)
MEMALPHA = Recipe(
    agent_loop=MEMALPHA_AGENT_NAME,
    verl_keys=MEMALPHA_VERL_KEYS,
    limits=memalpha_token_limits,
    mini_batch=memalpha_mini_batch_size,
    norm_adv_by_std=AGENT_FACTS["memalpha"]["norm_adv_by_std"],
    shuffle=AGENT_FACTS["memalpha"]["verl_shuffle"],
    validates_before_training=False,
    chooses_checkpoint=True,
    thinking_switch=True,
)


# --- the overrides ------------------------------------------------------------------------------

_PLAIN = re.compile(r"[A-Za-z0-9_./:+@-]+")  # what Hydra's grammar reads as a plain string
_RESERVED = {"true", "false", "null"}


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def hydra_value(value: Any) -> str:
    """One Python value as a Hydra override value (strings quoted unless plainly a word/path)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(hydra_value(item) for item in value) + "]"
    text = os.fspath(value)
    if text.startswith("${"):  # an interpolation, passed through
        return text
    if _PLAIN.fullmatch(text) and text.lower() not in _RESERVED and not _is_number(text):
        return text
    # quoted: Hydra unescapes backslashes only before a quote or at the end of the string
    escaped = re.sub(r"(\\+)(?='|$)", lambda m: m.group(1) * 2, text).replace("'", "\\'")
    return f"'{escaped}'"


def _advantage_switches(settings: Mapping[str, Any], recipe: Recipe) -> tuple[bool, bool]:
    """(the advantage divided by the group std, the KL in the reward): the agent's own, or what a
    MemAgent recipe sets (Algorithm 1's variant: both on). Mem-α's trainer computes its advantage
    itself and takes no KL into its reward."""
    norm_by_std = recipe.norm_adv_by_std
    if "norm_adv_by_std" in settings:
        norm_by_std = _typed(settings, "norm_adv_by_std", (bool,))
    in_reward = _typed(settings, "kl_in_reward", (bool,)) if "kl_in_reward" in settings else False
    if in_reward and recipe.chooses_checkpoint:
        raise SettingsError(
            "training settings: kl_in_reward: Mem-α's trainer takes no KL into its reward "
            "(a MemAgent recipe key)"
        )
    return norm_by_std, in_reward


def _kl_in_reward(coef: float) -> list[tuple[str, Any]]:
    """Algorithm 1's KL term: verl subtracts coef x low_var_kl of every response token from the
    token rewards, and GRPO sums the final answer's (the row it scores) into the reward."""
    return [
        ("algorithm.kl_penalty", "low_var_kl"),
        ("algorithm.kl_ctrl.type", "fixed"),
        ("algorithm.kl_ctrl.kl_coef", coef),
    ]


def _pairs(settings: Mapping[str, Any], paths: VerlPaths, recipe: Recipe) -> list[tuple[str, Any]]:
    verl = _verl(settings, recipe.verl_keys)
    limits = recipe.limits(settings)
    nodes, gpus = _check_hardware(settings, verl)
    _check_verl(verl, limits)
    mini_batch = recipe.mini_batch(settings)
    steps = _int(settings, "steps", 1)
    seed = _typed(settings, "seed", (int,))
    sampling_seed = _seed(settings, "sampling")
    temperature, top_p = _sampling(settings, "sampling")
    every = _int(settings, "validation.every", 0)
    val_n = _int(settings, "validation.n", 1)
    val_temperature, val_top_p = _validation_sampling(settings, every)
    save_freq, kept = _checkpoints(settings, recipe, verl, every, steps)
    norm_by_std, in_reward = _advantage_switches(settings, recipe)
    kl_coef = _float(settings, "kl_coef", 0.0)
    loss_kl = 0.0 if in_reward else kl_coef  # Algorithm 1: the KL in the reward, not the loss
    run, stage = _typed(settings, "run", (str,)), _typed(settings, "stage", (str,))
    backend = _get(settings, "backend")
    if backend != "verl":
        raise SettingsError(f"training settings: backend must be 'verl', got {backend!r}")

    actor, rollout = "actor_rollout_ref.actor", "actor_rollout_ref.rollout"
    pairs = [
        ("trainer.use_v1", True),
        ("trainer.v1.trainer_mode", "sync"),
        # Multi-Conv advantage: exactly `grpo`, no std (Eq. 1; Algorithm 1's variant: with std)
        ("algorithm.adv_estimator", "grpo"),
        ("algorithm.norm_adv_by_std_in_grpo", norm_by_std),
        ("algorithm.use_kl_in_reward", in_reward),
        *(_kl_in_reward(kl_coef) if in_reward else []),
        ("critic.enable", False),
        # DAPO's dynamic sampling: the recipe's (official: off; MemAgent's paper recipe: on)
        ("algorithm.filter_groups.enable", _typed(settings, "filter_groups", (bool,))),
        ("algorithm.filter_groups.metric", "reward"),
        # data: the parquet of memrepro.verl.dataset, sequential like the official run
        ("data.train_files", paths.train_files),
        ("data.val_files", paths.val_files),
        ("data.train_batch_size", _int(settings, "rollout_batch", 1)),
        ("data.max_prompt_length", limits.prompt),
        ("data.max_response_length", limits.response),
        ("data.shuffle", recipe.shuffle),
        ("data.seed", seed),
        ("data.filter_overlong_prompts", False),
        ("data.truncation", "error"),
        ("data.return_raw_chat", True),
        # model
        ("actor_rollout_ref.model.path", paths.model),
        ("actor_rollout_ref.model.enable_gradient_checkpointing", verl["gradient_checkpointing"]),
        ("actor_rollout_ref.model.use_remove_padding", True),
        (
            "+actor_rollout_ref.model.override_config.attn_implementation",
            verl["attn_implementation"],
        ),
        # actor update: exactly mini_batches_per_step updates (MemAgentTrainer), token-mean
        (f"{actor}.ppo_mini_batch_size", mini_batch),
        (f"{actor}.ppo_epochs", 1),
        (f"{actor}.shuffle", False),
        (f"{actor}.data_loader_seed", seed),
        (f"{actor}.use_dynamic_bsz", True),
        (f"{actor}.ppo_max_token_len_per_gpu", verl["ppo_max_token_len_per_gpu"]),
        (f"{actor}.loss_agg_mode", _loss_agg(settings)),
        (f"{actor}.policy_loss.loss_mode", "vanilla"),
        (f"{actor}.clip_ratio_low", _float(settings, "clip_low", 0.0)),
        (f"{actor}.clip_ratio_high", _float(settings, "clip_high", 0.0)),
        (f"{actor}.clip_ratio_c", _float(settings, "clip_c", 1.0)),
        (f"{actor}.entropy_coeff", 0),
        (f"{actor}.use_kl_loss", loss_kl > 0),  # verl loads a reference model for either KL
        (f"{actor}.kl_loss_coef", loss_kl),
        (f"{actor}.kl_loss_type", "low_var_kl"),
        (f"{actor}.grad_clip", _float(settings, "grad_clip", 0.0)),
        (f"{actor}.optim.lr", _float(settings, "lr", 0.0)),
        (f"{actor}.optim.weight_decay", _float(settings, "weight_decay", 0.0)),
        (f"{actor}.optim.clip_grad", _float(settings, "grad_clip", 0.0)),
        (f"{actor}.optim.lr_scheduler_type", "constant"),
        (f"{actor}.optim.lr_warmup_steps", _int(settings, "warmup_steps", 0)),
        (f"{actor}.optim.lr_warmup_steps_ratio", 0.0),
        (f"{actor}.fsdp_config.param_offload", verl["param_offload"]),
        (f"{actor}.fsdp_config.optimizer_offload", verl["optimizer_offload"]),
        (f"{actor}.fsdp_config.fsdp_size", verl["fsdp_size"]),
        (f"{actor}.fsdp_config.seed", seed),
        ("actor_rollout_ref.ref.fsdp_config.param_offload", verl["ref_param_offload"]),
        (
            "actor_rollout_ref.ref.log_prob_max_token_len_per_gpu",
            verl["log_prob_max_token_len_per_gpu"],
        ),
        # rollout: vLLM server, one fresh-context call per conversation
        (f"{rollout}.name", "vllm"),
        (f"{rollout}.mode", "async"),
        (f"{rollout}.n", _int(settings, "group_size", 1)),
        (f"{rollout}.temperature", temperature),
        (f"{rollout}.top_p", top_p),
        (f"{rollout}.top_k", -1),
        (f"{rollout}.seed", seed if sampling_seed is None else sampling_seed),
        (f"{rollout}.prompt_length", limits.prompt),
        (f"{rollout}.response_length", limits.response),
        (f"{rollout}.max_model_len", limits.model_len),
        (f"{rollout}.tensor_model_parallel_size", verl["tensor_parallel_size"]),
        (f"{rollout}.gpu_memory_utilization", verl["gpu_memory_utilization"]),
        (f"{rollout}.max_num_batched_tokens", verl["max_num_batched_tokens"]),
        (f"{rollout}.max_num_seqs", verl["max_num_seqs"]),
        (f"{rollout}.enforce_eager", verl["enforce_eager"]),
        (f"{rollout}.enable_chunked_prefill", True),
        (f"{rollout}.log_prob_max_token_len_per_gpu", verl["log_prob_max_token_len_per_gpu"]),
        (f"{rollout}.val_kwargs.n", val_n),
        (f"{rollout}.val_kwargs.temperature", val_temperature),
        (f"{rollout}.val_kwargs.top_p", val_top_p),
        (f"{rollout}.val_kwargs.top_k", -1),
        (f"{rollout}.val_kwargs.do_sample", val_temperature > 0),
        (f"{rollout}.agent.default_agent_loop", recipe.agent_loop),
        (f"{rollout}.agent.agent_loop_config_path", _package_ref("agent_loop_config")),
        (f"{rollout}.agent.num_workers", verl["agent_workers"]),
        # reward: the strict boxed verifier on the final conversation
        ("reward.reward_manager.name", "naive"),
        ("reward.custom_reward_function.path", _package_ref("reward_file")),
        ("reward.custom_reward_function.name", REWARD_NAME),
        # schedule, checkpoints (resumable), logging
        ("trainer.total_training_steps", steps),
        ("trainer.total_epochs", steps),  # an epoch has >= 1 step: never the binding limit
        ("trainer.nnodes", nodes),
        ("trainer.n_gpus_per_node", gpus),
        ("trainer.logger", list(LOGGERS)),
        ("trainer.project_name", EXPERIMENT),
        ("trainer.experiment_name", f"{run}-{stage}"),
        ("trainer.default_local_dir", paths.checkpoints),
        ("trainer.resume_mode", "auto"),
        ("trainer.save_freq", save_freq),
        ("trainer.max_actor_ckpt_to_keep", kept),
        ("trainer.test_freq", every or -1),
        ("trainer.val_before_train", recipe.validates_before_training and every > 0),
        ("trainer.log_val_generations", 0),
    ]
    if recipe.thinking_switch:  # verl templates every prompt with it (the loop checks it agrees)
        thinking = _typed(settings, "agent.enable_thinking", (bool,))
        pairs.append(("+data.apply_chat_template_kwargs.enable_thinking", thinking))
    return pairs


def _loss_agg(settings: Mapping[str, Any]) -> str:
    """verl's loss_agg_mode: the run's `loss_agg` (Mem-α's switch), else token-mean."""
    mode = settings.get("loss_agg", TOKEN_MEAN)
    if mode not in LOSS_AGG_MODES:
        raise SettingsError(f"training settings: loss_agg must be one of {LOSS_AGG_MODES}")
    return mode


def verl_overrides(
    settings: Mapping[str, Any], paths: VerlPaths, recipe: Recipe = MEMAGENT
) -> list[str]:
    """Every Hydra override of verl's ppo_trainer config for one training job, in a fixed order.

    Raises SettingsError (naming the key) on settings verl cannot run.
    """
    return [f"{key}={hydra_value(value)}" for key, value in _pairs(settings, paths, recipe)]


def verl_command(
    settings: Mapping[str, Any],
    paths: VerlPaths,
    recipe: Recipe = MEMAGENT,
    container: str | None = None,
) -> list[str]:
    """The job's full argv: Ray across the job's nodes, `python -m memrepro.verl.main` on the head;
    with `container` (the train image) Ray and verl run in it, srun on the host."""
    overrides = verl_overrides(settings, paths, recipe)
    in_image = ["--container", container] if container else []
    return [
        "bash",
        RAY_JOB_SCRIPT,
        "--nodes",
        str(settings["nodes"]),
        "--gpus-per-node",
        str(settings["gpus_per_node"]),
        *in_image,
        "--",
        "python",
        "-u",
        "-m",
        MAIN_MODULE,
        *overrides,
    ]
