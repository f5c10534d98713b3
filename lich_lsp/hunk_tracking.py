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

A keystroke must not cost time in proportion to the pending hunks (2,000 of them in one file made
each keystroke take half a second): `carry_sorted` carries a list kept sorted by start line in
place, finding the ones an edit touches by bisection, and `splice_line_edit` looks only at the
lines around the change. Lines below an edit that adds or removes lines still move one by one.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

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


class Movable(Protocol):
    """A line range that moves in place (a pending hunk)."""

    start: int
    end: int


M = TypeVar("M", bound=Movable)


@dataclass
class CarryStep(Generic[M]):
    """What `carry_sorted` did for one edit: the items it hit (removed), the items it moved by
    `delta` lines, and the kept items on either side of the edit (to check them cheaply)."""

    hit: list[M] = field(default_factory=list)
    moved: list[M] = field(default_factory=list)
    delta: int = 0
    neighbours: list[M] = field(default_factory=list)

    def undo_move(self) -> None:
        for item in self.moved:
            item.start -= self.delta
            item.end -= self.delta


def carry_sorted(items: list[M], edit: LineEdit, longest: int) -> CarryStep[M]:
    """Carry `items` through `edit` in place, each as `track_span` would: those below move, those
    it touches are removed from the list.

    `items` must be sorted by start line (carrying keeps them so) and none longer than `longest`
    lines: an item the edit touches ends past the edit's first line, so it starts less than
    `longest` lines above it, and only those are looked at. The cost is a bisection, the items in
    that window, and (when the edit adds or removes lines) one step per item below it.
    """
    if edit.start == edit.end and not edit.count:
        return CarryStep()
    # Items starting at or below the edit's end are untouched by it (track_span's "wholly above"
    # test, an insertion right at an item's first line included): they move by the delta.
    below = bisect_left(items, edit.end, key=lambda item: item.start)
    step: CarryStep[M] = CarryStep(delta=edit.delta)
    if step.delta:
        step.moved = items[below:]
        for item in step.moved:
            item.start += step.delta
            item.end += step.delta
    # Above `below` an item is hit exactly when it ends past the edit's first line (an insertion
    # point included: it is hit when strictly inside the edited lines).
    index = below - 1
    hit_at: list[int] = []
    while index >= 0 and items[index].start > edit.start - longest:
        if items[index].end > edit.start:
            hit_at.append(index)
        index -= 1
    for index in hit_at:  # bottom first, so the indices still hold
        step.hit.append(items.pop(index))
    step.hit.reverse()
    below -= len(hit_at)
    step.neighbours = items[max(0, below - 1) : below + 1]
    return step


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
    # Only the changed lines are split: from the start of the line the change starts on to the end
    # of the line it ends on in the old text, and the same stretch (with the inserted text in
    # place of the old) in the new.
    region_start = old_text.rfind("\n", 0, start) + 1
    old_break = old_text.find("\n", end)
    old_region_end = len(old_text) if old_break < 0 else old_break + 1
    old_region = split_keep_newline(old_text[region_start:old_region_end])
    new_region_end = old_region_end + len(inserted) - (end - start)
    new_region = split_keep_newline(new_text[region_start:new_region_end])
    lead = 0
    while lead < min(len(old_region), len(new_region)) and old_region[lead] == new_region[lead]:
        lead += 1
    trail = 0
    while (
        trail < min(len(old_region), len(new_region)) - lead
        and old_region[len(old_region) - 1 - trail] == new_region[len(new_region) - 1 - trail]
    ):
        trail += 1
    return new_text, LineEdit(
        first + lead, first + len(old_region) - trail, len(new_region) - lead - trail
    )


def line_edits_between(old_text: str, new_text: str) -> list[LineEdit]:
    """LineEdits turning `old_text` into `new_text`, to apply in order (bottom of the file first,
    so each one's line numbers are still those of `old_text`)."""
    replacements = line_replacements(old_text, new_text)
    return [
        LineEdit(r.start, r.end, len(split_keep_newline(r.text)))
        for r in sorted(replacements, key=lambda r: -r.start)
    ]


def lines_of(text: str) -> list[str]:
    """`text` as lines with their `\\n` kept (the hashline split)."""
    return split_keep_newline(text)
