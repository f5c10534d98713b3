"""Reading pytest's results: its JUnit XML (preferred) or, failing that, its text summary.

Both readers return a `PytestResults` (counts and failures) or None when the input holds no pytest
results at all. Paths in a failure are made relative to the workspace root; the line is the line
where the test failed inside its own file: the deepest traceback entry in that file (the assert
line, or the call into a helper that failed), else the test function's line (JUnit's `line`
attribute, which is 0-based), else 0.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from lich_core.test_results.report import TestFailure

# At most this many failures are kept in a report (the counts stay exact).
MAX_FAILURES = 100
MAX_MESSAGE_CHARS = 300
# A JUnit file larger than this is not parsed (the text summary is read instead).
MAX_JUNIT_BYTES = 32 * 1024 * 1024

# `tests/test_a.py:15: AssertionError`, `tests/test_a.py:19: `, `test_a.py:15: in test_x` (long,
# short and line tracebacks) and `File "/abs/test_a.py", line 3` (Python's own, in SyntaxErrors).
_LOCATION_RE = re.compile(r"^(?P<path>[^\s:<>\"'=][^:\n]*?):(?P<line>\d+):(?: |$)")
_PY_LOCATION_RE = re.compile(r"^(?:E\s+)?\s*File \"(?P<path>[^\"]+)\", line (?P<line>\d+)")
# An `E   ValueError: boom` line: the exception pytest reports (the last one wins).
_EXCEPTION_LINE_RE = re.compile(r"^E\s+((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?::\s.*)?)\s*$")
# `==== 2 failed, 3 passed, 1 skipped in 0.24s ====` and -q's bare `2 failed, 3 passed in 0.24s`.
_SUMMARY_RE = re.compile(
    r"^=*\s*(?P<body>(?:\d+ \w+|no tests ran)(?:, \d+ \w+)*)\s+in\s+[\d.]+s\b.*?=*\s*$"
)
_COUNT_RE = re.compile(r"(\d+) (\w+)")
_SHORT_SUMMARY_RE = re.compile(r"^(?P<kind>FAILED|ERROR) (?P<id>\S+)(?: - (?P<message>.*))?$")
_SECTION_RE = re.compile(r"^_{3,} (?P<title>.+?) _{3,}$")
_SECTION_END_RE = re.compile(r"^(?:={3,}|-{3,} (?:generated xml file|Captured))")
_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass
class PytestResults:
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    failures: list[TestFailure] = field(default_factory=list)


# --- paths and lines ---


def _existing(path: Path) -> Path | None:
    try:
        return path if path.is_file() else None
    except OSError:
        return None


def resolve_result_path(root: Path, raw: str) -> Path | None:
    """The file a path in pytest's output names: absolute, or relative to the root or a parent of it.

    pytest writes node ids relative to its rootdir and tracebacks relative to where it was started;
    both are the root for the default command, and either may be a parent (a rootdir found above
    the root) or a child (`cd sub && pytest`) for a configured one.
    """
    if not raw:
        return None
    path = Path(raw)
    if path.is_absolute():
        return _existing(path)
    for base in (root, *root.parents):
        found = _existing(base / path)
        if found is not None:
            return found
    return None


def relative_path(root: Path, path: Path) -> str:
    rel = os.path.relpath(os.path.realpath(path), os.path.realpath(root))
    return rel.replace(os.sep, "/")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def traceback_locations(text: str) -> list[tuple[str, int]]:
    """(path, 1-based line) of every traceback entry in pytest's failure text, in order."""
    found: list[tuple[str, int]] = []
    for line in text.splitlines():
        line = _ANSI_RE.sub("", line)
        match = _PY_LOCATION_RE.match(line) or _LOCATION_RE.match(line)
        if match is not None:
            found.append((match.group("path"), int(match.group("line"))))
    return found


