"""FNV-1a line hashes for many lines at once, vectorised across lines with numpy.

FNV-1a is sequential within a line, so the parallelism is across lines: lines are sorted by
length and grouped in buckets of similar length; each bucket is copied into a (column, line)
matrix and the recurrence runs column by column over every line still long enough, with uint32
arithmetic wrapping like the 32-bit hash does. Lines whose code points all fit in one byte (the
usual case) take a two-operation step per column; lines with wider code points take a masked
step that feeds their second and third bytes only in the lanes that have them. Sparse buckets
(a few very long lines) are hashed by the scalar function, since a numpy call per column for a
handful of lanes costs more than plain Python.

Importing this module raises ImportError when numpy is missing; callers fall back to Python.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from lich_core.hashline.anchors import FNV_OFFSET_BASIS, FNV_PRIME, fold_hash, line_hash_int

_PRIME = np.uint32(FNV_PRIME)
# A bucket with fewer lines than this goes to the scalar path.
MIN_LINES_PER_BUCKET = 16
# A bucket holds lines longer than this fraction of its longest line (less padding to copy).
BUCKET_LENGTH_RATIO = 0.85


def _feed_narrow(state: np.ndarray, points: np.ndarray) -> None:
    state ^= points
    state *= _PRIME


def _feed_wide(state: np.ndarray, points: np.ndarray) -> None:
    """One FNV-1a step per lane for one code point per lane (1 to 3 bytes each)."""
    state ^= points & 0xFF
    state *= _PRIME
    high = points >> 8
    if high.any():
        np.copyto(state, (state ^ (high & 0xFF)) * _PRIME, where=high != 0)
        top = points >> 16
        if top.any():
            np.copyto(state, (state ^ top) * _PRIME, where=top != 0)


def _hash_group(
    rows: np.ndarray,
    starts: np.ndarray,
    lengths: np.ndarray,
    source: np.ndarray,
    text: str,
    feed: Callable[[np.ndarray, np.ndarray], None],
    out: np.ndarray,
) -> None:
    """Hash the lines `rows` (indices into starts/lengths) and store the 8-bit values in `out`."""
    if rows.size == 0:
        return
    group_lengths = lengths[rows]
    longest = int(group_lengths.max())
    key = -group_lengths.astype(np.int16 if longest < 32_000 else np.int64)
    order = rows[np.argsort(key, kind="stable")]  # longest first; radix sort for int16 keys
    sorted_starts = starts[order]
    negated = -lengths[order]
    count = order.size
    state = np.full(count, FNV_OFFSET_BASIS, dtype=np.uint32)
    scalar = np.zeros(count, dtype=bool)
    padded = np.concatenate((source, np.zeros(longest, dtype=source.dtype))) if longest else source

    low = 0
    while low < count and negated[low] < 0:
        width = int(-negated[low])
        high = int(np.searchsorted(negated, -int(width * BUCKET_LENGTH_RATIO), side="left"))
        if high - low < MIN_LINES_PER_BUCKET:
            for row in range(low, high):
                start = int(sorted_starts[row])
                state[row] = line_hash_int(text[start : start + int(-negated[row])])
            scalar[low:high] = True
            low = high
            continue
        windows = sliding_window_view(padded, width)
        matrix = np.ascontiguousarray(windows[sorted_starts[low:high]].T)
        lanes = state[low:high]
        active = np.searchsorted(negated[low:high], -np.arange(width), side="left")
        for column in range(width):
            lane_count = int(active[column])
            feed(lanes[:lane_count], matrix[column, :lane_count])
        low = high

    folded = state ^ (state >> 16)
    folded ^= folded >> 8
    folded &= 0xFF
    out[order] = np.where(scalar, state, folded)


def hash_lines(lines: Sequence[str], text: str | None = None) -> list[int] | None:
    """8-bit hashes of `lines` (which must not contain "\\n"); None if a line does.

    `text`, when given, must be `"\\n".join(lines)`, optionally plus a final "\\n" (the file's
    text as read), which saves building it again.
    """
    count = len(lines)
    if count == 0:
        return []
    if text is None:
        text = "\n".join(lines)
    if text.isascii():
        points = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    else:
        # surrogatepass keeps lone surrogates (surrogateescape'd bytes) as their code points.
        points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    newlines = np.flatnonzero(points == 10)
    ends = np.empty(count, dtype=np.int64)
    if newlines.size == count and newlines[-1] == points.size - 1:  # text has a final newline
        ends[:] = newlines
    elif newlines.size == count - 1:
        ends[:-1] = newlines
        ends[-1] = points.size
    else:
        return None
    starts = np.empty(count, dtype=np.int64)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    lengths = ends - starts

    out = np.full(count, fold_hash(FNV_OFFSET_BASIS), dtype=np.uint32)  # empty lines stay "c5"
    nonempty = lengths > 0
    if points.dtype == np.uint8:
        _hash_group(np.flatnonzero(nonempty), starts, lengths, points, text, _feed_narrow, out)
        return out.tolist()

    wide_positions = np.flatnonzero(points > 0xFF)
    wide = np.zeros(count, dtype=bool)
    wide[np.searchsorted(starts, wide_positions, side="right") - 1] = True
    narrow_rows = np.flatnonzero(nonempty & ~wide)
    _hash_group(narrow_rows, starts, lengths, points.astype(np.uint8), text, _feed_narrow, out)
    _hash_group(np.flatnonzero(wide), starts, lengths, points, text, _feed_wide, out)
    return out.tolist()
