"""Line hashes, splitting and row rendering: the exact hashline format."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lich_core.hashline import anchors
from lich_core.hashline.anchors import (
    HEX_BYTE,
    line_hash,
    line_hash_int,
    line_hash_values,
    render_rows,
    split_lines,
)

numpy = pytest.importorskip("numpy")


def line_hashes(lines, *, text=None, vectorised=None):
    """Two-hex-digit hashes of many lines, as read_file shows them."""
    return [HEX_BYTE[value] for value in line_hash_values(lines, text=text, vectorised=vectorised)]


def reference_hash(line: str) -> str:
    """Straight from the definition: FNV-1a 32 over each code point's bytes, low byte first."""
    value = 2166136261
    for char in line:
        point = ord(char)
        data = point.to_bytes(max(1, (point.bit_length() + 7) // 8), "little")
        for byte in data:
            value = ((value ^ byte) * 16777619) % 2**32
    folded = (value ^ (value >> 8) ^ (value >> 16) ^ (value >> 24)) & 0xFF
    return f"{folded:02x}"


def test_empty_line_hashes_to_c5():
    assert line_hash("") == "c5"
    assert line_hashes([""]) == ["c5"]


@pytest.mark.parametrize(
    "line, expected",
    [
        ("a", "ed"),  # FNV-1a("a") = 0xe40c292c → e4^0c^29^2c
        ("foobar", reference_hash("foobar")),
        ("\x00", reference_hash("\x00")),
    ],
)
def test_known_hashes(line, expected):
    assert line_hash(line) == expected


def test_code_points_feed_minimal_little_endian_bytes():
    # é (U+00E9) is ONE byte 0xE9, not its UTF-8 pair; U+0100 is two bytes 00 01.
    def fnv(data: bytes) -> str:
        value = 2166136261
        for byte in data:
            value = ((value ^ byte) * 16777619) % 2**32
        return f"{(value ^ (value >> 8) ^ (value >> 16) ^ (value >> 24)) & 0xFF:02x}"

    assert line_hash("é") == fnv(b"\xe9")
    assert line_hash("Ā") == fnv(b"\x00\x01")
    assert line_hash("数") == fnv((0x6570).to_bytes(2, "little"))
    assert line_hash("🙂") == fnv((0x1F642).to_bytes(3, "little"))
    assert line_hash("\x00") == fnv(b"\x00")
    assert line_hash("\udc80") == fnv(b"\x80\xdc")  # a surrogate-escaped byte keeps its code point


def test_line_is_hashed_raw():
    assert line_hash("x ") != line_hash("x")
    assert line_hash("x\r") != line_hash("x")
    assert line_hash("\tx") != line_hash("x")


def test_split_lines_only_on_newline():
    assert split_lines("") == []
    assert split_lines("\n") == [""]
    assert split_lines("a\nb") == ["a", "b"]
    assert split_lines("a\nb\n") == ["a", "b"]
    assert split_lines("a\n\n") == ["a", ""]
    assert split_lines("a\r\nb\r\n") == ["a\r", "b\r"]
    assert split_lines("lone\rcr\u2028sep\x0cff\n") == ["lone\rcr\u2028sep\x0cff"]


def test_render_rows_golden():
    assert render_rows(["a", "", "é"], 7) == "7:ed|a\n8:c5|\n9:" + reference_hash("é") + "|é"
    assert render_rows([""], 3) == "3:c5|"  # an empty line hashes to c5


LINE_TEXT = st.text(
    alphabet=st.one_of(
        st.characters(blacklist_characters="\n", blacklist_categories=("Cs",)),
        st.sampled_from(["\r", "\x00", "é", "数", "🙂", "\udc80", "\udcff", " ", "\t"]),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(st.lists(LINE_TEXT, max_size=40))
def test_vectorised_hashes_equal_scalar_reference(lines):
    expected = [reference_hash(line) for line in lines]
    assert [line_hash(line) for line in lines] == expected
    assert line_hashes(lines, vectorised=True) == expected
    assert line_hashes(lines, vectorised=False) == expected


def test_vectorised_handles_long_and_mixed_lines():
    lines = ["x" * 5000, "数" * 300 + "a", "", "a\rb", "y" * 40] * 20 + [
        "z" * i for i in range(200)
    ]
    expected = [reference_hash(line) for line in lines]
    assert line_hashes(lines, vectorised=True) == expected
    text = "\n".join(lines) + "\n"
    split = split_lines(text)
    assert split == lines and line_hashes(split, text=text) == expected


def test_batch_refuses_lines_with_newlines_and_falls_back():
    from lich_core.hashline import _vector_hash

    assert _vector_hash.hash_lines(["a\nb", "c"]) is None
    # line_hash_values falls back to the scalar path instead of giving wrong answers.
    assert (
        line_hash_values(["a\nb", "c"] * 2000) == [line_hash_int("a\nb"), line_hash_int("c")] * 2000
    )


def test_pure_python_path_when_numpy_is_missing(monkeypatch):
    monkeypatch.setattr(anchors, "_vector_hashes", lambda lines, text: None)
    lines = ["abc", "数据", ""] * 1000
    assert line_hashes(lines) == [reference_hash(line) for line in lines]


# Lines short enough and alike enough to fill the vectorised buckets (16+ lines of similar
# length), from each kind of text the batch hash reads: ASCII, Latin-1 only, and wider code
# points, among them some whose low byte is a newline's (U+010A, U+4E0A) or a lone surrogate.
BUCKET_LINE = st.text(
    alphabet=st.sampled_from(["a", "Z", " ", "\r", "\x00", "é", "ÿ"]), min_size=0, max_size=12
)
WIDE_CHARS = ["Ċ", "上", "🙂", "\udc80", "数"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(BUCKET_LINE, min_size=40, max_size=200),
    st.lists(st.tuples(st.integers(min_value=0), st.sampled_from(WIDE_CHARS)), max_size=8),
    st.booleans(),
)
def test_batch_hash_of_a_text_equals_the_reference(lines, wide, final_newline):
    lines = list(lines)
    for where, char in wide:
        index = where % len(lines)
        lines[index] = lines[index][: where % 5] + char + lines[index][where % 5 :]
    text = "\n".join(lines) + ("\n" if final_newline else "")
    split = split_lines(text)
    expected = [reference_hash(line) for line in split]
    assert line_hashes(split, text=text, vectorised=True) == expected
    assert line_hashes(split, vectorised=True) == expected
    # Straight from the batch (no fallback to the scalar path hiding a miscount of the lines).
    from lich_core.hashline import _vector_hash

    assert _vector_hash.hash_lines(split, text) == [int(value, 16) for value in expected]


def test_render_rows_of_one_line_and_of_none():
    assert render_rows([], 4) == ""
    assert render_rows(["x"], 4) == "4:" + reference_hash("x") + "|x"
    assert render_rows(["x", "y"], 9, [1, 2]) == "9:01|x\n10:02|y"
    with pytest.raises(ValueError):
        render_rows(["x", "y"], 1, [1])


@pytest.mark.parametrize("final_newline", [True, False])
def test_batch_hash_of_lines_at_the_very_end_of_the_text(final_newline):
    """The last lines of a bucket end near the end of the text, where a window as wide as the
    bucket's longest line would run past it."""
    from lich_core.hashline import _vector_hash

    lines = ["x" * 10] * 20 + ["y" * 6, "z" * 5]
    text = "\n".join(lines) + ("\n" if final_newline else "")
    expected = [int(reference_hash(line), 16) for line in lines]
    assert _vector_hash.hash_lines(lines, text) == expected
    wide = ["数" * 10] * 20 + ["数" * 6]
    wide_text = "\n".join(wide) + ("\n" if final_newline else "")
    assert _vector_hash.hash_lines(wide, wide_text) == [
        int(reference_hash(line), 16) for line in wide
    ]


def test_render_rows_numbers_far_down_a_file():
    few = render_rows(["a", "b"], 70_001)
    assert few == "70001:" + reference_hash("a") + "|a\n70002:" + reference_hash("b") + "|b"
    many = render_rows(["x"] * 1_500, 70_001).split("\n")
    assert (
        many[0] == "70001:" + reference_hash("x") + "|x"
        and many[-1].startswith("71500:")
        and len(many) == 1_500
    )
    assert render_rows(["a", "b"], 70_001) == few  # the same once the numbers are cached
