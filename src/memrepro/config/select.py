"""`evaluation.select`: plan a subset of the systems, e.g. only the released checkpoints; and
`evaluation.hosted: false`: plan none that calls a hosted model (no API key).

Config files given together are merged key by key, so a second file can add to the paper config
but never remove from it; this key removes. With it, only the selected systems are evaluated:

- wherever another key names a system (the probe, the memory ablation, the RL ablation, the case
  studies, the scorers of `rescore`), `replace` swaps in another first (a run trained here for the
  released checkpoint of the same recipe), and what still names an unselected system is left out;
- a training run is planned only if a selected system evaluates its checkpoint.

Without a key for hosted models (`evaluation.hosted: false`), every system that calls one is left
out the same way: its model hosted (gpt-4.1-mini in the Mem-α framework), Mem0 (its LLM and
embedder), RAG's `openai` retriever (dropped from the system's `retrievers`, the others kept), and
every judge scorer whose model is hosted.

Applied to the merged config after the schema and before the cross-reference checks, so every
later step (matrix, jobs, reports) sees only what the selection keeps.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

from memrepro.layout import ConfigError

KEY = "evaluation.select"


def apply_selection(config: dict[str, Any]) -> dict[str, list[str]]:
    """Narrow `config` in place: without hosted models (`evaluation.hosted: false`), then to
    `evaluation.select` (nothing to do without it, or with it set to null). Returns where
    `replace` put a system: config key -> ["old → new", ...], so that an error found there
    later can name the `replace` entry the user wrote."""
    left_out = _leave_out_hosted(config) if config["evaluation"].get("hosted") is False else set()
    select = config["evaluation"].get("select")
    if not select:
        config["evaluation"].pop("select", None)
        return {}
    systems = config["evaluation"]["systems"]
    chosen = list(select["systems"])
    replace = select.get("replace", {})
    for key, names in (("systems", chosen), ("replace", [*replace, *replace.values()])):
        if hosted := sorted(set(names) & left_out):
            raise ConfigError(
                f"config key {KEY}.{key}: {', '.join(hosted)} call(s) a hosted model, which "
                "evaluation.hosted: false leaves out"
            )
        if unknown := sorted(set(names) - set(systems)):
            raise ConfigError(f"config key {KEY}.{key}: {_unknown(unknown, systems)}")
    config["evaluation"]["systems"] = {name: systems[name] for name in chosen}
    return _narrow_to(config, set(chosen), replace)


def _narrow_to(
    config: dict[str, Any], kept: set[str], replace: dict[str, str]
) -> dict[str, list[str]]:
    """Every key naming a system narrowed to `kept`, after `replace`; training runs no kept
    system evaluates dropped."""
    swapped: dict[str, list[str]] = {}

    def swap(name: str, key: str) -> str:
        if name in replace:
            swapped.setdefault(key, []).append(f"{KEY}.replace.{name} → {replace[name]}")
        return replace.get(name, name)

    _narrow_mapping(config["evaluation"], "probe", swap, kept)
    _narrow_example(config, swap, kept)
    _narrow_mapping(config["evaluation"], "memory_ablation", swap, kept)
    report = config["report"]
    if "rl_ablation" in report:
        groups = {
            group: {role: swap(name, f"report.rl_ablation.{group}") for role, name in roles.items()}
            for group, roles in report["rl_ablation"].items()
        }
        report["rl_ablation"] = {
            group: roles for group, roles in groups.items() if set(roles.values()) <= kept
        }
    if "case_studies" in report:
        studies = []
        for study in report["case_studies"]:
            system = swap(study["system"], f"report.case_studies.{len(studies)}")
            if system in kept:
                studies.append({**study, "system": system})
            else:
                swapped.pop(f"report.case_studies.{len(studies)}", None)
        report["case_studies"] = studies
    _narrow_rescore(config, swap, kept)
    _keep_evaluated_runs(config)
    return swapped


HOSTED_RETRIEVER = "openai"  # RAG's retriever on a hosted embedding model


def _leave_out_hosted(config: dict[str, Any]) -> set[str]:
    """`evaluation.hosted: false`: the systems and judge scorers that call a hosted model left
    out (the systems' names returned); a RAG system keeps its other retrievers."""
    systems = config["evaluation"]["systems"]
    kept = {}
    for name, spec in systems.items():
        if "retrievers" in spec:
            spec = {**spec, "retrievers": [r for r in spec["retrievers"] if r != HOSTED_RETRIEVER]}
            if not spec["retrievers"]:
                continue
        if spec["kind"] != "mem0" and not _hosted(config, spec["model"]):
            kept[name] = spec
    config["evaluation"]["systems"] = kept
    scorers = config.get("rescore") or {}
    for name, spec in list(scorers.items()):
        if "model" in spec and _hosted(config, spec["model"]):
            del scorers[name]
    _narrow_to(config, set(kept), {})
    return set(systems) - set(kept)


def _hosted(config: dict[str, Any], model: str) -> bool:
    return config["models"].get(model, {}).get("source") == "api"


def _unknown(names: list[str], systems: dict[str, Any]) -> str:
    """`unknown system(s) a, b`, with the closest system names where there are some."""
    close = {
        name: difflib.get_close_matches(name, list(systems), n=2, cutoff=0.6) for name in names
    }
    hints = [f"{name} (did you mean {' or '.join(c)}?)" if c else name for name, c in close.items()]
    return f"unknown system(s) {', '.join(hints)}"


def _narrow_mapping(
    section: dict[str, Any], name: str, swap: Callable[[str, str], str], kept: set[str]
) -> None:
    """A `{system: label}` block (probe, memory ablation): swapped, narrowed, dropped if empty."""
    block = section.get(name)
    if not block:
        return
    key = f"evaluation.{name}.systems"
    narrowed = {swap(system, key): label for system, label in block["systems"].items()}
    narrowed = {system: label for system, label in narrowed.items() if system in kept}
    if narrowed:
        section[name] = {**block, "systems": narrowed}
    else:
        del section[name]


def _narrow_example(
    config: dict[str, Any], swap: Callable[[str, str], str], kept: set[str]
) -> None:
    """Table 5's example systems swapped and narrowed; the block dropped if none is left."""
    example = config.get("memalpha", {}).get("example")
    if not example:
        return
    systems = [swap(s, "memalpha.example.systems") for s in example["systems"]]
    if chosen := list(dict.fromkeys(s for s in systems if s in kept)):
        example["systems"] = chosen
    else:
        del config["memalpha"]["example"]


def _narrow_rescore(
    config: dict[str, Any], swap: Callable[[str, str], str], kept: set[str]
) -> None:
    """Each scorer's `systems` swapped and narrowed; one left with none is dropped (a scorer
    that names no systems scores whatever the selection evaluates)."""
    scorers = config.get("rescore") or {}
    for name, spec in list(scorers.items()):
        if spec.get("systems") is None:
            continue
        systems = [swap(system, f"rescore.{name}.systems") for system in spec["systems"]]
        if chosen := [system for system in systems if system in kept]:
            spec["systems"] = chosen
        else:
            del scorers[name]


def _keep_evaluated_runs(config: dict[str, Any]) -> None:
    """Drop the training runs whose checkpoint no selected system evaluates, and with the last
    Mem-α run the rebuild of its training sets (`memalpha.build`)."""
    evaluated = {system["model"] for system in config["evaluation"]["systems"].values()}
    training = config["training"]
    training["runs"] = {name: run for name, run in training["runs"].items() if name in evaluated}
    for entry in training["recipes"].values():  # and what the recipes set for a dropped run
        if "runs" in entry:
            entry["runs"] = {run: keys for run, keys in entry["runs"].items() if run in evaluated}
    memalpha_training = config.get("memalpha", {}).get("training")
    if memalpha_training:
        memalpha_training["runs"] = {
            name: run for name, run in memalpha_training["runs"].items() if name in evaluated
        }
        if not memalpha_training["runs"]:
            config["memalpha"].pop("build", None)
