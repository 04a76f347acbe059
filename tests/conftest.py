"""Shared test helpers."""

from __future__ import annotations

import functools
import http.server
import subprocess
import sys
from pathlib import Path

import pytest
from fake_http import serve

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture
def exited_pid() -> int:
    """The pid of a process that has run and been reaped (a killed run's, for liveness checks)."""
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        text=True,
        capture_output=True,
        check=True,
    )
    return int(done.stdout)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


@pytest.fixture
def http_root(tmp_path):
    """A stdlib HTTP server on 127.0.0.1 serving a temporary directory; yields (root, base URL)."""
    root = tmp_path / "www"
    root.mkdir()
    with serve(functools.partial(QuietHandler, directory=str(root))) as url:
        yield root, url


@pytest.fixture(scope="module")
def dev():
    """The HotpotQA dev fixture: its records, its document pool, its question records."""
    from memrepro.data.hotpotqa import build_pool, load_hotpotqa, question_records
    from memrepro.data.sources import fixture_path

    records = load_hotpotqa(fixture_path("hotpot_dev_fixture.json"))
    pool = build_pool(records)
    return records, pool, question_records(records, pool)


@pytest.fixture
def checked_figures(monkeypatch):
    """Every figure the test saves, checked when it ends (figure_checks.figure_problems)."""
    from figure_checks import figure_problems
    from matplotlib.figure import Figure

    saved: dict[int, Figure] = {}
    original = Figure.savefig

    def savefig(self, *args, **kwargs):
        saved[id(self)] = self
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)
    yield saved
    problems = [p for fig in saved.values() for p in figure_problems(fig)]
    assert not problems, problems
