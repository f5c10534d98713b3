"""The `lich tool` / `lich tools` commands, run in-process with the process a user has (cwd,
environment, stdin, stdout, stderr) set up for each call (tests/support/cli_runner.py); what only
a process shows (a closed stdout pipe) runs a real `python -m lich_cli`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from lich_core import __version__
from tests.support.cli_runner import lich_command
from tests.support.cli_runner import run_lich as lich


def test_version(tmp_path: Path) -> None:
    result = lich("--version", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.strip() == f"lich {__version__}"


def test_tools_lists_capability_and_enabled_state(tmp_path: Path) -> None:
    (tmp_path / ".lich").mkdir()
    (tmp_path / ".lich" / "config.json").write_text(
        json.dumps({"tools_enabled": ["write_file", "list_dir"]})
    )
    result = lich("tools", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    tools = {tool["name"]: tool for tool in json.loads(result.stdout)}
    assert tools["write_file"]["enabled"] is True
    assert tools["write_file"]["capability"] == "file/write"
    assert tools["terminal"]["enabled"] is False
    assert tools["terminal"]["capability"] == "process/exec"


def test_tool_writes_through_executor_and_reports(tmp_path: Path) -> None:
    args = json.dumps({"path": "notes/a.txt", "content": "hello\n"})
    result = lich("tool", "write_file", args, "--work-dir", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "notes" / "a.txt").read_text() == "hello\n"
    assert "6" in result.stdout  # the char count


def test_tool_failure_exits_1_with_prefixed_error(tmp_path: Path) -> None:
    result = lich(
        "tool",
        "write_file",
        json.dumps({"path": "../x", "content": ""}),
        "--work-dir",
        str(tmp_path),
        cwd=tmp_path,
    )
    assert result.returncode == 1
    assert "path_escape:" in result.stderr
    assert not (tmp_path.parent / "x").exists()


def test_tool_capability_denied_runs_nothing(tmp_path: Path) -> None:
    (tmp_path / ".lich").mkdir()
    (tmp_path / ".lich" / "config.json").write_text(json.dumps({"capabilities": ["file/read"]}))
    result = lich("tool", "write_file", json.dumps({"path": "a.txt", "content": "x"}), cwd=tmp_path)
    assert result.returncode == 1
    assert "capability_denied: file/write" in result.stderr
    assert not (tmp_path / "a.txt").exists()


def test_unknown_tool_and_bad_json(tmp_path: Path) -> None:
    unknown = lich("tool", "no_such_tool", "{}", cwd=tmp_path)
    assert unknown.returncode == 1
    assert "unknown_tool: no_such_tool" in unknown.stderr
    bad = lich("tool", "write_file", "{not json", cwd=tmp_path)
    assert bad.returncode == 2
    assert "invalid JSON" in bad.stderr


def test_a_bad_value_is_one_line_naming_the_key_and_the_command_runs(tmp_path: Path) -> None:
    (tmp_path / ".lich").mkdir()
    (tmp_path / ".lich" / "config.json").write_text(
        json.dumps({"capabilities": ["file/rread", "file/read"]})
    )
    result = lich("tools", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(
        f"lich: {tmp_path.resolve() / '.lich' / 'config.json'}: capabilities[0]: unknown capability 'file/rread'"
    ), line
    assert line.endswith("; the entry is dropped; the others apply"), line
    tools = {tool["name"]: tool for tool in json.loads(result.stdout)}
    # The rest of the value applies: the file narrows the grant to file/read.
    assert tools["read_file"]["enabled"] and not tools["write_file"]["enabled"]


def test_arguments_from_stdin(tmp_path: Path) -> None:
    result = lich(
        "tool", "write_file", "-", cwd=tmp_path, stdin=json.dumps({"path": "b.txt", "content": "é"})
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "b.txt").read_text(encoding="utf-8") == "é"


PLUGIN_WITH_TOOL = """
from lich_core.plugins import Plugin
from lich_core.tools.types import FunctionTool, ToolResult


async def shout(args, ctx):
    return ToolResult(ok=True, output=str(args.get("text", "")).upper())


