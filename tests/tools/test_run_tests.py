"""run_tests: real pytest projects in tmp dirs, configured commands, the workspace lock, cancel and
deadline kills, the 2,000-char output, the editor seam, and the result readers on fixtures."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import shutil
import sys
import tempfile
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from lich_core.config import Config
from lich_core.test_results import (
    MAX_FAILURES,
    TestFailure,
    TestReport,
    lock_path,
    parse_junit_xml,
    parse_pytest_text,
    try_lock_workspace,
)
from lich_core.tools.builtin import builtin_tools
from lich_core.tools.builtin import run_tests as run_tests_module
from lich_core.tools.builtin.run_tests import (
    BUSY_ERROR,
    RUN_TESTS_MAX_OUTPUT_CHARS,
    RUN_TESTS_TOOL_TIMEOUT_MS,
    TOOL,
    is_path_filter,
    plan_command,
    runs_pytest,
)
from lich_core.tools.executor import ToolExecutor
from lich_core.tools.registry import ToolRegistry
from lich_core.tools.types import ToolContext
from lich_core.trust import TRUSTED, TrustStatus
from lich_core.vocabulary import ToolResult
from lich_core.workspace import DiskWorkspace
from tests.support.processes import pid_alive as is_alive
from tests.support.provider_helpers import wait_until

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "run_tests"
GATE = FIXTURES / "gate.py"
WAIT_S = 60.0  # bound on every wait for an event (a hang fails here, not at the global timeout)

# Every child pytest: no cache dir, no bytecode, none of this environment's plugins.
PYTEST_INI = "[pytest]\naddopts = -p no:cacheprovider\n"


def child_env() -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ["HOME"],  # the isolated tmp home (tests/conftest.py)
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def make_ctx(root: Path, **kwargs: Any) -> ToolContext:
    settings = kwargs.pop("settings", {})
    return ToolContext(work_dir=root, env=child_env(), settings=settings, **kwargs)


def write_project(root: Path, files: dict[str, str]) -> Path:
    (root / "pytest.ini").write_text(PYTEST_INI)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def configured(command: str) -> dict[str, Any]:
    return {"test_command": command}


async def run(root: Path, args: dict[str, Any] | None = None, **kwargs: Any) -> ToolResult:
    return await TOOL.execute(args or {}, make_ctx(root, **kwargs))


async def wait_dead(pid: int, timeout_s: float = 5.0) -> bool:
    """Bounded: the kill already happened when the tool returned; this only absorbs reaping."""
    with contextlib.suppress(AssertionError):
        await wait_until(lambda: not is_alive(pid), timeout_s)
    return not is_alive(pid)


class Gate:
    """The test's end of tests/fixtures/run_tests/gate.py: a Unix socket the command reports to."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="lich-gate-")  # short: socket paths have a length limit
        self.path = os.path.join(self.dir, "gate.sock")
        self.arrivals: asyncio.Queue[tuple[list[str], asyncio.StreamWriter]] = asyncio.Queue()
        self.server: asyncio.AbstractServer | None = None

    async def start(self) -> Gate:
        self.server = await asyncio.start_unix_server(self._arrived, path=self.path)
        return self

    async def _arrived(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line = (await reader.readline()).decode().split()
        await self.arrivals.put((line[1:], writer))  # [pid, words...]

    def command(self, *words: str) -> str:
        return " ".join(shlex.quote(w) for w in (sys.executable, str(GATE), self.path, *words))

    async def arrival(self) -> tuple[list[str], asyncio.StreamWriter]:
        return await asyncio.wait_for(self.arrivals.get(), WAIT_S)

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
async def gate() -> AsyncIterator[Gate]:
    g = await Gate().start()
    try:
        yield g
    finally:
        await g.close()


def release(writer: asyncio.StreamWriter, exit_code: int = 0) -> None:
    writer.write(f"{exit_code}\n".encode())


# --- the tool's declaration ---


def test_tool_declaration() -> None:
    assert TOOL.name == "run_tests"
    assert TOOL.capability == "process/exec"
    assert TOOL.timeout_ms == RUN_TESTS_TOOL_TIMEOUT_MS == 600_000
    assert list(TOOL.parameters["properties"]) == ["filter"]
    assert "required" not in TOOL.parameters
    assert "run_tests" in [tool.name for tool in builtin_tools()]


# --- real pytest projects ---


async def test_green_project(tmp_path: Path) -> None:
    write_project(
        tmp_path,
        {
            "tests/test_ok.py": """
            def test_one():
                assert 1 + 1 == 2

            def test_two():
                assert "a" in "abc"
        """,
        },
    )
    result = await run(tmp_path)
    assert result.ok, result
    assert result.error is None
    assert result.output.startswith("Tests passed: 0 failed, 2 passed; exit 0;")
    details = result.details
    assert details["ok"] is True
    assert (details["passed"], details["failed"], details["errors"], details["skipped"]) == (
        2,
        0,
        0,
        0,
    )
    assert details["exit_code"] == 0
    assert details["failures"] == []
    assert details["filter"] is None
    assert details["command"] == f"{shlex.quote(sys.executable)} -m pytest"
    assert "generated xml file" not in result.output  # lich's temp JUnit file is not the project's
    report = TestReport.from_dict(details)
    assert report.ok and report.to_dict() == details
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "pytest.ini",
        "tests",
    ]  # nothing else written


