"""Review per hunk at scale, over the wire: 2,000 pending hunks in one 4,000-line file, followed
through the user's incremental edits by a real `python -m lich_lsp` (the hunks are found by
bisection and moved in place, lich_lsp.hunk_tracking.carry_sorted: this checks that every one
still lands on its own lines). Also, as pure functions: carry_sorted agrees with track_span.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lsp_harness import EditorClient, provider_options
from lsprotocol import types

from lich_lsp.hunk_tracking import LineEdit, Span, carry_sorted, track_span
from tests.support.fake_provider import FakeProviderServer

pytestmark = [
    pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning"),
    pytest.mark.timeout(120),
]

LINES = 4000
HUNKS = LINES // 2
BASE = "".join(f"value_{n:04d} = {n}\n" for n in range(LINES))
# Every even line changed: 2,000 one-line hunks, t1-1 on line 0 ... t1-2000 on line 3998.
PROPOSED = "".join(f"value_{n:04d} = {n}{' + 1' if n % 2 == 0 else ''}\n" for n in range(LINES))


def change(
    client: EditorClient, uri: str, start: tuple[int, int], end: tuple[int, int], text: str
) -> None:
    """One incremental didChange replacing [start, end) with `text`, as an editor sends it."""
    doc = client.editor.docs[uri]
    lines = doc.text.splitlines(keepends=True)
    begin = sum(len(line) for line in lines[: start[0]]) + start[1]
    finish = sum(len(line) for line in lines[: end[0]]) + end[1]
    doc.text = doc.text[:begin] + text + doc.text[finish:]
    doc.version += 1
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=doc.version),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(start=types.Position(*start), end=types.Position(*end)),
                    text=text,
                )
            ],
        )
    )


async def listed(client: EditorClient, uri: str) -> list[dict[str, Any]]:
    answer = await client.command("lich.reviewList", {"uri": uri})
    return list(answer["hunks"])


def assert_on_their_lines(client: EditorClient, uri: str, hunks: list[dict[str, Any]]) -> None:
    """Every listed hunk's old text is what the editor's buffer holds on its lines."""
    lines = client.text(uri).splitlines(keepends=True)
    wrong = [
        h["hunk_id"]
        for h in hunks
        if "".join(lines[h["start_line"] : h["end_line"]]) != h["old_text"]
    ]
    assert wrong == []


def review_lines(client: EditorClient, uri: str) -> list[int]:
    return [
        d.range.start.line for d in client.diagnostics.get(uri, []) if d.source == "lich review"
    ]


async def test_two_thousand_hunks_follow_the_users_edits(
    session: Any, root: Path, fake_provider: FakeProviderServer
) -> None:
    (root / "big.py").write_text(BASE, encoding="utf-8")
    fake_provider.script(
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "big.py", "content": PROPOSED}}
            ]
        },
        {"text": "Bumped every other value."},
    )
    client = await session(
        "neovim", init_options=provider_options(fake_provider, edit_mode="review")
    )
    uri = client.open(root / "big.py")
    result = await client.command("lich.ask", {"prompt": "bump"})
    assert result["review"] == f"{HUNKS} changes pending review in big.py"
    await client.wait_until(
        lambda: len(review_lines(client, uri)) == HUNKS, what="2,000 review diagnostics"
    )

    # A line typed at the top: every hunk (and its diagnostic) moves down one line.
    change(client, uri, (0, 0), (0, 0), "import os\n")
    hunks = await listed(client, uri)
    assert [(h["hunk_id"], h["start_line"], h["end_line"]) for h in hunks] == [
        (f"t1-{n + 1}", 2 * n + 1, 2 * n + 2) for n in range(HUNKS)
    ]
    assert_on_their_lines(client, uri, hunks)
    await client.wait_until(
        lambda: review_lines(client, uri) == [2 * n + 1 for n in range(HUNKS)],
        what="the diagnostics to move down",
    )

    # Typing between two hunks (line 1002 lies between t1-501 and t1-502) moves and drops nothing.
    change(client, uri, (1002, 4), (1002, 4), "x")
    assert [(h["hunk_id"], h["start_line"]) for h in await listed(client, uri)] == [
        (h["hunk_id"], h["start_line"]) for h in hunks
    ]

    # Typing on t1-1001's line drops that hunk alone.
    change(client, uri, (2001, 5), (2001, 5), "  # mine")
    hunks = await listed(client, uri)
    assert len(hunks) == HUNKS - 1 and "t1-1001" not in {h["hunk_id"] for h in hunks}
    assert_on_their_lines(client, uri, hunks)

    # Two lines deleted in the middle (the one between t1-1500 and t1-1501, and t1-1501's own):
    # t1-1501 is dropped, the hunks below move up two lines, those above stay.
    change(client, uri, (3000, 0), (3002, 0), "")
    hunks = await listed(client, uri)
    by_id = {h["hunk_id"]: h["start_line"] for h in hunks}
    assert len(hunks) == HUNKS - 2 and "t1-1501" not in by_id
    assert (by_id["t1-1500"], by_id["t1-1502"], by_id["t1-2000"]) == (2999, 3001, 3997)
    assert_on_their_lines(client, uri, hunks)

    # The code actions on a hunk's line offer that hunk, and only it.
    at = types.Position(line=3001, character=0)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=at, end=at),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    titles = [a.title for a in actions or [] if a.title.startswith(("Accept hunk", "Reject hunk"))]
    assert titles == ["Accept hunk t1-1502", "Reject hunk t1-1502"]


class Item:
    def __init__(self, start: int, end: int) -> None:
        self.start, self.end = start, end


SPANS = st.lists(st.tuples(st.integers(0, 40), st.integers(0, 6)), max_size=30)
EDITS = st.lists(
    st.tuples(st.integers(0, 45), st.integers(0, 6), st.integers(0, 4)), min_size=1, max_size=6
)


@settings(max_examples=300, deadline=None)
@given(spans=SPANS, edits=EDITS)
def test_carry_sorted_moves_and_drops_as_track_span_does(
    spans: list[tuple[int, int]], edits: list[tuple[int, int, int]]
) -> None:
    """Whatever the spans (overlapping ones, insertion points) and edits, the sorted carry keeps
    what track_span keeps, at the same lines, in order, and removes exactly the hit ones."""
    items = sorted(
        (Item(start, start + length) for start, length in spans), key=lambda item: item.start
    )
    longest = max((item.end - item.start for item in items), default=0)
    expected: list[Span | None] = [Span(item.start, item.end) for item in items]
    carried = list(items)
    for start, length, count in edits:
        edit = LineEdit(start, start + length, count)
        survivors = [item for item, span in zip(items, expected, strict=True) if span is not None]
        step = carry_sorted(carried, edit, longest)
        expected = [None if span is None else track_span(span, edit) for span in expected]
        hit = [
            item
            for item, span in zip(items, expected, strict=True)
            if span is None and item in survivors
        ]
        assert step.hit == hit
    assert [Span(item.start, item.end) for item in carried] == [
        span for span in expected if span is not None
    ]