plugin = Plugin(
    name="shouter",
    tools=[FunctionTool("acme_shout", "Uppercase text.", {"type": "object", "properties": {"text": {"type": "string"}}}, shout)],
)
"""


def test_plugin_tools_are_listed_and_runnable(tmp_path: Path) -> None:
    (tmp_path / ".lich" / "plugins").mkdir(parents=True)
    (tmp_path / ".lich" / "plugins" / "shouter.py").write_text(PLUGIN_WITH_TOOL)
    (tmp_path / ".lich" / "config.json").write_text(
        json.dumps({"plugins": [".lich/plugins/shouter.py"]})
    )
    untrusted = lich("tools", "--json", cwd=tmp_path)
    assert "acme_shout" not in untrusted.stdout
    assert (
        "load plugin .lich/plugins/shouter.py" in untrusted.stderr
        and "lich trust" in untrusted.stderr
    )
    assert lich("trust", cwd=tmp_path).returncode == 0
    listed = lich("tools", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert {"name": "acme_shout", "enabled": True}.items() <= next(
        t for t in json.loads(listed.stdout) if t["name"] == "acme_shout"
    ).items()
    ran = lich("tool", "acme_shout", json.dumps({"text": "hey"}), cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "HEY"


def test_read_then_patch_from_the_shell(tmp_path: Path) -> None:
    """Issue 3's "done when": read_file, grep_files and apply_patch work through `lich tool`."""
    from lich_core.hashline.anchors import line_hash

    (tmp_path / "a.py").write_text("def f():\n    return 1\n")
    unread = lich(
        "tool",
        "apply_patch",
        json.dumps({"input": f"@@ a.py\n= 2:{line_hash('    return 1')}\n~    return 2\n"}),
        cwd=tmp_path,
    )
    assert unread.returncode == 1
    assert "not_read:" in unread.stderr

    read = lich("tool", "read_file", json.dumps({"path": "a.py"}), cwd=tmp_path)
    assert read.returncode == 0, read.stderr
    assert f"2:{line_hash('    return 1')}|    return 1" in read.stdout

    patched = lich(
        "tool",
        "apply_patch",
        json.dumps({"input": f"@@ a.py\n= 2:{line_hash('    return 1')}\n~    return 2\n"}),
        cwd=tmp_path,
    )
    assert patched.returncode == 0, patched.stderr
    assert "Edited a.py (+1 -1)" in patched.stdout
    assert (tmp_path / "a.py").read_text() == "def f():\n    return 2\n"

    found = lich("tool", "grep_files", json.dumps({"pattern": "return"}), cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    assert f"*2:{line_hash('    return 2')}|    return 2" in found.stdout


def test_tools_table_shows_enabled_denied_and_disabled(tmp_path: Path) -> None:
    (tmp_path / ".lich").mkdir()
    config = {"tools_enabled": ["read_file", "terminal"], "capabilities": ["file/read"]}
    (tmp_path / ".lich" / "config.json").write_text(json.dumps(config))
    result = lich("tools", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["TOOL", "STATE", "CAPABILITY", "SUMMARY"]
    rows = {line.split()[0]: line.split()[1:3] for line in lines[1:]}
    assert rows["read_file"] == ["enabled", "file/read"]
    assert rows["terminal"] == ["denied", "process/exec"]  # selected, capability not granted
    assert rows["write_file"] == ["disabled", "file/write"]  # not in tools_enabled
    # One short line per tool: the summary is the description's first sentence, cut.
    assert all(len(line) <= 120 for line in lines), max(lines, key=len)
    assert "Read a text file as LINE:HH|content rows." in result.stdout
    listed = {t["name"]: t for t in json.loads(lich("tools", "--json", cwd=tmp_path).stdout)}
    assert (
        listed["terminal"]["selected"],
        listed["terminal"]["granted"],
        listed["terminal"]["enabled"],
    ) == (
        True,
        False,
        False,
    )


def test_closed_stdout_is_not_a_traceback(tmp_path: Path) -> None:
    process = subprocess.Popen(
        lich_command("tools", "--json"),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    process.stdout.close()  # the reader is gone before lich writes (`lich tools | head -0`)
    _, stderr = process.communicate(timeout=60)
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr


@pytest.mark.parametrize(
    "argv", [["update"], ["plugin", "add", "x"], ["upgrade", "--work-dir", "."]]
)
def test_unknown_subcommands_are_errors_not_tasks(tmp_path: Path, argv: list[str]) -> None:
    result = lich(*argv, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith(f"lich: unknown command {argv[0]!r}")
    assert "lich run" in result.stderr and "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []  # no .lich, no session: nothing ran


def test_the_cli_writes_nothing_into_the_directory_it_runs_in(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    assert lich("tool", "read_file", json.dumps({"path": "a.txt"}), cwd=tmp_path).returncode == 0
    assert lich("tools", cwd=tmp_path).returncode == 0
    assert lich("config", cwd=tmp_path).returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_trust_and_revoke_from_the_shell(tmp_path: Path) -> None:
    nothing = lich("trust", cwd=tmp_path)
    assert nothing.returncode == 0 and "nothing to trust" in nothing.stdout
    (tmp_path / ".lich").mkdir()
    (tmp_path / ".lich" / "config.json").write_text(
        json.dumps({"system_prompt": "be terse", "max_turns": 3})
    )
    shown = json.loads(lich("config", "--json", cwd=tmp_path).stdout)
    assert shown["trust"]["state"] == "untrusted" and shown["config"]["system_prompt"] is None
    assert shown["trust"]["keys"] == [
        {"key": "system_prompt", "what": "replace the agent's system prompt"}
    ]
    trusted = json.loads(lich("trust", "--json", cwd=tmp_path).stdout)
    assert trusted["state"] == "trusted" and trusted["keys"] == shown["trust"]["keys"]
    assert (
        json.loads(lich("config", "--json", cwd=tmp_path).stdout)["config"]["system_prompt"]
        == "be terse"
    )
    revoked = lich("trust", "--revoke", cwd=tmp_path)
    assert revoked.returncode == 0 and "revoked trust" in revoked.stdout
    assert (
        json.loads(lich("config", "--json", cwd=tmp_path).stdout)["trust"]["state"] == "untrusted"
    )
