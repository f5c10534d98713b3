"""Approvals, review mode, the three cancel paths and the cancellation deadlines, in-process.

Each test runs an EditorSession in the pytest process against the in-memory FakeEditor
(tests/lsp/fake_editor.py, the `editor` fixture) and the fake provider over real HTTP; no server
process is started. The subprocess smoke tests of the same behaviours over the wire are in
test_lsp_tasks.py ($/cancelRequest through pygls on a running lich.ask, per client profile).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_editor import FakeEditor
from lsp_harness import WAIT_S, as_dict, edit, provider_options, tool_messages, uri_of
from lsprotocol import types

from lich_core.tools.guard import CANCEL_GRACE_MS
from lich_core.userstate import workspace_state_dir
from lich_lsp import tasks
from tests.support.fake_provider import FakeProviderServer

ECHO = {"name": "terminal", "args": {"command": "echo approved-$((40+2))"}}
SLOW_TURN = {"text": "never finishes", "delay_s": 30}
# asyncio may run a timer this much before its time (its clock resolution, with room).
CLOCK_TOLERANCE_S = 0.05


# --- approvals ---


async def test_approval_allow_once_always_and_deny(editor, root: Path, client_name: str) -> None:
    fake = await editor(client_name)
    if client_name == "emacs":
        # No window/showMessageRequest: the question is a diagnostic whose code actions answer it
        # (the whole path: test_session_pending_questions.py).
        _, call = fake.start_command("lich.runTool", ECHO)
        await fake.wait_for_message("cannot show questions")
        (question,) = fake.session.questions.pending()
        await fake.command("lich.answerQuestion", {"id": question.question_id, "answer": "once"})
        result = await call
        assert result["ok"] is True and "approved-42" in result["output"]
        return
    fake.message_answers = ["Allow once", "Deny", "Allow always"]
    once = await fake.command("lich.runTool", ECHO)
    assert once["ok"] is True and "approved-42" in once["output"]
    request = fake.message_requests[0]
    assert [a.title for a in request.actions] == ["Allow once", "Allow always", "Deny"]
    assert "terminal" in request.message and "process/exec" in request.message
    denied = await fake.command("lich.runTool", ECHO)
    assert denied["ok"] is False and denied["error"] == "approval_denied: the user denied terminal"
    always = await fake.command("lich.runTool", ECHO)
    assert always["ok"] is True
    # Remembered in the user state dir, never in the repository.
    saved = json.loads((workspace_state_dir(root) / "approvals.json").read_text(encoding="utf-8"))
    assert not (root / ".lich").exists()
    assert saved == {"always": ["terminal"]}
    again = await fake.command("lich.runTool", ECHO)
    assert again["ok"] is True
    assert len(fake.message_requests) == 3  # "always" was not asked again


async def test_approval_policy_from_config(editor, root: Path) -> None:
    options = {"approval": {"terminal": "deny", "file/write": "ask"}}
    fake = await editor("neovim", init_options=options)
    denied = await fake.command("lich.runTool", ECHO)
    assert denied["error"] == "approval_denied: terminal is denied by the approval policy"
    fake.message_answers = ["Deny"]
    write = await fake.command(
        "lich.runTool", {"name": "write_file", "args": {"path": "w.txt", "content": "x\n"}}
    )
    assert write["error"] == "approval_denied: the user denied write_file"
    assert not (root / "w.txt").exists()
    assert fake.message_requests[0].message.startswith("lich wants to run write_file (file/write)")


async def test_the_agent_asks_before_running_a_process(editor, root: Path, fake_provider) -> None:
    fake_provider.script(
        {
            "tool_calls": [
                {"name": "terminal", "arguments": {"command": "echo should-not-run > ran.txt"}}
            ]
        },
        {"text": "ok"},
    )
    fake = await editor("visual-studio-code", init_options=provider_options(fake_provider))
    fake.message_answers = ["Deny"]
    result = await fake.command("lich.ask", {"prompt": "run it"})
    assert result["stopped_reason"] == "final"
    assert "approval_denied: the user denied terminal" in tool_messages(fake_provider)[0]
    assert not (root / "ran.txt").exists()


# --- review mode ---


def pending_questions_on(fake: FakeEditor, uri: str) -> list[types.Diagnostic]:
    return [d for d in fake.diagnostics.get(uri, []) if d.code == "lich-question"]


async def test_review_mode(editor, root: Path, client_name: str, fake_provider) -> None:
    (root / "r.py").write_text("a = 1\nb = 2\n", encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("r.py", "a = 1", "a = 10")]},
        # The second edit only matches if the agent's reads see its own first (unapplied) edit.
        {"tool_calls": [edit("r.py", "a = 10\nb = 2", "a = 10\nb = 20")]},
        {"text": "reviewed"},
    )
    # The batch style (review per hunk, the default for editors without a preview: test_lsp_review_hunks*).
    fake = await editor(
        client_name,
        init_options=provider_options(fake_provider, edit_mode="review", review_style="batch"),
    )
    uri = fake.open(root / "r.py")
    fake.message_answers = ["Apply"]
    if client_name == "emacs":
        # Neither change annotations nor showMessageRequest: the Apply/Discard question is a
        # pending question (a diagnostic), answered by its code action, the user's own action.
        _, task = fake.start_command("lich.ask", {"prompt": "bump", "uri": uri})
        await fake.wait_until(
            lambda: bool(pending_questions_on(fake, uri)), what="the review question"
        )
        (question,) = pending_questions_on(fake, uri)
        assert fake.applied == [] and question.message.startswith(
            "lich: bump: apply 1 change to 1 file?"
        )
        await fake.command(
            "lich.answerQuestion", {"id": as_dict(question.data)["id"], "answer": "apply"}
        )
        result = await task
    else:
        result = await fake.command("lich.ask", {"prompt": "bump"})
    assert result["stopped_reason"] == "final"
    assert all("edit_rejected" not in m and "error" not in m for m in tool_messages(fake_provider))
    (applied,) = fake.applied
    assert fake.text(uri) == "a = 10\nb = 20\n"
    assert result["edited"] == [uri]
    if client_name == "visual-studio-code":
        annotations = applied.edit.change_annotations
        assert len(annotations) == 1
        (annotation,) = annotations.values()
        assert annotation.needs_confirmation is True and "r.py" in annotation.label
        (doc_edit,) = applied.edit.document_changes
        assert all(isinstance(e, types.AnnotatedTextEdit) for e in doc_edit.edits)
        assert fake.message_requests == []
    elif client_name != "emacs":
        (question,) = fake.message_requests
        assert question.message == "lich: bump: apply 1 change to 1 file?"
        assert applied.edit.change_annotations is None


async def test_review_declined_applies_nothing(editor, root: Path, fake_provider) -> None:
    (root / "r.py").write_text("a = 1\n", encoding="utf-8")
    fake_provider.script({"tool_calls": [edit("r.py", "a = 1", "a = 2")]}, {"text": "done"})
    fake = await editor(
        "neovim", init_options=provider_options(fake_provider, review_style="batch")
    )
    uri = fake.open(root / "r.py")
    fake.message_answers = ["Discard"]
    result = await fake.command("lich.ask", {"prompt": "bump", "mode": "review"})
    assert result["review"] == "edit_rejected: review_declined: the user discarded the changes"
    assert fake.applied == [] and fake.text(uri) == "a = 1\n"


# --- cancelling ---


async def _model_requests(fake_provider: FakeProviderServer, count: int) -> None:
    """Until the fake provider has received `count` requests (its own wait, off the event loop)."""
    assert await asyncio.to_thread(fake_provider.wait_for_requests, count, WAIT_S), (
        fake_provider.requests
    )


async def _running_task(fake: FakeEditor, fake_provider: FakeProviderServer) -> str:
    """The one running task's id, once the model has been asked."""
    await _model_requests(fake_provider, 1)
    status = await fake.command("lich.status", {})
    (task,) = [t for t in status["tasks"] if t["state"] == "running"]
    return task["task_id"]


