"""FNV-1a 32-bit over a line's code points, folded to the 8-bit anchor hash: the scalar hash that
both the line-by-line path (anchors) and the numpy path (_vector_hash) build on.

Each code point feeds its bytes low byte first (at least one byte, so U+0000 feeds one zero byte).
"""

from __future__ import annotations

FNV_OFFSET_BASIS = 2166136261
FNV_PRIME = 16777619
_MASK_32 = 0xFFFFFFFF


def fold_hash(value: int) -> int:
    value ^= value >> 16
    value ^= value >> 8
    return value & 0xFF


def line_hash_int(line: str) -> int:
    """The 8-bit hash of one line (no terminator) as an int."""
    value = FNV_OFFSET_BASIS
    try:
        # Code points below 256 feed exactly one byte each: their Latin-1 encoding.
        data = line.encode("latin-1")
    except UnicodeEncodeError:
        for char in line:
            point = ord(char)
            while True:
                value = ((value ^ (point & 0xFF)) * FNV_PRIME) & _MASK_32
                point >>= 8
                if not point:
                    break
        return fold_hash(value)
    for byte in data:
        value = ((value ^ byte) * FNV_PRIME) & _MASK_32
    return fold_hash(value)
