"""Load a config file and validate it: the schema (workflow/schemas/config.schema.yaml, the one
definition of what a config may say), then the cross-reference checks."""

from __future__ import annotations

import difflib
import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jsonschema

from memrepro.config.checks import check_references
from memrepro.config.matrix import eval_jobs
from memrepro.config.select import apply_selection
from memrepro.config.yaml_file import load_yaml
from memrepro.layout import ConfigError


def validate_config(config: dict[str, Any], schema_path: str | Path) -> None:
    """Validate against the workflow schema, narrow the config to `evaluation.select`
    (memrepro.config.select), then check that every cross-reference resolves."""
    _refuse_non_finite(config)
    schema = load_yaml(schema_path)
    errors = sorted(
        jsonschema.Draft202012Validator(schema).iter_errors(config), key=lambda e: list(e.path)
    )
    if errors:
        raise ConfigError(_describe(errors[0]))
    swapped = apply_selection(config)
    try:
        check_references(config)
    except ConfigError as exc:
        put = [note for key, notes in swapped.items() if f"key {key}" in str(exc) for note in notes]
        if not put:
            raise
        raise ConfigError(f"{exc} (put there by {', '.join(put)})") from None


def _refuse_non_finite(node: Any, key: str = "") -> None:
    """NaN and ±infinity (YAML `.nan`, `.inf`) are numbers to the schema, so its bounds let them
    pass; no setting means them: refuse each, naming its key."""
    if isinstance(node, float) and not math.isfinite(node):
        raise ConfigError(f"config key {key or '<top level>'}: {node} is not a finite number")
    children = (
        node.items()
        if isinstance(node, dict)
        else enumerate(node)
        if isinstance(node, list)
        else ()
    )
    for name, child in children:
        _refuse_non_finite(child, f"{key}.{name}" if key else str(name))


TYPE_WORDS = {
    "object": "a mapping (a YAML section of keys)",
    "array": "a list",
    "string": "text",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "null": "null (empty)",
}


def _describe(error: jsonschema.ValidationError) -> str:
    """A schema error as one sentence: the key, the value, what is allowed in words."""
    key = ".".join(str(part) for part in error.absolute_path) or "<top level>"
    schema, value, wanted = error.schema, error.instance, error.validator_value
    if error.validator == "additionalProperties":
        known = list(schema.get("properties", {}))
        unknown = sorted(set(value) - set(known))
        hints = [f"{name}{_closest(name, known)}" for name in unknown]
        return f"config key {key}: unknown key(s) {', '.join(hints)} (known: {', '.join(known)})"
    if error.validator == "required":
        missing = [name for name in wanted if name not in value]
        return f"config key {key}: {', '.join(missing)} missing (required here)"
    must = _allowed(error)
    if must is None:
        return f"config key {key}: {error.message}{_number_as_text_hint(error)}"
    return f"config key {key}: {value!r} must be {must}{_number_as_text_hint(error)}"


def _allowed(error: jsonschema.ValidationError) -> str | None:
    """What the failed keyword allows, in words; None for a keyword without words here."""
    wanted, value = error.validator_value, error.instance
    if error.validator == "type":
        kinds = wanted if isinstance(wanted, list) else [wanted]
        return " or ".join(TYPE_WORDS.get(kind, kind) for kind in kinds)
    if error.validator == "enum":
        return f"one of {', '.join(map(str, wanted))}{_closest(value, wanted)}"
    if error.validator == "pattern":
        return error.schema.get("allowed", f"text matching the pattern {wanted}")
    words = {
        "minimum": f"at least {wanted}",
        "maximum": f"at most {wanted}",
        "exclusiveMinimum": f"above {wanted}",
        "exclusiveMaximum": f"below {wanted}",
        "minItems": "a list that is not empty" if wanted == 1 else f"a list of {wanted} or more",
        "maxItems": f"a list of at most {wanted}",
        "minLength": "text that is not empty" if wanted == 1 else f"at least {wanted} characters",
        "uniqueItems": "a list without repeats",
        "minProperties": "a mapping that is not empty",
    }
    return words.get(error.validator)


def _closest(name: object, known: Sequence[object]) -> str:
    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=2, cutoff=0.6)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


