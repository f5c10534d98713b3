"""The next-edit prompts and reading the model's answer (lich_core.next_edit.prompt)."""

from __future__ import annotations

from lich_core.next_edit.prompt import (
    CURSOR,
    EDITABLE_END,
    EDITABLE_START,
    START_OF_FILE,
    chat_prompt,
    excerpt_around,
    excerpt_text,
    parse_answer,
    region_closed,
    zeta_prompt,
)

LONG = "".join(f"line {n}\n" for n in range(200))


def test_the_region_is_whole_lines_around_the_cursor_within_its_bounds() -> None:
    cursor = LONG.index("line 100") + 3
    excerpt = excerpt_around("a.py", LONG, cursor, lines_above=2, lines_below=3)
    assert excerpt.region == "".join(f"line {n}\n" for n in range(98, 104))
    assert excerpt.start < excerpt.region_start and excerpt.end > excerpt.region_end
    small = excerpt_around("a.py", LONG, cursor, region_max_chars=30)
    assert len(small.region) <= 30 and "line 100\n" in small.region


def test_the_excerpt_has_the_markers_and_the_start_of_file() -> None:
    text = "def f():\n    return 1\n"
    excerpt = excerpt_around("src/f.py", text, text.index("1"))
    assert excerpt_text(excerpt) == (
        f"```src/f.py\n{START_OF_FILE}\n{EDITABLE_START}\n"
        f"def f():\n    return {CURSOR}1\n{EDITABLE_END}\n```"
    )
    later = excerpt_around("a.py", LONG, LONG.index("line 150"))
    assert START_OF_FILE not in excerpt_text(later)


def test_a_last_line_without_a_break_is_closed_for_the_marker_and_restored() -> None:
    text = "a = 1\nb = 2"
    excerpt = excerpt_around("a.py", text, len(text))
    assert f"b = 2{CURSOR}\n{EDITABLE_END}" in excerpt_text(excerpt)
    answer = f"{EDITABLE_START}\na = 1\nb = 3\n{EDITABLE_END}"
    assert parse_answer(answer, excerpt) == "a = 1\nb = 3"


def test_the_zeta_prompt_has_the_edits_then_the_excerpt() -> None:
    excerpt = excerpt_around("a.py", "x = 1\n", 0)
    prompt = zeta_prompt('User edited "a.py":\n```diff\n-y\n+x\n```', excerpt)
    assert prompt.startswith("### Instruction:\n")
    assert prompt.index("### User Edits:\n\nUser edited") < prompt.index("### User Excerpt:")
    assert prompt.endswith(f"{EDITABLE_END}\n```\n\n### Response:\n\n")


def test_the_chat_prompt_explains_the_markers_and_carries_the_same_parts() -> None:
    excerpt = excerpt_around("a.py", "x = 1\n", 0)
    prompt = chat_prompt("", excerpt)
    assert "(none yet)" in prompt and excerpt_text(excerpt) in prompt
    assert "Do not undo" in prompt


def test_the_answer_is_the_text_between_the_markers_only() -> None:
    excerpt = excerpt_around("a.py", "x = 1\ny = 2\n", 0)
    answer = (
        f"Sure! ```a.py\n{START_OF_FILE}\n{EDITABLE_START}\nx = 10{CURSOR}\ny = 2\n"
        f"{EDITABLE_END}\nz = 3\n```"
    )
    assert parse_answer(answer, excerpt) == "x = 10\ny = 2\n"
    assert parse_answer(f"{EDITABLE_START}\nx = 10\n", excerpt) is None  # never closed
    assert parse_answer("x = 10\n", excerpt) is None
    assert parse_answer(f"{EDITABLE_START}\n{START_OF_FILE}\n{EDITABLE_END}", excerpt) is None


def test_an_end_marker_right_after_the_last_line_still_ends_the_line() -> None:
    excerpt = excerpt_around("a.py", "x = 1\ny = 2\nz = 3\n", 0, lines_below=1)
    assert excerpt.region == "x = 1\ny = 2\n"
    assert parse_answer(f"{EDITABLE_START}\nx = 1\ny = 20{EDITABLE_END}", excerpt) == (
        "x = 1\ny = 20\n"
    )


def test_an_emptied_region_is_not_an_answer() -> None:
    excerpt = excerpt_around("a.py", "x = 1\n", 0)
    assert parse_answer(f"{EDITABLE_START}\n\n{EDITABLE_END}", excerpt) is None
    assert parse_answer(f"{EDITABLE_START}\n{EDITABLE_END}", excerpt) is None


def test_crlf_regions_come_back_in_crlf() -> None:
    text = "a = 1\r\nb = 2\r\n"
    excerpt = excerpt_around("a.py", text, 0)
    assert parse_answer(f"{EDITABLE_START}\na = 9\nb = 2\n{EDITABLE_END}", excerpt) == (
        "a = 9\r\nb = 2\r\n"
    )


def test_region_closed_needs_both_markers_in_order() -> None:
    assert not region_closed(f"{EDITABLE_END} {EDITABLE_START}")
    assert not region_closed(f"{EDITABLE_START} <|editable_region_e")
    assert region_closed(f"x {EDITABLE_START}\n...\n{EDITABLE_END}")
