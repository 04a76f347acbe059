"""`memrepro` as a person meets it: one line per subcommand in --help, and --version."""

from __future__ import annotations

import importlib.metadata
import re

import pytest

from memrepro import cli


def test_help_gives_every_subcommand_one_line(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for name, command in cli.COMMANDS.items():
        assert f"{name} {command.summary}" in text, name
    for name, (_, summary) in cli.TOOLS.items():
        assert f"{name} {summary}" in text, name


def test_version_names_the_package_and_the_commit(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0
    printed = capsys.readouterr().out.strip()
    expected = rf"memrepro {re.escape(importlib.metadata.version('memrepro'))} \(commit \S+"
    assert re.match(expected, printed), printed
