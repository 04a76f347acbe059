"""The project's name is MemRepro everywhere. Its former name is another project's in this field
(MemTensor's), so it appears only in the sentence that tells the two apart."""

from __future__ import annotations

import subprocess
from pathlib import Path

FORMER = "mem" + "rl"  # spelled apart, so this file does not hold it
APART = "MemTensor"  # the sentence that tells the two projects apart names the other's owner


def former_name_hits(repo: Path) -> list[str]:
    """Every tracked path and text line holding the former name, outside that sentence."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=repo, capture_output=True, check=True
    ).stdout.decode()
    hits = []
    for name in filter(None, listed.split("\0")):
        if FORMER in name.lower():
            hits.append(f"{name}: the path")
        path = repo / name
        if not path.is_file():
            continue  # deleted in the working tree
        data = path.read_bytes()
        if b"\0" in data:
            continue  # binary
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if FORMER in line.lower() and APART not in line:
                hits.append(f"{name}:{number}: {line.strip()[:100]}")
    return hits


def test_the_former_name_appears_only_where_the_two_projects_are_told_apart(repo):
    hits = former_name_hits(repo)
    assert not hits, f"{len(hits)} places hold the former name:\n" + "\n".join(hits[:20])


def test_the_readme_tells_the_two_projects_apart(repo):
    lines = [line for line in (repo / "README.md").read_text().splitlines() if APART in line]
    assert lines and FORMER in lines[0].lower() and "MemRepro" in lines[0]
