"""verl's custom reward for MemAgent rows: the `\\boxed{}` verifier on the final answer
(`scoring.verifier.training_reward`, the CPU trainer's reward too). The verifier is the
`verifier` keyword when given (verl's `custom_reward_function.reward_kwargs`), else the row's
`extra_info["verifier"]` (written by `memrepro.verl.dataset.write_verl_dataset`), else "official".

verl (reward.custom_reward_function.path/name = REWARD_FILE/REWARD_NAME) loads this file by path
and its reward managers call `compute_score(data_source=..., solution_str=..., ground_truth=...,
extra_info=...)` on the last conversation of a session only, with `solution_str` decoded with
`skip_special_tokens=True`. A float result is logged as `acc` beside the score.
"""

from __future__ import annotations

from typing import Any

from memrepro.scoring.verifier import DEFAULT_VERIFIER, check_verifier, training_reward


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    verifier: str | None = None,
    **kwargs: Any,
) -> float:
    """1.0 iff the last `\\boxed{}` of the answer matches a ground truth, else 0.0."""
    answers = ground_truths(ground_truth, data_source, extra_info)
    if verifier is None:
        verifier = (extra_info or {}).get("verifier") or DEFAULT_VERIFIER
    return training_reward(solution_str, answers, data_source, check_verifier(verifier))


def ground_truths(value: Any, data_source: str, extra_info: dict[str, Any] | None) -> list[str]:
    """The answers as strings; parquet hands them over as a numpy array, JSON as a list."""
    if isinstance(value, str):
        value = [value]
    elif hasattr(value, "tolist"):
        value = value.tolist()
    answers = [str(answer) for answer in value or []]
    if not answers:
        index = (extra_info or {}).get("index")
        raise ValueError(f"{data_source} row {index!r}: reward_model.ground_truth is empty")
    return answers
