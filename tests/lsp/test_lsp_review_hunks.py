"""Review per hunk over the wire: a real `python -m lich_lsp`, pytest-lsp, the fake provider, for
each client profile (visual-studio-code, neovim@v0.7.0, neovim, emacs).

The user types a line above a pending hunk with an incremental didChange (as editors send it):
the server moves the hunk's diagnostic with its lines, the Accept / Reject code actions the
client gets carry commands that apply the hunk as a versioned edit on the right lines (or reject
it), and the next task's first request to the model carries the rejection.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from lsp_harness import EditorClient, edit, provider_options
from lsprotocol import types

from tests.support.fake_provider import FakeProviderServer

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")

BASE = "".join(f"v{n} = {n}\n" for n in range(8))


def type_line_above(client: EditorClient, uri: str, line: int, text: str) -> None:
    """The user types `text` (a whole line) at the start of `line`: one incremental change."""
    doc = client.editor.docs[uri]
    lines = doc.text.splitlines(keepends=True)
    doc.text = "".join(lines[:line]) + text + "".join(lines[line:])
    doc.version += 1
    at = types.Position(line=line, character=0)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=doc.version),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(start=at, end=at), text=text
                )
            ],
        )
    )


def review_lines(client: EditorClient, uri: str) -> list[tuple[Any, int]]:
    return [
        (d.code, d.range.start.line)
        for d in client.diagnostics.get(uri, [])
        if d.source == "lich review"
    ]


async def code_actions(client: EditorClient, uri: str, line: int) -> dict[str, types.Command]:
    """The actions on `line`, as commands by title (literal CodeActions or bare Commands)."""
    at = types.Position(line=line, character=0)
    answer = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=at, end=at),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    commands: dict[str, types.Command] = {}
    for action in answer or []:
        command = action.command if isinstance(action, types.CodeAction) else action
        assert isinstance(command, types.Command), action
        commands[action.title] = command
    return commands


async def run(client: EditorClient, command: types.Command) -> Any:
    (argument,) = command.arguments or [None]
    return await client.command(command.command, argument)


async def test_accept_one_reject_one_with_the_user_typing_above(
    session, root: Path, client_name: str, fake_provider: FakeProviderServer
) -> None:
    (root / "r.py").write_text(BASE, encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("r.py", "v2 = 2", "v2 = 20")]},
        {"tool_calls": [edit("r.py", "v6 = 6", "v6 = 60\nv6b = 61")]},
        {"text": "Bumped."},
        {"text": "Understood."},
    )
    options = provider_options(fake_provider, edit_mode="review", review_style="hunks")
    client = await session(client_name, init_options=options)
    uri = client.open(root / "r.py")
    result = await client.command("lich.ask", {"prompt": "bump"})
    assert result["review"] == "2 changes pending review in r.py"
    assert client.editor.applied == [] and client.text(uri) == BASE
    await client.wait_until(
        lambda: len(review_lines(client, uri)) == 2, what="two lich review diagnostics"
    )
    assert review_lines(client, uri) == [("t1-1", 2), ("t1-2", 6)]
    hint = next(d for d in client.diagnostics[uri] if d.code == "t1-1")
    assert hint.severity == types.DiagnosticSeverity.Hint and "+ v2 = 20" in hint.message

    # A line typed above the first hunk: both diagnostics move down one line.
    type_line_above(client, uri, 1, "import os\n")
    await client.wait_until(
        lambda: review_lines(client, uri) == [("t1-1", 3), ("t1-2", 7)],
        what="the hunks to follow their lines",
    )

    on_first = await code_actions(client, uri, 3)
    assert {"Accept hunk t1-1", "Reject hunk t1-1", "Accept all in file", "Reject all"} <= set(
        on_first
    )
    on_second = await code_actions(client, uri, 7)
    accepted = await run(client, on_second["Accept hunk t1-2"])
    assert accepted["ok"] is True and accepted["accepted"] == ["t1-2"]
    expected = BASE.replace("v1 = 1\n", "import os\nv1 = 1\n").replace(
        "v6 = 6\n", "v6 = 60\nv6b = 61\n"
    )
    assert client.text(uri) == expected
    (applied,) = client.editor.applied
    if applied.edit.document_changes is not None:
        (doc_edit,) = applied.edit.document_changes
        assert doc_edit.text_document.version == 2  # the version after the user's typing
    await client.wait_until(
        lambda: review_lines(client, uri) == [("t1-1", 3)], what="t1-2's diagnostic to clear"
    )

    rejected = await run(client, on_first["Reject hunk t1-1"])
    assert rejected == {"ok": True, "rejected": ["t1-1"], "pending": 0}
    await client.wait_until(
        lambda: review_lines(client, uri) == [], what="t1-1's diagnostic to clear"
    )
    assert client.text(uri) == expected and len(client.editor.applied) == 1

    # The next task's first model request says what the user rejected.
    await client.command("lich.ask", {"prompt": "next", "mode": "apply"})
    first_of_next = json.dumps(fake_provider.requests[3]["json"]["messages"])
    assert "The user rejected your proposed change t1-1 to r.py" in first_of_next
    assert "v2 = 20" in first_of_next
    assert "dropped" not in first_of_next  # the accepted hunk's own echo is not the user's edit


async def test_typing_on_a_hunks_line_drops_it(
    session, root: Path, fake_provider: FakeProviderServer
) -> None:
    (root / "r.py").write_text(BASE, encoding="utf-8")
    fake_provider.script({"tool_calls": [edit("r.py", "v2 = 2", "v2 = 20")]}, {"text": "Bumped."})
    client = await session(
        "neovim", init_options=provider_options(fake_provider, edit_mode="review")
    )
    uri = client.open(root / "r.py")
    await client.command("lich.ask", {"prompt": "bump"})
    await client.wait_until(
        lambda: review_lines(client, uri) == [("t1-1", 2)], what="the hunk's diagnostic"
    )
    doc = client.editor.docs[uri]
    doc.text = BASE.replace("v2 = 2\n", "v2 = 2  # keep\n")
    doc.version += 1
    start, end = types.Position(line=2, character=6), types.Position(line=2, character=6)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=doc.version),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(start=start, end=end), text="  # keep"
                )
            ],
        )
    )
    await client.wait_until(
        lambda: review_lines(client, uri) == [], what="the hit hunk to be dropped"
    )
    answer = await client.command("lich.acceptHunk", {"hunk_id": "t1-1"})
    assert answer["ok"] is False and answer["error"].startswith("not_found:")
    assert client.editor.applied == [] and client.text(uri) == doc.text
