"""The patch grammar: typed ops, and errors that quote the line and say how to fix it."""

from __future__ import annotations

import pytest

from lich_core.hashline.patch import Anchor, PatchSyntaxError, parse_patch


def test_parses_every_op():
    sections = parse_patch(
        "@@ src/a.py\n"
        "+ 3:ab\n~after three\n~\n"
        "+\n~at end\n"
        "< 1:0F\n~before one\n"
        "<\n~at start\n"
        "- 4:11..6:22\n"
        "= 7:33..7:33\n~replaced\n"
        "= 8:44..9:55\n"
        "@@ b.txt\n+\n~x\n"
    )
    assert [section.path for section in sections] == ["src/a.py", "b.txt"]
    ops = sections[0].ops
    assert [(op.kind, op.start, op.end, op.payload) for op in ops] == [
        ("insert_after", Anchor(3, "ab"), None, ["after three", ""]),
        ("insert_after", None, None, ["at end"]),
        ("insert_before", Anchor(1, "0f"), None, ["before one"]),
        ("insert_before", None, None, ["at start"]),
        ("delete", Anchor(4, "11"), Anchor(6, "22"), []),
        ("replace", Anchor(7, "33"), Anchor(7, "33"), ["replaced"]),
        ("replace", Anchor(8, "44"), Anchor(9, "55"), []),
    ]
    assert [op.patch_line for op in ops] == [2, 5, 7, 9, 11, 12, 14]


def test_payload_is_verbatim():
    [section] = parse_patch("@@ f\n+ 1:aa\n~  two spaces ~tilde | pipe\n~\t\n")
    assert section.ops[0].payload == ["  two spaces ~tilde | pipe", "\t"]


def test_tolerates_pipe_copied_from_a_row_and_single_anchor_ranges():
    [section] = parse_patch(
        "@@ f\n+ 12:ab|\n~x\n- 3:cd|..4:ef|\n= 5:aa|old content\n~y\n- 9:0a\n- 10:0b|for i in 0..9\n"
    )
    ops = section.ops
    assert (ops[4].start, ops[4].end) == (Anchor(10, "0b"), Anchor(10, "0b"))
    assert ops[0].start == Anchor(12, "ab")
    assert (ops[1].start, ops[1].end) == (Anchor(3, "cd"), Anchor(4, "ef"))
    assert (ops[2].start, ops[2].end) == (Anchor(5, "aa"), Anchor(5, "aa"))
    assert (ops[3].start, ops[3].end) == (Anchor(9, "0a"), Anchor(9, "0a"))


def test_crlf_patch_input_and_blank_lines_between_sections():
    sections = parse_patch("@@ a\r\n+\r\n~x\r\n\r\n@@ b\r\n+\r\n~y\r\n\r\n")
    assert [op.payload for section in sections for op in section.ops] == [["x"], ["y"]]


def _error(text: str) -> PatchSyntaxError:
    with pytest.raises(PatchSyntaxError) as info:
        parse_patch(text)
    assert str(info.value).startswith("patch_syntax: patch line ")
    return info.value


def test_marker_not_in_column_one():
    err = _error("@@ f\n  + 1:aa\n~x\n")
    assert err.line_number == 2
    assert "`  + 1:aa`" in str(err) and "column 1" in str(err)


def test_payload_without_tilde():
    err = _error("@@ f\n+ 1:aa\nforgot the tilde\n")
    assert err.line_number == 3 and "`~forgot the tilde`" in str(err)


def test_diff_style_plus_line_is_a_payload_error():
    err = _error("@@ f\n+ 1:aa\n+new line\n")
    assert "`~new line`" in str(err)


def test_no_payload_on_delete():
    err = _error("@@ f\n- 1:aa..2:bb\n~x\n")
    assert (
        err.line_number == 3
        and "no payload on a delete" in str(err)
        and "`= A:HH..B:HH`" in str(err)
    )


def test_reversed_range():
    err = _error("@@ f\n- 5:aa..2:bb\n")
    assert "reversed range" in str(err) and "`- 5:aa..2:bb`" in str(err)


def test_unknown_op():
    err = _error("@@ f\n* 3:aa\n~x\n")
    assert "unknown op `*`" in str(err)


@pytest.mark.parametrize(
    "line", ["+ 3:zz", "+ 3", "+ x:ab", "+ 3:abc", "- 3:aa..", "= 3:aa..4", "- 3:aa..x"]
)
def test_malformed_anchor(line):
    err = _error(f"@@ f\n{line}\n~x\n")
    assert "malformed" in str(err)


def test_structure_errors():
    assert "section header" in str(_error("+ 1:aa\n~x\n"))
    assert "needs a path" in str(_error("@@   \n+\n~x\n"))
    assert "no ops" in str(_error("@@ f\n"))
    assert "insert without payload" in str(_error("@@ f\n+ 1:aa\n"))
    assert "outside an op" in str(_error("@@ f\n~x\n"))
    assert "blank line inside a section" in str(_error("@@ f\n+ 1:aa\n~x\n\n~y\n"))
    assert "a patch starts with" in str(_error(""))


# Every named grammar rejection: (patch, offending line number, the quote it must show, the fix it must give).
REJECTIONS = [
    ("@@ f\n  + 1:aa\n~x\n", 2, "`  + 1:aa`", "remove the leading whitespace"),
    ("@@ f\n+ 1:aa\n\t~x\n", 3, "`\t~x`", "markers must start in column 1"),
    ("@@ f\n+ 1:aa\nforgot the tilde\n", 3, "`forgot the tilde`", "write `~forgot the tilde`"),
    ("@@ f\n+ 1:aa\n+new line\n", 3, "`+new line`", "write `~new line`"),
    ("@@ f\n- 1:aa..2:bb\n~x\n", 3, "`~x`", "use `= A:HH..B:HH` to replace lines"),
    ("@@ f\n- 5:aa..2:bb\n", 2, "`- 5:aa..2:bb`", "write the lower line first"),
    ("@@ f\n= 9:aa..3:bb\n~x\n", 2, "`= 9:aa..3:bb`", "reversed range"),
    ("@@ f\n* 3:aa\n~x\n", 2, "`* 3:aa`", "ops are `+`, `<`, `-`, `=`"),
    ("@@ f\n> 3:aa..4:bb\n", 2, "`> 3:aa..4:bb`", "unknown op `>`"),
    (
        "@@ f\n+ 3:zz\n~x\n",
        2,
        "`+ 3:zz`",
        "write `+ LINE:HH` with the line number and two hex digits",
    ),
    ("@@ f\n< x:ab\n~x\n", 2, "`< x:ab`", "write `< LINE:HH`"),
    ("@@ f\n- 3:aa..\n", 2, "`- 3:aa..`", "write `- A:HH..B:HH`"),
    ("@@ f\n= 3:aa..4\n", 2, "`= 3:aa..4`", "write `= A:HH..B:HH`"),
    ("@@ f\n-\n", 2, "`-`", "`-` needs a range: `- A:HH..B:HH`"),
]


@pytest.mark.parametrize("text, number, quoted, fix", REJECTIONS)
def test_every_rejection_quotes_the_line_and_says_how_to_fix_it(text, number, quoted, fix):
    err = _error(text)
    assert err.line_number == number
    assert str(err).startswith(f"patch_syntax: patch line {number}: {quoted}: ")
    assert fix in str(err)
