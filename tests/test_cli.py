"""`memrepro` as a person meets it: one line per command in --help, the job subcommands under
`memrepro job --help`, a command that is none named, and --version."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest

from memrepro import cli


def test_help_lists_the_commands_a_person_types_one_line_each_on_one_screen(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["--help"])
    assert done.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) <= 24 and max(map(len, lines)) <= 80  # one screen of a terminal
    listed = [line.split()[0] for line in lines if line.startswith("  ") and line.strip()]
    assert listed == [*cli.TOOLS, cli.JOB_ENTRY, "--version"]
    for name, (_, summary) in cli.TOOLS.items():
        assert f"  {name} " in "\n".join(lines) and summary in "\n".join(lines), name
    assert not any(f"  {name} " in line for line in lines for name in cli.COMMANDS)


def test_job_help_lists_every_job_subcommand_and_the_rules_still_call_them(capsys, tmp_path):
    cli.main(["job", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for name, command in cli.COMMANDS.items():
        assert f"{name} {command.summary}" in text, name
    assert "--settings" in text and "--job" in text
    # as a rule calls one: --job and --log first, then the subcommand by its name
    args = cli.build_parser().parse_args(
        ["--job", '{"rule": "table", "wildcards": {}}', "--log", str(tmp_path / "t.log"),
         "merge-eval", "--settings", "{}", "--shards", "a", "--predictions", "p", "--metrics", "m"]
    )  # fmt: skip
    assert (args.command, args.job["rule"], args.shards) == ("merge-eval", "table", [Path("a")])


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["cots"], "memrepro: no command 'cots'. Did you mean cost? The commands: memrepro --help"),
        (
            ["job", "rescore"],
            "memrepro job: it only lists them; run one by its name: memrepro rescore",
        ),
    ],
)
def test_a_command_that_is_none_names_the_closest_and_where_the_lists_are(argv, said):
    with pytest.raises(SystemExit) as done:
        cli.main(argv)
    assert str(done.value.code).startswith(said)


def test_version_names_the_package_and_the_commit(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0
    printed = capsys.readouterr().out.strip()
    expected = rf"memrepro {re.escape(importlib.metadata.version('memrepro'))} \(commit \S+"
    assert re.match(expected, printed), printed
