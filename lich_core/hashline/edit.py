"""Validate and apply parsed hashline ops to file texts (pure: strings in, strings out).

Validation re-hashes every anchor against the *current* text; read state only says whether the
file was seen. Any problem in any file rejects the whole patch. Applying sorts inserts after line
N at N+½ and before line N at N−½ (equal positions keep patch order), builds the new text, and
derives the minimal line-range replacements the editor layer turns into small TextEdits, with
`line_replacements` (hashline/replacements.py) over each changed region, the one function every
FileChange producer uses.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field

from lich_core.hashline.anchors import line_hash, line_hash_values, render_rows, split_lines
from lich_core.hashline.byte_lines import ByteLines
from lich_core.hashline.patch import PatchOp, quote
from lich_core.hashline.replacements import line_replacements, split_keep_newline
from lich_core.vocabulary import LineReplacement, ToolError

# Lines of unchanged context shown around each changed region in an edit result.
RESULT_CONTEXT_LINES = 2
# Rows shown per file in an edit result; past this the result says how to read the rest.
MAX_RESULT_ROWS_PER_FILE = 200
MAX_PROBLEMS_SHOWN = 12


class PatchRejected(ToolError):
    """One or more problems; nothing of the patch may be written."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        shown = self.problems[:MAX_PROBLEMS_SHOWN]
        more = len(self.problems) - len(shown)
        text = "\n".join(shown)
        if more > 0:
            text += f"\n(... {more} more problems)"
        super().__init__(text + "\nNothing was written; fix the patch and send it again.")


@dataclass
class FileTarget:
    """One file a patch touches: its current text (None when it does not exist) and its ops.

    `lines`, when the caller has them cheaper than splitting the text (ByteLines over the bytes
    the text was read from), are split_lines(text); None means plan_edits splits the text.
    """

    display: str
    text: str | None
    was_read: bool
    ops: list[PatchOp] = field(default_factory=list)
    lines: Sequence[str] | None = field(default=None, repr=False, compare=False)


class NewLines:
    """A new text's lines (each without its "\n") as runs, in order: (start, end) for the old
    lines [start, end), or a list of new lines. Read a few at a time, nothing is copied but
    what is read; `all()` builds the whole list (slices of the old lines, no line copied one by
    one)."""

    def __init__(self, old: Sequence[str], runs: list[tuple[int, int] | list[str]]) -> None:
        self._old = old
        self._runs = runs
        self._starts: list[int] = []  # the new line index each run starts at
        count = 0
        for run in runs:
            self._starts.append(count)
            count += run[1] - run[0] if isinstance(run, tuple) else len(run)
        self.count = count

    def between(self, low: int, high: int) -> list[str]:
        """New lines [low, high)."""
        lines: list[str] = []
        index = max(0, bisect_right(self._starts, low) - 1)
        while index < len(self._runs) and low < high:
            run, start = self._runs[index], self._starts[index]
            size = run[1] - run[0] if isinstance(run, tuple) else len(run)
            if low < start + size:
                take_low, take_high = low - start, min(high, start + size) - start
                if isinstance(run, tuple):
                    lines += self._old[run[0] + take_low : run[0] + take_high]
                else:
                    lines += run[take_low:take_high]
                low = start + take_high
            index += 1
        return lines

    def all(self) -> list[str]:
        lines: list[str] = []
        for run in self._runs:
            lines += self._old[run[0] : run[1]] if isinstance(run, tuple) else run
        return lines


@dataclass
class FileEdit:
    display: str
    old_text: str | None
    replacements: tuple[LineReplacement, ...]
    added: int
    removed: int
    # New-text line ranges [start, end) (0-based) the ops touched, for the result rows.
    regions: list[tuple[int, int]]
    # (old_start, old_end, new_start, new_end): each merged change, before trimming.
    hunks: list[tuple[int, int, int, int]] = field(default_factory=list)
    # The new text: as a text, as its lines (each without its "\n"), or as runs of old and new
    # lines (apply_ops makes those). The lines and the text are built only when asked for: a
    # disk write splices bytes and the result rows read a few lines; neither needs them.
    _text: str | None = field(default=None, repr=False)
    _lines: list[str] | None = field(default=None, repr=False, compare=False)
    _runs: NewLines | None = field(default=None, repr=False, compare=False)

    @property
    def created(self) -> bool:
        return self.old_text is None

    @property
    def new_text(self) -> str:
        if self._text is None:
            # Built from the lines; an edit made with neither text nor lines is an empty text.
            lines = self.new_lines() if self._lines is not None or self._runs is not None else []
            if lines:
                lines.append("")  # the final newline, without copying the joined text again
                try:
                    self._text = "\n".join(lines)
                finally:
                    lines.pop()
            else:
                self._text = ""
        return self._text

    @new_text.setter
    def new_text(self, text: str) -> None:
        self._text = text
        self._lines = None
        self._runs = None

    def new_lines(self) -> list[str]:
        """split_lines(new_text), made once."""
        if self._lines is None:
            self._lines = self._runs.all() if self._runs is not None else split_lines(self.new_text)
            self._runs = None  # the list says it all now (and the runs kept the old lines alive)
        return self._lines

    def new_line_count(self) -> int:
        if self._lines is None and self._runs is not None:
            return self._runs.count
        return len(self.new_lines())

    def new_lines_between(self, low: int, high: int) -> list[str]:
        """new_lines()[low:high], without building the rest."""
        if self._lines is None and self._runs is not None:
            return self._runs.between(low, high)
        return self.new_lines()[low:high]