CALC = """\
def add(a, b):
    return a + b


def test_passes():
    assert add(2, 2) == 4


def test_add():
    total = add(1, 2)
    assert total == 4


def test_helper():
    check_positive(-1)
    assert False, "never reached"


def check_positive(n):
    assert n > 0
"""


async def test_failing_test_reports_the_line_it_failed_on(tmp_path: Path) -> None:
    write_project(tmp_path, {"tests/test_calc.py": CALC})
    result = await run(tmp_path)
    assert not result.ok
    assert result.error == "tests_failed: 2 failed, 1 passed"
    assert result.details["failures"] == [
        # The assert line (11), not the def line (9).
        {
            "test_id": "tests/test_calc.py::test_add",
            "path": "tests/test_calc.py",
            "line": 11,
            "message": "assert 3 == 4",
        },
        # A helper in the same file fails deeper (20); that is the deepest entry in the test's file.
        {
            "test_id": "tests/test_calc.py::test_helper",
            "path": "tests/test_calc.py",
            "line": 20,
            "message": "assert -1 > 0",
        },
    ]
    lines = result.output.splitlines()
    assert lines[0].startswith("Tests failed: 2 failed, 1 passed; exit 1;")
    assert lines[1] == "FAILED tests/test_calc.py::test_add (tests/test_calc.py:11) assert 3 == 4"
    assert (
        lines[2] == "FAILED tests/test_calc.py::test_helper (tests/test_calc.py:20) assert -1 > 0"
    )
    assert lines[3] == "--- output (tail) ---"
    assert "2 failed, 1 passed" in lines[-1]
    assert len(result.output) <= RUN_TESTS_MAX_OUTPUT_CHARS


async def test_failure_in_a_helper_module_points_into_the_test_file(tmp_path: Path) -> None:
    write_project(
        tmp_path,
        {
            "tests/__init__.py": "",
            "tests/helpers.py": "def check(x):\n    assert x == 4\n",
            "tests/test_h.py": "from tests.helpers import check\n\n\ndef test_it():\n    check(3)\n",
        },
    )
    result = await run(tmp_path)
    [failure] = result.details["failures"]
    assert (failure["path"], failure["line"]) == (
        "tests/test_h.py",
        5,
    )  # the call, in the test's file


async def test_collection_error(tmp_path: Path) -> None:
    write_project(
        tmp_path,
        {
            "tests/test_ok.py": "def test_ok():\n    pass\n",
            "tests/test_broken.py": "import os\nimport no_such_module_for_lich\n",
        },
    )
    result = await run(tmp_path)
    assert not result.ok
    assert result.error == "tests_error: exit 2 (interrupted; 0 failed, 1 error)"
    assert result.details["errors"] == 1
    assert result.details["exit_code"] == 2
    assert result.details["failures"] == [
        {
            "test_id": "tests/test_broken.py",
            "path": "tests/test_broken.py",
            "line": 2,
            "message": "ModuleNotFoundError: No module named 'no_such_module_for_lich'",
        },
    ]


