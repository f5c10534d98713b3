"""Balanced-delimiter checking and repair for Lisp-family files after a patch.

The scanner knows strings (with backslash escapes), `;` line comments, `#| |#` block comments
(nested; Common Lisp and Scheme), `|quoted symbols|` (Common Lisp and Scheme), backslash escapes
outside strings (which covers `#\\(` character literals and Clojure's `\\(`), and Emacs Lisp's
`?(` / `?\\(` character syntax. Delimiters are `()`, `[]` and `{}`.

Repair works per changed hunk: the hunk's net delimiter depth is compared with the depth of the
lines it replaced, and the difference is made up at the end of the hunk (closers added after
its last code character, or its last closers removed); a closer of the wrong kind inside a hunk
is swapped for the expected one. A repair is *safe* when every fix lies inside the edited lines
and the file's top-level form count equals the count before the patch. Anything else (fixes
outside the hunks, a changed form count) is only a candidate, shown for review. Non-delimiter
problems (an unterminated string, comment or |symbol|) are reported, never repaired.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Literal

LISP_SUFFIXES = (".lisp", ".asd", ".cl", ".lsp", ".el", ".scm", ".clj", ".edn")
OPENERS = "([{"
CLOSERS = ")]}"
CLOSER_FOR = {"(": ")", "[": "]", "{": "}"}
MAX_REPAIR_ROUNDS = 6

_TOKEN_RE = re.compile(r'[()\[\]{}";\\|#?]')
_STRING_BODY_RE = re.compile(r'(?:[^"\\]|\\.)*"', re.DOTALL)
_PIPE_BODY_RE = re.compile(r"(?:[^|\\]|\\.)*\|", re.DOTALL)
_BLOCK_MARK_RE = re.compile(r"#\||\|#")
# Characters after which Emacs Lisp's `?` starts a character literal.
_ELISP_TOKEN_BOUNDARY = " \t\r\n()[]'`,\""


@dataclass(frozen=True)
class Dialect:
    block_comments: bool
    pipe_symbols: bool
    question_chars: bool


def is_lisp_path(path: str | PurePath) -> bool:
    return PurePath(path).suffix.lower() in LISP_SUFFIXES


def dialect_for(path: str | PurePath) -> Dialect:
    suffix = PurePath(path).suffix.lower()
    if suffix == ".el":
        return Dialect(block_comments=False, pipe_symbols=False, question_chars=True)
    if suffix in (".clj", ".edn"):
        return Dialect(block_comments=False, pipe_symbols=False, question_chars=False)
    return Dialect(block_comments=True, pipe_symbols=True, question_chars=False)


@dataclass
class Scan:
    delimiters: list[tuple[int, str]] = field(default_factory=list)
    # Offsets where a `;` comment starts (to add closers before a trailing comment).
    comments: list[int] = field(default_factory=list)
    # Non-delimiter syntax problems: (offset, description).
    problems: list[tuple[int, str]] = field(default_factory=list)


def scan(text: str, dialect: Dialect) -> Scan:
    result = Scan()
    position = 0
    length = len(text)
    while position < length:
        match = _TOKEN_RE.search(text, position)
        if match is None:
            break
        index = match.start()
        char = text[index]
        position = index + 1
        if char in OPENERS or char in CLOSERS:
            result.delimiters.append((index, char))
        elif char == '"':
            body = _STRING_BODY_RE.match(text, index + 1)
            if body is None:
                result.problems.append((index, "unterminated string"))
                break
            position = body.end()
        elif char == ";":
            result.comments.append(index)
            newline = text.find("\n", index)
            position = length if newline < 0 else newline
        elif char == "\\":
            position = index + 2
        elif char == "#" and dialect.block_comments and text.startswith("#|", index):
            position = _skip_block_comment(text, index)
            if position < 0:
                result.problems.append((index, "unterminated #| comment"))
                break
        elif char == "|" and dialect.pipe_symbols:
            body = _PIPE_BODY_RE.match(text, index + 1)
            if body is None:
                result.problems.append((index, "unterminated |symbol|"))
                break
            position = body.end()
        elif (
            char == "?"
            and dialect.question_chars
            and (index == 0 or text[index - 1] in _ELISP_TOKEN_BOUNDARY)
        ):
            position = index + (3 if text.startswith("\\", index + 1) else 2)
    return result


def _skip_block_comment(text: str, index: int) -> int:
    depth = 0
    for mark in _BLOCK_MARK_RE.finditer(text, index):
        depth += 1 if mark.group() == "#|" else -1
        if depth == 0:
            return mark.end()
    return -1


@dataclass
class Balance:
    unmatched: list[tuple[int, str]] = field(default_factory=list)
    # (offset, found closer, expected closer)
    mismatched: list[tuple[int, str, str]] = field(default_factory=list)
    unclosed: list[tuple[int, str]] = field(default_factory=list)
    top_level_forms: int = 0

    @property
    def balanced(self) -> bool:
        return not (self.unmatched or self.mismatched or self.unclosed)


def balance(delimiters: Sequence[tuple[int, str]]) -> Balance:
    result = Balance()
    stack: list[tuple[int, str]] = []
    for offset, char in delimiters:
        if char in OPENERS:
            if not stack:
                result.top_level_forms += 1
            stack.append((offset, char))
        elif not stack:
            result.unmatched.append((offset, char))
        else:
            opener = stack.pop()
            expected = CLOSER_FOR[opener[1]]
            if expected != char:
                result.mismatched.append((offset, char, expected))
    result.unclosed = stack
    return result


def check(text: str, dialect: Dialect) -> tuple[Scan, Balance]:
    found = scan(text, dialect)
    return found, balance(found.delimiters)


@dataclass
class RepairOutcome:
    status: Literal["balanced", "repaired", "candidate", "unrepairable", "syntax", "preexisting"]
    text: str
    # True when the repair stays inside the edited lines and keeps the top-level form count.
    safe: bool = False
    fixes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class _Lines:
    def __init__(self, text: str) -> None:
        self.starts = [0] + [index + 1 for index, char in enumerate(text) if char == "\n"]
        self.length = len(text)

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset) - 1

    def span(self, first: int, end: int) -> tuple[int, int]:
        """Character offsets of lines [first, end)."""
        low = self.starts[first] if first < len(self.starts) else self.length
        high = self.starts[end] if end < len(self.starts) else self.length
        return low, high

    def where(self, offset: int) -> str:
        line = self.line_of(offset)
        return f"line {line + 1} column {offset - self.starts[line] + 1}"


def describe(text: str, found: Scan, report: Balance, limit: int = 5) -> list[str]:
    lines = _Lines(text)
    notes = [f"{what} at {lines.where(offset)}" for offset, what in found.problems]
    if notes:
        # The scan stopped at the problem, so "never closed" openers before it are noise.
        return notes[:limit]
    notes += [f"unmatched `{char}` at {lines.where(offset)}" for offset, char in report.unmatched]
    notes += [
        f"`{found_char}` at {lines.where(offset)} closes a form that needs `{expected}`"
        for offset, found_char, expected in report.mismatched
    ]
    notes += [
        f"`{char}` opened at {lines.where(offset)} is never closed"
        for offset, char in report.unclosed
    ]
    return notes[:limit]


def _depth(fragment: str, dialect: Dialect) -> int:
    found = scan(fragment, dialect)
    return sum(1 if char in OPENERS else -1 for _, char in found.delimiters)


def _code_end(text: str, low: int, high: int, comments: Sequence[int]) -> int:
    """Offset just after the last code character in text[low:high], skipping `;` comments."""
    line_end = high
    while line_end > low:
        line_start = text.rfind("\n", low, max(low, line_end - 1)) + 1
        if line_start < low:
            line_start = low
        stop = line_end
        position = bisect.bisect_left(comments, line_start)
        if position < len(comments) and comments[position] < line_end:
            stop = comments[position]
        while stop > line_start and text[stop - 1] in " \t\r\n":
            stop -= 1
        if stop > line_start:
            return stop
        line_end = line_start
    return low


def repair(
    old_text: str | None,
    new_text: str,
    hunks: Sequence[tuple[int, int, int, int]],
    dialect: Dialect,
) -> RepairOutcome:
    """Check `new_text`; when unbalanced, build a repair and classify it as safe or not.

    `hunks` are (old_start, old_end, new_start, new_end) line ranges of the edit.
    """
    found, report = check(new_text, dialect)
    if found.problems:
        return RepairOutcome("syntax", new_text, problems=describe(new_text, found, report))
    if report.balanced:
        return RepairOutcome("balanced", new_text)
    old_found, old_report = check(old_text or "", dialect)
    if old_found.problems or not old_report.balanced:
        return RepairOutcome("preexisting", new_text, problems=describe(new_text, found, report))

    problems = describe(new_text, found, report)
    text, fixes, local_ok = _repair_locally(old_text or "", new_text, hunks, dialect)
    found, report = check(text, dialect)
    if not found.problems and report.balanced:
        safe = local_ok and report.top_level_forms == old_report.top_level_forms
        return RepairOutcome(
            "repaired" if safe else "candidate", text, safe=safe, fixes=fixes, problems=problems
        )
    text, fixes = _repair_globally(new_text, dialect)
    found, report = check(text, dialect)
    if not found.problems and report.balanced:
        return RepairOutcome("candidate", text, safe=False, fixes=fixes, problems=problems)
    return RepairOutcome("unrepairable", new_text, problems=problems)


def _repair_locally(
    old_text: str, new_text: str, hunks: Sequence[tuple[int, int, int, int]], dialect: Dialect
) -> tuple[str, list[str], bool]:
    """Fix each hunk's depth difference at its end, then wrong closers inside hunks."""
    old_lines = _Lines(old_text)
    text = new_text
    fixes: list[str] = []
    # Work from the last hunk up so earlier offsets stay valid while editing.
    for old_start, old_end, new_start, new_end in sorted(
        hunks, key=lambda hunk: hunk[2], reverse=True
    ):
        if new_end <= new_start:
            continue
        lines = _Lines(text)
        low, high = lines.span(new_start, new_end)
        old_low, old_high = old_lines.span(old_start, old_end)
        difference = _depth(text[low:high], dialect) - _depth(old_text[old_low:old_high], dialect)
        if difference > 0:
            found = scan(text, dialect)
            at = _code_end(text, low, high, found.comments)
            stack: list[str] = []
            for offset, char in found.delimiters:
                if offset >= at:
                    break
                if char in OPENERS:
                    stack.append(char)
                elif stack:
                    stack.pop()
            closers = "".join(CLOSER_FOR[char] for char in reversed(stack[-difference:]))
            if len(closers) != difference:
                return text, fixes, False
            text = text[:at] + closers + text[at:]
            fixes.append(
                f"added `{closers}` at the end of line {lines.line_of(max(at - 1, low)) + 1}"
            )
        elif difference < 0:
            found = scan(text, dialect)
            closer_offsets = [
                offset
                for offset, char in found.delimiters
                if low <= offset < high and char in CLOSERS
            ]
            if len(closer_offsets) < -difference:
                return text, fixes, False
            for offset in sorted(closer_offsets[difference:], reverse=True):
                fixes.append(f"removed `{text[offset]}` at {lines.where(offset)}")
                text = text[:offset] + text[offset + 1 :]
    for _ in range(MAX_REPAIR_ROUNDS):
        _, report = check(text, dialect)
        if not report.mismatched:
            break
        offset, found_char, expected = report.mismatched[0]
        lines = _Lines(text)
        line = lines.line_of(offset)
        if not any(new_start <= line < new_end for _, _, new_start, new_end in hunks):
            return text, fixes, False
        text = text[:offset] + expected + text[offset + 1 :]
        fixes.append(f"changed `{found_char}` to `{expected}` at {lines.where(offset)}")
    return text, fixes, True


def _repair_globally(text: str, dialect: Dialect) -> tuple[str, list[str]]:
    """Fix wherever the problems are: drop unmatched closers, swap wrong ones, close at the end."""
    fixes: list[str] = []
    for _ in range(MAX_REPAIR_ROUNDS):
        _, report = check(text, dialect)
        if report.balanced:
            break
        lines = _Lines(text)
        if report.unmatched:
            offset, char = report.unmatched[0]
            text = text[:offset] + text[offset + 1 :]
            fixes.append(f"removed unmatched `{char}` at {lines.where(offset)}")
        elif report.mismatched:
            offset, found_char, expected = report.mismatched[0]
            text = text[:offset] + expected + text[offset + 1 :]
            fixes.append(f"changed `{found_char}` to `{expected}` at {lines.where(offset)}")
        else:
            closers = "".join(CLOSER_FOR[char] for _, char in reversed(report.unclosed))
            text = text + ("" if text.endswith("\n") or not text else "\n") + closers + "\n"
            fixes.append(f"added `{closers}` on a new last line")
    return text, fixes
