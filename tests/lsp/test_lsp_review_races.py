"""Review and undo under races, over the wire: a real `python -m lich_lsp`, pytest-lsp, the fake provider.

The test editor holds `workspace/applyEdit` unanswered (lsp_harness.holding_edits, or a hold of
the test's own) while the "user" rejects, cancels or edits: a reject never lands beside an accept
on its way, a cancel never leaves a disk write the result does not mention, an accept the editor
never answers never keeps its file locked, and a hunk whose file became a link out of the root is
refused alone. The bounds themselves (APPLY_EDIT_TIMEOUT_S) are in test_session_review_races.py.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from lsp_harness import WAIT_S, EditorClient, edit, provider_options
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.support.fake_provider import FakeProviderServer

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")

BASE = "".join(f"v{n} = {n}\n" for n in range(8))
REQUEST_CANCELLED = -32800


def _review_options(fake_provider: FakeProviderServer, style: str = "hunks") -> dict[str, object]:
    return provider_options(fake_provider, edit_mode="review", review_style=style)


async def _two_pending_hunks(
    client: EditorClient, fake_provider: FakeProviderServer, root: Path
) -> str:
    """r.py open, with hunks t1-1 (v1) and t1-2 (v5) pending."""
    uri = client.open(root / "r.py")
    result = await client.command("lich.ask", {"prompt": "bump"})
    assert result["review"] == "2 changes pending review in r.py", result
    return uri


async def test_reject_during_an_accept_is_refused_and_the_model_hears_only_the_truth(
    session, root: Path, fake_provider: FakeProviderServer
) -> None:
    (root / "r.py").write_text(BASE, encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("r.py", "v1 = 1", "v1 = 10"), edit("r.py", "v5 = 5", "v5 = 50")]},
        {"text": "Bumped."},
        {"text": "Noted."},
    )
    client = await session("visual-studio-code", init_options=_review_options(fake_provider))
    uri = await _two_pending_hunks(client, fake_provider, root)
    with client.holding_edits():
        accepting = asyncio.ensure_future(client.command("lich.acceptHunk", {"hunk_id": "t1-1"}))
        await client.wait_until(
            lambda: len(client.editor.applied) == 1, what="the accept's applyEdit"
        )
        busy = await client.command("lich.rejectHunk", {"hunk_id": "t1-1"})
        assert busy["ok"] is False and busy["error"].startswith("hunk_busy: t1-1"), busy
        # The other hunk of the same file is not on its way: rejecting it is fine meanwhile.
        other = await client.command("lich.rejectHunk", {"hunk_id": "t1-2"})
        assert other["ok"] is True and other["rejected"] == ["t1-2"], other
        assert not accepting.done()
    accepted = await accepting
    assert accepted["ok"] is True and accepted["accepted"] == ["t1-1"], accepted
    assert client.text(uri) == BASE.replace("v1 = 1\n", "v1 = 10\n")
    assert (await client.command("lich.reviewList", {}))["hunks"] == []

    await client.command("lich.ask", {"prompt": "next", "mode": "apply"})
    told = json.dumps(fake_provider.requests[-1]["json"]["messages"])
    assert "rejected your proposed change t1-2" in told
    assert "rejected your proposed change t1-1" not in told


async def test_an_unanswered_batch_then_cancel_puts_the_disk_write_back(
    session, root: Path, fake_provider: FakeProviderServer
) -> None:
    """The batch writes the closed file first, then waits on the editor for the open one; a cancel
    puts the closed file back and says nothing was edited. When the editor applies the batch after
    all, that part is told to the user and journalled (undoable)."""
    (root / "a.py").write_text("a = 1\n", encoding="utf-8")
    (root / "b.py").write_text("b = 1\n", encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("a.py", "a = 1", "a = 2"), edit("b.py", "b = 1", "b = 2")]},
        {"text": "Changed both."},
    )
    client = await session(
        "visual-studio-code", init_options=_review_options(fake_provider, "batch")
    )
    uri = client.open(root / "a.py")
    with client.holding_edits():
        asking = asyncio.ensure_future(client.command("lich.ask", {"prompt": "change both"}))
        await client.wait_until(
            lambda: len(client.editor.applied) == 1, what="the batch's applyEdit"
        )
        # The disk part went first: without a cancel that reverts it, it would stay.
        assert (root / "b.py").read_text(encoding="utf-8") == "b = 2\n"
        status = await client.command("lich.status", {})
        (task,) = [t["task_id"] for t in status["tasks"] if t["state"] == "running"]
        assert (await client.command("lich.cancel", {"task_id": task}))["cancelled"] == [task]
        result = await asyncio.wait_for(asking, WAIT_S)
        assert result["stopped_reason"] == "aborted", result
        assert (root / "b.py").read_text(encoding="utf-8") == "b = 1\n"
        assert result["edited"] == []
        assert result["review"].startswith("review_cancelled:")
        assert "No changes applied" in result["review_message"]
        assert client.text(uri) == "a = 1\n"
        assert (await client.command("lich.status", {}))["undoable_tasks"] == []
    # The editor answers at last, applying a.py: the server says so and journals it.
    await client.wait_until(
        lambda: any("after lich had stopped waiting" in m.message for m in client.messages),
        what="the message about the late edit",
    )
    assert client.text(uri) == "a = 2\n"
    assert (root / "b.py").read_text(encoding="utf-8") == "b = 1\n"
    status = await client.wait_for_status(lambda s: bool(s["undoable_tasks"]))
    assert [(t["task_id"], t["files"]) for t in status["undoable_tasks"]] == [(task, ["a.py"])]


async def test_a_cancelled_unanswered_accept_leaves_the_file_unlocked_and_the_hunk_pending(
    session, root: Path, fake_provider: FakeProviderServer
) -> None:
    (root / "r.py").write_text(BASE, encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("r.py", "v1 = 1", "v1 = 10"), edit("r.py", "v5 = 5", "v5 = 50")]},
        {"text": "Bumped."},
        {"tool_calls": [edit("r.py", "v7 = 7", "v7 = 70")]},
        {"text": "Changed v7."},
    )
    client = await session("visual-studio-code", init_options=_review_options(fake_provider))
    uri = await _two_pending_hunks(client, fake_provider, root)
    never = asyncio.Event()  # the first accept's applyEdit is answered only at the end, with "no"
    client.editor.hold = never
    try:
        params = types.ExecuteCommandParams(
            command="lich.acceptHunk", arguments=[{"hunk_id": "t1-1"}]
        )
        accepting = asyncio.ensure_future(
            client.protocol.send_request_async(
                "workspace/executeCommand", params, msg_id="accept-1"
            )
        )
        await client.wait_until(
            lambda: len(client.editor.applied) == 1, what="the accept's applyEdit"
        )
        client.editor.hold = None  # the editor answers every later edit at once
        client.protocol.notify("$/cancelRequest", types.CancelParams(id="accept-1"))
        with pytest.raises(JsonRpcException) as caught:
            await asyncio.wait_for(accepting, WAIT_S)
        assert caught.value.code == REQUEST_CANCELLED

        # r.py is not locked for good: an apply-mode task edits it, and the hunk is accepted again.
        result = await client.command("lich.ask", {"prompt": "change v7", "mode": "apply"})
        assert result["edited"] == [uri], result
        listed = await client.command("lich.reviewList", {})
        assert [h["hunk_id"] for h in listed["hunks"]] == ["t1-1", "t1-2"]
        accepted = await client.command("lich.acceptHunk", {"hunk_id": "t1-1"})
        assert accepted["ok"] is True, accepted
        expected = BASE.replace("v1 = 1\n", "v1 = 10\n").replace("v7 = 7\n", "v7 = 70\n")
        assert client.text(uri) == expected
        assert any("accepting t1-1 was cancelled" in m.message for m in client.messages)
    finally:
        client.editor.answer = "reject"
        never.set()
    assert client.text(uri) == BASE.replace("v1 = 1\n", "v1 = 10\n").replace(
        "v7 = 7\n", "v7 = 70\n"
    )
    assert not [m.message for m in client.messages if "unexpected error" in m.message]


async def test_a_hunk_whose_closed_file_became_a_link_out_of_the_root_is_refused_alone(
    session, root: Path, fake_provider: FakeProviderServer, tmp_path: Path
) -> None:
    (root / "a.py").write_text("a = 1\n", encoding="utf-8")
    (root / "b.py").write_text("b = 1\n", encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("a.py", "a = 1", "a = 2"), edit("b.py", "b = 1", "b = 2")]},
        {"text": "Changed both."},
        {"text": "Noted."},
    )
    client = await session("neovim", init_options=_review_options(fake_provider))
    uri = client.open(root / "a.py")
    result = await client.command("lich.ask", {"prompt": "change both"})
    assert result["review"] == "2 changes pending review in a.py, b.py", result
    outside = tmp_path / "outside.py"
    outside.write_text("b = 1\n", encoding="utf-8")
    (root / "b.py").unlink()
    (root / "b.py").symlink_to(outside)

    listed = await client.command("lich.reviewList", {})
    assert [h["hunk_id"] for h in listed["hunks"]] == ["t1-1"], listed
    refused = await client.command("lich.acceptHunk", {"hunk_id": "t1-2"})
    assert refused["ok"] is False and refused["error"].startswith("path_escape:"), refused
    accepted = await client.command("lich.acceptHunk", {"hunk_id": "t1-1"})
    assert accepted["ok"] is True and accepted["accepted"] == ["t1-1"], accepted
    assert client.text(uri) == "a = 2\n"
    assert (await client.command("lich.rejectAll", {})) == {
        "ok": True,
        "rejected": [],
        "pending": 0,
    }
    assert outside.read_text(encoding="utf-8") == "b = 1\n"
    assert (root / "b.py").is_symlink()

    await client.command("lich.ask", {"prompt": "next", "mode": "apply"})
    told = json.dumps(fake_provider.requests[-1]["json"]["messages"])
    assert "t1-2 to b.py" in told and "path_escape" in told


async def test_an_accept_the_editor_applies_after_the_cancel_counts_as_accepted(
    session, root: Path, fake_provider: FakeProviderServer
) -> None:
    """The editor's didChange of a late-applied accept comes before its answer: the hunk is
    accepted (not dropped as the user's edit), journalled, and the model hears it landed."""
    (root / "r.py").write_text(BASE, encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("r.py", "v1 = 1", "v1 = 10"), edit("r.py", "v5 = 5", "v5 = 50")]},
        {"text": "Bumped."},
        {"text": "Noted."},
    )
    client = await session("neovim", init_options=_review_options(fake_provider))
    uri = await _two_pending_hunks(client, fake_provider, root)
    with client.holding_edits():
        params = types.ExecuteCommandParams(
            command="lich.acceptHunk", arguments=[{"hunk_id": "t1-1"}]
        )
        accepting = asyncio.ensure_future(
            client.protocol.send_request_async(
                "workspace/executeCommand", params, msg_id="accept-late"
            )
        )
        await client.wait_until(
            lambda: len(client.editor.applied) == 1, what="the accept's applyEdit"
        )
        client.protocol.notify("$/cancelRequest", types.CancelParams(id="accept-late"))
        with pytest.raises(JsonRpcException):
            await asyncio.wait_for(accepting, WAIT_S)
        await client.wait_until(
            lambda: any("accepting t1-1 was cancelled" in m.message for m in client.messages),
            what="the server to stop waiting for the accept",
        )
    await client.wait_until(
        lambda: any("after lich had stopped waiting" in m.message for m in client.messages),
        what="the message about the late edit",
    )
    assert client.text(uri) == BASE.replace("v1 = 1\n", "v1 = 10\n")
    listed = await client.command("lich.reviewList", {})
    assert [(h["hunk_id"], h["start_line"]) for h in listed["hunks"]] == [("t1-2", 5)]
    status = await client.command("lich.status", {})
    assert [(t["task_id"], t["files"]) for t in status["undoable_tasks"]] == [("t1", ["r.py"])]
    await client.command("lich.ask", {"prompt": "next", "mode": "apply"})
    told = json.dumps(fake_provider.requests[-1]["json"]["messages"])
    assert "t1-1 was applied after all" in told
    assert "was dropped" not in told, told
    assert not [m.message for m in client.messages if "unexpected error" in m.message]
