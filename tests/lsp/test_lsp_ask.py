"""lich.ask end to end: a real server, the fake provider over HTTP, a test editor applying edits."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from lsp_harness import uri_of
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from lich_core.userstate import workspace_state_dir
from tests.support.event_schema import assert_valid_event
from tests.support.fake_provider import FakeProviderServer

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")


def provider_options(fake: FakeProviderServer, **extra: Any) -> dict[str, Any]:
    return {
        "providers": [{"name": "fake", "kind": "openai_compat", "base_url": fake.url + "/v1", "model": "fake-model"}],
        **extra,
    }


def tool_messages(fake: FakeProviderServer) -> list[str]:
    """Contents of every tool message the model was sent (last request holds the whole history)."""
    if not fake.requests:
        return []
    messages = fake.requests[-1]["json"].get("messages", [])
    return [m.get("content") or "" for m in messages if m.get("role") == "tool"]


def edit(path: str, old: str, new: str) -> dict[str, Any]:
    return {"name": "edit_file", "arguments": {"path": path, "old_string": old, "new_string": new}}


async def test_ask_edits_an_open_and_a_closed_file(session, root: Path, client_name: str, fake_provider) -> None:
    (root / "open.py").write_text("x = 1\ny = 2\n", encoding="utf-8")
    (root / "closed.py").write_text("a = 1\n", encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("open.py", "y = 2", "y = 3"), edit("closed.py", "a = 1", "a = 10")]},
        {"text": "done: both edited"},
    )
    client = await session(client_name, init_options=provider_options(fake_provider))
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
    assert [(e.range.start.line, e.range.end.line, e.new_text) for e in text_edits] == [(1, 2, "y = 3\n")]
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
    assert reports[0].title == "lich: bump the numbers" and reports[0].cancellable is True
    assert "turn 1: edit_file" in [r.message for r in reports[1:-1]]
    assert isinstance(reports[-1], types.WorkDoneProgressEnd) and reports[-1].message == "final"
    (transcript,) = (workspace_state_dir(root) / "transcripts").glob("*.md")
    written = transcript.read_text(encoding="utf-8")
    assert "bump the numbers" in written and "edit_file" in written and "done: both edited" in written
    # The transcript is shown (without taking focus) exactly when the client can show documents.
    window = client.declared.window
    if window is not None and window.show_document is not None and window.show_document.support:
        (shown,) = client.shown_documents
        assert shown.uri == uri_of(transcript) and shown.take_focus is False
    else:
        assert client.shown_documents == []


@pytest.mark.parametrize("client_name", ["visual-studio-code", "neovim"])
async def test_save_documents_keeps_disk_coherent(session, root: Path, client_name: str, fake_provider) -> None:
    (root / "open.py").write_text("x = 1\n", encoding="utf-8")
    (root / "closed.py").write_text("a = 1\n", encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("open.py", "x = 1", "x = 2"), edit("closed.py", "a = 1", "a = 2")]},
        {"text": "ok"},
    )
    client = await session(client_name, init_options=provider_options(fake_provider), save_documents=True)
    open_uri = client.open(root / "open.py")
    result = await client.command("lich.ask", {"prompt": "edit"})
    assert result["stopped_reason"] == "final"
    # Both files went through the editor (one WorkspaceEdit per tool call), then were saved.
    assert len(client.editor.applied) == 2
    assert set(client.editor.saved) == {open_uri, uri_of(root / "closed.py")}
    assert (root / "open.py").read_text(encoding="utf-8") == "x = 2\n"
    assert (root / "closed.py").read_text(encoding="utf-8") == "a = 2\n"


async def test_the_model_reads_the_unsaved_buffer(session, root: Path, client_name: str, fake_provider) -> None:
    (root / "m.py").write_text("disk text\n", encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [
            {"name": "read_file", "arguments": {"path": "m.py", "raw": True}},
            {"name": "grep_files", "arguments": {"pattern": "(buffer|disk) text"}},
        ]},
        {"tool_calls": [edit("m.py", "buffer text", "buffer text!")]},
        {"text": "ok"},
    )
    client = await session(client_name, init_options=provider_options(fake_provider))
    uri = client.open(root / "m.py", "buffer text\n")
    result = await client.command("lich.ask", {"prompt": "edit the buffer"})
    assert result["stopped_reason"] == "final"
    read, grep, edited = tool_messages(fake_provider)
    assert "buffer text" in read and "disk text" not in read
    assert "m.py" in grep and "buffer text" in grep and "disk text" not in grep
    assert "error" not in edited
    assert client.text(uri) == "buffer text!\n"
    assert (root / "m.py").read_text(encoding="utf-8") == "disk text\n"


async def test_applied_false_is_an_edit_rejected_tool_error(session, root: Path, client_name: str, fake_provider) -> None:
    (root / "f.py").write_text("v = 1\n", encoding="utf-8")
    (root / "g.py").write_text("w = 1\n", encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "f.py", "content": "v = 2\n"}}]},
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


async def test_client_error_while_applying_is_an_edit_rejected_tool_error(session, root: Path, fake_provider) -> None:
    (root / "f.py").write_text("v = 1\n", encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "f.py", "content": "v = 2\n"}}]},
        {"text": "gave up"},
    )
    client = await session("visual-studio-code", init_options=provider_options(fake_provider))
    client.open(root / "f.py")
    client.editor.answer = "error"
    result = await client.command("lich.ask", {"prompt": "change v"})
    assert result["stopped_reason"] == "final"
    (message,) = tool_messages(fake_provider)
    assert "edit_rejected: client_error" in message
    assert (root / "f.py").read_text(encoding="utf-8") == "v = 1\n"


async def test_user_typing_mid_task_makes_the_edit_stale(session, root: Path, client_name: str, fake_provider) -> None:
    """The user types while the editor holds the first edit: the second edit is never sent."""
    (root / "s.py").write_text("one\ntwo\n", encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("s.py", "one", "ONE")]},
        {"text": "done"},
    )
    client = await session(client_name, init_options=provider_options(fake_provider))
    uri = client.open(root / "s.py")
    with client.holding_edits():
        first = asyncio.ensure_future(client.command("lich.ask", {"prompt": "shout"}))
        await client.wait_until(lambda: len(client.editor.applied) == 1, what="the agent's edit")
        # While the editor holds the agent's edit, a second edit computed from the same text queues
        # behind it, and then the user types.
        second = asyncio.ensure_future(
            client.command("lich.runTool", {"name": "write_file", "args": {"path": "s.py", "content": "one\n2\n"}})
        )
        await client.wait_for_log("edit queued behind")
        client.type_text(uri, "one\ntwo\nthree\n")
    result = await first
    stale = await second
    assert result["stopped_reason"] == "final"
    assert stale["ok"] is False
    assert stale["error"].startswith("edit_rejected: stale_document")
    assert len(client.editor.applied) == 1  # the stale edit was never sent
    if client.editor.applied[0].edit.document_changes:
        # A versioned edit the user typed under is refused by the editor itself.
        assert client.text(uri) == "one\ntwo\nthree\n"
        assert "edit_rejected: version mismatch" in tool_messages(fake_provider)[0]
    assert (root / "s.py").read_text(encoding="utf-8") == "one\ntwo\n"


async def test_stale_anchor_after_the_user_edits_during_the_task(session, root: Path, client_name: str, fake_provider) -> None:
    """The model's patch was computed from text the user changed meanwhile: it is refused, not merged."""
    from lich_core.hashline.anchors import line_hash

    (root / "t.py").write_text("alpha\n", encoding="utf-8")
    (root / "x.py").write_text("x\n", encoding="utf-8")
    anchor = f"1:{line_hash('alpha')}"
    fake_provider.script(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "t.py"}}, edit("x.py", "x", "X")]},
        {"tool_calls": [{"name": "apply_patch", "arguments": {"input": f"@@ t.py\n= {anchor}..{anchor}\n~beta\n"}}]},
        {"text": "ok"},
    )
    client = await session(client_name, init_options=provider_options(fake_provider))
    uri = client.open(root / "t.py")
    client.open(root / "x.py")
    # The editor holds the x.py edit while the user types in t.py; the didChange reaches the
    # server before the edit's answer does, so the order is certain.
    with client.holding_edits():
        task = asyncio.ensure_future(client.command("lich.ask", {"prompt": "rename"}))
        await client.wait_until(lambda: len(client.editor.applied) == 1, what="the x.py edit")
        client.type_text(uri, "gamma\n")
    result = await task
    assert result["stopped_reason"] == "final"
    assert client.text(uri) == "gamma\n"
    assert len(client.editor.applied) == 1  # only the x.py edit
    assert "stale_anchor" in tool_messages(fake_provider)[-1]
    assert (root / "t.py").read_text(encoding="utf-8") == "alpha\n"


