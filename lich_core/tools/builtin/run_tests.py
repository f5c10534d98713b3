"""run_tests: run the workspace's tests and return a structured pass/fail (TestReport).

The command is config's `test_command` (LICH_TEST_COMMAND); without one, a root that looks like a
Python project runs `<python> -m pytest`: with the root's virtualenv Python when the workspace is
trusted and has one, else with the user's (sys.executable), since an untrusted repository's
`.venv/bin/python` is a program of the repository's. No command runs, whichever it is, while an
agent run without `process/exec` has written files near the root since the user last trusted it
(`workspace_changed:`, command_refusal; docs/trust.md). `describe_plan` says what a call
will run, for the approval question (lich_core.approvals.what_will_run). The command
runs with `bash -lc` in the root, in its own process group, and everything it started is killed
when it ends, on cancellation and at the deadline (lich_core/tools/processes.py, reaper.py). pytest
runs (the default, or a configured command with a `pytest` word) get `--junitxml` to a temp file
outside the root, which gives exact counts, failure lines and messages; otherwise pytest's text
summary is read; any other runner is judged by its exit code alone.

One run per workspace root at a time, across threads and processes (lich_core/test_results/lock.py):
a second call gets `run_tests_busy:`. With an editor, unsaved buffers are saved first
(`workspace.sync_to_disk()`) and the report goes back to it (`workspace.report_test_results()`).
"""

from __future__ import annotations

import asyncio
import codecs
import logging
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lich_core.errors import ToolError
from lich_core.settings import settings_of
from lich_core.test_results.lock import try_lock_workspace
from lich_core.test_results.pytest_results import (
    MAX_FAILURES,
    PytestResults,
    parse_junit_xml,
    parse_pytest_text,
)
from lich_core.test_results.report import TestReport
from lich_core.tools.guard import capture_errors, optional_string_arg, truncation_marker
from lich_core.tools.processes import kill_process_group, tool_process_env
from lich_core.tools.python_image import interpreter_for, repository_python
from lich_core.tools.reaper import CallReaper
from lich_core.tools.types import FunctionTool, ToolContext
from lich_core.trust import TrustStore, agent_writes_refusal
from lich_core.userstate import ensure_private_dir, workspace_state_dir
from lich_core.vocabulary import ToolResult

log = logging.getLogger("lich.tools")

RUN_TESTS_TOOL_TIMEOUT_MS = 600_000
# The command's own deadline, inside the tool's: the tool then still reports the output so far
# (`timeout:`) and kills everything before the executor's deadline abandons the call.
COMMAND_TIMEOUT_MS = RUN_TESTS_TOOL_TIMEOUT_MS - 15_000
# What the model reads: the summary, a line per failure, the tail of the output.
RUN_TESTS_MAX_OUTPUT_CHARS = 2_000
MAX_FAILURE_LINE_CHARS = 300
# Failure lines may take this much of the output; the rest is left for the output's tail.
FAILURE_LINES_BUDGET_CHARS = 1_300
# The command's output kept in memory (its end: the summary); the text reader needs no more.
RAW_KEEP_CHARS = 1_000_000
# After the command's processes are killed, how long to keep reading output already in the pipe.
DRAIN_GRACE_MS = 2_000
MAX_COMMAND_DISPLAY_CHARS = 300

BUSY_ERROR = "run_tests_busy: another run_tests is running in this workspace"
PYTHON_PROJECT_FILES = (
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "pytest.ini",
    "tox.ini",
    "conftest.py",
)
PYTEST_WORDS = frozenset({"pytest", "py.test"})
# Directory entries looked at under tests/ for a test_*.py before giving up.
MAX_TESTS_DIR_ENTRIES = 2_000
# pytest's exit codes other than 0 and 1 (pytest.ExitCode), and the shell's.
PYTEST_EXIT_NOTES = {
    2: "interrupted",
    3: "pytest internal error",
    4: "pytest usage error",
    5: "no tests collected",
}
SHELL_EXIT_NOTES = {126: "command not executable", 127: "command not found"}


