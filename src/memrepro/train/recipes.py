"""A training recipe, key by key: the settings a trained model's job ran, in one vocabulary with
what its paper states and what its official script runs (both transcribed, each value with where
it comes from, in the paper files' `recipe` section), and with any other run's verl config.

The vocabulary is verl's: each key names the Hydra key of verl's `ppo_trainer` config it is read
from, so a third party's verl YAML or JSON of overrides maps onto it (`memrepro recipe-diff`), and a
test checks that our own verl overrides read back as the job's recipe. A train job writes its
recipe beside its checkpoint (RECIPE_FILE); the `recipes` tables read those files.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memrepro.train import TOKEN_MEAN

RECIPE_FILE = "recipe.json"  # beside a trained checkpoint: what its job ran
SIDES = ("paper", "official")  # the transcribed recipes of a paper file's `recipe` section
SIDE_NAMES = {"paper": "paper recipe", "official": "official-script recipe"}


@dataclass(frozen=True)
class RecipeKey:
    label: str  # what the tables print
    verl: str | None  # the verl Hydra key it reads from (None: not a verl setting)


ACTOR, ROLLOUT = "actor_rollout_ref.actor", "actor_rollout_ref.rollout"
EPOCHS, ROLLOUT_N = "trainer.total_epochs", f"{ROLLOUT}.n"
WARMUP_RATIO = f"{ACTOR}.optim.lr_warmup_steps_ratio"
KL_IN_REWARD, KL_PENALTY = "algorithm.use_kl_in_reward", "algorithm.kl_penalty"
KL_CTRL = "algorithm.kl_ctrl"
KEYS: dict[str, RecipeKey] = {
    "steps": RecipeKey("training steps", "trainer.total_training_steps"),
    "rollout_batch": RecipeKey("prompts per step", "data.train_batch_size"),
    "group_size": RecipeKey("rollouts per prompt (G)", f"{ROLLOUT}.n"),
    "ppo_mini_batch_size": RecipeKey("prompts per update", f"{ACTOR}.ppo_mini_batch_size"),
    # what verl updates on: ppo_mini_batch_size x rollout.n rows (Mem-α's fork: chunk rows, one
    # chunk step of one trajectory each, at rollout.n 1); derived, so read from no key itself
    "mini_batch_rows": RecipeKey("rows per update", None),
    "lr": RecipeKey("learning rate", f"{ACTOR}.optim.lr"),
    "warmup_steps": RecipeKey("LR warm-up steps", f"{ACTOR}.optim.lr_warmup_steps"),
    "weight_decay": RecipeKey("weight decay", f"{ACTOR}.optim.weight_decay"),
    "grad_clip": RecipeKey("gradient clip", f"{ACTOR}.grad_clip"),
    "clip_low": RecipeKey("PPO clip ε_low", f"{ACTOR}.clip_ratio_low"),
    "clip_high": RecipeKey("PPO clip ε_high", f"{ACTOR}.clip_ratio_high"),
    "clip_c": RecipeKey("dual clip c", f"{ACTOR}.clip_ratio_c"),
    "kl_loss_coef": RecipeKey("KL loss coefficient", f"{ACTOR}.kl_loss_coef"),
    "kl_loss_type": RecipeKey("KL loss estimator", f"{ACTOR}.kl_loss_type"),
    "kl_in_reward": RecipeKey("KL in the reward", KL_IN_REWARD),
    # effective values: 0 and None where the KL is not in the reward (verl then reads neither)
    "kl_reward_coef": RecipeKey("KL reward coefficient β", f"{KL_CTRL}.kl_coef"),
    "kl_reward_type": RecipeKey("KL estimator in the reward", KL_PENALTY),
    "entropy_coeff": RecipeKey("entropy bonus", f"{ACTOR}.entropy_coeff"),
    "loss_agg": RecipeKey("loss aggregation", f"{ACTOR}.loss_agg_mode"),
    "adv_estimator": RecipeKey("advantage estimator", "algorithm.adv_estimator"),
    "norm_adv_by_std": RecipeKey("advantage ÷ group std", "algorithm.norm_adv_by_std_in_grpo"),
    "dynamic_sampling": RecipeKey("DAPO dynamic sampling", "algorithm.filter_groups.enable"),
    "shuffle": RecipeKey("data shuffled", "data.shuffle"),
    "context_truncation": RecipeKey("long-context truncation", "data.truncation"),
    "temperature": RecipeKey("rollout temperature", f"{ROLLOUT}.temperature"),
    "top_p": RecipeKey("rollout top-p", f"{ROLLOUT}.top_p"),
    "checkpoint": RecipeKey("checkpoint kept", None),
    # Mem-α's own: its reward weights (r1 + β·r3 + r2 + γ·r4), its chunk prompt cap, its turns
    "beta": RecipeKey("compression weight β", None),
    "gamma": RecipeKey("content weight γ", None),
    "prompt_cap": RecipeKey("chunk prompt cap (tokens)", None),
    "turns": RecipeKey("tool-call turns per chunk", None),
}
# Mem-α's fork samples its groups itself (`customized_grpo_rollout_n`; rollout.n stays 1)
VERL_ALIASES = {"customized_grpo_rollout_n": "group_size"}

# What each agent's training does where no setting says (its official behaviour; verl's recipes in
# memrepro.verl.overrides read it from here): MemAgent's advantage is not divided by the group's std
# and its rows are read in order, its context cut in its centre at max_chunks x chunk tokens (by
# our agent loop on both backends); Mem-α divides, shuffles, and memorises every chunk (no cut)
AGENT_FACTS: dict[str, dict[str, Any]] = {
    "memagent": {"norm_adv_by_std": False, "verl_shuffle": False, "context_truncation": "center"},
    "memalpha": {"norm_adv_by_std": True, "verl_shuffle": True, "context_truncation": None},
}
MEMALPHA_TURNS = 1  # our Mem-α agent writes each chunk's memory in one turn of tool calls


class RecipeError(ValueError):
    """A recipe file we cannot read; the message names the file and what it can read."""


def job_recipe(settings: Mapping[str, Any], agent: str) -> dict[str, Any]:
    """A train job's recipe in KEYS' vocabulary, from its settings (memrepro.config.train_settings
    or memalpha_train_settings) and its backend: what the job runs on either trainer. The CPU
    reference trainer reshuffles the rows each epoch and has no dynamic sampling."""
    facts = AGENT_FACTS[agent]
    verl = settings["backend"] == "verl"
    in_reward = settings.get("kl_in_reward", False)  # Algorithm 1: the KL goes into the reward
    batch, group = settings["rollout_batch"], settings["group_size"]
    if "mini_batch_rows" in settings:  # Mem-α: rows per update, verl's ppo_mini_batch_size x n
        mini_batch = settings["mini_batch_rows"] // group
    else:
        mini_batch = batch // settings["mini_batches_per_step"]
    return {
        "steps": settings["steps"],
        "rollout_batch": batch,
        "group_size": group,
        "ppo_mini_batch_size": mini_batch,
        "mini_batch_rows": settings.get("mini_batch_rows", mini_batch * group),
        "lr": settings["lr"],
        "warmup_steps": settings["warmup_steps"],
        "weight_decay": settings.get("weight_decay", 0.0),
        "grad_clip": settings.get("grad_clip", 1.0),
        "clip_low": settings["clip_low"],
        "clip_high": settings["clip_high"],
        "clip_c": settings["clip_c"],
        "kl_loss_coef": 0 if in_reward else settings["kl_coef"],
        "kl_loss_type": "low_var_kl",
        "kl_in_reward": in_reward,
        "kl_reward_coef": settings["kl_coef"] if in_reward else 0,
        "kl_reward_type": "low_var_kl" if in_reward else None,
        "entropy_coeff": 0,
        "loss_agg": settings.get("loss_agg", TOKEN_MEAN),
        "adv_estimator": "grpo",
        "norm_adv_by_std": settings.get("norm_adv_by_std", facts["norm_adv_by_std"]),
        "dynamic_sampling": bool(verl and settings["filter_groups"]),
        "shuffle": facts["verl_shuffle"] if verl else True,
        "context_truncation": facts["context_truncation"],
        "temperature": settings["sampling"]["temperature"],
        "top_p": settings["sampling"]["top_p"],
        "checkpoint": settings.get("checkpoint", "last"),
        **(_memalpha_values(settings) if agent == "memalpha" else {}),
    }


def _memalpha_values(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Mem-α's own keys: its run's reward weights, the training prompt cap, one turn a chunk."""
    return {
        "beta": settings["beta"],
        "gamma": settings["gamma"],
        "prompt_cap": settings["agent"]["prompt_cap"],
        "turns": MEMALPHA_TURNS,
    }


