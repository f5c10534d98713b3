"""The pure parts of inline completions: cursor windows, neighbouring snippets, the multi-line
policy, suffix overlap and typing through a suggestion."""

from __future__ import annotations

from lsprotocol import types
from pygls.workspace import TextDocument
from pygls.workspace.position_codec import PositionCodec

from lich_core.completion.context import (
    COMPLETION_MAX_LINES,
    cursor_windows,
    cut_to_block,
    document_windows,
    rank_snippets,
    trim_suffix_overlap,
    typed_through,
)
from lich_lsp.completions import offset_at


def test_windows_cut_at_line_boundaries() -> None:
    text = "line one\nline two\nline three\nline four\n"
    offset = text.index("three")
    prefix, suffix = cursor_windows(text, offset, prefix_chars=12, suffix_chars=8)
    assert prefix == "line "  # the window reached into "line two": it starts at a line start
    assert suffix == "three\n"  # and ends at a line end
    assert cursor_windows(text, offset, 1_000, 1_000) == (text[:offset], text[offset:])
    assert cursor_windows("abc", 99, 10, 10) == ("abc", "")


def test_neighbour_snippets_pick_the_most_similar_window_per_document() -> None:
    around = "def total_price(order_items, discount_rate):\n    subtotal = sum(order_items)\n"
    related = "\n".join(["x = 1"] * 30 + ["def apply(order_items, discount_rate):"] + ["y"] * 30)
    unrelated = "import os\nprint('hello world')\n"
    documents = [("a.py", unrelated), ("b.py", related), ("c.py", "")]
    snippets = rank_snippets(
        around, [(path, document_windows(text)) for path, text in documents], limit=3
    )
    assert [s.path for s in snippets] == ["b.py"]
    assert "def apply(order_items, discount_rate):" in snippets[0].text
    assert rank_snippets("   ", [("b.py", document_windows(related))]) == ()


def test_after_code_the_body_it_opens_and_its_closing_bracket_are_kept() -> None:
    prefix = "class A:\n    def f(self"
    completion = "):\n        return 1\n\n    def g(self):\n        return 2"
    assert cut_to_block(completion, prefix) == ("):\n        return 1", True)
    braces = "function f() {\n  if (x) {"
    assert cut_to_block("\n    go();\n  }\n  other();", braces) == ("\n    go();\n  }", True)


def test_on_a_blank_line_the_siblings_in_the_block_are_kept() -> None:
    prefix = "def f():\n    a = 1\n    "
    completion = "b = 2\n    return a + b\n\ndef g():\n    pass"
    assert cut_to_block(completion, prefix) == ("b = 2\n    return a + b", True)
    assert cut_to_block("only line", prefix) == ("only line", False)
    long = "\n".join(["x"] + ["    y"] * 50)
    kept, cut = cut_to_block(long, prefix)
    assert cut and len(kept.split("\n")) == COMPLETION_MAX_LINES


def test_suffix_overlap_is_trimmed() -> None:
    assert trim_suffix_overlap("a, b)", ")\nnext") == "a, b"
    assert trim_suffix_overlap("x])", "])") == "x"
    assert trim_suffix_overlap(")", ")") == ""
    assert trim_suffix_overlap("value", "\nnext line") == "value"
    assert trim_suffix_overlap("value", "other") == "value"


def test_typing_through_a_suggestion_uses_what_is_left() -> None:
    assert typed_through("print(", "'hello')", "print('he") == "llo')"
    assert typed_through("print(", "'hello')", "print(x") is None  # typed something else
    assert typed_through("print(", "'hello')", "print") is None  # went back
    assert typed_through("print(", "'hello')", "print('hello')") is None  # typed all of it


def test_offsets_agree_with_pygls_in_every_encoding() -> None:
    text = "a = '😀x'\r\nb = 'é'\n\nlast"
    contents = ["a = '😀x'", "b = 'é'", "", "last"]
    for encoding in ("utf-16", "utf-8", "utf-32"):
        kind = types.PositionEncodingKind(encoding)
        doc = TextDocument("file:///t.py", text, position_codec=PositionCodec(kind))
        for line, content in enumerate(contents):
            units = 0
            for char in [*content, ""]:  # every position on the line, its end included
                position = types.Position(line=line, character=units)
                assert offset_at(text, position, encoding) == doc.offset_at_position(position), (
                    encoding,
                    line,
                    units,
                )
                if char:
                    size = len(char.encode("utf-16-le")) // 2 if encoding == "utf-16" else 1
                    units += len(char.encode("utf-8")) if encoding == "utf-8" else size
    # Past the end of a line: its end, before the line break.
    assert offset_at(text, types.Position(line=0, character=99), "utf-16") == len("a = '😀x'")