async def test_syntax_error_in_collection_names_its_line(tmp_path: Path) -> None:
    write_project(tmp_path, {"test_syntax.py": "x = 1\n\ndef test_(:\n    pass\n"})
    result = await run(tmp_path)
    assert result.error is not None and result.error.startswith("tests_error: exit 2")
    [failure] = result.details["failures"]
    assert (failure["path"], failure["line"]) == ("test_syntax.py", 3)
    assert failure["message"].startswith("SyntaxError:")


FILTERED = {
    "tests/test_a.py": "def test_one():\n    pass\n\ndef test_two():\n    pass\n",
    "tests/test_b.py": "def test_three():\n    pass\n",
}


async def test_filter_as_node_id(tmp_path: Path) -> None:
    write_project(tmp_path, FILTERED)
    result = await run(tmp_path, {"filter": "tests/test_a.py::test_two"})
    assert result.ok, result
    assert result.details["passed"] == 1
    assert result.details["filter"] == "tests/test_a.py::test_two"
    assert result.details["command"].endswith(" -m pytest tests/test_a.py::test_two")


async def test_filter_as_path(tmp_path: Path) -> None:
    write_project(tmp_path, FILTERED)
    result = await run(tmp_path, {"filter": "tests/test_b.py"})
    assert result.ok and result.details["passed"] == 1


async def test_filter_as_k_expression(tmp_path: Path) -> None:
    write_project(tmp_path, FILTERED)
    result = await run(tmp_path, {"filter": "one or three"})
    assert result.ok, result
    assert result.details["passed"] == 2
    assert result.details["command"].endswith(" -m pytest -k 'one or three'")


async def test_filter_matching_nothing_is_an_error(tmp_path: Path) -> None:
    write_project(tmp_path, FILTERED)
    result = await run(tmp_path, {"filter": "nothing_is_called_this"})
    assert not result.ok
    assert result.error == "tests_error: exit 5 (no tests collected)"


async def test_many_failures_are_clamped_to_2000_chars(tmp_path: Path) -> None:
    write_project(
        tmp_path,
        {
            "test_many.py": """
            import pytest

            @pytest.mark.parametrize("n", range(60))
            def test_each(n):
                assert n < 0, "x" * 500
        """,
        },
    )
    result = await run(tmp_path)
    assert result.error == "tests_failed: 60 failed"
    assert len(result.output) <= RUN_TESTS_MAX_OUTPUT_CHARS
    assert f"more failing tests (details lists up to {MAX_FAILURES})" in result.output
    assert "--- output (tail) ---" in result.output
    assert len(result.details["failures"]) == 60 <= MAX_FAILURES
    assert all(f["line"] == 6 and f["path"] == "test_many.py" for f in result.details["failures"])


# --- command resolution ---


