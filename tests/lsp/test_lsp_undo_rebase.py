"""lich_lsp/undo_rebase.py: undoing a task's changes to one file through the user's later edits
(pure functions over strings; the server's use of them is in test_lsp_undo*.py)."""

from __future__ import annotations

import random

import pytest

from lich_core.hashline.replacements import apply_replacements, line_replacements
from lich_core.vocabulary import LineReplacement
from lich_lsp.undo_rebase import (
    Conflict,
    Step,
    changed_lines,
    line_mapper,
    overlaps,
    plan_undo,
    rebase,
)

BASE = "".join(f"line {i}\n" for i in range(1, 11))  # line 1 .. line 10
# The task changed line 5 and deleted line 8.
RESULT = BASE.replace("line 5\n", "line five\n").replace("line 8\n", "")


def _check_replacements(current: str, plan) -> None:
    """The plan's replacements are what the editor gets: they must turn `current` into the text."""
    assert apply_replacements(current, plan.replacements) == plan.new_text
    spans = [(r.start, r.end) for r in plan.replacements]
    assert spans == sorted(spans)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))


def test_a_file_as_the_task_left_it_is_undone_with_the_minimal_inverse() -> None:
    plan = plan_undo([Step(BASE, RESULT)], RESULT)
    assert plan.outcome == "undone"
    assert plan.new_text == BASE
    assert plan.replacements == line_replacements(RESULT, BASE)
    assert plan.replacements == (
        LineReplacement(4, 5, "line 5\n"),
        LineReplacement(7, 7, "line 8\n"),
    )
    _check_replacements(RESULT, plan)


def test_user_edits_above_and_below_are_kept_and_the_inverse_shifted() -> None:
    # Two lines added at the top, line 10 changed: none of it touches lines 5 or 8.
    current = "# a\n# b\n" + RESULT.replace("line 10\n", "line ten\n")
    plan = plan_undo([Step(BASE, RESULT)], current)
    assert plan.outcome == "rebased"
    assert plan.new_text == "# a\n# b\n" + BASE.replace("line 10\n", "line ten\n")
    # The task's two hunks, two lines further down.
    assert plan.replacements == (
        LineReplacement(6, 7, "line 5\n"),
        LineReplacement(9, 9, "line 8\n"),
    )
    _check_replacements(current, plan)


def test_a_user_edit_on_a_line_the_task_changed_refuses_the_file() -> None:
    current = "# a\n" + RESULT.replace("line five\n", "line FIVE\n")
    plan = plan_undo([Step(BASE, RESULT)], current)
    assert plan.outcome == "refused"
    assert plan.new_text is None and plan.replacements == ()
    # Line 6 of the current text (one line was added above it).
    assert plan.conflict == (6, 6)
    assert "line 6" in plan.reason


def test_user_lines_right_next_to_the_tasks_are_not_a_conflict() -> None:
    # The user changed line 4 and line 6, the neighbours of the task's line 5.
    current = RESULT.replace("line 4\n", "line four\n").replace("line 6\n", "line six\n")
    plan = plan_undo([Step(BASE, RESULT)], current)
    assert plan.outcome == "rebased"
    assert plan.new_text == BASE.replace("line 4\n", "line four\n").replace(
        "line 6\n", "line six\n"
    )
    _check_replacements(current, plan)


def test_an_insertion_where_the_task_deleted_lines_is_a_conflict() -> None:
    # The task deleted line 8 (its inverse inserts it back between line 7 and line 9); the user
    # inserted a line there too: which goes first is unknown.
    current = RESULT.replace("line 7\n", "line 7\nmine\n")
    plan = plan_undo([Step(BASE, RESULT)], current)
    assert plan.outcome == "refused"
    assert plan.conflict == (8, 8)  # the user's line


def test_a_user_insertion_inside_the_tasks_lines_is_a_conflict() -> None:
    base = "a\nb\nc\nd\n"
    result = "a\nB\nC\nd\n"
    current = "a\nB\nmine\nC\nd\n"
    assert plan_undo([Step(base, result)], current).outcome == "refused"


def test_a_hunk_the_user_reverted_by_hand_is_not_a_conflict() -> None:
    # The user put line 5 back themselves; the deleted line 8 is still the task's.
    current = RESULT.replace("line five\n", "line 5\n")
    plan = plan_undo([Step(BASE, RESULT)], current)
    assert plan.outcome == "rebased"
    assert plan.new_text == BASE
    _check_replacements(current, plan)
    # Everything reverted by hand: nothing left to do.
    assert plan_undo([Step(BASE, RESULT)], BASE).outcome == "unchanged"


def test_a_last_line_without_newline() -> None:
    base = "a\nb\nc"
    result = "a\nb\nC"
    assert plan_undo([Step(base, result)], result).new_text == base
    # The user added a line after the last one: the last line gained its newline, which is an
    # edit of the task's line.
    assert plan_undo([Step(base, result)], "a\nb\nC\nd").outcome == "refused"
    rebased = plan_undo([Step(base, result)], "x\na\nb\nC")
    assert (rebased.outcome, rebased.new_text) == ("rebased", "x\na\nb\nc")


