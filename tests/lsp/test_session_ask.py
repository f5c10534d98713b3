"""lich.ask in-process: an EditorSession behind the FakeEditor, the fake provider over real HTTP.

What the session does for an ask: edits to open buffers (through the editor, unsaved text kept)
and closed files (disk or editor, by policy and the save protocol), reads of unsaved buffers,
rejected and errored edits, stale rejection when the user types mid-task, concurrent tasks and
edits serialised per file, the selection and diagnostics context, quick prompts, provider errors,
retries, lich/event payloads, work-done progress, transcripts. The subprocess smoke tests over the
wire are in test_lsp_ask.py.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from lsp_harness import edit, provider_options, tool_contents, tool_messages, uri_of
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from lich_core.userstate import workspace_state_dir
from tests.support.event_schema import assert_valid_event


async def test_ask_edits_an_open_and_a_closed_file(
    editor, root: Path, client_name: str, fake_provider
) -> None:
    (root / "open.py").write_text("x = 1\ny = 2\n", encoding="utf-8")
    (root / "closed.py").write_text("a = 1\n", encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("open.py", "y = 2", "y = 3"), edit("closed.py", "a = 1", "a = 10")]},
        {"text": "done: both edited"},
    )
    fake = await editor(client_name, init_options=provider_options(fake_provider))
    open_uri = fake.open(root / "open.py", "x = 1\ny = 2\n# unsaved note\n")
    result = await fake.command("lich.ask", {"prompt": "bump the numbers"})
    assert result["stopped_reason"] == "final"
    assert result["final"] == "done: both edited"
    assert result["task_id"]
    assert set(result["edited"]) == {open_uri, uri_of(root / "closed.py")}
    # The open file changed in the editor (unsaved text kept), not behind it on disk.
    assert fake.text(open_uri) == "x = 1\ny = 3\n# unsaved note\n"
    assert (root / "open.py").read_text(encoding="utf-8") == "x = 1\ny = 2\n"
    # Without experimental.lich.saveDocuments the closed file is written to disk (policy "auto").
    assert (root / "closed.py").read_text(encoding="utf-8") == "a = 10\n"
    edits = fake.applied
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
    await fake.wait_for_message("done: both edited")
    assert any("edit_file" in text for _, text in fake.logs)
    assert any(e.get("type") == "run_end" for e in fake.events)
    # Every lich/event is what docs/lich-event.schema.json (generated from the event dataclasses) says.
    for event in fake.events:
        assert_valid_event(event)
    # Work-done progress (all four clients declare it): begin with the title, turns and tool calls, the outcome.
    (token,) = {token for token, _ in fake.progress_reports}
    reports = [value for _, value in fake.progress_reports]
    assert isinstance(reports[0], types.WorkDoneProgressBegin)
    assert (
        reports[0].title.startswith("lich: bump the numbers · thread ")
        and reports[0].cancellable is True
    )
    assert "turn 1: edit_file" in [r.message for r in reports[1:-1]]
    assert isinstance(reports[-1], types.WorkDoneProgressEnd) and reports[-1].message == "final"
    assert fake.progress_created == [token]
    (transcript,) = (workspace_state_dir(root) / "transcripts").glob("*.md")
    written = transcript.read_text(encoding="utf-8")
    assert (
        "bump the numbers" in written and "edit_file" in written and "done: both edited" in written
    )
    # The transcript is not put in front of the user's file unless show_transcript asks for it;
    # the answer says where it is, for a client that opens it on request.
    assert fake.shown_documents == []
    assert result["transcript"] == transcript.as_uri()


@pytest.mark.parametrize("client_name", ["visual-studio-code", "neovim"])
async def test_save_documents_keeps_disk_coherent(
    editor, root: Path, client_name: str, fake_provider
) -> None:
    (root / "open.py").write_text("x = 1\n", encoding="utf-8")
    (root / "closed.py").write_text("a = 1\n", encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("open.py", "x = 1", "x = 2"), edit("closed.py", "a = 1", "a = 2")]},
        {"text": "ok"},
    )
    fake = await editor(
        client_name, init_options=provider_options(fake_provider), save_documents=True
    )
    open_uri = fake.open(root / "open.py")
    result = await fake.command("lich.ask", {"prompt": "edit"})
    assert result["stopped_reason"] == "final"
    # Both files went through the editor (one WorkspaceEdit per tool call), then were saved.
    assert len(fake.applied) == 2
    assert set(fake.saved) == {open_uri, uri_of(root / "closed.py")}
    assert (root / "open.py").read_text(encoding="utf-8") == "x = 2\n"
    assert (root / "closed.py").read_text(encoding="utf-8") == "a = 2\n"


async def test_the_model_reads_the_unsaved_buffer(
    editor, root: Path, client_name: str, fake_provider
) -> None:
    (root / "m.py").write_text("disk text\n", encoding="utf-8")
    fake_provider.script(
        {
            "tool_calls": [
                {"name": "read_file", "arguments": {"path": "m.py", "raw": True}},
                {"name": "grep_files", "arguments": {"pattern": "(buffer|disk) text"}},
            ]
        },
        {"tool_calls": [edit("m.py", "buffer text", "buffer text!")]},
        {"text": "ok"},
    )
    fake = await editor(client_name, init_options=provider_options(fake_provider))
    uri = fake.open(root / "m.py", "buffer text\n")
    result = await fake.command("lich.ask", {"prompt": "edit the buffer"})
    assert result["stopped_reason"] == "final"
    read, grep, edited = tool_messages(fake_provider)
    assert "buffer text" in read and "disk text" not in read
    assert "m.py" in grep and "buffer text" in grep and "disk text" not in grep
    assert "error" not in edited
    assert fake.text(uri) == "buffer text!\n"
    assert (root / "m.py").read_text(encoding="utf-8") == "disk text\n"


async def test_applied_false_is_an_edit_rejected_tool_error(
    editor, root: Path, client_name: str, fake_provider
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
    fake = await editor(client_name, init_options=provider_options(fake_provider))
    uri = fake.open(root / "f.py")
    fake.answer = "reject"
    result = await fake.command("lich.ask", {"prompt": "change v"})
    assert result["stopped_reason"] == "final"
    assert result["edited"] == []
    assert len(fake.applied) == 1
    (message,) = tool_messages(fake_provider)
    assert "edit_rejected: the user rejected the edit" in message
    assert fake.text(uri) == "v = 1\n"
    assert (root / "f.py").read_text(encoding="utf-8") == "v = 1\n"


async def test_client_error_while_applying_is_an_edit_rejected_tool_error(
    editor, root: Path, fake_provider
) -> None:
    (root / "f.py").write_text("v = 1\n", encoding="utf-8")
    fake_provider.script(
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "f.py", "content": "v = 2\n"}}
            ]
        },
        {"text": "gave up"},
    )
    fake = await editor("visual-studio-code", init_options=provider_options(fake_provider))
    fake.open(root / "f.py")
    fake.answer = "error"
    result = await fake.command("lich.ask", {"prompt": "change v"})
    assert result["stopped_reason"] == "final"
    (message,) = tool_messages(fake_provider)
    assert "edit_rejected: client_error" in message
    assert (root / "f.py").read_text(encoding="utf-8") == "v = 1\n"


async def test_user_typing_mid_task_makes_the_edit_stale(
    editor, root: Path, client_name: str, fake_provider
) -> None:
    """The user types while the editor holds the first edit: the second edit is never sent."""
    (root / "s.py").write_text("one\ntwo\n", encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("s.py", "one", "ONE")]},
        {"text": "done"},
    )
    fake = await editor(client_name, init_options=provider_options(fake_provider))
    uri = fake.open(root / "s.py")
    with fake.holding_edits():
        first = asyncio.ensure_future(fake.command("lich.ask", {"prompt": "shout"}))
        await fake.wait_for_edits(1)
        # While the editor holds the agent's edit, a second edit computed from the same text queues
        # behind it, and then the user types.
        second = asyncio.ensure_future(
            fake.command(
                "lich.runTool",
                {"name": "write_file", "args": {"path": "s.py", "content": "one\n2\n"}},
            )
        )
        await fake.wait_for_log("edit queued behind")
        fake.type_text(uri, "one\ntwo\nthree\n")
    result = await first
    stale = await second
    assert result["stopped_reason"] == "final"
    assert stale["ok"] is False
    assert stale["error"].startswith("edit_rejected: stale_document")
    assert len(fake.applied) == 1  # the stale edit was never sent
    if fake.applied[0].edit.document_changes:
        # A versioned edit the user typed under is refused by the editor itself.
        assert fake.text(uri) == "one\ntwo\nthree\n"
        assert "edit_rejected: version mismatch" in tool_messages(fake_provider)[0]
    assert (root / "s.py").read_text(encoding="utf-8") == "one\ntwo\n"


async def test_stale_anchor_after_the_user_edits_during_the_task(
    editor, root: Path, client_name: str, fake_provider
) -> None:
    """The model's patch was computed from text the user changed meanwhile: it is refused, not merged."""
    from lich_core.hashline.anchors import line_hash

    (root / "t.py").write_text("alpha\n", encoding="utf-8")
    (root / "x.py").write_text("x\n", encoding="utf-8")
    anchor = f"1:{line_hash('alpha')}"
    fake_provider.script(
        {
            "tool_calls": [
                {"name": "read_file", "arguments": {"path": "t.py"}},
                edit("x.py", "x", "X"),
            ]
        },
        {
            "tool_calls": [
                {
                    "name": "apply_patch",
                    "arguments": {"input": f"@@ t.py\n= {anchor}..{anchor}\n~beta\n"},
                }
            ]
        },
        {"text": "ok"},
    )
    fake = await editor(client_name, init_options=provider_options(fake_provider))
    uri = fake.open(root / "t.py")
    fake.open(root / "x.py")
    # The editor holds the x.py edit while the user types in t.py; the didChange reaches the
    # session before the edit's answer does, so the order is certain.
    with fake.holding_edits():
        task = asyncio.ensure_future(fake.command("lich.ask", {"prompt": "rename"}))
        await fake.wait_for_edits(1)
        fake.type_text(uri, "gamma\n")
    result = await task
    assert result["stopped_reason"] == "final"
    assert fake.text(uri) == "gamma\n"
    assert len(fake.applied) == 1  # only the x.py edit
    assert "stale_anchor" in tool_messages(fake_provider)[-1]
    assert (root / "t.py").read_text(encoding="utf-8") == "alpha\n"


