"""Review per hunk, in-process: an EditorSession against the FakeEditor and the fake provider.

The fake editor's typing is a full-content change the server hears of only through its synced
copy, so these tests go through the review's catch-up path (the line diff of the two texts); the
exact path through incremental didChange over the wire is in test_lsp_review_hunks.py. Also here:
the batch's plain words when the preview applied nothing, the notes the model's next turn gets,
and CodeActionTag.LLMGenerated.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_editor import FakeEditor
from lsp_harness import edit, provider_options, tool_messages
from lsprotocol import types

from tests.support.fake_provider import FakeProviderServer

pytestmark = pytest.mark.timeout(120)

BASE = "".join(f"v{n} = {n}\n" for n in range(8))
NOTES_HEADER = "[lich] Since your last step, in the editor:"


def _two_hunks(fake_provider: FakeProviderServer) -> None:
    """A task that changes v1 and v5 (two hunks), then answers."""
    fake_provider.script(
        {"tool_calls": [edit("r.py", "v1 = 1", "v1 = 10")]},
        {"tool_calls": [edit("r.py", "v5 = 5", "v5 = 50\nv5b = 51")]},
        {"text": "Bumped two values."},
    )


async def _review_editor(
    editor: Any, root: Path, client_name: str, fake_provider: FakeProviderServer, **extra: Any
) -> FakeEditor:
    (root / "r.py").write_text(BASE, encoding="utf-8")
    options = provider_options(fake_provider, edit_mode="review", **extra)
    if client_name == "visual-studio-code":
        options.setdefault("review_style", "hunks")  # VS Code's profile takes the batch on auto
    return await editor(client_name, init_options=options)


def _review_diagnostics(fake: FakeEditor, uri: str) -> list[types.Diagnostic]:
    return [d for d in fake.diagnostics.get(uri, []) if d.source == "lich review"]


def _actions(fake: FakeEditor, uri: str, line: int) -> list[Any]:
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(
            start=types.Position(line=line, character=0), end=types.Position(line=line, character=0)
        ),
        context=types.CodeActionContext(diagnostics=[]),
    )
    return list(fake.code_action(params))


def _titles(actions: list[Any]) -> list[str]:
    return [a.title for a in actions]


def _request_text(fake_provider: FakeProviderServer, index: int) -> str:
    return json.dumps(fake_provider.requests[index]["json"]["messages"])


async def test_hunks_accept_one_reject_one_with_typing_above(
    editor: Any, root: Path, client_name: str, fake_provider: FakeProviderServer
) -> None:
    _two_hunks(fake_provider)
    fake = await _review_editor(editor, root, client_name, fake_provider)
    uri = fake.open(root / "r.py")
    result = await fake.command("lich.ask", {"prompt": "bump"})
    assert result["stopped_reason"] == "final"
    assert result["review"] == "2 changes pending review in r.py"
    assert result["review_message"].startswith("2 changes to review in r.py: accept or reject each")
    assert fake.applied == [] and fake.text(uri) == BASE  # nothing applied yet
    (shown,) = [m for _, m in fake.messages if m.startswith("lich: bump:")]
    assert (
        shown.startswith("lich: bump: 2 changes to review in r.py")
        and "The agent said: Bumped two values." in shown
    )
    diagnostics = _review_diagnostics(fake, uri)
    assert [(d.code, d.range.start.line, d.severity) for d in diagnostics] == [
        ("t1-1", 1, types.DiagnosticSeverity.Hint),
        ("t1-2", 5, types.DiagnosticSeverity.Hint),
    ]
    assert diagnostics[0].message.splitlines() == [
        "lich: proposed change t1-1 (bump): replace line 2 with 1 line",
        "- v1 = 1",
        "+ v1 = 10",
    ]
    assert diagnostics[1].range.end == types.Position(line=5, character=len("v5 = 5"))

    # The user types two lines above everything: the hunks follow their lines.
    fake.type_text(uri, "import os\nimport sys\n" + BASE)
    listing = await fake.command("lich.reviewList", {"uri": uri})
    assert [(h["hunk_id"], h["start_line"]) for h in listing["hunks"]] == [("t1-1", 3), ("t1-2", 7)]
    assert [d.range.start.line for d in _review_diagnostics(fake, uri)] == [3, 7]

    assert _titles(_actions(fake, uri, 3))[:4] == [
        "Accept hunk t1-1",
        "Reject hunk t1-1",
        "Accept all in file",
        "Reject all",
    ]
    assert "Accept hunk t1-2" not in _titles(_actions(fake, uri, 3))

    accepted = await fake.command("lich.acceptHunk", {"hunk_id": "t1-2"})
    assert accepted == {"ok": True, "accepted": ["t1-2"], "edited": [uri], "pending": 1}
    (applied,) = fake.applied
    expected = "import os\nimport sys\n" + BASE.replace("v5 = 5\n", "v5 = 50\nv5b = 51\n")
    assert fake.text(uri) == expected
    if applied.edit.document_changes is not None:  # a versioned edit of that one line
        (doc_edit,) = applied.edit.document_changes
        assert doc_edit.text_document.version == 2
        ((text_edit),) = doc_edit.edits
        assert text_edit.range.start.line == 7 and text_edit.new_text == "v5 = 50\nv5b = 51\n"
    await fake.settle()
    assert [d.code for d in _review_diagnostics(fake, uri)] == ["t1-1"]

    rejected = await fake.command("lich.rejectHunk", {"hunk_id": "t1-1"})
    assert rejected == {"ok": True, "rejected": ["t1-1"], "pending": 0}
    assert _review_diagnostics(fake, uri) == []
    assert fake.text(uri) == expected and len(fake.applied) == 1
    again = await fake.command("lich.acceptHunk", {"hunk_id": "t1-1"})
    assert again["ok"] is False and again["error"].startswith("not_found: no pending change t1-1")

    # The next task's first model call hears of the rejection.
    fake_provider.script({"text": "noted"})
    await fake.command("lich.ask", {"prompt": "next", "mode": "apply"})
    last = _request_text(fake_provider, -1)
    assert NOTES_HEADER in last and "The user rejected your proposed change t1-1 to r.py" in last
    assert "v1 = 10" in last and "Do not make this change again" in last
    assert "dropped" not in last


async def test_a_hunk_whose_lines_the_user_edits_is_dropped_and_the_model_told(
    editor: Any, root: Path, fake_provider: FakeProviderServer
) -> None:
    _two_hunks(fake_provider)
    fake = await _review_editor(editor, root, "neovim", fake_provider)
    uri = fake.open(root / "r.py")
    await fake.command("lich.ask", {"prompt": "bump"})
    fake.type_text(uri, BASE.replace("v1 = 1\n", "v1 = 'mine'\n"))
    answer = await fake.command("lich.acceptAll", {"uri": uri})
    assert answer["ok"] is True and answer["accepted"] == ["t1-2"]
    assert fake.text(uri) == BASE.replace("v1 = 1\n", "v1 = 'mine'\n").replace(
        "v5 = 5\n", "v5 = 50\nv5b = 51\n"
    )
    assert (await fake.command("lich.reviewList", {}))["hunks"] == []
    assert any("dropped the proposed change t1-1 in r.py" in m for _, m in fake.logs)
    fake_provider.script({"text": "ok"})
    await fake.command("lich.ask", {"prompt": "next"})
    last = _request_text(fake_provider, -1)
    assert "Your proposed change t1-1 to r.py (replace line 2 with 1 line) was dropped" in last
    assert "the user edited those lines" in last


async def test_user_edits_during_a_review_task_are_carried_and_a_clash_dropped(
    editor: Any, root: Path, fake_provider: FakeProviderServer
) -> None:
    """The user types while the agent works: hunks are rebased onto the user's text at the end."""
    (root / "r.py").write_text(BASE, encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("r.py", "v1 = 1", "v1 = 10")]},
        {"tool_calls": [edit("r.py", "v5 = 5", "v5 = 50")]},
        {"tool_calls": [{"name": "terminal", "arguments": {"command": "true"}}]},
        {"text": "done"},
    )
    fake = await editor(
        "neovim@v0.7.0", init_options=provider_options(fake_provider, edit_mode="review")
    )
    uri = fake.open(root / "r.py")
    fake.message_answers = ["Deny"]
    with fake.holding_questions():
        task = fake.start_command("lich.ask", {"prompt": "bump"})[1]
        await fake.wait_for_questions(1)  # the terminal's approval: the agent is mid-task
        fake.type_text(uri, "# top\n" + BASE.replace("v5 = 5\n", "v5 = 'user'\n"))
    result = await task
    assert result["review"].startswith("1 change pending review in r.py; dropped 1")
    assert (
        "Dropped: r.py: t1-2 (replace line 6 with 1 line): you edited those lines."
        in result["review_message"]
    )
    (hunk,) = (await fake.command("lich.reviewList", {}))["hunks"]
    assert (hunk["hunk_id"], hunk["start_line"]) == ("t1-1", 2)
    await fake.command("lich.acceptHunk", {"hunk_id": "t1-1"})
    assert fake.text(uri) == "# top\n" + BASE.replace("v5 = 5\n", "v5 = 'user'\n").replace(
        "v1 = 1\n", "v1 = 10\n"
    )


