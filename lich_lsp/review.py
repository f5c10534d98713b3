"""Review per hunk: the agent's pending changes stay on the server until the user answers each.

With `edit_mode: "review"` and the hunks style (`review_style`, see `review_style`), a task's
edits to existing files do not go out as one edit at its end: each changed region becomes a
pending **hunk** (id `<task>-<n>`, stable for its life) shown as a diagnostic (severity hint,
source `lich review`, code = the hunk id) with code actions Accept hunk / Reject hunk / Accept all
in file / Reject all. Plain diagnostics and code actions, so any LSP client can review (Neovim
0.7, Helix, Emacs); the VS Code extension adds CodeLens on top of the same diagnostics.

Hunks are line ranges of the file's text as the server last saw it (`ReviewFile.text`). Every
`didChange` carries them through the user's edits (lich_lsp.hunk_tracking); a hunk whose lines
the user changed is dropped (never applied to the wrong lines), and the model hears of it. When
the text changed without the server seeing each step (a full-document change, a file closed and
changed on disk), the same tracking runs over the line diff of the two texts. Accepting sends the
hunk as a versioned WorkspaceEdit through the same path as every other edit (lich_lsp.workspace
`send_changes`): one undo step in the editor.

What the user decides reaches the model: rejected and dropped hunks, a batch the editor did not
apply, and the user's edits to lines the agent changed during a task become notes (`ModelNotes`)
that the next agent turn receives as a user message (lich_core.workspace.user_notes_message).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from lich_core.settings import settings_of
from lich_lsp.arguments import resolve_uri
from lich_lsp.code_actions import kind_allowed
from lich_lsp.commands import ACCEPT_ALL, ACCEPT_HUNK, REJECT_ALL, REJECT_HUNK, REVIEW_LIST
from lich_lsp.contract import (
    HunkParams,
    ReviewAnswerResult,
    ReviewListResult,
    ReviewScopeParams,
    result_of,
)
from lich_lsp.edits import ClientFeatures
from lich_lsp.review_apply import ReviewApply
from lich_lsp.review_hunks import (
    REVIEW_KIND,
    Hunk,
    hunks_on_lines,
)

if TYPE_CHECKING:
    from lich_lsp.commands import CommandTable

ACCEPT_ALL_IN_FILE_TITLE = "Accept all in file"
REJECT_ALL_TITLE = "Reject all"
STYLE_HUNKS = "hunks"
STYLE_BATCH = "batch"


def review_style(config: Mapping[str, Any], caps: ClientFeatures) -> str:
    """ "hunks" or "batch" for this editor: `review_style` when it names one, else (auto) hunks,
    except for a client that shows change annotations (needsConfirmation) and did not declare
    `experimental.lich.reviewHunks` (VS Code without the lich extension's CodeLens takes the batch
    in its refactor preview)."""
    configured = settings_of(config).review_style
    if configured in (STYLE_HUNKS, STYLE_BATCH):
        return str(configured)
    if caps.review_hunks:
        return STYLE_HUNKS
    return STYLE_BATCH if caps.change_annotations else STYLE_HUNKS


class ReviewStore(ReviewApply):
    """Pending hunks of one editor session, per file; see the module docstring. Its state and
    tracking: lich_lsp.review_tracking; accept and reject: lich_lsp.review_apply."""

    # --- the commands ---

    def register(self, table: CommandTable) -> None:
        async def accept_hunk(params: HunkParams, request_id: Any) -> ReviewAnswerResult:
            answer = await self._accept_hunk_command(table, params, request_id)
            return result_of(ReviewAnswerResult, answer)

        async def reject_hunk(params: HunkParams, request_id: Any) -> ReviewAnswerResult:
            return result_of(ReviewAnswerResult, self.reject([params.hunk_id]))

        async def accept_all(params: ReviewScopeParams, request_id: Any) -> ReviewAnswerResult:
            answer = await self._accept_all_command(table, params, request_id)
            return result_of(ReviewAnswerResult, answer)

        async def reject_all(params: ReviewScopeParams, request_id: Any) -> ReviewAnswerResult:
            return result_of(ReviewAnswerResult, self._reject_all(params))

        async def review_list(params: ReviewScopeParams, request_id: Any) -> ReviewListResult:
            hunks = self.listing(self._scope_uri(REVIEW_LIST, params))
            return result_of(ReviewListResult, {"hunks": hunks})

        table.add(ACCEPT_HUNK, accept_hunk, typed=True)
        table.add(REJECT_HUNK, reject_hunk, typed=True)
        table.add(ACCEPT_ALL, accept_all, typed=True)
        table.add(REJECT_ALL, reject_all, typed=True)
        table.add(REVIEW_LIST, review_list, typed=True)

    async def _accept_hunk_command(
        self, table: CommandTable, params: HunkParams, request_id: Any
    ) -> dict[str, Any]:
        with table.cancellable(request_id):
            return await self.accept([params.hunk_id])

    def _scope_uri(self, command: str, params: ReviewScopeParams) -> str | None:
        if params.uri is not None:
            resolve_uri(command, self._root, params.uri)
        return params.uri

    async def _accept_all_command(
        self, table: CommandTable, params: ReviewScopeParams, request_id: Any
    ) -> dict[str, Any]:
        ids = self.ids(self._scope_uri(ACCEPT_ALL, params))
        if not ids:
            return {"ok": True, "accepted": [], "edited": [], "pending": len(self.pending())}
        with table.cancellable(request_id):
            return await self.accept(ids)

    def _reject_all(self, params: ReviewScopeParams) -> dict[str, Any]:
        ids = self.ids(self._scope_uri(REJECT_ALL, params))
        if not ids:
            return {"ok": True, "rejected": [], "pending": len(self.pending())}
        return self.reject(ids)

    # --- code actions ---

    def code_actions(
        self, params: types.CodeActionParams, *, literal_support: bool, tags: bool
    ) -> list[types.CodeAction | types.Command]:
        """Accept / Reject for the hunks on the requested lines, and the file-wide pair."""
        only = [str(kind) for kind in params.context.only] if params.context.only else None
        if not kind_allowed(REVIEW_KIND, only):
            return []
        uri = params.text_document.uri
        review_file = self._file_for_uri(uri)
        if review_file is None:
            return []
        self.sync(review_file)
        first, last = params.range.start.line, params.range.end.line
        # The line count, not the geometry: the text changed since the last request at every
        # keystroke, and building its line starts for this took milliseconds in a long file.
        here = hunks_on_lines(review_file, first, last)
        actions: list[types.CodeAction] = []

        def add(
            title: str, command: str, argument: dict[str, Any], llm: bool, hunk: Hunk | None = None
        ) -> None:
            actions.append(
                types.CodeAction(
                    title=title,
                    kind=REVIEW_KIND,
                    command=types.Command(title=title, command=command, arguments=[argument]),
                    diagnostics=[self.diagnostic(review_file, hunk)] if hunk is not None else None,
                    tags=[types.CodeActionTag.LlmGenerated] if llm and tags else None,
                )
            )

        for hunk in here:
            add(f"Accept hunk {hunk.hunk_id}", ACCEPT_HUNK, {"hunk_id": hunk.hunk_id}, True, hunk)
            add(f"Reject hunk {hunk.hunk_id}", REJECT_HUNK, {"hunk_id": hunk.hunk_id}, False, hunk)
        if review_file.hunks:
            add(ACCEPT_ALL_IN_FILE_TITLE, ACCEPT_ALL, {"uri": review_file.uri}, True)
            add(REJECT_ALL_TITLE, REJECT_ALL, {}, False)
        if literal_support:
            return list(actions)
        return [action.command for action in actions if action.command is not None]
