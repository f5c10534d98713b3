"""No client forces "allow everything" (issue #32), over the wire with a real server: a client that
declares no window/showMessageRequest (emacs's published profile, and VS Code's with that one
capability removed, as Helix and Kate declare it) gets a tool's approval and the workspace's trust
as a diagnostic whose code actions answer it through lich.answerQuestion; and a request the server
does not advertise (textDocument/documentSymbol, which Kate sends) is answered quietly."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import lsp_harness
import pytest
from lsp_harness import EditorClient, as_dict, bounded, provider_options, tool_messages
from lsprotocol import types
from test_session_trust import plant_repository, user_settings

from tests.support.fake_provider import FakeProviderServer

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")

QUESTION_CODE = "lich-question"
VSCODE_WITHOUT_QUESTIONS = "visual-studio-code-without-showMessageRequest"
MARKER = "ran.txt"


@pytest.fixture(params=["emacs", VSCODE_WITHOUT_QUESTIONS])
def cannot_ask(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """A client profile without window.showMessageRequest; VS Code's minus that capability is
    served by wrapping the harness's capabilities_for (looked up when the session starts)."""
    name = request.param
    if name == VSCODE_WITHOUT_QUESTIONS:
        published = lsp_harness.capabilities_for

        def without_questions(client_name: str, **options: Any) -> types.ClientCapabilities:
            caps = copy.deepcopy(published("visual-studio-code", **options))
            assert caps.window is not None
            caps.window.show_message = None
            return caps

        monkeypatch.setattr(lsp_harness, "capabilities_for", without_questions)
    return name


def pending(client: EditorClient, uri: str, seen: set[str]) -> list[types.Diagnostic]:
    return [
        d
        for d in client.diagnostics.get(uri, [])
        if d.code == QUESTION_CODE and as_dict(d.data)["id"] not in seen
    ]


async def answer_pending(client: EditorClient, uri: str, title: str, seen: set[str]) -> str:
    """Wait for a new pending question on `uri`, take the code action `title` at its range and run
    its command, as the user would; returns the question's diagnostic message."""
    await client.wait_until(
        lambda: bool(pending(client, uri, seen)), what=f"a pending question on {uri}"
    )
    (diagnostic,) = pending(client, uri, seen)
    seen.add(as_dict(diagnostic.data)["id"])
    assert (
        diagnostic.range.end != diagnostic.range.start
    )  # a marker every client shows (Kate: not zero-width)
    actions = await bounded(
        client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=diagnostic.range,
                context=types.CodeActionContext(diagnostics=[diagnostic]),
            )
        ),
        lsp_harness.WAIT_S,
        "the code actions",
    )
    commands = {}
    for action in actions or []:
        command = action.command if isinstance(action, types.CodeAction) else action
        assert isinstance(command, types.Command)
        commands[action.title.split(":")[0]] = command
    command = commands[title]
    assert command.command == "lich.answerQuestion"
    await client.command(command.command, (command.arguments or [None])[0])
    return diagnostic.message


async def test_allow_once_runs_the_command_and_deny_ends_it_with_approval_denied(
    session, root: Path, fake_provider, cannot_ask: str
) -> None:
    command = f"echo approved > {MARKER}"
    fake_provider.script(
        {"tool_calls": [{"name": "terminal", "arguments": {"command": command}}]},
        {"text": "ran it"},
        {"tool_calls": [{"name": "terminal", "arguments": {"command": command}}]},
        {"text": "was denied"},
    )
    client = await session(cannot_ask, init_options=provider_options(fake_provider))
    assert client.declared.window is not None and client.declared.window.show_message is None
    (root / "main.py").write_text("x = 1\n", encoding="utf-8")
    uri = client.open(root / "main.py")
    seen: set[str] = set()

    task = asyncio.ensure_future(client.command("lich.ask", {"prompt": "run it", "uri": uri}))
    question = await answer_pending(client, uri, "Allow once", seen)
    assert question.startswith(f"lich wants to run terminal (process/exec): runs `{command}`")
    result = await bounded(task, lsp_harness.COMMAND_WAIT_S, "the first task")
    assert result["stopped_reason"] == "final" and result["final"] == "ran it"
    assert (root / MARKER).read_text(encoding="utf-8").strip() == "approved"
    assert tool_messages(fake_provider)[0] == "[exit 0]"
    await client.wait_until(
        lambda: not pending(client, uri, set()), what="the answered question to go"
    )

    (root / MARKER).unlink()
    task = asyncio.ensure_future(client.command("lich.ask", {"prompt": "run it again", "uri": uri}))
    await answer_pending(client, uri, "Deny", seen)
    result = await bounded(task, lsp_harness.COMMAND_WAIT_S, "the second task")
    assert result["stopped_reason"] == "final" and result["final"] == "was denied"
    assert (
        json.loads(tool_messages(fake_provider)[-1])["error"]
        == "approval_denied: the user denied terminal"
    )
    assert not (root / MARKER).exists()
    assert (
        client.editor.message_requests == []
    )  # nothing was asked the way this client cannot answer


async def test_the_trust_question_through_a_code_action(
    session, root: Path, fake_provider, cannot_ask: str
) -> None:
    with FakeProviderServer() as attacker:
        plant_repository(root, attacker)
        client = await session(cannot_ask, init_options=user_settings(fake_provider))
        await client.wait_until(
            lambda: any("lich.trustWorkspace" in m.message for m in client.messages),
            what="the trust notice",
        )
        (root / "main.py").write_text("x = 1\n", encoding="utf-8")
        uri = client.open(
            root / "main.py"
        )  # no file was open at `initialized`: the question goes here
        await client.command("lich.tools", {})
        assert not (root / "PWNED").exists()
        question = await answer_pending(client, uri, "Trust", set())
        assert question.startswith("lich: this workspace's .lich/config.json")
        assert (await client.command("lich.status", {}))["trust"]["state"] == "trusted"
        await client.command("lich.tools", {})
        assert (root / "PWNED").read_text(encoding="utf-8") == "plugin module ran"


async def test_an_unadvertised_request_is_answered_quietly(
    session, root: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    client = await session("visual-studio-code")
    (root / "main.py").write_text("def f():\n    pass\n", encoding="utf-8")
    uri = client.open(root / "main.py")
    symbols = await bounded(
        client.text_document_document_symbol_async(
            types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=uri))
        ),
        lsp_harness.WAIT_S,
        "the answer to textDocument/documentSymbol",
    )
    assert symbols is None
    # A request LSP gives no null result for: MethodNotFound, still without a warning.
    with pytest.raises(Exception, match="[Mm]ethod [Nn]ot [Ff]ound"):
        await client.raw_request("workspace/diagnostic", {"previousResultIds": []})
    client.raw_notify("workspace/didChangeWatchedFiles", {"changes": []})
    # A warning the server does log, sent last: once it is on stderr, so is everything before it.
    client.raw_notify("$/cancelRequest", {"id": {"not": "an id"}})
    stderr = ""

    def marker_arrived() -> bool:
        nonlocal stderr
        stderr += capfd.readouterr().err
        return "cancelRequest" in stderr

    await client.wait_until(
        marker_arrived, what="the server's warning about the malformed $/cancelRequest"
    )
    assert "unknown method" not in stderr and "documentSymbol" not in stderr, stderr
    assert "workspace/diagnostic" not in stderr and "didChangeWatchedFiles" not in stderr, stderr
    assert not [
        m
        for m in client.log_messages
        if m.type in (types.MessageType.Warning, types.MessageType.Error)
    ]
    assert not client.messages
