"""Reading one YAML file strictly (a config, a schema, a paper file): the file, line and column of
what is wrong. Below every other config module, which all read files through it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from memrepro.layout import ConfigError


class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """YAML's safe loader, but a key given twice in one mapping is an error (YAML says so;
    PyYAML silently keeps the last)."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        first_line: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                if key in first_line:
                    raise yaml.constructor.ConstructorError(
                        None,
                        None,
                        f"duplicate key {key!r} (first given at line {first_line[key]})",
                        key_node.start_mark,
                    )
                first_line[key] = key_node.start_mark.line + 1
            except TypeError:  # an unhashable key: PyYAML's own error follows
                pass
        return super().construct_mapping(node, deep)


def load_yaml(path: str | Path) -> dict[str, Any]:
    """A config (or schema) file: syntax errors, tabs and duplicate keys fail naming the file,
    the line and the column."""
    from memrepro.data.io import read_text

    try:
        text = read_text(path)
        data = yaml.load(text, Loader=_StrictLoader)  # a safe loader, strict on duplicates
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read config: {exc}") from exc
    except yaml.MarkedYAMLError as exc:
        raise ConfigError(_yaml_error(path, text, exc)) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a config must be a mapping, got {type(data).__name__}")
    return data


def _yaml_error(path: str | Path, text: str, exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    if mark is None:
        return f"{path}: not valid YAML: {exc}"
    message = exc.problem or exc.context
    if exc.context and exc.problem:
        message += f" ({exc.context})"
    line = text.splitlines()[mark.line] if mark.line < len(text.splitlines()) else ""
    if "\t" in line[: mark.column + 1]:
        message += "; the line holds a tab: YAML indents with spaces only"
    return f"{path}:{mark.line + 1}:{mark.column + 1}: {message}"