@dataclass
class _Slot:
    """Old lines [start, end) become `lines` (contents without terminators)."""

    start: int
    end: int
    lines: list[str]
    is_range: bool
    order: int


def uses_crlf(text: str) -> bool:
    """The file's line-ending style: CRLF when most of its newlines are CRLF."""
    if "\r" not in text:  # one scan instead of two counts, for the usual file
        return False
    newlines = text.count("\n")
    return newlines > 0 and text.count("\r\n") * 2 > newlines


def bytes_use_crlf(data: bytes) -> bool:
    """uses_crlf for the text's bytes (a byte scan is several times cheaper than a wide str's)."""
    if b"\r" not in data:
        return False
    newlines = data.count(b"\n")
    return newlines > 0 and data.count(b"\r\n") * 2 > newlines


def validate(target: FileTarget, lines: Sequence[str] | None = None) -> list[str]:
    """Every problem with `target`'s ops against its current text (empty when valid).

    `lines`, when given, is split_lines(target.text), already made.
    """
    name = target.display
    if target.text is None:
        if any(op.start is not None for op in target.ops):
            return [
                f"not_found: {name} does not exist; anchors need an existing file "
                "(create a file with bare `+` inserts only, or with write_file)"
            ]
        return []
    if not target.was_read:
        return [
            f"not_read: {name} has not been read in this session; read it with read_file (or find it with grep_files) first"
        ]
    if lines is None:
        lines = split_lines(target.text)
    count = len(lines)
    problems: list[str] = []
    for op in target.ops:
        anchors = [op.start] if not op.is_range else [op.start, op.end]
        if op.is_range and op.start == op.end:
            anchors = [op.start]
        for anchor in anchors:
            if anchor is None:
                continue
            if anchor.line < 1 or anchor.line > count:
                where = "lines start at 1" if anchor.line < 1 else f"the file has {count} lines"
                problems.append(
                    f"out_of_range: {name}: anchor {anchor} ({_op_ref(op)}) is outside the file ({where}); "
                    f"re-read {name} and take the anchor from its rows"
                )
                continue
            current = lines[anchor.line - 1]
            digest = line_hash(current)
            if digest != anchor.digest:
                low = max(1, anchor.line - 2)
                problems.append(
                    f"stale_anchor: {name} line {anchor.line}: anchor {anchor} ({_op_ref(op)}) no longer "
                    f"matches; the line is now {anchor.line}:{digest}|{_short(current)} ; re-read {name} "
                    f"(read_file start={low} end={anchor.line + 2})"
                )
    problems.extend(_overlap_problems(name, target.ops))
    return problems


def _op_ref(op: PatchOp) -> str:
    """Where an op is in the patch: its line number and its text, quoted."""
    return f"patch line {op.patch_line} {quote(op.source)}"


def _short(line: str, limit: int = 80) -> str:
    return line if len(line) <= limit else line[:limit] + "..."


def _overlap_problems(name: str, ops: Sequence[PatchOp]) -> list[str]:
    ranges = sorted((op for op in ops if op.is_range), key=lambda op: (op.start.line, op.end.line))  # type: ignore[union-attr]
    problems: list[str] = []
    for index, first in enumerate(ranges):
        for second in ranges[index + 1 :]:
            if second.start.line > first.end.line:  # type: ignore[union-attr]
                break
            problems.append(
                f"overlap: {name}: ranges {first.span_text()} ({_op_ref(first)}) and "
                f"{second.span_text()} ({_op_ref(second)}) overlap; merge them into one op"
            )
    for op in ops:
        if op.is_range or op.start is None:
            continue
        # Position of the insert in half-lines: after N is N+½, before N is N−½.
        position = op.start.line + (0.5 if op.kind == "insert_after" else -0.5)
        for span in ranges:
            if span.start.line - 0.5 < position < span.end.line + 0.5:  # type: ignore[union-attr]
                problems.append(
                    f"overlap: {name}: insert at {op.span_text()} ({_op_ref(op)}) falls inside range "
                    f"{span.span_text()} ({_op_ref(span)}); put those lines in the range's payload "
                    "or anchor the insert outside the range"
                )
    return problems


