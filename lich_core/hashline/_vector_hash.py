"""FNV-1a line hashes for many lines at once, vectorised across lines with numpy.

FNV-1a is sequential within a line, so the parallelism is across lines: lines are sorted by
length and grouped in buckets of similar length; each bucket is copied into a (line, column)
matrix and the recurrence runs column by column over every line still long enough, with uint32
arithmetic wrapping like the 32-bit hash does. Lines whose code points all fit in one byte (the
usual case) take a two-operation step per column, from one byte per character (the text's
Latin-1 or ASCII bytes, or the low bytes of its code points when some lines have wider ones).
Lines with wider code points are gathered apart and take a masked step that feeds their second
and third bytes only in the lanes that have them. Sparse buckets (a few very long lines) are
hashed by the scalar function, since a numpy call per column for a handful of lanes costs more
than plain Python.

Importing this module raises ImportError when numpy is missing; callers fall back to Python.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from lich_core.hashline.fnv import FNV_OFFSET_BASIS, FNV_PRIME, fold_hash, line_hash_int

_PRIME = np.uint32(FNV_PRIME)
# A bucket with fewer lines than this goes to the scalar path.
MIN_LINES_PER_BUCKET = 16
# A bucket holds lines longer than this fraction of its longest line: fewer buckets cost fewer
# numpy calls per column, more padding to copy.
BUCKET_LENGTH_RATIO = 0.5


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


def _windows(source: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """source[s : s + width] for each s in `starts`, as rows of a (len(starts), width) matrix.

    Each window is taken as one record of `width` elements (a void item over the source, one
    item starting at every element), so the gather copies a record per row; indexing a sliding
    window view instead costs a strided copy loop per row, over twice the time for short rows.
    """
    size = source.itemsize
    records = np.ndarray(
        (source.size - width + 1,),
        dtype=np.dtype((np.void, width * size)),
        buffer=source,
        strides=(size,),
    )
    return records[starts].view(source.dtype).reshape(-1, width)


def _hash_group(
    rows: np.ndarray,
    starts: np.ndarray,
    lengths: np.ndarray,
    source: np.ndarray,
    lines: Sequence[str],
    feed: Callable[[np.ndarray, np.ndarray], None],
    out: np.ndarray,
) -> None:
    """Hash the lines `rows` (indices into starts/lengths/lines) and store the 8-bit values in `out`.

    `source` holds one element per character of every line in `rows` (their code points or
    code units), line i at source[starts[i] : starts[i] + lengths[i]].
    """
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

    low = 0
    while low < count and negated[low] < 0:
        width = int(-negated[low])
        high = int(np.searchsorted(negated, -int(width * BUCKET_LENGTH_RATIO), side="left"))
        # A window of `width` past the end of `source` (the last lines, shorter than the widest
        # in their bucket) would need a padded copy of it all: those few lines go to the
        # scalar path instead, their lanes reading from the start meanwhile.
        starts_here = sorted_starts[low:high]
        past_end = np.flatnonzero(starts_here > source.size - width)
        scalar_rows = (
            range(low, high) if high - low < MIN_LINES_PER_BUCKET else (past_end + low).tolist()
        )
        if len(scalar_rows) < high - low:
            if len(past_end):
                starts_here = starts_here.copy()
                starts_here[past_end] = 0
            # One row per line; column c is read in place (a strided view): transposing the
            # rows first would copy them all once more for no faster steps.
            matrix = _windows(source, starts_here, width)
            lanes = state[low:high]
            active = np.searchsorted(negated[low:high], -np.arange(width), side="left").tolist()
            for column in range(width):
                lane_count = active[column]
                feed(lanes[:lane_count], matrix[:lane_count, column])
        for row in scalar_rows:
            state[row] = line_hash_int(lines[int(order[row])])
            scalar[row] = True
        low = high

    folded = state ^ (state >> 16)
    folded ^= folded >> 8
    folded &= 0xFF
    out[order] = np.where(scalar, state, folded)


def hash_lines(lines: Sequence[str], text: str | None = None) -> list[int] | None:
    """8-bit hashes of `lines` (which must not contain "\\n"); None if a line does.

    `text`, when given, must be `"\\n".join(lines)`, optionally plus a final "\\n" (the file's
    text as read), which saves building it again.

    Much of the cost is memory (a 2 MiB file's copies and masks, each fresh page of them a
    fault), so the arrays the work reads are one byte per character, the text is never copied
    with padding, and one mask serves for both the newlines and the wide code points.
    """
    count = len(lines)
    if count == 0:
        return []
    if text is None:
        text = "\n".join(lines)
    full: np.ndarray | None = None  # the UTF-32 code points, when some are past U+00FF
    try:
        # Code points below 256 are one byte each: their Latin-1 encoding (ASCII the usual case).
        points = np.frombuffer(
            text.encode("ascii" if text.isascii() else "latin-1"), dtype=np.uint8
        )
        mask = points == 10
        newlines = np.flatnonzero(mask)
    except UnicodeEncodeError:
        # surrogatepass keeps lone surrogates (surrogateescape'd bytes) as their code points.
        full = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        points = full.astype(np.uint8)  # the low bytes: exact for every line hashed from them
        mask = np.equal(points, 10)
        candidates = np.flatnonzero(mask)  # a wide code point may end in 0x0A (U+4E0A)
        newlines = candidates[full[candidates] == 10]
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
    if full is None:
        _hash_group(np.flatnonzero(nonempty), starts, lengths, points, lines, _feed_narrow, out)
        return out.tolist()

    np.greater(full, 0xFF, out=mask)
    wide = np.zeros(count, dtype=bool)
    wide[np.searchsorted(starts, np.flatnonzero(mask), side="right") - 1] = True
    del mask, full
    _hash_group(np.flatnonzero(nonempty & ~wide), starts, lengths, points, lines, _feed_narrow, out)
    wide_rows = np.flatnonzero(wide)
    if wide_rows.size:
        _hash_wide_lines(wide_rows, lines, out)
    return out.tolist()


def _hash_wide_lines(rows: np.ndarray, lines: Sequence[str], out: np.ndarray) -> None:
    """Hash the lines `rows` (each with a code point past U+00FF) into `out`.

    They are few in most files, so they are gathered into a text of their own first, as UTF-32
    code points (the masked step feeds each point's bytes).
    """
    chosen = [lines[row] for row in rows.tolist()]
    text = "\n".join(chosen)
    points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    lengths = np.fromiter(map(len, chosen), dtype=np.int64, count=len(chosen))
    starts = np.empty_like(lengths)
    starts[0] = 0
    np.cumsum(lengths[:-1] + 1, out=starts[1:])
    hashed = np.empty(len(chosen), dtype=np.uint32)
    _hash_group(np.arange(len(chosen)), starts, lengths, points, chosen, _feed_wide, hashed)
    out[rows] = hashed
