"""Test runs for the run_tests tool: the report, pytest result readers and the workspace lock."""

from __future__ import annotations

from lich_core.test_results.lock import WorkspaceLock, lock_path, try_lock_workspace
from lich_core.test_results.pytest_results import (
    MAX_FAILURES,
    PytestResults,
    parse_junit_xml,
    parse_pytest_text,
)
from lich_core.test_results.report import TestFailure, TestReport

__all__ = [
    "MAX_FAILURES",
    "PytestResults",
    "TestFailure",
    "TestReport",
    "WorkspaceLock",
    "lock_path",
    "parse_junit_xml",
    "parse_pytest_text",
    "try_lock_workspace",
]
