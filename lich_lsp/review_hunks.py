"""The review's pieces (lich_lsp.review): a pending hunk, a file's hunks, the notes for the model,
and the line arithmetic over them; also the agent's applied lines and the user's edits to them
(apply mode). No editor, no I/O: the store (lich_lsp.review_tracking, lich_lsp.review_apply,
lich_lsp.review) keeps them."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from lich_core.hashline.replacements import line_replacements
from lich_core.vocabulary import LineReplacement
from lich_core.workspace import FileChange
from lich_lsp.edits import PositionMapper
from lich_lsp.hunk_tracking import (
    LineEdit,
    Span,
    line_edits_between,
    lines_of,
    track_span,
    track_spans,
)

if TYPE_CHECKING:
    pass

REVIEW_SOURCE = "lich review"
REVIEW_KIND = "quickfix.lich.review"
# Lines of a hunk shown in its diagnostic message and in a note to the model.
PREVIEW_MAX_LINES = 12
PREVIEW_LINE_MAX_CHARS = 200
# Notes waiting for the model's next turn; older ones are dropped first (the count is said).
MAX_MODEL_NOTES = 20
NOTE_MAX_CHARS = 2_000


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _clip_line(line: str) -> str:
    line = line.rstrip("\r\n")
    return line if len(line) <= PREVIEW_LINE_MAX_CHARS else line[: PREVIEW_LINE_MAX_CHARS - 1] + "…"


def preview(text: str, prefix: str) -> list[str]:
    lines = lines_of(text)
    shown = [prefix + _clip_line(line) for line in lines[:PREVIEW_MAX_LINES]]
    if len(lines) > PREVIEW_MAX_LINES:
        shown.append(f"{prefix}… ({len(lines) - PREVIEW_MAX_LINES} more lines)")
    return shown


class ModelNotes:
    """Notes for the model's next turn (the user's answers and edits in the editor), drained once."""

    def __init__(self) -> None:
        self._notes: deque[str] = deque()
        self._dropped = 0

    def add(self, note: str) -> None:
        note = note.strip()
        if not note:
            return
        if len(note) > NOTE_MAX_CHARS:
            note = note[: NOTE_MAX_CHARS - 1] + "…"
        self._notes.append(note)
        while len(self._notes) > MAX_MODEL_NOTES:
            self._notes.popleft()
            self._dropped += 1

    def drain(self) -> list[str]:
        notes = list(self._notes)
        if self._dropped:
            notes.insert(0, f"({self._dropped} older notes were dropped)")
        self._notes.clear()
        self._dropped = 0
        return notes

    def __len__(self) -> int:
        return len(self._notes)


@dataclass(eq=False)
class Hunk:
    hunk_id: str
    task_id: str
    label: str  # the task's edit label, "lich: <title>"
    start: int  # old lines [start, end) of ReviewFile.text (start == end: insert before `start`)
    end: int
    old_text: str  # those lines as they were when the hunk was proposed
    new_text: str  # what replaces them (whole lines)

    @property
    def span(self) -> Span:
        return Span(self.start, self.end)

    def summary(self) -> str:
        removed, added = self.end - self.start, len(lines_of(self.new_text))
        if not removed:
            return f"insert {plural(added, 'line')} before line {self.start + 1}"
        where = f"line {self.start + 1}" if removed == 1 else f"lines {self.start + 1}-{self.end}"
        if not added:
            return f"delete {where}"
        return f"replace {where} with {plural(added, 'line')}"


@dataclass(eq=False)
class ReviewFile:
    path: Path
    uri: str
    text: str  # the file's text the hunks' line numbers refer to
    # Sorted by start line (propose sorts them, carrying keeps the order): an edit finds the hunks
    # it touches by bisection (hunk_tracking.carry_sorted).
    hunks: list[Hunk] = field(default_factory=list)
    # No hunk of the file is longer than this many lines (a bound: only ever raised).
    longest: int = 0
    # `text`'s line starts for the hunks' ranges, built once per text: (text, mapper, line starts).
    geometry: tuple[str, PositionMapper, list[int]] | None = None
    # An accepted hunk is on its way to the editor: its echo (didChange) must not count as the
    # user's edit; the file catches up after the answer (ReviewStore.accept).
    busy: bool = False
    # Accepts whose answer lich stopped waiting for (timeout, cancel): (hunks, text they were
    # sent against, text they make). The editor applying one late is that accept, not the user.
    unanswered: list[tuple[list[Hunk], str, str]] = field(default_factory=list)


@dataclass
class ProposeOutcome:
    hunks: int = 0
    files: list[str] = field(default_factory=list)  # workspace-relative names
    dropped: list[str] = field(default_factory=list)  # one line each, for the user


def _line_count(text: str) -> int:
    """How many lines `lines_of(text)` has, without splitting the text."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def hunks_on_lines(review_file: ReviewFile, first: int, last: int) -> list[Hunk]:
    """The file's hunks whose shown lines (`shown_lines`) meet lines [first, last], in the file's
    order. The hunks are sorted by start line and none is longer than `review_file.longest`: only
    those starting up to that many lines above `first` are looked at, not every hunk (a code
    action request comes with every cursor move)."""
    hunks = review_file.hunks
    count = _line_count(review_file.text)
    # Hunks starting at or past the end are shown on the last line (see shown_lines).
    tail = bisect_left(hunks, count, key=lambda h: h.start) if count else len(hunks)
    here: list[Hunk] = []
    index = min(tail, bisect_right(hunks, last, key=lambda h: h.start)) - 1
    while index >= 0 and hunks[index].start > first - max(review_file.longest, 1):
        hunk = hunks[index]
        if max(hunk.end, hunk.start + 1) > first:
            here.append(hunk)
        index -= 1
    here.reverse()
    if tail < len(hunks) and count - 1 <= last and count > first:
        here.extend(hunks[tail:])
    return here


