"""The file system through the session, in-process: nothing on disk can freeze it or be written behind a link.

Each test runs an EditorSession in this process against the FakeEditor (the `editor` fixture):
a FIFO in the workspace is refused by lich.read and the file tools instead of blocking the
server (every client profile: closed files reach the disk or the editor by different paths),
and writes to closed files refuse symlinks out of the workspace and version-control internals.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from lsp_harness import uri_of
from pygls.exceptions import JsonRpcException


async def test_a_fifo_never_freezes_the_server(editor, root: Path, client_name: str) -> None:
    os.mkfifo(root / "pipe")
    fake = await editor(client_name)
    with pytest.raises(JsonRpcException) as caught:
        await fake.command("lich.read", {"uri": uri_of(root / "pipe")})
    assert "not_regular_file:" in str(caught.value) and "FIFO" in str(caught.value)
    for name, args in (
        ("read_file", {"path": "pipe"}),
        ("edit_file", {"path": "pipe", "old_string": "a", "new_string": "b"}),
    ):
        result = await fake.command("lich.runTool", {"name": name, "args": args})
        assert result["ok"] is False and result["error"].startswith("not_regular_file:")
    status = await fake.command("lich.status", {})
    assert status["root"] == str(root)
    assert not [text for _, text in fake.messages if "unexpected error" in text]


async def test_closed_file_writes_refuse_links_and_version_control(
    editor, root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, root / "out")
    (root / ".git").mkdir()
    fake = await editor("neovim@v0.7.0")  # no documentChanges: closed files go to disk
    linked = await fake.command(
        "lich.runTool", {"name": "write_file", "args": {"path": "out/x.txt", "content": "x\n"}}
    )
    assert linked["ok"] is False and linked["error"].startswith("path_escape:")
    hooked = await fake.command(
        "lich.runTool",
        {
            "name": "write_file",
            "args": {"path": ".git/hooks/post-checkout", "content": "#!/bin/sh\n"},
        },
    )
    assert hooked["ok"] is False and hooked["error"].startswith(
        "forbidden_path: .git/hooks/post-checkout"
    )
    assert list(outside.iterdir()) == [] and not (root / ".git" / "hooks").exists()