# --- the command ---


@dataclass(frozen=True)
class TestPlan:
    """What run_tests runs: the command as shown (filter included) and whether pytest runs it."""

    __test__ = False

    command: str
    pytest: bool
    default: bool  # the built-in `<python> -m pytest`, not a configured command
    filter: str | None = None
    python: str | None = None  # the interpreter the default command starts


def looks_like_python_project(root: Path) -> bool:
    """A Python project file in the root, or a tests/ folder holding a test_*.py."""
    if any((root / name).is_file() for name in PYTHON_PROJECT_FILES):
        return True
    tests = root / "tests"
    if not tests.is_dir() or tests.is_symlink():
        return False
    seen = 0
    for _dirpath, dirnames, filenames in os.walk(tests):
        if any(name.startswith("test_") and name.endswith(".py") for name in filenames):
            return True
        seen += len(dirnames) + len(filenames)
        if seen > MAX_TESTS_DIR_ENTRIES:
            return False
        dirnames[:] = [
            name for name in dirnames if not name.startswith(".") and name != "__pycache__"
        ]
    return False


def project_python(root: Path, *, trusted: bool) -> str:
    """The root's virtualenv python (.venv, then venv) in a trusted workspace, else lich's own."""
    return interpreter_for(root, trusted=trusted)


def is_path_filter(text: str) -> bool:
    """A filter naming tests by path or node id (`tests/test_a.py::test_x`), not a -k expression."""
    return "::" in text or "/" in text or text.endswith(".py")


