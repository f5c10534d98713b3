"""Pending questions, in-process: for an editor that cannot show window/showMessageRequest (the
emacs profile, like Helix and Kate), a tool's approval and the workspace's trust are asked as a
diagnostic with code actions, answered through lich.answerQuestion; the tool waits (bounded,
cancellable). The same over the wire, with a real server, is in test_lsp_pending_questions.py."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from fake_editor import FakeEditor
from lsp_harness import provider_options, tool_messages, uri_of
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from test_session_trust import plant_repository, user_settings

from lich_core.userstate import workspace_state_dir
from lich_lsp import approvals, pending_questions
from tests.support.fake_provider import FakeProviderServer

CANNOT_ASK = "emacs"  # its published capabilities have no window.showMessageRequest
MARKER_COMMAND = "echo approved > ran.txt"
# The code actions name the command they allow, and "Allow always" its scope (the tool).
ONCE = f"Allow once: run `{MARKER_COMMAND}` (terminal)"
ALWAYS = f"Allow always (every terminal call): run `{MARKER_COMMAND}` (terminal)"
DENY = f"Deny: run `{MARKER_COMMAND}` (terminal)"


def questions(fake: FakeEditor, uri: str) -> list[types.Diagnostic]:
    return [d for d in fake.diagnostics.get(uri, []) if d.code == pending_questions.QUESTION_CODE]


def answers_at(
    fake: FakeEditor, uri: str, diagnostic: types.Diagnostic | None = None
) -> dict[str, types.Command]:
    """The code actions the editor offers at the question's range (or the file's start), by title."""
    at = (
        diagnostic.range
        if diagnostic is not None
        else types.Range(start=types.Position(0, 0), end=types.Position(0, 0))
    )
    actions = fake.code_action(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=at,
            context=types.CodeActionContext(
                diagnostics=[diagnostic] if diagnostic is not None else []
            ),
        )
    )
    commands = {}
    for action in actions:
        command = action.command if isinstance(action, types.CodeAction) else action
        assert isinstance(command, types.Command)
        if command.command == pending_questions.ANSWER_COMMAND:
            commands[action.title] = command
    return commands


async def run_answer(fake: FakeEditor, command: types.Command) -> dict:
    return await fake.command(command.command, (command.arguments or [None])[0])


async def open_file(
    fake: FakeEditor, root: Path, name: str = "main.py", text: str = "print('hi')\nx = 1\n"
) -> str:
    path = root / name
    path.write_text(text, encoding="utf-8")
    return fake.open(path)


async def test_allow_once_runs_deny_refuses_always_remembers(editor, root: Path) -> None:
    fake = await editor(CANNOT_ASK)
    uri = await open_file(fake, root)
    call = {"name": "terminal", "args": {"command": MARKER_COMMAND}}

    _, once = fake.start_command("lich.runTool", call)
    await fake.wait_until(
        lambda: bool(questions(fake, uri)), what="the pending question's diagnostic"
    )
    (question,) = questions(fake, uri)
    assert question.severity == types.DiagnosticSeverity.Warning
    assert question.message.startswith("lich wants to run terminal (process/exec): ")
    assert MARKER_COMMAND in question.message
    # A range with a width (Kate shows no marker for a zero-width one): the first line's text.
    assert (question.range.start, question.range.end) == (
        types.Position(0, 0),
        types.Position(0, len("print('hi')")),
    )
    assert any("cannot show questions" in text and "main.py" in text for _, text in fake.messages)
    offered = answers_at(fake, uri, question)
    assert list(offered) == [ONCE, ALWAYS, DENY]
    assert not once.done()  # the tool waits for the answer
    answered = await run_answer(fake, offered[ONCE])
    assert answered["answer"] == "once" and answered["kind"] == "approval"
    result = await once
    assert result["ok"] is True, result
    assert (root / "ran.txt").read_text().strip() == "approved"
    assert questions(fake, uri) == [] and answers_at(fake, uri) == {}  # withdrawn once answered

    (root / "ran.txt").unlink()
    _, denied = fake.start_command("lich.runTool", call)
    await fake.wait_until(lambda: bool(questions(fake, uri)), what="the second question")
    await run_answer(fake, answers_at(fake, uri)[DENY])
    refused = await denied
    assert refused == {**refused, "ok": False, "error": "approval_denied: the user denied terminal"}
    assert not (root / "ran.txt").exists()

    _, always = fake.start_command("lich.runTool", call)
    await fake.wait_until(lambda: bool(questions(fake, uri)), what="the third question")
    await run_answer(fake, answers_at(fake, uri)[ALWAYS])
    assert (await always)["ok"] is True
    saved = json.loads((workspace_state_dir(root) / "approvals.json").read_text(encoding="utf-8"))
    assert saved == {"always": ["terminal"]}
    asked = len([text for _, text in fake.messages if "cannot show questions" in text])
    assert (await fake.command("lich.runTool", call))["ok"] is True  # remembered: not asked again
    assert len([text for _, text in fake.messages if "cannot show questions" in text]) == asked


async def test_the_question_goes_on_the_file_the_task_started_from(
    editor, root: Path, fake_provider
) -> None:
    fake_provider.script(
        {"tool_calls": [{"name": "terminal", "arguments": {"command": MARKER_COMMAND}}]},
        {"text": "done"},
    )
    fake = await editor(CANNOT_ASK, init_options=provider_options(fake_provider))
    await open_file(fake, root, "first.py")
    origin = await open_file(fake, root, "origin.py", "\nsecond line\n")
    _, task = fake.start_command("lich.ask", {"prompt": "run it", "uri": origin})
    await fake.wait_until(
        lambda: bool(questions(fake, origin)), what="the question on the task's file"
    )
    (question,) = questions(fake, origin)
    # An empty first line: the range runs to the next line's start, never zero-width.
    assert (question.range.start, question.range.end) == (
        types.Position(0, 0),
        types.Position(1, 0),
    )
    assert questions(fake, uri_of(root / "first.py")) == []
    await run_answer(fake, answers_at(fake, origin, question)[ONCE])
    result = await task
    assert result["stopped_reason"] == "final"
    assert tool_messages(fake_provider)[0].strip() == "[exit 0]"  # the command ran
    assert (root / "ran.txt").exists()


async def test_with_no_file_open_the_question_waits_for_the_first_one(editor, root: Path) -> None:
    fake = await editor(CANNOT_ASK)
    _, call = fake.start_command(
        "lich.runTool", {"name": "terminal", "args": {"command": MARKER_COMMAND}}
    )
    await fake.wait_for_message("the lich diagnostic in the next file you open")
    (notice,) = [text for _, text in fake.messages if "cannot show questions" in text]
    assert 'lich.answerQuestion with {id: "q1", answer: "once" | "always" | "deny"}' in notice
    assert all(not questions(fake, uri) for uri in fake.diagnostics)
    uri = await open_file(fake, root)
    await fake.wait_until(
        lambda: bool(questions(fake, uri)), what="the question on the opened file"
    )
    await run_answer(fake, answers_at(fake, uri)[DENY])
    assert (await call)["error"] == "approval_denied: the user denied terminal"


async def test_an_unanswered_question_is_a_denial_that_says_so(
    editor, root: Path, monkeypatch
) -> None:
    monkeypatch.setattr(approvals, "PENDING_APPROVAL_TIMEOUT_S", 0.2)
    fake = await editor(CANNOT_ASK)
    uri = await open_file(fake, root)
    result = await fake.command(
        "lich.runTool", {"name": "terminal", "args": {"command": MARKER_COMMAND}}
    )
    assert result["ok"] is False
    assert result["error"].startswith(
        "approval_denied: terminal needs the user's approval, this editor cannot ask (no window/showMessageRequest "
        "support), and the question shown as a diagnostic was not answered within 0.2 s; the call "
    )
    assert result["error"].endswith('allow it with the config key approval.terminal = "allow"')
    assert any(
        kind == types.MessageType.Warning
        and text.startswith("lich: terminal was refused: its approval question")
        for kind, text in fake.messages
    )
    assert questions(fake, uri) == []  # withdrawn
    assert not (root / "ran.txt").exists()


async def test_cancelling_the_task_ends_the_wait(editor, root: Path, fake_provider) -> None:
    fake_provider.script(
        {"tool_calls": [{"name": "terminal", "arguments": {"command": MARKER_COMMAND}}]}
    )
    fake = await editor(CANNOT_ASK, init_options=provider_options(fake_provider))
    uri = await open_file(fake, root)
    _, task = fake.start_command("lich.ask", {"prompt": "run it"})
    await fake.wait_until(lambda: bool(questions(fake, uri)), what="the pending question")
    (question,) = fake.session.questions.pending()
    assert (await fake.command("lich.cancel", {}))["cancelled"]
    result = await task
    assert result["stopped_reason"] == "aborted"
    assert questions(fake, uri) == []
    assert not (root / "ran.txt").exists()
    # Its code action, still on the user's screen, is answered with a stable error.
    with pytest.raises(
        JsonRpcInvalidParams, match="lich.answerQuestion: question_gone: no pending question 'q1'"
    ):
        await fake.command("lich.answerQuestion", {"id": question.question_id, "answer": "once"})


async def test_bad_answers_are_clear_errors(editor, root: Path) -> None:
    fake = await editor(CANNOT_ASK)
    uri = await open_file(fake, root)
    _, call = fake.start_command(
        "lich.runTool", {"name": "terminal", "args": {"command": MARKER_COMMAND}}
    )
    await fake.wait_until(lambda: bool(questions(fake, uri)), what="the pending question")
    with pytest.raises(
        JsonRpcInvalidParams,
        match="lich.answerQuestion: question q1 takes one of once, always, deny, got 'yes'",
    ):
        await fake.command("lich.answerQuestion", {"id": "q1", "answer": "yes"})
    with pytest.raises(
        JsonRpcInvalidParams, match="lich.answerQuestion: missing required field 'answer'"
    ):
        await fake.command("lich.answerQuestion", {"id": "q1"})
    await fake.command("lich.answerQuestion", {"id": "q1", "answer": "deny"})
    assert (await call)["ok"] is False


async def test_a_client_without_code_action_literals_gets_commands(editor, root: Path) -> None:
    fake = await editor(CANNOT_ASK)
    fake.session.features = dataclasses.replace(fake.session.features, code_action_literals=False)
    uri = await open_file(fake, root)
    _, call = fake.start_command(
        "lich.runTool", {"name": "terminal", "args": {"command": MARKER_COMMAND}}
    )
    await fake.wait_until(lambda: bool(questions(fake, uri)), what="the pending question")
    offered = fake.session.code_actions(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(0, 0), end=types.Position(0, 0)),
            context=types.CodeActionContext(diagnostics=[], only=["quickfix"]),
        )
    )
    assert [type(a) for a in offered] == [types.Command] * 3
    assert offered[0].arguments == [{"id": "q1", "answer": "once"}]
    await run_answer(fake, offered[0])
    assert (await call)["ok"] is True


async def test_the_trust_question_as_a_diagnostic(editor, root: Path, fake_provider) -> None:
    with FakeProviderServer() as attacker:
        plant_repository(root, attacker)
        fake = await editor(CANNOT_ASK, init_options=user_settings(fake_provider))
        # No file is open at initialized: the question goes on the first one opened.
        await fake.wait_for_message("lich.trustWorkspace")
        uri = await open_file(fake, root)
        await fake.wait_until(
            lambda: bool(questions(fake, uri)), what="the trust question's diagnostic"
        )
        (question,) = questions(fake, uri)
        assert question.message.startswith("lich: this workspace's .lich/config.json")
        offered = answers_at(fake, uri, question)
        assert list(offered) == [
            "Trust: trust .lich/config.json",
            "Not now: trust .lich/config.json",
        ]
        assert (await fake.command("lich.status", {}))["trust"]["state"] == "untrusted"
        await run_answer(fake, offered["Trust: trust .lich/config.json"])
        assert (await fake.command("lich.status", {}))["trust"]["state"] == "trusted"
        assert questions(fake, uri) == []


async def test_not_now_leaves_the_workspace_untrusted(editor, root: Path, fake_provider) -> None:
    with FakeProviderServer() as attacker:
        plant_repository(root, attacker)
        fake = await editor(CANNOT_ASK, init_options=user_settings(fake_provider))
        uri = await open_file(fake, root)
        await fake.wait_until(
            lambda: bool(questions(fake, uri)), what="the trust question's diagnostic"
        )
        await run_answer(fake, answers_at(fake, uri)["Not now: trust .lich/config.json"])
        assert questions(fake, uri) == []
        assert (await fake.command("lich.status", {}))["trust"]["state"] == "untrusted"
        assert not (root / "PWNED").exists()


async def test_a_client_that_can_ask_gets_no_pending_question(editor, root: Path) -> None:
    fake = await editor("visual-studio-code")
    uri = await open_file(fake, root)
    fake.message_answers = ["Deny"]
    result = await fake.command(
        "lich.runTool", {"name": "terminal", "args": {"command": MARKER_COMMAND}}
    )
    assert result["error"] == "approval_denied: the user denied terminal"
    assert questions(fake, uri) == [] and answers_at(fake, uri) == {}
