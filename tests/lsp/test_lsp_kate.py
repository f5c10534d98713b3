"""Kate 22.12 over the wire (issue #32): a client that declares neither window/showMessageRequest
nor workspace.applyEdit, and applies a server's workspace/applyEdit only within ~2 s of its own
workspace/executeCommand (after that it logs "ignoring edit" and answers applied: false).

The test editor is the harness's, with Kate's declared capabilities and Kate's timing rule; the
model takes 5 s to answer, as any real one does, so an edit a task sends on its own is refused.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lsp_harness
import pytest
from lsp_harness import EditorClient, bounded, edit, provider_options, tool_messages
from lsprotocol import types

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")

KATE = "kate-22.12"
# Kate applies a server's applyEdit only this long after it sent a command of its own.
KATE_EDIT_WINDOW_S = 2.0
# What a real model takes to answer: past Kate's window.
MODEL_DELAY_S = 5.0
REVIEW_SOURCE = "lich review"


def kate_capabilities() -> types.ClientCapabilities:
    """What Kate 22.12's LSP Client declares at initialize, in the parts lich reads: code action
    literals, diagnostics, didSave, work-done progress; no workspace.applyEdit or workspaceEdit,
    no window.showMessage (showMessageRequest), no experimental.lich."""
    return types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(workspace_folders=True),
        text_document=types.TextDocumentClientCapabilities(
            synchronization=types.TextDocumentSyncClientCapabilities(did_save=True),
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(
                related_information=True
            ),
            code_action=types.CodeActionClientCapabilities(
                code_action_literal_support=types.ClientCodeActionLiteralOptions(
                    code_action_kind=types.ClientCodeActionKindOptions(value_set=[])
                )
            ),
            document_symbol=types.DocumentSymbolClientCapabilities(
                hierarchical_document_symbol_support=True
            ),
        ),
        window=types.WindowClientCapabilities(work_done_progress=True),
    )


@pytest.fixture
def kate(monkeypatch: pytest.MonkeyPatch) -> str:
    """The client name KATE starts a session declaring kate_capabilities()."""
    published = lsp_harness.capabilities_for

    def capabilities_for(client_name: str, **options: Any) -> types.ClientCapabilities:
        return kate_capabilities() if client_name == KATE else published(client_name, **options)

    monkeypatch.setattr(lsp_harness, "capabilities_for", capabilities_for)
    return KATE


class KateTiming:
    """Kate's rule for a server's applyEdit: applied only within KATE_EDIT_WINDOW_S of the last
    workspace/executeCommand the editor sent, else ignored (applied: false)."""

    def __init__(self, client: EditorClient) -> None:
        self.last_command = float("-inf")
        self.ignored: list[types.ApplyWorkspaceEditParams] = []
        send_command, apply_edit = client.command, client.handle_apply_edit

        async def command(name: str, argument: Any = None, **options: Any) -> Any:
            self.last_command = asyncio.get_running_loop().time()
            return await send_command(name, argument, **options)

        async def handle_apply_edit(
            params: types.ApplyWorkspaceEditParams,
        ) -> types.ApplyWorkspaceEditResult:
            if asyncio.get_running_loop().time() - self.last_command > KATE_EDIT_WINDOW_S:
                self.ignored.append(params)
                return types.ApplyWorkspaceEditResult(applied=False)
            return await apply_edit(params)

        client.command = command  # type: ignore[method-assign]
        client.handle_apply_edit = handle_apply_edit  # type: ignore[method-assign]


def review_diagnostics(client: EditorClient, uri: str) -> list[types.Diagnostic]:
    return [d for d in client.diagnostics.get(uri, []) if d.source == REVIEW_SOURCE]


async def code_actions(
    client: EditorClient, uri: str, at: types.Range, diagnostics: list[types.Diagnostic]
) -> dict[str, types.Command]:
    actions = await bounded(
        client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=at,
                context=types.CodeActionContext(diagnostics=diagnostics),
            )
        ),
        lsp_harness.WAIT_S,
        "the code actions",
    )
    found = {}
    for action in actions or []:
        assert isinstance(action, types.CodeAction)  # Kate declares code action literals
        assert action.command is not None
        found[action.title] = action.command
    return found


def final_messages(client: EditorClient, title: str) -> Iterator[str]:
    return (m.message for m in client.messages if m.message.startswith(f"lich: {title}"))


async def test_the_change_reaches_the_file_through_the_users_code_action(
    session, root: Path, fake_provider, kate: str
) -> None:
    (root / "f.py").write_text("v = 1\n", encoding="utf-8")
    fake_provider.script(
        # An insertion after the last line: the hunk's diagnostic still has a width (Kate shows no
        # marker for a zero-width range).
        {"tool_calls": [edit("f.py", "v = 1\n", "v = 1\nw = 2\n")], "delay_s": MODEL_DELAY_S},
        {"text": "I added w = 2 to f.py."},
    )
    client = await session(kate, init_options=provider_options(fake_provider))
    timing = KateTiming(client)
    status = await client.command("lich.status", {})
    assert status["edit_mode"] == "review" and "workspace.applyEdit" in status["edit_mode_reason"]
    assert status["client"]["apply_edit"] is False
    uri = client.open(root / "f.py")

    result = await client.command("lich.ask", {"prompt": "add w", "uri": uri})

    assert result["stopped_reason"] == "final" and result["edited"] == []
    assert result["review"].startswith("1 change pending review in f.py")
    assert client.editor.applied == [] and timing.ignored == []  # nothing was sent for Kate to drop
    (shown,) = final_messages(client, "add w")
    # The file's state comes first, in plain words; the agent's claim is quoted after it.
    assert shown.startswith("lich: add w: 1 change to review in f.py: accept or reject")
    assert shown.endswith("The agent said: I added w = 2 to f.py.")
    assert (
        client.text(uri) == "v = 1\n" and (root / "f.py").read_text(encoding="utf-8") == "v = 1\n"
    )

    await client.wait_until(
        lambda: bool(review_diagnostics(client, uri)), what="the pending hunk's diagnostic"
    )
    (hunk,) = review_diagnostics(client, uri)
    assert hunk.range == types.Range(
        start=types.Position(0, 0), end=types.Position(0, len("v = 1"))
    )
    actions = await code_actions(client, uri, hunk.range, [hunk])
    accept = actions["Accept hunk t1-1"]
    accepted = await client.command(accept.command, (accept.arguments or [None])[0])

    assert accepted["ok"] is True and accepted["edited"] == [uri], accepted
    assert client.text(uri) == "v = 1\nw = 2\n"
    assert timing.ignored == [] and len(client.editor.applied) == 1
    await client.wait_until(
        lambda: not review_diagnostics(client, uri), what="the accepted hunk's diagnostic to go"
    )


async def test_a_refused_edit_in_apply_mode_is_said_before_the_agents_claim(
    session, root: Path, fake_provider, kate: str
) -> None:
    (root / "f.py").write_text("v = 1\n", encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("f.py", "v = 1", "v = 2")], "delay_s": MODEL_DELAY_S},
        {"text": "Done: v is 2 now."},  # a model that claims success whatever its tool said
    )
    client = await session(kate, init_options=provider_options(fake_provider, edit_mode="apply"))
    timing = KateTiming(client)
    assert (await client.command("lich.status", {}))[
        "edit_mode"
    ] == "apply"  # the user's choice stands
    uri = client.open(root / "f.py")

    result = await client.command("lich.ask", {"prompt": "set v", "uri": uri})

    assert len(timing.ignored) == 1  # the edit came 5 s after the command: Kate ignored it
    assert result["stopped_reason"] == "final" and result["final"] == "Done: v is 2 now."
    assert result["edited"] == []
    assert result["refused"] == [
        {"uri": uri, "error": "the editor did not apply the edit (applied: false)"}
    ]
    assert (
        "edit_rejected: the editor did not apply the edit"
        in json.loads(tool_messages(fake_provider)[0])["error"]
    )
    (shown,) = final_messages(client, "set v")
    assert shown.startswith("lich: set v: Not applied: the agent's edit to f.py was refused")
    assert shown.endswith("The agent said: Done: v is 2 now.")
    assert (
        client.text(uri) == "v = 1\n" and (root / "f.py").read_text(encoding="utf-8") == "v = 1\n"
    )


async def test_quick_prompts_are_code_actions_where_no_prompt_can_be_asked(
    session, root: Path, fake_provider, kate: str
) -> None:
    fake_provider.script({"text": "It sets v."})
    options = provider_options(fake_provider, quick_prompts=["Explain this code", "Find bugs"])
    client = await session(kate, init_options=options)
    (root / "f.py").write_text("v = 1\n", encoding="utf-8")
    uri = client.open(root / "f.py")
    line = types.Range(start=types.Position(0, 0), end=types.Position(0, 5))

    actions = await code_actions(client, uri, line, [])

    # "Ask agent…" would run lich.ask without a prompt, which Kate cannot be asked for.
    assert "Ask agent…" not in actions
    assert [title for title in actions if title.startswith("Ask agent")] == [
        "Ask agent: Explain this code",
        "Ask agent: Find bugs",
    ]
    explain = actions["Ask agent: Explain this code"]
    result = await client.command(explain.command, (explain.arguments or [None])[0])
    assert result["stopped_reason"] == "final" and result["final"] == "It sets v."
    sent = json.dumps(fake_provider.requests[0]["json"]["messages"])
    assert "Explain this code" in sent and "f.py" in sent


async def test_a_new_file_is_created_through_the_users_answer(
    session, root: Path, fake_provider, kate: str
) -> None:
    """A new file is no hunk: its review is the Apply/Discard question, which Kate cannot show, so
    it is a pending question whose code action is the user's own action: the edit that creates the
    file follows that command at once, inside Kate's window."""
    (root / "f.py").write_text("v = 1\n", encoding="utf-8")
    fake_provider.script(
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "g.py", "content": "w = 2\n"}}
            ],
            "delay_s": MODEL_DELAY_S,
        },
        {"text": "I created g.py."},
    )
    client = await session(kate, init_options=provider_options(fake_provider))
    timing = KateTiming(client)
    uri = client.open(root / "f.py")
    task = asyncio.ensure_future(client.command("lich.ask", {"prompt": "make g", "uri": uri}))

    def question() -> list[types.Diagnostic]:
        return [d for d in client.diagnostics.get(uri, []) if d.code == "lich-question"]

    await client.wait_until(lambda: bool(question()), what="the review question on f.py")
    (asked,) = question()
    assert asked.message.startswith("lich: make g: apply 1 change to 1 file?"), asked.message
    assert not (root / "g.py").exists()
    actions = await code_actions(client, uri, asked.range, [asked])
    apply = actions["Apply: the agent's changes"]
    await client.command(apply.command, (apply.arguments or [None])[0])
    result = await bounded(task, lsp_harness.COMMAND_WAIT_S, "the task")

    assert result["stopped_reason"] == "final", result
    assert result["review"] == "applied 1 changes to 1 files", result
    assert timing.ignored == []
    assert (root / "g.py").read_text(encoding="utf-8") == "w = 2\n"
