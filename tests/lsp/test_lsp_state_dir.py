"""Hostile files and links in the user state dir, over the wire: a real
`lich-lsp` over stdio (pytest-lsp), the fake provider (issue #31).

A journal file of 200k nested `[`, a FIFO and a link to /dev/zero each used to break every
later `lich.status`, `lich.ask` and `lich.undoTask` (RecursionError), hang the server (a blocking
open) or exhaust its memory. Each is now skipped with one warning, and the server goes on: status
answers, a task runs under an id none of them holds, and its undo works. A planted
`transcripts` link gets no transcript, and the task still completes.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from lsp_harness import WAIT_S, edit, provider_options

from lich_core.userstate import workspace_state_dir
from lich_lsp.journal import JOURNAL_DIR_NAME

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")

A = "one\ntwo\nthree\n"
DEEP_NESTING = 200_000


def _deep_json(path: Path) -> None:
    path.write_text("[" * DEEP_NESTING, encoding="utf-8")


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _link_to_dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


HOSTILE: dict[str, Callable[[Path], None]] = {
    "deep-json": _deep_json,
    "fifo": _fifo,
    "link-to-dev-zero": _link_to_dev_zero,
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
async def test_a_hostile_journal_file_is_skipped_and_the_server_answers(
    session, root: Path, fake_provider, kind: str
) -> None:
    undo_dir = workspace_state_dir(root) / JOURNAL_DIR_NAME
    undo_dir.mkdir(parents=True, mode=0o700)
    hostile = undo_dir / "t1.json"
    HOSTILE[kind](hostile)
    (root / "a.py").write_text(A, encoding="utf-8")
    fake_provider.script({"tool_calls": [edit("a.py", "two", "TWO")]}, {"text": "Done."})
    client = await session("visual-studio-code", init_options=provider_options(fake_provider))

    # A bounded wait: the server's first look at the journal used to block on the FIFO.
    status = await client.command("lich.status", {}, timeout_s=WAIT_S)
    assert status["undoable_tasks"] == []
    await client.wait_for_log("ignored a corrupt undo journal file")
    warnings = [
        m.message for m in client.log_messages if "ignored a corrupt undo journal file" in m.message
    ]
    assert len(warnings) == 1 and "t1.json" in warnings[0], warnings

    uri = client.open(root / "a.py")
    task = await client.command("lich.ask", {"prompt": "shout"})
    assert task["stopped_reason"] == "final", task
    assert task["task_id"] != "t1"  # the id the skipped file holds is not handed out again
    assert client.text(uri) == A.replace("two", "TWO")
    listed = (await client.command("lich.status", {}, timeout_s=WAIT_S))["undoable_tasks"]
    assert [t["task_id"] for t in listed] == [task["task_id"]]

    undo = await client.command("lich.undoTask", {"task_id": task["task_id"]})
    assert undo["ok"] is True, undo
    assert client.text(uri) == A
    # The hostile file is left as it was (never written through, never replaced).
    assert hostile.is_symlink() if kind == "link-to-dev-zero" else hostile.exists()
    assert (
        len([m for m in client.log_messages if "ignored a corrupt undo journal file" in m.message])
        == 1
    )


async def test_a_linked_transcripts_dir_gets_no_transcript_and_the_task_completes(
    session, root: Path, tmp_path: Path, fake_provider
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    state = workspace_state_dir(root)
    state.mkdir(parents=True, mode=0o700)
    (state / "transcripts").symlink_to(outside, target_is_directory=True)
    fake_provider.script({"text": "Done."})
    client = await session("visual-studio-code", init_options=provider_options(fake_provider))

    task = await client.command("lich.ask", {"prompt": "hello"})
    assert task["stopped_reason"] == "final", task
    assert list(outside.iterdir()) == []
    assert (state / "transcripts").is_symlink()
