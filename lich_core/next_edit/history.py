"""The user's recent edits, kept from the editor's didChange: coalesced, the last few, recent.

A change next to (or over) the newest edit of the same file within COALESCE_S joins it, so a
word typed letter by letter, or a line reworked in several keystrokes, is one edit; a change
that brings the lines back as they were drops the edit. Each edit keeps only its own lines and
a few lines of context around them, never the whole document.
"""

from __future__ import annotations

import difflib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

# Edits kept (all files), newest last; older ones are forgotten.
MAX_EDITS = 5
# An edit older than this is not the user's current work any more.
MAX_AGE_S = 10 * 60
# A change within this long of the newest edit, and next to it, joins it.
COALESCE_S = 60.0
# Lines between the newest edit and a change that still count as "next to it".
ADJACENT_LINES = 1
# Lines of context kept around an edit for its diff.
CONTEXT_LINES = 3
# Characters compared at once when looking for where two texts start and stop differing.
COMPARE_CHUNK = 2048
_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass
class RecentEdit:
    """Lines [start, start + len(new)) of the file's text, which were `old` before the edit;
    `offset` is where they start in the text now. `before` and `after` are the context lines
    around them (as they are now)."""

    path: str
    start: int
    old: list[str]
    new: list[str]
    at: float
    before: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)
    offset: int = 0

    @property
    def end(self) -> int:
        return self.start + len(self.new)

    @property
    def end_offset(self) -> int:
        return self.offset + sum(map(len, self.new))


