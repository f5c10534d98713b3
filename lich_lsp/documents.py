"""DocumentStore: the server's view of the editor's open documents, and the text the user sees.

An open document's text comes from the editor's synced copy (unsaved text), every other file
from disk. An edit the editor accepted but has not echoed back yet (didChange/didOpen still on
the way) counts as the file's text until the echo arrives. Edits of one file are serialised
through `locked`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lich_core.workspace import read_disk_text
from lich_lsp.paths import path_key, path_to_uri, uri_to_path

if TYPE_CHECKING:
    from pygls.workspace import TextDocument

    from lich_lsp.messages import EditorMessages
    from lich_lsp.port import EditorPort


@dataclass
class Expectation:
    """Text the client accepted but has not reported back yet (didChange/didOpen still on the way)."""

    text: str
    version: int | None  # the document's version when the edit was sent; None if it was closed


class DocumentStore:
    """The server's view of open documents, plus edits the client accepted but not yet echoed."""

    def __init__(self, port: EditorPort, root: Path, messages: EditorMessages) -> None:
        self._port = port
        self._root = root
        self._messages = messages
        self._uri_by_key: dict[str, str] = {}
        self._expectations: dict[str, Expectation] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    # --- open documents ---

    def did_open(self, uri: str) -> None:
        path = uri_to_path(uri)
        if path is not None:
            key = path_key(path)
            self._uri_by_key[key] = uri
            self._expectations.pop(key, None)

    def did_close(self, uri: str) -> None:
        path = uri_to_path(uri)
        if path is not None:
            self._uri_by_key.pop(path_key(path), None)

    def did_save(self, uri: str) -> None:
        path = uri_to_path(uri)
        if path is not None and path_key(path) not in self._uri_by_key:
            # A closed file the editor saved for us: disk has the accepted text now.
            self._expectations.pop(path_key(path), None)

    def uri_for(self, path: Path) -> str:
        return self._uri_by_key.get(path_key(path)) or path_to_uri(path)

    def document(self, path: Path) -> TextDocument | None:
        uri = self._uri_by_key.get(path_key(path))
        if uri is None:
            return None
        return self._port.text_document(uri)

    def document_for_uri(self, uri: str) -> TextDocument | None:
        path = uri_to_path(uri)
        return self.document(path) if path is not None else None

    def open_documents(self) -> list[TextDocument]:
        """The open documents, without resolving their paths again (per keystroke callers)."""
        found = []
        for uri in self._uri_by_key.values():
            doc = self._port.text_document(uri)
            if doc is not None:
                found.append(doc)
        return found

    def open_paths(self) -> list[Path]:
        return [Path(key) for key in self._uri_by_key]

    def open_count(self) -> int:
        return len(self._uri_by_key)

    def has_buffer(self, path: Path) -> bool:
        """Open in the editor, or holding an accepted edit the editor has not echoed yet."""
        key = path_key(path)
        return key in self._uri_by_key or key in self._expectations

    # --- effective text ---

    def current_text(self, path: Path) -> str | None:
        """What the user sees: the echoed buffer, an accepted edit not echoed yet, or disk (None if absent)."""
        key = path_key(path)
        doc = self.document(path)
        expectation = self._expectations.get(key)
        if expectation is not None:
            if doc is None and expectation.version is None:
                return expectation.text
            if doc is not None and doc.version == expectation.version:
                return expectation.text
            self._expectations.pop(key, None)
        if doc is not None:
            return doc.source
        return self.disk_text(path)

    def disk_text(self, path: Path) -> str | None:
        try:
            return read_disk_text(path, self._root)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    async def current_text_async(self, path: Path) -> str | None:
        """current_text, with a disk read done in a worker thread (a slow disk never stalls the server)."""
        if self.has_buffer(path):
            return self.current_text(path)
        return await asyncio.to_thread(self.disk_text, path)

    def expect(self, path: Path, text: str | None, version: int | None) -> None:
        key = path_key(path)
        if text is None:
            self._expectations.pop(key, None)
        else:
            self._expectations[key] = Expectation(text, version)

    def expectation_paths(self) -> list[Path]:
        return [Path(key) for key in self._expectations]

    # --- serialising edits per file ---

    @contextlib.asynccontextmanager
    async def locked(self, paths: Iterable[Path]) -> Any:
        keys = sorted({path_key(p) for p in paths})
        locks = [self._locks.setdefault(key, asyncio.Lock()) for key in keys]
        busy = [key for key, lock in zip(keys, locks, strict=True) if lock.locked()]
        if busy:
            names = ", ".join(Path(key).name for key in busy)
            self._messages.log(f"lich: edit queued behind another edit to {names}")
        acquired: list[asyncio.Lock] = []
        try:
            for lock in locks:
                await lock.acquire()
                acquired.append(lock)
            yield
        finally:
            for lock in reversed(acquired):
                lock.release()
