"""Which systems a table shows and which paper row each is compared with: the report settings'
system specs (display names unique), their kinds, RAG settings and the paper's RAG row names,
and a paper value looked up by its path in a row."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

# The report settings' list of system dicts {"id", "display", "paper_row", "kind", ...}, or a
# mapping id -> spec.
Systems = Sequence[Mapping[str, Any]] | Mapping[str, Mapping[str, Any]]


def system_specs(
    systems: Systems,
) -> dict[str, dict[str, Any]]:
    """{system id: spec} from the report settings' list of {"id", "display", ...} or a mapping.

    Display names must be unique: they are the tables' row labels.
    """
    if isinstance(systems, Mapping):
        specs = {str(sid): dict(spec) for sid, spec in systems.items()}
    else:
        specs = {}
        for i, spec in enumerate(systems):
            if "id" not in spec:
                raise ValueError(f"systems[{i}]: missing 'id' ({dict(spec)})")
            specs[spec["id"]] = dict(spec)
    for sid, spec in specs.items():
        if "display" not in spec:
            raise ValueError(f"system {sid!r}: missing 'display'")
    displays = [spec["display"] for spec in specs.values()]
    if len(set(displays)) != len(displays):
        raise ValueError(f"system display names must be unique: {displays}")
    return specs


def system_kind(system_id: str, spec: Mapping[str, Any]) -> str:
    """The system's `kind` (memrepro.config.eval_systems gives every system one)."""
    if not spec.get("kind"):
        raise ValueError(f"system {system_id!r}: no 'kind' in its report settings")
    return str(spec["kind"])


def answering_model(spec: Mapping[str, Any], benchmark: str) -> str | None:
    """The model whose answers a system's cells on `benchmark` score: the QA model where it
    answers over the system's memory (`answered_by`, Mem-α's framework), else the system's own.
    A memory cell is set only beside controls of this model."""
    return spec.get("answered_by", {}).get(benchmark, spec.get("model"))


def reads_instances(system_id: str, spec: Mapping[str, Any]) -> bool:
    """Whether the system's kind reads every benchmark as Mem-α instances (Mem-α's framework)."""
    from memrepro.systems import system_kind as registered_kind

    return registered_kind(system_kind(system_id, spec)).instances_only


def rag_setting(system_id: str, spec: Mapping[str, Any]) -> tuple[int, str]:
    """(top_k, unit) of a RAG system, from its report settings."""
    if spec.get("top_k") is None or spec.get("unit") is None:
        raise ValueError(f"RAG system {system_id!r}: no top_k/unit in its report settings")
    return int(spec["top_k"]), str(spec["unit"])


def rag_paper_row(model: str, top_k: int, unit: str) -> str:
    """The paper's row name of a RAG setting: Table 10 "RAG + Qwen2.5-14B K=4" (unit "doc"),
    Table 11 "Qwen2.5-14B + RAG C=1024 K=4" (unit "c1024")."""
    if unit == "doc":
        return f"RAG + {model} K={top_k}"
    chunk = re.fullmatch(r"c(\d+)", unit)
    if chunk is None:
        raise ValueError(f"RAG unit must be 'doc' or 'c<tokens>', got {unit!r}")
    return f"{model} + RAG C={chunk[1]} K={top_k}"


def rag_model(paper_row: str) -> str:
    """The base model of a RAG group name: "RAG + Qwen2.5-14B" (Table 10's header) and
    "Qwen2.5-14B + RAG" (Table 11's) -> "Qwen2.5-14B"; a bare model name is returned as is."""
    return re.sub(r"^RAG \+ |\s\+ RAG$", "", paper_row.strip())


def is_rag_unit(system_id: str, spec: Mapping[str, Any], doc: bool) -> bool:
    """A RAG system over whole documents (doc=True, Table 10) or over chunks (Table 11)."""
    if system_kind(system_id, spec) != "rag":
        return False
    return (rag_setting(system_id, spec)[1] == "doc") == doc


def lookup(cells: Any, path: Sequence[Any]) -> float | None:
    """A paper value by path (None where the paper has none); YAML may key a number as int
    or str."""
    for key in path:
        if not isinstance(cells, Mapping):
            return None
        for candidate in (key, str(key), int(key) if str(key).isdigit() else None):
            if candidate is not None and candidate in cells:
                cells = cells[candidate]
                break
        else:
            return None
    if isinstance(cells, bool) or not isinstance(cells, int | float):
        return None
    return float(cells)


def resolve_paper_rows(
    selected: Mapping[str, Mapping[str, Any]],
    paper_rows: Mapping[str, Any],
    table: str,
    strict: bool,
) -> tuple[dict[str, str | None], list[str]]:
    """Each system's row of this table, and notes. A RAG system's `paper_row` may name a whole
    row, or only the paper's RAG group ("RAG + Qwen2.5-14B", "Qwen2.5-14B + RAG" or
    "Qwen2.5-14B"): its row is then derived from its K (and C), and a setting the paper did not
    run gets no row (noted). Other unknown rows are errors when `strict`."""
    rows: dict[str, str | None] = {}
    notes = []
    for sid, spec in selected.items():
        row = spec.get("paper_row")
        if row is None or row in paper_rows:
            rows[sid] = row
            continue
        if system_kind(sid, spec) == "rag":
            model, (top_k, unit) = rag_model(row), rag_setting(sid, spec)
            derived = rag_paper_row(model, top_k, unit)
            group = f"RAG + {model} " if unit == "doc" else f"{model} + RAG "
            if derived in paper_rows:
                rows[sid] = derived
                continue
            if any(str(name).startswith(group) for name in paper_rows):
                rows[sid] = None
                notes.append(f"{spec['display']}: the paper did not run {derived!r}.")
                continue
        if strict:
            raise ValueError(
                f"system {sid!r}: paper_row {row!r} is not in the paper's {table} "
                f"(rows: {', '.join(map(str, paper_rows))})"
            )
        rows[sid] = None
    return rows, notes
