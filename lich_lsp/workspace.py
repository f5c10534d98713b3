"""EditorWorkspace: the agent reads what the user sees and edits the way the user edits.

Reads: an open document comes from the server's synced copy (unsaved text), everything else from
disk. Writes: `workspace/applyEdit`, one WorkspaceEdit per change set, after checking that every
file still has the text the tool computed its change from. Files the editor does not have open
follow the disk-coherence rule (see docs/lsp.md): through the editor when it can save them for
us (`experimental.lich.saveDocuments`) or when the user chose `disk_write_policy: "editor"`,
else written straight to disk, atomically, together with the editor part (all or nothing).

In review mode the changes collect in an in-memory overlay (the agent's own later reads see it)
and go out at the end of the task as one reviewed WorkspaceEdit. A file changed once keeps the
replacements its tool computed; a file changed several times gets them recomputed once, with
`line_replacements` from the text before the task's first change to its final text (the only
place changes are composed).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from lich_core.confined import read_bytes_within
from lich_core.errors import EditRejected
from lich_core.hashline.byte_lines import ByteLines
from lich_core.hashline.replacements import line_replacements
from lich_core.vocabulary import CancelToken, LineReplacement
from lich_core.workspace import CommandHost, FileChange, apply_to_disk, encode_text
from lich_lsp.context import ContextLeaves
from lich_lsp.edits import EditEntry, build_workspace_edit, count_hunks
from lich_lsp.paths import path_key, relative_path
from lich_lsp.pending_questions import Choice
from lich_lsp.port import EditorRequestError
from lich_lsp.review import STYLE_HUNKS, review_style
from lich_lsp.review_hunks import AgentLines, plural, record_agent_lines, user_edit_note

if TYPE_CHECKING:
    from lich_core.config import Config
    from lich_core.test_results.report import TestReport
    from lich_lsp.context import SessionContext
    from lich_lsp.documents import DocumentStore
    from lich_lsp.pending_questions import PendingQuestions
    from lich_lsp.review import ReviewStore

log = logging.getLogger("lich.lsp.workspace")

SAVE_DOCUMENTS_TIMEOUT_S = 10.0
# Files named in a message about unsaved buffers (the rest are counted).
MAX_NAMED_FILES = 5
# After a cancel, how long an edit already sent to the client may take to come back.
EDIT_SETTLE_TIMEOUT_S = 5.0
# How long the editor may take to answer workspace/applyEdit before lich stops waiting and the
# edit counts as not applied (disk part reverted). An editor applies an edit in milliseconds; one
# that ignores it (Kate after ~2 s) never answers, and an edit must not hold its files' lock for good.
APPLY_EDIT_TIMEOUT_S = 30.0
# The same for an edit whose change annotations ask the user to confirm it: the editor answers
# once the user has read the preview (VS Code's refactor preview).
APPLY_PREVIEW_TIMEOUT_S = 600.0
REVIEW_APPLY = "Apply"
REVIEW_DISCARD = "Discard"


@dataclass(frozen=True, kw_only=True)
class EditSender(ContextLeaves):
    """What sending a change set to the editor uses (send_changes): the documents, what the client
    can do, the disk-write policy, the editor and the user."""

    ctx: SessionContext

    def route(self, change: FileChange) -> str:
        return route_change(self, change)

    async def send(
        self,
        changes: Sequence[FileChange],
        label: str,
        workspace: EditorWorkspace | None = None,
        *,
        annotate: bool = False,
        on_applied: Applied | None = None,
        on_late_apply: Applied | None = None,
    ) -> None:
        await send_changes(
            self,
            changes,
            label,
            workspace,
            annotate=annotate,
            on_applied=on_applied,
            on_late_apply=on_late_apply,
        )


@dataclass(frozen=True, kw_only=True)
class EditorParts(ContextLeaves):
    """What an EditorWorkspace uses of its editor session (one set per session, shared by its workspaces)."""

    ctx: SessionContext
    sender: EditSender
    review: ReviewStore
    questions: PendingQuestions
    publish_test_results: Callable[[TestReport], object]


@dataclass
class OverlayEntry:
    base_text: str | None  # text before the task's first change (None: the file did not exist)
    text: str | None  # the task's latest text (None: deleted)
    # base_text -> text: the tool's own for one change, recomputed when a later change composes.
    replacements: tuple[LineReplacement, ...]


class EditorWorkspace:
    """A lich_core Workspace over the editor's buffers; one per task (its review overlay is its own)."""

    # Commands run here, on the server's machine; buffers are text, not bytes read from disk.
    command_host: CommandHost | None = None

    def __init__(self, parts: EditorParts, *, mode: str = "apply", title: str = "lich") -> None:
        self._parts = parts
        self._store: DocumentStore = parts.documents
        self.root = parts.root
        self.mode = mode
        self.title = title
        self.overlay: dict[str, tuple[Path, OverlayEntry]] = {}
        self.edited_uris: list[str] = []
        # Edits sent to the editor and not answered yet; a cancel does not stop them (see send_changes).
        self.in_flight: set[asyncio.Future[None]] = set()
        # The editor's user asked for this very tool call (lich.runTests): an "ask" approval
        # policy counts as answered (lich_lsp.approvals).
        self.user_invoked = False
        # Called with each change set the editor applied (a task's undo journal, lich_lsp.journal).
        self.on_applied: Callable[[Sequence[FileChange]], None] | None = None
        self.task_id = "t"  # the task's id (TaskManager sets it): review hunk ids start with it
        # Plain words for the user about the review's outcome (flush_review); errors stay the model's.
        self.review_summary: str | None = None
        # Lines this task changed per file (apply mode), to tell the model when the user edits them.
        self.agent_lines: dict[str, tuple[Path, AgentLines]] = {}
        # Apply mode: files whose edit the editor did not apply (applied: false, no answer) and why,
        # until an edit of that file lands.
        self.refused: dict[str, str] = {}
        # The settings of the task using this workspace, pinned when its run starts (TaskManager),
        # so a config reloaded meanwhile does not change how its edits are reviewed or written.
        self.config: Config | None = None

    def task_config(self) -> Config:
        """The config this workspace's task runs with; the session's current one before (or
        without) a task."""
        return self.config if self.config is not None else self._parts.holder.config

    async def settle(self, timeout_s: float = EDIT_SETTLE_TIMEOUT_S) -> bool:
        """Wait for edits still on their way to the editor; False if some are still unanswered."""
        pending = {future for future in self.in_flight if not future.done()}
        if pending:
            await asyncio.wait(pending, timeout=timeout_s)
        return all(future.done() for future in pending)

    # --- Workspace protocol: reads ---

    def _text_or_none(self, path: Path) -> str | None:
        entry = self.overlay.get(path_key(path))
        if entry is not None:
            return entry[1].text
        return self._store.current_text(Path(path))

    def read_text(self, path: Path) -> str:
        text = self._text_or_none(Path(path))
        if text is None:
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return text

    def read_bytes(self, path: Path) -> bytes:
        path = Path(path)
        if path_key(path) in self.overlay or self._store.has_buffer(path):
            return encode_text(self.read_text(path))
        return read_bytes_within(self.root, path)

    def exists(self, path: Path) -> bool:
        path = Path(path)
        entry = self.overlay.get(path_key(path))
        if entry is not None:
            return entry[1].text is not None
        if self._store.has_buffer(path):
            return self._store.current_text(path) is not None
        return path.exists()

    def lines_behind(self, path: Path, text: str) -> ByteLines | None:
        return None

    def overlay_paths(self) -> Iterable[Path]:
        seen: dict[str, Path] = {}
        for path in self._store.open_paths() + self._store.expectation_paths():
            seen.setdefault(path_key(path), path)
        for key, (path, entry) in self.overlay.items():
            if entry.text is None:
                seen.pop(key, None)
            else:
                seen.setdefault(key, path)
        return list(seen.values())

    # --- Workspace protocol: writes ---

    async def apply(self, changes: Sequence[FileChange], label: str) -> None:
        if not changes:
            return
        async with self._store.locked(c.path for c in changes):
            self._check_not_stale(changes)
            if self.mode == "review":
                self._record_overlay(changes)
                return
            try:
                await self._parts.sender.send(changes, label or self.title, self)
            except EditRejected as err:
                # The tool reports it to the model; the task's final message reports it to the user.
                for change in changes:
                    self.refused[self._store.uri_for(change.path)] = err.reason
                raise
            for change in changes:
                self.refused.pop(self._store.uri_for(change.path), None)  # a later edit landed
            self._remember_agent_lines(changes)

    def _check_not_stale(self, changes: Sequence[FileChange]) -> None:
        for change in changes:
            if self._text_or_none(change.path) != change.base_text:
                rel = relative_path(self.root, change.path)
                raise EditRejected(
                    f"stale_document: {rel} changed in the editor since it was read; read it again"
                )

    def _record_overlay(self, changes: Sequence[FileChange]) -> None:
        for change in changes:
            key = path_key(change.path)
            new_text = change.new_text if change.kind == "write" else None
            if key in self.overlay:
                entry = self.overlay[key][1]
                entry.text = new_text
                # Compose: one diff from the task's base to the latest text, never a chain of edits.
                entry.replacements = (
                    () if new_text is None else line_replacements(entry.base_text or "", new_text)
                )
            else:
                self.overlay[key] = (
                    Path(change.path),
                    OverlayEntry(change.base_text, new_text, change.replacements),
                )

    # --- before and after a process reads the files (run_tests) ---

    def unsaved_paths(self) -> list[Path]:
        """Open documents whose text differs from disk (what a process would not see)."""
        unsaved = []
        for path in self._store.open_paths():
            text = self._store.current_text(path)
            if text is not None and text != self._store.disk_text(path):
                unsaved.append(path)
        return unsaved

    async def sync_to_disk(self) -> str | None:
        """Make disk match the editor's buffers; a one-line problem when it could not.

        Editors that declare experimental.lich.saveDocuments are asked to save the buffers that
        differ; with any other editor nothing is written behind the user's back: the problem
        names the unsaved files instead.
        """
        unsaved = self.unsaved_paths()
        if not unsaved:
            return None
        names = ", ".join(relative_path(self.root, path) for path in unsaved[:MAX_NAMED_FILES])
        if len(unsaved) > MAX_NAMED_FILES:
            names += f" and {len(unsaved) - MAX_NAMED_FILES} more"
        if not self._parts.features.save_documents:
            return f"{names} have unsaved changes and this editor cannot be asked to save them; save them and run again"
        await save_documents(self._parts.sender, [self._store.uri_for(path) for path in unsaved])
        still = [path for path in unsaved if path in self.unsaved_paths()]
        if still:
            return f"the editor did not save {', '.join(relative_path(self.root, p) for p in still[:MAX_NAMED_FILES])}"
        return None

    async def report_test_results(self, report: TestReport) -> None:
        self._parts.publish_test_results(report)

    # --- review mode ---

    def pending_changes(self) -> list[FileChange]:
        pending = []
        for path, entry in self.overlay.values():
            if entry.text == entry.base_text:
                continue
            if entry.text is None:
                if entry.base_text is None:
                    continue
                pending.append(FileChange.delete(path, entry.base_text))
            else:
                pending.append(
                    FileChange(path, "write", entry.text, entry.base_text, entry.replacements)
                )
        return pending

    def discard_overlay(self) -> None:
        self.overlay.clear()

    async def flush_review(self, label: str) -> str:
        """Hand the overlay to the review; returns a one-line outcome (for the editor's client and
        the transcript) and sets `review_summary` (plain words for the user). Hunks style: the
        edits of existing files become pending hunks (lich_lsp.review) and only new and deleted
        files go through the batch; batch style: one reviewed edit. A refusal raises EditRejected
        and leaves a note for the model's next turn."""
        changes = self.pending_changes()
        self.overlay.clear()
        if not changes:
            return "no changes"
        if review_style(self.task_config(), self._parts.features) != STYLE_HUNKS:
            return await self._flush_batch(changes, label)
        hunkable = [c for c in changes if c.kind == "write" and c.base_text is not None]
        outcome = self._parts.review.propose(self.task_id, label, hunkable)
        parts: list[str] = []
        words: list[str] = []
        if outcome.hunks:
            parts.append(
                f"{plural(outcome.hunks, 'change')} pending review in {', '.join(outcome.files)}"
            )
            words.append(
                f"{plural(outcome.hunks, 'change')} to review in {', '.join(outcome.files)}: accept or reject "
                "each from the code actions on its lines (lich review)."
            )
        if outcome.dropped:
            parts.append(
                f"dropped {len(outcome.dropped)}: the user edited those lines during the task"
            )
            words.append("Dropped: " + "; ".join(outcome.dropped) + ".")
        rest = [c for c in changes if c not in hunkable]
        if rest:
            try:
                parts.append(await self._flush_batch(rest, label))
                words.append(self.review_summary or "")
            except EditRejected as err:
                parts.append(str(err))
                words.append(self.review_summary or str(err))
        self.review_summary = " ".join(w for w in words if w) or None
        return "; ".join(parts) or "no changes"

    async def _flush_batch(self, changes: Sequence[FileChange], label: str) -> str:
        """One reviewed edit: change annotations (a preview) or a question; see flush_review."""
        caps = self._parts.features
        files = len(changes)
        hunks = count_hunks(changes)
        async with self._store.locked(c.path for c in changes):
            for change in changes:
                if self._store.current_text(change.path) != change.base_text:
                    rel = relative_path(self.root, change.path)
                    self._refused(f"you edited {rel} during the task")
                    raise EditRejected(
                        f"stale_document: {rel} changed in the editor during the task; nothing applied"
                    )
            if not caps.change_annotations:
                # Bounded like a preview: the question holds the files' lock.
                applied = await self._ask_apply(
                    f"{label}: apply {plural(hunks, 'change')} to {plural(files, 'file')}?"
                )
                if applied is None:
                    self._refused(
                        f"the question was not answered within {APPLY_PREVIEW_TIMEOUT_S:g} s"
                    )
                    raise EditRejected(
                        f"review_declined: the question was not answered within {APPLY_PREVIEW_TIMEOUT_S:g} s; nothing applied"
                    )
                if not applied:
                    self._refused("you chose Discard")
                    raise EditRejected("review_declined: the user discarded the changes")
                await self._send_reviewed(changes, label, annotate=False, hunks=hunks)
            else:
                await self._send_reviewed(changes, label, annotate=True, hunks=hunks)
        self.review_summary = f"Applied {plural(hunks, 'change')} to {plural(files, 'file')}."
        return f"applied {hunks} changes to {files} files"

    async def _ask_apply(self, message: str) -> bool | None:
        """Apply or Discard: a question with buttons where the editor has them, else a pending
        question (a diagnostic whose code actions answer it: Kate, Helix), so the user's own action
        applies the batch. None when it is not answered within APPLY_PREVIEW_TIMEOUT_S."""
        parts = self._parts
        if not parts.features.show_message_request:
            questions = parts.questions
            choices = (Choice("apply", REVIEW_APPLY), Choice("discard", REVIEW_DISCARD))
            question = questions.post("review", message, "the agent's changes", choices)
            answer = await questions.wait(question, CancelToken(), APPLY_PREVIEW_TIMEOUT_S)
            return None if answer is None else answer == "apply"
        # The request is not cancelled (pygls fails on a late answer to a cancelled request); it
        # is left unanswered.
        request = asyncio.ensure_future(
            parts.port.ask(
                types.ShowMessageRequestParams(
                    type=types.MessageType.Info,
                    message=message,
                    actions=[
                        types.MessageActionItem(REVIEW_APPLY),
                        types.MessageActionItem(REVIEW_DISCARD),
                    ],
                )
            )
        )
        try:
            await asyncio.wait({request}, timeout=APPLY_PREVIEW_TIMEOUT_S)
        except asyncio.CancelledError:
            request.add_done_callback(_ignore_outcome)
            raise
        if not request.done():
            request.add_done_callback(_ignore_outcome)
            return None
        picked = request.result()
        return picked is not None and picked.title == REVIEW_APPLY

    async def _send_reviewed(
        self, changes: Sequence[FileChange], label: str, *, annotate: bool, hunks: int
    ) -> None:
        try:
            await self._parts.sender.send(changes, label, self, annotate=annotate)
        except EditRejected as err:
            if annotate and not err.reason.startswith(_NOT_THE_EDITORS_ANSWER):
                # The editor answered applied: false: VS Code's refactor preview does when the
                # user applied it with every change unticked.
                self._refused(f"0 of {plural(hunks, 'change')} accepted in the preview")
                raise EditRejected(
                    f"review_declined: the user accepted none of the {plural(hunks, 'change')} in the preview (applied: false)"
                ) from None
            self._refused(f"the editor did not apply them ({err.reason})")
            raise

    def _refused(self, why: str) -> None:
        """The batch applied nothing: plain words for the user, a note for the model's next turn."""
        self.review_summary = f"No changes applied: {why}."
        self._parts.review.notes.add(
            f'None of your edits from the task "{self.title.removeprefix("lich: ")}" were applied: {why}. '
            "The files are as they were before that task; read them again before editing."
        )

    # --- notes for the model's next turn (lich_core.workspace.user_notes_message) ---

    def drain_user_notes(self) -> list[str]:
        """The review's notes (answers to earlier tasks' hunks and batches) and the user's edits
        to lines this task changed since the last turn."""
        notes = self._parts.review.notes.drain()
        for key, (path, lines) in list(self.agent_lines.items()):
            note = user_edit_note(
                relative_path(self.root, path), lines, self._store.current_text(path)
            )
            if note is not None:
                notes.append(note)
            if not lines.spans:
                self.agent_lines.pop(key, None)
        return notes

    def _remember_agent_lines(self, changes: Sequence[FileChange]) -> None:
        for change in changes:
            key = path_key(change.path)
            previous = self.agent_lines.get(key)
            lines = record_agent_lines(previous[1] if previous else None, change)
            if lines is None or not lines.spans:
                self.agent_lines.pop(key, None)
            else:
                self.agent_lines[key] = (Path(change.path), lines)


