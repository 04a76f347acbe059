"""The papers' headline sentences (each paper file's `prose_claims`), resolved against the paper's
own printed numbers while the plan is made: each case's numbers are read by their path in the
file, so a path that leads nowhere stops the plan naming the file, the claim and the path. The
arithmetic and the verdicts are the `paper_claims` table's (memrepro.report.prose_claims)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from memrepro.config.yaml_file import load_yaml
from memrepro.layout import ConfigError

PAPERS = ("paper", "memalpha_paper")  # the `report` keys of the two paper files


def resolve(paper: Mapping[str, Any], path: Sequence[Any], where: str) -> float:
    """The printed number at `path`: a mapping's key (a length as a number or text), or in a
    list a position or the name of one of the nearest enclosing `columns`."""
    node: Any = paper
    columns: Sequence[Any] = ()
    for step in path:
        if isinstance(node, Mapping):
            columns = node.get("columns", columns)
            keys = (step, str(step), *([int(step)] if str(step).isdigit() else []))
            found = [key for key in keys if key in node]
            if not found:
                raise ConfigError(f"{where}: no {step!r} in {list(node)[:12]}")
            node = node[found[0]]
        elif isinstance(node, list):
            index = step if isinstance(step, int) else _column(columns, step, where)
            if not 0 <= index < len(node):
                raise ConfigError(f"{where}: position {index} of a list of {len(node)}")
            node = node[index]
        else:
            raise ConfigError(f"{where}: {step!r} after a number")
    if isinstance(node, bool) or not isinstance(node, int | float):
        raise ConfigError(f"{where}: not a printed number but {node!r}")
    low, high = printed_scale(paper, path)
    if not (math.isfinite(node) and low <= node <= high):
        raise ConfigError(f"{where}: the printed number {node!r} is not within {low:g}..{high:g}")
    return float(node)


PERCENT = (0.0, 100.0)


def printed_scale(paper: Mapping[str, Any], path: Sequence[Any]) -> tuple[float, float]:
    """Where a printed number must lie: a memory size (a `mem` step) at or above 0; else its
    table's `scale` (Table 4's differences: -100..100), by default a percentage."""
    if "mem" in map(str, path):
        return 0.0, math.inf
    table = paper.get(path[0]) if path else None
    low, high = table.get("scale", PERCENT) if isinstance(table, Mapping) else PERCENT
    return float(low), float(high)


def _column(columns: Sequence[Any], name: Any, where: str) -> int:
    if name not in columns:
        raise ConfigError(f"{where}: {name!r} is not one of the columns {list(columns)}")
    return list(columns).index(name)


def best_cells(
    paper: Mapping[str, Any],
    table: Sequence[Any],
    rows: Sequence[str],
    columns: Sequence[Any] | None,
    where: str,
    against: Sequence[Any] | None = None,
) -> list[dict[str, Any]]:
    """Every cell of a table of {row: {column: number or {metric: number}}} (of `columns` only,
    where given): the claimed rows' numbers first (`of` of them), then every other row's, or
    every row's of the table `against` (another table of the same columns: the rivals')."""
    node = _table(paper, table)
    if not node or any(row not in node for row in rows):
        raise ConfigError(f"{where}: {list(table)} has no rows {list(rows)}")
    rivals = node if against is None else _table(paper, against)
    if not rivals:
        raise ConfigError(f"{where}: no table {list(against or ())}")
    others = [row for row in rivals if row not in rows]
    cases = []
    for leaf in _leaves(node[rows[0]]):
        if columns is not None and not set(columns) & set(leaf):
            continue
        numbers = [resolve(node, [row, *leaf], where) for row in rows]
        numbers += [resolve(rivals, [row, *leaf], where) for row in others]
        paths = [[*table, row, *leaf] for row in rows]
        paths += [[*(against or table), row, *leaf] for row in others]
        label = " ".join(map(str, leaf))
        cases.append({"label": label, "numbers": numbers, "paths": paths, "of": len(rows)})
    return cases


def _table(paper: Mapping[str, Any], path: Sequence[Any]) -> Any:
    node = paper
    for step in path:
        node = node.get(step, {})
    return node


def _leaves(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(node, Mapping):
        return [leaf for key, value in node.items() for leaf in _leaves(value, (*prefix, key))]
    return [prefix]


def prose_claims(config: dict[str, Any]) -> list[dict[str, Any]]:
    """Each paper file's prose claims with their cases' numbers read, in order: [{label,
    numbers, of}] (settings are written key-sorted: a list keeps the file's order)."""
    resolved = []
    for key in PAPERS:
        path = config["report"][key]
        paper = load_yaml(path)
        for claim in paper.get("prose_claims", []):
            where = f"{path}: prose_claims {claim.get('id')!r}"
            numbers_of, version = quoted_version(paper, claim.get("version"), where)
            cases = [
                {
                    "label": str(label),
                    "numbers": [resolve(numbers_of, n, f"{where}, {label}") for n in paths],
                    "paths": [list(path) for path in paths],
                    "of": 1,
                }
                for label, paths in (claim.get("cases") or {}).items()
            ]
            if "cells" in claim:
                cells = claim["cells"]
                cases += best_cells(
                    numbers_of,
                    cells["table"],
                    cells["rows"],
                    cells.get("columns"),
                    where,
                    cells.get("against"),
                )
            if ("compute" in claim) != bool(cases):
                raise ConfigError(f"{where}: a claim computes (compute) over its cases, or neither")
            kept = {k: v for k, v in claim.items() if k not in ("cases", "cells", "version")}
            text = " ".join(str(claim["text"]).split())
            resolved.append(
                {**kept, "text": text, "cases": cases, "version": version, "paper_file": key}
            )
    return resolved


RowsAt = Mapping[str, tuple[str, tuple[str, ...], Mapping[str, str]]]


def our_cells(claims: Sequence[dict[str, Any]], tables: RowsAt) -> list[dict[str, Any]]:
    """The claims with each case's `ours_at`: per number, the cell of ours that holds it (`tables`:
    each score table's paper file key, where its rows sit in that file, and its rows' other
    names), or None where no table of ours does. A claim judged by a table or figure of its own
    (`ours`) keeps none."""
    return [
        claim
        if "ours" in claim
        else {
            **claim,
            "cases": [
                {
                    **case,
                    "ours_at": [cell_at(claim["paper_file"], p, tables) for p in case["paths"]],
                }
                for case in claim["cases"]
            ],
        }
        for claim in claims
    ]


def cell_at(paper_file: str, path: Sequence[Any], tables: RowsAt) -> dict[str, Any] | None:
    """The table of ours whose rows sit at the longest start of `path`, the row the path names
    (with its other names: Table 8's 14B-m1024-c5000 is RL-MEMAGENT-14B in our systems) and the
    steps after it (Mem-α's file lists a field by column, its tables key a column by field: the
    steps match in either order)."""
    steps = [str(step) for step in path]
    found = [
        (len(rows_at), name, aliases)
        for name, (paper, rows_at, aliases) in tables.items()
        if paper == paper_file and tuple(steps[: len(rows_at)]) == rows_at
    ]
    deepest = [f for f in found if f[0] == max((f[0] for f in found), default=0)]
    if len(deepest) > 1:
        names = ", ".join(name for _, name, _ in deepest)
        raise ConfigError(f"{'/'.join(steps)}: the tables {names} declare the same rows_at")
    if not deepest or len(steps) < deepest[0][0] + 2:
        return None
    depth, name, aliases = deepest[0]
    row = steps[depth]
    names = [row, *(alias for alias, printed in aliases.items() if printed == row)]
    return {"table": name, "rows": names, "steps": steps[depth + 1 :]}


def quoted_version(
    paper: Mapping[str, Any], name: str | None, where: str
) -> tuple[Mapping[str, Any], str]:
    """The numbers a claim is judged on and the version it quotes: the file's own (its
    `source.version`), or `other_versions.<name>` (an earlier print, e.g. the arXiv version a
    summary quotes), whose numbers sit under it as the file's sit at its top."""
    if name is None:
        return paper, str(paper.get("source", {}).get("version", "as transcribed"))
    versions = paper.get("other_versions", {})
    if name not in versions:
        raise ConfigError(
            f"{where}: version {name!r} is not one of other_versions {list(versions)}"
        )
    other = versions[name]
    return other, str(other.get("version", name))