def failure_line(root: Path, test_file: Path | None, test_file_raw: str, text: str) -> int:
    """The line of the deepest traceback entry in the test's own file, 0 when there is none."""
    line = 0
    resolved_cache: dict[str, Path | None] = {}
    for raw, number in traceback_locations(text):
        if raw not in resolved_cache:
            resolved_cache[raw] = resolve_result_path(root, raw)
        resolved = resolved_cache[raw]
        norm = raw.replace(os.sep, "/")
        if test_file is not None and resolved is not None:
            same = _same_file(resolved, test_file)
        elif test_file is not None:
            # Relative to a directory below the root (`cd sub && pytest`): the test file's tail.
            same = test_file.as_posix().endswith(
                "/" + (norm[2:] if norm.startswith("./") else norm)
            )
        else:
            same = bool(test_file_raw) and (
                norm == test_file_raw or norm.endswith("/" + test_file_raw)
            )
        if same and number > 0:
            line = number
    return line


def function_line(path: Path | None, name: str) -> int:
    """The 1-based line of `def <name>` in the file (the test function), 0 when not found."""
    if path is None or not name:
        return 0
    func = name.split("[", 1)[0]
    pattern = re.compile(rf"^\s*(?:async\s+)?def\s+{re.escape(func)}\s*\(")
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for number, text in enumerate(handle, start=1):
                if pattern.match(text):
                    return number
    except OSError:
        return 0
    return 0


def one_line(text: str) -> str:
    """The first non-empty line, trimmed to MAX_MESSAGE_CHARS."""
    for line in _ANSI_RE.sub("", text).splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= MAX_MESSAGE_CHARS else line[: MAX_MESSAGE_CHARS - 3] + "..."
    return ""


def exception_message(text: str) -> str:
    """The last `E   SomeError: ...` line of a traceback, without the `E`."""
    message = ""
    for line in _ANSI_RE.sub("", text).splitlines():
        match = _EXCEPTION_LINE_RE.match(line)
        if match is not None:
            message = match.group(1)
    return one_line(message)


def _failure_message(message_attr: str, text: str) -> str:
    message = one_line(message_attr)
    if message in ("", "collection failure") or message.startswith("failed on "):
        # Collection and setup errors: pytest's attribute says where, the traceback says what.
        better = exception_message(text)
        if better:
            return better
    return message


# --- JUnit XML ---


def _node_id(file_attr: str, classname: str, name: str) -> str:
    """pytest's node id from a JUnit testcase: `tests/test_a.py::TestC::test_p[2]`."""
    if not file_attr:
        return f"{classname}.{name}" if classname else name
    if not classname:  # a collection error: the name is the module
        return file_attr
    module = file_attr[:-3] if file_attr.endswith(".py") else file_attr
    dotted = module.replace("/", ".").replace("\\", ".")
    classes = classname[len(dotted) :].lstrip(".") if classname.startswith(dotted) else ""
    parts = [file_attr, *[part for part in classes.split(".") if part], name]
    return "::".join(parts)


def _guess_file(root: Path, classname: str, name: str) -> str:
    """Without a `file` attribute (junit_family xunit2): the module path that exists, if any."""
    dotted = (classname or name).split(".")
    for end in range(len(dotted), 0, -1):
        candidate = "/".join(dotted[:end]) + ".py"
        if resolve_result_path(root, candidate) is not None:
            return candidate
    return ""


def parse_junit_xml(path: Path, root: Path) -> PytestResults | None:
    """Counts and failures from pytest's `--junitxml` file; None when it is missing or unreadable."""
    try:
        if path.stat().st_size > MAX_JUNIT_BYTES:
            return None
        tree = ET.parse(path)
    except (OSError, ET.ParseError):
        return None
    results = PytestResults()
    for case in tree.getroot().iter("testcase"):
        failure = case.find("failure")
        error = case.find("error")
        if failure is not None:
            results.failed += 1
        elif error is not None:
            results.errors += 1
        elif case.find("skipped") is not None:
            results.skipped += 1
            continue
        else:
            results.passed += 1
            continue
        if len(results.failures) >= MAX_FAILURES:
            continue
        element = failure if failure is not None else error
        assert element is not None
        results.failures.append(_junit_failure(root, case, element))
    return results


