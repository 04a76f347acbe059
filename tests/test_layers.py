"""The layer picture in ARCHITECTURE.md is the import graph: every import of a memrepro module (lazy
ones included, not those under TYPE_CHECKING) goes to a package on a lower floor."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
PACKAGE = re.compile(r"^(memrepro(?:\.\w+)?)(?:,|\s{2,}|$)")


def floors(architecture: str) -> list[list[str]]:
    """The picture's floors, top first: each line that starts at column 0 inside the code block
    under "## The layers" names the packages of one floor, comma-separated."""
    block = architecture.split("## The layers", 1)[1].split("```", 2)[1]
    found = []
    for line in block.splitlines():
        if not line.startswith("memrepro"):
            continue  # a description's continuation
        names = []
        for part in line.split(","):
            match = PACKAGE.match(part.strip())
            if match is None:
                break
            names.append(match.group(1))
        found.append(names)
    return found


def package(module: str) -> str:
    """A module's floor unit: its memrepro subpackage or top-level module (memrepro itself for
    memrepro/__init__.py)."""
    return ".".join(module.split(".")[:2])


def imports(path: Path) -> list[tuple[str, int]]:
    """The memrepro modules a file imports and the line of each (not those under TYPE_CHECKING)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(node)
        for branch in ast.walk(tree)
        if isinstance(branch, ast.If) and "TYPE_CHECKING" in ast.unparse(branch.test)
        for node in ast.walk(branch)
    }
    found = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found += [(name, node.lineno) for name in names if package(name).startswith("memrepro")]
    return found


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def upward_imports(floor_of: dict[str, int]) -> list[str]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        here = package(module_name(path))
        for target, line in imports(path):
            there = package(target)
            if there != here and floor_of[there] <= floor_of[here]:
                found.append(f"{path.relative_to(REPO)}:{line} {here} -> {there}")
    return found


def test_the_picture_names_every_package_once():
    picture = floors((REPO / "ARCHITECTURE.md").read_text(encoding="utf-8"))
    named = [name for floor in picture for name in floor]
    assert len(named) == len(set(named)), "a package on two floors"
    packages = {package(module_name(path)) for path in SRC.rglob("*.py")}
    assert set(named) == packages, (sorted(packages - set(named)), sorted(set(named) - packages))


def test_every_import_runs_down_the_picture():
    picture = floors((REPO / "ARCHITECTURE.md").read_text(encoding="utf-8"))
    floor_of = {name: level for level, floor in enumerate(picture) for name in floor}
    assert upward_imports(floor_of) == []


@pytest.mark.parametrize(
    ("picture", "caught"),
    [
        ("memrepro.cli  x\nmemrepro.jobs  y\n", False),  # jobs below cli: fine
        ("memrepro.jobs  y\nmemrepro.cli  x\n", True),  # cli under jobs
        ("memrepro.cli, memrepro.jobs  both\n", True),  # one floor
    ],
)
def test_the_check_finds_an_import_against_the_picture(picture, caught):
    """The checker itself: cli imports jobs, so a picture with cli at or below jobs fails."""
    parsed = floors(f"## The layers\n\n```\n{picture}```\n")
    floor_of = {name: level for level, floor in enumerate(parsed) for name in floor}
    rest = {package(module_name(p)) for p in SRC.rglob("*.py")} - set(floor_of)
    floor_of |= dict.fromkeys(rest, len(parsed))  # everything else below both
    found = [f for f in upward_imports(floor_of) if "memrepro.cli -> memrepro.jobs" in f]
    assert bool(found) == caught and all(f.startswith("src/memrepro/cli.py:") for f in found)


MAX_MODULE_LINES = 600  # past this a module holds more than one concern: split it along its seams


def test_no_module_is_over_600_lines():
    sizes = {
        str(path.relative_to(REPO)): len(path.read_text(encoding="utf-8").splitlines())
        for path in SRC.rglob("*.py")
    }
    assert {path: n for path, n in sizes.items() if n > MAX_MODULE_LINES} == {}
