"""Issue 33: what the CLI says when the user's own words are wrong.

A config file named with --config must exist and parse, for every command that takes the
option; a bare `lich` and an unknown first word are usage errors that say what to type instead.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.cli_runner import run_lich as lich
from tests.support.cli_runner import run_lich_subprocess

USAGE_EXIT = 2

# Every command that reads --config, with the arguments it needs besides; CONFIG is where the
# option goes (a task may also follow it: `lich --config X "do x"`).
CONFIG_COMMANDS = [
    pytest.param(["config", "CONFIG"], id="config"),
    pytest.param(["CONFIG", "do x"], id="task-after-option"),
    pytest.param(["do x", "CONFIG"], id="task"),
    pytest.param(["run", "do", "x", "CONFIG"], id="run"),
    pytest.param(["tools", "CONFIG"], id="tools"),
    pytest.param(["tool", "list_dir", "{}", "CONFIG"], id="tool"),
    pytest.param(["sessions", "CONFIG"], id="sessions"),
    pytest.param(["mcp", "list", "CONFIG"], id="mcp-list"),
]


def with_config(command: list[str], path: Path) -> list[str]:
    at = command.index("CONFIG")
    return [*command[:at], "--config", str(path), *command[at + 1 :]]


@pytest.mark.parametrize("command", CONFIG_COMMANDS)
def test_a_missing_config_file_stops_the_command_naming_it(
    tmp_path: Path, command: list[str]
) -> None:
    missing = tmp_path / "nonexistent.json"
    done = lich(*with_config(command, missing), cwd=tmp_path)
    assert done.returncode == USAGE_EXIT, (done.stdout, done.stderr)
    assert done.stderr == f"lich: config error: {missing}: no such file\n"
    assert done.stdout == ""
    assert list(tmp_path.iterdir()) == []  # nothing ran: no session, no state


@pytest.mark.parametrize("command", CONFIG_COMMANDS)
def test_a_config_file_that_does_not_parse_stops_the_command_naming_it(
    tmp_path: Path, command: list[str]
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"max_turns": 3,\n  oops}\n', encoding="utf-8")
    done = lich(*with_config(command, broken), cwd=tmp_path)
    assert done.returncode == USAGE_EXIT, (done.stdout, done.stderr)
    assert done.stderr.startswith(
        f"lich: config error: {broken}: invalid JSON at line 2 column 3"
    ), done.stderr
    assert "Traceback" not in done.stderr


def test_a_config_folder_is_not_a_config_file(tmp_path: Path) -> None:
    done = lich("config", "--config", str(tmp_path), cwd=tmp_path)
    assert done.returncode == USAGE_EXIT
    assert done.stderr.startswith(f"lich: config error: {tmp_path}: cannot read"), done.stderr


def test_an_existing_config_file_is_read(tmp_path: Path) -> None:
    given = tmp_path / "mine.json"
    given.write_text('{"max_turns": 7}', encoding="utf-8")
    done = lich("config", "--config", str(given), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert re.search(rf"^max_turns += 7  # {re.escape(str(given))}$", done.stdout, re.MULTILINE), (
        done.stdout
    )


def test_bare_lich_prints_the_help_and_is_a_usage_error(tmp_path: Path) -> None:
    done = run_lich_subprocess(cwd=tmp_path)
    assert done.returncode == USAGE_EXIT
    assert done.stdout == ""
    assert done.stderr.startswith("usage: lich demo")
    assert "--max-turns" in done.stderr  # the whole help, as `lich --help` prints it
    assert lich("--help", cwd=tmp_path).stdout.strip() == done.stderr.strip()
    assert lich("--help", cwd=tmp_path).returncode == 0  # asking for help is no error


@pytest.mark.parametrize(
    ("argv", "suggestion"),
    [
        (["refactor"], "lich run refactor"),
        (["plugin", "add", "x"], "lich run plugin add x"),
        (["fix", "it's broken"], "lich run fix 'it'\"'\"'s broken'"),
    ],
)
def test_an_unknown_first_word_suggests_lich_run(
    tmp_path: Path, argv: list[str], suggestion: str
) -> None:
    done = lich(*argv, cwd=tmp_path)
    assert done.returncode == USAGE_EXIT
    first = done.stderr.splitlines()[0]
    assert (
        first
        == f"lich: unknown command {argv[0]!r}; to give the agent this as a task, use `{suggestion}`"
    )
    assert "quote it" not in first  # quoting one word changes nothing in argv
