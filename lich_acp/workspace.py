"""AcpWorkspace: the Workspace seam over an ACP client's fs/* methods.

Reads: through `fs/read_text_file` when the client declared `fs.readTextFile` (its unsaved buffer
state), else the disk. Writes: through `fs/write_text_file` when it declared `fs.writeTextFile`,
after re-reading every file through the client just before writing and refusing the whole change
set (`edit_rejected: stale_document: ...`) when one is no longer the change's base text; else
`apply_to_disk` (atomic, all or nothing). Deletes always go to disk (ACP has no delete).
Paths are confined to the root. Commands: `command_host` (the client's terminals, when offered).
In review mode the changes collect in an overlay (later reads
see it) and are written at the end of the prompt, after one permission request.

The agent runs on its own thread (see lich_acp/__init__.py): a synchronous read blocks the
agent's loop while the client answers, never the connection.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lich_acp.events import ClientBridge
from lich_core.confined import read_bytes_within
from lich_core.errors import EditRejected, ToolError
from lich_core.hashline.byte_lines import ByteLines
from lich_core.test_results.report import TestReport
from lich_core.workspace import CommandHost, FileChange, apply_to_disk, encode_text, read_disk_text

log = logging.getLogger("lich.acp.workspace")

APPLY = "apply"
REVIEW = "review"


@dataclass(frozen=True)
class FsCapabilities:
    read: bool = False
    write: bool = False


@dataclass
class OverlayEntry:
    base_text: str | None  # before the prompt's first change (None: the file did not exist)
    text: str | None  # the latest text (None: deleted)


class AcpWorkspace:
    """One per prompt (its review overlay and its list of applied changes are its own)."""

    def __init__(
        self,
        root: Path,
        bridge: ClientBridge | None,
        fs: FsCapabilities,
        *,
        mode: str = APPLY,
        command_host: CommandHost | None = None,
    ) -> None:
        self.root = Path(root).resolve()
        self._bridge = bridge
        self._fs = fs
        self.mode = mode
        # The client's terminals (lich_acp.terminals) when it offers terminal/*: the terminal
        # tool runs its commands there (lich_core.workspace's command seam).
        self.command_host = command_host
        self._lock = asyncio.Lock()
        self.overlay: dict[Path, OverlayEntry] = {}
        # Changes applied (or staged, in review mode) since the last take_changes().
        self._applied: list[FileChange] = []

    # --- confinement ---

    def _confined(self, path: Path) -> Path:
        absolute = Path(os.path.normpath(os.path.join(self.root, path)))
        real = Path(os.path.realpath(absolute))
        if real != self.root and self.root not in real.parents:
            raise ToolError(f"path_escape: {path} is outside the workspace root {self.root}")
        return absolute

    # --- reads ---

    def _client_read(self, path: Path) -> str | None:
        """The client's text of `path` (None: the client has no such file)."""
        assert self._bridge is not None
        bridge = self._bridge
        try:
            response = bridge.call_sync(
                lambda: bridge.conn.read_text_file(session_id=bridge.session_id, path=str(path))
            )
        except Exception as err:  # noqa: BLE001 - a client error reads as "no such file"
            log.info("fs/read_text_file %s failed: %s", path, err)
            return None
        return str(response.content)

    def read_text(self, path: Path) -> str:
        path = self._confined(path)
        entry = self.overlay.get(path)
        if entry is not None:
            if entry.text is None:
                raise FileNotFoundError(str(path))
            return entry.text
        if self._fs.read and self._bridge is not None:
            text = self._client_read(path)
            if text is not None:
                return text
        return read_disk_text(path, self.root)

    def read_bytes(self, path: Path) -> bytes:
        path = self._confined(path)
        entry = self.overlay.get(path)
        if entry is not None:
            if entry.text is None:
                raise FileNotFoundError(str(path))
            return encode_text(entry.text)
        return read_bytes_within(self.root, path)

    def exists(self, path: Path) -> bool:
        path = self._confined(path)
        entry = self.overlay.get(path)
        if entry is not None:
            return entry.text is not None
        return path.exists()

    def overlay_paths(self) -> Iterable[Path]:
        return list(self.overlay)

    # --- what only some workspaces can do (lich_core.workspace.Workspace) ---

    # No user at hand to have asked for a tool call; the client's answers are text, not bytes.
    user_invoked = False

    def lines_behind(self, path: Path, text: str) -> ByteLines | None:
        return None

    def drain_user_notes(self) -> list[str]:
        return []

    async def sync_to_disk(self) -> str | None:
        # Review mode's overlay is the prompt's own until the client takes it; a test run reads
        # the files as they are on disk, as before.
        return None

    async def report_test_results(self, report: TestReport) -> None:
        return None

    # --- writes ---

    def take_changes(self) -> list[FileChange]:
        changes, self._applied = self._applied, []
        return changes

    async def apply(self, changes: Sequence[FileChange], label: str) -> None:
        changes = [self._confined_change(change) for change in changes]
        async with self._lock:
            if self.mode == REVIEW:
                self._stage(changes)
            else:
                await self.write(changes)
            self._applied.extend(changes)

    def _confined_change(self, change: FileChange) -> FileChange:
        path = self._confined(change.path)
        if path == change.path:
            return change
        return FileChange(path, change.kind, change.new_text, change.base_text, change.replacements)

    def _stage(self, changes: Sequence[FileChange]) -> None:
        for change in changes:
            entry = self.overlay.get(change.path)
            current = entry.text if entry is not None else self._current(change.path)
            if current != change.base_text:
                raise EditRejected(
                    f"stale_document: {change.path} changed since it was read; read it again"
                )
        for change in changes:
            entry = self.overlay.get(change.path)
            base = entry.base_text if entry is not None else change.base_text
            self.overlay[change.path] = OverlayEntry(base, change.new_text)

    def _current(self, path: Path) -> str | None:
        try:
            if self._fs.read and self._bridge is not None:
                text = self._client_read(path)
                if text is not None:
                    return text
            return read_disk_text(path, self.root)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def review_changes(self) -> list[FileChange]:
        """The overlay as one change set from the prompt's base texts to its final texts."""
        out: list[FileChange] = []
        for path, entry in self.overlay.items():
            if entry.text == entry.base_text:
                continue
            if entry.text is None:
                out.append(FileChange.delete(path, entry.base_text))
            else:
                out.append(FileChange.write(path, entry.text, entry.base_text))
        return out

    async def write(self, changes: Sequence[FileChange]) -> None:
        """Write a change set (all or nothing) through the client or to disk."""
        if not (self._fs.write and self._bridge is not None):
            await asyncio.to_thread(apply_to_disk, changes, self.root)
            return
        writes = [c for c in changes if c.kind == "write"]
        deletes = [c for c in changes if c.kind == "delete"]
        for change in writes:
            current = await asyncio.to_thread(self._current, change.path)
            if current != change.base_text:
                raise EditRejected(
                    f"stale_document: {change.path} changed in the editor since it was read; read it again"
                )
        if deletes:
            await asyncio.to_thread(apply_to_disk, deletes, self.root)
        done: list[FileChange] = []
        try:
            for change in writes:
                await self._client_write(change.path, change.new_text or "")
                done.append(change)
        except Exception as err:  # noqa: BLE001 - put back what was written, then refuse
            for change in reversed(done):
                try:
                    await self._client_write(change.path, change.base_text or "")
                except Exception:  # noqa: BLE001
                    log.warning("could not restore %s", change.path)
            raise EditRejected(f"client_error: fs/write_text_file failed: {err}") from err

    async def _client_write(self, path: Path, text: str) -> None:
        bridge = self._bridge
        assert bridge is not None

        async def write() -> object:
            return await bridge.conn.write_text_file(
                session_id=bridge.session_id, path=str(path), content=text
            )

        await bridge.call(write)