async def test_two_concurrent_tasks(editor, root: Path, client_name: str, fake_provider) -> None:
    (root / "a.py").write_text("a\n", encoding="utf-8")
    (root / "b.py").write_text("b\n", encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("a.py", "a", "A")]},
        {"tool_calls": [edit("b.py", "b", "B")]},
        {"text": "first done"},
        {"text": "second done"},
    )
    fake = await editor(client_name, init_options=provider_options(fake_provider))
    a = fake.open(root / "a.py")
    b = fake.open(root / "b.py")
    with fake.holding_edits():
        both = [
            asyncio.ensure_future(fake.command("lich.ask", {"prompt": f"task {n}"}))
            for n in ("one", "two")
        ]
        # Each task's edit is held: both edits pending at once means both tasks are running at once.
        await fake.wait_for_edits(2)
        assert not any(task.done() for task in both)
    results = await asyncio.gather(*both)
    assert {r["task_id"] for r in results} == {"t1", "t2"}
    assert all(r["stopped_reason"] == "final" for r in results)
    assert fake.text(a) == "A\n" and fake.text(b) == "B\n"
    status = await fake.command("lich.status", {})
    assert {t["task_id"] for t in status["tasks"]} == {"t1", "t2"}
    # The status bar of editor integrations shows which provider and model answer.
    assert status["provider"]["kind"] == "openai_compat"
    assert status["provider"]["model"] == "fake-model"
    assert fake_provider.url in status["provider"]["describe"]


