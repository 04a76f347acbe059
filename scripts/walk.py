"""The walk of a job's arguments: run one `memrepro` job in this process and list, in order, the
source files whose functions receive the job's own arguments (the parsed command line, its
settings, or any dict or list inside them, by identity), how many moves between files that takes
and how many of those climb back up to a higher floor of ARCHITECTURE.md's layer picture; and
the call stack, file by file, from the command line to the first function of the file `--to`
names (a table's builder module).

    python scripts/walk.py [--to report/memagent_tables.py] -- memrepro --job ... evaluate ...

Run it where the job would run (the results directory's parent), with MEMREPRO_TRACKING=off and
outputs under a scratch folder. Prints the walk, `files F, moves M, climbs C` and, with `--to`,
`to FILE: N moves (a -> b -> ...)`."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
sys.path.insert(0, str(REPO / "tests"))

from test_layers import floors, module_name, package  # noqa: E402  (the picture's one reader)


def tracked_ids(args: Any) -> set[int]:
    """The identities of the arguments: the namespace, its values and every container inside
    its settings."""
    found = {id(args)}
    stack = list(vars(args).values())
    while stack:
        value = stack.pop()
        if isinstance(value, dict | list):
            found.add(id(value))
            stack += list(value.values()) if isinstance(value, dict) else value
        elif value is not None and not isinstance(value, bool | int | float | str):
            found.add(id(value))
    return found


def stack_files(frame: FrameType | None) -> list[str]:
    """The memrepro files of a call stack, outermost first, each once per stretch."""
    files: list[str] = []
    while frame is not None:
        path = frame.f_code.co_filename
        if path.startswith(str(SRC)) and (not files or files[-1] != path):
            files.append(path)
        frame = frame.f_back
    return files[::-1]


def walk(argv: list[str], to: str | None = None) -> tuple[list[str], list[str]]:
    """The memrepro source files, in call order, of the calls that receive the arguments; and the
    stack of files down to the first call into a file ending with `to`."""
    from memrepro import cli

    seen: list[str] = []
    reached: list[str] = []
    tracked: set[int] = set()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        path = frame.f_code.co_filename
        if not path.startswith(str(SRC)):
            return
        if to and not reached and path.endswith(to) and frame.f_code.co_name != "<module>":
            reached.extend(stack_files(frame))
        code = frame.f_code
        names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        values = [frame.f_locals.get(name) for name in names]
        if "args" in names and not tracked and hasattr(frame.f_locals.get("args"), "settings"):
            tracked.update(tracked_ids(frame.f_locals["args"]))
        if any(id(v) in tracked for v in values) and (not seen or seen[-1] != path):
            seen.append(path)

    sys.setprofile(profile)
    try:
        cli.main(argv)
    except SystemExit as done:
        if done.code not in (0, None):
            raise
    finally:
        sys.setprofile(None)
    return seen, reached


def summary(files: list[str]) -> tuple[int, int, int]:
    """Distinct files, moves between files, and moves that climb to a higher floor."""
    picture = floors((REPO / "ARCHITECTURE.md").read_text(encoding="utf-8"))
    floor_of = {name: level for level, floor in enumerate(picture) for name in floor}
    level = [floor_of[package(module_name(Path(f)))] for f in files]
    climbs = sum(1 for a, b in itertools.pairwise(level) if b < a)
    return len(set(files)), len(files) - 1, climbs


def main() -> None:
    argv = sys.argv[1:]
    to = None
    if argv[:1] == ["--to"]:
        to, argv = argv[1], argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if argv[:1] == ["memrepro"]:
        argv = argv[1:]
    files, reached = walk(argv, to)
    for path in files:
        print(Path(path).relative_to(SRC))
    found, moves, climbs = summary(files)
    print(f"files {found}, moves {moves}, climbs {climbs}")
    if to:
        chain = " -> ".join(str(Path(p).relative_to(SRC)) for p in reached) or "never reached"
        print(f"to {to}: {max(len(reached) - 1, 0)} moves ({chain})")


if __name__ == "__main__":
    main()
