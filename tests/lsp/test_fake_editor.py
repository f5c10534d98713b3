"""The in-memory editor itself (tests/lsp/fake_editor.py), without a session: edits are applied as
an editor applies them, and the echo reaches the server only after the request was answered."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from fake_editor import FakeEditor
from lsp_harness import INTENDED_FAILURE, uri_of
from lsprotocol import types

from lich_lsp.port import EditorRequestError


class RecordingSession:
    """Stands in for EditorSession: records each editor notification with what the server's copy
    of the document was at that moment, and whether the test had seen the request answered."""

    def __init__(self, editor: FakeEditor) -> None:
        self.editor = editor
        self.calls: list[tuple[str, str, str | None, bool]] = []
        self.answered = False  # the test sets it right after the awaited request returns

    def _record(self, method: str, uri: str) -> None:
        doc = self.editor.text_document(uri)
        self.calls.append((method, uri, doc.source if doc is not None else None, self.answered))

    def did_open(self, uri: str) -> None:
        self._record("did_open", uri)

    def did_close(self, uri: str) -> None:
        self._record("did_close", uri)

    def did_save(self, uri: str) -> None:
        self._record("did_save", uri)


def make(root: Path, **options: Any) -> tuple[FakeEditor, RecordingSession]:
    editor = FakeEditor(root, **options)
    session = RecordingSession(editor)
    editor.session = session
    return editor, session


def pos(line: int, character: int) -> types.Position:
    return types.Position(line=line, character=character)


def edit_at(start: types.Position, end: types.Position, text: str) -> types.TextEdit:
    return types.TextEdit(range=types.Range(start=start, end=end), new_text=text)


def versioned(
    uri: str, version: int | None, *edits: types.TextEdit
) -> types.ApplyWorkspaceEditParams:
    return types.ApplyWorkspaceEditParams(
        edit=types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=uri, version=version
                    ),
                    edits=list(edits),
                )
            ]
        )
    )


# "b" sits after "a" and a non-BMP character: 1+2 UTF-16 units, 1+4 UTF-8 bytes, 1+1 code points.
@pytest.mark.parametrize(("encoding", "column"), [("utf-16", 3), ("utf-8", 5), ("utf-32", 2)])
async def test_versioned_edit_in_each_encoding_echoes_after_the_answer(
    tmp_path: Path, encoding: str, column: int
) -> None:
    editor, session = make(tmp_path, encoding=encoding)
    path = tmp_path / "a.py"
    path.write_text("a😀b\n", encoding="utf-8")
    uri = editor.open(path)
    assert session.calls == [("did_open", uri, "a😀b\n", False)]
    assert editor.position_encoding == encoding
    session.calls.clear()

    result = await editor.apply_edit(
        versioned(uri, 1, edit_at(pos(0, column), pos(0, column + 1), "c"))
    )
    session.answered = True

    assert result.applied
    assert editor.text(uri) == "a😀c\n"  # the editor's buffer changed at once
    doc = editor.text_document(uri)
    assert doc is not None and (doc.source, doc.version) == ("a😀b\n", 1)  # the server not told yet
    assert editor.pending_echoes == 1
    await editor.settle()
    doc = editor.text_document(uri)
    assert doc is not None and (doc.source, doc.version) == ("a😀c\n", 2)
    assert session.calls == []  # a didChange needs no session call: it reads the Workspace
    assert path.read_text(encoding="utf-8") == "a😀b\n"  # unsaved
    assert editor.failures == []


async def test_stale_version_is_not_applied(tmp_path: Path) -> None:
    editor, session = make(tmp_path)
    uri = editor.open(tmp_path / "a.py", "x = 1\n")
    editor.type_text(uri, "x = 2\n")  # the user typed: version 2

    result = await editor.apply_edit(versioned(uri, 1, edit_at(pos(0, 4), pos(0, 5), "3")))

    assert not result.applied
    assert "version mismatch" in (result.failure_reason or "")
    assert editor.text(uri) == "x = 2\n"
    assert editor.pending_echoes == 0
    doc = editor.text_document(uri)
    assert doc is not None and doc.version == 2
    assert len(editor.applied) == 1


async def test_create_file_and_edit_opens_it_after_the_answer(tmp_path: Path) -> None:
    editor, session = make(tmp_path)
    path = tmp_path / "pkg" / "new.py"
    uri = uri_of(path)
    params = types.ApplyWorkspaceEditParams(
        edit=types.WorkspaceEdit(
            document_changes=[
                types.CreateFile(uri=uri),
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=uri, version=None
                    ),
                    edits=[edit_at(pos(0, 0), pos(0, 0), "hello\n")],
                ),
            ]
        )
    )

    result = await editor.apply_edit(params)
    session.answered = True

    assert result.applied
    assert path.exists() and path.read_text(encoding="utf-8") == ""  # created; the text is unsaved
    assert editor.text(uri) == "hello\n"
    assert session.calls == [] and editor.text_document(uri) is None
    await editor.settle()
    assert session.calls == [("did_open", uri, "hello\n", True)]  # the Workspace had it first
    doc = editor.text_document(uri)
    assert doc is not None and doc.version == 1

    again = await editor.apply_edit(
        types.ApplyWorkspaceEditParams(
            edit=types.WorkspaceEdit(document_changes=[types.CreateFile(uri=uri)])
        )
    )
    assert not again.applied and "exists" in (again.failure_reason or "")


async def test_delete_file_closes_the_open_buffer(tmp_path: Path) -> None:
    editor, session = make(tmp_path)
    path = tmp_path / "gone.py"
    path.write_text("bye\n", encoding="utf-8")
    uri = editor.open(path)
    session.calls.clear()

    result = await editor.apply_edit(
        types.ApplyWorkspaceEditParams(
            edit=types.WorkspaceEdit(document_changes=[types.DeleteFile(uri=uri)])
        )
    )
    session.answered = True

    assert result.applied
    assert not path.exists()
    assert uri not in editor.docs
    assert editor.text_document(uri) is not None  # the server still has it until the echo
    await editor.settle()
    assert session.calls == [("did_close", uri, None, True)]
    assert editor.text_document(uri) is None


async def test_changes_format_on_an_open_document(tmp_path: Path) -> None:
    editor, session = make(tmp_path)
    uri = editor.open(tmp_path / "a.py", "one\ntwo\n")

    result = await editor.apply_edit(
        types.ApplyWorkspaceEditParams(
            edit=types.WorkspaceEdit(
                changes={
                    uri: [edit_at(pos(1, 0), pos(1, 3), "2"), edit_at(pos(0, 0), pos(0, 3), "1")]
                }
            )
        )
    )

    assert result.applied
    await editor.settle()
    doc = editor.text_document(uri)
    assert doc is not None and (doc.source, doc.version) == ("1\n2\n", 2)


async def test_without_document_changes_an_edited_file_stays_in_a_hidden_buffer(
    tmp_path: Path,
) -> None:
    editor, session = make(tmp_path, open_on_edit=False)  # Neovim: no documentChanges
    path = tmp_path / "b.py"
    path.write_text("old\n", encoding="utf-8")
    uri = uri_of(path)

    result = await editor.apply_edit(
        types.ApplyWorkspaceEditParams(
            edit=types.WorkspaceEdit(changes={uri: [edit_at(pos(0, 0), pos(0, 3), "new")]})
        )
    )
    await editor.settle()

    assert result.applied
    assert editor.text(uri) == "new\n" and not editor.docs[uri].open
    assert editor.text_document(uri) is None and session.calls == []
    assert path.read_text(encoding="utf-8") == "old\n"
    await editor.save_documents([uri])
    await editor.settle()
    assert path.read_text(encoding="utf-8") == "new\n"
    assert editor.saved == [uri]
    assert session.calls == []  # the server never had it open: no didSave


async def test_save_of_an_open_document_says_did_save_after_the_answer(tmp_path: Path) -> None:
    editor, session = make(tmp_path)
    path = tmp_path / "s.py"
    uri = editor.open(path, "saved\n")
    session.calls.clear()

    await editor.save_documents([uri])
    session.answered = True

    assert path.read_text(encoding="utf-8") == "saved\n"
    assert session.calls == []
    await editor.settle()
    assert session.calls == [("did_save", uri, "saved\n", True)]

    editor.save_answer = "error"
    with pytest.raises(EditorRequestError):
        await editor.save_documents([uri])


async def test_echo_modes_and_user_actions_keep_the_editor_order(tmp_path: Path) -> None:
    editor, session = make(tmp_path, echo="manual")
    uri = editor.open(tmp_path / "a.py", "v1\n")

    assert (await editor.apply_edit(versioned(uri, 1, edit_at(pos(0, 1), pos(0, 2), "2")))).applied
    await editor.settle()  # manual: the echo waits for deliver_echoes() or the next user action
    doc = editor.text_document(uri)
    assert doc is not None and doc.version == 1
    editor.type_text(uri, "v3\n")  # the pending didChange goes first, then the user's
    doc = editor.text_document(uri)
    assert doc is not None and (doc.source, doc.version) == ("v3\n", 3)

    editor.echo = "before"  # the harness's (and VS Code's) order: didChange before the answer
    assert (await editor.apply_edit(versioned(uri, 3, edit_at(pos(0, 1), pos(0, 2), "4")))).applied
    doc = editor.text_document(uri)
    assert doc is not None and (doc.source, doc.version) == ("v4\n", 4)
    assert editor.failures == []


async def test_answers_reject_error_garbage_and_hold(tmp_path: Path) -> None:
    editor, session = make(tmp_path)
    uri = editor.open(tmp_path / "a.py", "x\n")
    params = versioned(uri, 1, edit_at(pos(0, 0), pos(0, 1), "y"))

    editor.answer = "reject"
    result = await editor.apply_edit(params)
    assert not result.applied and result.failure_reason == "the user rejected the edit"
    editor.answer = "error"
    with pytest.raises(EditorRequestError, match=INTENDED_FAILURE):
        await editor.apply_edit(params)
    editor.answer = "garbage"
    with pytest.raises(EditorRequestError, match="malformed params"):
        await editor.apply_edit(params)
    assert editor.text(uri) == "x\n" and editor.pending_echoes == 0

    editor.answer = "apply"
    with editor.holding_edits():
        task = asyncio.ensure_future(editor.apply_edit(params))
        held = await editor.wait_for_edits(4)
        assert held is params and not task.done()
        editor.type_text(uri, "z\n")  # the user types while looking at the edit
    result = await asyncio.wait_for(task, 20)
    assert not result.applied and "version mismatch" in (result.failure_reason or "")


async def test_session_handlers_may_be_coroutines(tmp_path: Path) -> None:
    editor = FakeEditor(tmp_path)
    seen: list[str] = []

    class AsyncSession:
        async def did_open(self, uri: str) -> None:
            await asyncio.sleep(0)
            seen.append(uri)

        async def did_close(self, uri: str) -> None:
            raise RuntimeError("handler broke")

        def did_save(self, uri: str) -> None:
            pass

    editor.session = AsyncSession()
    uri = editor.open(tmp_path / "a.py", "x\n")
    await editor.settle()
    assert seen == [uri]
    editor.close(uri)
    await editor.settle()
    assert editor.failures and "handler broke" in editor.failures[0]


async def test_questions_configuration_progress_and_events(tmp_path: Path) -> None:
    editor, _ = make(tmp_path)
    question = types.ShowMessageRequestParams(
        type=types.MessageType.Info,
        message="allow?",
        actions=[types.MessageActionItem(title="Allow once")],
    )
    editor.message_answers = ["Allow once", None]
    answer = await editor.ask(question)
    assert answer is not None and answer.title == "Allow once"
    assert await editor.ask(question) is None
    assert await editor.ask(question) is None  # nothing scripted: dismissed
    with editor.holding_questions():
        task = asyncio.ensure_future(editor.ask(question))
        await editor.wait_for_questions(4)
        assert not task.done()
    assert await asyncio.wait_for(task, 20) is None

    editor.settings = {"model": "m"}
    items = types.ConfigurationParams(items=[types.ConfigurationItem(section="lich")])
    assert await editor.configuration(items) == [{"model": "m"}]
    editor.configuration_answer = "error"
    with pytest.raises(EditorRequestError):
        await editor.configuration(items)

    await editor.create_progress("t1")
    editor.progress("t1", types.WorkDoneProgressBegin(title="task"))
    editor.progress("t1", types.WorkDoneProgressEnd(message="done"))
    assert editor.progress_tokens == set() and editor.failures == []
    editor.progress("t1", types.WorkDoneProgressReport(message="late"))
    assert len(editor.failures) == 1 and "not live" in editor.failures[0]
    editor.failures.clear()

    payload: dict[str, Any] = {"type": "task_started", "task_id": "t-1", "data": {"files": ("a",)}}
    waiter = asyncio.ensure_future(editor.wait_for_event("task_started", "t-1", files=["a"]))
    await asyncio.sleep(0)
    editor.send_event(payload)
    payload["data"]["files"] = ("changed",)
    event = await asyncio.wait_for(waiter, 20)
    assert event == {
        "type": "task_started",
        "task_id": "t-1",
        "data": {"files": ["a"]},
    }  # as JSON carries it

    editor.log_message("lich: hello", types.MessageType.Log)
    await editor.wait_for_log("hello")
    assert editor.logs == [(types.MessageType.Log, "lich: hello")]