def shown_lines(hunk: Hunk, count: int) -> tuple[int, int]:
    """The lines [first, last) a hunk's diagnostic covers (`count`: the text's line count): its own,
    or for an insertion the line it goes before (the last line for one at the end): never none,
    while the text has a line."""
    first, last = hunk.start, max(hunk.end, hunk.start + 1)
    if first >= count and count:
        first, last = count - 1, count
    return first, last


def task_title(label: str) -> str:
    return label[len("lich: ") :] if label.startswith("lich: ") else label


def range_json(value: types.Range) -> dict[str, Any]:
    return {
        "start": {"line": value.start.line, "character": value.start.character},
        "end": {"line": value.end.line, "character": value.end.character},
    }


def change_offsets(text: str, codec: PositionCodec, change_range: types.Range) -> tuple[int, int]:
    """Code point offsets of an LSP range in `text`, as pygls' TextDocument.offset_at_position
    computes them (its line split, its clamping), so the replay lands where pygls applied the
    change; the text is split once, not once per position and sum."""
    lines = tuple(text.splitlines(True))
    start = codec.position_from_client_units(lines, change_range.start)
    end = codec.position_from_client_units(lines, change_range.end)
    return (
        start.character + sum(map(len, lines[: start.line])),
        end.character + sum(map(len, lines[: end.line])),
    )


def lines_match(lines: Sequence[str], hunk: Hunk) -> bool:
    """Whether lines [start, end) of a text split on `\\n` (`lines`) read the hunk's old text, as
    `"".join(lines_of(text)[start:end])` would (without splitting the text per hunk)."""
    if hunk.end <= hunk.start:
        return hunk.old_text == ""
    body = "\n".join(lines[hunk.start : hunk.end])
    return (body + "\n" if hunk.end < len(lines) else body) == hunk.old_text


def without_overlaps(hunks: Sequence[Hunk]) -> list[Hunk]:
    """Hunks of one file that can go out as one edit. Hunks of one task never overlap; one of
    another task that does is left out (the accepted hunk then hits it, and it is dropped)."""
    kept: list[Hunk] = []
    for hunk in sorted(hunks, key=lambda h: (h.start, h.end)):
        if kept:
            previous = kept[-1]
            same_insertion = hunk.start == hunk.end == previous.start == previous.end
            if hunk.start < previous.end or same_insertion:
                continue
        kept.append(hunk)
    return kept


