"""Line replacements between two texts: the one place they are computed (pure, strings in).

Every producer of a `FileChange` (the hashline patch engine, `edit_file`, `write_file`, the
editor's review overlay, rollbacks) gets its `replacements` from `line_replacements(old, new)`;
the editor layer only turns them into TextEdits and never diffs again.

Lines are split on `\\n` only (the hashline convention) and keep their terminator, so a line whose
ending changes (`\\n` -> `\\r\\n`, or the last line gaining its final newline) is a changed line.

The result is minimal in the sense editors care about: only changed lines are replaced. No
replacement starts or ends with a line it leaves as it was, and two replacements never touch
(an unchanged line always separates them), so a one-line change in a big file is one replacement
of one line. The matching is patience-style: common prefix and suffix are trimmed, lines that
occur exactly once on both sides anchor the rest (longest increasing run of such pairs), and the
gaps between anchors are matched the same way, recursively; a gap with no unique line in common
falls back to difflib on that gap alone when it is small, else it is one replacement. This keeps
a 50-hunk patch on a 50,000-line file in milliseconds, where difflib over the whole text takes
minutes on files with many repeated lines (blank lines, `}`, `end`).
"""

from __future__ import annotations

import difflib
from bisect import bisect_left
from collections.abc import Callable, Sequence

from lich_core.hashline.byte_lines import ByteLines
from lich_core.vocabulary import LineReplacement

# A gap without unique common lines is handed to difflib only below this size (old x new lines):
# difflib's cost grows with how often lines repeat, which is exactly what such a gap is made of.
DIFFLIB_GAP_LIMIT = 250_000


def split_keep_newline(text: str) -> list[str]:
    """Lines with their `\\n` kept; split on `\\n` only (never on `\\r`, form feed, U+2028...)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def line_replacements(old_text: str, new_text: str) -> tuple[LineReplacement, ...]:
    """The minimal whole-line replacements turning `old_text` into `new_text`, in order.

    Empty when the texts are equal; one replacement covering everything when `old_text` is empty
    (a new file) or no line survives (a full rewrite).
    """
    if old_text == new_text:
        return ()
    old = split_keep_newline(old_text)
    new = split_keep_newline(new_text)
    found: list[LineReplacement] = []
    # Regions (old_lo, old_hi, new_lo, new_hi) still to match; a stack, not recursion, so deeply
    # nested anchors cannot hit the recursion limit.
    regions = [(0, len(old), 0, len(new))]
    while regions:
        alo, ahi, blo, bhi = regions.pop()
        while alo < ahi and blo < bhi and old[alo] == new[blo]:
            alo += 1
            blo += 1
        while alo < ahi and blo < bhi and old[ahi - 1] == new[bhi - 1]:
            ahi -= 1
            bhi -= 1
        if alo == ahi and blo == bhi:
            continue
        if alo == ahi or blo == bhi:
            found.append(LineReplacement(alo, ahi, "".join(new[blo:bhi])))
            continue
        anchors = _unique_anchors(old, alo, ahi, new, blo, bhi)
        if anchors:
            a_prev, b_prev = alo, blo
            for a_at, b_at in anchors:
                if a_prev < a_at or b_prev < b_at:
                    regions.append((a_prev, a_at, b_prev, b_at))
                a_prev, b_prev = a_at + 1, b_at + 1
            regions.append((a_prev, ahi, b_prev, bhi))
        elif (ahi - alo) * (bhi - blo) <= DIFFLIB_GAP_LIMIT:
            matcher = difflib.SequenceMatcher(None, old[alo:ahi], new[blo:bhi], autojunk=False)
            for tag, i1, i2, j1, j2 in matcher.get_opcodes():
                if tag != "equal":
                    found.append(
                        LineReplacement(alo + i1, alo + i2, "".join(new[blo + j1 : blo + j2]))
                    )
        else:
            found.append(LineReplacement(alo, ahi, "".join(new[blo:bhi])))
    found.sort(key=lambda item: (item.start, item.end))
    return tuple(found)


def _unique_anchors(
    old: list[str], alo: int, ahi: int, new: list[str], blo: int, bhi: int
) -> list[tuple[int, int]]:
    """(old index, new index) of lines unique on both sides, as the longest run increasing in both."""
    in_old: dict[str, int] = {}
    for index in range(alo, ahi):
        line = old[index]
        in_old[line] = -1 if line in in_old else index
    in_new: dict[str, int] = {}
    for index in range(blo, bhi):
        line = new[index]
        if line in in_old:
            in_new[line] = -1 if line in in_new else index
    pairs = [
        (a_at, in_new[line])
        for line, a_at in in_old.items()
        if a_at >= 0 and in_new.get(line, -1) >= 0
    ]
    if not pairs:
        return []
    pairs.sort()
    # Longest increasing subsequence of the new indexes (patience sorting), O(k log k).
    tails: list[int] = []  # new index ending the best run of each length
    tail_at: list[int] = []  # which pair that is
    previous = [-1] * len(pairs)
    for position, (_, b_at) in enumerate(pairs):
        length = bisect_left(tails, b_at)
        if length == len(tails):
            tails.append(b_at)
            tail_at.append(position)
        else:
            tails[length] = b_at
            tail_at[length] = position
        previous[position] = tail_at[length - 1] if length else -1
    run: list[tuple[int, int]] = []
    position = tail_at[-1]
    while position >= 0:
        run.append(pairs[position])
        position = previous[position]
    run.reverse()
    return run


def apply_replacements(old_text: str, replacements: Sequence[LineReplacement]) -> str:
    """Apply non-overlapping line replacements to `old_text` (what an editor does with them)."""
    old = split_keep_newline(old_text)
    pieces: list[str] = []
    cursor = 0
    for replacement in sorted(replacements, key=lambda item: (item.start, item.end)):
        pieces.extend(old[cursor : replacement.start])
        pieces.append(replacement.text)
        cursor = replacement.end
    pieces.extend(old[cursor:])
    return "".join(pieces)


def splice_replacements(
    old: ByteLines, replacements: Sequence[LineReplacement], encode: Callable[[str], bytes]
) -> list[bytes | memoryview] | None:
    """apply_replacements on a file's bytes (`old`: the lines of the text they decode to), as the
    pieces of the new bytes in order: views of the untouched lines' bytes, and the replacement
    texts encoded with `encode` (the file's own encoding).

    A file's new bytes this way cost a count of its newlines, where building the new text and
    encoding it cost a join and an encode of the whole text (for 2 MiB with one wide character,
    an 8 MiB str; bench_hashline's apply_patch); written with writev, they are never joined
    either. None when a replacement does not fit the old lines: the caller encodes the text.
    """
    view = memoryview(old.data)
    pieces: list[bytes | memoryview] = []
    cursor = 0
    for replacement in sorted(replacements, key=lambda item: (item.start, item.end)):
        if not cursor <= replacement.start <= replacement.end <= len(old):
            return None
        pieces.append(view[old.offset(cursor) : old.offset(replacement.start)])
        pieces.append(encode(replacement.text))
        cursor = replacement.end
    pieces.append(view[old.offset(cursor) :])
    return pieces
