"""EditorPort: every call the server makes to the editor, and nothing else.

The session (lich_lsp.session) and the feature modules reach the editor only through this
Protocol. Two implementations: `PyglsEditor` (lich_lsp.pygls_adapter) speaks LSP over the wire
and is the only module that touches pygls internals; the in-memory fake editor in
`tests/lsp/fake_editor.py` runs the same session code in-process, in milliseconds.

Documents the editor opened are read through `text_document(uri)`: pygls keeps them in sync from
didOpen/didChange on the wire; the fake editor keeps its own pygls `Workspace` and tells the
session about opens, changes and saves as an editor would.

A request the editor answers with an error (or with something unreadable) raises
EditorRequestError; a request whose task is cancelled raises asyncio.CancelledError.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types

if TYPE_CHECKING:
    from pygls.workspace import TextDocument
    from pygls.workspace.position_codec import PositionCodec

ProgressValue = (
    types.WorkDoneProgressBegin | types.WorkDoneProgressReport | types.WorkDoneProgressEnd
)


class EditorRequestError(Exception):
    """The editor answered a request with an error, or with a reply that does not parse."""


class EditorPort(Protocol):
    """What the server asks of the editor: edits, saves, questions, progress, messages."""

    # --- documents and positions ---

    def text_document(self, uri: str) -> TextDocument | None:
        """The synced copy of an open document (unsaved text, version), or None if not open."""
        ...

    @property
    def position_codec(self) -> PositionCodec:
        """Converts between code points and the negotiated position encoding."""
        ...

    @property
    def position_encoding(self) -> str:
        """The negotiated position encoding ("utf-16", "utf-8", "utf-32")."""
        ...

    # --- requests (awaited) ---

    async def apply_edit(
        self, params: types.ApplyWorkspaceEditParams
    ) -> types.ApplyWorkspaceEditResult:
        """workspace/applyEdit."""
        ...

    async def save_documents(self, uris: list[str]) -> None:
        """lich/saveDocuments (clients declaring experimental.lich.saveDocuments)."""
        ...

    async def ask(self, params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
        """window/showMessageRequest; None when the user dismissed it."""
        ...

    async def show_document(self, params: types.ShowDocumentParams) -> None:
        """window/showDocument."""
        ...

    async def configuration(self, params: types.ConfigurationParams) -> list[Any]:
        """workspace/configuration."""
        ...

    async def create_progress(self, token: str) -> None:
        """window/workDoneProgress/create."""
        ...

    # --- notifications ---

    def progress(self, token: str, value: ProgressValue) -> None:
        """$/progress; after an End the token is forgotten."""
        ...

    def show_message(self, message: str, kind: types.MessageType) -> None:
        """window/showMessage."""
        ...

    def log_message(self, message: str, kind: types.MessageType) -> None:
        """window/logMessage."""
        ...

    def send_event(self, payload: dict[str, Any]) -> None:
        """lich/event (docs/lich-event.schema.json)."""
        ...

    def publish_diagnostics(self, uri: str, diagnostics: list[types.Diagnostic]) -> None:
        """textDocument/publishDiagnostics (the failing tests of the last run: lich_lsp.run_tests)."""
        ...