def _elapsed(started: float) -> float:
    return asyncio.get_running_loop().time() - started


async def _model_call_hung_up(provider: FakeProviderServer) -> None:
    """The cancel closed the slow turn's stream: the fake model saw the client hang up (it would
    otherwise have answered after 30 s; the latency itself is `python -m bench lsp`'s figure)."""
    assert await asyncio.to_thread(provider.wait_for_disconnects, 1, WAIT_S), (
        "the model call was never hung up"
    )


def _progress_tokens(fake: FakeEditor) -> list[str]:
    return list(dict.fromkeys(token for token, _ in fake.progress_reports))


def _assert_progress_begin_end(fake: FakeEditor) -> None:
    (token,) = _progress_tokens(fake)
    reports = [value for t, value in fake.progress_reports if t == token]
    kinds = [type(v).__name__ for v in reports]
    assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd"
    assert reports[0].cancellable is True and reports[0].title.startswith("lich: slow · thread ")
    assert reports[-1].message == "aborted"
    assert fake.progress_created == [token] and fake.progress_tokens == set()


async def test_cancel_with_lich_cancel(editor, root: Path, client_name: str, fake_provider) -> None:
    fake_provider.script(SLOW_TURN)
    fake = await editor(client_name, init_options=provider_options(fake_provider))
    _, ask = fake.start_command("lich.ask", {"prompt": "slow"})
    task_id = await _running_task(fake, fake_provider)
    cancelled = await fake.command("lich.cancel", {"task_id": task_id})
    assert cancelled == {"cancelled": [task_id]}
    result = await asyncio.wait_for(ask, WAIT_S)
    await _model_call_hung_up(fake_provider)
    assert result["stopped_reason"] == "aborted"
    _assert_progress_begin_end(fake)


