"""Paths and URIs: one spelling per file, and names for messages. A leaf: every part of the LSP
face that meets a URI or names a file uses these, and they import nothing of lich_lsp."""

from __future__ import annotations

import os
from pathlib import Path

from pygls.uris import from_fs_path, to_fs_path


def path_key(path: str | os.PathLike[str]) -> str:
    """One spelling per file, so a URI from the editor and a path from a tool meet."""
    return os.path.realpath(os.fspath(path))


def uri_to_path(uri: str) -> Path | None:
    fs_path = to_fs_path(uri)
    return Path(fs_path) if fs_path else None


def path_to_uri(path: Path) -> str:
    return from_fs_path(os.fspath(path)) or path.as_uri()


def relative_path(root: Path, path: Path) -> str:
    """`path` relative to the workspace root for messages (as given when outside it)."""
    try:
        return Path(path_key(path)).relative_to(path_key(root)).as_posix()
    except ValueError:
        return str(path)