async def test_no_command_outside_a_python_project(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("not python\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "notes.txt").write_text("no test_*.py here\n")
    result = await run(tmp_path)
    assert not result.ok
    assert result.error is not None and result.error.startswith("no_test_command: ")
    assert "test_command" in result.error and "LICH_TEST_COMMAND" in result.error
    assert result.details == {}


@pytest.mark.parametrize(
    "marker",
    [
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "pytest.ini",
        "tox.ini",
        "conftest.py",
        "tests/unit/test_x.py",
    ],
)
def test_python_project_markers(tmp_path: Path, marker: str) -> None:
    (tmp_path / marker).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / marker).write_text("")
    plan = plan_command(make_ctx(tmp_path), None)
    assert plan.default and plan.pytest
    assert plan.command == f"{shlex.quote(sys.executable)} -m pytest"


def trusted_settings(root: Path) -> Config:
    """Settings as load_config makes them for a workspace whose config the user trusted."""
    return Config({}, {}, TrustStatus(TRUSTED, root / ".lich" / "config.json"))


@pytest.mark.parametrize("venv", [".venv", "venv"])
def test_the_projects_virtualenv_python_is_used_only_in_a_trusted_workspace(
    tmp_path: Path, venv: str
) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    python = tmp_path / venv / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    trusted = plan_command(
        make_ctx(tmp_path, settings=trusted_settings(tmp_path)), "tests/test_x.py::test_y"
    )
    assert trusted.command == f"{shlex.quote(str(python))} -m pytest tests/test_x.py::test_y"
    # Untrusted, the repository's python is its own program: the user's runs pytest instead.
    untrusted = plan_command(make_ctx(tmp_path), "tests/test_x.py::test_y")
    assert untrusted.command == f"{shlex.quote(sys.executable)} -m pytest tests/test_x.py::test_y"


def test_filter_kinds_and_pytest_detection() -> None:
    assert is_path_filter("tests/test_a.py") and is_path_filter("test_a.py")
    assert is_path_filter("test_a.py::test_x") and is_path_filter("tests/unit")
    assert not is_path_filter("add and not slow") and not is_path_filter("test_x")
    assert (
        runs_pytest("pytest -x")
        and runs_pytest("python -m pytest")
        and runs_pytest(".venv/bin/pytest")
    )
    assert runs_pytest("cd sub && uv run pytest -q")
    assert not runs_pytest("npm test") and not runs_pytest("make test-pytest")


async def test_configured_command_exit_zero(tmp_path: Path) -> None:
    (tmp_path / "check.sh").write_text('echo "checking $PWD"\necho "all good"\n')
    result = await run(tmp_path, settings=configured("bash check.sh"))
    assert result.ok, result
    assert result.error is None
    assert result.details["exit_code"] == 0
    assert result.details["command"] == "bash check.sh"
    assert (result.details["passed"], result.details["failed"]) == (
        0,
        0,
    )  # an unknown runner: exit code only
    assert result.output.startswith("Tests passed: exit 0;")
    assert f"checking {tmp_path.resolve()}" in result.output and "all good" in result.output


async def test_configured_command_exit_three(tmp_path: Path) -> None:
    (tmp_path / "check.sh").write_text('echo "one check failed"\nexit 3\n')
    result = await run(tmp_path, settings=configured("bash check.sh"))
    assert not result.ok
    assert result.error == "tests_error: exit 3"
    assert result.details["exit_code"] == 3
    assert result.output.startswith("Tests failed: exit 3;")
    assert "one check failed" in result.output


async def test_configured_command_not_found(tmp_path: Path) -> None:
    result = await run(tmp_path, settings=configured("no-such-test-runner-for-lich"))
    assert result.error == "tests_error: exit 127 (command not found)"


async def test_configured_command_gets_the_filter_as_one_argument(tmp_path: Path) -> None:
    (tmp_path / "args.sh").write_text('printf "argc=%s\\n" "$#"; printf "arg=<%s>\\n" "$@"\n')
    result = await run(tmp_path, {"filter": "a b'c $HOME"}, settings=configured("bash args.sh"))
    assert result.ok, result
    assert "argc=1" in result.output and "arg=<a b'c $HOME>" in result.output
    assert result.details["command"] == "bash args.sh " + shlex.quote("a b'c $HOME")
    assert result.details["filter"] == "a b'c $HOME"


async def test_configured_pytest_command_reads_junit(tmp_path: Path) -> None:
    write_project(tmp_path, {"sub/test_s.py": "def test_s():\n    assert 2 * 2 == 5\n"})
    command = f"cd sub && {shlex.quote(sys.executable)} -m pytest -q"
    result = await run(tmp_path, settings=configured(command))
    assert result.error == "tests_failed: 1 failed"
    assert result.details["failures"] == [
        {
            "test_id": "sub/test_s.py::test_s",
            "path": "sub/test_s.py",
            "line": 2,
            "message": "assert (2 * 2) == 5",
        },
    ]


async def test_configured_pytest_without_junit_falls_back_to_the_text_summary(
    tmp_path: Path,
) -> None:
    # A stand-in named `pytest` that prints pytest's report and writes no XML.
    fake = tmp_path / "pytest"
    fake.write_text(f"#!/bin/sh\ncat {shlex.quote(str(FIXTURES / 'pytest_output.txt'))}\nexit 1\n")
    fake.chmod(0o755)
    result = await run(tmp_path, settings=configured("./pytest"))
    assert result.error == "tests_failed: 4 failed, 2 passed, 1 error, 1 skipped"
    failures = [TestFailure.from_dict(f) for f in result.details["failures"]]
    assert failures[0] == TestFailure(
        "tests/test_a.py::test_fail", "tests/test_a.py", 15, "assert 3 == 4"
    )


# --- the workspace lock ---


async def test_two_concurrent_calls_one_is_busy(tmp_path: Path, gate: Gate) -> None:
    settings = configured(gate.command("first"))
    calls = [asyncio.ensure_future(run(tmp_path, settings=settings)) for _ in range(2)]
    _, writer = await gate.arrival()  # one command runs and holds the lock
    done, _ = await asyncio.wait(calls, timeout=WAIT_S, return_when=asyncio.FIRST_COMPLETED)
    [busy] = done
    assert busy.result().error == BUSY_ERROR
    assert not busy.result().ok
    release(writer)
    results = await asyncio.wait_for(asyncio.gather(*calls), WAIT_S)
    assert [r.error for r in results].count(BUSY_ERROR) == 1
    assert [r.ok for r in results].count(True) == 1
    assert gate.arrivals.empty()  # the busy call ran nothing
    # Released once the run ended: the next call runs.
    follow_up = await run(tmp_path, settings=configured("true"))
    assert follow_up.ok, follow_up


async def test_busy_across_threads(tmp_path: Path, gate: Gate) -> None:
    first = asyncio.ensure_future(run(tmp_path, settings=configured(gate.command())))
    _, writer = await gate.arrival()
    other_thread = await asyncio.to_thread(asyncio.run, run(tmp_path, settings=configured("true")))
    assert other_thread.error == BUSY_ERROR
    release(writer)
    assert (await asyncio.wait_for(first, WAIT_S)).ok


HOLD_LOCK = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("locked", flush=True)
sys.stdin.read()
"""


async def test_busy_across_processes(tmp_path: Path) -> None:
    path = lock_path(tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    assert str(path).startswith(
        os.environ["XDG_STATE_HOME"]
    )  # the test's state dir, not the user's
    holder = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        HOLD_LOCK,
        str(path),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert (await asyncio.wait_for(holder.stdout.readline(), WAIT_S)).strip() == b"locked"
        (tmp_path / "ran.sh").write_text("touch ran\n")
        result = await run(tmp_path, settings=configured("bash ran.sh"))
        assert result.error == BUSY_ERROR
        assert not (tmp_path / "ran").exists()
        holder.stdin.close()
        assert await asyncio.wait_for(holder.wait(), WAIT_S) == 0
    finally:
        if holder.returncode is None:
            holder.kill()
            await holder.wait()
    result = await run(tmp_path, settings=configured("bash ran.sh"))
    assert result.ok and (tmp_path / "ran").exists()


def test_lock_is_per_root_and_released(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = try_lock_workspace(tmp_path / "a")
    assert first is not None
    assert try_lock_workspace(tmp_path / "a") is None
    assert try_lock_workspace(tmp_path / "a" / ".." / "a") is None  # the same real path
    other = try_lock_workspace(tmp_path / "b")
    assert other is not None
    first.release()
    first.release()  # idempotent
    again = try_lock_workspace(tmp_path / "a")
    assert again is not None
    again.release()
    other.release()


async def test_the_lock_is_released_when_the_call_is_cancelled(tmp_path: Path, gate: Gate) -> None:
    task = asyncio.ensure_future(run(tmp_path, settings=configured(gate.command())))
    await gate.arrival()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (await run(tmp_path, settings=configured("true"))).ok


# --- cancel and deadline ---


async def test_cancel_kills_the_process_group_promptly(tmp_path: Path, gate: Gate) -> None:
    # bash starts a background sleeper, then the gate; both are in the command's process group.
    command = f"sleep 1000 & {gate.command()} $!"
    ctx = make_ctx(tmp_path, settings=configured(command))
    task = asyncio.ensure_future(TOOL.execute({}, ctx))
    (gate_pid, sleeper_pid), _writer = await gate.arrival()
    assert is_alive(int(gate_pid)) and is_alive(int(sleeper_pid))
    started = time.monotonic()
    ctx.cancel.cancel()
    result = await asyncio.wait_for(task, WAIT_S)
    assert time.monotonic() - started < 5.0
    assert not result.ok and result.error == "cancelled"
    assert result.details["exit_code"] is None
    assert await wait_dead(int(gate_pid)) and await wait_dead(int(sleeper_pid))
    assert "[cancelled; its processes were killed]" in result.output
    assert result.output.startswith("Tests failed: killed before it finished;")


async def test_deadline_kills_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_tests_module, "COMMAND_TIMEOUT_MS", 3_000)
    command = "sleep 1000 & echo $! > sleeper.pid; echo waiting; wait"
    result = await run(tmp_path, settings=configured(command))
    assert not result.ok
    assert result.error == "timeout: test command exceeded 3000 ms; its processes were killed"
    assert "waiting" in result.output
    assert await wait_dead(int((tmp_path / "sleeper.pid").read_text()))


async def test_through_the_executor(tmp_path: Path) -> None:
    registry = ToolRegistry()
    registry.register(TOOL)
    executor = ToolExecutor(
        registry, work_dir=tmp_path, env=child_env(), settings=configured("echo hi")
    )
    result = await executor.execute("run_tests", {})
    assert result.ok and "hi" in result.output


# --- output ---


async def test_output_is_clamped_to_2000_chars(tmp_path: Path) -> None:
    (tmp_path / "noisy.sh").write_text(
        'for i in $(seq 1 500); do echo "line $i of the noisy test output"; done\necho "THE END"\nexit 1\n'
    )
    result = await run(tmp_path, settings=configured("bash noisy.sh"))
    assert result.error == "tests_error: exit 1"
    assert len(result.output) <= RUN_TESTS_MAX_OUTPUT_CHARS
    assert result.output.startswith("Tests failed: exit 1;")
    assert "[... truncated, " in result.output
    assert result.output.endswith("THE END")  # the tail is what is kept
    assert "line 1 of" not in result.output


# --- the editor seam ---


class EditorWorkspace(DiskWorkspace):
    """What the language server offers: save buffers before the run, take the report after."""

    def __init__(
        self, root: Path, problem: str | None = None, report_error: Exception | None = None
    ) -> None:
        super().__init__(root)
        self.problem = problem
        self.report_error = report_error
        self.synced = 0
        self.reports: list[TestReport] = []

    async def sync_to_disk(self) -> str | None:
        self.synced += 1
        return self.problem

    async def report_test_results(self, report: TestReport) -> None:
        self.reports.append(report)
        if self.report_error is not None:
            raise self.report_error


async def test_unsaved_buffers_stop_the_run(tmp_path: Path) -> None:
    (tmp_path / "ran.sh").write_text("touch ran\n")
    workspace = EditorWorkspace(tmp_path, problem="src/app.py could not be saved (read-only)")
    result = await run(tmp_path, settings=configured("bash ran.sh"), workspace=workspace)
    assert not result.ok
    assert result.error == "unsaved_buffers: src/app.py could not be saved (read-only)"
    assert workspace.synced == 1
    assert not (tmp_path / "ran").exists()
    assert workspace.reports == []


async def test_report_goes_to_the_editor(tmp_path: Path) -> None:
    write_project(tmp_path, {"tests/test_calc.py": CALC})
    workspace = EditorWorkspace(tmp_path, problem="")
    result = await run(tmp_path, workspace=workspace)
    assert workspace.synced == 1
    [report] = workspace.reports
    assert isinstance(report, TestReport)
    assert report.to_dict() == result.details
    assert report.failures[0] == TestFailure(
        "tests/test_calc.py::test_add", "tests/test_calc.py", 11, "assert 3 == 4"
    )


async def test_a_failing_report_hook_never_fails_the_tool(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    workspace = EditorWorkspace(tmp_path, report_error=RuntimeError("editor went away"))
    with caplog.at_level(logging.ERROR, logger="lich.tools"):
        result = await run(tmp_path, settings=configured("true"), workspace=workspace)
    assert result.ok, result
    assert len(workspace.reports) == 1
    assert "report_test_results failed" in caplog.text


async def test_no_report_for_busy_or_missing_command(tmp_path: Path) -> None:
    workspace = EditorWorkspace(tmp_path)
    result = await run(tmp_path, workspace=workspace)  # not a Python project, nothing configured
    assert result.error is not None and result.error.startswith("no_test_command:")
    held = try_lock_workspace(tmp_path)
    assert held is not None
    try:
        result = await run(tmp_path, settings=configured("true"), workspace=workspace)
    finally:
        held.release()
    assert result.error == BUSY_ERROR
    assert workspace.reports == [] and workspace.synced == 0


# --- the readers, on fixtures ---


def test_text_summary_reader(tmp_path: Path) -> None:
    results = parse_pytest_text((FIXTURES / "pytest_output.txt").read_text(), tmp_path)
    assert results is not None
    assert (results.passed, results.failed, results.errors, results.skipped) == (2, 4, 1, 1)
    assert results.failures == [
        TestFailure("tests/test_a.py::test_fail", "tests/test_a.py", 15, "assert 3 == 4"),
        TestFailure("tests/test_a.py::test_helper", "tests/test_a.py", 19, "AssertionError"),
        TestFailure("tests/test_a.py::TestC::test_p[2]", "tests/test_a.py", 26, "assert 2 == 1"),
        TestFailure("tests/test_a.py::test_raise", "tests/test_a.py", 40, "ValueError: boom"),
        TestFailure(
            "tests/test_a.py::test_err", "tests/test_a.py", 30, "RuntimeError: fixture boom"
        ),
    ]
    assert parse_pytest_text("make: *** [test] Error 1\n", tmp_path) is None
    quiet = parse_pytest_text(
        "..F\nFAILED t.py::test_x - assert 1 == 2\n1 failed, 2 passed in 0.01s\n", tmp_path
    )
    assert quiet is not None and (quiet.passed, quiet.failed) == (2, 1)


def test_junit_reader_uses_the_zero_based_line_when_there_is_no_traceback(tmp_path: Path) -> None:
    # Written with --tb=no: no locations in the failure text, so the testcase's `line` (0-based) + 1.
    results = parse_junit_xml(FIXTURES / "junit_tb_no.xml", tmp_path)
    assert results is not None
    assert (results.passed, results.failed, results.errors, results.skipped) == (2, 4, 1, 1)
    by_id = {f.test_id: f for f in results.failures}
    assert by_id["tests/test_a.py::test_fail"] == TestFailure(
        "tests/test_a.py::test_fail", "tests/test_a.py", 13, "assert 3 == 4"
    )
    assert by_id["tests/test_a.py::TestC::test_p[2]"].line == 24
    assert by_id["tests/test_a.py::test_err"].message == "RuntimeError: fixture boom"
    assert parse_junit_xml(tmp_path / "missing.xml", tmp_path) is None
    (tmp_path / "bad.xml").write_text("<testsuites><testcase")
    assert parse_junit_xml(tmp_path / "bad.xml", tmp_path) is None


def test_report_round_trip_and_ok() -> None:
    failure = TestFailure("t.py::test_x", "t.py", 3, "assert 1 == 2")
    report = TestReport(
        "pytest", 1, passed=2, failed=1, failures=[failure], duration_s=0.5, filter="x"
    )
    assert not report.ok
    data = report.to_dict()
    assert data["ok"] is False and data["failures"] == [failure.to_dict()]
    assert TestReport.from_dict(data) == report
    assert TestReport("true", 0).ok
    assert not TestReport("x", 0, errors=1).ok
    assert not TestReport("x", None).ok
    assert not TestReport("x", 2).ok
    assert TestReport.from_dict({"exit_code": "0", "failures": "no"}) == TestReport("", None)


async def test_a_python_without_pytest_gets_a_hint(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text('#!/bin/sh\necho "$0: No module named pytest" >&2\nexit 1\n')
    python.chmod(0o755)
    result = await run(tmp_path, settings=trusted_settings(tmp_path))
    assert result.error is not None
    assert result.error.startswith(
        "tests_error: exit 1 (pytest is not installed for the python that ran it;"
    )
    assert result.details["command"] == f"{shlex.quote(str(python))} -m pytest"