def test_created_files() -> None:
    made = Step(None, "new\n")
    undone = plan_undo([made], "new\n")
    assert (undone.outcome, undone.new_text, undone.replacements) == ("undone", None, ())
    refused = plan_undo([made], "new\nmine\n")
    assert refused.outcome == "refused" and "created" in refused.reason
    assert plan_undo([made], None).outcome == "unchanged"


def test_deleted_files() -> None:
    gone = Step("old\n", None)
    back = plan_undo([gone], None)
    assert (back.outcome, back.new_text) == ("undone", "old\n")
    refused = plan_undo([gone], "something else\n")
    assert refused.outcome == "refused" and "exists there again" in refused.reason
    assert plan_undo([gone], "old\n").outcome == "unchanged"
    # Edited by the task, then deleted by the user.
    assert plan_undo([Step("a\n", "b\n")], None).outcome == "refused"


def test_steps_around_a_user_edit_are_undone_newest_first() -> None:
    # Step 1 changed line 2; the user then changed line 9; step 2 (computed from the user's
    # text) changed line 5. Undoing both keeps the user's line 9.
    user = RESULT.replace("line 10\n", "line ten\n")
    step1 = Step(BASE, RESULT)
    after2 = user.replace("line 2\n", "line two\n")
    step2 = Step(user, after2)
    current = "top\n" + after2
    plan = plan_undo([step1, step2], current)
    assert plan.outcome == "rebased"
    assert plan.new_text == "top\n" + BASE.replace("line 10\n", "line ten\n")
    _check_replacements(current, plan)
    # As the task left it: the user's line 9 (between the steps) is kept all the same.
    exact = plan_undo([step1, step2], after2)
    assert exact.outcome == "rebased" and exact.new_text == BASE.replace("line 10\n", "line ten\n")


def test_rebase_and_overlap_directly() -> None:
    assert overlaps(LineReplacement(2, 2, "x\n"), LineReplacement(2, 2, "y\n"))
    assert not overlaps(LineReplacement(2, 2, "x\n"), LineReplacement(2, 3, "y\n"))
    assert overlaps(LineReplacement(3, 3, "x\n"), LineReplacement(2, 4, "y\n"))
    assert not overlaps(LineReplacement(1, 2, "x\n"), LineReplacement(2, 3, "y\n"))
    with pytest.raises(Conflict) as caught:
        rebase([LineReplacement(1, 2, "b\n")], "a\nB\nc\n", "a\nBB\nc\n")
    assert caught.value.lines == (2, 2)
    assert rebase([LineReplacement(2, 3, "c\n")], "a\nb\nC\n", "z\na\nb\nC\n") == (
        LineReplacement(3, 4, "c\n"),
    )


def test_changed_lines_follow_the_users_edits() -> None:
    step = Step(BASE, RESULT)
    # Line 5 (index 4) written; the deletion of line 8 shows on the line after it (index 7).
    assert changed_lines(step) == [(4, 5), (7, 8)]
    current = "# a\n# b\n" + RESULT
    to_current = line_mapper(RESULT, current)
    assert [to_current(line) for line in (0, 4, 7)] == [2, 6, 9]
    # A line inside a user edit maps to the edit's first line.
    edited = RESULT.replace("line 3\nline 4\n", "x\n")
    assert line_mapper(RESULT, edited)(3) == 2
    assert changed_lines(Step("a\n", None)) == []


def _segments(rng: random.Random) -> tuple[str, str, str, str]:
    """A random file as segments: untouched, changed by the task, or changed by the user after
    the task, each changed one followed by an untouched one. Lines are unique, so every diff is
    exact. Returns (base, result, current, expected text after the undo)."""
    counter = iter(range(1_000_000))

    def lines(count: int) -> list[str]:
        return [f"l{next(counter)}\n" for _ in range(count)]

    base: list[str] = []
    result: list[str] = []
    current: list[str] = []
    expected: list[str] = []
    for _ in range(rng.randint(1, 8)):
        kind = rng.choice(["task", "user", "plain"])
        if kind == "task":
            old, new = lines(rng.randint(0, 3)), lines(rng.randint(0, 3))
            if not old and not new:
                new = lines(1)
            base += old
            result += new
            current += new
            expected += old
        elif kind == "user":
            old, new = lines(rng.randint(0, 3)), lines(rng.randint(0, 3))
            if not old and not new:
                new = lines(1)
            base += old
            result += old
            current += new
            expected += new
        plain = lines(rng.randint(1, 3))
        for part in (base, result, current, expected):
            part += plain
    return "".join(base), "".join(result), "".join(current), "".join(expected)


def test_undo_through_random_non_overlapping_user_edits() -> None:
    rng = random.Random(20240917)
    outcomes = set()
    for _ in range(400):
        base, result, current, expected = _segments(rng)
        if base == result:
            continue
        plan = plan_undo([Step(base, result)], current)
        outcomes.add(plan.outcome)
        if expected == current:
            assert plan.outcome == "unchanged"
            continue
        assert plan.outcome in ("undone", "rebased"), (base, result, current, plan)
        assert plan.new_text == expected
        _check_replacements(current, plan)
    assert {"undone", "rebased"} <= outcomes