async def test_two_concurrent_tasks(session, root: Path, client_name: str, fake_provider) -> None:
    (root / "a.py").write_text("a\n", encoding="utf-8")
    (root / "b.py").write_text("b\n", encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("a.py", "a", "A")], "delay_s": 0.3},
        {"tool_calls": [edit("b.py", "b", "B")], "delay_s": 0.3},
        {"text": "first done"},
        {"text": "second done"},
    )
    client = await session(client_name, init_options=provider_options(fake_provider))
    a = client.open(root / "a.py")
    b = client.open(root / "b.py")
    results = await asyncio.gather(
        client.command("lich.ask", {"prompt": "task one"}), client.command("lich.ask", {"prompt": "task two"})
    )
    assert {r["task_id"] for r in results} == {"t1", "t2"}
    assert all(r["stopped_reason"] == "final" for r in results)
    assert client.text(a) == "A\n" and client.text(b) == "B\n"
    status = await client.command("lich.status", {})
    assert {t["task_id"] for t in status["tasks"]} == {"t1", "t2"}
    # The status bar of editor integrations shows which provider and model answer.
    assert status["provider"]["kind"] == "openai_compat"
    assert status["provider"]["model"] == "fake-model"
    assert fake_provider.url in status["provider"]["describe"]


@pytest.mark.parametrize("client_name", ["visual-studio-code", "neovim@v0.7.0"])
async def test_edits_from_two_tasks_to_one_file_are_serialised(session, root: Path, client_name: str, fake_provider) -> None:
    """While the editor holds one task's edit, the other task's edit to the same file waits; once the
    first lands, the second (computed from the old text) is refused as stale, never merged over it."""
    (root / "s.py").write_text("one\ntwo\n", encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("s.py", "one", "ONE")]},
        {"tool_calls": [edit("s.py", "two", "TWO")]},
        {"text": "done"},
        {"text": "done"},
    )
    client = await session(client_name, init_options=provider_options(fake_provider))
    uri = client.open(root / "s.py")
    with client.holding_edits():
        tasks = [asyncio.ensure_future(client.command("lich.ask", {"prompt": f"task {n}"})) for n in (1, 2)]
        # Two independent events: the server may log "queued" before the held edit's request is on
        # the wire, and this client records the request only when its handler task runs.
        await client.wait_for_log("edit queued behind another edit to s.py")
        await client.wait_until(lambda: len(client.editor.applied) >= 1, what="the first task's edit")
        # A round trip: a second edit, had the server sent one, would have arrived before this answer.
        await client.command("lich.status", {})
        assert len(client.editor.applied) == 1  # the second edit was not sent while the first is pending
    results = await asyncio.gather(*tasks)
    assert all(r["stopped_reason"] == "final" for r in results)
    assert len(client.editor.applied) == 1
    assert client.text(uri) in ("ONE\ntwo\n", "one\nTWO\n")
    # Exactly one task saw its edit land; the other was told to re-read.
    assert sorted(len(r["edited"]) for r in results) == [0, 1]
    stale = [m for request in fake_provider.requests for m in _tool_contents(request) if "stale_document" in m]
    assert stale and all('"error": "edit_rejected: stale_document: s.py changed in the editor' in m for m in stale)


