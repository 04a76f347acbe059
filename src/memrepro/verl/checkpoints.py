"""verl 0.9.1 checkpoints: which step is the latest, and how to turn it into a Hugging Face model.

Layout written by verl's trainer (`trainer.default_local_dir`):
    global_step_N/actor/      FSDP shards + huggingface/ (config, tokenizer) of step N
    global_step_N/data.pt     dataloader state
    latest_checkpointed_iteration.txt   N, written after step N's checkpoint is complete
No verl import: the merge runs as a command in the train env.
"""

from __future__ import annotations

import os
from pathlib import Path

TRACKER = "latest_checkpointed_iteration.txt"


def step_dir(checkpoint_dir: str | os.PathLike[str], step: int) -> Path:
    return Path(checkpoint_dir) / f"global_step_{step}"


def latest_step(checkpoint_dir: str | os.PathLike[str]) -> int | None:
    """The step verl resumes from (resume_mode=auto), or None when it would start afresh.

    Like verl's find_latest_ckpt_path: the tracker file names the step, and its directory must
    exist (a global_step_N without the tracker is an unfinished save).
    """
    tracker = Path(checkpoint_dir) / TRACKER
    if not tracker.is_file():
        return None
    text = tracker.read_text(encoding="utf-8").strip()
    try:
        step = int(text)
    except ValueError:
        raise ValueError(f"{tracker}: not a step number: {text!r}") from None
    return step if (step_dir(checkpoint_dir, step) / "actor").is_dir() else None


def merge_command(
    checkpoint_dir: str | os.PathLike[str], step: int, target_dir: str | os.PathLike[str]
) -> list[str]:
    """verl's model merger (0.9.1 CLI): FSDP shards of a step -> a Hugging Face model directory.

    The merger also saves the config, generation config and tokenizer from the checkpoint's
    actor/huggingface/ folder (verl writes the training tokenizer there at every save), so the
    official merger.sh step of copying the base model's tokenizer files is not needed.
    """
    return [
        "python",
        "-m",
        "verl.model_merger",
        "merge",
        "--backend",
        "fsdp",
        "--local_dir",
        str(step_dir(checkpoint_dir, step) / "actor"),
        "--target_dir",
        str(target_dir),
    ]
