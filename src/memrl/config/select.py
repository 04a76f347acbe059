"""`evaluation.select`: plan a subset of the systems, e.g. only the released checkpoints.

Config files given together are merged key by key, so a second file can add to the paper config
but never remove from it; this key removes. With it, only the selected systems are evaluated:

- wherever another key names a system (the probe, the memory ablation, the RL ablation, the case
  studies), `replace` swaps in another first (a run trained here for the released checkpoint of
  the same recipe), and what still names an unselected system is left out;
- a training run is planned only if a selected system evaluates its checkpoint.

Applied to the merged config after the schema and before the cross-reference checks, so every
later step (matrix, jobs, reports) sees only what the selection keeps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memrl.config.base import ConfigError

KEY = "evaluation.select"


def apply_selection(config: dict[str, Any]) -> None:
    """Narrow `config` in place to `evaluation.select` (nothing to do without it)."""
    select = config["evaluation"].get("select")
    if not select:
        return
    systems = config["evaluation"]["systems"]
    chosen = list(select["systems"])
    replace = select.get("replace", {})
    for key, names in (("systems", chosen), ("replace", list(replace.values()))):
        if unknown := sorted(set(names) - set(systems)):
            raise ConfigError(f"config key {KEY}.{key}: unknown system(s) {', '.join(unknown)}")
    config["evaluation"]["systems"] = {name: systems[name] for name in chosen}
    kept = set(chosen)

    def swap(name: str) -> str:
        return replace.get(name, name)

    _narrow_mapping(config["evaluation"], "probe", swap, kept)
    _narrow_mapping(config["evaluation"], "memory_ablation", swap, kept)
    report = config["report"]
    if "rl_ablation" in report:
        groups = {
            group: {role: swap(name) for role, name in roles.items()}
            for group, roles in report["rl_ablation"].items()
        }
        report["rl_ablation"] = {
            group: roles for group, roles in groups.items() if set(roles.values()) <= kept
        }
    if "case_studies" in report:
        studies = [{**study, "system": swap(study["system"])} for study in report["case_studies"]]
        report["case_studies"] = [study for study in studies if study["system"] in kept]
    _keep_evaluated_runs(config)


def _narrow_mapping(
    section: dict[str, Any], name: str, swap: Callable[[str], str], kept: set[str]
) -> None:
    """A `{system: label}` block (probe, memory ablation): swapped, narrowed, dropped if empty."""
    block = section.get(name)
    if not block:
        return
    narrowed = {swap(system): label for system, label in block["systems"].items()}
    narrowed = {system: label for system, label in narrowed.items() if system in kept}
    if narrowed:
        section[name] = {**block, "systems": narrowed}
    else:
        del section[name]


def _keep_evaluated_runs(config: dict[str, Any]) -> None:
    """Drop the training runs whose checkpoint no selected system evaluates."""
    evaluated = {system["model"] for system in config["evaluation"]["systems"].values()}
    runs = config["training"]["runs"]
    config["training"]["runs"] = {name: run for name, run in runs.items() if name in evaluated}
    memalpha_training = config.get("memalpha", {}).get("training")
    if memalpha_training:
        memalpha_training["runs"] = {
            name: run for name, run in memalpha_training["runs"].items() if name in evaluated
        }
