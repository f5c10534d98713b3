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
_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass
class RecentEdit:
    """Lines [start, start + len(new)) of the file's text, which were `old` before the edit.
    `before` and `after` are the context lines around them (as they are now)."""

    path: str
    start: int
    old: list[str]
    new: list[str]
    at: float
    before: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)

    @property
    def end(self) -> int:
        return self.start + len(self.new)


def changed_lines(old: list[str], new: list[str]) -> tuple[int, int, int] | None:
    """(start, end in old, end in new) of the lines that differ; None when nothing does."""
    limit = min(len(old), len(new))
    start = 0
    while start < limit and old[start] == new[start]:
        start += 1
    if start == len(old) == len(new):
        return None
    old_end, new_end = len(old), len(new)
    while old_end > start and new_end > start and old[old_end - 1] == new[new_end - 1]:
        old_end -= 1
        new_end -= 1
    return start, old_end, new_end


class EditHistory:
    """The last MAX_EDITS edits of all files, newest last (`now` is the clock, for tests)."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        self._edits: list[RecentEdit] = []

    def record(self, path: str, old_text: str, new_text: str) -> None:
        """The file at `path` changed from `old_text` to `new_text`."""
        old = old_text.splitlines(keepends=True)
        new = new_text.splitlines(keepends=True)
        changed = changed_lines(old, new)
        if changed is None:
            return
        start, old_end, new_end = changed
        now = self._now()
        latest = self._edits[-1] if self._edits else None
        if (
            latest is not None
            and latest.path == path
            and now - latest.at <= COALESCE_S
            and latest.end <= len(old)
            and start <= latest.end + ADJACENT_LINES
            and old_end >= latest.start - ADJACENT_LINES
        ):
            self._edits.pop()
            low = min(start, latest.start)
            high = max(old_end, latest.end)  # in the text before this change
            before_lines = old[low : latest.start] + latest.old + old[latest.end : high]
            edit = RecentEdit(path, low, before_lines, new[low : high + len(new) - len(old)], now)
        else:
            edit = RecentEdit(path, start, old[start:old_end], new[start:new_end], now)
        if edit.old == edit.new:
            return  # the lines are back as they were: no edit left
        edit.before = new[max(0, edit.start - CONTEXT_LINES) : edit.start]
        edit.after = new[edit.end : edit.end + CONTEXT_LINES]
        self._edits.append(edit)
        del self._edits[:-MAX_EDITS]

    def recent(self) -> list[RecentEdit]:
        """The edits younger than MAX_AGE_S, oldest first."""
        now = self._now()
        self._edits = [edit for edit in self._edits if now - edit.at <= MAX_AGE_S]
        return list(self._edits)

    def latest(self, path: str) -> RecentEdit | None:
        """The newest edit when it is of `path` (its lines are where they are now), else None."""
        edits = self.recent()
        return edits[-1] if edits and edits[-1].path == path else None

    def forget(self, path: str) -> None:
        self._edits = [edit for edit in self._edits if edit.path != path]

    def rename(self, old_path: str, new_path: str) -> None:
        for edit in self._edits:
            if edit.path == old_path:
                edit.path = new_path


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
