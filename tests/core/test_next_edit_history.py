"""The recent edits next edits are asked with (lich_core.next_edit.history): what a change
records, how keystrokes coalesce, what is forgotten, and the diff each edit is shown as."""

from __future__ import annotations

from lich_core.next_edit.history import (
    COALESCE_S,
    MAX_AGE_S,
    MAX_EDITS,
    EditHistory,
    RecentEdit,
    changed_span,
    lines_of,
    render_edits,
    unified_diff,
)

TEXT = "".join(f"line {n}\n" for n in range(1, 21))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def edited(text: str, line: int, new: str) -> str:
    lines = text.splitlines(keepends=True)
    lines[line] = new
    return "".join(lines)


def test_the_changed_span_is_whole_lines_where_the_texts_differ() -> None:
    old = "a\nb\nc\n"
    assert changed_span(old, "a\nB\nc\n") == (2, 4, 4)
    assert changed_span(old, "a\nbe\nc\n") == (2, 4, 5)  # typing inside a line: the line
    assert changed_span(old, "a\nb\nx\nc\n") == (4, 4, 6)  # an inserted line
    assert changed_span(old, "a\nc\n") == (2, 4, 2)  # a deleted line
    assert changed_span(old, "a\nb\nc") == (4, 6, 5)  # the last line break removed
    assert changed_span(old, old) is None


def test_the_changed_span_of_a_big_text_is_found_past_the_compare_chunks() -> None:
    big = "".join(f"line {n}\n" for n in range(5000))
    at = big.index("line 2500\n") + len("line 25")
    changed = big[:at] + "X" + big[at:]
    start, old_end, new_end = changed_span(big, changed)
    assert big[start:old_end] == "line 2500\n" and changed[start:new_end] == "line 25X00\n"


def test_lines_of_keeps_the_breaks_and_a_last_line_without_one() -> None:
    assert lines_of("a\nb") == ["a\n", "b"]
    assert lines_of("a\n\n") == ["a\n", "\n"]
    assert lines_of("") == []


def test_keystrokes_on_one_line_coalesce_into_one_edit() -> None:
    clock = Clock()
    history = EditHistory(now=clock)
    text = TEXT
    for typed in ("line 5x\n", "line 5xy\n", "line 5xyz\n"):
        new = edited(TEXT, 4, typed)
        history.record("a.py", text, new)
        text = new
        clock.now += 1
    (edit,) = history.recent()
    assert edit.start == 4 and edit.old == ["line 5\n"] and edit.new == ["line 5xyz\n"]
    assert edit.offset == text.index("line 5xyz") and text[edit.offset : edit.end_offset] == (
        "line 5xyz\n"
    )
    assert edit.before == ["line 2\n", "line 3\n", "line 4\n"]
    assert edit.after == ["line 6\n", "line 7\n", "line 8\n"]


def test_a_change_on_the_next_line_joins_but_one_far_away_does_not() -> None:
    clock = Clock()
    history = EditHistory(now=clock)
    first = edited(TEXT, 4, "LINE 5\n")
    history.record("a.py", TEXT, first)
    second = edited(first, 5, "LINE 6\n")
    history.record("a.py", first, second)
    (edit,) = history.recent()
    assert edit.old == ["line 5\n", "line 6\n"] and edit.new == ["LINE 5\n", "LINE 6\n"]
    assert second[edit.offset : edit.end_offset] == "LINE 5\nLINE 6\n"
    # A change on the line above joins too.
    third = edited(second, 3, "LINE 4\n")
    history.record("a.py", second, third)
    (edit,) = history.recent()
    assert edit.start == 3 and edit.old == ["line 4\n", "line 5\n", "line 6\n"]
    assert third[edit.offset : edit.end_offset] == "LINE 4\nLINE 5\nLINE 6\n"
    second = third
    far = edited(second, 15, "LINE 16\n")
    history.record("a.py", second, far)
    assert [e.start for e in history.recent()] == [3, 15]


def test_a_change_after_the_coalescing_window_or_in_another_file_is_a_new_edit() -> None:
    clock = Clock()
    history = EditHistory(now=clock)
    first = edited(TEXT, 4, "x\n")
    history.record("a.py", TEXT, first)
    clock.now += COALESCE_S + 1
    history.record("a.py", first, edited(first, 4, "xy\n"))
    history.record("b.py", TEXT, first)
    assert [(e.path, e.old, e.new) for e in history.recent()] == [
        ("a.py", ["line 5\n"], ["x\n"]),
        ("a.py", ["x\n"], ["xy\n"]),
        ("b.py", ["line 5\n"], ["x\n"]),
    ]


def test_inserted_lines_then_typed_on_coalesce_with_the_original_lines() -> None:
    history = EditHistory(now=Clock())
    inserted = TEXT.replace("line 3\n", "line 3\n\n")
    history.record("a.py", TEXT, inserted)
    typed = inserted.replace("line 3\n\n", "line 3\nnew()\n")
    history.record("a.py", inserted, typed)
    (edit,) = history.recent()
    assert edit.start == 3 and edit.old == [] and edit.new == ["new()\n"]


def test_typing_the_lines_back_drops_the_edit() -> None:
    history = EditHistory(now=Clock())
    changed = edited(TEXT, 2, "oops\n")
    history.record("a.py", TEXT, changed)
    history.record("a.py", changed, TEXT)
    assert history.recent() == []


def test_only_the_last_few_and_recent_edits_are_kept() -> None:
    clock = Clock()
    history = EditHistory(now=clock)
    text = TEXT
    for line in range(0, 20, 3):  # far enough apart not to coalesce
        new = edited(text, line, f"edit {line}\n")
        history.record("a.py", text, new)
        text = new
    kept = history.recent()
    assert len(kept) == MAX_EDITS
    assert kept[-1].new == ["edit 18\n"]
    clock.now += MAX_AGE_S + 1
    assert history.recent() == []
    assert history.latest("a.py") is None


def test_latest_is_the_newest_edit_of_that_file() -> None:
    history = EditHistory(now=Clock())
    history.record("a.py", TEXT, edited(TEXT, 1, "a\n"))
    history.record("b.py", TEXT, edited(TEXT, 1, "b\n"))
    assert history.latest("a.py").new == ["a\n"]  # an edit of another file since
    assert history.latest("b.py").new == ["b\n"]
    assert history.latest("c.py") is None
    history.forget("b.py")
    assert history.latest("b.py") is None and len(history.recent()) == 1


def test_the_diff_has_the_files_line_numbers_and_context() -> None:
    edit = RecentEdit(
        "src/calc.py",
        start=9,
        old=["    count = 0\n"],
        new=["    total = 0\n"],
        at=0,
        before=["a\n", "b\n", "c\n"],
        after=["d\n"],
    )
    assert unified_diff(edit) == ("@@ -7,5 +7,5 @@\n a\n b\n c\n-    count = 0\n+    total = 0\n d")
    rendered = render_edits([edit], max_chars=10_000)
    assert rendered.startswith('User edited "src/calc.py":\n```diff\n@@ -7,5 +7,5 @@')
    assert rendered.endswith("\n d\n```")


def test_rendering_keeps_the_newest_edits_within_the_bound() -> None:
    edits = [
        RecentEdit("a.py", start=n, old=[f"old {n}\n"], new=[f"new {n}\n"], at=0) for n in range(3)
    ]
    one = len(render_edits(edits[-1:], max_chars=10_000))
    rendered = render_edits(edits, max_chars=2 * one + 2)
    assert "new 0" not in rendered and "new 1" in rendered and "new 2" in rendered
    assert rendered.index("new 1") < rendered.index("new 2")  # oldest first