async def test_batch_preview_that_applied_nothing_is_said_plainly_and_told_to_the_model(
    editor: Any, root: Path, fake_provider: FakeProviderServer
) -> None:
    (root / "r.py").write_text("a = 1\n", encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("r.py", "a = 1", "a = 2")]}, {"text": "Added a docstring."}
    )
    fake = await editor(
        "visual-studio-code", init_options=provider_options(fake_provider, edit_mode="review")
    )
    uri = fake.open(root / "r.py")
    fake.answer = "reject"  # Apply pressed in the refactor preview with every change unticked
    result = await fake.command("lich.ask", {"prompt": "add a docstring"})
    (applied,) = fake.applied
    assert applied.edit.change_annotations  # the batch (VS Code's profile on auto)
    assert result["review"] == (
        "edit_rejected: review_declined: the user accepted none of the 1 change in the preview (applied: false)"
    )
    assert result["review_message"] == "No changes applied: 0 of 1 change accepted in the preview."
    (shown,) = [m for _, m in fake.messages if m.startswith("lich: add a docstring:")]
    assert shown == (
        "lich: add a docstring: No changes applied: 0 of 1 change accepted in the preview.\n"
        "The agent said: Added a docstring."
    )
    assert "edit_rejected" not in shown
    assert fake.text(uri) == "a = 1\n"
    fake.answer = "apply"
    fake_provider.script({"text": "ok"})
    await fake.command("lich.ask", {"prompt": "again", "mode": "apply"})
    last = _request_text(fake_provider, -1)
    assert (
        'None of your edits from the task \\"add a docstring\\" were applied: 0 of 1 change accepted'
        in last
    )


