"""Approvals, review mode and the three cancel paths, against a real server and the fake provider."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from lsp_harness import WAIT_S, uri_of
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from test_lsp_ask import edit, provider_options, tool_messages

from lich_core.userstate import workspace_state_dir

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
    # Remembered in the user state dir, never in the repository.
    saved = json.loads((workspace_state_dir(root) / "approvals.json").read_text(encoding="utf-8"))
    assert not (root / ".lich").exists()
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
# The slow turn takes 30 s, so ending well before that proves the cancel stopped it; the bound is
# loose because CI shares two busy cores (`python -m bench lsp` measures the real cancel latency).
STOPPED_WITHIN_S = 10.0


async def _running_task(client, fake_provider) -> str:
    await client.wait_until(lambda: len(fake_provider.requests) >= 1)
    status = await client.command("lich.status", {})
    (task,) = [t for t in status["tasks"] if t["state"] == "running"]
    return task["task_id"]


def _elapsed(started: float) -> float:
    return asyncio.get_running_loop().time() - started


def _assert_progress_begin_end(client) -> None:
    (token,) = client.progress_reports
    reports = client.progress_reports[token]
    kinds = [type(v).__name__ for v in reports]
    assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd"
    assert reports[0].cancellable is True and reports[0].title == "lich: slow"
    assert reports[-1].message == "aborted"


async def test_cancel_with_lich_cancel(session, root: Path, client_name: str, fake_provider) -> None:
    fake_provider.script(SLOW_TURN)
    client = await session(client_name, init_options=provider_options(fake_provider))
    ask = asyncio.ensure_future(client.command("lich.ask", {"prompt": "slow"}))
    task_id = await _running_task(client, fake_provider)
    started = asyncio.get_running_loop().time()
    cancelled = await client.command("lich.cancel", {"task_id": task_id})
    assert cancelled == {"cancelled": [task_id]}
    result = await asyncio.wait_for(ask, WAIT_S)
    assert _elapsed(started) < STOPPED_WITHIN_S
    assert result["stopped_reason"] == "aborted"
    _assert_progress_begin_end(client)


async def test_cancel_with_the_progress_button(session, root: Path, client_name: str, fake_provider) -> None:
    fake_provider.script(SLOW_TURN)
    client = await session(client_name, init_options=provider_options(fake_provider))
    ask = asyncio.ensure_future(client.command("lich.ask", {"prompt": "slow"}))
    await _running_task(client, fake_provider)
    (token,) = client.progress_reports
    started = asyncio.get_running_loop().time()
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    result = await asyncio.wait_for(ask, WAIT_S)
    assert _elapsed(started) < STOPPED_WITHIN_S
    assert result["stopped_reason"] == "aborted"
    _assert_progress_begin_end(client)


async def test_cancel_request_on_lich_ask(session, root: Path, client_name: str, fake_provider) -> None:
    fake_provider.script(SLOW_TURN)
    client = await session(client_name, init_options=provider_options(fake_provider))
    params = types.ExecuteCommandParams(command="lich.ask", arguments=[{"prompt": "slow"}])
    ask = asyncio.ensure_future(client.protocol.send_request_async("workspace/executeCommand", params, msg_id="ask-1"))
    await _running_task(client, fake_provider)
    started = asyncio.get_running_loop().time()
    client.protocol.notify("$/cancelRequest", types.CancelParams(id="ask-1"))
    with pytest.raises(JsonRpcException) as caught:
        await asyncio.wait_for(ask, WAIT_S)
    assert caught.value.code == -32800  # RequestCancelled
    status = await client.wait_for_status(lambda status: all(t["state"] == "done" for t in status["tasks"]))
    assert _elapsed(started) < STOPPED_WITHIN_S
    assert len(status["tasks"]) == 1


async def test_no_progress_for_a_client_without_work_done_progress(session, root: Path, fake_provider) -> None:
    fake_provider.script(SLOW_TURN)
    client = await session("neovim", init_options=provider_options(fake_provider), work_done_progress=False)
    ask = asyncio.ensure_future(client.command("lich.ask", {"prompt": "slow"}))
    task_id = await _running_task(client, fake_provider)
    await client.command("lich.cancel", {"task_id": task_id})
    result = await asyncio.wait_for(ask, WAIT_S)
    assert result["stopped_reason"] == "aborted"
    assert client.progress_reports == {}  # and pytest-lsp saw no workDoneProgress/create


async def test_cancel_kills_the_task_processes(session, root: Path, fake_provider) -> None:
    fake_provider.script(
        {"tool_calls": [{"name": "terminal", "arguments": {"command": "echo $$ > pid.txt; exec sleep 60"}}]},
        {"text": "never asked"},
    )
    client = await session("visual-studio-code", init_options=provider_options(fake_provider, approval={"terminal": "allow"}))
    ask = asyncio.ensure_future(client.command("lich.ask", {"prompt": "sleep"}))
    pid_file = root / "pid.txt"
    await client.wait_until(lambda: pid_file.exists() and pid_file.read_text().strip().isdigit())
    pid = int(pid_file.read_text())
    assert _process_running(pid)
    await client.command("lich.cancel", {})
    result = await asyncio.wait_for(ask, WAIT_S)
    assert result["stopped_reason"] == "aborted"
    await client.wait_until(lambda: not _process_running(pid))


def _process_running(pid: int) -> bool:
    """Alive and not a zombie (a killed child may linger unreaped for a moment)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.mark.parametrize("client_name", ["visual-studio-code", "neovim@v0.7.0"])
