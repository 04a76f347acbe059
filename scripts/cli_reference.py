"""docs/cli.md, generated from the commands' own parsers: `memrepro --help`, each command a person
types, and `memrepro job --help`. tests/test_docs.py fails when the page drifts from them.

    python scripts/cli_reference.py          # writes docs/cli.md
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
WIDTH = "100"  # argparse wraps at $COLUMNS: one width, whatever the terminal

HEADER = """\
# The command-line reference

This page gives every command's `--help`, generated from its own parser; do not edit it.

`python scripts/cli_reference.py` writes it again. A test fails when it drifts from the parsers.
"""


def help_text(main, argv: list[str]) -> str:
    """What `main(argv)` prints before argparse exits on --help."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        main(argv)
    return out.getvalue().rstrip("\n")


def reference() -> str:
    from memrepro import cli
    from memrepro.commands import TOOLS

    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        sections = [("memrepro", help_text(cli.main, ["--help"]))]
        for name, (module, _) in TOOLS.items():
            tool = importlib.import_module(module).main
            sections.append((f"memrepro {name}", help_text(tool, ["--help"])))
        sections.append(("memrepro job", help_text(cli.main, ["job", "--help"])))
    finally:
        if previous is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = previous
    body = "".join(f"\n## `{title}`\n\n```text\n{text}\n```\n" for title, text in sections)
    return HEADER + body


if __name__ == "__main__":
    PAGE.write_text(reference())
    print(f"wrote {PAGE}", file=sys.stderr)
