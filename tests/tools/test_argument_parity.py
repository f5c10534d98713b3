"""Both harnesses' argument names: every alias gives what its primary name gives.

read_file, terminal and grep_files accept lich's and kli's spellings (lich_core/tools/arguments.py);
both are in each schema, both given is an error, and an argument no schema lists is reported.
Real files in tmp dirs, terminal with real bash.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from lich_core.tools.arguments import pick_alias, reject_unknown_arguments, unknown_arguments
from lich_core.tools.builtin.grep_files import TOOL as GREP_FILES
from lich_core.tools.builtin.read_file import TOOL as READ_FILE
from lich_core.tools.builtin.terminal import TOOL as TERMINAL
from lich_core.tools.executor import ToolExecutor
from lich_core.tools.registry import ToolRegistry
from lich_core.tools.types import FunctionTool, ToolContext
from lich_core.vocabulary import ToolResult

TOOLS = {tool.name: tool for tool in (READ_FILE, TERMINAL, GREP_FILES)}


def make_ctx(root: Path) -> ToolContext:
    return ToolContext(
        work_dir=root, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(root)}
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "notes.txt").write_text("".join(f"line {n}\n" for n in range(1, 21)))
    (tmp_path / "top.py").write_text("needle = 1\n")
    (tmp_path / "src" / "a.py").write_text("x = 1\nneedle = 2\n")
    (tmp_path / "src" / "pkg" / "b.py").write_text("needle = 3\ny = 4\n")
    (tmp_path / "src" / "c.txt").write_text("needle in text\n")
    return tmp_path


def comparable(result: ToolResult) -> tuple[bool, str, str | None, dict[str, Any]]:
    return result.ok, result.output, result.error, dict(result.details or {})


# (tool, call with the alias, the same call with the primary names)
ALIAS_TABLE: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    # read_file: lich's offset/limit next to kli's start/end
    ("read_file", {"path": "notes.txt", "offset": 5}, {"path": "notes.txt", "start": 5}),
    ("read_file", {"path": "notes.txt", "limit": 3}, {"path": "notes.txt", "end": 3}),
    (
        "read_file",
        {"path": "notes.txt", "offset": 4, "limit": 3},
        {"path": "notes.txt", "start": 4, "end": 6},
    ),
    (
        "read_file",
        {"path": "notes.txt", "offset": 18, "limit": 50},
        {"path": "notes.txt", "start": 18, "end": 67},
    ),
    (
        "read_file",
        {"path": "notes.txt", "offset": 2, "limit": 2, "raw": True},
        {"path": "notes.txt", "start": 2, "end": 3, "raw": True},
    ),
    (
        "read_file",
        {"path": "notes.txt", "start": 7, "limit": 2},
        {"path": "notes.txt", "start": 7, "end": 8},
    ),
    # terminal: kli's timeout (seconds) next to timeout_ms, kli's shell next to the default bash
    (
        "terminal",
        {"command": "echo hi; echo err >&2", "timeout": 5},
        {"command": "echo hi; echo err >&2", "timeout_ms": 5000},
    ),
    (
        "terminal",
        {"command": "echo $BASH_VERSION | cut -c1", "shell": "bash"},
        {"command": "echo $BASH_VERSION | cut -c1"},
    ),
    ("terminal", {"command": "exit 3", "timeout": 2.5}, {"command": "exit 3", "timeout_ms": 2500}),
    ("terminal", {"command": "sleep 5", "timeout": 0.3}, {"command": "sleep 5", "timeout_ms": 300}),
    # grep_files: kli's path-as-glob next to path + glob
    (
        "grep_files",
        {"pattern": "needle", "path": "src/**/*.py"},
        {"pattern": "needle", "path": "src", "glob": "*.py"},
    ),
    ("grep_files", {"pattern": "needle", "path": "**/*.py"}, {"pattern": "needle", "glob": "*.py"}),
    (
        "grep_files",
        {"pattern": "needle", "path": "src/*.py"},
        {"pattern": "needle", "path": "src", "glob": "/*.py"},
    ),
    ("grep_files", {"pattern": "needle", "path": "*.py"}, {"pattern": "needle", "glob": "/*.py"}),
    (
        "grep_files",
        {"pattern": "needle", "path": "src/**", "context": 1},
        {"pattern": "needle", "path": "src", "context": 1},
    ),
]


@pytest.mark.parametrize("engine", ["python", "auto"])
@pytest.mark.parametrize(("name", "alias_call", "primary_call"), ALIAS_TABLE)
async def test_alias_gives_what_the_primary_name_gives(
    tree: Path, engine: str, name: str, alias_call: dict[str, Any], primary_call: dict[str, Any]
) -> None:
    if engine != "python" and name != "grep_files":
        pytest.skip("the engine only matters to grep_files")
    tool = TOOLS[name]
    results = []
    for call in (alias_call, primary_call):
        ctx = make_ctx(tree)
        ctx.env["LICH_GREP_ENGINE"] = engine
        results.append(comparable(await tool.execute(dict(call), ctx)))
    assert results[0] == results[1]
    if (
        name != "terminal"
        or "exit" not in alias_call["command"]
        and "sleep" not in alias_call["command"]
    ):
        assert results[0][0], results[0]


@pytest.mark.parametrize(("name", "alias_call", "primary_call"), ALIAS_TABLE)
def test_every_alias_is_in_the_schema(
    name: str, alias_call: dict[str, Any], primary_call: dict[str, Any]
) -> None:
    schema = TOOLS[name].parameters
    assert schema["additionalProperties"] is False
    for key in (*alias_call, *primary_call):
        assert key in schema["properties"]


def test_alias_descriptions_name_their_harness() -> None:
    props = {name: tool.parameters["properties"] for name, tool in TOOLS.items()}
    assert (
        "lich" in props["read_file"]["offset"]["description"]
        and "`start`" in props["read_file"]["offset"]["description"]
    )
    assert (
        "lich" in props["read_file"]["limit"]["description"]
        and "`end`" in props["read_file"]["limit"]["description"]
    )
    assert (
        "kli" in props["terminal"]["timeout"]["description"]
        and "seconds" in props["terminal"]["timeout"]["description"]
    )
    assert "kli" in props["terminal"]["shell"]["description"]
    assert props["terminal"]["shell"]["enum"] == ["bash", "sh", "zsh", "dash"]
    assert (
        "glob" in props["grep_files"]["path"]["description"]
        and "kli" in props["grep_files"]["path"]["description"]
    )


# --- both spellings at once ---


@pytest.mark.parametrize(
    ("name", "call", "names"),
    [
        ("read_file", {"path": "notes.txt", "start": 2, "offset": 2}, ("start", "offset")),
        ("read_file", {"path": "notes.txt", "end": 2, "limit": 2}, ("end", "limit")),
        (
            "terminal",
            {"command": "touch ran", "timeout": 1, "timeout_ms": 1000},
            ("timeout_ms", "timeout"),
        ),
    ],
)
async def test_both_spellings_are_an_error(
    tree: Path, name: str, call: dict[str, Any], names: tuple[str, str]
) -> None:
    result = await TOOLS[name].execute(call, make_ctx(tree))
    assert not result.ok
    assert result.error is not None and result.error.startswith(
        f"conflicting_arguments: {names[0]} and {names[1]}"
    )
    assert not (tree / "ran").exists()


async def test_a_conflict_is_an_error_even_for_an_empty_file(tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_text("")
    result = await READ_FILE.execute(
        {"path": "empty.txt", "start": 1, "offset": 1}, make_ctx(tmp_path)
    )
    assert result.error is not None and result.error.startswith("conflicting_arguments:")


async def test_null_alias_counts_as_not_given(tree: Path) -> None:
    result = await READ_FILE.execute(
        {"path": "notes.txt", "start": 3, "end": 3, "offset": None}, make_ctx(tree)
    )
    assert result.ok and result.output.startswith("3:")


# --- read_file's slice in lich's words ---


async def test_read_file_speaks_the_callers_names(tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text("".join(f"{n}\n" for n in range(1, 1501)))
    ctx = make_ctx(tmp_path)
    lich = await READ_FILE.execute({"path": "long.txt", "offset": 2}, ctx)
    kli = await READ_FILE.execute({"path": "long.txt", "start": 2}, ctx)
    assert lich.output.splitlines()[-1] == "(lines 2-1001 of 1500 shown; read on with offset=1002)"
    assert kli.output.splitlines()[-1] == "(lines 2-1001 of 1500 shown; read on with start=1002)"
    assert lich.output.splitlines()[:-1] == kli.output.splitlines()[:-1]
    past = await READ_FILE.execute({"path": "long.txt", "offset": 2000}, ctx)
    assert (
        past.error == "out_of_range: offset=2000 is past the end of long.txt, which has 1500 lines"
    )


async def test_read_file_limit_is_a_line_count_not_ignored(tree: Path) -> None:
    result = await READ_FILE.execute(
        {"path": "notes.txt", "offset": 10, "limit": 2, "raw": True}, make_ctx(tree)
    )
    assert result.output == "line 10\nline 11"
    assert result.details == {"path": "notes.txt", "lines": 20, "start": 10, "end": 11}


# --- terminal: shell, timeout, separate streams ---


async def test_terminal_shell_runs_the_named_shell(tree: Path) -> None:
    dash = shutil.which("dash")
    if dash is None:
        pytest.skip("no dash on PATH")
    result = await TERMINAL.execute(
        {"command": "echo ${BASH_VERSION:-none}", "shell": "dash"}, make_ctx(tree)
    )
    assert result.ok and result.output == "none\n[exit 0]"
    assert result.details["shell"] == dash


@pytest.mark.parametrize(
    ("shell", "prefix"),
    [("fish", "invalid_shell:"), ("python3", "invalid_shell:"), ("/tmp/bash", "invalid_shell:")],
)
async def test_terminal_refuses_other_shells(tree: Path, shell: str, prefix: str) -> None:
    result = await TERMINAL.execute({"command": "touch ran", "shell": shell}, make_ctx(tree))
    assert not result.ok and result.error is not None and result.error.startswith(prefix), (
        result.error
    )
    assert not (tree / "ran").exists()


async def test_terminal_shell_must_be_on_path(tree: Path) -> None:
    ctx = make_ctx(tree)
    ctx.env["PATH"] = str(tree)  # holds no shell
    result = await TERMINAL.execute({"command": "touch ran", "shell": "sh"}, ctx)
    assert result.error is not None and result.error.startswith(
        "shell_not_found: sh is not on PATH"
    )
    assert not (tree / "ran").exists()


async def test_terminal_timeout_in_seconds_is_capped_like_timeout_ms(tree: Path) -> None:
    result = await TERMINAL.execute({"command": "true", "timeout": 10_000}, make_ctx(tree))
    assert result.ok and result.details["timeout_ms"] == 300_000
    result = await TERMINAL.execute({"command": "true", "timeout": "2"}, make_ctx(tree))
    assert result.details["timeout_ms"] == 2_000


async def test_terminal_separate_streams(tree: Path) -> None:
    command = "echo out1; echo err1 >&2; echo out2; printf err2 >&2"
    merged = await TERMINAL.execute({"command": command}, make_ctx(tree))
    apart = await TERMINAL.execute({"command": command, "separate_streams": True}, make_ctx(tree))
    assert sorted(merged.output.splitlines()) == sorted(
        ["out1", "err1", "out2", "err2", "[exit 0]"]
    )
    assert apart.ok and apart.output == "[stdout]\nout1\nout2\n[stderr]\nerr1\nerr2\n[exit 0]"
    quiet = await TERMINAL.execute({"command": "exit 4", "separate_streams": True}, make_ctx(tree))
    assert quiet.output == "[stdout]\n[stderr]\n[exit 4]" and quiet.error == "exit_code: 4"


async def test_terminal_separate_streams_share_one_cap(tree: Path) -> None:
    command = "head -c 40000 /dev/zero | tr '\\0' o; head -c 40000 /dev/zero | tr '\\0' e >&2"
    result = await TERMINAL.execute({"command": command, "separate_streams": True}, make_ctx(tree))
    assert result.ok
    assert result.details["truncated_chars"] == 30_000
    assert len(result.output) <= TERMINAL.max_output_chars  # type: ignore[attr-defined]
    assert result.output.startswith("[stdout]\n" + "o" * 40_000 + "\n[stderr]\n")
    assert result.output.endswith("[exit 0]") and "truncated" in result.output


# --- grep_files: path as a glob ---


async def test_grep_glob_path_only_when_no_such_path(tree: Path) -> None:
    (tree / "odd[1].txt").write_text("needle\n")
    result = await GREP_FILES.execute({"pattern": "needle", "path": "odd[1].txt"}, make_ctx(tree))
    assert result.ok and result.output.splitlines()[0] == "odd[1].txt"


@pytest.mark.parametrize("engine", ["python", "auto"])
async def test_grep_glob_path_is_confined_and_does_not_follow_symlinks(
    tree: Path, engine: str
) -> None:
    os.symlink(tree / "src", tree / "link")
    ctx = make_ctx(tree)
    ctx.env["LICH_GREP_ENGINE"] = engine
    escape = await GREP_FILES.execute({"pattern": "needle", "path": "../**/*.py"}, ctx)
    assert escape.error is not None and escape.error.startswith("path_escape:")
    through = await GREP_FILES.execute({"pattern": "needle", "path": "link/**/*.py"}, ctx)
    assert through.error is not None and through.error.startswith("symlink_not_followed: link")
    # Inside the walk, symlinks are skipped: link/ is not searched a second time.
    everything = await GREP_FILES.execute({"pattern": "needle", "path": "**/*.py"}, ctx)
    assert [row for row in everything.output.splitlines() if row.endswith(".py")] == [
        "src/a.py",
        "src/pkg/b.py",
        "top.py",
    ]
    missing = await GREP_FILES.execute({"pattern": "needle", "path": "nope/**/*.py"}, ctx)
    assert missing.error == "not_found: nope (the directory part of the glob 'nope/**/*.py')"


async def test_grep_glob_path_with_a_glob_argument_narrows_further(tree: Path) -> None:
    result = await GREP_FILES.execute(
        {"pattern": "needle", "path": "src/**", "glob": "*.txt"}, make_ctx(tree)
    )
    assert result.ok and result.output.splitlines()[0] == "src/c.txt"
    assert result.details["files"] == 1


# --- unknown arguments ---


@pytest.mark.parametrize(
    ("name", "call", "unknown"),
    [
        ("read_file", {"path": "notes.txt", "file_path": "notes.txt"}, "file_path"),
        ("terminal", {"command": "touch ran", "cmd": "touch ran"}, "cmd"),
        ("grep_files", {"pattern": "needle", "include": "*.py"}, "include"),
    ],
)
async def test_unknown_argument_is_reported_with_the_known_names(
    tree: Path, name: str, call: dict[str, Any], unknown: str
) -> None:
    tool = TOOLS[name]
    result = await tool.execute(call, make_ctx(tree))
    known = ", ".join(tool.parameters["properties"])
    assert not result.ok and result.error == f"unknown_argument: {unknown} (known: {known})"
    assert not (tree / "ran").exists()


async def test_unknown_arguments_through_the_executor(tree: Path) -> None:
    registry = ToolRegistry()
    registry.register(READ_FILE)
    executor = ToolExecutor(registry, work_dir=tree)
    result = await executor.execute("read_file", {"path": "notes.txt", "lines": 3, "mode": "x"})
    assert result.error is not None and result.error.startswith(
        "unknown_arguments: lines, mode (known: path, start, end, offset, limit, raw"
    )


def test_unknown_arguments_follow_additional_properties() -> None:
    closed = {"type": "object", "properties": {"a": {}}, "additionalProperties": False}
    assert unknown_arguments(closed, {"a": 1, "b": 2}) == ["b"]
    assert unknown_arguments({"type": "object", "properties": {"a": {}}}, {"b": 2}) == []
    assert unknown_arguments({**closed, "additionalProperties": {"type": "string"}}, {"b": 2}) == []
    reject_unknown_arguments(closed, {"a": 1})
    assert pick_alias({"x": None, "y": 1}, "x", "y") == "y"
    assert pick_alias({}, "x", "y") is None


def test_every_builtin_argument_check_is_schema_driven() -> None:
    for tool in TOOLS.values():
        assert isinstance(tool, FunctionTool)
        assert tool.parameters.get("additionalProperties") is False