def runs_pytest(command: str) -> bool:
    """Whether a configured command runs pytest: one of its shell words is `pytest` (or a path to it)."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    return any(os.path.basename(word) in PYTEST_WORDS for word in words)


def no_command_error(root: Path) -> str:
    return (
        f"no_test_command: no test command is configured and {root} does not look like a Python "
        "project (no pyproject.toml, setup.py, setup.cfg, pytest.ini, tox.ini, conftest.py or "
        'tests/test_*.py); set "test_command" in .lich/config.json or the LICH_TEST_COMMAND '
        'environment variable (a bash -lc command run in the root, e.g. "npm test" or "make test")'
    )


def plan_command(ctx: ToolContext, filter_text: str | None) -> TestPlan:
    """The command for this call; raises `no_test_command:` when there is none, `workspace_changed:`
    when none may run now."""
    return plan_for(ctx.settings, ctx.work_dir, filter_text)


def plan_for(settings: Mapping[str, Any], root: Path, filter_text: str | None) -> TestPlan:
    """The command run_tests runs in `root` with these settings; raises `no_test_command:`, and
    `workspace_changed:` when no test command may run now (command_refusal). The one place
    both the tool and its approval question (lich_core.approvals) get the command from."""
    plan = _plan(settings, root, filter_text)
    refusal = command_refusal(settings, root, plan)
    if refusal is not None:
        raise ToolError(refusal)
    return plan


def command_refusal(settings: Mapping[str, Any], root: Path, plan: TestPlan) -> str | None:
    """Why `plan` must not run now, or None. Whatever the command and wherever it came from
    (the workspace config, the user's, the environment, or the default pytest), tests run the
    workspace's code (conftest.py, the Makefile, the test files), so none runs while the trust
    store holds files an agent run without `process/exec` wrote near the root since the user's
    last yes: the store is read at each call, so this holds after a restart or a settings push
    (which read the workspace config as untrusted and drop its test_command). A test_command
    from the trusted workspace config is also checked against the files trusted then."""
    refusal = agent_writes_refusal(
        TrustStore.for_env(),
        root,
        f"the test command `{_short(plan.command, MAX_SHOWN_COMMAND_CHARS)}`",
    )
    if refusal is None and not plan.default:
        refusal = workspace_command_lapse(settings, "test_command")
    return refusal


def _plan(settings: Mapping[str, Any], root: Path, filter_text: str | None) -> TestPlan:
    typed = settings_of(settings)
    configured = typed.test_command
    if isinstance(configured, str) and configured.strip():
        command = configured.strip()
        if filter_text is not None:
            command += " " + shlex.quote(filter_text)
        return TestPlan(
            command=command, pytest=runs_pytest(configured), default=False, filter=filter_text
        )
    if not looks_like_python_project(root):
        raise ToolError(no_command_error(root))
    python = project_python(root, trusted=typed.workspace_trusted)
    command = f"{shlex.quote(python)} -m pytest"
    if filter_text is not None:
        if is_path_filter(filter_text):
            command += " " + shlex.quote(filter_text)
        else:
            command += " -k " + shlex.quote(filter_text)
    return TestPlan(command=command, pytest=True, default=True, filter=filter_text, python=python)


def workspace_command_lapse(settings: Mapping[str, Any], key: str) -> str | None:
    """Why the command `key` names, taken from the trusted workspace config, must not run now:
    its code changed (or the agent wrote files) since the config was read. The language server
    reads its config once, so trust given then is checked again here; None when it holds."""
    trust = settings_of(settings).from_trusted_workspace(key)
    return trust.lapse() if trust is not None else None


# --- what a call will run (the approval question) ---

# Files a runner reads from the root, by the command's program: what makes "tests" run the
# repository's own code beyond the test files themselves.
PYTEST_FILES = ("pyproject.toml", "pytest.ini", "tox.ini", "setup.cfg")
RUNNER_FILES = {
    "make": ("Makefile", "makefile", "GNUmakefile"),
    "npm": ("package.json",),
    "npx": ("package.json",),
    "yarn": ("package.json",),
    "pnpm": ("package.json",),
    "node": ("package.json",),
    "tox": ("tox.ini",),
    "nox": ("noxfile.py",),
    "cargo": ("Cargo.toml", "build.rs"),
    "go": ("go.mod",),
}
# conftest.py files named in the question: the root's and its direct subfolders'; more are "…".
MAX_CONFTESTS_SHOWN = 3
MAX_DIR_ENTRIES_LOOKED_AT = 500
MAX_SHOWN_COMMAND_CHARS = 200


def shown_path(path: str | Path, root: Path) -> str:
    """A path as the question shows it: relative when inside the root, else as it is."""
    try:
        rel = os.path.relpath(os.path.realpath(path), os.path.realpath(root))
    except ValueError:
        return str(path)
    if rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel):
        return str(path)
    return rel


def conftest_files(root: Path) -> list[str]:
    """The conftest.py files pytest would import first: the root's and its direct subfolders'."""
    found = ["conftest.py"] if (root / "conftest.py").is_file() else []
    try:
        entries = sorted(os.scandir(root), key=lambda entry: entry.name)[:MAX_DIR_ENTRIES_LOOKED_AT]
    except OSError:
        return found
    for entry in entries:
        if entry.name.startswith(".") or entry.name in ("node_modules", "__pycache__"):
            continue
        try:
            if entry.is_dir(follow_symlinks=False) and (Path(entry.path) / "conftest.py").is_file():
                found.append(f"{entry.name}/conftest.py")
        except OSError:
            continue
    return found


def pytest_loads(root: Path) -> str:
    """What pytest imports or reads from the root, for the question."""
    conftests = conftest_files(root)
    shown = conftests[:MAX_CONFTESTS_SHOWN] + (
        ["…"] if len(conftests) > MAX_CONFTESTS_SHOWN else []
    )
    configs = [name for name in PYTEST_FILES if (root / name).is_file()]
    return f"pytest loads {', '.join([*shown, *configs])}{' and ' if shown or configs else ''}the test files from this repository"


def _command_words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def repository_files_run(command: str, root: Path) -> list[str]:
    """The words of a command line naming a file inside the root (a script, `.venv/bin/python`)."""
    found = []
    for word in _command_words(command):
        if not word or word.startswith("-") or "=" in word.split("/", 1)[0]:
            continue
        path = Path(os.path.expanduser(word))
        path = path if path.is_absolute() else root / path
        try:
            if path.is_file() and _inside(root, path):
                found.append(shown_path(path, root))
        except OSError:
            continue
    return found


def describe_plan(plan: TestPlan, root: Path, trusted: bool) -> str:
    """One line for the approval question: the command line, the interpreter it starts and
    whether that is the repository's, and which repository files the runner loads."""
    command = _short(plan.command, MAX_SHOWN_COMMAND_CHARS)
    parts = []
    if plan.default and plan.python is not None:
        python = plan.python
        if _inside(root, Path(python)):
            parts.append(
                f"runs `{command}`: starts {shown_path(python, root)} from this repository"
            )
        else:
            venv = repository_python(root)
            why = ""
            if venv is not None and not trusted:
                why = f" (not this repository's {shown_path(venv, root)}: the workspace is not trusted)"
            parts.append(f"runs `{command}`: starts your Python {python}{why}")
    else:
        parts.append(f"runs `{command}` with bash -lc in the workspace")
        files = repository_files_run(plan.command, root)
        if files:
            parts.append(f"runs {', '.join(files)} from this repository")
        words = _command_words(plan.command)
        program = os.path.basename(words[0]) if words else ""
        present = [name for name in RUNNER_FILES.get(program, ()) if (root / name).is_file()]
        if present and not plan.pytest:
            parts.append(f"{program} reads {', '.join(present)} from this repository")
    if plan.pytest:
        parts.append(pytest_loads(root))
    return "; ".join(parts)


def _junit_dir(root: Path) -> str:
    """A fresh private temp dir outside the root for pytest's JUnit file."""
    directory = tempfile.mkdtemp(prefix="lich-run-tests-")
    if _inside(root, Path(directory)):  # a root that holds the temp dir (`/`, or /tmp itself)
        shutil.rmtree(directory, ignore_errors=True)
        base = ensure_private_dir(workspace_state_dir(root) / "tmp")
        directory = tempfile.mkdtemp(prefix="run-tests-", dir=base)
    return directory


def _inside(root: Path, path: Path) -> bool:
    rel = os.path.relpath(os.path.realpath(path), os.path.realpath(root))
    return not (rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel))