def _tool_contents(request: dict[str, Any]) -> list[str]:
    return [m.get("content") or "" for m in request["json"].get("messages", []) if m.get("role") == "tool"]


async def test_code_actions_stay_fast_while_a_task_streams(session, root: Path, fake_provider) -> None:
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
            range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=4)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    # Answered while the task still streams (latency itself is measured by `python -m bench lsp`).
    assert not task.done()
    assert [a.title for a in actions] == ["Ask agent…"]
    assert (await client.command("lich.cancel", {}))["cancelled"] == ["t1"]
    result = await task
    assert result["stopped_reason"] == "aborted"


async def test_ask_with_selection_puts_rows_and_diagnostics_in_context(session, root: Path, fake_provider) -> None:
    from lich_core.hashline.anchors import line_hash

    fake_provider.script({"text": "looked"})
    client = await session(init_options=provider_options(fake_provider))
    uri = client.open(root / "sel.py", "first\nsecönd\nthird\n")
    selection = {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 3}}
    diagnostics = [{"range": selection, "message": "undefined name 'secönd'", "severity": 1, "source": "pyflakes"}]
    result = await client.command(
        "lich.ask", {"prompt": "explain", "uri": uri, "range": selection, "diagnostics": diagnostics}
    )
    assert result["stopped_reason"] == "final"
    sent = json.dumps(fake_provider.requests[0]["json"]["messages"], ensure_ascii=False)
    assert f"2:{line_hash('secönd')}|secönd" in sent
    assert "first" not in sent.split("Selection in", 1)[1].split("Diagnostics", 1)[0]
    assert "undefined name 'secönd'" in sent and "pyflakes" in sent


