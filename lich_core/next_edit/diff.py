"""The model's rewritten region as minimal edits: one per changed hunk, each cut to the
characters that differ, and none that would undo the user's latest edit."""

from __future__ import annotations

import difflib
from dataclasses import dataclass


@dataclass(frozen=True)
class TextEdit:
    """Replace [start, end) (code point offsets into the document) with `text`."""

    start: int
    end: int
    text: str


def _common_prefix(a: str, b: str) -> int:
    limit = min(len(a), len(b))
    index = 0
    while index < limit and a[index] == b[index]:
        index += 1
    return index


def _common_suffix(a: str, b: str) -> int:
    limit = min(len(a), len(b))
    index = 0
    while index < limit and a[-1 - index] == b[-1 - index]:
        index += 1
    return index


def minimal_edit(start: int, old: str, new: str) -> TextEdit:
    """`old` (at `start`) replaced by `new`, without the characters both begin and end with."""
    prefix = _common_prefix(old, new)
    suffix = _common_suffix(old[prefix:], new[prefix:])
    return TextEdit(start + prefix, start + len(old) - suffix, new[prefix : len(new) - suffix])


def region_edits(
    document: str, region_start: int, region_end: int, rewritten: str
) -> list[TextEdit]:
    """The edits that turn document[region_start:region_end] into `rewritten`, in document
    order: one per changed run of lines (one per line where the run keeps its line count), each
    cut to the characters that differ; none when the region came back unchanged."""
    original = document[region_start:region_end]
    if rewritten == original:
        return []
    old_lines = original.splitlines(keepends=True)
    new_lines = rewritten.splitlines(keepends=True)
    offsets = [region_start]
    for line in old_lines:
        offsets.append(offsets[-1] + len(line))
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    edits = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if i2 - i1 == j2 - j1:
            # Line for line (a rename through a block): each line's own change, so every edit
            # shows where it is.
            pieces = [(offsets[i], old_lines[i], new_lines[j1 + i - i1]) for i in range(i1, i2)]
        else:
            pieces = [(offsets[i1], "".join(old_lines[i1:i2]), "".join(new_lines[j1:j2]))]
        for start, old, new in pieces:
            edit = minimal_edit(start, old, new)
            if edit.start != edit.end or edit.text:
                edits.append(edit)
    return edits


def undoes(edit: TextEdit, document: str, start: int, end: int, before: str) -> bool:
    """Whether `edit` brings back `before` where the user's latest edit put
    document[start:end]: it would undo what the user just did."""
    if edit.end < start or edit.start > end:
        return False
    low, high = min(edit.start, start), max(edit.end, end)
    after_edit = document[low : edit.start] + edit.text + document[edit.end : high]
    before_user = document[low:start] + before + document[end:high]
    return after_edit == before_user