# --- running ---


class _TailSink(asyncio.SubprocessProtocol):
    """Collects the merged output, keeping its last `keep` characters."""

    def __init__(self, loop: asyncio.AbstractEventLoop, keep: int) -> None:
        self.keep = keep
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.parts: list[str] = []
        self.kept = 0
        self.dropped = 0
        self.exited: asyncio.Future[None] = loop.create_future()
        self.output_closed: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self._add(self.decoder.decode(data))

    def _add(self, text: str) -> None:
        if not text:
            return
        self.parts.append(text)
        self.kept += len(text)
        if self.kept > 2 * self.keep:
            joined = "".join(self.parts)
            self.dropped += len(joined) - self.keep
            self.parts = [joined[-self.keep :]]
            self.kept = self.keep

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1 and not self.output_closed.done():
            self.output_closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)

    def text(self) -> str:
        self._add(self.decoder.decode(b"", final=True))
        joined = "".join(self.parts)
        if len(joined) > self.keep:
            self.dropped += len(joined) - self.keep
            joined = joined[-self.keep :]
        self.parts, self.kept = [joined], len(joined)
        return joined


@dataclass
class _Run:
    output: str
    exit_code: int | None
    duration_s: float
    cancelled: bool
    timed_out: bool
    dropped_chars: int = 0


def _exit_status(returncode: int | None) -> int | None:
    if returncode is None:
        return None
    return 128 - returncode if returncode < 0 else returncode  # SIGKILL -> 137, as a shell says


