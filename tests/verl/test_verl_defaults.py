"""The verl 0.9.1 defaults `memrepro recipe-diff` fills unset keys with, checked against the
installed verl's own generated trainer config (skipped where verl is absent)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

verl = pytest.importorskip("verl")

from memrepro.train.recipes import KEYS, _flatten, from_verl  # noqa: E402
from memrepro.train.verl_defaults import BASES  # noqa: E402


def test_the_transcribed_defaults_are_verl_0_9_1s_effective_ones():
    assert verl.__version__ == "0.9.1"
    generated = Path(verl.__file__).parent / "trainer/config/_generated_ppo_trainer.yaml"
    flat = _flatten(yaml.safe_load(generated.read_text()))
    found = from_verl(flat, generated)
    # effective values: the KL loss is off, a warm-up of -1 steps defers to a ratio of 0
    assert flat["actor_rollout_ref.actor.use_kl_loss"] is False and found["kl_loss_coef"] == 0
    assert found.pop("warmup_steps") == -1
    assert found.pop("mini_batch_rows") == 256 * flat["actor_rollout_ref.rollout.n"]  # derived
    assert flat["actor_rollout_ref.actor.optim.lr_warmup_steps_ratio"] == 0
    assert flat["trainer.total_training_steps"] is None and "steps" not in found
    assert flat["trainer.total_epochs"] == BASES["verl-0.9.1"].total_epochs
    expected = {
        k: v for k, v in BASES["verl-0.9.1"].values.items() if k not in ("steps", "warmup_steps")
    }
    assert found == expected
    assert set(expected) == {k for k, spec in KEYS.items() if spec.verl} - {"steps", "warmup_steps"}