def _number_as_text_hint(error: jsonschema.ValidationError) -> str:
    """Why a number reads as text: YAML 1.1 (PyYAML, Snakemake) takes 1e9 without a decimal
    point for a string."""
    wanted = error.schema.get("type") if error.validator == "type" else None
    if wanted not in ("number", ["number"]) or not isinstance(error.instance, str):
        return ""
    try:
        float(error.instance)
    except ValueError:
        return ""
    return (
        f" (YAML reads {error.instance} without a decimal point as text: write it with one, "
        "e.g. 1.0e9)"
    )


ENV_OVERRIDES = "MEMREPRO_CONFIG_OVERRIDES"  # JSON {"dotted.key": value}, set by ./pipeline


def apply_overrides(config: dict[str, Any], overrides: str | None) -> None:
    """Set each `a.b.c` of `overrides` (JSON, from `./pipeline --config a.b.c=VALUE`) in the
    nested config, before it is validated; a part that is not a mapping is an error naming it."""
    for dotted, value in json.loads(overrides or "{}").items():
        *parents, leaf = dotted.split(".")
        node = config
        for i, part in enumerate(parents):
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                where = ".".join(parents[: i + 1])
                raise ConfigError(f"--config {dotted}: {where} is not a mapping in the config")
        node[leaf] = value


def load_config(
    paths: Sequence[str | Path], overrides: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Config files merged as Snakemake merges several `--configfile`s (key by key, the later
    file winning), then the nested overrides, validated (memrepro.config.select applied)."""
    config: dict[str, Any] = {}
    for path in paths:
        _merge(config, load_yaml(path))
    try:
        apply_overrides(config, json.dumps(overrides or {}))
        validate_config(config, SCHEMA)
    except ConfigError as error:
        raise ConfigError(with_origin(error, paths, overrides or {})) from None
    return config


KEY_IN_MESSAGE = re.compile(r"^config key (\S+?):")


def with_origin(
    error: ConfigError, paths: Sequence[str | Path], overrides: Mapping[str, Any]
) -> str:
    """The error's sentence, ending with where its key was set: `--config`, else the last config
    file that sets it (or, for a missing key, its nearest parent); unchanged when neither does."""
    found = KEY_IN_MESSAGE.match(str(error))
    origin = key_origin(found[1], paths, overrides) if found else None
    return str(error) if origin is None else f"{error} (set in {origin})"


def key_origin(key: str, paths: Sequence[str | Path], overrides: Mapping[str, Any]) -> str | None:
    """`--config` where an override sets the key or a part of it, else the config file that
    sets the most of its dotted path (the later file on a tie), None where none sets any."""
    if any(f"{key}.".startswith(f"{o}.") or f"{o}.".startswith(f"{key}.") for o in overrides):
        return "--config"
    parts = key.split(".")
    depths = [(_depth(load_yaml(path), parts), order, path) for order, path in enumerate(paths)]
    depth, _, path = max(depths, default=(0, 0, None))
    if not depth:
        return None
    relative = os.path.relpath(path)  # as typed: config/smoke.yaml, not its absolute path
    return str(path) if relative.startswith("..") else relative


def _depth(node: Any, parts: Sequence[str]) -> int:
    """How many leading parts of a dotted key `node` holds (list items by index)."""
    for depth, part in enumerate(parts):
        if isinstance(node, dict):
            found = next((node[k] for k in node if str(k) == part), _ABSENT)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            found = node[int(part)]
        else:
            found = _ABSENT
        if found is _ABSENT:
            return depth
        node = found
    return len(parts)


_ABSENT = object()


def _merge(into: dict[str, Any], update: dict[str, Any]) -> None:
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def check_config_files(paths: Sequence[str | Path]) -> None:
    """Read each config file strictly: Snakemake's own reading keeps the last of duplicate keys."""
    for path in dict.fromkeys(map(str, paths)):
        load_yaml(path)


SCHEMA = Path(__file__).resolve().parents[3] / "workflow" / "schemas" / "config.schema.yaml"


def main(argv: Sequence[str] | None = None) -> None:
    """`python -m memrepro.config FILE...`: check a config, or several merged as Snakemake merges
    them, without Snakemake (which, on a YAML syntax error, names neither the line nor the
    column)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m memrepro.config", description=main.__doc__)
    parser.add_argument("configs", type=Path, nargs="+")
    args = parser.parse_args(argv)
    named = " + ".join(map(str, args.configs))
    try:
        config = load_config(args.configs)
    except ConfigError as exc:
        message = str(exc)
        named_file = any(str(path) in message for path in args.configs)
        raise SystemExit(message if named_file else f"{named}: {message}") from None
    print(f"{named}: valid ({len(eval_jobs(config))} evaluation jobs)")
