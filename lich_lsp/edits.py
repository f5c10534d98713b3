"""FileChange -> WorkspaceEdit: minimal TextEdits, versions, resource operations, annotations.

Pure conversion: no I/O and no server. Line replacements are whole-line ranges over the text split
on `\\n` (the hashline convention); positions sent to the client follow LSP's own line breaks
(`\\r\\n`, `\\n`, `\\r`) and the negotiated position encoding, through pygls' position codec.
Each FileChange carries its replacements (computed once, by its producer, with
lich_core.hashline.replacements.line_replacements); this module sends exactly those, one TextEdit
each, and never diffs the texts itself.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from lich_core.vocabulary import LineReplacement
from lich_core.workspace import FileChange

LSP_LINE_BREAK = re.compile(r"\r\n|\r|\n")
HASHLINE_BREAK = re.compile(r"\n")


@dataclass(frozen=True)
class ClientFeatures:
    """What the client said it can do at `initialize`: WorkspaceEdit support, the lich
    extensions, and the requests the server may send it."""

    document_changes: bool = False
    create_files: bool = False
    delete_files: bool = False
    change_annotations: bool = False
    save_documents: bool = False  # experimental.lich.saveDocuments
    show_message_request: bool = False
    work_done_progress: bool = False
    show_document: bool = False
    configuration: bool = False  # workspace/configuration
    code_action_literals: bool = False  # CodeAction objects, not only Commands
    code_action_llm_tag: bool = False  # LSP 3.18 CodeActionTag.LLMGenerated in tagSupport.valueSet
    review_hunks: bool = (
        False  # experimental.lich.reviewHunks: shows pending hunks itself (CodeLens)
    )
    # workspace.applyEdit: the client applies a server's workspace/applyEdit whenever it comes.
    # Kate 22.12 does not declare it and applies one only within ~2 s of its own command, so a
    # task's edit (sent after a model call) is refused: such clients get review mode by default.
    apply_edit: bool = False
    # textDocument.inlineCompletion (LSP 3.18): the client shows ghost text, so completion
    # requests get no duplicate item.
    inline_completion: bool = False
    # A lich integration (any experimental.lich flag: the Emacs, Neovim and VS Code clients) asks
    # for the prompt itself when "Ask agent…" runs lich.ask without one.
    lich_client: bool = False
    # experimental.lich.taskNotifications: the client tells the user a task ended itself, from
    # the run_end/run_error events (VS Code: one notification with "Open chat"), so the server
    # sends no end-of-task window/showMessage.
    task_notifications: bool = False

    @property
    def can_ask_prompt(self) -> bool:
        """lich.ask without a prompt gets one: the client asks for text, or shows the quick prompts."""
        return self.lich_client or self.show_message_request

    @classmethod
    def from_client(cls, caps: types.ClientCapabilities) -> ClientFeatures:
        workspace = caps.workspace
        workspace_edit = workspace.workspace_edit if workspace else None
        document_changes = bool(workspace_edit and workspace_edit.document_changes)
        operations = set((workspace_edit.resource_operations or []) if workspace_edit else [])
        # Resource operations only exist inside documentChanges.
        create = document_changes and types.ResourceOperationKind.Create in operations
        delete = document_changes and types.ResourceOperationKind.Delete in operations
        annotations = bool(
            document_changes
            and workspace_edit
            and workspace_edit.change_annotation_support is not None
        )
        window = caps.window
        code_action = caps.text_document.code_action if caps.text_document else None
        return cls(
            document_changes=document_changes,
            create_files=create,
            delete_files=delete,
            change_annotations=annotations,
            save_documents=experimental_flag(caps, "saveDocuments"),
            show_message_request=bool(window and window.show_message is not None),
            inline_completion=bool(
                caps.text_document and caps.text_document.inline_completion is not None
            ),
            work_done_progress=bool(window and window.work_done_progress),
            show_document=bool(
                window and window.show_document is not None and window.show_document.support
            ),
            configuration=bool(workspace and workspace.configuration),
            code_action_literals=bool(code_action and code_action.code_action_literal_support),
            code_action_llm_tag=bool(
                code_action
                and code_action.tag_support
                and types.CodeActionTag.LlmGenerated in (code_action.tag_support.value_set or [])
            ),
            review_hunks=experimental_flag(caps, "reviewHunks"),
            apply_edit=bool(workspace and workspace.apply_edit),
            lich_client=bool(lich_experimental(caps)),
            task_notifications=experimental_flag(caps, "taskNotifications"),
        )


def lich_experimental(caps: types.ClientCapabilities) -> dict[str, Any]:
    """The client's `experimental.lich` object ({} when it declares none)."""
    experimental = caps.experimental
    lich = experimental.get("lich") if isinstance(experimental, dict) else None
    return lich if isinstance(lich, dict) else {}