async def test_the_users_edits_to_the_agents_lines_reach_the_next_turn(
    editor: Any, root: Path, fake_provider: FakeProviderServer
) -> None:
    """Apply mode: the agent changes a line, the user retypes it while the agent waits for an
    approval; the next model call carries a note with the user's text (and typing elsewhere is
    not reported)."""
    (root / "m.py").write_text(BASE, encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("m.py", "v2 = 2", "v2 = 20")]},
        {"tool_calls": [{"name": "terminal", "arguments": {"command": "true"}}]},
        {"text": "done"},
    )
    fake = await editor("visual-studio-code", init_options=provider_options(fake_provider))
    uri = fake.open(root / "m.py")
    fake.message_answers = ["Deny"]
    with fake.holding_questions():
        task = fake.start_command("lich.ask", {"prompt": "tune"})[1]
        await fake.wait_for_questions(1)
        await fake.settle()
        assert fake.text(uri) == BASE.replace("v2 = 2\n", "v2 = 20\n")
        fake.type_text(
            uri,
            "# mine\n" + BASE.replace("v2 = 2\n", "v2 = 'user'\n").replace("v7 = 7\n", "v7 = 70\n"),
        )
    await task
    last = _request_text(fake_provider, 2)
    assert "The user edited lines you had changed in m.py:" in last
    assert "line 4 now read:\\n    v2 = 'user'" in last
    assert "v7 = 70" not in last
    assert "approval_denied" in tool_messages(fake_provider)[-1]


