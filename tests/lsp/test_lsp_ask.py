"""lich.ask over the wire: a real `python -m lich_lsp`, the fake provider over HTTP, the pytest-lsp
test editor applying edits; every client profile, and pytest-lsp's LspSpecificationWarning is an error.

A smoke set only: one ask that edits an open and a closed file (edits, progress, lich/event,
showDocument as they go over the wire), an edit the editor rejects, and a codeAction request
answered while an executeCommand is still running. The ask behaviours themselves (stale
rejection, serialised edits, the save protocol, quick prompts, context, retries...) are tested
in-process in test_session_ask.py.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsp_harness import edit, provider_options, tool_messages, uri_of
from lsprotocol import types

from lich_core.userstate import workspace_state_dir
from tests.support.event_schema import assert_valid_event

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")


async def test_ask_edits_an_open_and_a_closed_file(
    session, root: Path, client_name: str, fake_provider
) -> None:
    (root / "open.py").write_text("x = 1\ny = 2\n", encoding="utf-8")
    (root / "closed.py").write_text("a = 1\n", encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("open.py", "y = 2", "y = 3"), edit("closed.py", "a = 1", "a = 10")]},
        {"text": "done: both edited"},
    )
    # An integration that asks for the transcript (show_transcript; off by default).
    options = provider_options(fake_provider, show_transcript=True)
    client = await session(client_name, init_options=options)
    open_uri = client.open(root / "open.py", "x = 1\ny = 2\n# unsaved note\n")
    result = await client.command("lich.ask", {"prompt": "bump the numbers"})
    assert result["stopped_reason"] == "final"
    assert result["final"] == "done: both edited"
    assert result["task_id"]
    assert set(result["edited"]) == {open_uri, uri_of(root / "closed.py")}
    # The open file changed in the editor (unsaved text kept), not behind it on disk.
    assert client.text(open_uri) == "x = 1\ny = 3\n# unsaved note\n"
    assert (root / "open.py").read_text(encoding="utf-8") == "x = 1\ny = 2\n"
    # Without experimental.lich.saveDocuments the closed file is written to disk (policy "auto").
    assert (root / "closed.py").read_text(encoding="utf-8") == "a = 10\n"
    edits = client.editor.applied
    assert len(edits) == 1 and edits[0].label == "lich: bump the numbers"
    # The one-line change went out as a one-line TextEdit.
    if edits[0].edit.document_changes:
        (doc_edit,) = edits[0].edit.document_changes
        assert doc_edit.text_document.version == 1
        text_edits = doc_edit.edits
    else:
        text_edits = edits[0].edit.changes[open_uri]
    assert [(e.range.start.line, e.range.end.line, e.new_text) for e in text_edits] == [
        (1, 2, "y = 3\n")
    ]
    # The final answer is shown; the transcript went to the log and to the user state dir.
    await client.wait_until(lambda: any("done: both edited" in m.message for m in client.messages))
    assert any("edit_file" in m.message for m in client.log_messages)
    assert any(e.get("type") == "run_end" for e in client.editor.events)
    # Every lich/event is what docs/lich-event.schema.json (generated from the event dataclasses) says.
    for event in client.editor.events:
        assert_valid_event(event)
    # Work-done progress (all four clients declare it): begin with the title, turns and tool calls, the outcome.
    (token,) = client.progress_reports
    reports = client.progress_reports[token]
    assert (
        reports[0].title.startswith("lich: bump the numbers · thread ")
        and reports[0].cancellable is True
    )
    assert "turn 1: edit_file" in [r.message for r in reports[1:-1]]
    assert isinstance(reports[-1], types.WorkDoneProgressEnd) and reports[-1].message == "final"
    (transcript,) = (workspace_state_dir(root) / "transcripts").glob("*.md")
    written = transcript.read_text(encoding="utf-8")
    assert (
        "bump the numbers" in written and "edit_file" in written and "done: both edited" in written
    )
    # Asked for, the transcript is shown (not focused) exactly when the client can show documents.
    window = client.declared.window
    if window is not None and window.show_document is not None and window.show_document.support:
        (shown,) = client.shown_documents
        assert shown.uri == uri_of(transcript) and shown.take_focus is False
    else:
        assert client.shown_documents == []


async def test_applied_false_is_an_edit_rejected_tool_error(
    session, root: Path, client_name: str, fake_provider
) -> None:
    (root / "f.py").write_text("v = 1\n", encoding="utf-8")
    (root / "g.py").write_text("w = 1\n", encoding="utf-8")
    fake_provider.script(
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "f.py", "content": "v = 2\n"}}
            ]
        },
        {"text": "gave up"},
    )
    client = await session(client_name, init_options=provider_options(fake_provider))
    uri = client.open(root / "f.py")
    client.editor.answer = "reject"
    result = await client.command("lich.ask", {"prompt": "change v"})
    assert result["stopped_reason"] == "final"
    assert result["edited"] == []
    (message,) = tool_messages(fake_provider)
    assert "edit_rejected: the user rejected the edit" in message
    assert client.text(uri) == "v = 1\n"
    assert (root / "f.py").read_text(encoding="utf-8") == "v = 1\n"


async def test_code_actions_stay_fast_while_a_task_streams(
    session, root: Path, fake_provider
) -> None:
    """On the wire because it is about dispatch: the server answers textDocument/codeAction while a
    workspace/executeCommand is still pending (in-process the call would be direct)."""
    # A stream of 40 s that the test cancels: it is surely still streaming when the code actions
    # are answered, however slowly a loaded machine runs this test.
    fake_provider.script({"text": "slow answer " * 40, "chunks": 400, "chunk_delay_s": 0.1})
    client = await session(init_options=provider_options(fake_provider))
    uri = client.open(root / "c.py", "pass\n")
    task = asyncio.ensure_future(client.command("lich.ask", {"prompt": "talk"}))
    await client.wait_for_event("text_delta")
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(
                start=types.Position(line=0, character=0), end=types.Position(line=0, character=4)
            ),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    # Answered while the task still streams (latency itself is measured by `python -m bench lsp`).
    assert not task.done()
    assert [a.title for a in actions] == ["Ask agent…"]
    assert (await client.command("lich.cancel", {}))["cancelled"] == ["t1"]
    result = await task
    assert result["stopped_reason"] == "aborted"
