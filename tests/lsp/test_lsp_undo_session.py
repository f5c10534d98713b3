"""lich.undoTask in-process: an EditorSession behind the FakeEditor and the fake provider.

What the wire tests (test_lsp_undo.py) leave out: choosing the task when no id is given (and
editors that cannot show a choice), unknown ids, an editor that rejects the undo, a task still
running, a file the editor cannot delete, closed files through the save protocol, the
"Undo task: <title>" code action following the user's edits, and a corrupt journal file.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from fake_editor import FakeEditor
from lsp_harness import WAIT_S, edit, provider_options, uri_of
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from lich_core.userstate import workspace_state_dir
from lich_lsp.code_actions import UNDO_KIND
from lich_lsp.journal import JOURNAL_DIR_NAME

A = "one\ntwo\nthree\nfour\nfive\n"
SLOW_TURN = {"text": "never finishes", "delay_s": 30}


async def _start(
    editor, fake_provider, client_name: str = "visual-studio-code", **options: Any
) -> FakeEditor:
    return await editor(client_name, init_options=provider_options(fake_provider), **options)


async def _task(fake: FakeEditor, prompt: str) -> str:
    result = await fake.command("lich.ask", {"prompt": prompt})
    assert result["stopped_reason"] == "final", result
    await fake.settle()
    return result["task_id"]


def _outcomes(result: dict[str, Any]) -> dict[str, str]:
    return {f["path"]: f["outcome"] for f in result["files"]}


def _actions(fake: FakeEditor, uri: str, line: int, only: list[str] | None = None) -> list[Any]:
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(
            start=types.Position(line=line, character=0), end=types.Position(line=line, character=3)
        ),
        context=types.CodeActionContext(diagnostics=[], only=only),
    )
    return [a for a in fake.code_action(params) if a.title.startswith("Undo task: ")]


async def test_without_an_id_the_editor_chooses_among_recent_tasks(
    editor, root: Path, fake_provider
) -> None:
    (root / "a.py").write_text(A, encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("a.py", "one", "ONE")]},
        {"text": "first"},
        {"tool_calls": [edit("a.py", "five", "FIVE")]},
        {"text": "second"},
    )
    fake = await _start(editor, fake_provider)
    uri = fake.open(root / "a.py")
    first = await _task(fake, "first change")
    second = await _task(fake, "second change")
    # Dismissed: nothing happens.
    dismissed = await fake.command("lich.undoTask", {})
    assert dismissed["dismissed"] is True and dismissed["ok"] is False
    question = fake.message_requests[-1]
    assert question.message == "lich: undo which task?"
    # Newest first.
    assert [a.title for a in question.actions] == [
        f"{second}: second change",
        f"{first}: first change",
    ]
    fake.message_answers = [f"{first}: first change"]
    chosen = await fake.command("lich.undoTask", {})
    await fake.settle()
    assert chosen["task_id"] == first and _outcomes(chosen) == {"a.py": "rebased"}
    assert fake.text(uri) == A.replace("five", "FIVE")
    status = await fake.command("lich.status", {})
    assert [t["task_id"] for t in status["undoable_tasks"]] == [second]


async def test_an_editor_without_a_choice_is_told_the_recent_ids(
    editor, root: Path, fake_provider
) -> None:
    (root / "a.py").write_text(A, encoding="utf-8")
    fake_provider.script({"tool_calls": [edit("a.py", "one", "ONE")]}, {"text": "done"})
    fake = await _start(editor, fake_provider, "emacs")
    nothing = await fake.command("lich.undoTask", {})
    assert nothing["ok"] is False and nothing["error"].startswith("nothing_to_undo: ")
    task_id = await _task(fake, "change it")
    with pytest.raises(JsonRpcInvalidParams) as caught:
        await fake.command("lich.undoTask", {})
    assert "cannot show a choice" in str(caught.value) and f"{task_id} (change it)" in str(
        caught.value
    )
    with pytest.raises(JsonRpcInvalidParams) as unknown:
        await fake.command("lich.undoTask", {"task_id": "t99"})
    assert "no task 't99' in the undo journal" in str(unknown.value)
    with pytest.raises(JsonRpcInvalidParams):
        await fake.command("lich.undoTask", {"task_id": 3})


async def test_a_rejected_undo_changes_nothing_and_can_be_tried_again(
    editor, root: Path, fake_provider
) -> None:
    (root / "a.py").write_text(A, encoding="utf-8")
    (root / "closed.py").write_text(A, encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("a.py", "two", "TWO")]},
        {"tool_calls": [edit("closed.py", "three", "THREE")]},
        {"text": "done"},
    )
    fake = await _start(editor, fake_provider)
    uri = fake.open(root / "a.py")
    task_id = await _task(fake, "shout")
    fake.answer = "reject"
    rejected = await fake.command("lich.undoTask", {"task_id": task_id})
    assert (
        rejected["ok"] is False and rejected["error"] == "edit_rejected: the user rejected the edit"
    )
    assert _outcomes(rejected) == {"a.py": "failed", "closed.py": "failed"}
    # All or nothing: the closed file's disk write was rolled back with the editor's part.
    assert fake.text(uri) == A.replace("two", "TWO")
    assert (root / "closed.py").read_text(encoding="utf-8") == A.replace("three", "THREE")
    fake.answer = "apply"
    retried = await fake.command("lich.undoTask", {"task_id": task_id})
    assert retried["ok"] is True
    assert fake.text(uri) == A and (root / "closed.py").read_text(encoding="utf-8") == A


async def test_closed_files_go_through_the_editor_when_it_can_save(
    editor, root: Path, fake_provider
) -> None:
    (root / "closed.py").write_text(A, encoding="utf-8")
    fake_provider.script({"tool_calls": [edit("closed.py", "four", "FOUR")]}, {"text": "done"})
    fake = await _start(editor, fake_provider, save_documents=True)
    task_id = await _task(fake, "shout")
    saved_before = len(fake.saved)
    undo = await fake.command("lich.undoTask", {"task_id": task_id})
    assert undo["ok"] is True
    assert (root / "closed.py").read_text(encoding="utf-8") == A
    # The undo went to the editor (one versioned edit) and the editor saved it.
    assert fake.applied[-1].label == "lich: undo shout"
    assert fake.saved[saved_before:] == [uri_of(root / "closed.py")]


async def test_undo_while_the_task_still_runs(editor, root: Path, fake_provider) -> None:
    (root / "a.py").write_text(A, encoding="utf-8")
    fake_provider.script({"tool_calls": [edit("a.py", "two", "TWO")]}, SLOW_TURN)
    fake = await _start(editor, fake_provider)
    uri = fake.open(root / "a.py")
    _, ask = fake.start_command("lich.ask", {"prompt": "slow one"})
    await fake.wait_for_edits(1)
    # The second model call (the slow one) has started: the edit is behind the task.
    assert await asyncio.to_thread(fake_provider.wait_for_requests, 2, WAIT_S), (
        fake_provider.requests
    )
    await fake.settle()
    status = await fake.command("lich.status", {})
    (listed,) = status["undoable_tasks"]
    assert listed["running"] is True
    undo = await fake.command("lich.undoTask", {"task_id": listed["task_id"]})
    assert undo["ok"] is True and undo["task_running"] is True
    assert "(the task is still running)" in undo["message"]
    assert fake.text(uri) == A
    await fake.command("lich.cancel", {})
    result = await asyncio.wait_for(ask, 30)
    assert result["stopped_reason"] == "aborted"


async def test_a_file_the_editor_cannot_delete_is_refused_alone(
    editor, root: Path, fake_provider
) -> None:
    (root / "a.py").write_text(A, encoding="utf-8")
    fake_provider.script(
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "made.py", "content": "made\n"}}
            ]
        },
        {"tool_calls": [edit("a.py", "two", "TWO")]},
        {"text": "done"},
    )
    # Neovim 0.7: no documentChanges, so no DeleteFile; the created file is now open in it.
    fake = await _start(editor, fake_provider, "neovim@v0.7.0")
    uri = fake.open(root / "a.py")
    task_id = await _task(fake, "make")
    fake.open(root / "made.py")
    undo = await fake.command("lich.undoTask", {"task_id": task_id})
    assert _outcomes(undo) == {"made.py": "refused", "a.py": "undone"}
    (refused,) = [f for f in undo["files"] if f["path"] == "made.py"]
    assert refused["reason"].startswith(
        "edit_rejected: unsupported: the editor cannot delete files"
    )
    assert fake.text(uri) == A and (root / "made.py").exists()
    status = await fake.command("lich.status", {})
    assert status["undoable_tasks"][0]["files"] == ["made.py"]


async def test_the_code_action_follows_the_users_edits(editor, root: Path, fake_provider) -> None:
    (root / "a.py").write_text(A, encoding="utf-8")
    fake_provider.script({"tool_calls": [edit("a.py", "three", "THREE")]}, {"text": "done"})
    fake = await _start(editor, fake_provider)
    uri = fake.open(root / "a.py")
    task_id = await _task(fake, "shout three")
    await fake.command(
        "lich.status", {}
    )  # the journal is loaded (a code action never waits for it)
    (action,) = _actions(fake, uri, 2)
    assert isinstance(action, types.CodeAction)
    assert action.title == "Undo task: shout three" and action.kind == UNDO_KIND
    assert action.command is not None and action.command.command == "lich.undoTask"
    assert action.command.arguments == [{"task_id": task_id}]
    assert _actions(fake, uri, 1) == [] and _actions(fake, uri, 3) == []
    assert _actions(fake, uri, 2, only=[types.CodeActionKind.QuickFix]) == []
    assert len(_actions(fake, uri, 2, only=[types.CodeActionKind.Refactor])) == 1
    # The user adds two lines on top: the task's line is line 5 now.
    fake.type_text(uri, "# a\n# b\n" + fake.text(uri))
    await fake.settle()
    assert _actions(fake, uri, 2) == []
    (moved,) = _actions(fake, uri, 4)
    # Running the action's command is the undo.
    assert moved.command is not None
    undo = await fake.command(moved.command.command, moved.command.arguments[0])
    await fake.settle()
    assert undo["ok"] is True and fake.text(uri) == "# a\n# b\n" + A
    assert _actions(fake, uri, 4) == []


async def test_clients_without_code_action_literals_get_the_command(
    editor, root: Path, fake_provider
) -> None:
    (root / "a.py").write_text(A, encoding="utf-8")
    fake_provider.script({"tool_calls": [edit("a.py", "one", "ONE")]}, {"text": "done"})
    fake = await _start(editor, fake_provider)
    uri = fake.open(root / "a.py")
    task_id = await _task(fake, "shout one")
    fake.session.features = type(fake.session.features)(code_action_literals=False)
    await fake.command("lich.status", {})
    (command,) = _actions(fake, uri, 0)
    assert isinstance(command, types.Command)
    assert (command.command, command.arguments) == ("lich.undoTask", [{"task_id": task_id}])


async def test_a_corrupt_journal_file_is_ignored_and_reported(
    editor, root: Path, fake_provider
) -> None:
    directory = workspace_state_dir(root) / JOURNAL_DIR_NAME
    directory.mkdir(parents=True)
    (directory / "t1.json").write_text("{ truncated", encoding="utf-8")
    (root / "a.py").write_text(A, encoding="utf-8")
    fake_provider.script({"tool_calls": [edit("a.py", "one", "ONE")]}, {"text": "done"})
    fake = await _start(editor, fake_provider)
    status = await fake.command("lich.status", {})
    assert status["undoable_tasks"] == []
    assert any(
        kind == types.MessageType.Warning
        and "ignored a corrupt undo journal file" in message
        and "t1.json" in message
        for kind, message in fake.logs
    ), fake.logs
    # The server goes on: a task gets an id the ignored file does not have, and undoes.
    fake.open(root / "a.py")
    task_id = await _task(fake, "shout")
    assert task_id != "t1"
    assert (await fake.command("lich.undoTask", {"task_id": task_id}))["ok"] is True


async def test_changes_applied_for_a_task_after_it_ended_are_undone_with_it(
    editor, root: Path, fake_provider
) -> None:
    """What review per hunk does when the user accepts a hunk: the edit goes out on the task's
    behalf (here through lich.runTool, which journals nothing itself) and is journaled as the task's."""
    from lich_core.workspace import FileChange

    (root / "a.py").write_text(A, encoding="utf-8")
    fake_provider.script({"tool_calls": [edit("a.py", "one", "ONE")]}, {"text": "done"})
    fake = await _start(editor, fake_provider)
    uri = fake.open(root / "a.py")
    task_id = await _task(fake, "shout")
    before = fake.text(uri)
    applied = await fake.command(
        "lich.runTool",
        {"name": "edit_file", "args": {"path": "a.py", "old_string": "five", "new_string": "FIVE"}},
    )
    assert applied["ok"] is True, applied
    await fake.settle()
    assert (await fake.command("lich.status", {}))["undoable_tasks"][0]["files"] == ["a.py"]
    fake.session.tasks.record_changes(
        task_id, [FileChange.write(root / "a.py", fake.text(uri), before)]
    )
    undo = await fake.command("lich.undoTask", {"task_id": task_id})
    await fake.settle()
    assert undo["ok"] is True and fake.text(uri) == A
