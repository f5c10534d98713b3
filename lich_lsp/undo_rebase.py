"""Undoing a task's changes to one file through the user's later edits: pure, strings in.

A task changed a file in steps: each step turned its `base` into its `result` (None: the file did
not exist before, or was deleted). Since then the user may have typed, so the file's `current`
text is not the last result. To undo, every step's inverse (the hunks turning its result back
into its base, from `line_replacements(result, base)`) is rebased onto the text as it is: the
user's edits since that step are `line_replacements(result, current)`, and where no inverse hunk
overlaps one of them, the inverse hunks are shifted by the lines the user's edits before them
added or removed. Where an inverse hunk and a user edit overlap, the file is refused: undoing
would clobber what the user typed. Steps are undone newest first, each onto the text the
previous undo left.

Two hunks overlap when they share a line, or when both insert at the same place (the order of
the two insertions is unknown). A user edit identical to an inverse hunk means the user already
reverted that part by hand: it is not a conflict, there is just nothing left to do there.

Lines are split on `\\n` only and keep their terminators (the hashline convention, as in
lich_core.hashline.replacements).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from lich_core.hashline.replacements import (
    apply_replacements,
    line_replacements,
    split_keep_newline,
)
from lich_core.vocabulary import LineReplacement

Outcome = Literal["undone", "rebased", "unchanged", "refused"]


@dataclass(frozen=True)
class Step:
    """One change a task made to a file: `base` -> `result` (None: no file)."""

    base: str | None
    result: str | None


@dataclass(frozen=True)
class UndoPlan:
    """What undoing a file's steps does to its current text.

    `outcome`: "undone" (the file was as the task left it), "rebased" (the user changed it since,
    away from the task's lines), "unchanged" (nothing to undo: it already reads as before the
    task), "refused" (`reason` says why; `conflict` is the first line range, 1-based inclusive,
    of the current text where the user's edits meet the task's; for a file changed in several
    steps, of that text with the later steps already undone).
    For "undone" and "rebased", `new_text` is the text after the undo (None: delete the file) and
    `replacements` turn `current` into it (in `current`'s lines; empty for a delete or a create).
    """

    outcome: Outcome
    new_text: str | None = None
    replacements: tuple[LineReplacement, ...] = ()
    reason: str = ""
    conflict: tuple[int, int] | None = None


class Conflict(Exception):
    """An inverse hunk overlaps a user edit: `lines` is that edit's range in the current text
    (1-based, inclusive)."""

    def __init__(self, lines: tuple[int, int]) -> None:
        super().__init__(f"lines {lines[0]}-{lines[1]}")
        self.lines = lines


def line_count(text: str) -> int:
    return len(split_keep_newline(text))


def _delta(replacement: LineReplacement) -> int:
    """Lines the replacement adds (negative: removes)."""
    return line_count(replacement.text) - (replacement.end - replacement.start)


def _sorted(hunks: Sequence[LineReplacement]) -> list[LineReplacement]:
    return sorted(hunks, key=lambda h: (h.start, h.end))


def overlaps(a: LineReplacement, b: LineReplacement) -> bool:
    """Two hunks over the same old text share a line, or both insert at the same place."""
    if a.start < b.end and b.start < a.end:
        return True
    return a.start == a.end == b.start == b.end


def rebase(
    hunks: Sequence[LineReplacement], result: str, current: str
) -> tuple[LineReplacement, ...]:
    """`hunks` (over `result`'s lines) moved onto `current`, through the edits result -> current.

    Raises Conflict when a hunk overlaps one of those edits. A hunk equal to an edit is already
    in `current` and is dropped.
    """
    if result == current:
        return tuple(_sorted(hunks))
    edits = _sorted(line_replacements(result, current))
    moved: list[LineReplacement] = []
    for hunk in _sorted(hunks):
        if hunk in edits:
            continue  # the user made this very change already
        shift = 0
        for edit in edits:
            if overlaps(hunk, edit):
                first = edit.start + shift + 1
                raise Conflict((first, first + max(line_count(edit.text), 1) - 1))
            if edit.end > hunk.start:
                break  # this edit and the rest come after the hunk
            shift += _delta(edit)
        moved.append(LineReplacement(hunk.start + shift, hunk.end + shift, hunk.text))
    return tuple(moved)


def line_mapper(result: str, current: str) -> Callable[[int], int]:
    """Maps a line (0-based) of `result` to `current`: shifted by the user's edits before it; a
    line inside an edit maps to that edit's first line."""
    if result == current:
        return lambda line: line
    edits = _sorted(line_replacements(result, current))

    def map_line(line: int) -> int:
        shift = 0
        for edit in edits:
            if edit.start <= line < edit.end:
                return edit.start + shift
            if edit.end > line:
                break
            shift += _delta(edit)
        return line + shift

    return map_line


def changed_lines(step: Step) -> list[tuple[int, int]]:
    """The line ranges [start, end) of the step's result that the step wrote (for a deletion, the
    line where the removed lines were), 0-based."""
    if step.result is None:
        return []
    return [
        (hunk.start, max(hunk.end, hunk.start + 1))
        for hunk in line_replacements(step.result, step.base or "")
    ]


class _Refused(Exception):
    def __init__(self, reason: str, conflict: tuple[int, int] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.conflict = conflict


def plan_undo(steps: Sequence[Step], current: str | None) -> UndoPlan:
    """Undo `steps` (oldest first) of one file whose text is now `current` (None: no file)."""
    if not steps or current == steps[0].base:
        return UndoPlan("unchanged")
    text = current
    rebased = False
    hunks: tuple[LineReplacement, ...] | None = None
    try:
        for step in reversed(steps):
            text, hunks, moved = _undo_step(step, text)
            rebased = rebased or moved
    except _Refused as refused:
        return UndoPlan("refused", reason=refused.reason, conflict=refused.conflict)
    outcome: Outcome = "rebased" if rebased else "undone"
    if text == current:
        return UndoPlan("unchanged")
    if text is None or current is None:
        return UndoPlan(outcome, text, ())
    if len(steps) > 1 or hunks is None:
        # Several steps: one set of hunks from the text as it is to the text after the undo.
        hunks = line_replacements(current, text)
    return UndoPlan(outcome, text, hunks)


def _undo_step(
    step: Step, text: str | None
) -> tuple[str | None, tuple[LineReplacement, ...] | None, bool]:
    """(the text with `step` undone, the hunks that did it over `text`'s lines (None: a create or
    a delete), whether the user's edits were in the way); raises _Refused."""
    if step.result is None:
        # The task deleted the file: put it back, unless something is there again.
        if text is None or text == step.base:
            return step.base, None, False
        raise _Refused("the task deleted it and a file exists there again")
    if text is None:
        if step.base is None:
            return None, None, False  # the task created it and the user deleted it since
        raise _Refused("it was deleted after the task changed it")
    if step.base is None:
        # The task created it: delete it, but only as the task left it.
        if text == step.result:
            return None, None, False
        raise _Refused("the task created it and it was edited since")
    inverse = line_replacements(step.result, step.base)
    if text == step.result:
        return step.base, inverse, False
    try:
        moved = rebase(inverse, step.result, text)
    except Conflict as conflict:
        first, last = conflict.lines
        where = f"line {first}" if first == last else f"lines {first}-{last}"
        raise _Refused(
            f"edited since the task at {where}, where the task changed it", conflict.lines
        ) from None
    return apply_replacements(text, moved), moved, True
