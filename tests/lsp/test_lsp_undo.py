"""lich.undoTask over the wire: a real server process, pytest-lsp, the fake provider, every client
profile (VS Code, Neovim 0.7 and latest without documentChanges, Emacs without resource operations
or window/showMessageRequest).

Undo as the task left the files (an open buffer, a closed file written on disk, a file the task
created), rebased through the user's later edits where they do not touch the task's lines and
refused per file where they do, and the journal surviving a server restart (code action included).
The finer points (choices, rejections, a task still running, corrupt journal files) are tested
in-process in test_lsp_undo_session.py; the pure rebase in test_lsp_undo_rebase.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsp_harness import EditorClient, edit, provider_options, start_session, stop_session, uri_of
from lsprotocol import types

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")

A = "one\ntwo\nthree\nfour\nfive\n"
B = "alpha\nbeta\ngamma\n"
C = "red\ngreen\nblue\n"


def _write(path: str, content: str) -> dict[str, Any]:
    return {"name": "write_file", "arguments": {"path": path, "content": content}}


def _uses_document_changes(client: EditorClient) -> bool:
    workspace = client.declared.workspace
    return bool(
        workspace and workspace.workspace_edit and workspace.workspace_edit.document_changes
    )


async def _ask(client: EditorClient, prompt: str) -> dict[str, Any]:
    result = await client.command("lich.ask", {"prompt": prompt})
    assert result["stopped_reason"] == "final", result
    return result


def _outcomes(result: dict[str, Any]) -> dict[str, str]:
    return {f["path"]: f["outcome"] for f in result["files"]}


async def _code_action_titles(client: EditorClient, uri: str, line: int) -> list[str]:
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(
                start=types.Position(line=line, character=0),
                end=types.Position(line=line, character=0),
            ),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    return [action.title for action in actions or []]


async def test_undo_a_task_as_it_left_the_files(
    session, root: Path, client_name: str, fake_provider
) -> None:
    (root / "a.py").write_text(A, encoding="utf-8")
    (root / "b.py").write_text(B, encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("a.py", "two", "TWO")]},
        {"tool_calls": [edit("b.py", "beta", "BETA")]},
        {"tool_calls": [_write("made.py", "made\n")]},
        {"text": "Done."},
    )
    client = await session(client_name, init_options=provider_options(fake_provider))
    uri = client.open(root / "a.py")
    task = await _ask(client, "shout")
    assert client.text(uri) == A.replace("two", "TWO")
    assert (root / "b.py").read_text(encoding="utf-8") == B.replace("beta", "BETA")
    edits_before = len(client.editor.applied)

    status = await client.command("lich.status", {})
    (listed,) = status["undoable_tasks"]
    assert listed["task_id"] == task["task_id"] and listed["title"] == "shout"
    assert sorted(listed["files"]) == ["a.py", "b.py", "made.py"] and listed["running"] is False

    undo = await client.command("lich.undoTask", {"task_id": task["task_id"]})
    assert undo["ok"] is True, undo
    assert _outcomes(undo) == {"a.py": "undone", "b.py": "undone", "made.py": "undone"}
    assert undo["task_running"] is False and "error" not in undo
    assert client.text(uri) == A
    assert (root / "b.py").read_text(encoding="utf-8") == B
    assert not (root / "made.py").exists()
    assert uri_of(root / "made.py") not in client.editor.docs
    # One editor edit for the whole undo: one step of the editor's own undo.
    assert len(client.editor.applied) == edits_before + 1
    edit_sent = client.editor.applied[-1]
    assert edit_sent.label == "lich: undo shout"
    if _uses_document_changes(client):
        (doc_edit,) = [
            c for c in edit_sent.edit.document_changes if isinstance(c, types.TextDocumentEdit)
        ]
        assert (
            doc_edit.text_document.uri == uri
            and doc_edit.text_document.version == client.editor.docs[uri].version - 1
        )
        (only,) = doc_edit.edits
    else:
        assert edit_sent.edit.document_changes is None
        (only,) = edit_sent.edit.changes[uri]
    # Only the line the task changed.
    assert (only.range.start.line, only.range.end.line, only.new_text) == (1, 2, "two\n")
    assert any(
        m.message.startswith(f"lich: undo {task['task_id']} (shout): restored ")
        for m in client.messages
    )

    again = await client.command("lich.undoTask", {"task_id": task["task_id"]})
    assert again["ok"] is False and again["error"].startswith("already_undone: ")
    assert (await client.command("lich.status", {}))["undoable_tasks"] == []


async def test_undo_rebased_through_user_edits_and_refused_where_they_overlap(
    session, root: Path, client_name: str, fake_provider
) -> None:
    (root / "a.py").write_text(A, encoding="utf-8")
    (root / "c.py").write_text(C, encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("a.py", "four", "FOUR")]},
        {"tool_calls": [edit("c.py", "green", "GREEN")]},
        {"text": "Done."},
    )
    client = await session(client_name, init_options=provider_options(fake_provider))
    a_uri = client.open(root / "a.py")
    c_uri = client.open(root / "c.py")
    task = await _ask(client, "shout more")
    # The user keeps working: a line above the task's in a.py, the task's own line in c.py.
    client.type_text(a_uri, "# mine\n" + client.text(a_uri))
    client.type_text(c_uri, client.text(c_uri).replace("GREEN", "GREEN, mine"))

    undo = await client.command("lich.undoTask", {"task_id": task["task_id"]})
    assert undo["ok"] is False
    assert _outcomes(undo) == {"a.py": "rebased", "c.py": "refused"}
    (refused,) = [f for f in undo["files"] if f["path"] == "c.py"]
    assert refused["reason"].startswith("undo_conflict: edited since the task at line 2")
    assert refused["lines"] == [2, 2]
    assert undo["error"].startswith("undo_conflict: c.py: ")
    # a.py keeps the user's line, loses the task's; c.py is left as the user has it.
    assert client.text(a_uri) == "# mine\n" + A
    assert client.text(c_uri) == C.replace("green", "GREEN, mine")
    (warning,) = [m for m in client.messages if m.message.startswith("lich: undo ")]
    assert warning.type == types.MessageType.Warning
    assert (
        "restored a.py (your later edits kept)" in warning.message
        and "not undone: c.py: " in warning.message
    )

    # The refused file stays undoable: once the user takes their edit back, it undoes.
    client.type_text(c_uri, C.replace("green", "GREEN"))
    status = await client.wait_for_status(lambda status: bool(status["undoable_tasks"]))
    assert status["undoable_tasks"][0]["files"] == ["c.py"]
    second = await client.command("lich.undoTask", {"task_id": task["task_id"]})
    assert second["ok"] is True and _outcomes(second) == {"c.py": "undone"}
    assert client.text(c_uri) == C


async def test_the_journal_survives_a_server_restart(
    root: Path, client_name: str, fake_provider
) -> None:
    (root / "a.py").write_text(A, encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("a.py", "three", "THREE")]},
        {"text": "Done."},
        {"text": "Hello again."},
    )
    options = provider_options(fake_provider)
    first = await start_session(root, client_name, init_options=options)
    try:
        uri = first.open(root / "a.py")
        task = await _ask(first, "before the restart")
        buffer = first.text(uri)  # the editor keeps the buffer across the server's restart
    finally:
        await stop_session(first)
    assert not first.failures, first.failures

    second = await start_session(root, client_name, init_options=options)
    try:
        uri = second.open(root / "a.py", buffer)
        status = await second.command("lich.status", {})
        assert [t["task_id"] for t in status["undoable_tasks"]] == [task["task_id"]]
        # The code action on the changed line (line 3), and none on a line the task did not touch.
        assert "Undo task: before the restart" in await _code_action_titles(second, uri, 2)
        assert not any(t.startswith("Undo task") for t in await _code_action_titles(second, uri, 0))
        # A new task does not take the journaled task's id.
        later = await _ask(second, "after the restart")
        assert later["task_id"] != task["task_id"]
        undo = await second.command("lich.undoTask", {"task_id": task["task_id"]})
        assert undo["ok"] is True and _outcomes(undo) == {"a.py": "undone"}
        assert second.text(uri) == A
    finally:
        await stop_session(second)
    assert not second.failures, second.failures
