"""A text's lines taken from the bytes it was decoded from, one line or one run at a time.

A 50-hunk patch on a 51,055-line file reads ~100 lines and writes ~100 places; splitting the
whole text into line objects to do so costs more than everything else the patch does (2-6 ms for
2 MiB, the larger figure when the 51,055 strings land in fresh memory; bench_hashline). With the
file's bytes at hand, a line is found by counting newlines per block of bytes (numpy), and only
the lines asked for are decoded. Lines are those of split_lines on the decoded text: split on
b"\\n", which in UTF-8 only ever encodes "\\n", and decoding a line alone gives what decoding the
whole text gives for it (a sequence never spans a newline, and surrogateescape maps each
undecodable byte on its own).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

# Newlines are counted per block of this many 8-byte words: summed as words, each of a word's
# 8 byte lanes counts at most one newline per word, so it stays below 256 and never carries.
NEWLINE_BLOCK_WORDS = 255
NEWLINE_BLOCK_BYTES = 8 * NEWLINE_BLOCK_WORDS


class NewlineIndex:
    """Where the n-th b"\\n" of some bytes is, for a few n.

    Listing every newline (numpy's flatnonzero) costs ~1 ms on 2 MiB; counting them per block
    of ~2 KiB costs a seventh of that, and a lookup then lists the newlines of one block only.
    """

    def __init__(self, data: bytes, np: Any) -> None:
        self._np = np
        self._data = data
        # Not kept: a block's flags are made again for a lookup (a byte per byte of the file
        # would double what a memo holding this index keeps).
        flags = np.frombuffer(data, dtype=np.uint8) == 0x0A
        whole = len(data) // NEWLINE_BLOCK_BYTES * NEWLINE_BLOCK_BYTES
        lane_sums = (
            flags[:whole]
            .view(np.uint64)
            .reshape(-1, NEWLINE_BLOCK_WORDS)
            .sum(axis=1, dtype=np.uint64)
        )
        counts = lane_sums.view(np.uint8).reshape(-1, 8).sum(axis=1, dtype=np.int64)
        counts = np.append(counts, np.count_nonzero(flags[whole:]))
        # Newlines up to the end of each block (the last block is the part past the whole ones),
        # as a list: a lookup is then a bisect, where a numpy call costs several µs.
        self._ends: list[int] = np.cumsum(counts).tolist()
        self.count = self._ends[-1]
        self._block_positions: dict[int, list[int]] = {}

    def position(self, n: int) -> int:
        """The offset of newline number n (0-based, n < count)."""
        block = bisect_right(self._ends, n)
        positions = self._block_positions.get(block)
        if positions is None:
            start = block * NEWLINE_BLOCK_BYTES
            chunk = self._np.frombuffer(
                self._data[start : start + NEWLINE_BLOCK_BYTES], dtype=self._np.uint8
            )
            found = self._np.flatnonzero(chunk == 0x0A) + start
            positions = self._block_positions[block] = found.tolist()
        return positions[n - (self._ends[block - 1] if block else 0)]


def newline_index(data: bytes) -> NewlineIndex | None:
    """A NewlineIndex over `data`, or None without numpy."""
    try:
        import numpy as np
    except ImportError:
        return None
    return NewlineIndex(data, np)


class ByteLines(Sequence[str]):
    """split_lines(decode(data)), with each line decoded when it is read."""

    def __init__(self, data: bytes, newlines: NewlineIndex, decode: Callable[[bytes], str]) -> None:
        self._data = data
        self._newlines = newlines
        self._decode = decode
        # An unterminated last line is one more than the newlines.
        self._count = newlines.count + (1 if data and not data.endswith(b"\n") else 0)

    def __len__(self) -> int:
        return self._count

    @property
    def data(self) -> bytes:
        return self._data

    def offset(self, line: int) -> int:
        """Where line `line` (0 <= line <= count) starts; count's "start" is the end of the data."""
        if line == 0:
            return 0
        return (
            self._newlines.position(line - 1) + 1
            if line <= self._newlines.count
            else len(self._data)
        )

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._count)
            if step != 1:
                raise ValueError("ByteLines slices take every line (step 1)")
            if start >= stop:
                return []
            chunk = self._decode(self._data[self.offset(start) : self.offset(stop)])
            lines = chunk.split("\n")
            if lines[-1] == "":
                lines.pop()
            return lines
        line = index + self._count if index < 0 else index
        if not 0 <= line < self._count:
            raise IndexError("line index out of range")
        text = self._decode(self._data[self.offset(line) : self.offset(line + 1)])
        return text[:-1] if text.endswith("\n") else text

    def __iter__(self) -> Iterator[str]:
        return iter(self[0 : self._count])


def byte_lines(data: bytes, decode: Callable[[bytes], str]) -> ByteLines | None:
    """ByteLines over `data`, or None without numpy."""
    newlines = newline_index(data)
    return None if newlines is None else ByteLines(data, newlines, decode)