# EditRejected reasons of send_changes that are not the editor's own applied: false.
_NOT_THE_EDITORS_ANSWER = (
    "client_error:",
    "write_failed:",
    "stale_file:",
    "unreadable:",
    "unsupported:",
    "edit_timeout:",
)


def route_change(sender: EditSender, change: FileChange, config: Config | None = None) -> str:
    """ "editor" or "disk": where one file's change goes (the disk-coherence rule in docs/lsp.md),
    by `config`'s disk_write_policy (a task's own; default: the session's current config)."""
    store = sender.documents
    caps = sender.features
    policy = (config if config is not None else sender.holder.config).settings.disk_write_policy
    if store.has_buffer(change.path):
        if change.kind == "delete" and not caps.delete_files:
            rel = relative_path(sender.root, change.path)
            raise EditRejected(
                f"unsupported: the editor cannot delete files and {rel} is open in it; close it first"
            )
        return "editor"
    if change.kind == "delete":
        if policy == "disk" or (policy == "auto" and not caps.save_documents):
            return "disk"
        return "editor" if caps.delete_files else "disk"
    if change.base_text is None and not caps.create_files:
        return "disk"  # the editor has no way to create it
    if policy == "disk":
        return "disk"
    if policy == "editor":
        return "editor"
    return "editor" if caps.save_documents else "disk"