def _junit_failure(root: Path, case: ET.Element, element: ET.Element) -> TestFailure:
    classname = case.get("classname", "")
    name = case.get("name", "")
    file_attr = (case.get("file") or "").replace("\\", "/") or _guess_file(root, classname, name)
    text = element.text or ""
    test_file = resolve_result_path(root, file_attr)
    line = failure_line(root, test_file, file_attr, text)
    if line == 0:
        raw_line = case.get("line")
        if raw_line is not None and raw_line.strip().isdigit():
            line = int(raw_line) + 1  # JUnit's line is 0-based
    if line == 0 and classname:
        line = function_line(test_file, name)
    rel = relative_path(root, test_file) if test_file is not None else file_attr
    return TestFailure(
        test_id=_node_id(file_attr, classname, name),
        path=rel,
        line=line,
        message=_failure_message(element.get("message", ""), text),
    )


# --- text summary ---


def parse_pytest_text(text: str, root: Path) -> PytestResults | None:
    """Counts and failures from pytest's terminal output; None when it has no pytest summary.

    Reads the final `N failed, M passed, ... in Xs` line and the short summary's `FAILED id -
    message` / `ERROR id - message` lines; each failure's line comes from its section of the
    FAILURES / ERRORS report when that is in the text.
    """
    lines = [_ANSI_RE.sub("", line) for line in text.splitlines()]
    summary: str | None = None
    for line in reversed(lines):
        match = _SUMMARY_RE.match(line.strip())
        if match is not None:
            summary = match.group("body")
            break
    short = [m for m in (_SHORT_SUMMARY_RE.match(line) for line in lines) if m is not None]
    if summary is None and not short:
        return None
    results = PytestResults()
    for number, word in _COUNT_RE.findall(summary or ""):
        count = int(number)
        if word in ("passed", "xpassed"):
            results.passed += count
        elif word == "failed":
            results.failed += count
        elif word in ("error", "errors"):
            results.errors += count
        elif word in ("skipped", "xfailed"):
            results.skipped += count
    if summary is None:  # a summary line cut off (or never printed): count the short summary
        results.failed = sum(1 for m in short if m.group("kind") == "FAILED")
        results.errors = sum(1 for m in short if m.group("kind") == "ERROR")
    sections = _sections(lines)
    for match in short[:MAX_FAILURES]:
        results.failures.append(
            _text_failure(root, match.group("id"), match.group("message") or "", sections)
        )
    return results


def _sections(lines: list[str]) -> dict[str, str]:
    sections: dict[str, str] = {}
    title: str | None = None
    body: list[str] = []

    def close() -> None:
        if title is not None and title not in sections:
            sections[title] = "\n".join(body)

    for line in lines:
        match = _SECTION_RE.match(line)
        if match is not None:
            close()
            title, body = match.group("title"), []
        elif title is not None and _SECTION_END_RE.match(line):
            close()
            title, body = None, []
        elif title is not None:
            body.append(line)
    close()
    return sections


def _section_titles(test_id: str) -> Iterable[str]:
    file_part, _, rest = test_id.partition("::")
    if not rest:
        yield f"ERROR collecting {file_part}"
        return
    name = rest.replace("::", ".")
    yield name
    yield f"ERROR at setup of {name}"
    yield f"ERROR at teardown of {name}"
    yield rest.split("::")[-1]


def _text_failure(root: Path, test_id: str, message: str, sections: dict[str, str]) -> TestFailure:
    file_raw, _, rest = test_id.partition("::")
    test_file = resolve_result_path(root, file_raw)
    body = next((sections[title] for title in _section_titles(test_id) if title in sections), "")
    line = failure_line(root, test_file, file_raw, body) if body else 0
    if line == 0 and rest:
        line = function_line(test_file, rest.split("::")[-1])
    if not message and body:
        message = exception_message(body)
    rel = relative_path(root, test_file) if test_file is not None else file_raw
    return TestFailure(test_id=test_id, path=rel, line=line, message=one_line(message))
