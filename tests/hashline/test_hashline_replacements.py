"""line_replacements, the one function every FileChange producer uses: exact and minimal."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from lich_core.hashline.byte_lines import NEWLINE_BLOCK_BYTES, byte_lines
from lich_core.hashline.replacements import (
    DIFFLIB_GAP_LIMIT,
    apply_replacements,
    line_replacements,
    splice_replacements,
    split_keep_newline,
)
from lich_core.vocabulary import LineReplacement
from lich_core.workspace import decode_text, encode_text

# Few distinct lines, so texts repeat lines (blank lines, braces) the way source files do.
LINE = st.sampled_from(["", "a", "b", "c", "}", "  x", "é🙂", "a\r", "b\r", "\r"])


@st.composite
def text(draw: st.DrawFn, lines: list[str] | None = None) -> str:
    body = draw(st.lists(LINE, max_size=14)) if lines is None else lines
    ending = draw(st.sampled_from(["\n", "\r\n"]))
    joined = ending.join(body)
    if body and draw(st.booleans()):
        joined += ending  # else: no final newline
    return joined


@st.composite
def old_and_new(draw: st.DrawFn) -> tuple[str, str]:
    old = draw(text())
    if draw(st.booleans()):
        return old, draw(text())  # unrelated texts
    # A few edits of the old lines: what tools really produce.
    lines = old.split("\n")
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(lines)))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        if action == "insert":
            lines.insert(at, draw(LINE))
        elif lines and at < len(lines):
            if action == "delete":
                del lines[at]
            else:
                lines[at] = draw(LINE)
    return old, "\n".join(lines)


def check(old: str, new: str) -> tuple[LineReplacement, ...]:
    """Assert every promise line_replacements makes, and return its answer."""
    replacements = line_replacements(old, new)
    assert isinstance(replacements, tuple)
    # Applying them to the old text gives the new text.
    assert apply_replacements(old, replacements) == new
    old_lines = split_keep_newline(old)
    previous_end = -1
    for item in replacements:
        assert 0 <= item.start <= item.end <= len(old_lines)
        # In order, and never touching: an unchanged line separates any two replacements.
        assert item.start > previous_end
        previous_end = item.end
        replaced = old_lines[item.start : item.end]
        new_lines = split_keep_newline(item.text)
        assert replaced or new_lines, "a replacement that changes nothing"
        # Minimal: no replacement covers an unchanged line at its start or at its end.
        if replaced and new_lines:
            assert replaced[0] != new_lines[0]
            assert replaced[-1] != new_lines[-1]
        # Whole lines only: only a text that ends the file may lack its final newline.
        if item.text and not item.text.endswith("\n"):
            assert item.end == len(old_lines) and new.endswith(item.text)
    return replacements


@settings(max_examples=500, deadline=None)
@given(old_and_new())
def test_replacements_rebuild_the_new_text_minimally(case: tuple[str, str]) -> None:
    old, new = case
    check(old, new)


@settings(max_examples=200, deadline=None)
@given(st.lists(LINE, min_size=1, max_size=14), st.integers(0, 13), LINE)
def test_one_changed_line_is_one_replacement_of_that_line(
    lines: list[str], at: int, line: str
) -> None:
    at %= len(lines)
    if lines[at] == line:
        return
    old = "\n".join(lines) + "\n"
    changed = [*lines[:at], line, *lines[at + 1 :]]
    (only,) = check(old, "\n".join(changed) + "\n")
    assert (only.start, only.end, only.text) == (at, at + 1, line + "\n")


def test_equal_texts_need_nothing() -> None:
    assert line_replacements("", "") == ()
    assert line_replacements("a\nb", "a\nb") == ()


def test_new_file_and_full_rewrite_are_one_replacement_of_the_whole_text() -> None:
    assert check("", "one\ntwo\n") == (LineReplacement(0, 0, "one\ntwo\n"),)
    assert check("old\nlines\n", "new\ntext") == (LineReplacement(0, 2, "new\ntext"),)
    assert check("a\nb\n", "") == (LineReplacement(0, 2, ""),)


def test_crlf_lines_and_line_ending_changes() -> None:
    old = "a\r\nb\r\nc\r\n"
    assert check(old, "a\r\nB\r\nc\r\n") == (LineReplacement(1, 2, "B\r\n"),)
    # Only the line whose ending changed is replaced.
    assert check(old, "a\r\nb\nc\r\n") == (LineReplacement(1, 2, "b\n"),)
    # A lone "\r" is not a line break (hashline splits on "\n" only).
    assert check("x\ry\nz\n", "x\ry\nZ\n") == (LineReplacement(1, 2, "Z\n"),)
    assert check("x\ry\nz\n", "x\rY\nz\n") == (LineReplacement(0, 1, "x\rY\n"),)


def test_missing_final_newline() -> None:
    # Gaining or losing the final newline changes the last line, and only it.
    assert check("a\nb", "a\nb\n") == (LineReplacement(1, 2, "b\n"),)
    assert check("a\nb\n", "a\nb") == (LineReplacement(1, 2, "b"),)
    assert check("a\r\nb", "a\r\nb\r\n") == (LineReplacement(1, 2, "b\r\n"),)
    # Appending to a file without a final newline rewrites its last line.
    assert check("a\nb", "a\nb\nc") == (LineReplacement(1, 2, "b\nc"),)
    assert check("a\nb", "z\na\nb\n") == (
        LineReplacement(0, 0, "z\n"),
        LineReplacement(1, 2, "b\n"),
    )


def test_repeated_lines_without_any_unique_line() -> None:
    # Nothing anchors these: difflib matches the (small) gap.
    old = "}\n\n}\n\n}\n"
    check(old, "}\n\n}\n}\n\n}\n")
    check(old, "\n}\n\n")


def test_a_huge_gap_without_unique_lines_is_one_trimmed_replacement() -> None:
    old = "a\nb\n" * 600
    new = "b\na\n" * 600
    assert (old.count("\n") ** 2) > DIFFLIB_GAP_LIMIT
    started = time.perf_counter()
    check(old, new)
    assert time.perf_counter() - started < 5


def test_scattered_changes_in_a_big_file_with_repeated_lines_stay_fast() -> None:
    # difflib over the whole text takes minutes on this shape (many blank lines and braces).
    lines = []
    for i in range(20_000):
        lines.append("" if i % 5 == 0 else "}" if i % 7 == 0 else f"value_{i} = compute({i})")
    old = "\n".join(lines) + "\n"
    changed = list(lines)
    for at in range(100, 20_000, 500):
        changed[at] = f"value_{at} = changed({at})"
    started = time.perf_counter()
    replacements = check(old, "\n".join(changed) + "\n")
    assert time.perf_counter() - started < 5  # ~0.1 s; generous for a loaded machine
    assert [(r.start, r.end) for r in replacements] == [
        (at, at + 1) for at in range(100, 20_000, 500)
    ]


# --- splice_replacements: the disk write's splice, byte for byte what encoding gives ---


def apply_replacements_to_bytes(
    data: bytes, replacements: tuple[LineReplacement, ...], encode
) -> bytes | None:
    lines = byte_lines(data, decode_text)
    assert lines is not None
    pieces = splice_replacements(lines, replacements, encode)
    return None if pieces is None else b"".join(pieces)


def spliced(old: str, new: str) -> bytes | None:
    return apply_replacements_to_bytes(encode_text(old), line_replacements(old, new), encode_text)


@settings(max_examples=500, deadline=None)
@given(old_and_new())
def test_splicing_the_bytes_gives_the_encoded_new_text(case: tuple[str, str]) -> None:
    old, new = case
    assert spliced(old, new) == encode_text(new)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(["", "x", "é" * 40, "y" * 700]), min_size=1, max_size=40), st.data()
)
def test_splicing_across_newline_blocks(pattern: list[str], data: st.DataObject) -> None:
    # Long enough to span many newline-count blocks, some full of newlines, some with none.
    lines = (
        pattern * (3 * NEWLINE_BLOCK_BYTES // max(1, sum(map(len, pattern)) + len(pattern)) + 1)
    )[:6000]
    old = "\n".join(lines) + data.draw(st.sampled_from(["", "\n"]))
    changed = list(lines)
    for _ in range(data.draw(st.integers(1, 8))):
        at = data.draw(st.integers(0, len(changed)))
        if data.draw(st.booleans()) and at < len(changed):
            del changed[at]
        else:
            changed.insert(at, "new")
    new = "\n".join(changed) + data.draw(st.sampled_from(["", "\n"]))
    assert spliced(old, new) == encode_text(new)


def test_splicing_keeps_undecodable_bytes_as_they_were() -> None:
    data = b"caf\xc3\xa9\n\xff\xfe raw\nlast"
    old = decode_text(data)
    new = old.replace("last", "end\n")
    out = apply_replacements_to_bytes(data, line_replacements(old, new), encode_text)
    assert out == b"caf\xc3\xa9\n\xff\xfe raw\nend\n"


def test_a_replacement_past_the_old_lines_is_not_spliced() -> None:
    replacement = LineReplacement(3, 4, "x\n")
    assert apply_replacements_to_bytes(b"a\nb\n", (replacement,), encode_text) is None
    overlapping = (LineReplacement(0, 2, ""), LineReplacement(1, 2, "y\n"))
    assert apply_replacements_to_bytes(b"a\nb\n", overlapping, encode_text) is None
    assert (
        apply_replacements_to_bytes(b"", (LineReplacement(0, 0, "new\n"),), encode_text) == b"new\n"
    )