def _revert_disk(changes: Sequence[FileChange], root: Path) -> str | None:
    """Put the disk part of a change set back; None, or why it could not be (then it stays)."""
    if not changes:
        return None
    undo = [
        FileChange.write(c.path, c.base_text, c.new_text if c.kind == "write" else None)
        if c.base_text is not None
        else FileChange.delete(c.path, c.new_text)
        for c in changes
    ]
    try:
        apply_to_disk(undo, root)
    except Exception as err:  # noqa: BLE001 - report, the original error is the one that matters
        log.error("could not revert disk writes after a rejected edit: %s", err)
        return str(err)
    return None


def _annotation_id(index: int) -> str:
    return f"lich-file-{index}"


Applied = Callable[[Sequence[FileChange]], None]


async def send_changes(
    sender: EditSender,
    changes: Sequence[FileChange],
    label: str,
    workspace: EditorWorkspace | None = None,
    *,
    annotate: bool = False,
    on_applied: Applied | None = None,
    on_late_apply: Applied | None = None,
) -> None:
    """Write one change set: disk part first, then one WorkspaceEdit; all or nothing.

    The editor's answer is awaited at most APPLY_EDIT_TIMEOUT_S (APPLY_PREVIEW_TIMEOUT_S for an
    annotated edit): then the disk part is put back and `edit_timeout:` raised. A cancel waits
    EDIT_SETTLE_TIMEOUT_S more for the answer, so an edit the editor applies at once is known as
    applied; after that the disk part is put back too. `on_applied` (and the workspace's own)
    runs once the editor said applied, also when the caller was cancelled meanwhile. Should the
    editor apply an edit lich stopped waiting for, its editor part is reported to the user and
    handed to `on_late_apply` (by default the workspace's journal), never lost unrecorded.
    """
    if on_late_apply is None and workspace is not None:
        on_late_apply = workspace.on_applied
    sending = asyncio.ensure_future(
        _send(sender, changes, label, workspace, annotate, on_applied, on_late_apply)
    )
    if workspace is not None:
        workspace.in_flight.add(sending)
        sending.add_done_callback(workspace.in_flight.discard)
    try:
        await asyncio.shield(sending)
    except asyncio.CancelledError:
        sending.add_done_callback(_note_outcome_after_cancel)
        try:
            await asyncio.wait({sending}, timeout=EDIT_SETTLE_TIMEOUT_S)
        finally:
            if not sending.done():
                # Stop waiting: _send puts the disk part back and watches for a late answer.
                sending.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait({sending})
        raise


