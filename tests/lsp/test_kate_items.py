"""Issue #45's Kate items over the wire, with Kate 22.12's declared capabilities and its timing
rule for a server's edits (test_lsp_kate.py): a real server process, pytest-lsp, the fake
provider. Kate itself is not run here (it needs KDE); what it does with the server's messages is
what that test file's KateTiming and kate_capabilities() say.

- An approval question's code actions name the command they allow, and "Allow always" its
  scope (a menu of titles is all Kate shows of them).
- No "Fix with agent" on lich's own diagnostics (a question, a review hunk).
- "Undo task" is offered on the lines a task changed and not once the task is undone, by
  lich.undoTask or by the editor's own undo (ctrl-z).
Not here: the answer of a task started from a code action. Kate's LSP client implements no
window/showDocument (it answers MethodNotFound), so `show_transcript` cannot open it there; the
answer goes out as window/showMessage, which Kate's Output view shows (and pops up for, with its
auto-show level at Info): docs/editors/kate.md says how, and points to `lich chat` in Kate's
terminal panel for conversations.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import lsp_harness
import pytest
from lsp_harness import EditorClient, bounded, edit, provider_options
from lsprotocol import types
from test_lsp_kate import KATE, KateTiming, code_actions, kate  # noqa: F401 - `kate` is a fixture

from lich_lsp.code_actions import NOT_TO_FIX_SOURCES
from lich_lsp.pending_questions import QUESTION_SOURCE
from lich_lsp.review_hunks import REVIEW_SOURCE

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")

COMMAND = "echo approved > ran.txt"
UNDO_TITLE = "Undo task: "


def questions(client: EditorClient, uri: str) -> list[types.Diagnostic]:
    return [d for d in client.diagnostics.get(uri, []) if d.code == "lich-question"]


def line_range(line: int, text: str) -> types.Range:
    return types.Range(start=types.Position(line, 0), end=types.Position(line, len(text)))


async def test_approval_code_actions_name_the_command_they_allow(
    session,
    root: Path,
    fake_provider,
    kate: str,  # noqa: F811 - the fixture imported above
) -> None:
    fake_provider.script(
        {"tool_calls": [{"name": "terminal", "arguments": {"command": COMMAND}}]},
        {"text": "It ran."},
    )
    client = await session(kate, init_options=provider_options(fake_provider))
    KateTiming(client)
    (root / "f.py").write_text("v = 1\n", encoding="utf-8")
    uri = client.open(root / "f.py")
    task = asyncio.ensure_future(client.command("lich.ask", {"prompt": "run it", "uri": uri}))
    await client.wait_until(lambda: bool(questions(client, uri)), what="the approval question")
    (asked,) = questions(client, uri)

    actions = await code_actions(client, uri, asked.range, [asked])

    once = f"Allow once: run `{COMMAND}` (terminal)"
    always = f"Allow always (every terminal call): run `{COMMAND}` (terminal)"
    deny = f"Deny: run `{COMMAND}` (terminal)"
    # The question's own answers, and no "Fix with agent" on lich's own question.
    assert [title for title in actions if "terminal" in title] == [once, always, deny]
    assert asked.message.endswith(
        "Answer with a code action: Allow once, Allow always (every terminal call), Deny."
    ), asked.message
    allow = actions[once]
    answered = await client.command(allow.command, (allow.arguments or [None])[0])
    assert answered["answer"] == "once"
    result = await bounded(task, lsp_harness.COMMAND_WAIT_S, "the task")
    assert result["stopped_reason"] == "final", result
    assert (root / "ran.txt").read_text(encoding="utf-8").strip() == "approved"
    # Allowed once: nothing was remembered for the next terminal call.
    assert not (root / ".lich").exists()


def test_lichs_own_diagnostics_are_the_ones_not_offered_for_fixing() -> None:
    """code_actions names the sources it cannot import (both modules sit above it)."""
    assert NOT_TO_FIX_SOURCES == {QUESTION_SOURCE, REVIEW_SOURCE}


async def _accepted_task(client: EditorClient, root: Path) -> tuple[str, str, types.Range]:
    """A task's change to f.py, reviewed and accepted through Kate's code actions: (the document,
    the task id, the changed line's range)."""
    uri = client.open(root / "f.py")
    result = await client.command("lich.ask", {"prompt": "add w", "uri": uri})
    assert result["review"].startswith("1 change pending review in f.py"), result
    await client.wait_until(
        lambda: any(d.source == "lich review" for d in client.diagnostics.get(uri, [])),
        what="the pending hunk",
    )
    (hunk,) = [d for d in client.diagnostics.get(uri, []) if d.source == "lich review"]
    actions = await code_actions(client, uri, hunk.range, [hunk])
    assert not [title for title in actions if title.startswith("Fix with agent")], actions
    accept = actions[f"Accept hunk {result['task_id']}-1"]
    accepted = await client.command(accept.command, (accept.arguments or [None])[0])
    assert accepted["ok"] is True and client.text(uri) == "v = 1\nw = 2\n", accepted
    return uri, result["task_id"], line_range(1, "w = 2")


def _undo_titles(actions: dict[str, types.Command]) -> list[str]:
    return [title for title in actions if title.startswith(UNDO_TITLE)]


@pytest.mark.parametrize("undone_by", ["lich.undoTask", "the editor's undo"])
async def test_undo_task_is_not_offered_once_the_task_is_undone(
    session,
    root: Path,
    fake_provider,
    kate: str,  # noqa: F811 - the fixture imported above
    undone_by: str,
) -> None:
    (root / "f.py").write_text("v = 1\n", encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("f.py", "v = 1\n", "v = 1\nw = 2\n")]}, {"text": "Added w."}
    )
    client = await session(kate, init_options=provider_options(fake_provider))
    KateTiming(client)
    uri, task_id, changed = await _accepted_task(client, root)
    actions = await code_actions(client, uri, changed, [])
    assert _undo_titles(actions) == [f"{UNDO_TITLE}add w"]

    if undone_by == "lich.undoTask":
        undo = actions[f"{UNDO_TITLE}add w"]
        result = await client.command(undo.command, (undo.arguments or [None])[0])
        assert result["ok"] is True and result["task_id"] == task_id, result
    else:
        # ctrl-z in the editor: the buffer reads as before the task, the server hears didChange.
        client.type_text(uri, "v = 1\n")
    await client.wait_until(
        lambda: client.text(uri) == "v = 1\n", what="f.py back as before the task"
    )
    await client.command("lich.status", {})  # the server has read the change by now
    for line in (0, 1):
        at = line_range(line, "v = 1")
        assert _undo_titles(await code_actions(client, uri, at, [])) == [], (undone_by, line)
