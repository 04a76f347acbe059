"""The README and docs/ pages as one text, for tests that check the numbers written there.

A plain module, not conftest: tests/cluster and tests/containers have conftests of their own
that would shadow a name imported "from conftest".
"""

from pathlib import Path


def docs_text(repo: Path) -> str:
    """The README and every page of docs/, as one text: where the numbers a test checks live."""
    pages = [repo / "README.md", *sorted((repo / "docs").glob("*.md"))]
    return "\n".join(page.read_text() for page in pages)
