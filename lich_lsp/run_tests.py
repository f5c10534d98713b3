"""Tests in the editor: `lich.runTests`, and failing tests as diagnostics (source `lich tests`).

Whoever runs the `run_tests` tool (the command, or the agent in a task) runs it with an
EditorWorkspace, which first makes disk match the editor's buffers (`sync_to_disk`) and then
hands the report here (`report_test_results`): each failure becomes an Error diagnostic on the
line where it failed, and each run replaces the previous run's diagnostics, so a green run
clears them all. "Fix with agent" on such a diagnostic works as on any other.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from lich_core.test_results.report import TestFailure, TestReport
from lich_core.workspace import read_disk_text
from lich_lsp.commands import RUN_TESTS
from lich_lsp.contract import RunTestsParams, RunTestsResult, TestFailureView

if TYPE_CHECKING:
    from lich_core.hashline.read_state import ReadState
    from lich_core.test_results.report import TestReport
    from lich_lsp.commands import CommandTable
    from lich_lsp.context import SessionContext
    from lich_lsp.runtimes import ToolRuntimes
    from lich_lsp.workspace import EditorWorkspace

log = logging.getLogger("lich.lsp.tests")

TEST_DIAGNOSTIC_SOURCE = "lich tests"
RUN_TESTS_TOOL = "run_tests"
PROGRESS_TITLE = "lich: running tests"
_progress_ids = itertools.count(1)


class TestDiagnostics:
    """The diagnostics of the last test run, one list per file that had a failure."""

    def __init__(self, *, ctx: SessionContext) -> None:
        self._documents = ctx.documents
        self._port = ctx.port
        self._root = ctx.root
        self._messages = ctx.messages
        self._published: set[str] = set()

    def publish(self, report: TestReport) -> int:
        """Replace the previous run's diagnostics with this run's; returns how many were sent."""
        by_uri: dict[str, list[types.Diagnostic]] = {}
        for failure in report.failures:
            located = self._locate(failure.path, failure.line)
            if located is None:
                continue  # no file or line to show it on: it is still in the command's result
            uri, line_range = located
            message = (
                f"{failure.test_id}: {failure.message}" if failure.message else failure.test_id
            )
            by_uri.setdefault(uri, []).append(
                types.Diagnostic(
                    range=line_range,
                    message=message,
                    severity=types.DiagnosticSeverity.Error,
                    source=TEST_DIAGNOSTIC_SOURCE,
                    code=failure.test_id,
                )
            )
        messages = self._messages  # merges them with the other sources' (lich review)
        for uri in sorted(self._published - set(by_uri)):
            messages.publish_diagnostics(TEST_DIAGNOSTIC_SOURCE, uri, [])
        for uri, diagnostics in by_uri.items():
            messages.publish_diagnostics(TEST_DIAGNOSTIC_SOURCE, uri, diagnostics)
        self._published = set(by_uri)
        return sum(len(items) for items in by_uri.values())

    def _locate(self, relative: str, line: int) -> tuple[str, types.Range] | None:
        """The document and the whole failing line (0-based, in the client's position units)."""
        if not relative or line < 1:
            return None
        root = self._root
        path = (root / relative) if not Path(relative).is_absolute() else Path(relative)
        documents = self._documents
        text = documents.current_text(path)
        if text is None:
            try:
                text = read_disk_text(path, root)
            except (OSError, ValueError):
                return None
        lines = text.splitlines()
        index = line - 1
        if index >= len(lines):
            return None
        width = self._port.position_codec.client_num_units(lines[index])
        line_range = types.Range(
            start=types.Position(line=index, character=0),
            end=types.Position(line=index, character=width),
        )
        return documents.uri_for(path), line_range


class TestRunner:
    """`lich.runTests`: the run_tests tool, with the editor's buffers saved first and work-done
    progress; the user asked for this run, so an `ask` approval policy counts as answered."""

    def __init__(
        self,
        *,
        ctx: SessionContext,
        new_workspace: Callable[[str], EditorWorkspace],
        runtimes: ToolRuntimes,
        read_state: ReadState,
    ) -> None:
        self._new_workspace = new_workspace
        self._runtimes = runtimes
        self._read_state = read_state
        self._documents = ctx.documents
        self._port = ctx.port
        self._features = ctx.features
        self._root = ctx.root

    def register(self, table: CommandTable) -> None:
        table.add(RUN_TESTS, self.run_tests_command, typed=True)

    async def run_tests_command(self, params: RunTestsParams, request_id: Any) -> RunTestsResult:
        test_filter = params.filter
        return await self.run(test_filter.strip() if test_filter and test_filter.strip() else None)

    async def run(self, test_filter: str | None) -> RunTestsResult:
        workspace = self._new_workspace("lich: run tests")
        workspace.user_invoked = True
        ctx = self._runtimes.context(workspace, self._read_state, workspace.title)
        token = await self._begin_progress(test_filter)
        result = None
        try:
            result = await self._runtimes.current().executor.execute(
                RUN_TESTS_TOOL, {"filter": test_filter} if test_filter else {}, ctx
            )
        finally:
            if token is not None:
                ended = _report(result.details) if result is not None else None
                summary = _summary(ended, result.error if result else "cancelled")
                self._port.progress(token, types.WorkDoneProgressEnd(message=summary))
        # The tool's details are its TestReport as JSON; read back, then JSON again only here.
        report = _report(result.details)
        return RunTestsResult(
            ok=result.ok,
            summary=_summary(report, result.error),
            passed=report.passed if report else 0,
            failed=report.failed if report else 0,
            errors=report.errors if report else 0,
            skipped=report.skipped if report else 0,
            failures=[self._failure_view(failure) for failure in report.failures] if report else [],
            output=result.output,
            error=result.error or None,
        )

    async def _begin_progress(self, test_filter: str | None) -> str | None:
        if not self._features.work_done_progress:
            return None
        token = f"lich-tests-{next(_progress_ids)}"
        try:
            await self._port.create_progress(token)
        except Exception as err:  # noqa: BLE001 - no progress bar is not worth failing the run
            log.info("no progress for the test run: %s", err)
            return None
        message = f"filter: {test_filter}" if test_filter else None
        self._port.progress(
            token,
            types.WorkDoneProgressBegin(title=PROGRESS_TITLE, message=message, cancellable=False),
        )
        return token

    def _failure_view(self, failure: TestFailure) -> TestFailureView:
        uri = self._documents.uri_for(self._root / failure.path) if failure.path else ""
        return TestFailureView(
            test_id=failure.test_id,
            uri=uri,
            line=max(failure.line - 1, 0),
            message=failure.message,
        )


def _report(details: dict[str, Any] | None) -> TestReport | None:
    """The run's TestReport from the tool result's details; None when the tool made none (it
    refused, or was cancelled before the command ran)."""
    return TestReport.from_dict(details) if details else None


def _summary(report: TestReport | None, error: str | None) -> str:
    counts = [
        f"{count} {name}"
        for name, count in (
            ("passed", report.passed if report else 0),
            ("failed", report.failed if report else 0),
            ("errors", report.errors if report else 0),
            ("skipped", report.skipped if report else 0),
        )
        if count
    ]
    if report is not None and counts:
        return f"{', '.join(counts)} in {report.duration_s:.2f}s"
    return error or "no tests ran"
