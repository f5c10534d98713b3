"""Line ranges through edits (lich_lsp.hunk_tracking) and the agent's lines (lich_lsp.review),
as pure functions: no server, no editor."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lich_core.workspace import FileChange, user_notes_message
from lich_lsp.hunk_tracking import (
    LineEdit,
    Span,
    line_edits_between,
    lines_of,
    splice_line_edit,
    track_span,
    track_spans,
)
from lich_lsp.review_hunks import AgentLines, ModelNotes, record_agent_lines, user_edit_note

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (LineEdit(0, 1, 1), Span(4, 6)),  # a line above retyped: no shift
        (LineEdit(0, 0, 2), Span(6, 8)),  # two lines inserted at the top
        (LineEdit(1, 3, 0), Span(2, 4)),  # two lines above deleted
        (LineEdit(4, 4, 1), Span(5, 7)),  # a line inserted right above the span
        (LineEdit(3, 4, 2), Span(5, 7)),  # Enter at the end of the line above
        (LineEdit(6, 6, 3), Span(4, 6)),  # an insertion right below
        (LineEdit(7, 9, 0), Span(4, 6)),  # lines below deleted
        (LineEdit(4, 5, 1), None),  # its first line retyped
        (LineEdit(5, 6, 1), None),  # its last line retyped
        (LineEdit(3, 5, 1), None),  # a join of the line above with its first line
        (LineEdit(5, 5, 1), None),  # an insertion between its lines
        (LineEdit(0, 10, 10), None),  # everything replaced
    ],
)
def test_track_span(edit: LineEdit, expected: Span | None) -> None:
    assert track_span(Span(4, 6), edit) == expected


def test_an_empty_edit_changes_nothing() -> None:
    assert track_span(Span(1, 4), LineEdit(2, 2, 0)) == Span(1, 4)


def test_an_insertion_point_moves_with_edits_around_it_and_is_hit_only_when_spanned() -> None:
    point = Span(3, 3)
    assert track_span(point, LineEdit(3, 3, 2)) == Span(5, 5)  # the user's lines go above it
    assert track_span(point, LineEdit(3, 4, 1)) == point  # the line after it retyped
    assert track_span(point, LineEdit(2, 3, 1)) == point  # the line before it retyped
    assert track_span(point, LineEdit(2, 4, 1)) is None  # both neighbours joined over it


TEXT = "zero\none\ntwo\nthree\nfour\n"


def _splice(old_range: tuple[int, int], inserted: str) -> tuple[str, LineEdit]:
    return splice_line_edit(TEXT, old_range[0], old_range[1], inserted)


def _offset(line: int, column: int = 0) -> int:
    return sum(len(part) for part in TEXT.splitlines(keepends=True)[:line]) + column


@pytest.mark.parametrize(
    ("start", "end", "inserted", "expected"),
    [
        ((3, 2), (3, 2), "x", LineEdit(3, 4, 1)),  # typing inside a line touches that line
        ((3, 0), (3, 0), "new\n", LineEdit(3, 3, 1)),  # a whole line typed above line 3
        ((3, 0), (3, 0), "a\r\nb\r\n", LineEdit(3, 3, 2)),  # CRLF lines
        ((3, 0), (5, 0), "", LineEdit(3, 5, 0)),  # whole lines deleted
        ((2, 3), (2, 3), "\n", LineEdit(3, 3, 1)),  # Enter at the end of line 2: a line after it
        ((2, 3), (3, 0), "\nnew\n", LineEdit(3, 3, 1)),  # Neovim's insertion between 2 and 3
        ((2, 3), (3, 0), "", LineEdit(2, 4, 1)),  # lines 2 and 3 joined
        ((3, 0), (3, 0), "x", LineEdit(3, 4, 1)),  # text at the start of a line is inside it
        ((5, 0), (5, 0), "five\n", LineEdit(5, 5, 1)),  # appended at the end
        ((1, 0), (1, 3), "one", LineEdit(2, 2, 0)),  # retyped identically: nothing changed
    ],
)
def test_splice_line_edit(
    start: tuple[int, int], end: tuple[int, int], inserted: str, expected: LineEdit
) -> None:
    new_text, line_edit = _splice((_offset(*start), _offset(*end)), inserted)
    assert line_edit == expected
    old_lines, new_lines = lines_of(TEXT), lines_of(new_text)
    # The lines outside the edit are the old ones, in order.
    assert new_lines[: line_edit.start] == old_lines[: line_edit.start]
    assert new_lines[line_edit.start + line_edit.count :] == old_lines[line_edit.end :]


def _apply(text: str, edit: LineEdit, new_lines: list[str]) -> str:
    assert len(new_lines) == edit.count
    lines = lines_of(text)
    return "".join(lines[: edit.start] + new_lines + lines[edit.end :])


def test_typing_above_keeps_a_span_on_its_own_lines_through_a_sequence() -> None:
    text = "".join(f"line {n}\n" for n in range(10))
    span = Span(5, 7)
    steps = [
        (LineEdit(0, 0, 1), ["import os\n"]),
        (LineEdit(2, 3, 1), ["line 1 changed\n"]),
        (LineEdit(3, 3, 2), ["a\n", "b\n"]),
        (LineEdit(11, 12, 0), []),  # below the span (now lines 8-9): a deletion
    ]
    tracked: Span | None = span
    for edit, new_lines in steps:
        text = _apply(text, edit, new_lines)
        assert tracked is not None
        tracked = track_span(tracked, edit)
    assert tracked == Span(8, 10)
    assert lines_of(text)[tracked.start : tracked.end] == ["line 5\n", "line 6\n"]


LINES = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "pass\n", "\n", "x = 1\n"]), max_size=12)


@settings(max_examples=200, deadline=None)
@given(old=LINES, new=LINES, start=st.integers(0, 12), length=st.integers(0, 3))
def test_a_span_the_diff_keeps_still_holds_its_lines(
    old: list[str], new: list[str], start: int, length: int
) -> None:
    """Whatever the texts, a span carried through line_edits_between (not hit) covers the same
    lines in the new text as in the old."""
    start = min(start, len(old))
    end = min(start + length, len(old))
    old_text, new_text = "".join(old), "".join(new)
    (carried,) = track_spans([Span(start, end)], line_edits_between(old_text, new_text))
    if carried is not None:
        assert lines_of(new_text)[carried.start : carried.end] == old[start:end]


def test_line_edits_between_come_bottom_first() -> None:
    edits = line_edits_between("a\nb\nc\nd\n", "A\nb\nc\nD\nE\n")
    assert edits == [LineEdit(3, 4, 2), LineEdit(0, 1, 1)]


# --- the agent's lines, and the user's edits to them ---


def test_the_user_editing_the_agents_lines_is_one_note_and_edits_elsewhere_none() -> None:
    base = "".join(f"v{n} = {n}\n" for n in range(8))
    agent = base.replace("v3 = 3\n", "v3 = 30\nv3b = 31\n")
    lines = record_agent_lines(None, FileChange.write(Path("/ws/m.py"), agent, base))
    assert lines is not None and lines.spans == [Span(3, 5)]
    above = "# header\n" + agent
    assert user_edit_note("m.py", lines, above) is None  # typing above: nothing to say
    assert lines.spans == [Span(4, 6)]
    edited = above.replace("v3 = 30\n", "v3 = 300  # mine\n")
    note = user_edit_note("m.py", lines, edited)
    assert note is not None
    assert note.startswith("The user edited lines you had changed in m.py:")
    assert "line 5 now read:\n  v3 = 300  # mine" in note
    assert "do not revert it" in note
    assert user_edit_note("m.py", lines, edited) is None  # said once


def test_a_later_agent_edit_carries_the_earlier_lines() -> None:
    base = "a\nb\nc\nd\n"
    first = record_agent_lines(None, FileChange.write(Path("/ws/f"), "a\nB\nc\nd\n", base))
    second = record_agent_lines(
        first, FileChange.write(Path("/ws/f"), "new\na\nB\nc\nd\n", "a\nB\nc\nd\n")
    )
    assert second is not None and second.spans == [Span(0, 1), Span(2, 3)]


def test_model_notes_are_drained_once_bounded_and_formatted() -> None:
    notes = ModelNotes()
    for n in range(25):
        notes.add(f"note {n}\nsecond line")
    drained = notes.drain()
    assert drained[0] == "(5 older notes were dropped)" and drained[-1] == "note 24\nsecond line"
    assert notes.drain() == []

    class Source:
        def __init__(self) -> None:
            self.notes = ["first", "two\nlines"]

        def drain_user_notes(self) -> list[str]:
            out, self.notes = self.notes, []
            return out

    source = Source()
    assert (
        user_notes_message(source)
        == "[lich] Since your last step, in the editor:\n- first\n- two\n  lines"
    )
    assert user_notes_message(source) is None


def test_agent_lines_forget_a_deleted_file() -> None:
    lines = AgentLines("a\n", [Span(0, 1)])
    assert user_edit_note("gone.py", lines, None) == "gone.py, which you edited, no longer exists."
    assert lines.spans == []
