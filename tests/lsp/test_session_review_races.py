"""The bound on waiting for the editor, in-process: an EditorSession against the FakeEditor.

APPLY_EDIT_TIMEOUT_S is shortened here (the real 30 s would only slow the test): an accept the
editor does not answer in time fails with `edit_timeout:` and frees its file at once; an accept
the editor applies after lich stopped waiting counts as accepted (not as the user's edit), is in
the undo journal and is told to the model. The races over the wire are in test_lsp_review_races.py.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from lsp_harness import edit, provider_options

from lich_lsp import workspace
from tests.support.fake_provider import FakeProviderServer

pytestmark = pytest.mark.timeout(120)

BASE = "".join(f"v{n} = {n}\n" for n in range(8))
SHORT_APPLY_TIMEOUT_S = 0.05


@pytest.fixture(autouse=True)
def short_apply_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workspace, "APPLY_EDIT_TIMEOUT_S", SHORT_APPLY_TIMEOUT_S)


async def _pending(editor: Any, root: Path, fake_provider: FakeProviderServer) -> tuple[Any, str]:
    """A session with r.py open and hunks t1-1 (v1) and t1-2 (v5) pending: (the editor, r.py's uri)."""
    (root / "r.py").write_text(BASE, encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [edit("r.py", "v1 = 1", "v1 = 10"), edit("r.py", "v5 = 5", "v5 = 50")]},
        {"text": "Bumped."},
        {"text": "Noted."},
    )
    options = provider_options(fake_provider, edit_mode="review", review_style="hunks")
    fake = await editor("visual-studio-code", init_options=options)
    uri = fake.open(root / "r.py")
    result = await fake.command("lich.ask", {"prompt": "bump"})
    assert result["review"] == "2 changes pending review in r.py", result
    return fake, uri


async def test_an_unanswered_accept_times_out_and_frees_its_file(
    editor: Any, root: Path, fake_provider: FakeProviderServer
) -> None:
    fake, uri = await _pending(editor, root, fake_provider)
    first = asyncio.Event()
    fake.hold = first
    try:
        timed_out = await fake.command("lich.acceptHunk", {"hunk_id": "t1-1"})
        assert timed_out["ok"] is False and timed_out["error"].startswith(
            "edit_rejected: edit_timeout:"
        ), timed_out
        listed = await fake.command("lich.reviewList", {})
        assert [h["hunk_id"] for h in listed["hunks"]] == ["t1-1", "t1-2"]
        fake.hold = None
        # r.py is free: an edit of the user's own goes through, and the hunk is accepted again.
        ran = await fake.command(
            "lich.runTool",
            {
                "name": "edit_file",
                "args": {"path": "r.py", "old_string": "v7 = 7", "new_string": "v7 = 70"},
            },
        )
        assert ran["ok"] is True, ran
        await fake.settle()
        accepted = await fake.command("lich.acceptHunk", {"hunk_id": "t1-1"})
        assert accepted["ok"] is True, accepted
    finally:
        first.set()
    await fake.settle()
    # The first edit's late answer: the editor refused it (its version is gone); nothing changes.
    assert fake.text(uri) == BASE.replace("v1 = 1\n", "v1 = 10\n").replace("v7 = 7\n", "v7 = 70\n")
    assert [h["hunk_id"] for h in (await fake.command("lich.reviewList", {}))["hunks"]] == ["t1-2"]


@pytest.mark.parametrize("echo", ["soon", "before"])
async def test_an_accept_the_editor_applies_late_counts_as_accepted_and_is_journalled(
    editor: Any, root: Path, fake_provider: FakeProviderServer, echo: str
) -> None:
    fake, uri = await _pending(editor, root, fake_provider)
    fake.echo = echo  # the buffer's didChange before or after the late answer
    with fake.holding_edits():
        timed_out = await fake.command("lich.acceptHunk", {"hunk_id": "t1-1"})
        assert timed_out["error"].startswith("edit_rejected: edit_timeout:"), timed_out
        assert (await fake.command("lich.status", {}))["undoable_tasks"] == []
    await fake.wait_for_message("after lich had stopped waiting")
    await fake.settle()
    assert fake.text(uri) == BASE.replace("v1 = 1\n", "v1 = 10\n")
    listed = await fake.command("lich.reviewList", {})
    assert [(h["hunk_id"], h["start_line"]) for h in listed["hunks"]] == [("t1-2", 5)]
    status = await fake.command("lich.status", {})
    assert [(t["task_id"], t["files"]) for t in status["undoable_tasks"]] == [("t1", ["r.py"])]

    await fake.command("lich.ask", {"prompt": "next", "mode": "apply"})
    told = json.dumps(fake_provider.requests[-1]["json"]["messages"])
    assert "t1-1 was applied after all" in told
    assert not re.search(r"change t1-1 to r\.py \([^)]*\) was dropped", told), told


async def test_an_unanswered_batch_question_is_bounded_and_frees_the_files(
    editor: Any, root: Path, fake_provider: FakeProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batch's Apply/Discard question holds the files' lock: unanswered, it ends as declined."""
    monkeypatch.setattr(workspace, "APPLY_PREVIEW_TIMEOUT_S", SHORT_APPLY_TIMEOUT_S)
    (root / "r.py").write_text(BASE, encoding="utf-8")
    fake_provider.script({"tool_calls": [edit("r.py", "v1 = 1", "v1 = 10")]}, {"text": "Bumped."})
    options = provider_options(fake_provider, edit_mode="review", review_style="batch")
    fake = await editor("neovim", init_options=options)
    uri = fake.open(root / "r.py")
    with fake.holding_questions():
        result = await fake.command("lich.ask", {"prompt": "bump"})
        assert result["review"].startswith(
            "edit_rejected: review_declined: the question was not answered"
        ), result
        assert "No changes applied" in result["review_message"]
        ran = await fake.command(
            "lich.runTool",
            {
                "name": "edit_file",
                "args": {"path": "r.py", "old_string": "v7 = 7", "new_string": "v7 = 70"},
            },
        )
        assert ran["ok"] is True, ran
    await fake.settle()
    assert fake.text(uri) == BASE.replace("v7 = 7\n", "v7 = 70\n")
    assert len(fake.applied) == 1