async def test_cancel_with_the_progress_button(
    editor, root: Path, client_name: str, fake_provider
) -> None:
    fake_provider.script(SLOW_TURN)
    fake = await editor(client_name, init_options=provider_options(fake_provider))
    _, ask = fake.start_command("lich.ask", {"prompt": "slow"})
    await _running_task(fake, fake_provider)
    (token,) = _progress_tokens(fake)
    fake.cancel_progress(token)
    result = await asyncio.wait_for(ask, WAIT_S)
    await _model_call_hung_up(fake_provider)
    assert result["stopped_reason"] == "aborted"
    _assert_progress_begin_end(fake)


async def test_cancel_request_on_lich_ask(
    editor, root: Path, client_name: str, fake_provider
) -> None:
    """$/cancelRequest as pygls delivers it: the request's handler is cancelled, then the session
    hears of it; the agent task stops too (the wire version is in test_lsp_tasks.py)."""
    fake_provider.script(SLOW_TURN)
    fake = await editor(client_name, init_options=provider_options(fake_provider))
    request_id, ask = fake.start_command("lich.ask", {"prompt": "slow"})
    await _running_task(fake, fake_provider)
    fake.cancel(request_id)
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(ask, WAIT_S)  # pygls answers it with RequestCancelled (-32800)
    await fake.wait_for_message("lich: slow: cancelled")  # the task's wrap-up ran
    status = await fake.command("lich.status", {})
    assert all(t["state"] == "done" for t in status["tasks"])
    await _model_call_hung_up(fake_provider)
    assert len(status["tasks"]) == 1
    _assert_progress_begin_end(fake)


async def test_no_progress_for_a_client_without_work_done_progress(
    editor, root: Path, fake_provider
) -> None:
    fake_provider.script(SLOW_TURN)
    fake = await editor(
        "neovim", init_options=provider_options(fake_provider), work_done_progress=False
    )
    _, ask = fake.start_command("lich.ask", {"prompt": "slow"})
    task_id = await _running_task(fake, fake_provider)
    await fake.command("lich.cancel", {"task_id": task_id})
    result = await asyncio.wait_for(ask, WAIT_S)
    assert result["stopped_reason"] == "aborted"
    assert fake.progress_reports == []
    assert fake.progress_created == []  # no window/workDoneProgress/create either


async def test_cancel_kills_the_task_processes(editor, root: Path, fake_provider) -> None:
    fake_provider.script(
        {
            "tool_calls": [
                {"name": "terminal", "arguments": {"command": "echo $$ > pid.fifo; exec sleep 60"}}
            ]
        },
        {"text": "never asked"},
    )
    fake = await editor(
        "visual-studio-code",
        init_options=provider_options(fake_provider, approval={"terminal": "allow"}),
    )
    fifo = root / "pid.fifo"
    os.mkfifo(fifo)  # the shell's pid arrives through it: its write is the event, no polling
    _, ask = fake.start_command("lich.ask", {"prompt": "sleep"})
    pid = await _read_pid(fifo)
    assert _process_running(pid)
    with _exit_notice(pid) as exited:
        await fake.command("lich.cancel", {})
        result = await asyncio.wait_for(ask, WAIT_S)
        assert result["stopped_reason"] == "aborted"
        await asyncio.wait_for(exited.wait(), WAIT_S)
    assert not _process_running(pid)