def _slots(ops: Sequence[PatchOp], count: int) -> list[_Slot]:
    slots: list[_Slot] = []
    for order, op in enumerate(ops):
        if op.is_range:
            assert op.start is not None and op.end is not None
            payload = op.payload if op.kind == "replace" else []
            slots.append(_Slot(op.start.line - 1, op.end.line, list(payload), True, order))
            continue
        if op.start is None:
            gap = count if op.kind == "insert_after" else 0
        else:
            gap = op.start.line if op.kind == "insert_after" else op.start.line - 1
        slots.append(_Slot(gap, gap, list(op.payload), False, order))
    # Inserts at a gap go before a range that starts there; equal positions keep patch order.
    slots.sort(key=lambda slot: (slot.start, slot.is_range, slot.order))
    return slots


def apply_ops(target: FileTarget, lines: Sequence[str] | None = None) -> FileEdit:
    """Apply validated ops (call validate first). The new text ends with a newline.

    `lines`, when given, is split_lines(target.text), already made. The new text is kept as
    runs of old lines and payload lines (FileEdit.new_lines builds the list, FileEdit.new_text
    joins it, each when first asked for).
    """
    old_text = target.text or ""
    old_lines = split_lines(old_text) if lines is None else lines
    count = len(old_lines)
    crlf = (
        bytes_use_crlf(old_lines.data) if isinstance(old_lines, ByteLines) else uses_crlf(old_text)
    )

    def terminated(line: str) -> str:
        # A payload line as a line of the new text (split on "\n"): CRLF files keep their "\r".
        return line + "\r" if crlf and not line.endswith("\r") else line

    slots = _slots(target.ops, count)
    has_final_newline = old_text.endswith("\n") or count == 0
    if not has_final_newline and not any(
        slot.is_range and slot.start <= count - 1 < slot.end for slot in slots
    ):
        # The last line gains its terminator, so it is part of the change.
        slots.append(_Slot(count - 1, count, [old_lines[-1]], True, len(slots)))
        slots.sort(key=lambda slot: (slot.start, slot.is_range, slot.order))

    # Every line of the new text ends with a newline: an unterminated last old line is always
    # replaced (above), so the new lines joined by "\n" plus a final "\n" are the new text.
    runs: list[tuple[int, int] | list[str]] = []
    new_count = 0
    merged: list[tuple[int, int, list[str]]] = []
    merged_new_starts: list[int] = []
    regions: list[tuple[int, int]] = []
    added = removed = 0
    cursor = 0
    for slot in slots:
        if slot.start > cursor:
            runs.append((cursor, slot.start))
            new_count += slot.start - cursor
        cursor = max(cursor, slot.start)
        payload = [terminated(line) for line in slot.lines]
        region_start = new_count
        if payload:
            runs.append(payload)
            new_count += len(payload)
        cursor = max(cursor, slot.end)
        if slot.order < len(target.ops):
            added += len(slot.lines)
            removed += slot.end - slot.start
        regions.append((region_start, new_count))
        if merged and merged[-1][1] >= slot.start:
            merged[-1] = (merged[-1][0], slot.end, merged[-1][2] + payload)
        else:
            merged.append((slot.start, slot.end, payload))
            merged_new_starts.append(region_start)
    if cursor < count:
        runs.append((cursor, count))

    replacements = _region_replacements(old_lines, has_final_newline, merged)
    hunks = [
        (start, end, new_start, new_start + len(payload))
        for (start, end, payload), new_start in zip(merged, merged_new_starts, strict=True)
    ]
    return FileEdit(
        target.display,
        target.text,
        replacements,
        added,
        removed,
        _merge_regions(regions),
        hunks,
        _runs=NewLines(old_lines, runs),
    )