def recipe_record(settings: Mapping[str, Any], agent: str) -> dict[str, Any]:
    """RECIPE_FILE's content: which run and stage (and whose per-run recipe values apply: a
    memory-ablation variant's run), the recipe the config selected, the backend, the values."""
    return {
        "run": settings["run"],
        "recipe_run": settings.get("recipe_run", settings["run"]),
        "stage": settings["stage"],
        "agent": agent,
        "recipe": settings["recipe"],
        "backend": settings["backend"],
        "values": job_recipe(settings, agent),
    }


def write_recipe(out_dir: str | Path, settings: Mapping[str, Any], agent: str) -> None:
    """A trained checkpoint's RECIPE_FILE, written once its training succeeded."""
    from memrepro.data.io import write_json_atomic

    write_json_atomic(Path(out_dir) / RECIPE_FILE, recipe_record(settings, agent))


# --- another run's trainer config ---------------------------------------------------------------


def _flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested config's dotted keys; one key set both dotted and nested is refused."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        found = _flatten(value, f"{name}.") if isinstance(value, Mapping) else {name: value}
        for repeated in found.keys() & flat.keys():
            raise KeyError(f"{repeated} set twice: once as a dotted key, once nested")
        flat.update(found)
    return flat


def _override_value(text: str) -> Any:
    import yaml

    return yaml.safe_load(text) if text.strip() else None


