"""unsaved_files: the one place the file tools scope a workspace's buffers to a directory."""

from __future__ import annotations

from pathlib import Path

from lich_core.workspace import unsaved_files, unsaved_set
from tests.support.workspaces import BufferWorkspace


def test_buffers_under_a_directory_by_their_relative_path(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    workspace = BufferWorkspace(
        root,
        {
            root / "src" / "new.py": "x = 1\n",  # not on disk yet
            root / "src" / ".." / "top.md": "# top\n",  # normalised
            root / "src": "a directory is not listed under itself",
            tmp_path / "outside.py": "y = 2\n",  # outside the root
        },
    )
    assert unsaved_files(workspace, root) == {
        "src/new.py": root / "src" / "new.py",
        "top.md": root / "top.md",
        "src": root / "src",
    }
    assert unsaved_files(workspace, root / "src") == {"new.py": root / "src" / "new.py"}
    assert unsaved_files(workspace, str(root / "src") + "/") == {"new.py": root / "src" / "new.py"}
    assert unsaved_set(workspace) == {
        root / "src" / "new.py",
        root / "top.md",
        root / "src",
        tmp_path / "outside.py",
    }
