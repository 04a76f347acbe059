"""Tables and figures: reproduced numbers beside the paper's, written atomically.

`tables` reads the per-(system, length) metrics files and builds Table 1 (CSV, Markdown, LaTeX);
`figures` plots accuracy against context length (PNG, PDF). Both read only metrics files and the
transcribed paper numbers in config/paper/.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_output(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to `path`; move it onto `path` only if the body succeeds."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the file the usual permissions
    try:
        yield Path(tmp)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def write_text_atomic(path: str | Path, text: str) -> None:
    with atomic_output(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