def lines_of(text: str) -> list[str]:
    """`text` split after each `\n` (the last line may have none)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _common_prefix(a: str, b: str) -> int:
    limit = min(len(a), len(b))
    index = 0
    # A chunk at a time (compared in C), then a character at a time: cheap on a big file.
    while (
        index + COMPARE_CHUNK <= limit
        and a[index : index + COMPARE_CHUNK] == b[index : index + COMPARE_CHUNK]
    ):
        index += COMPARE_CHUNK
    while index < limit and a[index] == b[index]:
        index += 1
    return index


def _common_suffix(a: str, b: str, limit: int) -> int:
    size_a, size_b = len(a), len(b)
    count = 0
    while count + COMPARE_CHUNK <= limit and (
        a[size_a - count - COMPARE_CHUNK : size_a - count]
        == b[size_b - count - COMPARE_CHUNK : size_b - count]
    ):
        count += COMPARE_CHUNK
    while count < limit and a[size_a - count - 1] == b[size_b - count - 1]:
        count += 1
    return count


def changed_span(old: str, new: str) -> tuple[int, int, int] | None:
    """(start, end in old, end in new): the offsets of the whole lines that differ (the same
    start in both: what comes before is the same); None when the texts are equal."""
    if old == new:
        return None
    prefix = _common_prefix(old, new)
    suffix = _common_suffix(old, new, min(len(old), len(new)) - prefix)
    start = old.rfind("\n", 0, prefix) + 1
    old_end, new_end = len(old) - suffix, len(new) - suffix
    at_line_start = (old_end == 0 or old[old_end - 1] == "\n") and (
        new_end == 0 or new[new_end - 1] == "\n"
    )
    if suffix and not at_line_start:
        # Into the common suffix up to its first line break: the region ends at a line's end.
        line_end = old.find("\n", old_end)
        grow = (len(old) if line_end < 0 else line_end + 1) - old_end
        old_end += grow
        new_end += grow
    return start, old_end, new_end


def _lines_before(text: str, offset: int, count: int) -> list[str]:
    start = offset
    for _ in range(count):
        if start == 0:
            break
        start = text.rfind("\n", 0, start - 1) + 1
    return lines_of(text[start:offset])


def _lines_after(text: str, offset: int, count: int) -> list[str]:
    end = offset
    for _ in range(count):
        if end >= len(text):
            break
        found = text.find("\n", end)
        end = len(text) if found < 0 else found + 1
    return lines_of(text[offset:end])


class EditHistory:
    """The last MAX_EDITS edits of all files, newest last (`now` is the clock, for tests)."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        self._edits: list[RecentEdit] = []

    def record(self, path: str, old_text: str, new_text: str) -> None:
        """The file at `path` changed from `old_text` to `new_text`. Costs a comparison of the
        two texts in C and work on the changed lines only (it runs per keystroke)."""
        span = changed_span(old_text, new_text)
        if span is None:
            return
        start, old_end, new_end = span
        shift = len(new_text) - len(old_text)
        line = old_text.count("\n", 0, start)
        old_lines = lines_of(old_text[start:old_end])
        now = self._now()
        latest = self._edits[-1] if self._edits else None
        if (
            latest is not None
            and latest.path == path
            and now - latest.at <= COALESCE_S
            and latest.end_offset <= len(old_text)
            and line <= latest.end + ADJACENT_LINES
            and line + len(old_lines) >= latest.start - ADJACENT_LINES
        ):
            # One edit from the text before the newest edit to the text now: the lines of both
            # changes and those between them.
            self._edits.pop()
            low = min(start, latest.offset)
            high = max(old_end, latest.end_offset)  # in the text before this change
            before_lines = (
                lines_of(old_text[low : latest.offset])
                + latest.old
                + lines_of(old_text[latest.end_offset : high])
            )
            edit = RecentEdit(
                path,
                min(line, latest.start),
                before_lines,
                lines_of(new_text[low : high + shift]),
                now,
                offset=low,
            )
        else:
            new_lines = lines_of(new_text[start:new_end])
            edit = RecentEdit(path, line, old_lines, new_lines, now, offset=start)
        if edit.old == edit.new:
            return  # the lines are back as they were: no edit left
        edit.before = _lines_before(new_text, edit.offset, CONTEXT_LINES)
        edit.after = _lines_after(new_text, edit.end_offset, CONTEXT_LINES)
        self._edits.append(edit)
        del self._edits[:-MAX_EDITS]

    def recent(self) -> list[RecentEdit]:
        """The edits younger than MAX_AGE_S, oldest first."""
        now = self._now()
        self._edits = [edit for edit in self._edits if now - edit.at <= MAX_AGE_S]
        return list(self._edits)

    def latest(self, path: str) -> RecentEdit | None:
        """The newest edit of `path`: every later change of that file would have joined it or
        replaced it as the newest, so its lines are where they are now."""
        return next((edit for edit in reversed(self.recent()) if edit.path == path), None)

    def forget(self, path: str) -> None:
        self._edits = [edit for edit in self._edits if edit.path != path]


def unified_diff(edit: RecentEdit) -> str:
    """The edit as a unified diff body (hunk headers with the file's line numbers)."""
    context_old = edit.before + edit.old + edit.after
    context_new = edit.before + edit.new + edit.after
    offset = edit.start - len(edit.before)
    lines = []
    for line in difflib.unified_diff(
        [line.rstrip("\r\n") for line in context_old],
        [line.rstrip("\r\n") for line in context_new],
        lineterm="",
        n=CONTEXT_LINES,
    ):
        if line.startswith(("---", "+++")):
            continue
        header = _HUNK_HEADER.match(line)
        if header is not None:
            old_start, old_count, new_start, new_count = header.groups()
            line = (
                f"@@ -{int(old_start) + offset}{',' + old_count if old_count else ''} "
                f"+{int(new_start) + offset}{',' + new_count if new_count else ''} @@"
            )
        lines.append(line)
    return "\n".join(lines)


def render_edits(edits: list[RecentEdit], max_chars: int) -> str:
    """`User edited "PATH":` and its diff per edit, oldest first; the oldest are left out when
    all of them would pass `max_chars`."""
    rendered: list[str] = []
    size = 0
    for edit in reversed(edits):
        text = f'User edited "{edit.path}":\n```diff\n{unified_diff(edit)}\n```'
        if size + len(text) > max_chars:
            break
        rendered.append(text)
        size += len(text) + 2
    return "\n\n".join(reversed(rendered))
