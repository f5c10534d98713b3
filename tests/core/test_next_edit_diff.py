"""The rewritten region as minimal edits, and dropping one that undoes the user's edit
(lich_core.next_edit.diff)."""

from __future__ import annotations

from lich_core.next_edit.diff import TextEdit, minimal_edit, region_edits, undoes

DOC = "head\ndef f(count):\n    x = count\n    return count\ntail\n"
REGION_START = DOC.index("def")
REGION_END = DOC.index("tail")


def apply(text: str, edits: list[TextEdit]) -> str:
    for edit in reversed(edits):
        text = text[: edit.start] + edit.text + text[edit.end :]
    return text


def test_an_unchanged_region_gives_no_edits() -> None:
    assert region_edits(DOC, REGION_START, REGION_END, DOC[REGION_START:REGION_END]) == []


def test_a_rename_gives_one_word_sized_edit_per_line() -> None:
    rewritten = DOC[REGION_START:REGION_END].replace("count", "total")
    edits = region_edits(DOC, REGION_START, REGION_END, rewritten)
    assert [DOC[e.start : e.end] for e in edits] == ["count", "count", "count"]
    assert apply(DOC, edits) == DOC.replace("count", "total")


def test_inserted_and_deleted_lines_are_one_edit_per_hunk() -> None:
    region = DOC[REGION_START:REGION_END]
    rewritten = region.replace("    x = count\n", "    x = count\n    y = x * 2\n    z = y\n")
    (edit,) = region_edits(DOC, REGION_START, REGION_END, rewritten)
    assert edit.start == edit.end == DOC.index("    return")
    assert edit.text == "    y = x * 2\n    z = y\n"
    deleted = region.replace("    x = count\n", "")
    (edit,) = region_edits(DOC, REGION_START, REGION_END, deleted)
    assert DOC[edit.start : edit.end] == "    x = count\n" and edit.text == ""
    assert apply(DOC, [edit]) == DOC.replace("    x = count\n", "")


def test_separate_hunks_are_separate_edits_in_order() -> None:
    region = DOC[REGION_START:REGION_END]
    rewritten = region.replace("def f(", "def g(").replace("return count", "return count + 1")
    edits = region_edits(DOC, REGION_START, REGION_END, rewritten)
    assert [e.text for e in edits] == ["g", " + 1"]
    assert apply(DOC, edits) == DOC.replace("def f(", "def g(").replace("count\nt", "count + 1\nt")


def test_minimal_edit_keeps_the_shared_ends() -> None:
    assert minimal_edit(10, "value = 1", "value = 2") == TextEdit(18, 19, "2")
    assert minimal_edit(0, "aa", "aaa") == TextEdit(2, 2, "a")


def test_an_edit_that_restores_the_users_old_lines_undoes_it() -> None:
    doc = "x = total\ny = 1\n"
    start, end, before = 0, len("x = total\n"), "x = count\n"  # the user renamed count to total
    assert undoes(TextEdit(4, 9, "count"), doc, start, end, before)
    assert not undoes(TextEdit(4, 9, "sum"), doc, start, end, before)
    assert not undoes(TextEdit(14, 15, "2"), doc, start, end, before)  # elsewhere
    # The user deleted a line; putting it back undoes it.
    assert undoes(TextEdit(0, 0, "old line\n"), doc, 0, 0, "old line\n")
