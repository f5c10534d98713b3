"""What one run_tests call found: the counts, the failures and where they happened.

`TestReport` is the structured pass/fail the rest of lich reads (the self-commit gatekeeper, the
language server's diagnostics); `to_dict()` is what run_tests puts in its result's `details`, and
`from_dict()` reads it back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


def _int(value: Any, default: int = 0) -> int:
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value == value:
        return int(value)
    return default


@dataclass(frozen=True)
class TestFailure:
    """One failed (or erroring) test: where it failed and why, in one line.

    `path` is relative to the workspace root ("" when unknown); `line` is 1-based (0 when unknown)
    and names the line where it failed inside the test's file (the assert line), not the line of
    the test function; `message` is one line, the assertion summary (`assert 3 == 4`) or the
    exception (`ValueError: boom`).
    """

    __test__ = False  # not a pytest test class, whatever a test module imports it as

    test_id: str
    path: str = ""
    line: int = 0
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "test_id": self.test_id,
            "path": self.path,
            "line": self.line,
            "message": self.message,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TestFailure:
        return cls(
            test_id=str(data.get("test_id") or ""),
            path=str(data.get("path") or ""),
            line=max(0, _int(data.get("line"))),
            message=str(data.get("message") or ""),
        )


@dataclass
class TestReport:
    """The outcome of one test command.

    `exit_code` is the command's (a signal death reads as 128 + N, like a shell reports it), None
    when it never exited on its own. The counts come from pytest's JUnit XML or its text summary;
    for a runner lich does not know they stay 0 and only the exit code counts. `failures` lists
    failed tests and errors (collection errors included), at most MAX_FAILURES of them; the counts
    stay exact.
    """

    __test__ = False

    command: str
    exit_code: int | None
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    failures: list[TestFailure] = field(default_factory=list)
    duration_s: float = 0.0
    filter: str | None = None

    @property
    def ok(self) -> bool:
        """Green: the command exited with 0 and nothing failed or erred."""
        return self.exit_code == 0 and self.failed == 0 and self.errors == 0 and not self.failures

    def counts_text(self) -> str:
        """`2 failed, 5 passed, 1 error, 1 skipped`: failed always, the others when not 0."""
        parts = [f"{self.failed} failed"]
        if self.passed:
            parts.append(f"{self.passed} passed")
        if self.errors:
            parts.append(f"{self.errors} error{'s' if self.errors != 1 else ''}")
        if self.skipped:
            parts.append(f"{self.skipped} skipped")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "command": self.command,
            "exit_code": self.exit_code,
            "passed": self.passed,
            "failed": self.failed,
            "errors": self.errors,
            "skipped": self.skipped,
            "failures": [failure.to_dict() for failure in self.failures],
            "duration_s": self.duration_s,
            "filter": self.filter,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TestReport:
        """The report `to_dict()` made (`ok` is derived, so it is not read back)."""
        exit_code = data.get("exit_code")
        duration = data.get("duration_s")
        filter_text = data.get("filter")
        failures = data.get("failures")
        return cls(
            command=str(data.get("command") or ""),
            exit_code=_int(exit_code)
            if isinstance(exit_code, (int, float)) and not isinstance(exit_code, bool)
            else None,
            passed=_int(data.get("passed")),
            failed=_int(data.get("failed")),
            errors=_int(data.get("errors")),
            skipped=_int(data.get("skipped")),
            failures=[
                TestFailure.from_dict(item)
                for item in (failures if isinstance(failures, list) else [])
                if isinstance(item, Mapping)
            ],
            duration_s=float(duration)
            if isinstance(duration, (int, float)) and not isinstance(duration, bool)
            else 0.0,
            filter=filter_text if isinstance(filter_text, str) else None,
        )
