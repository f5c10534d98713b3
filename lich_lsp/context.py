"""The leaves every part of one editor session uses, built once (lich_lsp.session) and handed to
each part as one object: the editor (port), talking to the user (messages), the open documents,
the config holder, what the client can do (features) and the workspace root."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from lich_lsp.config import ConfigHolder
    from lich_lsp.documents import DocumentStore
    from lich_lsp.edits import ClientFeatures
    from lich_lsp.messages import EditorMessages
    from lich_lsp.port import EditorPort


@dataclass(frozen=True, kw_only=True)
class SessionContext:
    """One editor connection's shared leaves; each part keeps the ones it uses."""

    port: EditorPort
    messages: EditorMessages
    documents: DocumentStore
    holder: ConfigHolder
    features: ClientFeatures
    root: Path


class ContextLeaves:
    """The context's leaves read as attributes of the part that holds `ctx` (EditSender,
    EditorParts): `parts.documents` rather than `parts.ctx.documents`."""

    ctx: SessionContext

    @property
    def port(self) -> EditorPort:
        return self.ctx.port

    @property
    def messages(self) -> EditorMessages:
        return self.ctx.messages

    @property
    def documents(self) -> DocumentStore:
        return self.ctx.documents

    @property
    def holder(self) -> ConfigHolder:
        return self.ctx.holder

    @property
    def features(self) -> ClientFeatures:
        return self.ctx.features

    @property
    def root(self) -> Path:
        return self.ctx.root
