"""Validator and applier: the rules, golden results, and property tests against a list model."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lich_core.hashline.anchors import line_hash, split_lines
from lich_core.hashline.byte_lines import byte_lines
from lich_core.hashline.edit import (
    FileTarget,
    PatchRejected,
    edit_from_texts,
    plan_edits,
    render_edit_result,
    uses_crlf,
)
from lich_core.hashline.patch import parse_patch
from lich_core.hashline.replacements import apply_replacements
from lich_core.workspace import LineReplacement, decode_text, encode_text


def anchor(text: str, number: int) -> str:
    return f"{number}:{line_hash(split_lines(text)[number - 1])}"


def edit_one(text: str | None, body: str, *, was_read: bool = True, name: str = "f.txt"):
    """The edit planned from the split text, checked against the one planned from the text's
    bytes (ByteLines, what apply_patch uses for big files on disk): the same in every respect."""
    [section] = parse_patch(f"@@ {name}\n{body}")
    try:
        [edit] = plan_edits([FileTarget(name, text, was_read, section.ops)])
    except PatchRejected as split_error:
        if text is not None:
            with pytest.raises(PatchRejected) as bytes_error:
                edit_from_bytes(text, body, was_read=was_read, name=name)
            assert str(bytes_error.value) == str(split_error)
        raise
    if text is not None:
        assert apply_replacements(text, edit.replacements) == edit.new_text
        assert_same_edit(edit_from_bytes(text, body, was_read=was_read, name=name), edit)
    return edit


def edit_from_bytes(text: str, body: str, *, was_read: bool, name: str, data: bytes | None = None):
    [section] = parse_patch(f"@@ {name}\n{body}")
    lines = byte_lines(encode_text(text) if data is None else data, decode_text)
    assert lines is not None and list(lines) == split_lines(text)
    [edit] = plan_edits([FileTarget(name, text, was_read, section.ops, lines=lines)])
    return edit


def assert_same_edit(from_bytes, from_split) -> None:
    for name in ("replacements", "added", "removed", "regions", "hunks"):
        assert getattr(from_bytes, name) == getattr(from_split, name), name
    assert render_edit_result(from_bytes) == render_edit_result(
        from_split
    )  # read before the text is built
    assert from_bytes._text is None  # the rows came from the lines; the text is not joined
    assert from_bytes.new_line_count() == from_split.new_line_count()
    count = from_split.new_line_count()
    for low, high in [
        (0, count),
        (0, 1),
        (count // 3, count // 2 + 1),
        (count - 1, count + 2),
        (2, 2),
    ]:
        assert from_bytes.new_lines_between(low, high) == from_split.new_lines()[low:high]
    assert from_bytes.new_text == from_split.new_text


def rejected(text: str | None, body: str, *, was_read: bool = True) -> str:
    with pytest.raises(PatchRejected) as info:
        edit_one(text, body, was_read=was_read)
    message = str(info.value)
    assert message.endswith("Nothing was written; fix the patch and send it again.")
    return message


TEXT = "one\ntwo\nthree\nfour\nfive\n"


def test_replace_delete_and_inserts_golden_result():
    edit = edit_one(
        TEXT,
        f"= {anchor(TEXT, 2)}..{anchor(TEXT, 3)}\n~TWO\n"
        f"- {anchor(TEXT, 5)}..{anchor(TEXT, 5)}\n"
        f"< {anchor(TEXT, 1)}\n~zero\n",
    )
    assert edit.new_text == "zero\none\nTWO\nfour\n"
    assert (edit.added, edit.removed) == (2, 3)
    assert edit.replacements == (
        LineReplacement(0, 0, "zero\n"),
        LineReplacement(1, 3, "TWO\n"),
        LineReplacement(4, 5, ""),
    )
    assert render_edit_result(edit) == (
        "Edited f.txt (+2 -3)\n"
        f"1:{line_hash('zero')}|zero\n"
        f"2:{line_hash('one')}|one\n"
        f"3:{line_hash('TWO')}|TWO\n"
        f"4:{line_hash('four')}|four"
    )


def test_insert_positions_sort_at_half_lines_and_keep_patch_order():
    # "+ 2" and "< 3" share 2.5, bare "+" and "+ 5" share 5.5: patch order decides.
    edit = edit_one(
        TEXT,
        f"< {anchor(TEXT, 3)}\n~b3\n+ {anchor(TEXT, 2)}\n~a2\n+\n~end\n<\n~start\n+ {anchor(TEXT, 5)}\n~after5\n",
    )
    assert split_lines(edit.new_text) == [
        "start",
        "one",
        "two",
        "b3",
        "a2",
        "three",
        "four",
        "five",
        "end",
        "after5",
    ]


def test_inserts_next_to_a_range_go_around_it():
    edit = edit_one(
        TEXT,
        f"< {anchor(TEXT, 2)}\n~before\n= {anchor(TEXT, 2)}..{anchor(TEXT, 3)}\n~X\n+ {anchor(TEXT, 3)}\n~after\n",
    )
    assert split_lines(edit.new_text) == ["one", "before", "X", "after", "four", "five"]


def test_replace_without_payload_deletes():
    edit = edit_one(TEXT, f"= {anchor(TEXT, 1)}..{anchor(TEXT, 4)}\n")
    assert edit.new_text == "five\n"
    assert edit.replacements == (LineReplacement(0, 4, ""),)


def test_minimal_replacements_skip_unchanged_lines():
    edit = edit_one(
        TEXT, f"= {anchor(TEXT, 1)}..{anchor(TEXT, 5)}\n~one\n~two\n~THREE\n~four\n~five\n"
    )
    assert edit.replacements == (LineReplacement(2, 3, "THREE\n"),)


def test_file_without_trailing_newline_gains_one():
    text = "a\nb"
    edit = edit_one(text, f"< {anchor(text, 1)}\n~z\n")
    assert edit.new_text == "z\na\nb\n"
    assert edit.replacements == (LineReplacement(0, 0, "z\n"), LineReplacement(1, 2, "b\n"))


def test_crlf_file_keeps_crlf():
    text = "a\r\nb\r\nc\r\n"
    edit = edit_one(text, f"= {anchor(text, 2)}..{anchor(text, 2)}\n~B\n~B2\n+\n~end\n")
    assert edit.new_text == "a\r\nB\r\nB2\r\nc\r\nend\r\n"
    crlf_no_final = "a\r\nb"
    edit = edit_one(crlf_no_final, f"+ {anchor(crlf_no_final, 1)}\n~new\n")
    assert edit.new_text == "a\r\nnew\r\nb\r\n"


def test_unicode_lines_and_lone_cr():
    text = "café\n数据\n🙂 smile\nlone\rcr\n"
    edit = edit_one(
        text, f"= {anchor(text, 4)}..{anchor(text, 4)}\n~fixed\n+ {anchor(text, 3)}\n~ñ\n"
    )
    assert edit.new_text == "café\n数据\n🙂 smile\nñ\nfixed\n"


def test_empty_file_and_new_file():
    assert edit_one("", "+\n~first\n").new_text == "first\n"
    created = edit_one(None, "<\n~a\n+\n~b\n")
    assert created.created and created.new_text == "a\nb\n"
    assert render_edit_result(created).startswith("Edited f.txt (+2 -0)\n1:")


def test_deleting_everything_leaves_an_empty_file():
    text = "x\ny\n"
    assert edit_one(text, f"- {anchor(text, 1)}..{anchor(text, 2)}\n").new_text == ""


def test_read_before_edit():
    message = rejected(TEXT, f"+ {anchor(TEXT, 1)}\n~x\n", was_read=False)
    assert message.startswith("not_read: f.txt") and "read_file" in message


def test_missing_file_needs_bare_inserts():
    assert rejected(None, "+ 1:aa\n~x\n").startswith("not_found: f.txt does not exist")


def test_stale_anchor_names_file_line_and_what_to_reread():
    message = rejected(TEXT, "+ 2:00\n~x\n")
    assert message.startswith("stale_anchor: f.txt line 2: anchor 2:00")
    assert f"2:{line_hash('two')}|two" in message and "read_file start=1 end=4" in message


def test_out_of_range():
    message = rejected(TEXT, "+ 9:aa\n~x\n")
    assert message.startswith("out_of_range: f.txt: anchor 9:aa") and "5 lines" in message
    assert "lines start at 1" in rejected(TEXT, "+ 0:aa\n~x\n")
    assert rejected("", "+ 1:c5\n~x\n").startswith("out_of_range")


def test_overlapping_ranges_name_both_spans():
    first, second = f"{anchor(TEXT, 1)}..{anchor(TEXT, 3)}", f"{anchor(TEXT, 3)}..{anchor(TEXT, 4)}"
    message = rejected(TEXT, f"- {first}\n= {second}\n~x\n")
    assert message.startswith("overlap: f.txt: ranges") and first in message and second in message


def test_insert_inside_a_range_names_both_spans():
    span = f"{anchor(TEXT, 2)}..{anchor(TEXT, 4)}"
    message = rejected(TEXT, f"- {span}\n+ {anchor(TEXT, 3)}\n~x\n")
    assert "falls inside range" in message and span in message and f"+ {anchor(TEXT, 3)}" in message
    message = rejected(TEXT, f"- {span}\n< {anchor(TEXT, 4)}\n~x\n")
    assert "falls inside range" in message


def validator_rejections() -> list[tuple[str, bool, str, list[str]]]:
    """(ops, was_read, message start, what the message must also say: quotes and the fix).

    Patch line numbers count the `@@ f.txt` header as line 1.
    """
    a1, a2, a3, a4 = (anchor(TEXT, n) for n in (1, 2, 3, 4))
    return [
        (f"+ {a1}\n~x\n", False, "not_read: f.txt has not been read", ["read it with read_file"]),
        ("+ 2:00\n~x\n", True, "stale_anchor: f.txt line 2: anchor 2:00",
         ["patch line 2 `+ 2:00`", f"the line is now {a2}|two", "re-read f.txt (read_file start=1 end=4)"]),
        ("= 7:aa..7:aa\n~x\n", True, "out_of_range: f.txt: anchor 7:aa",
         ["patch line 2 `= 7:aa..7:aa`", "the file has 5 lines", "re-read f.txt"]),
        (f"- {a1}..{a3}\n= {a3}..{a4}\n~x\n", True, f"overlap: f.txt: ranges {a1}..{a3}",
         [f"patch line 2 `- {a1}..{a3}`", f"patch line 3 `= {a3}..{a4}`", "merge them into one op"]),
        (f"- {a2}..{a4}\n+ {a3}\n~x\n", True, f"overlap: f.txt: insert at {a3}",
         [f"patch line 3 `+ {a3}`", f"range {a2}..{a4} (patch line 2 `- {a2}..{a4}`)",
          "put those lines in the range's payload or anchor the insert outside the range"]),
    ]  # fmt: skip


@pytest.mark.parametrize("index", range(5))
def test_every_validator_rejection_quotes_the_op_and_says_how_to_fix_it(index):
    body, was_read, start, parts = validator_rejections()[index]
    message = rejected(TEXT, body, was_read=was_read)
    assert message.startswith(start)
    for part in parts:
        assert part in message


def test_every_problem_of_every_file_is_reported():
    targets = []
    for name, body in (("a", "+ 1:00\n~x\n"), ("b", "+ 7:00\n~x\n")):
        [section] = parse_patch(f"@@ {name}\n{body}")
        targets.append(FileTarget(name, TEXT, True, section.ops))
    with pytest.raises(PatchRejected) as info:
        plan_edits(targets)
    assert info.value.problems[0].startswith("stale_anchor: a line 1")
    assert info.value.problems[1].startswith("out_of_range: b:")


def test_edit_from_texts_reconstructs():
    old, new = "a\nb\nc\n", "a\nB\nc\nd\n"
    edit = edit_from_texts("f", old, new)
    assert apply_replacements(old, edit.replacements) == new
    assert (edit.added, edit.removed) == (2, 1)


# --- property tests: random files and random valid patches vs a straightforward list model ---

LINE = st.text(
    alphabet=st.one_of(
        st.sampled_from("ab \t~|:é数🙂\r"),
        st.characters(blacklist_characters="\n", blacklist_categories=("Cs",)),
    ),
    max_size=8,
)

PAYLOAD_LINE = LINE.filter(lambda line: not line.endswith("\r"))


@st.composite
def file_and_ops(draw):
    raw_lines = draw(st.lists(LINE, max_size=12))
    final_newline = draw(st.booleans())
    text = "\n".join(raw_lines) + ("\n" if final_newline and raw_lines else "")
    lines = split_lines(text)
    count = len(lines)
    taken: list[tuple[int, int]] = []
    ops: list[tuple] = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["+", "<", "-", "=", "+bare", "<bare"]))
        # A trailing "\r" on a patch line is read as CRLF transport, so payloads never end in one.
        payload = draw(st.lists(PAYLOAD_LINE, min_size=1 if kind[0] in "+<" else 0, max_size=3))
        if kind in ("+bare", "<bare"):
            ops.append((kind, None, None, payload))
            continue
        if count == 0:
            continue
        start = draw(st.integers(1, count))
        if kind in ("+", "<"):
            position = start + (0.5 if kind == "+" else -0.5)
            if any(low - 0.5 < position < high + 0.5 for low, high in taken):
                continue
            ops.append((kind, start, None, payload))
            continue
        end = draw(st.integers(start, min(count, start + 3)))
        if any(start <= high and low <= end for low, high in taken):
            continue
        if any(
            op[0] in "+<"
            and op[1] is not None
            and start - 0.5 < op[1] + (0.5 if op[0] == "+" else -0.5) < end + 0.5
            for op in ops
        ):
            continue
        taken.append((start, end))
        ops.append((kind, start, end, payload if kind == "=" else []))
    return text, lines, ops


def patch_text(lines: list[str], ops: list[tuple]) -> str:
    out = ["@@ f.txt"]
    for kind, start, end, payload in ops:
        if kind in ("+bare", "<bare"):
            out.append(kind[0])
        elif kind in ("+", "<"):
            out.append(f"{kind} {start}:{line_hash(lines[start - 1])}")
        else:
            out.append(
                f"{kind} {start}:{line_hash(lines[start - 1])}..{end}:{line_hash(lines[end - 1])}"
            )
        out.extend("~" + line for line in payload)
    return "\n".join(out) + "\n"


def reference_model(lines: list[str], ops: list[tuple]) -> str:
    """Walk gaps and lines: inserts at each gap in patch order, ranges replaced at their start."""
    count = len(lines)
    gaps: dict[int, list[str]] = {}
    ranges: dict[int, tuple[int, list[str]]] = {}
    for kind, start, end, payload in ops:
        if kind == "+bare":
            gaps.setdefault(count, []).extend(payload)
        elif kind == "<bare":
            gaps.setdefault(0, []).extend(payload)
        elif kind == "+":
            gaps.setdefault(start, []).extend(payload)
        elif kind == "<":
            gaps.setdefault(start - 1, []).extend(payload)
        else:
            ranges[start - 1] = (end, payload)
    out: list[str] = []
    index = 0
    for gap in range(count + 1):
        out.extend(gaps.get(gap, []))
        if gap < index or gap >= count:
            continue
        if gap in ranges:
            end, payload = ranges[gap]
            out.extend(payload)
            index = end
        else:
            out.append(lines[gap])
            index = gap + 1
    return "".join(line + "\n" for line in out)


@settings(max_examples=200, deadline=None)
@given(file_and_ops())
def test_random_valid_patches_match_the_list_model(case):
    text, lines, ops = case
    if not ops or uses_crlf(text):
        return  # CRLF files give inserted lines a "\r": the next test covers them
    edit = edit_one(text, patch_text(lines, ops).split("\n", 1)[1])
    assert edit.new_text == reference_model(lines, ops)
    assert apply_replacements(text, edit.replacements) == edit.new_text
    old_full = keep_lf(text)
    for replacement in edit.replacements:
        # Minimal: a replacement never starts or ends with a line it leaves as it was.
        new_full = keep_lf(replacement.text)
        if replacement.start < replacement.end and new_full:
            assert old_full[replacement.start] != new_full[0]
            assert old_full[replacement.end - 1] != new_full[-1]
        assert replacement.start < replacement.end or new_full


def keep_lf(text: str) -> list[str]:
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


@settings(max_examples=100, deadline=None)
@given(file_and_ops())
def test_random_patches_on_crlf_files_keep_crlf(case):
    _, lines, ops = case
    if not ops or not lines or any("\r" in line for line in lines):
        return
    crlf_lines = [line + "\r" for line in lines]
    text = "".join(line + "\n" for line in crlf_lines)
    ops = [
        (kind, start, end, [p for p in payload if "\r" not in p])
        for kind, start, end, payload in ops
    ]
    ops = [op for op in ops if op[3] or op[0] in "-="]
    if not ops:
        return
    edit = edit_one(text, patch_text(crlf_lines, ops).split("\n", 1)[1])
    expected_lines = split_lines(
        reference_model(crlf_lines, [(k, s, e, [p + "\r" for p in pl]) for k, s, e, pl in ops])
    )
    assert edit.new_text == "".join(line + "\n" for line in expected_lines)
    if lines:
        assert edit.new_text.count("\n") == edit.new_text.count("\r\n")
    assert apply_replacements(text, edit.replacements) == edit.new_text


def test_result_rows_of_many_windows_carry_each_line_s_own_number_and_hash():
    """Rows of every window are hashed in one batch: each row still gets its own line's hash."""
    text = "".join(
        f"    value_{index} = compute({index}, 'naïve 🙂')\n" for index in range(1, 2001)
    )
    body = "".join(
        f"= {anchor(text, number)}..{anchor(text, number)}\n~changed {number}\n"
        for number in range(5, 2001, 20)
    )
    edit = edit_one(text, body)
    new_lines = split_lines(edit.new_text)
    rows = render_edit_result(edit).split("\n")
    assert rows[0] == "Edited f.txt (+100 -100)"
    assert rows[-1].startswith("(more changes at lines ")
    shown = [row for row in rows[1:-1] if row != "..."]
    assert len(shown) == 200 and rows.count("...") > 10
    for row in shown:
        number, rest = row.split(":", 1)
        line = new_lines[int(number) - 1]
        assert rest == f"{line_hash(line)}|{line}"