def _from_overrides(lines: list[Any], path: Path) -> dict[str, Any]:
    """`key=value` strings (a Hydra command's overrides, `+key` and `++key` as plain keys)."""
    flat, where = {}, {}
    for number, line in enumerate(lines, 1):
        if not isinstance(line, str) or "=" not in line:
            raise RecipeError(f"{path}: item {number} is not a `key=value` override: {line!r}")
        key, value = line.split("=", 1)
        key = key.lstrip("+~")
        if key in flat:
            raise RecipeError(f"{path}: {key} is set twice (items {where[key]} and {number})")
        flat[key], where[key] = _override_value(value), number
    return flat


def _json_unique(text: str) -> Any:
    """JSON with every object's keys unique (json's own reader keeps the last of a repeat)."""

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in pairs:
            if key in seen:
                raise KeyError(f"{key} is set twice")
            seen[key] = value
        return seen

    return json.loads(text, object_pairs_hook=unique)


@functools.cache
def _unique_keys_loader() -> type:
    import yaml

    class UniqueKeys(yaml.SafeLoader):
        """YAML whose mappings name each key once (safe_load keeps the last of a repeat)."""

        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            lines: dict[Any, int] = {}
            for key_node, _ in node.value:
                key, line = self.construct_object(key_node, deep=deep), key_node.start_mark.line
                if key in lines:
                    raise KeyError(f"{key} set twice, at lines {lines[key] + 1} and {line + 1}")
                lines[key] = line
            return super().construct_mapping(node, deep=deep)

    return UniqueKeys