def _ignore_outcome(future: asyncio.Future[Any]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.info("a question lich stopped waiting for failed: %s", future.exception())


def _note_outcome_after_cancel(sending: asyncio.Future[None]) -> None:
    # Nobody awaits the edit any more (the cancel is what the task reports); log its fate.
    if not sending.cancelled() and sending.exception() is not None:
        log.info("edit answered after its task was cancelled: %s", sending.exception())


async def _send(
    sender: EditSender,
    changes: Sequence[FileChange],
    label: str,
    workspace: EditorWorkspace | None,
    annotate: bool,
    on_applied: Applied | None,
    on_late_apply: Applied | None,
) -> None:
    store = sender.documents
    caps = sender.features
    root = sender.root
    editor_changes: list[FileChange] = []
    disk_changes: list[FileChange] = []
    config = workspace.task_config() if workspace is not None else None
    for change in changes:
        if route_change(sender, change, config) == "editor":
            editor_changes.append(change)
        else:
            disk_changes.append(change)

    if disk_changes:
        apply_to_disk(disk_changes, root)  # raises EditRejected, and then nothing was written

    entries: list[EditEntry] = []
    annotations: dict[str, types.ChangeAnnotation] = {}
    for index, change in enumerate(editor_changes):
        doc = store.document(change.path)
        annotation = None
        if annotate:
            annotation = _annotation_id(index)
            annotations[annotation] = types.ChangeAnnotation(
                label=f"{label}: {relative_path(root, change.path)}",
                needs_confirmation=True,
                description=f"{label}: {relative_path(root, change.path)}",
            )
        entries.append(
            EditEntry(store.uri_for(change.path), change, doc.version if doc else None, annotation)
        )

    if entries:
        edit = build_workspace_edit(entries, caps, sender.port.position_codec, annotations or None)
        timeout_s = APPLY_PREVIEW_TIMEOUT_S if annotations else APPLY_EDIT_TIMEOUT_S
        # The request itself is never cancelled: pygls would fail on its late answer, and the
        # answer, whenever it comes, says whether the editor applied it (_watch_late_answer).
        request = asyncio.ensure_future(
            sender.port.apply_edit(types.ApplyWorkspaceEditParams(edit=edit, label=label))
        )
        try:
            await asyncio.wait({request}, timeout=timeout_s)
        except asyncio.CancelledError:
            kept = _revert_disk(disk_changes, root)
            _watch_late_answer(
                sender, request, entries, label, "the edit was cancelled", on_late_apply, kept
            )
            raise
        if not request.done():
            kept = _revert_disk(disk_changes, root)
            why = f"the editor did not answer within {timeout_s:g} s"
            _watch_late_answer(sender, request, entries, label, why, on_late_apply, kept)
            raise EditRejected(
                f"edit_timeout: {why}; nothing applied" + _kept_words(disk_changes, root, kept)
            )
        try:
            result = request.result()
        except EditorRequestError as err:
            _revert_disk(disk_changes, root)
            raise EditRejected(f"client_error: {err}") from None
        except Exception as err:  # noqa: BLE001 - a broken response is a rejection, not a crash
            _revert_disk(disk_changes, root)
            raise EditRejected(f"client_error: {err}") from None
        applied = bool(getattr(result, "applied", False))
        if not applied:
            _revert_disk(disk_changes, root)
            reason = (
                getattr(result, "failure_reason", None)
                or "the editor did not apply the edit (applied: false)"
            )
            raise EditRejected(reason)
        for entry in entries:
            change = entry.change
            store.expect(
                change.path, change.new_text if change.kind == "write" else None, entry.version
            )

    uris = [store.uri_for(c.path) for c in changes]
    if workspace is not None:
        for uri in uris:
            if uri not in workspace.edited_uris:
                workspace.edited_uris.append(uri)
        if workspace.on_applied is not None:
            workspace.on_applied(changes)
    if on_applied is not None:
        on_applied(changes)
    if entries and caps.save_documents:
        await save_documents(sender, [e.uri for e in entries if e.change.kind == "write"])


def _kept_words(disk_changes: Sequence[FileChange], root: Path, kept: str | None) -> str:
    if kept is None:
        return ""
    names = ", ".join(relative_path(root, c.path) for c in disk_changes[:MAX_NAMED_FILES])
    return f" in the editor, but the disk write of {names} could not be put back ({kept})"


# Edits lich stopped waiting for whose answer is still to come: kept alive until it does.
_UNANSWERED: set[asyncio.Future[Any]] = set()


def _watch_late_answer(
    sender: EditSender,
    request: asyncio.Future[Any],
    entries: Sequence[EditEntry],
    label: str,
    why: str,
    on_late_apply: Applied | None,
    kept: str | None,
) -> None:
    """lich gave up on `request` (timeout or cancel) and reported the edit as not applied; if the
    editor applies it after all, its part is known applied: the user is told, and `on_late_apply`
    records it (a task's undo journal, a hunk's accept), so lich.undoTask can take it back."""
    if kept is not None:
        sender.messages.show_message(
            f"lich: {label}: {why}; the disk write could not be put back ({kept})",
            types.MessageType.Error,
        )

    def answered(done: asyncio.Future[Any]) -> None:
        _UNANSWERED.discard(done)
        if (
            done.cancelled()
            or done.exception() is not None
            or not getattr(done.result(), "applied", False)
        ):
            log.info("an edit lich stopped waiting for was not applied (%s)", why)
            return
        changes = [entry.change for entry in entries]
        for entry in entries:
            change = entry.change
            sender.documents.expect(
                change.path, change.new_text if change.kind == "write" else None, entry.version
            )
        names = ", ".join(relative_path(sender.root, c.path) for c in changes[:MAX_NAMED_FILES])
        recorded = "; it is in the undo journal" if on_late_apply is not None else ""
        sender.messages.show_message(
            f'lich: the editor applied "{label}" to {names} after lich had stopped waiting for it ({why}){recorded}',
            types.MessageType.Warning,
        )
        if on_late_apply is not None:
            try:
                on_late_apply(changes)
            except Exception:  # noqa: BLE001 - the edit landed; only its record is lost
                log.exception("could not record a late-applied edit")

    _UNANSWERED.add(request)
    request.add_done_callback(answered)


async def save_documents(sender: EditSender, uris: list[str]) -> bool:
    """Ask the editor to save buffers so disk matches them (clients with experimental.lich.saveDocuments)."""
    if not uris:
        return True
    try:
        await asyncio.wait_for(sender.port.save_documents(uris), SAVE_DOCUMENTS_TIMEOUT_S)
    except asyncio.CancelledError:
        raise
    except Exception as err:  # noqa: BLE001 - the edit stands; the user is told disk may lag
        sender.messages.log(
            f"lich: the editor did not save {len(uris)} edited files: {err}",
            types.MessageType.Warning,
        )
        return False
    return True