@pytest.mark.parametrize("answer", ["apply", "reject"])
async def test_cancel_while_the_editor_holds_a_two_file_patch(
    session, root: Path, client_name: str, answer: str, fake_provider
) -> None:
    """Cancel arrives while a patch over an open file (editor) and a closed one (disk) waits for
    the editor: the patch lands whole or not at all, and the server knows which."""
    from lich_core.hashline.anchors import line_hash

    (root / "p.py").write_text("p = 1\n", encoding="utf-8")
    (root / "q.py").write_text("q = 1\n", encoding="utf-8")
    patch = (
        f"@@ p.py\n= 1:{line_hash('p = 1')}..1:{line_hash('p = 1')}\n~p = 2\n"
        f"@@ q.py\n= 1:{line_hash('q = 1')}..1:{line_hash('q = 1')}\n~q = 2\n"
    )
    fake_provider.script(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "p.py"}}, {"name": "read_file", "arguments": {"path": "q.py"}}]},
        {"tool_calls": [{"name": "apply_patch", "arguments": {"input": patch}}]},
        SLOW_TURN,
    )
    client = await session(client_name, init_options=provider_options(fake_provider))
    p_uri = client.open(root / "p.py")
    q_uri = uri_of(root / "q.py")
    with client.holding_edits():
        ask = asyncio.ensure_future(client.command("lich.ask", {"prompt": "patch"}))
        await client.wait_until(lambda: len(client.editor.applied) == 1, what="the patch's edit")
        await client.command("lich.cancel", {})
        # The agent run is over (it gave up on the cancelled tool call after its grace, or the
        # task's hard stop cut it short; either way it emits run_end last), yet the task still
        # waits for the editor's answer before it reports.
        await client.wait_for_event("run_end", task_id="t1", stopped_reason="aborted")
        (task,) = (await client.command("lich.status", {}))["tasks"]
        assert task["state"] == "running"
        assert not ask.done()
        client.editor.answer = answer
    result = await asyncio.wait_for(ask, WAIT_S)
    assert result["stopped_reason"] == "aborted"
    if answer == "apply":
        assert client.text(p_uri) == "p = 2\n"
        assert (root / "q.py").read_text(encoding="utf-8") == "q = 2\n"
        assert set(result["edited"]) == {p_uri, q_uri}
    else:
        assert client.text(p_uri) == "p = 1\n"
        assert (root / "q.py").read_text(encoding="utf-8") == "q = 1\n"  # the disk part was rolled back
        assert result["edited"] == []
    assert (root / "p.py").read_text(encoding="utf-8") == "p = 1\n"  # never behind the editor
    assert len(fake_provider.requests) == 2  # the slow turn was never asked for


async def test_cancel_in_review_mode_leaves_nothing_applied(session, root: Path, fake_provider) -> None:
    (root / "k.py").write_text("k = 1\n", encoding="utf-8")
    fake_provider.script({"tool_calls": [edit("k.py", "k = 1", "k = 2")]}, SLOW_TURN)
    client = await session("visual-studio-code", init_options=provider_options(fake_provider, edit_mode="review"))
    uri = client.open(root / "k.py")
    ask = asyncio.ensure_future(client.command("lich.ask", {"prompt": "half"}))
    await client.wait_until(lambda: len(fake_provider.requests) >= 2)
    await client.command("lich.cancel", {})
    result = await asyncio.wait_for(ask, WAIT_S)
    assert result["stopped_reason"] == "aborted"
    assert client.editor.applied == []
    assert client.text(uri) == "k = 1\n"
    assert (root / "k.py").read_text(encoding="utf-8") == "k = 1\n"
    assert uri_of(root / "k.py") not in result["edited"]