def read_trainer_config(path: str | Path) -> dict[str, Any]:
    """The flat verl keys of a trainer config: a verl/Hydra YAML (nested, or a list of `key=value`
    overrides) or a JSON object of overrides (flat or nested) or list of `key=value` strings.
    Anything else stops, naming the file and what it can read."""
    import yaml

    path = Path(path)
    formats = "a verl/Hydra YAML (.yaml, .yml) or a JSON of overrides (.json)"
    if path.suffix not in (".json", ".yaml", ".yml"):
        raise RecipeError(f"{path}: unknown format {path.suffix!r}; readable: {formats}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        byte = exc.object[exc.start]
        raise RecipeError(f"{path}: not UTF-8 text (byte {exc.start} is {byte:#x})") from None
    try:
        read_yaml = functools.partial(yaml.load, Loader=_unique_keys_loader())  # a SafeLoader
        tree = _json_unique(text) if path.suffix == ".json" else read_yaml(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise RecipeError(f"{path}: not {formats}: {' '.join(str(exc).split())}") from None
    except KeyError as exc:
        raise RecipeError(f"{path}: {exc.args[0]}") from None
    if isinstance(tree, list):
        return _from_overrides(tree, path)
    if isinstance(tree, Mapping):
        try:
            return _flatten(tree)
        except KeyError as exc:
            raise RecipeError(f"{path}: {exc.args[0]}") from None
    raise RecipeError(
        f"{path}: a {type(tree).__name__}, not a mapping or list; readable: {formats}"
    )


def recipe_keys_by_verl(read_from: Mapping[str, str] | None = None) -> dict[str, str]:
    """verl key -> recipe key: KEYS' own, the aliases, and a verl base's keys of its own
    (`read_from`: recipe key -> the verl key that base reads it from instead)."""
    by_verl = {spec.verl: name for name, spec in KEYS.items() if spec.verl}
    by_verl.update(VERL_ALIASES)
    for name, verl_key in (read_from or {}).items():
        by_verl = {k: v for k, v in by_verl.items() if v != name} | {verl_key: name}
    return by_verl


def from_verl(
    flat: Mapping[str, Any],
    path: str | Path = "verl config",
    read_from: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The recipe values a flat verl config sets (keys it leaves to verl's defaults are absent;
    `read_from`: a verl base's keys of its own, memrepro.train.verl_defaults). A KL loss switched
    off reads as coefficient 0; a config that sets an in-reward KL key but leaves the KL out of
    the reward reads as coefficient 0 and no estimator; `total_training_steps: null` as unset
    (epochs decide). A config
    none of whose keys is a recipe key stops, naming the file and the keys it can read."""
    by_verl = recipe_keys_by_verl(read_from)
    values = {
        by_verl[key]: _number(value)
        for key, value in flat.items()
        if key in by_verl and not (by_verl[key] == "steps" and value is None)
    }
    if not values:
        readable = ", ".join(sorted(by_verl))
        shown = ", ".join(sorted(flat)[:8]) + (" ..." if len(flat) > 8 else "")
        raise RecipeError(
            f"{path}: no key maps to a recipe key (its keys: {shown or 'none'}); readable: "
            f"{readable}"
        )
    if flat.get(f"{ACTOR}.use_kl_loss") is False:
        values["kl_loss_coef"] = 0
    reward_keys = (KL_IN_REWARD, f"{KL_CTRL}.kl_coef", KL_PENALTY)
    if any(key in flat for key in reward_keys) and flat.get(KL_IN_REWARD) is not True:
        values.update(kl_reward_coef=0, kl_reward_type=None)
    if "ppo_mini_batch_size" in values:  # verl's rows: x rollout.n (unset: 1)
        values["mini_batch_rows"] = values["ppo_mini_batch_size"] * (flat.get(ROLLOUT_N) or 1)
    return values


def _number(value: Any) -> Any:
    """YAML 1.1 reads `1e-6` (no dot) as a string; Hydra and verl read it as a float."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def unresolved(flat: Mapping[str, Any]) -> dict[str, Any]:
    """A config's Hydra interpolations (`${…}`): their values exist only when Hydra runs, so they
    are listed, never compared."""
    return {k: v for k, v in flat.items() if isinstance(v, str) and "${" in v}


def nulls(flat: Mapping[str, Any]) -> list[str]:
    """A config's keys set to null: verl then takes its default, as for a key left unset."""
    return sorted(k for k, v in flat.items() if v is None)


def unmapped_keys(flat: Mapping[str, Any], read_from: Mapping[str, str] | None = None) -> list[str]:
    """A config's keys outside the recipe (paths, logging, engines) or that its verl base does
    not read: listed, never compared."""
    known = set(recipe_keys_by_verl(read_from)) | {f"{ACTOR}.use_kl_loss", EPOCHS, WARMUP_RATIO}
    return sorted(set(flat) - known)


def resolved(
    values: Mapping[str, Any],
    flat: Mapping[str, Any],
    defaults: Mapping[str, Any],
    epochs: int,
    rows: int | None,
) -> tuple[dict[str, Any], dict[str, str]]:
    """A config's recipe values with every key it leaves unset at its verl base's `defaults`,
    and how each such key got its value ({key: note}): the rows per update, the steps from the
    epochs (`_steps`), the warm-up from its ratio of them (`_warmup`)."""
    found, notes = dict(values), {}
    for key, value in defaults.items():
        if key not in found and key != "steps":
            found[key], notes[key] = value, "verl's default"
    if "mini_batch_rows" not in found:
        n = flat.get(ROLLOUT_N) or 1
        found["mini_batch_rows"] = found["ppo_mini_batch_size"] * n
        notes["mini_batch_rows"] = f"verl's default: {found['ppo_mini_batch_size']} x {n}"
    if "steps" not in found:
        batch = int(found.get("rollout_batch") or defaults["rollout_batch"])
        steps, notes["steps"] = _steps(int(flat.get(EPOCHS) or epochs), batch, rows)
        if steps is not None:
            found["steps"] = steps
    if values.get("warmup_steps", -1) == -1:  # unset or -1: verl takes the ratio of the steps
        warmup, notes["warmup_steps"] = _warmup(float(flat.get(WARMUP_RATIO) or 0.0), found)
        found.pop("warmup_steps", None)
        if warmup is not None:
            found["warmup_steps"] = warmup
    return found, notes


def _steps(epochs: int, batch: int, rows: int | None) -> tuple[int | None, str]:
    """What `total_training_steps: null` runs: the epochs over the rows at the batch (verl drops
    the last partial batch); unknown without the rows."""
    if rows is None:
        return None, f"{epochs} epochs x the rows / {batch}: give --train-rows"
    return epochs * (rows // batch), f"{epochs} epochs x {rows} rows / {batch}"


def _warmup(ratio: float, found: Mapping[str, Any]) -> tuple[int | None, str]:
    """What `lr_warmup_steps: -1` runs: `ratio` of the steps (none at 0; unknown without them)."""
    if ratio == 0.0:
        return 0, "verl's default: no warm-up"
    if "steps" not in found:
        return None, f"lr_warmup_steps_ratio {ratio:g} of the steps: give --train-rows"
    return int(ratio * found["steps"]), f"lr_warmup_steps_ratio {ratio:g} x {found['steps']} steps"


# --- comparing ----------------------------------------------------------------------------------


def stated(entry: Mapping[str, Any], side: str, run: str, stage: str) -> Any:
    """A transcribed key's value on one side for a run's stage: None where the source does not
    state it (or the key is another stage's); a `{default, <run>: ...}` mapping picks the run."""
    if stage not in entry.get("stages", [stage]):
        return None
    value = entry.get(side)
    if isinstance(value, Mapping):
        return value.get(run, value.get("default"))
    return value


def same(ours: Any, theirs: Any) -> bool:
    if isinstance(ours, bool) or isinstance(theirs, bool):
        return ours is theirs
    if isinstance(ours, int | float) and isinstance(theirs, int | float):
        return math.isclose(ours, theirs, rel_tol=1e-9, abs_tol=1e-12)
    return ours == theirs


def drifts(
    values: Mapping[str, Any], transcription: Mapping[str, Any], side: str, run: str, stage: str
) -> list[str]:
    """The keys whose value differs from what `side` states (keys it does not state, or that
    `values` lacks, are not compared)."""
    return [
        key
        for key, entry in transcription["keys"].items()
        if key in values
        and (want := stated(entry, side, run, stage)) is not None
        and not same(values[key], want)
    ]


def verdict(
    values: Mapping[str, Any],
    transcription: Mapping[str, Any],
    selected: str | None,
    run: str,
    stage: str,
) -> str:
    """'paper recipe', 'official-script recipe', or 'n keys drift from the <selected> recipe: …'
    (selected: the recipe the config chose; None for another run's file, or a recipe of the
    config's own such as `algorithm1`: the nearer one)."""
    drift = {side: drifts(values, transcription, side, run, stage) for side in SIDES}
    if selected not in SIDES:
        selected = min(SIDES, key=lambda side: len(drift[side]))
    if not drift[selected]:
        return SIDE_NAMES[selected]
    other = next(side for side in SIDES if side != selected)
    if not drift[other]:
        return SIDE_NAMES[other]
    keys = drift[selected]
    noun = "key drifts" if len(keys) == 1 else "keys drift"
    labels = ", ".join(KEYS[key].label for key in keys)  # as the recipes tables name their rows
    return f"{len(keys)} {noun} from the {SIDE_NAMES[selected]}: {labels}"


def check_transcription(transcription: Mapping[str, Any], where: str) -> None:
    """A paper file's `recipe` section names only recipe keys, each with both sides' sources."""
    unknown = sorted(set(transcription["keys"]) - set(KEYS))
    if unknown:
        raise ValueError(f"{where}: recipe.keys: not recipe keys: {unknown} (known: {list(KEYS)})")
    if transcription.get("printed_by", SIDES[0]) not in SIDES:
        raise ValueError(f"{where}: recipe.printed_by: one of {list(SIDES)}")
    for key, entry in transcription["keys"].items():
        for side in SIDES:
            if entry.get(side) is not None and not entry.get(f"{side}_at"):
                raise ValueError(f"{where}: recipe.keys.{key}: {side} value without {side}_at")