@settings(max_examples=100, deadline=None)
@given(file_and_ops(), st.sampled_from([b"\xff", b"\xe2\x82", b"\xc3", b"\xed\xa0\x80"]))
def test_lines_from_bytes_with_undecodable_bytes_plan_the_same_edit(case, junk):
    """Undecodable bytes (kept as lone surrogates) decode the same line by line as whole."""
    _, lines, ops = case
    if not ops:
        return
    data = b"".join(line.encode() + junk + b"\n" for line in lines)
    text = decode_text(data)
    junk_lines = split_lines(text)
    body = patch_text(junk_lines, ops).split("\n", 1)[1]
    [section] = parse_patch(f"@@ f.txt\n{body}")
    [from_split] = plan_edits([FileTarget("f.txt", text, True, section.ops)])
    assert_same_edit(
        edit_from_bytes(text, body, was_read=True, name="f.txt", data=data), from_split
    )


def test_lines_from_bytes_across_many_newline_blocks():
    """A file spanning many of the newline index's blocks, some of them without any newline."""
    text = "".join(
        ("x" * 3000 if index % 7 == 0 else f"line {index} ü") + "\n" for index in range(1, 3001)
    )
    lines = split_lines(text)
    body = (
        "".join(
            f"= {anchor(text, number)}..{anchor(text, number)}\n~changed {number}\n"
            for number in range(3, 3001, 97)
        )
        + f"+ {anchor(text, 3000)}\n~end\n"
    )
    edit = edit_one(text, body)
    assert split_lines(edit.new_text)[-1] == "end" and len(lines) == 3000