@pytest.mark.parametrize("client_name", ["visual-studio-code", "neovim@v0.7.0"])
async def test_edits_from_two_tasks_to_one_file_are_serialised(
    editor, root: Path, client_name: str, fake_provider
) -> None:
    """While the editor holds one task's edit, the other task's edit to the same file waits; once the
    first lands, the second (computed from the old text) is refused as stale, never merged over it."""
    (root / "s.py").write_text("one\ntwo\n", encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("s.py", "one", "ONE")]},
        {"tool_calls": [edit("s.py", "two", "TWO")]},
        {"text": "done"},
        {"text": "done"},
    )
    fake = await editor(client_name, init_options=provider_options(fake_provider))
    uri = fake.open(root / "s.py")
    with fake.holding_edits():
        tasks = [
            asyncio.ensure_future(fake.command("lich.ask", {"prompt": f"task {n}"})) for n in (1, 2)
        ]
        await fake.wait_for_log("edit queued behind another edit to s.py")
        await fake.wait_for_edits(1)
        # Give the session a turn of its own: a second edit, had it been sent, would be recorded now.
        await fake.command("lich.status", {})
        await fake.settle()
        assert len(fake.applied) == 1  # the second edit was not sent while the first is pending
    results = await asyncio.gather(*tasks)
    assert all(r["stopped_reason"] == "final" for r in results)
    assert len(fake.applied) == 1
    assert fake.text(uri) in ("ONE\ntwo\n", "one\nTWO\n")
    # Exactly one task saw its edit land; the other was told to re-read.
    assert sorted(len(r["edited"]) for r in results) == [0, 1]
    stale = [
        m
        for request in fake_provider.requests
        for m in tool_contents(request)
        if "stale_document" in m
    ]
    assert stale and all(
        '"error": "edit_rejected: stale_document: s.py changed in the editor' in m for m in stale
    )