def _region_replacements(
    old_lines: Sequence[str], has_final_newline: bool, merged: list[tuple[int, int, list[str]]]
) -> tuple[LineReplacement, ...]:
    """line_replacements over each merged region (old lines [start, end) -> new lines), in file lines.

    Regions are separated by lines no op touched, so the result is minimal over the whole file
    too (no replacement touches another) without diffing the untouched rest of a large file.
    """
    count = len(old_lines)
    result: list[LineReplacement] = []
    for start, end, lines in merged:
        old = "".join(line + "\n" for line in old_lines[start:end])
        if end == count and not has_final_newline and old:
            old = old[:-1]  # the file's last line has no terminator
        new = "".join(line + "\n" for line in lines)
        for item in line_replacements(old, new):
            result.append(LineReplacement(start + item.start, start + item.end, item.text))
    return tuple(result)


def _merge_regions(regions: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(regions):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def edit_from_texts(display: str, old_text: str | None, new_text: str) -> FileEdit:
    """A FileEdit for a new text not built from ops (a repaired or accepted text)."""
    replacements = line_replacements(old_text or "", new_text)
    hunks: list[tuple[int, int, int, int]] = []
    shift = 0  # new line index minus old line index after the replacements so far
    for item in replacements:
        count = len(split_keep_newline(item.text))
        hunks.append((item.start, item.end, item.start + shift, item.start + shift + count))
        shift += count - (item.end - item.start)
    return FileEdit(
        display,
        old_text,
        replacements,
        added=sum(new_end - new_start for _, _, new_start, new_end in hunks),
        removed=sum(old_end - old_start for old_start, old_end, _, _ in hunks),
        regions=[(new_start, new_end) for _, _, new_start, new_end in hunks],
        hunks=hunks,
        _text=new_text,
    )


def plan_edits(targets: Sequence[FileTarget]) -> list[FileEdit]:
    """Validate every target, then apply; raise PatchRejected listing every problem."""
    problems: list[str] = []
    # Each file is split once (unless its lines came with it), for validation and for applying.
    split = [
        target.lines
        if target.lines is not None
        else split_lines(target.text)
        if target.text is not None
        else []
        for target in targets
    ]
    for target, lines in zip(targets, split, strict=True):
        problems.extend(validate(target, lines))
    if problems:
        raise PatchRejected(problems)
    return [apply_ops(target, lines) for target, lines in zip(targets, split, strict=True)]


def render_edit_result(
    edit: FileEdit, context: int = RESULT_CONTEXT_LINES, verb: str = "Edited"
) -> str:
    """`Edited PATH (+added -removed)` and fresh anchored rows around each changed region.

    A file the patch created reads "Edited" too: the format is kli's, byte for byte (the tool's
    details say which files are new).
    """
    header = f"{verb} {edit.display} (+{edit.added} -{edit.removed})"
    line_count = edit.new_line_count()
    if not line_count:
        return header + "\n(empty file)"
    windows: list[tuple[int, int]] = []
    for start, end in edit.regions:
        low = max(0, start - context)
        high = min(line_count, max(end, start) + context)
        if windows and low <= windows[-1][1]:
            windows[-1] = (windows[-1][0], max(windows[-1][1], high))
        else:
            windows.append((low, high))
    # The text around the rows first, with a slot for each run of rows; then every row shown is
    # hashed in one batch (many small windows would each take the per-line path).
    parts: list[str | tuple[int, int]] = [header]
    shown = 0
    for index, (low, high) in enumerate(windows):
        if shown >= MAX_RESULT_ROWS_PER_FILE:
            rest = windows[index:]
            parts.append(
                f"(more changes at lines {', '.join(f'{a + 1}-{b}' for a, b in rest[:5])}"
                f"{' ...' if len(rest) > 5 else ''}; read_file {edit.display} to see them)"
            )
            break
        if index:
            parts.append("...")
        room = MAX_RESULT_ROWS_PER_FILE - shown
        if high - low > room:
            parts.append((low, low + room))
            parts.append(
                f"(... lines {low + room + 1}-{high} not shown; read_file {edit.display} start={low + room + 1})"
            )
            shown = MAX_RESULT_ROWS_PER_FILE
            continue
        parts.append((low, high))
        shown += high - low
    spans = [part for part in parts if isinstance(part, tuple)]
    rows = [line for low, high in spans for line in edit.new_lines_between(low, high)]
    values = line_hash_values(rows)
    rendered: list[str] = []
    offset = 0
    for part in parts:
        if isinstance(part, str):
            rendered.append(part)
            continue
        low, high = part
        rendered.append(
            render_rows(
                rows[offset : offset + high - low], low + 1, values[offset : offset + high - low]
            )
        )
        offset += high - low
    return "\n".join(rendered)
