"""lich_core.approvals.what_will_run: the line every approval question (and the CLI's refusal)
shows for a call: the command line, the interpreter and whether it is the repository's, and the
repository files the runner loads; nothing for a tool that starts nothing."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

from lich_core.approvals import question_text, what_will_run
from lich_core.config import Config
from lich_core.mcp.tools import McpTool
from lich_core.tools.builtin import builtin_tools
from lich_core.tools.types import ToolContext
from lich_core.trust import TRUSTED, TrustStatus
from tests.support.untrusted_repo import PYTHON_EVAL_RUNS, RUN_TESTS_RUNS, make_untrusted_repo

TOOLS = {tool.name: tool for tool in builtin_tools()}


def trusted(root: Path, **values: Any) -> Config:
    return Config(values, {}, TrustStatus(TRUSTED, root / ".lich" / "config.json"))


def line(name: str, root: Path, settings: Any = None, **args: Any) -> str | None:
    return what_will_run(
        TOOLS[name],
        args,
        ToolContext(work_dir=root, settings=settings if settings is not None else {}),
    )


def test_an_untrusted_repository_gets_the_users_interpreter(tmp_path: Path) -> None:
    root = make_untrusted_repo(tmp_path)
    assert line("run_tests", root) == RUN_TESTS_RUNS
    assert line("python_eval", root, code="1") == PYTHON_EVAL_RUNS


def test_a_trusted_repository_runs_its_venv_and_the_question_says_so(tmp_path: Path) -> None:
    root = make_untrusted_repo(tmp_path)
    (root / "tests").mkdir()
    (root / "tests" / "conftest.py").write_text("")
    venv = root / ".venv" / "bin" / "python"
    assert line("run_tests", root, trusted(root), filter="test_x") == (
        f"runs `{shlex.quote(str(venv))} -m pytest -k test_x`: starts .venv/bin/python from this repository; "
        "pytest loads conftest.py, tests/conftest.py, pyproject.toml and the test files from this repository"
    )
    assert line("python_eval", root, trusted(root), code="1") == (
        "runs the code in .venv/bin/python from this repository, in the workspace"
    )


def test_a_trusted_repository_without_a_venv_uses_the_users_python(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text("")
    assert line("run_tests", tmp_path, trusted(tmp_path)) == (
        f"runs `{shlex.quote(sys.executable)} -m pytest`: starts your Python {sys.executable}; "
        "pytest loads the test files from this repository"
    )
    assert (
        line("python_eval", tmp_path, trusted(tmp_path))
        == f"runs the code in your Python {sys.executable}, in the workspace"
    )


def test_a_configured_test_command_names_the_files_its_runner_reads(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "Makefile").write_text("test:\n\ttrue\n")
    (tmp_path / "package.json").write_text("{}")
    (tmp_path / "t5.sh").write_text("true\n")
    assert line("run_tests", tmp_path, {"test_command": "make test"}) == (
        "runs `make test` with bash -lc in the workspace; make reads Makefile from this repository"
    )
    assert line("run_tests", tmp_path, {"test_command": "npm test"}) == (
        "runs `npm test` with bash -lc in the workspace; npm reads package.json from this repository"
    )
    assert line("run_tests", tmp_path, {"test_command": "sh t5.sh"}) == (
        "runs `sh t5.sh` with bash -lc in the workspace; runs t5.sh from this repository"
    )
    assert line("run_tests", tmp_path, {"test_command": "pytest -q"}, filter="a") == (
        "runs `pytest -q a` with bash -lc in the workspace; pytest loads the test files from this repository"
    )
    assert line("run_tests", tmp_path / "empty", {}) == (
        "runs nothing: no test command is configured and this is not a Python project"
    )


def test_terminal_names_the_command_its_shell_and_repository_programs(tmp_path: Path) -> None:
    make_untrusted_repo(tmp_path)
    assert (
        line("terminal", tmp_path, command="pytest -q")
        == "runs `pytest -q` with bash -lc in the workspace"
    )
    assert line("terminal", tmp_path, command=".venv/bin/python x.py", shell="sh") == (
        "runs `.venv/bin/python x.py` with sh -lc in the workspace; runs .venv/bin/python from this repository"
    )
    assert len(line("terminal", tmp_path, command="echo " + "x" * 1000) or "") < 300


def test_an_mcp_tool_names_its_server_and_command_line(tmp_path: Path) -> None:
    tool = McpTool("mcp_docs_search", "docs", "search", None, {}, call=None)  # type: ignore[arg-type]
    settings = {"mcp_servers": {"docs": {"command": "python", "args": ["srv.py", "--port", "3"]}}}
    ctx = ToolContext(work_dir=tmp_path, settings=settings)
    assert (
        what_will_run(tool, {}, ctx)
        == "calls search on the MCP server docs (started as `python srv.py --port 3`)"
    )


def test_tools_that_start_nothing_show_only_their_arguments(tmp_path: Path) -> None:
    ctx = ToolContext(work_dir=tmp_path)
    assert what_will_run(TOOLS["read_file"], {"path": "a"}, ctx) is None
    assert question_text(TOOLS["read_file"], {"path": "a"}, ctx) == '{"path": "a"}'
    assert question_text(TOOLS["terminal"], {"command": "ls"}, ctx) == (
        'runs `ls` with bash -lc in the workspace. Arguments: {"command": "ls"}'
    )