async def test_ask_with_selection_puts_rows_and_diagnostics_in_context(
    editor, root: Path, fake_provider
) -> None:
    from lich_core.hashline.anchors import line_hash

    fake_provider.script({"text": "looked"})
    fake = await editor(init_options=provider_options(fake_provider))
    uri = fake.open(root / "sel.py", "first\nsecönd\nthird\n")
    selection = {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 3}}
    diagnostics = [
        {
            "range": selection,
            "message": "undefined name 'secönd'",
            "severity": 1,
            "source": "pyflakes",
        }
    ]
    result = await fake.command(
        "lich.ask",
        {"prompt": "explain", "uri": uri, "range": selection, "diagnostics": diagnostics},
    )
    assert result["stopped_reason"] == "final"
    sent = json.dumps(fake_provider.requests[0]["json"]["messages"], ensure_ascii=False)
    assert f"2:{line_hash('secönd')}|secönd" in sent
    assert "first" not in sent.split("Selection in", 1)[1].split("Diagnostics", 1)[0]
    assert "undefined name 'secönd'" in sent and "pyflakes" in sent


async def test_ask_without_prompt_offers_quick_prompts(
    editor, root: Path, client_name: str, fake_provider
) -> None:
    fake_provider.script({"text": "explained"})
    options = provider_options(fake_provider, quick_prompts=["Explain this", "Fix it"])
    fake = await editor(client_name, init_options=options)
    if not fake.declared.window or fake.declared.window.show_message is None:
        # No window/showMessageRequest: the choice cannot be offered, and the error says so.
        with pytest.raises(JsonRpcException) as caught:
            await fake.command("lich.ask", {})
        assert caught.value.code == -32602 and "pass {prompt}" in caught.value.message
        assert fake.message_requests == []
        assert fake_provider.requests == []
        return
    fake.message_answers = ["Explain this"]
    result = await fake.command("lich.ask", {})
    assert result["stopped_reason"] == "final"
    assert [a.title for a in fake.message_requests[0].actions] == ["Explain this", "Fix it"]
    assert "Explain this" in json.dumps(fake_provider.requests[0]["json"]["messages"])
    fake.message_answers = [None]
    dismissed = await fake.command("lich.ask", {})
    assert dismissed["stopped_reason"] == "dismissed"
    assert len(fake_provider.requests) == 1  # a dismissed choice never reaches the model


async def test_provider_failure_is_an_error_result_not_a_crash(
    editor, root: Path, fake_provider
) -> None:
    fake_provider.script({"status": 401, "body": '{"error": {"message": "bad key"}}'})
    fake = await editor(init_options=provider_options(fake_provider))
    result = await fake.command("lich.ask", {"prompt": "hi"})
    assert result["stopped_reason"] == "error"
    assert result["error"]
    await fake.wait_until(
        lambda: any(kind == types.MessageType.Error for kind, _ in fake.messages),
        what="an error message",
    )
    status = await fake.command("lich.status", {})
    assert status["tasks"][0]["state"] == "done"