def applied_text(text: str, hunks: Sequence[Hunk]) -> tuple[str, list[LineReplacement]]:
    """`text` with the (non-overlapping) hunks applied, and their replacements in its coordinates."""
    lines = lines_of(text)
    out: list[str] = []
    position = 0
    replacements: list[LineReplacement] = []
    for hunk in sorted(hunks, key=lambda h: h.start):
        out.extend(lines[position : hunk.start])
        out.append(hunk.new_text)
        replacements.append(LineReplacement(hunk.start, hunk.end, hunk.new_text))
        position = hunk.end
    out.extend(lines[position:])
    return "".join(out), replacements


# --- the agent's applied lines, and the user's edits to them during a task ---


@dataclass(eq=False)
class AgentLines:
    """The lines the agent changed in one file during a task (apply mode), in `text`'s numbering."""

    text: str  # the file's text when the spans were last carried
    spans: list[Span] = field(default_factory=list)


def _overlaps(span: Span, start: int, end: int) -> bool:
    return track_span(span, LineEdit(start, end, 0)) is None


def record_agent_lines(lines: AgentLines | None, change: FileChange) -> AgentLines | None:
    """`lines` after the agent applied `change` (a write): its new lines join the spans, and the
    earlier spans move with it (those it rewrote are replaced by the new ones)."""
    if change.kind != "write" or change.new_text is None:
        return None
    base = change.base_text or ""
    spans: list[Span | None] = []
    if lines is not None:
        spans = list(lines.spans)
        if lines.text != base:
            spans = track_spans(spans, line_edits_between(lines.text, base))
    ordered = sorted(change.replacements, key=lambda r: r.start)
    steps = [LineEdit(r.start, r.end, len(lines_of(r.text))) for r in reversed(ordered)]
    carried = [span for span in track_spans(spans, steps) if span is not None]
    offset = 0
    for r in ordered:
        count = len(lines_of(r.text))
        if count:
            carried.append(Span(r.start + offset, r.start + offset + count))
        offset += count - (r.end - r.start)
    return AgentLines(change.new_text, sorted(carried, key=lambda s: (s.start, s.end)))


def user_edit_note(rel: str, lines: AgentLines, current: str | None) -> str | None:
    """A note when the text moved on from `lines.text` in a way that touches the agent's lines
    (the user edited them); carries `lines` to `current` either way."""
    if current == lines.text:
        return None
    if current is None:
        lines.spans, lines.text = [], ""
        return f"{rel}, which you edited, no longer exists."
    replacements = sorted(line_replacements(lines.text, current), key=lambda r: r.start)
    hit_rows: list[str] = []
    offset = 0
    new_lines = lines_of(current)
    for r in replacements:
        count = len(lines_of(r.text))
        if any(_overlaps(span, r.start, r.end) for span in lines.spans):
            start = r.start + offset
            shown = new_lines[start : start + count]
            where = f"line {start + 1}" if count == 1 else f"lines {start + 1}-{start + count}"
            hit_rows.append(
                f"{where} now read:" if count else f"the lines before line {start + 1} were deleted"
            )
            hit_rows.extend("  " + _clip_line(line) for line in shown[:PREVIEW_MAX_LINES])
        offset += count - (r.end - r.start)
    survivors = track_spans(lines.spans, line_edits_between(lines.text, current))
    lines.spans = [span for span in survivors if span is not None]
    lines.text = current
    if not hit_rows:
        return None
    return "\n".join(
        [
            f"The user edited lines you had changed in {rel}:",
            *hit_rows,
            "Keep the user's version (do not revert it); read the file again before editing near it.",
        ]
    )


# --- user-facing words for a review's outcome (the model keeps the error prefixes) ---


def user_review_message(note: str) -> str:
    """Plain words for a review note that carries a machine prefix (`edit_rejected: ...`)."""
    text = note
    for prefix in (
        "edit_rejected: ",
        "review_declined: ",
        "review_unavailable: ",
        "stale_document: ",
        "review_cancelled: ",
    ):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    return text[:1].upper() + text[1:] if text else note