async def _read_pid(fifo: Path) -> int:
    """The pid the shell writes into the FIFO (a thread blocks reading it; bounded)."""

    def read() -> str:
        with open(fifo, encoding="utf-8") as pipe:
            return pipe.read()

    reader = asyncio.ensure_future(asyncio.to_thread(read))
    try:
        text = await asyncio.wait_for(asyncio.shield(reader), WAIT_S)
    except asyncio.TimeoutError:
        # Unblock the reading thread (it waits for a writer to open the FIFO), then fail.
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        await reader
        raise AssertionError(f"timed out after {WAIT_S:g} s waiting for the shell's pid") from None
    return int(text.strip())


@contextlib.contextmanager
def _exit_notice(pid: int) -> Iterator[asyncio.Event]:
    """An event set when process `pid` ends (its pidfd turns readable; zombies count as ended)."""
    loop = asyncio.get_running_loop()
    exited = asyncio.Event()
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        exited.set()
        yield exited
        return
    loop.add_reader(pidfd, exited.set)
    try:
        yield exited
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)


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
    editor, root: Path, client_name: str, answer: str, fake_provider, short_cancel_grace: float
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
        {
            "tool_calls": [
                {"name": "read_file", "arguments": {"path": "p.py"}},
                {"name": "read_file", "arguments": {"path": "q.py"}},
            ]
        },
        {"tool_calls": [{"name": "apply_patch", "arguments": {"input": patch}}]},
        SLOW_TURN,
    )
    fake = await editor(client_name, init_options=provider_options(fake_provider))
    p_uri = fake.open(root / "p.py")
    q_uri = uri_of(root / "q.py")
    with fake.holding_edits():
        _, ask = fake.start_command("lich.ask", {"prompt": "patch"})
        await fake.wait_for_edits(1)
        await fake.command("lich.cancel", {})
        # The agent run is over (it gave up on the cancelled tool call after its grace, or the
        # task's hard stop cut it short; either way it emits run_end last), yet the task still
        # waits for the editor's answer before it reports.
        await fake.wait_for_event("run_end", task_id="t1", stopped_reason="aborted")
        (task,) = (await fake.command("lich.status", {}))["tasks"]
        assert task["state"] == "running"
        assert not ask.done()
        fake.answer = answer
    result = await asyncio.wait_for(ask, WAIT_S)
    assert result["stopped_reason"] == "aborted"
    if answer == "apply":
        assert fake.text(p_uri) == "p = 2\n"
        assert (root / "q.py").read_text(encoding="utf-8") == "q = 2\n"
        assert set(result["edited"]) == {p_uri, q_uri}
    else:
        assert fake.text(p_uri) == "p = 1\n"
        assert (root / "q.py").read_text(
            encoding="utf-8"
        ) == "q = 1\n"  # the disk part was rolled back
        assert result["edited"] == []
    assert (root / "p.py").read_text(encoding="utf-8") == "p = 1\n"  # never behind the editor
    assert len(fake_provider.requests) == 2  # the slow turn was never asked for


async def test_cancel_in_review_mode_leaves_nothing_applied(
    editor, root: Path, fake_provider
) -> None:
    (root / "k.py").write_text("k = 1\n", encoding="utf-8")
    fake_provider.script({"tool_calls": [edit("k.py", "k = 1", "k = 2")]}, SLOW_TURN)
    fake = await editor(
        "visual-studio-code", init_options=provider_options(fake_provider, edit_mode="review")
    )
    uri = fake.open(root / "k.py")
    _, ask = fake.start_command("lich.ask", {"prompt": "half"})
    await _model_requests(fake_provider, 2)
    await fake.command("lich.cancel", {})
    result = await asyncio.wait_for(ask, WAIT_S)
    assert result["stopped_reason"] == "aborted"
    assert fake.applied == []
    assert fake.text(uri) == "k = 1\n"
    assert (root / "k.py").read_text(encoding="utf-8") == "k = 1\n"
    assert uri_of(root / "k.py") not in result["edited"]


# --- the cancellation deadlines ---

STUBBORN_PLUGIN = """\
import asyncio

from lich_core.plugins import Plugin
from lich_core.tools.types import FunctionTool, ToolResult

RELEASE = asyncio.Event()  # set by the test when it is over
cancels = 0


async def stubborn(args, ctx):
    # Ignores the cancel token and swallows every asyncio cancellation until released.
    global cancels
    while not RELEASE.is_set():
        try:
            await RELEASE.wait()
        except asyncio.CancelledError:
            cancels += 1
    return ToolResult(ok=True, output="released")


plugin = Plugin(name="stubborn", tools=[FunctionTool("stubborn", "Never stops.", {"type": "object", "properties": {}}, stubborn)])
"""
# lich_core.plugins.loader names a plugin module lich_plugin_<index in `plugins`>_<file stem>.
STUBBORN_MODULE = "lich_plugin_0_stubborn"