async def test_code_actions_carry_the_llm_tag_when_the_client_lists_it(
    editor: Any, root: Path, fake_provider: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fake_editor

    plain = fake_editor.capabilities_for

    def with_tags(*args: Any, **kwargs: Any) -> types.ClientCapabilities:
        caps = plain(*args, **kwargs)
        assert caps.text_document is not None and caps.text_document.code_action is not None
        caps.text_document.code_action.tag_support = types.CodeActionTagOptions(
            value_set=[types.CodeActionTag.LlmGenerated]
        )
        return caps

    _two_hunks(fake_provider)
    untagged = await _review_editor(editor, root, "neovim", fake_provider)
    uri = untagged.open(root / "r.py")
    await untagged.command("lich.ask", {"prompt": "bump"})
    assert all(a.tags is None for a in _actions(untagged, uri, 1))
    await untagged.stop()

    monkeypatch.setattr(fake_editor, "capabilities_for", with_tags)
    _two_hunks(fake_provider)
    tagged = await _review_editor(editor, root, "neovim", fake_provider)
    uri = tagged.open(root / "r.py")
    await tagged.command("lich.ask", {"prompt": "bump"})
    actions = {a.title: a for a in _actions(tagged, uri, 1)}
    assert actions["Accept hunk t1-1"].tags == [types.CodeActionTag.LlmGenerated]
    assert actions["Accept all in file"].tags == [types.CodeActionTag.LlmGenerated]
    assert actions["Ask agent…"].tags == [types.CodeActionTag.LlmGenerated]
    assert actions["Reject hunk t1-1"].tags is None and actions["Reject all"].tags is None


async def test_review_style_batch_keeps_the_question_and_status_says_the_style(
    editor: Any, root: Path, fake_provider: FakeProviderServer
) -> None:
    _two_hunks(fake_provider)
    fake = await _review_editor(editor, root, "neovim", fake_provider, review_style="batch")
    uri = fake.open(root / "r.py")
    fake.message_answers = ["Apply"]
    status = await fake.command("lich.status", {})
    assert status["review"] == {"style": "batch", "pending": 0}
    result = await fake.command("lich.ask", {"prompt": "bump"})
    assert result["review"] == "applied 2 changes to 1 files"
    assert result["review_message"] == "Applied 2 changes to 1 file."
    assert fake.text(uri) == BASE.replace("v1 = 1\n", "v1 = 10\n").replace(
        "v5 = 5\n", "v5 = 50\nv5b = 51\n"
    )
    assert _review_diagnostics(fake, uri) == []


async def test_review_diagnostics_and_test_diagnostics_share_a_file(
    editor: Any, root: Path, fake_provider: FakeProviderServer
) -> None:
    """publishDiagnostics replaces a file's whole list: each source's publish keeps the other's."""
    _two_hunks(fake_provider)
    fake = await _review_editor(editor, root, "neovim", fake_provider)
    uri = fake.open(root / "r.py")
    session = fake.session
    other = types.Diagnostic(
        range=types.Range(
            start=types.Position(line=0, character=0), end=types.Position(line=0, character=1)
        ),
        message="failed",
        source="lich tests",
    )
    session.messages.publish_diagnostics("lich tests", uri, [other])
    await fake.command("lich.ask", {"prompt": "bump"})
    assert sorted(d.source for d in fake.diagnostics[uri]) == [
        "lich review",
        "lich review",
        "lich tests",
    ]
    session.messages.publish_diagnostics("lich tests", uri, [])
    assert [d.source for d in fake.diagnostics[uri]] == ["lich review", "lich review"]
    await fake.command("lich.rejectAll", {})
    assert fake.diagnostics[uri] == []


async def test_an_accepted_hunk_is_undone_with_its_task(
    editor: Any, root: Path, client_name: str, fake_provider: FakeProviderServer
) -> None:
    """Hunks accepted after the task ended are journaled as that task's: lich.undoTask takes them back."""
    _two_hunks(fake_provider)
    fake = await _review_editor(editor, root, client_name, fake_provider)
    uri = fake.open(root / "r.py")
    result = await fake.command("lich.ask", {"prompt": "bump"})
    task_id = result["task_id"]
    accepted = await fake.command("lich.acceptHunk", {"hunk_id": f"{task_id}-1"})
    assert accepted["ok"] is True
    await fake.settle()
    assert fake.text(uri) == BASE.replace("v1 = 1\n", "v1 = 10\n")

    undone = await fake.command("lich.undoTask", {"task_id": task_id})
    assert [f["outcome"] for f in undone["files"]] == ["undone"], undone
    await fake.settle()
    assert fake.text(uri) == BASE
