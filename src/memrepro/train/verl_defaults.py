"""What verl runs for a recipe key a trainer config leaves unset: the defaults of a named verl
version's `ppo_trainer` config, in the recipe keys' vocabulary (memrepro.train.recipes.KEYS), each
base transcribed with the file and commit it comes from. `memrepro recipe-diff` resolves every key
a file leaves unset over one of them, so a config that drops a setting reads its real value.

Two bases:
- verl 0.9.1, the version this pipeline pins (tests/verl checks the values against the
  installed verl's own generated config);
- MemAgent's verl fork, which its official scripts run: it reads the advantage's std division
  from its own key `algorithm.grpo_use_adv` (its trainer ignores `norm_adv_by_std_in_grpo`).

Effective values, not raw ones: `use_kl_loss: False` in both, so an unset KL coefficient runs no
KL loss (coefficient 0); `lr_warmup_steps: -1` defers to `lr_warmup_steps_ratio: 0`, so no
warm-up. `total_training_steps: null` makes verl run `total_epochs` over the data (30 epochs in
both): the steps then follow from the rows, which a config does not hold."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memrepro.train import TOKEN_MEAN


@dataclass(frozen=True)
class VerlBase:
    """One verl version's defaults for the recipe keys: its name, where they are transcribed
    from, the values, the verl key a recipe key is read from where it differs from verl's
    (KEYS), and its epochs (what runs where `total_training_steps` is null)."""

    name: str
    source: str
    values: Mapping[str, Any]
    read_from: Mapping[str, str] = field(default_factory=dict)
    total_epochs: int = 30


_COMMON: dict[str, Any] = {
    "steps": None,  # total_training_steps: null (epochs x rows / batch)
    "rollout_batch": 1024,
    "group_size": 1,
    "ppo_mini_batch_size": 256,
    "lr": 1e-6,
    "warmup_steps": 0,  # lr_warmup_steps -1: lr_warmup_steps_ratio 0.0
    "weight_decay": 0.01,
    "grad_clip": 1.0,
    "clip_low": 0.2,
    "clip_high": 0.2,
    "clip_c": 3.0,
    "kl_loss_coef": 0,  # use_kl_loss: False (kl_loss_coef 0.001 is then never read)
    "kl_loss_type": "low_var_kl",
    "kl_in_reward": False,
    "kl_reward_coef": 0,  # use_kl_in_reward: False (kl_ctrl.kl_coef 0.001 is then never read)
    "kl_reward_type": None,  # nor is kl_penalty: kl
    "entropy_coeff": 0,
    "loss_agg": TOKEN_MEAN,
    "adv_estimator": "gae",
    "norm_adv_by_std": True,
    "dynamic_sampling": False,
    "shuffle": True,
    "context_truncation": "error",
    "temperature": 1.0,
    "top_p": 1.0,
}

BASES: dict[str, VerlBase] = {
    "verl-0.9.1": VerlBase(
        "verl 0.9.1",
        "verl 0.9.1 (PyPI), verl/trainer/config/_generated_ppo_trainer.yaml",
        _COMMON,
    ),
    "memagent-fork": VerlBase(
        "MemAgent's verl fork",
        "BytedTsinghua-SIA/MemAgent@3dd21f68, verl/trainer/config/ppo_trainer.yaml and "
        "verl/trainer/ppo/ray_trainer.py (the std division read from algorithm.grpo_use_adv)",
        # the fork predates DAPO's filter_groups: no dynamic sampling
        _COMMON,
        read_from={"norm_adv_by_std": "algorithm.grpo_use_adv"},
    ),
}