@pytest.fixture
def stubborn_plugin(tmp_path: Path) -> Iterator[Path]:
    """The plugin file; afterwards its tool is released and its module leaves sys.modules."""
    path = tmp_path / "plugins" / "stubborn.py"
    path.parent.mkdir()
    path.write_text(STUBBORN_PLUGIN, encoding="utf-8")
    yield path
    module = sys.modules.pop(STUBBORN_MODULE, None)
    if module is not None:
        module.RELEASE.set()


def test_the_hard_stop_is_not_shorter_than_the_tool_grace() -> None:
    """A cancelled tool gets CANCEL_GRACE_MS to clean up (kill its process group); the task's hard
    stop must not cut that short, or a cancel could leave the tool's processes behind."""
    assert tasks.CANCEL_HARD_STOP_S >= CANCEL_GRACE_MS / 1000, (
        f"CANCEL_HARD_STOP_S = {tasks.CANCEL_HARD_STOP_S} s is shorter than the tool grace "
        f"CANCEL_GRACE_MS = {CANCEL_GRACE_MS} ms"
    )


async def test_a_task_whose_tool_ignores_the_cancel_ends_after_the_tool_grace(
    editor, root: Path, fake_provider, stubborn_plugin: Path, short_cancel_grace: float
) -> None:
    """lich.cancel while a tool ignores both the cancel token and asyncio cancellation: the task
    still ends (the call is abandoned after its grace), and not before the grace ran out."""
    fake_provider.script(
        {"tool_calls": [{"name": "stubborn", "arguments": {}}]}, {"text": "never asked"}
    )
    fake = await editor(
        "visual-studio-code",
        init_options=provider_options(fake_provider, plugins=[str(stubborn_plugin)]),
    )
    _, ask = fake.start_command("lich.ask", {"prompt": "stubborn"})
    await fake.wait_for_event("tool_call_start", name="stubborn")
    module = sys.modules[STUBBORN_MODULE]
    started = asyncio.get_running_loop().time()
    await fake.command("lich.cancel", {})
    result = await asyncio.wait_for(ask, tasks.CANCEL_HARD_STOP_S + WAIT_S)
    elapsed = _elapsed(started)
    assert result["stopped_reason"] == "aborted"
    assert module.cancels >= 1 and not module.RELEASE.is_set()  # the tool did ignore the cancel
    # Not before the tool had its grace to clean up: nothing cut it short.
    assert elapsed >= short_cancel_grace - CLOCK_TOLERANCE_S, (
        f"the task ended {elapsed:.2f} s after the cancel, inside the tool's {short_cancel_grace} s grace"
    )
    status = await fake.command("lich.status", {})
    assert [t["state"] for t in status["tasks"]] == ["done"]
    assert len(fake_provider.requests) == 1  # the model was not asked again after the cancel


async def test_a_fetch_question_names_the_host_and_always_is_per_host(editor, root: Path) -> None:
    """fetch_url asks with the URL's host in the question; "Allow always" covers that host only.
    (Both hosts are refused by safe_fetch afterwards: what is tested is the approval, which runs
    before the tool and so never reaches the network.)"""
    fake = await editor("visual-studio-code")
    fake.message_answers = ["Allow always", "Deny"]
    first = await fake.command(
        "lich.runTool", {"name": "fetch_url", "args": {"url": "http://docs.example.local/a"}}
    )
    assert first["error"].startswith("blocked_url:"), first  # approved, then refused by safe_fetch
    question = fake.message_requests[0].message
    assert question.startswith("lich wants to run fetch_url on docs.example.local (net/fetch): ")
    again = await fake.command(
        "lich.runTool", {"name": "fetch_url", "args": {"url": "http://DOCS.example.local./b"}}
    )
    assert again["error"].startswith("blocked_url:")
    assert len(fake.message_requests) == 1  # same host: not asked again
    other = await fake.command(
        "lich.runTool", {"name": "fetch_url", "args": {"url": "http://other.example.local/"}}
    )
    assert other["error"] == "approval_denied: the user denied fetch_url"
    assert "on other.example.local" in fake.message_requests[1].message
    saved = json.loads((workspace_state_dir(root) / "approvals.json").read_text(encoding="utf-8"))
    assert saved == {"always": ["fetch_url@docs.example.local"]}