async def _run_command(command: str, ctx: ToolContext, timeout_ms: int) -> _Run:
    env = tool_process_env(ctx)
    loop = asyncio.get_running_loop()
    sink = _TailSink(loop, RAW_KEEP_CHARS)
    reaper = CallReaper()
    reaper.start()  # Linux: orphans of the command re-parent to this process and stay findable
    try:
        started = time.monotonic()
        transport, _ = await reaper.started(
            loop.subprocess_exec(
                lambda: sink,
                "bash",
                "-lc",
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=str(ctx.work_dir),
                env=reaper.mark(env),
                start_new_session=True,  # pid == pgid: one killpg reaches every descendant that stays
            )
        )
        pgid = transport.get_pid()
        reaper.spawned(pgid)
        unsubscribe = ctx.cancel.on_cancel(lambda: kill_process_group(pgid))
        cancel_wait = asyncio.ensure_future(ctx.cancel.wait())
        finished = False
        try:
            await asyncio.wait(
                {sink.exited, cancel_wait},
                timeout=timeout_ms / 1000,
                return_when=asyncio.FIRST_COMPLETED,
            )
            finished = True
            # Decided before the kill below, whose exit must not read as the command's own.
            cancelled = ctx.cancel.cancelled
            exited = sink.exited.done() and not cancelled
        finally:
            kill_process_group(pgid)
            reaper.kill_leftovers()  # what left the group: `setsid` daemons, double forks
            reaper.release()
            unsubscribe()
            cancel_wait.cancel()
            if not finished:  # the task itself was cancelled: release the pipes, await nothing
                reaper.reap_now()
                transport.close()
        duration = time.monotonic() - started
        try:
            await asyncio.wait_for(asyncio.shield(sink.output_closed), DRAIN_GRACE_MS / 1000)
        except asyncio.TimeoutError:
            pass  # a process we could not kill still holds the pipe; stop reading it
        transport.close()
        await reaper.reap()
        status = _exit_status(transport.get_returncode()) if exited else None
        output = sink.text()
        return _Run(
            output=output,
            dropped_chars=sink.dropped,
            exit_code=status,
            duration_s=round(duration, 3),
            cancelled=cancelled,
            timed_out=not exited and not cancelled,
        )
    finally:
        reaper.release()


# --- the report and the result ---


def build_report(plan: TestPlan, run: _Run, junit_file: Path | None, root: Path) -> TestReport:
    results: PytestResults | None = None
    if plan.pytest:
        if junit_file is not None:
            results = parse_junit_xml(junit_file, root)
        if results is None:
            results = parse_pytest_text(run.output, root)
    results = results or PytestResults()
    return TestReport(
        command=plan.command,
        exit_code=run.exit_code,
        passed=results.passed,
        failed=results.failed,
        errors=results.errors,
        skipped=results.skipped,
        failures=results.failures,
        duration_s=run.duration_s,
        filter=plan.filter,
    )


def _exit_note(report: TestReport, pytest: bool) -> str:
    code = report.exit_code
    if code is None or code in (0, 1):
        return ""
    if code in SHELL_EXIT_NOTES:
        return SHELL_EXIT_NOTES[code]
    if pytest and code in PYTEST_EXIT_NOTES:
        return PYTEST_EXIT_NOTES[code]
    if code > 128:
        return f"killed by signal {code - 128}"
    return ""


def report_error(report: TestReport, pytest: bool, hint: str = "") -> str | None:
    """`tests_failed: <counts>` or `tests_error: exit N (...)`; None when the report is green."""
    if report.ok:
        return None
    if (
        report.failed > 0
        or (report.errors > 0 and report.exit_code == 1)
        or (report.failures and report.exit_code == 0)
    ):
        return f"tests_failed: {report.counts_text()}"
    notes = [note for note in (_exit_note(report, pytest), _nonzero_counts(report), hint) if note]
    suffix = f" ({'; '.join(notes)})" if notes else ""
    return f"tests_error: exit {report.exit_code}{suffix}"


