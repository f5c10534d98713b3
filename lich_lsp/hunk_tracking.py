"""Line ranges followed through edits: pure functions over line numbers and strings, no I/O.

The review (lich_lsp.review) keeps the agent's pending hunks as line ranges of a file, and the
agent's applied lines are remembered the same way (to tell the model when the user edits them).
Whenever the text changes under those ranges (the user types, an accepted hunk lands), every
range is carried through the change here:

- an edit wholly above a range shifts it by the lines the edit added or removed;
- an edit wholly below leaves it as it is;
- an edit that touches one of its lines (or, for an insertion point, spans it) "hits" it:
  `track_span` answers None and the caller drops or reports the range, so a hunk never lands on
  lines the user changed meanwhile.

Lines are numbered from 0, ranges are [start, end) over the text split on `\\n` (the hashline
convention, lich_core.hashline.replacements); a range with start == end is an insertion point
before line `start`. An LSP range change becomes a LineEdit by `splice_line_edit` (given the text
it applies to); a whole new text (a full-document didChange, or a text that changed while nobody
watched) becomes the list of LineEdits between the two texts by `line_edits_between`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lich_core.hashline.replacements import line_replacements, split_keep_newline


@dataclass(frozen=True)
class LineEdit:
    """Old lines [start, end) became `count` new lines (0-based)."""

    start: int
    end: int
    count: int

    @property
    def delta(self) -> int:
        return self.count - (self.end - self.start)


@dataclass(frozen=True)
class Span:
    """Lines [start, end) of a text; start == end is the insertion point before line `start`."""

    start: int
    end: int


def track_span(span: Span, edit: LineEdit) -> Span | None:
    """`span` after `edit`, or None when the edit touches its lines."""
    if edit.start == edit.end and not edit.count:
        return span  # nothing changed (text retyped as it was)
    if edit.end <= span.start:
        # Wholly above (an insertion right at the span's first line counts as above).
        return Span(span.start + edit.delta, span.end + edit.delta)
    if edit.start >= span.end:
        return span
    return None


def track_spans(spans: Sequence[Span | None], edits: Sequence[LineEdit]) -> list[Span | None]:
    """Every span through `edits`, applied in order (each in the coordinates its predecessor left);
    a span hit once stays None."""
    result = list(spans)
    for edit in edits:
        result = [None if span is None else track_span(span, edit) for span in result]
    return result


def splice_line_edit(old_text: str, start: int, end: int, inserted: str) -> tuple[str, LineEdit]:
    """`old_text` with characters [start, end) replaced by `inserted` (an LSP range change, its
    positions already turned into code point offsets), and the lines that change touched.

    Only lines whose text really changed count: an editor that sends "line 1's newline up to the
    start of line 2" replaced by "newline, a new line, newline" (Neovim's way of inserting a line)
    touches neither line 1 nor line 2 — it inserts one line between them. The lines around the
    change are compared, and equal ones at either end are left out.
    """
    new_text = old_text[:start] + inserted + old_text[end:]
    first = old_text.count("\n", 0, start)
    last = old_text.count("\n", 0, end)  # the change ends on this (old) line
    old_lines = split_keep_newline(old_text)
    new_lines = split_keep_newline(new_text)
    new_last = last + inserted.count("\n") - old_text.count("\n", start, end)
    old_region = old_lines[first : last + 1]
    new_region = new_lines[first : new_last + 1]
    lead = 0
    while lead < min(len(old_region), len(new_region)) and old_region[lead] == new_region[lead]:
        lead += 1
    trail = 0
    while (
        trail < min(len(old_region), len(new_region)) - lead
        and old_region[len(old_region) - 1 - trail] == new_region[len(new_region) - 1 - trail]
    ):
        trail += 1
    return new_text, LineEdit(first + lead, first + len(old_region) - trail, len(new_region) - lead - trail)


def line_edits_between(old_text: str, new_text: str) -> list[LineEdit]:
    """LineEdits turning `old_text` into `new_text`, to apply in order (bottom of the file first,
    so each one's line numbers are still those of `old_text`)."""
    replacements = line_replacements(old_text, new_text)
    return [
        LineEdit(r.start, r.end, len(split_keep_newline(r.text))) for r in sorted(replacements, key=lambda r: -r.start)
    ]


def lines_of(text: str) -> list[str]:
    """`text` as lines with their `\\n` kept (the hashline split)."""
    return split_keep_newline(text)


def replace_lines(text: str, start: int, end: int, new_lines: str) -> str:
    """`text` with lines [start, end) replaced by `new_lines` (whole lines, terminators kept)."""
    lines = split_keep_newline(text)
    return "".join(lines[:start]) + new_lines + "".join(lines[end:])