@pytest.mark.parametrize("client_name", ["visual-studio-code", "neovim@v0.7.0"])
async def test_one_patch_over_two_files_is_one_workspace_edit(
    editor, root: Path, client_name: str, fake_provider
) -> None:
    from lich_core.hashline.anchors import line_hash

    (root / "p.py").write_text("keep\nold p\n", encoding="utf-8")
    (root / "q.py").write_text("old q\n", encoding="utf-8")
    patch = (
        f"@@ p.py\n= 2:{line_hash('old p')}..2:{line_hash('old p')}\n~new p\n"
        f"@@ q.py\n= 1:{line_hash('old q')}..1:{line_hash('old q')}\n~new q\n"
    )
    fake_provider.script(
        {
            "tool_calls": [
                {"name": "read_file", "arguments": {"path": "p.py"}},
                {"name": "read_file", "arguments": {"path": "q.py"}},
            ]
        },
        {"tool_calls": [{"name": "apply_patch", "arguments": {"input": patch}}]},
        {"text": "patched"},
    )
    fake = await editor(
        client_name, init_options=provider_options(fake_provider), save_documents=True
    )
    p_uri = fake.open(root / "p.py")
    result = await fake.command("lich.ask", {"prompt": "patch both"})
    assert result["stopped_reason"] == "final", result
    (applied,) = fake.applied
    assert applied.label == "lich: patch both"
    if applied.edit.document_changes:
        assert len(applied.edit.document_changes) == 2
    else:
        assert set(applied.edit.changes) == {p_uri, uri_of(root / "q.py")}
    assert fake.text(p_uri) == "keep\nnew p\n"
    assert (root / "q.py").read_text(encoding="utf-8") == "new q\n"
    assert (root / "p.py").read_text(encoding="utf-8") == "keep\nnew p\n"  # saved on request


async def test_a_retried_stream_shows_the_answer_once(editor, root: Path, fake_provider) -> None:
    """A stream that breaks mid-answer is retried; the transcript keeps only the answer that landed."""
    fake_provider.script(
        {
            "text": "BROKEN half of an answer that never finishes",
            "chunks": 6,
            "drop_after_chunks": 2,
        },
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "r.txt"}}]},
        {"text": "the whole answer"},
    )
    (root / "r.txt").write_text("one\ntwo\n", encoding="utf-8")
    fake = await editor(init_options=provider_options(fake_provider))
    result = await fake.command("lich.ask", {"prompt": "retry please"})
    assert result["stopped_reason"] == "final" and result["final"] == "the whole answer"
    assert any(e.get("type") == "llm_retry" for e in fake.events)
    for event in fake.events:
        assert_valid_event(event)
    logs = [text for _, text in fake.logs]
    assert any("provider fake failed (network): retrying" in line for line in logs)
    assert not any("BROKEN" in line for line in logs)
    (transcript,) = (workspace_state_dir(root) / "transcripts").glob("*.md")
    written = transcript.read_text(encoding="utf-8")
    # Multi-line tool results (anchored rows) stay inside their indented block.
    result_block = written[written.index("← read_file") :].split("\n")
    assert result_block[1].startswith("    ") and "two" in written
    assert not any(line.startswith("2:") for line in written.splitlines())


async def test_a_follow_up_reads_its_thread_file_once(
    editor, root: Path, fake_provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """lich.ask {thread}: the check that the thread exists, its turn number and the history the
    model continues from all come from one replay of the thread file (counted at the reader)."""
    from lich_core.agent import sessions

    fake_provider.script({"text": "First answer."}, {"text": "Second answer."})
    fake = await editor("visual-studio-code", init_options=provider_options(fake_provider))
    first = await fake.command("lich.ask", {"prompt": "first question"})
    thread = first["thread"]
    reads: list[str] = []
    real = sessions.replay_file

    def counting(path: Path, **kwargs: object):  # type: ignore[no-untyped-def]
        reads.append(Path(path).stem)
        return real(path, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(sessions, "replay_file", counting)
    second = await fake.command("lich.ask", {"prompt": "second question", "thread": thread})
    assert second["stopped_reason"] == "final" and second["turn"] == 2, second
    assert reads == [thread]
    # The model continued from that replay: the first turn is in its request.
    sent = json.dumps(fake_provider.requests[1]["json"]["messages"])
    assert "first question" in sent and "First answer." in sent and "second question" in sent