def _nonzero_counts(report: TestReport) -> str:
    if not (report.passed or report.failed or report.errors or report.skipped):
        return ""
    return report.counts_text()


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def summary_line(report: TestReport, pytest: bool) -> str:
    verdict = "Tests passed" if report.ok else "Tests failed"
    counted = pytest or report.passed or report.failed or report.errors or report.skipped
    counts = f"{report.counts_text()}; " if counted else ""
    note = _exit_note(report, pytest)
    if report.exit_code is None:
        exit_text = "killed before it finished"
    else:
        exit_text = f"exit {report.exit_code}" + (f", {note}" if note else "")
    return f"{verdict}: {counts}{exit_text}; {report.duration_s:.2f}s: {_short(report.command, MAX_COMMAND_DISPLAY_CHARS)}"


def failure_lines(report: TestReport) -> list[str]:
    lines = []
    for failure in report.failures:
        where = f" ({failure.path}:{failure.line})" if failure.path else ""
        message = f" {failure.message}" if failure.message else ""
        lines.append(_short(f"FAILED {failure.test_id}{where}{message}", MAX_FAILURE_LINE_CHARS))
    return lines


def _tail(text: str, room: int) -> str:
    """The end of `text` in at most `room` chars, starting at a line when that costs little."""
    if room <= 0:
        return ""
    if len(text) <= room:
        return text
    tail = text[-room:]
    newline = tail.find("\n")
    return tail[newline + 1 :] if 0 <= newline < 200 else tail


def compose_output(
    report: TestReport,
    raw: str,
    pytest: bool,
    trailer: str = "",
    limit: int = RUN_TESTS_MAX_OUTPUT_CHARS,
    dropped_chars: int = 0,
) -> str:
    """Summary, a line per failure, then the output's tail: never more than `limit` chars."""
    parts = [_short(summary_line(report, pytest), limit)]
    budget = min(FAILURE_LINES_BUDGET_CHARS, limit - len(parts[0]))
    more_reserve = 60  # room for the "... N more" line
    used = 0
    listed = 0
    for line in failure_lines(report):
        if used + len(line) + 1 > budget - more_reserve:
            break
        parts.append(line)
        used += len(line) + 1
        listed += 1
    failing = max(report.failed + report.errors, len(report.failures))
    if report.failures and listed < failing:
        hidden = failing - listed
        parts.append(
            f"... {hidden} more failing test{'s' if hidden != 1 else ''} (details lists up to {MAX_FAILURES})"
        )
    text = "\n".join(parts)
    raw = raw.rstrip("\n")
    if trailer:
        raw = (raw + "\n" if raw else "") + trailer
    label = "--- output (tail) ---\n"
    room = limit - len(text) - 1 - len(label)
    if raw and room > 0:
        tail = _tail(raw, room)
        omitted = len(raw) - len(tail) + dropped_chars
        if omitted:
            marker = truncation_marker(omitted) + "\n"
            tail = marker + _tail(raw, room - len(marker)) if room > len(marker) else tail
        if tail:
            text += "\n" + label + tail
    return text[:limit]


def _missing_pytest_hint(plan: TestPlan, report: TestReport, output: str, root: Path) -> str:
    """For the default command run by a python without pytest: what to do about it."""
    if not plan.default or report.ok or report.passed or report.failed or report.errors:
        return ""
    if "No module named pytest" not in output:
        return ""
    hint = (
        "pytest is not installed for the python that ran it; install it there, create the project's "
        ".venv with pytest, or set test_command"
    )
    if (
        plan.python is not None
        and repository_python(root) is not None
        and plan.python != str(repository_python(root))
    ):
        hint += " (the project's .venv is used once the workspace is trusted: `lich trust`)"
    return hint


def _without_junit_note(output: str, junit_file: Path) -> str:
    """The output without pytest's `generated xml file: <temp path>` line (lich's, not the project's)."""
    marker = str(junit_file)
    if marker not in output:
        return output
    return "\n".join(line for line in output.split("\n") if marker not in line)


