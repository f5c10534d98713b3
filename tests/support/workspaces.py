"""Workspaces for tool tests: disk plus "open editor buffers", recording every change set."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from lich_core.errors import EditRejected
from lich_core.workspace import DiskWorkspace, FileChange, apply_to_disk


class BufferWorkspace(DiskWorkspace):
    """Disk plus buffers whose unsaved text differs from disk, as an editor's workspace has.

    Changes to a buffered file update the buffer (after the same staleness check an editor makes);
    other files go to disk. Every change set and its label is kept in `applied`. With `reject`,
    every change set is refused the way an editor answering `applied: false` would.
    """

    def __init__(
        self, root: Path, buffers: dict[Path, str] | None = None, reject: str | None = None
    ) -> None:
        super().__init__(root)
        self.buffers = {Path(path): text for path, text in (buffers or {}).items()}
        self.reject = reject
        self.applied: list[tuple[list[FileChange], str]] = []

    def read_text(self, path: Path) -> str:
        if Path(path) in self.buffers:
            return self.buffers[Path(path)]
        return super().read_text(path)

    def exists(self, path: Path) -> bool:
        return Path(path) in self.buffers or super().exists(path)

    def overlay_paths(self) -> Iterable[Path]:
        return list(self.buffers)

    async def apply(self, changes: Sequence[FileChange], label: str) -> None:
        if self.reject:
            raise EditRejected(self.reject)
        self.applied.append((list(changes), label))
        buffered = [change for change in changes if Path(change.path) in self.buffers]
        for change in buffered:
            if self.buffers[Path(change.path)] != change.base_text:
                raise EditRejected("stale_document")
        apply_to_disk(
            [change for change in changes if Path(change.path) not in self.buffers], self.root
        )
        for change in buffered:
            self.buffers[Path(change.path)] = change.new_text or ""