async def test_ask_without_prompt_offers_quick_prompts(session, root: Path, client_name: str, fake_provider) -> None:
    fake_provider.script({"text": "explained"})
    options = provider_options(fake_provider, quick_prompts=["Explain this", "Fix it"])
    client = await session(client_name, init_options=options)
    if not client.declared.window or client.declared.window.show_message is None:
        # No window/showMessageRequest: the choice cannot be offered, and the error says so.
        with pytest.raises(JsonRpcException) as caught:
            await client.command("lich.ask", {})
        assert caught.value.code == -32602 and "pass {prompt}" in caught.value.message
        assert fake_provider.requests == []
        return
    client.editor.message_answers = ["Explain this"]
    result = await client.command("lich.ask", {})
    assert result["stopped_reason"] == "final"
    assert [a.title for a in client.editor.message_requests[0].actions] == ["Explain this", "Fix it"]
    assert "Explain this" in json.dumps(fake_provider.requests[0]["json"]["messages"])
    client.editor.message_answers = [None]
    dismissed = await client.command("lich.ask", {})
    assert dismissed["stopped_reason"] == "dismissed"


async def test_provider_failure_is_an_error_result_not_a_crash(session, root: Path, fake_provider) -> None:
    fake_provider.script({"status": 401, "body": '{"error": {"message": "bad key"}}'})
    client = await session(init_options=provider_options(fake_provider))
    result = await client.command("lich.ask", {"prompt": "hi"})
    assert result["stopped_reason"] == "error"
    assert result["error"]
    await client.wait_until(lambda: any(m.type == types.MessageType.Error for m in client.messages))
    status = await client.command("lich.status", {})
    assert status["tasks"][0]["state"] == "done"


@pytest.mark.parametrize("client_name", ["visual-studio-code", "neovim@v0.7.0"])
async def test_one_patch_over_two_files_is_one_workspace_edit(session, root: Path, client_name: str, fake_provider) -> None:
    from lich_core.hashline.anchors import line_hash

    (root / "p.py").write_text("keep\nold p\n", encoding="utf-8")
    (root / "q.py").write_text("old q\n", encoding="utf-8")
    patch = (
        f"@@ p.py\n= 2:{line_hash('old p')}..2:{line_hash('old p')}\n~new p\n"
        f"@@ q.py\n= 1:{line_hash('old q')}..1:{line_hash('old q')}\n~new q\n"
    )
    fake_provider.script(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "p.py"}}, {"name": "read_file", "arguments": {"path": "q.py"}}]},
        {"tool_calls": [{"name": "apply_patch", "arguments": {"input": patch}}]},
        {"text": "patched"},
    )
    client = await session(client_name, init_options=provider_options(fake_provider), save_documents=True)
    p_uri = client.open(root / "p.py")
    result = await client.command("lich.ask", {"prompt": "patch both"})
    assert result["stopped_reason"] == "final", result
    (applied,) = client.editor.applied
    assert applied.label == "lich: patch both"
    if applied.edit.document_changes:
        assert len(applied.edit.document_changes) == 2
    else:
        assert set(applied.edit.changes) == {p_uri, uri_of(root / "q.py")}
    assert client.text(p_uri) == "keep\nnew p\n"
    assert (root / "q.py").read_text(encoding="utf-8") == "new q\n"
    assert (root / "p.py").read_text(encoding="utf-8") == "keep\nnew p\n"  # saved on request


async def test_a_retried_stream_shows_the_answer_once(session, root: Path, fake_provider) -> None:
    """A stream that breaks mid-answer is retried; the transcript keeps only the answer that landed."""
    fake_provider.script(
        {"text": "BROKEN half of an answer that never finishes", "chunks": 6, "drop_after_chunks": 2},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "r.txt"}}]},
        {"text": "the whole answer"},
    )
    (root / "r.txt").write_text("one\ntwo\n", encoding="utf-8")
    client = await session(init_options=provider_options(fake_provider))
    result = await client.command("lich.ask", {"prompt": "retry please"})
    assert result["stopped_reason"] == "final" and result["final"] == "the whole answer"
    assert any(e.get("type") == "llm_retry" for e in client.editor.events)
    for event in client.editor.events:
        assert_valid_event(event)
    logs = [m.message for m in client.log_messages]
    assert any("provider fake failed (network): retrying" in line for line in logs)
    assert not any("BROKEN" in line for line in logs)
    (transcript,) = (workspace_state_dir(root) / "transcripts").glob("*.md")
    written = transcript.read_text(encoding="utf-8")
    # Multi-line tool results (anchored rows) stay inside their indented block.
    result_block = written[written.index("← read_file") :].split("\n")
    assert result_block[1].startswith("    ") and "two" in written
    assert not any(line.startswith("2:") for line in written.splitlines())
