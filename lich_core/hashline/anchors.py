"""Line hashes, line splitting and row rendering: the hashline format, byte for byte.

A line's hash is FNV-1a 32-bit over its code points, each fed as its bytes low byte first (at
least one byte, so U+0000 feeds one zero byte), XOR-folded to 8 bits and printed as two lowercase
hex digits. Lines split on "\\n" only; a trailing newline ends the last line instead of opening
an empty one, and a "\\r" stays part of the line it is in (CRLF files hash their "\\r").
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from functools import lru_cache

# The scalar hash lives in its own module so the numpy path can use it without importing this one.
from lich_core.hashline.fnv import line_hash_int

# Below this many characters a batch is hashed line by line: numpy's per-call overhead only pays
# off on larger inputs.
VECTOR_MIN_CHARS = 2_000

HEX_BYTE = tuple(f"{value:02x}" for value in range(256))


def split_lines(text: str) -> list[str]:
    """Split on "\\n" only (never on "\\r", U+2028 or the other characters str.splitlines uses)."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


# Lines up to this long are memoised (validation re-hashes the same anchored lines often);
# longer ones are hashed each time so the cache never pins big strings.
CACHED_LINE_CHARS = 256


@lru_cache(maxsize=65_536)
def _cached_line_hash(line: str) -> str:
    return HEX_BYTE[line_hash_int(line)]


def line_hash(line: str) -> str:
    """The two-hex-digit anchor hash of one line (no terminator)."""
    if len(line) <= CACHED_LINE_CHARS:
        return _cached_line_hash(line)
    return HEX_BYTE[line_hash_int(line)]


def line_hash_values(
    lines: Sequence[str], *, text: str | None = None, vectorised: bool | None = None
) -> list[int]:
    """8-bit hashes of many lines; numpy across lines when it is installed and worth it.

    `text` may pass the text the lines were split from (`"\\n".join(lines)`, optionally with a
    final newline). `vectorised=False` forces the pure-Python path, `True` forces numpy.
    """
    if vectorised is not False and lines:
        total_chars = len(text) if text is not None else sum(map(len, lines))
        if vectorised or total_chars >= VECTOR_MIN_CHARS:
            values = _vector_hashes(lines, text)
            if values is not None:
                return values
    return [line_hash_int(line) for line in lines]


def _vector_hashes(lines: Sequence[str], text: str | None) -> list[int] | None:
    try:
        from lich_core.hashline import _vector_hash
    except ImportError:  # numpy is optional
        return None
    return _vector_hash.hash_lines(lines, text)


_HASH_PIPE = tuple(f"{digest}|" for digest in HEX_BYTE)
# "N:" strings for line numbers, each after a newline ("\nN:"): a row's newline travels with
# the next row's number, so rows join in one pass. Renderings of many rows reuse them (built
# once up to the last number shown); a few rows are cheaper to format than to reach in the cache.
_NUMBER_PREFIXES: list[str] = ["\n0:"]
CACHED_PREFIX_ROWS = 1_000


def _number_prefixes(first: int, count: int) -> list[str]:
    last = first + count
    if count < CACHED_PREFIX_ROWS and last > len(_NUMBER_PREFIXES):
        return [f"\n{number}:" for number in range(first, last)]
    if last > len(_NUMBER_PREFIXES):
        _NUMBER_PREFIXES.extend(f"\n{number}:" for number in range(len(_NUMBER_PREFIXES), last))
    return _NUMBER_PREFIXES[first:last]


def render_rows(
    lines: Sequence[str],
    first_number: int = 1,
    values: Sequence[int] | None = None,
    *,
    text: str | None = None,
) -> str:
    """Rows for consecutive lines starting at `first_number`, joined by newlines (no final one).

    `values` are the lines' 8-bit hashes when the caller already has them.
    """
    if values is None:
        values = line_hash_values(lines, text=text)
    count = len(lines)
    if len(values) != count:
        raise ValueError(f"render_rows: {len(values)} hashes for {count} lines")
    if not count:
        return ""
    # One join over [number, hash, line] triples: a string per row first would allocate (and
    # copy) every row twice, the larger part of rendering a big file.
    parts: list[str] = [""] * (3 * count)
    prefixes = _number_prefixes(first_number, count)
    prefixes[0] = prefixes[0][1:]
    parts[0::3] = prefixes
    # itemgetter looks every hash up in one C call (a map would run a call per row, then copy).
    parts[1::3] = operator.itemgetter(*values)(_HASH_PIPE) if count > 1 else [_HASH_PIPE[values[0]]]
    parts[2::3] = lines
    return "".join(parts)
