"""The Workspace seam: the one place tools read and change file text.

`DiskWorkspace` reads and writes the file system (CLI, tests). The language server provides an
`EditorWorkspace` that reads open buffers and turns changes into `workspace/applyEdit`. Either
way a change set is all-or-nothing: every file is checked against the text the tool computed its
change from, and if any check or write fails, nothing is left changed.
"""

from __future__ import annotations

import asyncio
import os
import stat
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from lich_core.errors import EditRejected

TEXT_ENCODING = "utf-8"
# Undecodable bytes survive a read/write round trip instead of failing the read.
TEXT_ERRORS = "surrogateescape"


@dataclass(frozen=True)
class LineReplacement:
    """Replace old lines [start, end) (0-based, end exclusive) with `text`.

    `text` holds whole lines with their line terminators (it may be empty: a deletion). Applied
    to the old text, a file's replacements (non-overlapping) give its new text; the editor layer
    sends each one as a TextEdit, so a one-line change stays a one-line edit.
    """

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class FileChange:
    path: Path
    kind: Literal["write", "delete"]
    # New full text for a write; None for a delete.
    new_text: str | None
    # The text this change was computed from; None means the file did not exist. A workspace
    # refuses the whole change set when a file no longer matches its base (someone edited it).
    base_text: str | None
    # Minimal line-range edits from base_text to new_text, when the tool knows them.
    replacements: tuple[LineReplacement, ...] | None = None


@runtime_checkable
class Workspace(Protocol):
    root: Path

    def read_text(self, path: Path) -> str:
        """Current text of a file (an open buffer's unsaved text in the editor)."""
        ...

    def read_bytes(self, path: Path) -> bytes: ...

    def exists(self, path: Path) -> bool: ...

    def overlay_paths(self) -> Iterable[Path]:
        """Files whose current text may differ from disk (open editor buffers)."""
        ...

    async def apply(self, changes: Sequence[FileChange], label: str) -> None:
        """Apply all changes or none; raise EditRejected with the reason on refusal."""
        ...


def read_disk_text(path: Path) -> str:
    with open(path, encoding=TEXT_ENCODING, errors=TEXT_ERRORS, newline="") as handle:
        return handle.read()


def encode_text(text: str) -> bytes:
    return text.encode(TEXT_ENCODING, errors=TEXT_ERRORS)


def _current_text_or_none(path: Path) -> str | None:
    try:
        return read_disk_text(path)
    except (FileNotFoundError, NotADirectoryError):
        return None  # a file in place of a parent directory: the target cannot exist


def _write_temp_beside(path: Path, text: str) -> Path:
    """Write `text` to a temp file in the target's directory, keeping the target's mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".lich-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(encode_text(text))
            handle.flush()
            os.fsync(handle.fileno())
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            mode = 0o666 & ~current_umask()
        os.chmod(temp_name, mode)
    except BaseException:
        _remove_quietly(Path(temp_name))
        raise
    return Path(temp_name)


def current_umask() -> int:
    """The process umask, read without changing it where the OS allows.

    os.umask can only be read by setting it; in the window between the two calls, a file created
    by another thread (find_files and grep run in threads) would get mode 0o666.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def _remove_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


class DiskWorkspace:
    """Reads and writes the file system directly, atomically per file and per change set."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()
        self._lock = asyncio.Lock()

    def read_text(self, path: Path) -> str:
        return read_disk_text(path)

    def read_bytes(self, path: Path) -> bytes:
        return Path(path).read_bytes()

    def exists(self, path: Path) -> bool:
        return Path(path).exists()

    def overlay_paths(self) -> Iterable[Path]:
        return ()

    async def apply(self, changes: Sequence[FileChange], label: str) -> None:
        async with self._lock:
            apply_to_disk(changes)


def apply_to_disk(changes: Sequence[FileChange]) -> None:
    """All-or-nothing write of a change set: validate all, stage all, then swap all in.

    If a swap fails part-way, files already swapped are put back to their base text, so the
    change set never lands half-applied.
    """
    for change in changes:
        try:
            current = _current_text_or_none(change.path)
        except OSError as err:  # a directory in the way, no permission: refuse, never raise raw
            raise EditRejected(f"unreadable: {change.path}: {err.strerror or err}") from err
        if current != change.base_text:
            raise EditRejected(f"stale_file: {change.path} changed since it was read; read it again")

    staged: list[tuple[FileChange, Path | None]] = []
    try:
        for change in changes:
            if change.kind == "write":
                assert change.new_text is not None
                staged.append((change, _write_temp_beside(change.path, change.new_text)))
            else:
                staged.append((change, None))
    except OSError as err:
        for _, temp in staged:
            if temp is not None:
                _remove_quietly(temp)
        raise EditRejected(f"write_failed: {err}") from err

    done: list[FileChange] = []
    try:
        for change, temp in staged:
            if temp is not None:
                os.replace(temp, change.path)
            else:
                os.unlink(change.path)
            done.append(change)
    except OSError as err:
        for _, temp in staged:
            if temp is not None and temp.exists():
                _remove_quietly(temp)
        for change in reversed(done):
            _restore(change)
        raise EditRejected(f"write_failed: {err}") from err


def _restore(change: FileChange) -> None:
    if change.base_text is None:
        _remove_quietly(change.path)
    else:
        os.replace(_write_temp_beside(change.path, change.base_text), change.path)