async def _notify_workspace(ctx: ToolContext, report: TestReport) -> None:
    if ctx.workspace is None:
        return
    try:
        await ctx.workspace.report_test_results(report)
    except asyncio.CancelledError:
        raise
    except Exception:  # noqa: BLE001 - the editor's side never fails the tool
        log.exception("run_tests: report_test_results failed")


async def _sync_editor(ctx: ToolContext) -> str | None:
    """`unsaved_buffers: ...` when the editor's buffers could not be written to disk first."""
    if ctx.workspace is None:
        return None
    try:
        problem = await ctx.workspace.sync_to_disk()
    except asyncio.CancelledError:
        raise
    except Exception as err:  # noqa: BLE001 - fail closed: never test other text than the editor's
        return f"unsaved_buffers: saving the editor's buffers failed ({type(err).__name__}: {err})"
    if isinstance(problem, str) and problem.strip():
        return f"unsaved_buffers: {problem.strip()}"
    return None


@capture_errors
async def run_tests(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    filter_text = optional_string_arg(args, "filter")
    if filter_text is not None and not filter_text.strip():
        filter_text = None
    plan = plan_command(ctx, filter_text)
    if ctx.cancel.cancelled:
        return ToolResult(ok=False, error="cancelled")
    lock = try_lock_workspace(ctx.work_dir)
    if lock is None:
        return ToolResult(ok=False, error=BUSY_ERROR)
    try:
        problem = await _sync_editor(ctx)
        if problem is not None:
            return ToolResult(ok=False, error=problem, details={"command": plan.command})
        if ctx.cancel.cancelled:
            return ToolResult(ok=False, error="cancelled")
        return await _run_plan(plan, ctx)
    finally:
        lock.release()


async def _run_plan(plan: TestPlan, ctx: ToolContext) -> ToolResult:
    junit_dir = _junit_dir(ctx.work_dir) if plan.pytest else None
    try:
        command = plan.command
        junit_file: Path | None = None
        if junit_dir is not None:
            junit_file = Path(junit_dir) / "junit.xml"
            # xunit1 keeps each testcase's file and line (xunit2, pytest's default, drops them).
            command += " " + shlex.quote(f"--junitxml={junit_file}") + " -o junit_family=xunit1"
        timeout_ms = COMMAND_TIMEOUT_MS
        run = await _run_command(command, ctx, timeout_ms)
        if run.cancelled or run.timed_out:
            report = build_report(plan, run, None, ctx.work_dir)
            if run.cancelled:
                error, trailer = "cancelled", "[cancelled; its processes were killed]"
            else:
                error = f"timeout: test command exceeded {timeout_ms} ms; its processes were killed"
                trailer = f"[timeout after {timeout_ms} ms; its processes were killed]"
            output = compose_output(
                report, run.output, plan.pytest, trailer, dropped_chars=run.dropped_chars
            )
            return ToolResult(ok=False, output=output, error=error, details=report.to_dict())
        report = build_report(plan, run, junit_file, ctx.work_dir)
        if junit_file is not None:
            run.output = _without_junit_note(run.output, junit_file)
    finally:
        if junit_dir is not None:
            shutil.rmtree(junit_dir, ignore_errors=True)
    await _notify_workspace(ctx, report)
    return ToolResult(
        ok=report.ok,
        output=compose_output(report, run.output, plan.pytest, dropped_chars=run.dropped_chars),
        error=report_error(
            report, plan.pytest, _missing_pytest_hint(plan, report, run.output, ctx.work_dir)
        ),
        details=report.to_dict(),
    )


TOOL = FunctionTool(
    name="run_tests",
    description=(
        "Run the project's tests (test_command or pytest): pass/fail, failures with file:line."
    ),
    parameters={
        "type": "object",
        "properties": {
            "filter": {
                "type": "string",
                "description": ("Path, node id or -k expression."),
            },
        },
        "additionalProperties": False,
    },
    run=run_tests,
    capability="process/exec",
    timeout_ms=RUN_TESTS_TOOL_TIMEOUT_MS,
    max_output_chars=RUN_TESTS_MAX_OUTPUT_CHARS,
)