def experimental_flag(caps: types.ClientCapabilities, name: str) -> bool:
    return bool(lich_experimental(caps).get(name))


class PositionMapper:
    """Character offsets in a text -> LSP positions in the client's encoding."""

    def __init__(self, text: str, codec: PositionCodec) -> None:
        self.text = text
        self.codec = codec
        self.line_starts = [0] + [match.end() for match in LSP_LINE_BREAK.finditer(text)]

    def position(self, offset: int) -> types.Position:
        line = bisect_right(self.line_starts, offset) - 1
        prefix = self.text[self.line_starts[line] : offset]
        return types.Position(line=line, character=self.codec.client_num_units(prefix))


def hashline_line_starts(text: str) -> list[int]:
    """Offset where each `\\n`-split line starts (plus len(text) after a final newline)."""
    return [0] + [match.end() for match in HASHLINE_BREAK.finditer(text)]


def text_edits(
    base_text: str, replacements: Sequence[LineReplacement], codec: PositionCodec
) -> list[types.TextEdit]:
    """One TextEdit per line replacement, in order, non-overlapping (as LSP requires)."""
    starts = hashline_line_starts(base_text)
    mapper = PositionMapper(base_text, codec)

    def offset_of_line(line: int) -> int:
        return starts[line] if line < len(starts) else len(base_text)

    edits = []
    for replacement in sorted(replacements, key=lambda r: (r.start, r.end)):
        start = mapper.position(offset_of_line(replacement.start))
        end = mapper.position(offset_of_line(replacement.end))
        edits.append(
            types.TextEdit(range=types.Range(start=start, end=end), new_text=replacement.text)
        )
    return edits


@dataclass
class EditEntry:
    """One file's part of a WorkspaceEdit."""

    uri: str
    change: FileChange
    version: int | None  # the synced version for an open document, else None
    annotation_id: str | None = None


def _annotated(edits: list[types.TextEdit], annotation_id: str | None) -> list[Any]:
    if annotation_id is None:
        return list(edits)
    return [
        types.AnnotatedTextEdit(range=e.range, new_text=e.new_text, annotation_id=annotation_id)
        for e in edits
    ]


def build_workspace_edit(
    entries: Sequence[EditEntry],
    caps: ClientFeatures,
    codec: PositionCodec,
    annotations: dict[str, types.ChangeAnnotation] | None = None,
) -> types.WorkspaceEdit:
    """The WorkspaceEdit for entries: documentChanges (versioned) when supported, else `changes`."""
    if caps.document_changes:
        document_changes: list[Any] = []
        for entry in entries:
            change = entry.change
            if change.kind == "delete":
                document_changes.append(
                    types.DeleteFile(
                        uri=entry.uri,
                        options=types.DeleteFileOptions(ignore_if_not_exists=True),
                        annotation_id=entry.annotation_id,
                    )
                )
                continue
            if change.base_text is None:
                document_changes.append(
                    types.CreateFile(
                        uri=entry.uri,
                        options=types.CreateFileOptions(overwrite=False, ignore_if_exists=False),
                        annotation_id=entry.annotation_id,
                    )
                )
            edits = text_edits(change.base_text or "", change.replacements, codec)
            document_changes.append(
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=entry.uri, version=None if change.base_text is None else entry.version
                    ),
                    edits=_annotated(edits, entry.annotation_id),
                )
            )
        return types.WorkspaceEdit(
            document_changes=document_changes, change_annotations=annotations or None
        )
    changes: dict[str, list[types.TextEdit]] = {}
    for entry in entries:
        change = entry.change
        changes[entry.uri] = text_edits(change.base_text or "", change.replacements, codec)
    return types.WorkspaceEdit(changes=changes)


def count_hunks(changes: Sequence[FileChange]) -> int:
    return sum(max(1, len(c.replacements)) if c.kind == "write" else 1 for c in changes)
