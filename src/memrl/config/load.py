"""Load a config file and validate it: the schema (workflow/schemas/config.schema.yaml, the one
definition of what a config may say), then the cross-reference checks."""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jsonschema

from memrl.config.checks import check_references
from memrl.config.matrix import eval_jobs
from memrl.config.select import apply_selection
from memrl.config.yaml_file import load_yaml
from memrl.layout import ConfigError


def validate_config(config: dict[str, Any], schema_path: str | Path) -> None:
    """Validate against the workflow schema, narrow the config to `evaluation.select`
    (memrl.config.select), then check that every cross-reference resolves."""
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


def _describe(error: jsonschema.ValidationError) -> str:
    key = ".".join(str(part) for part in error.absolute_path) or "<top level>"
    if error.validator == "additionalProperties":
        known = list(error.schema.get("properties", {}))
        unknown = sorted(set(error.instance) - set(known))
        hints = [
            f"{name} (did you mean {' or '.join(close)}?)" if close else str(name)
            for name in unknown
            for close in [difflib.get_close_matches(str(name), known, n=2, cutoff=0.6)]
        ]
        return f"config key {key}: unknown key(s) {', '.join(hints)}"
    return f"config key {key}: {error.message}{_number_as_text_hint(error)}"


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


ENV_OVERRIDES = "MEMRL_CONFIG_OVERRIDES"  # JSON {"dotted.key": value}, set by ./pipeline


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
    file winning), then the nested overrides, validated (memrl.config.select applied)."""
    config: dict[str, Any] = {}
    for path in paths:
        _merge(config, load_yaml(path))
    apply_overrides(config, json.dumps(overrides or {}))
    validate_config(config, SCHEMA)
    return config


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
    """`python -m memrl.config FILE...`: check a config, or several merged as Snakemake merges
    them, without Snakemake (which, on a YAML syntax error, names neither the line nor the
    column)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m memrl.config", description=main.__doc__)
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
