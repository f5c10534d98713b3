"""Approvals, review mode and the three cancel paths, against a real server and the fake provider."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from lsp_harness import uri_of
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from test_lsp_ask import edit, provider_options, tool_messages

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")

ECHO = {"name": "terminal", "args": {"command": "echo approved-$((40+2))"}}


async def test_approval_allow_once_always_and_deny(session, root: Path, client_name: str) -> None:
    client = await session(client_name)
    if client_name == "emacs":
        # No window/showMessageRequest: a tool that needs approval is denied, and the reason says why.
        result = await client.command("lich.runTool", ECHO)
        assert result["ok"] is False
        assert result["error"].startswith("approval_denied: terminal needs the user's approval")
        assert "showMessageRequest" in result["error"]
        return
    client.editor.message_answers = ["Allow once", "Deny", "Allow always"]
    once = await client.command("lich.runTool", ECHO)
    assert once["ok"] is True and "approved-42" in once["output"]
    request = client.editor.message_requests[0]
    assert [a.title for a in request.actions] == ["Allow once", "Allow always", "Deny"]
    assert "terminal" in request.message and "process/exec" in request.message
    denied = await client.command("lich.runTool", ECHO)
    assert denied["ok"] is False and denied["error"] == "approval_denied: the user denied terminal"
    always = await client.command("lich.runTool", ECHO)
    assert always["ok"] is True
    saved = json.loads((root / ".lich" / "approvals.json").read_text(encoding="utf-8"))
    assert saved == {"always": ["terminal"]}
    again = await client.command("lich.runTool", ECHO)
    assert again["ok"] is True
    assert len(client.editor.message_requests) == 3  # "always" was not asked again


async def test_approval_policy_from_config(session, root: Path) -> None:
    options = {"approval": {"terminal": "deny", "file/write": "ask"}}
    client = await session("neovim", init_options=options)
    denied = await client.command("lich.runTool", ECHO)
    assert denied["error"] == "approval_denied: terminal is denied by the approval policy"
    client.editor.message_answers = ["Deny"]
    write = await client.command("lich.runTool", {"name": "write_file", "args": {"path": "w.txt", "content": "x\n"}})
    assert write["error"] == "approval_denied: the user denied write_file"
    assert not (root / "w.txt").exists()
    assert client.editor.message_requests[0].message.startswith("lich wants to run write_file (file/write)")


async def test_the_agent_asks_before_running_a_process(session, root: Path, fake_provider) -> None:
    fake_provider.script(
        {"tool_calls": [{"name": "terminal", "arguments": {"command": "echo should-not-run > ran.txt"}}]},
        {"text": "ok"},
    )
    client = await session("visual-studio-code", init_options=provider_options(fake_provider))
    client.editor.message_answers = ["Deny"]
    result = await client.command("lich.ask", {"prompt": "run it"})
    assert result["stopped_reason"] == "final"
    assert "approval_denied: the user denied terminal" in tool_messages(fake_provider)[0]
    assert not (root / "ran.txt").exists()


async def test_review_mode(session, root: Path, client_name: str, fake_provider) -> None:
    (root / "r.py").write_text("a = 1\nb = 2\n", encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("r.py", "a = 1", "a = 10")]},
        # The second edit only matches if the agent's reads see its own first (unapplied) edit.
        {"tool_calls": [edit("r.py", "a = 10\nb = 2", "a = 10\nb = 20")]},
        {"text": "reviewed"},
    )
    client = await session(client_name, init_options=provider_options(fake_provider, edit_mode="review"))
    uri = client.open(root / "r.py")
    client.editor.message_answers = ["Apply"]
    result = await client.command("lich.ask", {"prompt": "bump"})
    assert result["stopped_reason"] == "final"
    assert all("edit_rejected" not in m and "error" not in m for m in tool_messages(fake_provider))
    if client_name == "emacs":
        # Neither change annotations nor showMessageRequest: nothing can be reviewed, nothing applied.
        assert client.editor.applied == []
        assert result["review"].startswith("edit_rejected: review_unavailable")
        assert client.text(uri) == "a = 1\nb = 2\n"
        return
    (applied,) = client.editor.applied
    assert client.text(uri) == "a = 10\nb = 20\n"
    assert result["edited"] == [uri]
    if client_name == "visual-studio-code":
        annotations = applied.edit.change_annotations
        assert len(annotations) == 1
        (annotation,) = annotations.values()
        assert annotation.needs_confirmation is True and "r.py" in annotation.label
        (doc_edit,) = applied.edit.document_changes
        assert all(isinstance(e, types.AnnotatedTextEdit) for e in doc_edit.edits)
        assert client.editor.message_requests == []
    else:
        (question,) = client.editor.message_requests
        assert question.message == "lich: bump: apply 1 changes to 1 files?"
        assert applied.edit.change_annotations is None


async def test_review_declined_applies_nothing(session, root: Path, fake_provider) -> None:
    (root / "r.py").write_text("a = 1\n", encoding="utf-8")
    fake_provider.script({"tool_calls": [edit("r.py", "a = 1", "a = 2")]}, {"text": "done"})
    client = await session("neovim", init_options=provider_options(fake_provider))
    uri = client.open(root / "r.py")
    client.editor.message_answers = ["Discard"]
    result = await client.command("lich.ask", {"prompt": "bump", "mode": "review"})
    assert result["review"] == "edit_rejected: review_declined: the user discarded the changes"
    assert client.editor.applied == [] and client.text(uri) == "a = 1\n"


SLOW_TURN = {"text": "never finishes", "delay_s": 30}


async def _running_task(client, fake_provider) -> tuple[asyncio.Future, str]:
    await client.wait_until(lambda: len(fake_provider.requests) >= 1)
    status = await client.command("lich.status", {})
    (task,) = [t for t in status["tasks"] if t["state"] == "running"]
    return task["task_id"]


async def _assert_stopped_quickly(client, started: float) -> None:
    loop = asyncio.get_running_loop()
    while True:
        status = await client.command("lich.status", {})
        if all(t["state"] == "done" for t in status["tasks"]):
            break
        assert loop.time() - started < 5, "task still running"
        await asyncio.sleep(0.02)
    assert loop.time() - started < 2.0


@pytest.mark.parametrize("client_name", ["visual-studio-code", "neovim@v0.7.0"])
async def test_cancel_with_lich_cancel(session, root: Path, client_name: str, fake_provider) -> None:
    fake_provider.script(SLOW_TURN)
    client = await session(client_name, init_options=provider_options(fake_provider))
    ask = asyncio.ensure_future(client.command("lich.ask", {"prompt": "slow"}))
    task_id = await _running_task(client, fake_provider)
    started = asyncio.get_running_loop().time()
    cancelled = await client.command("lich.cancel", {"task_id": task_id})
    assert cancelled == {"cancelled": [task_id]}
    result = await asyncio.wait_for(ask, 5)
    assert asyncio.get_running_loop().time() - started < 2.0
    assert result["stopped_reason"] == "aborted"
    (token,) = client.progress_reports
    kinds = [type(v).__name__ for v in client.progress_reports[token]]
    assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd"
    assert client.progress_reports[token][0].cancellable is True


@pytest.mark.parametrize("client_name", ["visual-studio-code", "neovim"])
async def test_cancel_with_the_progress_button(session, root: Path, client_name: str, fake_provider) -> None:
    fake_provider.script(SLOW_TURN)
    client = await session(client_name, init_options=provider_options(fake_provider))
    ask = asyncio.ensure_future(client.command("lich.ask", {"prompt": "slow"}))
    await _running_task(client, fake_provider)
    (token,) = client.progress_reports
    started = asyncio.get_running_loop().time()
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    result = await asyncio.wait_for(ask, 5)
    assert asyncio.get_running_loop().time() - started < 2.0
    assert result["stopped_reason"] == "aborted"


async def test_cancel_request_on_lich_ask(session, root: Path, fake_provider) -> None:
    fake_provider.script(SLOW_TURN)
    client = await session("emacs", init_options=provider_options(fake_provider))
    params = types.ExecuteCommandParams(command="lich.ask", arguments=[{"prompt": "slow"}])
    ask = asyncio.ensure_future(client.protocol.send_request_async("workspace/executeCommand", params, msg_id="ask-1"))
    await _running_task(client, fake_provider)
    started = asyncio.get_running_loop().time()
    client.protocol.notify("$/cancelRequest", types.CancelParams(id="ask-1"))
    with pytest.raises(JsonRpcException) as caught:
        await asyncio.wait_for(ask, 5)
    assert caught.value.code == -32800  # RequestCancelled
    await _assert_stopped_quickly(client, started)


async def test_cancel_in_review_mode_leaves_nothing_applied(session, root: Path, fake_provider) -> None:
    (root / "k.py").write_text("k = 1\n", encoding="utf-8")
    fake_provider.script({"tool_calls": [edit("k.py", "k = 1", "k = 2")]}, SLOW_TURN)
    client = await session("visual-studio-code", init_options=provider_options(fake_provider, edit_mode="review"))
    uri = client.open(root / "k.py")
    ask = asyncio.ensure_future(client.command("lich.ask", {"prompt": "half"}))
    await client.wait_until(lambda: len(fake_provider.requests) >= 2)
    await client.command("lich.cancel", {})
    result = await asyncio.wait_for(ask, 5)
    assert result["stopped_reason"] == "aborted"
    assert client.editor.applied == []
    assert client.text(uri) == "k = 1\n"
    assert (root / "k.py").read_text(encoding="utf-8") == "k = 1\n"
    assert uri_of(root / "k.py") not in result["edited"]
