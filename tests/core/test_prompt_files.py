"""lich_core.tools.prompt_files, the read guard of `@path` mentions and project rules (issue #43):
what is refused by name and by where a link leads, and the open that never waits and checks the
opened file again (a link swapped after the first check gains nothing)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from lich_core.errors import ToolError
from lich_core.tools.prompt_files import open_prompt_file, prompt_file_refusal, resolve_prompt_file


@pytest.fixture
def root(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".lich").mkdir()
    (workspace / ".lich" / "config.json").write_text("{}")
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("[core]\n")
    (workspace / "ok.md").write_text("fine\n")
    return workspace.resolve()


def refusal(root: Path, target: str) -> str:
    with pytest.raises(ToolError) as raised:
        path = resolve_prompt_file(root, target)
        os.close(open_prompt_file(root, path))
    return str(raised.value)


def test_names_and_links_are_refused_with_the_guards_prefix(root: Path) -> None:
    (root / "cfg").symlink_to(Path(".lich") / "config.json")
    (root / "vcs").symlink_to(Path(".git") / "config")
    (root / "dotgit").symlink_to(".git")
    (root / "out").symlink_to(root.parent)
    (root / "notes.txt").symlink_to(".env")
    (root / ".env").write_text("A=1\n")
    assert refusal(root, ".lich/config.json").startswith("forbidden_path: .lich/config.json")
    assert refusal(root, "cfg").startswith("forbidden_path: .lich/config.json")
    assert refusal(root, ".git/config").startswith("forbidden_path: .git/config (.git/ is")
    assert refusal(root, ".GIT/config").startswith("forbidden_path: .GIT/config")
    assert refusal(root, "vcs").startswith("forbidden_path: vcs (.git/ is")
    assert refusal(root, "dotgit/config").startswith("forbidden_path: dotgit/config (.git/ is")
    assert refusal(root, "out/x").startswith("path_escape:")
    assert refusal(root, "../x").startswith("path_escape:")
    assert refusal(root, ".env").startswith("secret_file:")
    assert refusal(root, "notes.txt").startswith("secret_file:")
    assert refusal(root, "missing.md") == "not_found: missing.md"
    assert refusal(root, ".lich") == "is_directory: .lich is a directory"


def test_special_files_are_refused_before_any_wait(root: Path) -> None:
    os.mkfifo(root / "fifo")
    assert refusal(root, "fifo") == "not_regular_file: fifo is a FIFO, not a regular file"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(root / "sock"))
        assert refusal(root, "sock") == "not_regular_file: sock is a socket, not a regular file"
    finally:
        server.close()
    (root / "null").symlink_to("/dev/null")
    assert refusal(root, "null").startswith("path_escape:")


def test_a_link_swapped_after_the_check_is_refused_at_the_open(root: Path) -> None:
    """resolve_prompt_file passed `doc.md`; it then becomes a link to the config: the opened
    file's real path is checked again, so the swap gains nothing."""
    (root / "doc.md").write_text("doc\n")
    path = resolve_prompt_file(root, "doc.md")
    (root / "doc.md").unlink()
    (root / "doc.md").symlink_to(Path(".lich") / "config.json")
    with pytest.raises(ToolError, match=r"^forbidden_path: \.lich/config\.json"):
        open_prompt_file(root, path)


def test_a_regular_file_is_opened(root: Path) -> None:
    fd = open_prompt_file(root, resolve_prompt_file(root, "ok.md"))
    with os.fdopen(fd, "rb") as handle:
        assert handle.read() == b"fine\n"
    assert prompt_file_refusal(root, root / "ok.md") is None
