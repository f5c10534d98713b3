"""unsaved_files and WorkspaceListing: the one place the file tools merge a workspace's unsaved
buffers with the disk under a directory."""

from __future__ import annotations

from pathlib import Path

from lich_core.workspace import (
    DiskWorkspace,
    UnsavedFile,
    WorkspaceListing,
    unsaved_files,
    unsaved_set,
)
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


def test_a_listing_tells_new_files_from_buffers_that_shadow_the_disk(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "old.py").write_text("on disk\n")
    (root / "node_modules").mkdir()
    workspace = BufferWorkspace(
        root,
        {
            root / "src" / "old.py": "edited, not saved\n",  # shadows its disk file
            root / "src" / "pkg" / "new.py": "only in the editor\n",  # no file, no folder yet
            root / "node_modules" / "x.js": "skipped folder\n",
            tmp_path / "outside.py": "not under the root\n",
        },
    )
    listing = WorkspaceListing(workspace, root)
    assert listing.unsaved == {
        "src/old.py": UnsavedFile("src/old.py", root / "src" / "old.py", on_disk=True),
        "src/pkg/new.py": UnsavedFile("src/pkg/new.py", root / "src" / "pkg" / "new.py", False),
        "node_modules/x.js": UnsavedFile(
            "node_modules/x.js", root / "node_modules" / "x.js", False
        ),
    }
    # A disk walk cannot find the new files: the listing names them, and the folders they open.
    assert listing.new_files() == {
        "src/pkg/new.py": root / "src" / "pkg" / "new.py",
        "node_modules/x.js": root / "node_modules" / "x.js",
    }
    assert listing.new_files(under="src/") == {"src/pkg/new.py": root / "src" / "pkg" / "new.py"}
    assert listing.new_children() == {
        "": {"src": True, "node_modules": True},
        "src/": {"pkg": True},
        "src/pkg/": {"new.py": False},
        "node_modules/": {"x.js": False},
    }
    # A search takes every buffer's text from the workspace, the shadowing one included.
    assert listing.texts() == {
        "src/old.py": "edited, not saved\n",
        "src/pkg/new.py": "only in the editor\n",
        "node_modules/x.js": "skipped folder\n",
    }


def test_a_listing_is_scoped_to_its_folder_skipped_folders_and_a_filter(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    workspace = BufferWorkspace(
        root,
        {
            root / "src" / "a.py": "a\n",
            root / "src" / "b.md": "b\n",
            root / "src" / "node_modules" / "c.py": "c\n",
            root / "top.py": "top\n",  # above the listed folder
        },
    )
    listing = WorkspaceListing(
        workspace, root / "src", skip_dirs={"node_modules"}, accept=lambda rel: rel.endswith(".py")
    )
    assert sorted(listing.unsaved) == ["a.py"]
    assert listing.texts() == {"a.py": "a\n"}
    assert sorted(WorkspaceListing(workspace, root / "src").unsaved) == [
        "a.py",
        "b.md",
        "node_modules/c.py",
    ]


def test_a_disk_workspace_or_none_lists_nothing_besides_the_disk(tmp_path: Path) -> None:
    (tmp_path / "f.py").write_text("x\n")
    for workspace in (DiskWorkspace(tmp_path), None):
        listing = WorkspaceListing(workspace, tmp_path)
        assert not listing
        assert listing.new_files() == {} and listing.new_children() == {} and listing.texts() == {}
