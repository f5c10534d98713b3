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

import asyncio
import itertools
import logging
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from lich_core.errors import EditRejected, ToolError
from lich_core.hashline.replacements import line_replacements
from lich_core.settings import settings_of
from lich_core.vocabulary import LineReplacement
from lich_core.workspace import FileChange
from lich_lsp.arguments import get_str, resolve_uri, single_object
from lich_lsp.code_actions import kind_allowed
from lich_lsp.commands import ACCEPT_ALL, ACCEPT_HUNK, REJECT_ALL, REJECT_HUNK, REVIEW_LIST
from lich_lsp.edits import ClientFeatures, PositionMapper, hashline_line_starts
from lich_lsp.hunk_tracking import (
    LineEdit,
    Span,
    carry_sorted,
    line_edits_between,
    lines_of,
    splice_line_edit,
    track_span,
    track_spans,
)
from lich_lsp.paths import path_key, relative_path, uri_to_path

if TYPE_CHECKING:
    from lich_lsp.commands import CommandTable
    from lich_lsp.documents import DocumentStore
    from lich_lsp.messages import EditorMessages
    from lich_lsp.port import EditorPort

log = logging.getLogger("lich.lsp.review")

REVIEW_SOURCE = "lich review"
REVIEW_KIND = "quickfix.lich.review"
ACCEPT_ALL_IN_FILE_TITLE = "Accept all in file"
REJECT_ALL_TITLE = "Reject all"
STYLE_HUNKS = "hunks"
STYLE_BATCH = "batch"
# Lines of a hunk shown in its diagnostic message and in a note to the model.
PREVIEW_MAX_LINES = 12
PREVIEW_LINE_MAX_CHARS = 200
# Notes waiting for the model's next turn; older ones are dropped first (the count is said).
MAX_MODEL_NOTES = 20
NOTE_MAX_CHARS = 2_000
# Hunks refused because their file can no longer be read (a link out of the root): their ids are
# kept, so an accept or reject of one says why; the oldest are forgotten first.
MAX_REFUSED_HUNKS = 1_000
# Accepts lich stopped waiting for, kept per file to recognise the editor applying one late.
MAX_UNANSWERED_ACCEPTS = 8


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


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _clip_line(line: str) -> str:
    line = line.rstrip("\r\n")
    return line if len(line) <= PREVIEW_LINE_MAX_CHARS else line[: PREVIEW_LINE_MAX_CHARS - 1] + "…"


def preview(text: str, prefix: str) -> list[str]:
    lines = lines_of(text)
    shown = [prefix + _clip_line(line) for line in lines[:PREVIEW_MAX_LINES]]
    if len(lines) > PREVIEW_MAX_LINES:
        shown.append(f"{prefix}… ({len(lines) - PREVIEW_MAX_LINES} more lines)")
    return shown


class SendChanges(Protocol):
    """How an accept goes out: one change set as one WorkspaceEdit (lich_lsp.workspace.EditSender.send)."""

    async def __call__(
        self,
        changes: Sequence[FileChange],
        label: str,
        *,
        on_applied: Callable[[Sequence[FileChange]], None] | None = ...,
        on_late_apply: Callable[[Sequence[FileChange]], None] | None = ...,
    ) -> None: ...


class ModelNotes:
    """Notes for the model's next turn (the user's answers and edits in the editor), drained once."""

    def __init__(self) -> None:
        self._notes: deque[str] = deque()
        self._dropped = 0

    def add(self, note: str) -> None:
        note = note.strip()
        if not note:
            return
        if len(note) > NOTE_MAX_CHARS:
            note = note[: NOTE_MAX_CHARS - 1] + "…"
        self._notes.append(note)
        while len(self._notes) > MAX_MODEL_NOTES:
            self._notes.popleft()
            self._dropped += 1

    def drain(self) -> list[str]:
        notes = list(self._notes)
        if self._dropped:
            notes.insert(0, f"({self._dropped} older notes were dropped)")
        self._notes.clear()
        self._dropped = 0
        return notes

    def __len__(self) -> int:
        return len(self._notes)


@dataclass(eq=False)
class Hunk:
    hunk_id: str
    task_id: str
    label: str  # the task's edit label, "lich: <title>"
    start: int  # old lines [start, end) of ReviewFile.text (start == end: insert before `start`)
    end: int
    old_text: str  # those lines as they were when the hunk was proposed
    new_text: str  # what replaces them (whole lines)

    @property
    def span(self) -> Span:
        return Span(self.start, self.end)

    def summary(self) -> str:
        removed, added = self.end - self.start, len(lines_of(self.new_text))
        if not removed:
            return f"insert {plural(added, 'line')} before line {self.start + 1}"
        where = f"line {self.start + 1}" if removed == 1 else f"lines {self.start + 1}-{self.end}"
        if not added:
            return f"delete {where}"
        return f"replace {where} with {plural(added, 'line')}"


@dataclass(eq=False)
class ReviewFile:
    path: Path
    uri: str
    text: str  # the file's text the hunks' line numbers refer to
    # Sorted by start line (propose sorts them, carrying keeps the order): an edit finds the hunks
    # it touches by bisection (hunk_tracking.carry_sorted).
    hunks: list[Hunk] = field(default_factory=list)
    # No hunk of the file is longer than this many lines (a bound: only ever raised).
    longest: int = 0
    # `text`'s line starts for the hunks' ranges, built once per text: (text, mapper, line starts).
    geometry: tuple[str, PositionMapper, list[int]] | None = None
    # An accepted hunk is on its way to the editor: its echo (didChange) must not count as the
    # user's edit; the file catches up after the answer (ReviewStore.accept).
    busy: bool = False
    # Accepts whose answer lich stopped waiting for (timeout, cancel): (hunks, text they were
    # sent against, text they make). The editor applying one late is that accept, not the user.
    unanswered: list[tuple[list[Hunk], str, str]] = field(default_factory=list)


@dataclass
class ProposeOutcome:
    hunks: int = 0
    files: list[str] = field(default_factory=list)  # workspace-relative names
    dropped: list[str] = field(default_factory=list)  # one line each, for the user


class ReviewStore:
    """Pending hunks of one editor session, per file; see the module docstring."""

    def __init__(
        self,
        documents: DocumentStore,
        port: EditorPort,
        root: Path,
        messages: EditorMessages,
        send: SendChanges,
        record_accepted: Callable[[str, Sequence[FileChange]], None],
    ) -> None:
        self._documents = documents
        self._port = port
        self._root = root
        self._messages = messages
        self._send = send
        # Accepted hunks join their task's undo (lich.undoTask takes them back too).
        self._record_accepted = record_accepted
        self._files: dict[str, ReviewFile] = {}
        self.notes = ModelNotes()
        # Hunks whose accept is on its way to the editor: a reject of one is refused (hunk_busy).
        self._accepting: set[str] = set()
        # hunk id -> why it was refused (its file became unreadable, e.g. a link out of the root).
        self._refused: dict[str, str] = {}

    # --- the commands ---

    def register(self, table: CommandTable) -> None:
        table.add(
            ACCEPT_HUNK, lambda args, request_id: self._accept_hunk_command(table, args, request_id)
        )
        table.add(REJECT_HUNK, self._reject_hunk_command)
        table.add(
            ACCEPT_ALL, lambda args, request_id: self._accept_all_command(table, args, request_id)
        )
        table.add(REJECT_ALL, self._reject_all_command)
        table.add(REVIEW_LIST, self._review_list_command)

    async def _accept_hunk_command(
        self, table: CommandTable, args: tuple[Any, ...], request_id: Any
    ) -> dict[str, Any]:
        obj = single_object(ACCEPT_HUNK, args)
        hunk_id = get_str(ACCEPT_HUNK, obj, "hunk_id", required=True)
        assert hunk_id is not None
        with table.cancellable(request_id):
            return await self.accept([hunk_id])

    async def _reject_hunk_command(self, args: tuple[Any, ...], request_id: Any) -> dict[str, Any]:
        obj = single_object(REJECT_HUNK, args)
        hunk_id = get_str(REJECT_HUNK, obj, "hunk_id", required=True)
        assert hunk_id is not None
        return self.reject([hunk_id])

    def _scope_uri(self, command: str, args: tuple[Any, ...]) -> str | None:
        obj = single_object(command, args, required=False)
        uri = get_str(command, obj, "uri", required=False)
        if uri is not None:
            resolve_uri(command, self._root, uri)
        return uri

    async def _accept_all_command(
        self, table: CommandTable, args: tuple[Any, ...], request_id: Any
    ) -> dict[str, Any]:
        ids = self.ids(self._scope_uri(ACCEPT_ALL, args))
        if not ids:
            return {"ok": True, "accepted": [], "edited": [], "pending": len(self.pending())}
        with table.cancellable(request_id):
            return await self.accept(ids)

    async def _reject_all_command(self, args: tuple[Any, ...], request_id: Any) -> dict[str, Any]:
        ids = self.ids(self._scope_uri(REJECT_ALL, args))
        if not ids:
            return {"ok": True, "rejected": [], "pending": len(self.pending())}
        return self.reject(ids)

    async def _review_list_command(self, args: tuple[Any, ...], request_id: Any) -> dict[str, Any]:
        return {"hunks": self.listing(self._scope_uri(REVIEW_LIST, args))}

    # --- reading ---

    def _key(self, path: Path) -> str:
        return path_key(path)

    def _rel(self, path: Path) -> str:
        rel = relative_path(self._root, path)
        if Path(rel).is_absolute():
            # A file that became a link out of the root keeps the name the user knows it by.
            try:
                return Path(path).relative_to(self._root).as_posix()
            except ValueError:
                pass
        return rel

    def _file_for_uri(self, uri: str) -> ReviewFile | None:
        path = uri_to_path(uri)
        return self._files.get(self._key(path)) if path is not None else None

    def pending(self, uri: str | None = None) -> list[Hunk]:
        files = (
            self._files.values()
            if uri is None
            else [f for f in [self._file_for_uri(uri)] if f is not None]
        )
        hunks: list[Hunk] = []
        for review_file in list(files):
            self.sync(review_file)
            hunks.extend(review_file.hunks)
        return hunks

    def find(self, hunk_id: str) -> tuple[ReviewFile, Hunk] | None:
        for review_file in list(self._files.values()):
            self.sync(review_file)
            for hunk in review_file.hunks:
                if hunk.hunk_id == hunk_id:
                    return review_file, hunk
        return None

    def describe(self, review_file: ReviewFile, hunk: Hunk) -> dict[str, Any]:
        return {
            "hunk_id": hunk.hunk_id,
            "task_id": hunk.task_id,
            "uri": review_file.uri,
            "range": _range_json(self._range(review_file, hunk)),
            "start_line": hunk.start,
            "end_line": hunk.end,
            "old_text": hunk.old_text,
            "new_text": hunk.new_text,
            "summary": hunk.summary(),
        }

    def listing(self, uri: str | None = None) -> list[dict[str, Any]]:
        files = (
            self._files.values()
            if uri is None
            else [f for f in [self._file_for_uri(uri)] if f is not None]
        )
        listed: list[dict[str, Any]] = []
        for review_file in list(files):
            self.sync(review_file)
            listed.extend(self.describe(review_file, hunk) for hunk in review_file.hunks)
        return listed

    # --- proposing (the end of a review-mode task) ---

    def propose(self, task_id: str, label: str, changes: Sequence[FileChange]) -> ProposeOutcome:
        """Turn a task's edits of existing files into pending hunks; each change's base is the text
        the task started from, so edits the user made meanwhile are tracked first (a hunk on lines
        the user changed is dropped and said)."""
        outcome = ProposeOutcome()
        counter = itertools.count(1)  # a task proposes once: its ids are <task_id>-1, -2, ...
        store = self._documents
        for change in changes:
            assert (
                change.kind == "write"
                and change.base_text is not None
                and change.new_text is not None
            )
            rel = self._rel(change.path)
            current = store.current_text(change.path)
            base_lines = lines_of(change.base_text)
            proposed = [
                Hunk(
                    hunk_id=f"{task_id}-{next(counter)}",
                    task_id=task_id,
                    label=label,
                    start=r.start,
                    end=r.end,
                    old_text="".join(base_lines[r.start : r.end]),
                    new_text=r.text,
                )
                for r in sorted(change.replacements, key=lambda r: r.start)
            ]
            if current is None:
                for hunk in proposed:
                    self._drop_note(rel, hunk, "the file was deleted before it could be reviewed")
                outcome.dropped.append(f"{rel}: the file was deleted during the task")
                continue
            if current != change.base_text:
                survivors = self._carry(proposed, line_edits_between(change.base_text, current))
                for hunk in proposed:
                    if hunk not in survivors:
                        self._drop_note(rel, hunk, "the user edited those lines during the task")
                        outcome.dropped.append(
                            f"{rel}: {hunk.hunk_id} ({hunk.summary()}): you edited those lines"
                        )
                proposed = survivors
            if not proposed:
                continue
            key = self._key(change.path)
            review_file = self._files.get(key)
            if review_file is None:
                review_file = ReviewFile(Path(change.path), store.uri_for(change.path), current)
                self._files[key] = review_file
            else:
                self.sync(review_file)
            review_file.hunks = sorted(review_file.hunks + proposed, key=lambda h: (h.start, h.end))
            review_file.longest = max([review_file.longest, *(h.end - h.start for h in proposed)])
            outcome.hunks += len(proposed)
            if rel not in outcome.files:
                outcome.files.append(rel)
            self.publish(review_file)
        return outcome

    # --- following the text ---

    def _carry(self, hunks: Sequence[Hunk], edits: Sequence[LineEdit]) -> list[Hunk]:
        """The hunks an edit sequence does not hit, moved to their new lines (in place)."""
        spans = track_spans([h.span for h in hunks], edits)
        kept = []
        for hunk, span in zip(hunks, spans, strict=True):
            if span is not None:
                hunk.start, hunk.end = span.start, span.end
                kept.append(hunk)
        return kept

    def _rebase(
        self, review_file: ReviewFile, new_text: str, edits: Sequence[LineEdit] | None, why: str
    ) -> bool:
        """Carry the file's hunks to `new_text` (through `edits` when known exactly, else the
        diff); drops and notes the hunks hit. True when anything changed."""
        carried = self._carry_exact(review_file, new_text, edits) if edits is not None else None
        if carried is not None:
            hit, changed = carried
        else:
            original = review_file.hunks
            before = [(h.hunk_id, h.start, h.end) for h in original]
            lines = new_text.split("\n")
            kept = self._carry(original, line_edits_between(review_file.text, new_text))
            kept = [h for h in kept if _lines_match(lines, h)]
            kept_ids = {id(h) for h in kept}
            hit = [h for h in original if id(h) not in kept_ids]
            review_file.hunks = kept
            changed = [(h.hunk_id, h.start, h.end) for h in kept] != before
        rel = self._rel(review_file.path) if hit else ""
        for hunk in hit:
            self._drop_note(rel, hunk, why)
            self._messages.log(f"lich: dropped the proposed change {hunk.hunk_id} in {rel}: {why}")
        review_file.text = new_text
        return changed

    def _carry_exact(
        self, review_file: ReviewFile, new_text: str, edits: Sequence[LineEdit]
    ) -> tuple[list[Hunk], bool] | None:
        """The hunks carried through `edits` (which turn the file's text into `new_text`): (the
        hunks hit, whether any hunk moved or was hit). The kept hunks next to each edit must still
        read their old lines in `new_text`; when one does not, nothing changes and None is
        answered (the diff decides). Costs the hunks around the edits (and those below an edit
        that adds or removes lines), never every hunk of the file."""
        hunks = list(review_file.hunks)
        steps = [carry_sorted(hunks, edit, review_file.longest) for edit in edits]
        hit = [h for step in steps for h in step.hit]
        if len(steps) > 1:
            hit.sort(key=review_file.hunks.index)  # the file's order, as the notes were always said
        hit_ids = {id(h) for h in hit}
        checked = [h for step in steps for h in step.neighbours if id(h) not in hit_ids]
        if checked:
            lines = new_text.split("\n")
            if not all(_lines_match(lines, h) for h in checked):
                for step in reversed(steps):
                    step.undo_move()
                return None
        review_file.hunks = hunks
        return hit, bool(hit) or any(step.moved for step in steps)

    def sync(self, review_file: ReviewFile) -> None:
        """Catch up with the file's current text (what the user sees) if it moved unseen."""
        if review_file.busy:
            return
        try:
            current = self._documents.current_text(review_file.path)
        except (ToolError, OSError) as err:
            self._refuse_file(review_file, err)
            return
        if current == review_file.text:
            return
        if self._landed_late(review_file, current):
            return
        if current is None:
            for hunk in review_file.hunks:
                self._drop_note(self._rel(review_file.path), hunk, "the file was deleted")
            review_file.hunks = []
            review_file.text = ""
        else:
            self._rebase(review_file, current, None, "the user edited those lines")
        self._forget_if_empty(review_file)
        self.publish(review_file)

    def did_change(self, uri: str, content_changes: Sequence[Any]) -> None:
        """textDocument/didChange (after the server's copy was updated): move the file's hunks."""
        review_file = self._file_for_uri(uri)
        if review_file is None or review_file.busy:
            return
        doc = self._documents.document_for_uri(uri)
        if doc is None:
            return
        new_text = doc.source
        if new_text == review_file.text:
            return  # the echo of an accepted hunk: already accounted for
        if self._landed_late(review_file, new_text):
            return
        # Replay the changes on the text the hunks refer to; pygls' own document does the
        # position arithmetic (line breaks, the client's position encoding) exactly as for doc.
        text = review_file.text
        replayed: list[LineEdit] = []
        codec = self._port.position_codec
        exact = True
        for change in content_changes:
            change_range = getattr(change, "range", None)
            if change_range is None:
                exact = False  # a whole-document change: the diff decides
                break
            start, end = _change_offsets(text, codec, change_range)
            text, line_edit = splice_line_edit(text, start, end, change.text)
            replayed.append(line_edit)
        # Changes that did not start from our text (one went unseen) are left to the diff too.
        edits = replayed if exact and text == new_text else None
        if self._rebase(review_file, new_text, edits, "the user edited those lines"):
            self.publish(review_file)
        self._forget_if_empty(review_file)

    def _forget_if_empty(self, review_file: ReviewFile) -> None:
        if not review_file.hunks:
            # By identity: the path's real path moves when the file becomes a link.
            for key, known in list(self._files.items()):
                if known is review_file:
                    del self._files[key]

    def _refuse_file(self, review_file: ReviewFile, err: BaseException) -> None:
        """The file can no longer be read (turned into a link out of the root, a FIFO, no
        permission): its hunks are refused and dropped, the other files' hunks are served."""
        reason = str(err) if isinstance(err, ToolError) else f"unreadable: {err}"
        rel = self._rel(review_file.path)
        for hunk in review_file.hunks:
            self._refused[hunk.hunk_id] = reason
            self._drop_note(rel, hunk, reason)
        while len(self._refused) > MAX_REFUSED_HUNKS:
            del self._refused[next(iter(self._refused))]
        ids = ", ".join(h.hunk_id for h in review_file.hunks)
        self._messages.log(
            f"lich: refused the proposed changes {ids} in {rel}: {reason}",
            types.MessageType.Warning,
        )
        review_file.hunks = []
        review_file.unanswered = []
        self.publish(review_file)
        self._forget_if_empty(review_file)

    def _landed_late(self, review_file: ReviewFile, new_text: str | None) -> bool:
        """`new_text` is what an accept lich stopped waiting for makes: the editor applied it late.
        Its hunks count as accepted (not as lines the user edited); True when so."""
        review_file.unanswered = [
            entry
            for entry in review_file.unanswered
            if all(h in review_file.hunks for h in entry[0])
        ]
        for entry in review_file.unanswered:
            hunks, base, made = entry
            if new_text == made and review_file.text == base:
                review_file.unanswered.remove(entry)
                self._settle_accepted(review_file, hunks, made)
                return True
        return False

    def _settle_accepted(
        self, review_file: ReviewFile, live: Sequence[Hunk], new_text: str
    ) -> None:
        """The editor applied `live` (making `new_text`): drop them, move the others."""
        rest = [h for h in review_file.hunks if h not in live]
        # The accepted hunks' own edits, bottom first, carry the others to their new lines.
        steps = [
            LineEdit(h.start, h.end, len(lines_of(h.new_text)))
            for h in sorted(live, key=lambda h: -h.start)
        ]
        review_file.hunks = rest
        self._rebase(review_file, new_text, steps, "an accepted change overlapped it")
        self._forget_if_empty(review_file)
        self.sync(review_file)  # the user may have typed while the edit was on its way
        self.publish(review_file)

    # --- answering ---

    async def accept(self, hunk_ids: Iterable[str]) -> dict[str, Any]:
        """Apply these hunks (one WorkspaceEdit over their files, all or nothing).

        The editor's answer is awaited as long as send_changes allows (lich_lsp.workspace
        APPLY_EDIT_TIMEOUT_S); meanwhile the hunks cannot be rejected (hunk_busy). A cancel
        ($/cancelRequest) stops the wait: the hunks stay pending unless the editor answered applied.
        """
        wanted = list(dict.fromkeys(hunk_ids))
        chosen, missing, refused = self._collect(wanted)
        if not chosen:
            return self._unavailable(missing, refused)
        store = self._documents
        async with store.locked(f.path for f in chosen):
            changes: list[FileChange] = []
            plan: list[tuple[ReviewFile, list[Hunk], str]] = []
            for review_file, hunks in chosen.items():
                self.sync(review_file)
                live = [h for h in hunks if h in review_file.hunks]
                for hunk in hunks:
                    if hunk not in live:
                        if hunk.hunk_id in self._refused:
                            refused.append(hunk.hunk_id)
                        else:
                            missing.append(hunk.hunk_id)
                live = _without_overlaps(live)
                if not live:
                    continue
                new_text, replacements = _applied(review_file.text, live)
                changes.append(
                    FileChange(
                        review_file.path, "write", new_text, review_file.text, tuple(replacements)
                    )
                )
                plan.append((review_file, live, new_text))
            if not changes:
                if refused:
                    return self._unavailable(missing, refused)
                return _failure(
                    f"not_found: no pending change {', '.join(missing)} (the file changed; see the log)"
                )
            label = plan[0][1][0].label if len(plan) == 1 else "lich: accept reviewed changes"
            ids = [h.hunk_id for _, hunks, _ in plan for h in hunks]
            landed = False

            def applied(_: Sequence[FileChange]) -> None:
                # Called as soon as the editor says applied, also when this accept was cancelled meanwhile.
                nonlocal landed
                landed = True
                self._journal(changes, plan)

            for review_file, _, _ in plan:
                review_file.busy = True
            self._accepting.update(ids)
            try:
                await self._send(
                    changes,
                    label,
                    on_applied=applied,
                    on_late_apply=lambda late: self._accepted_late(late, changes, plan),
                )
            except ToolError as err:
                reason = err.reason if isinstance(err, EditRejected) else str(err)
                if reason.startswith("edit_timeout:"):
                    self._remember_unanswered(plan)
                self.notes.add(
                    f"Your proposed change {', '.join(ids)} could not be applied when the user accepted it: {reason}"
                )
                self._messages.show_message(
                    f"lich: could not apply {', '.join(ids)}: {reason}", types.MessageType.Warning
                )
                return _failure(str(err))
            except asyncio.CancelledError:
                if landed:
                    self._settle_all(plan)
                else:
                    self._remember_unanswered(plan)
                    self._messages.show_message(
                        f"lich: accepting {', '.join(ids)} was cancelled before the editor applied it; "
                        "the changes are still pending",
                        types.MessageType.Warning,
                    )
                raise
            finally:
                for review_file, _, _ in plan:
                    review_file.busy = False
                self._accepting.difference_update(ids)
        self._settle_all(plan)
        edited = [review_file.uri for review_file, _, _ in plan]
        result: dict[str, Any] = {
            "ok": True,
            "accepted": ids,
            "edited": edited,
            "pending": len(self.pending()),
        }
        if missing:
            result["missing"] = missing
        if refused:
            result["refused"] = self._refusals(refused)
        return result

    def _settle_all(self, plan: Sequence[tuple[ReviewFile, list[Hunk], str]]) -> None:
        for review_file, live, new_text in plan:
            review_file.busy = False
            self._settle_accepted(review_file, live, new_text)

    def _remember_unanswered(self, plan: Sequence[tuple[ReviewFile, list[Hunk], str]]) -> None:
        for review_file, live, new_text in plan:
            review_file.unanswered.append((list(live), review_file.text, new_text))
            del review_file.unanswered[:-MAX_UNANSWERED_ACCEPTS]

    def _accepted_late(
        self,
        late: Sequence[FileChange],
        changes: Sequence[FileChange],
        plan: Sequence[tuple[ReviewFile, list[Hunk], str]],
    ) -> None:
        """The editor applied an accept after lich stopped waiting (its editor part `late`):
        journal it, count its hunks as accepted if still pending, and tell the model."""
        keys = {self._key(c.path) for c in late}
        part = [
            (c, step) for c, step in zip(changes, plan, strict=True) if self._key(c.path) in keys
        ]
        if not part:
            return
        self._journal([c for c, _ in part], [step for _, step in part])
        for review_file, live, new_text in (step for _, step in part):
            entry = next(
                (u for u in review_file.unanswered if u[0] == live and u[2] == new_text), None
            )
            if entry is not None and all(h in review_file.hunks for h in live):
                review_file.unanswered.remove(entry)
                if review_file.text == entry[1]:
                    self._settle_accepted(review_file, live, new_text)
        ids = ", ".join(h.hunk_id for _, (_, live, _) in part for h in live)
        self.notes.add(
            f"Your proposed change {ids} was applied after all: the editor applied it after lich had stopped "
            "waiting for its answer. Read the file again before editing near it."
        )

    def _journal(
        self, changes: list[FileChange], plan: list[tuple[ReviewFile, list[Hunk], str]]
    ) -> None:
        """Accepted hunks become part of their task's undo (lich.undoTask takes them back too).

        `changes` and `plan` are parallel, one entry per file; a file's change goes to the task of
        its first accepted hunk (hunks of two tasks accepted at once in one file: the older one).
        """
        by_task: dict[str, list[FileChange]] = {}
        for change, (_, live, _) in zip(changes, plan, strict=True):
            by_task.setdefault(live[0].task_id, []).append(change)
        for task_id, task_changes in by_task.items():
            try:
                self._record_accepted(task_id, task_changes)
            except Exception:  # noqa: BLE001 - the edit is applied; only its undo step is lost
                log.warning("could not journal accepted hunks of %s", task_id, exc_info=True)

    def reject(self, hunk_ids: Iterable[str]) -> dict[str, Any]:
        """Drop these hunks and tell the model. A hunk whose accept is on its way to the editor is
        not rejected (`hunk_busy`): the editor may be applying it this moment."""
        wanted = list(dict.fromkeys(hunk_ids))
        chosen, missing, refused = self._collect(wanted)
        busy = [
            h.hunk_id for hunks in chosen.values() for h in hunks if h.hunk_id in self._accepting
        ]
        chosen = {
            f: kept
            for f, hunks in chosen.items()
            if (kept := [h for h in hunks if h.hunk_id not in busy])
        }
        if not chosen:
            if busy:
                return _failure(_busy_error(busy))
            return self._unavailable(missing, refused)
        rejected: list[str] = []
        for review_file, hunks in chosen.items():
            rel = self._rel(review_file.path)
            for hunk in hunks:
                review_file.hunks.remove(hunk)
                rejected.append(hunk.hunk_id)
                self.notes.add(
                    "\n".join(
                        [
                            f"The user rejected your proposed change {hunk.hunk_id} to {rel} ({hunk.summary()}, "
                            f'from the task "{_title(hunk.label)}"). It would have replaced:',
                            *(preview(hunk.old_text, "  ") or ["  (nothing)"]),
                            "with:",
                            *(preview(hunk.new_text, "  ") or ["  (nothing)"]),
                            "Do not make this change again unless the user asks for it.",
                        ]
                    )
                )
            self._forget_if_empty(review_file)
            self.publish(review_file)
        result: dict[str, Any] = {"ok": True, "rejected": rejected, "pending": len(self.pending())}
        if missing:
            result["missing"] = missing
        if busy:
            result["busy"] = busy
            result["busy_error"] = _busy_error(busy)
        if refused:
            result["refused"] = self._refusals(refused)
        return result

    def _collect(
        self, hunk_ids: Sequence[str]
    ) -> tuple[dict[ReviewFile, list[Hunk]], list[str], list[str]]:
        """(pending hunks by file, ids not pending, ids refused because their file is unreadable)."""
        chosen: dict[ReviewFile, list[Hunk]] = {}
        missing: list[str] = []
        refused: list[str] = []
        for hunk_id in hunk_ids:
            found = self.find(hunk_id)
            if found is None:
                (refused if hunk_id in self._refused else missing).append(hunk_id)
                continue
            review_file, hunk = found
            chosen.setdefault(review_file, []).append(hunk)
        return chosen, missing, refused

    def _refusals(self, refused: Sequence[str]) -> list[dict[str, str]]:
        return [
            {"hunk_id": hunk_id, "error": self._refused.get(hunk_id, "not_found")}
            for hunk_id in refused
        ]

    def _unavailable(self, missing: Sequence[str], refused: Sequence[str]) -> dict[str, Any]:
        """The failure when none of the hunks asked for can be answered: a refused one's reason
        (`path_escape: ...`) first, else not_found."""
        if refused:
            result = _failure(f"{self._refused[refused[0]]} (proposed change {refused[0]})")
            result["refused"] = self._refusals(refused)
            if missing:
                result["missing"] = list(missing)
            return result
        return _failure(
            f"not_found: no pending change {', '.join(missing)} (already accepted, rejected or dropped)"
        )

    def ids(self, uri: str | None = None) -> list[str]:
        return [h.hunk_id for h in self.pending(uri)]

    # --- notes for the model ---

    def _drop_note(self, rel: str, hunk: Hunk, why: str) -> None:
        self.notes.add(
            f"Your proposed change {hunk.hunk_id} to {rel} ({hunk.summary()}) was dropped without being applied: {why}. "
            "Read the file again before changing those lines."
        )

    # --- showing ---

    def _geometry(self, review_file: ReviewFile) -> tuple[PositionMapper, list[int]]:
        """The file text's position mapper and line starts, built once per text (every hunk's
        range needs them; building them per hunk made a 2,000-hunk file's diagnostics quadratic)."""
        text = review_file.text
        cached = review_file.geometry
        if cached is None or cached[0] is not text:
            cached = (
                text,
                PositionMapper(text, self._port.position_codec),
                hashline_line_starts(text),
            )
            review_file.geometry = cached
        return cached[1], cached[2]

    def _range(self, review_file: ReviewFile, hunk: Hunk) -> types.Range:
        text = review_file.text
        mapper, starts = self._geometry(review_file)

        def line_start(line: int) -> int:
            return starts[line] if line < len(starts) else len(text)

        # The line count from the line starts at hand (counting the text per hunk was quadratic).
        first, last = _shown_lines(hunk, len(starts) - (1 if starts[-1] == len(text) else 0))
        start_offset = line_start(first)
        # The end of the last shown line, before its line break (never the next line's start)...
        end_offset = line_start(last)
        while end_offset > line_start(last - 1) and text[end_offset - 1] in "\r\n":
            end_offset -= 1
        if end_offset == start_offset:
            # ...unless that leaves nothing (empty lines): Kate shows no marker for a zero-width range.
            end_offset = line_start(last)
        return types.Range(start=mapper.position(start_offset), end=mapper.position(end_offset))

    def diagnostic(self, review_file: ReviewFile, hunk: Hunk) -> types.Diagnostic:
        lines = [
            f"lich: proposed change {hunk.hunk_id} ({_title(hunk.label)}): {hunk.summary()}",
            *preview(hunk.old_text, "- "),
            *preview(hunk.new_text, "+ "),
        ]
        return types.Diagnostic(
            range=self._range(review_file, hunk),
            message="\n".join(lines),
            severity=types.DiagnosticSeverity.Hint,
            source=REVIEW_SOURCE,
            code=hunk.hunk_id,
            data={"hunk_id": hunk.hunk_id, "task_id": hunk.task_id},
        )

    def publish(self, review_file: ReviewFile) -> None:
        self._messages.publish_diagnostics(
            REVIEW_SOURCE,
            review_file.uri,
            [self.diagnostic(review_file, h) for h in review_file.hunks],
        )

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
        here = _hunks_on_lines(review_file, first, last)
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


def _line_count(text: str) -> int:
    """How many lines `lines_of(text)` has, without splitting the text."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _hunks_on_lines(review_file: ReviewFile, first: int, last: int) -> list[Hunk]:
    """The file's hunks whose shown lines (`_shown_lines`) meet lines [first, last], in the file's
    order. The hunks are sorted by start line and none is longer than `review_file.longest`: only
    those starting up to that many lines above `first` are looked at, not every hunk (a code
    action request comes with every cursor move)."""
    hunks = review_file.hunks
    count = _line_count(review_file.text)
    # Hunks starting at or past the end are shown on the last line (see _shown_lines).
    tail = bisect_left(hunks, count, key=lambda h: h.start) if count else len(hunks)
    here: list[Hunk] = []
    index = min(tail, bisect_right(hunks, last, key=lambda h: h.start)) - 1
    while index >= 0 and hunks[index].start > first - max(review_file.longest, 1):
        hunk = hunks[index]
        if max(hunk.end, hunk.start + 1) > first:
            here.append(hunk)
        index -= 1
    here.reverse()
    if tail < len(hunks) and count - 1 <= last and count > first:
        here.extend(hunks[tail:])
    return here


def _shown_lines(hunk: Hunk, count: int) -> tuple[int, int]:
    """The lines [first, last) a hunk's diagnostic covers (`count`: the text's line count): its own,
    or for an insertion the line it goes before (the last line for one at the end): never none,
    while the text has a line."""
    first, last = hunk.start, max(hunk.end, hunk.start + 1)
    if first >= count and count:
        first, last = count - 1, count
    return first, last


def _title(label: str) -> str:
    return label[len("lich: ") :] if label.startswith("lich: ") else label


def _failure(error: str) -> dict[str, Any]:
    return {"ok": False, "error": error}


def _busy_error(busy: Sequence[str]) -> str:
    return (
        f"hunk_busy: {', '.join(busy)} {'is' if len(busy) == 1 else 'are'} being applied (accepted, the editor has "
        "not answered yet); nothing rejected there"
    )


def _range_json(value: types.Range) -> dict[str, Any]:
    return {
        "start": {"line": value.start.line, "character": value.start.character},
        "end": {"line": value.end.line, "character": value.end.character},
    }


def _change_offsets(text: str, codec: PositionCodec, change_range: types.Range) -> tuple[int, int]:
    """Code point offsets of an LSP range in `text`, as pygls' TextDocument.offset_at_position
    computes them (its line split, its clamping), so the replay lands where pygls applied the
    change; the text is split once, not once per position and sum."""
    lines = tuple(text.splitlines(True))
    start = codec.position_from_client_units(lines, change_range.start)
    end = codec.position_from_client_units(lines, change_range.end)
    return (
        start.character + sum(map(len, lines[: start.line])),
        end.character + sum(map(len, lines[: end.line])),
    )


def _lines_match(lines: Sequence[str], hunk: Hunk) -> bool:
    """Whether lines [start, end) of a text split on `\\n` (`lines`) read the hunk's old text, as
    `"".join(lines_of(text)[start:end])` would (without splitting the text per hunk)."""
    if hunk.end <= hunk.start:
        return hunk.old_text == ""
    body = "\n".join(lines[hunk.start : hunk.end])
    return (body + "\n" if hunk.end < len(lines) else body) == hunk.old_text


def _without_overlaps(hunks: Sequence[Hunk]) -> list[Hunk]:
    """Hunks of one file that can go out as one edit. Hunks of one task never overlap; one of
    another task that does is left out (the accepted hunk then hits it, and it is dropped)."""
    kept: list[Hunk] = []
    for hunk in sorted(hunks, key=lambda h: (h.start, h.end)):
        if kept:
            previous = kept[-1]
            same_insertion = hunk.start == hunk.end == previous.start == previous.end
            if hunk.start < previous.end or same_insertion:
                continue
        kept.append(hunk)
    return kept


def _applied(text: str, hunks: Sequence[Hunk]) -> tuple[str, list[LineReplacement]]:
    """`text` with the (non-overlapping) hunks applied, and their replacements in its coordinates."""
    lines = lines_of(text)
    out: list[str] = []
    position = 0
    replacements: list[LineReplacement] = []
    for hunk in sorted(hunks, key=lambda h: h.start):
        out.extend(lines[position : hunk.start])
        out.append(hunk.new_text)
        replacements.append(LineReplacement(hunk.start, hunk.end, hunk.new_text))
        position = hunk.end
    out.extend(lines[position:])
    return "".join(out), replacements


# --- the agent's applied lines, and the user's edits to them during a task ---


@dataclass(eq=False)
class AgentLines:
    """The lines the agent changed in one file during a task (apply mode), in `text`'s numbering."""

    text: str  # the file's text when the spans were last carried
    spans: list[Span] = field(default_factory=list)


def _overlaps(span: Span, start: int, end: int) -> bool:
    return track_span(span, LineEdit(start, end, 0)) is None


def record_agent_lines(lines: AgentLines | None, change: FileChange) -> AgentLines | None:
    """`lines` after the agent applied `change` (a write): its new lines join the spans, and the
    earlier spans move with it (those it rewrote are replaced by the new ones)."""
    if change.kind != "write" or change.new_text is None:
        return None
    base = change.base_text or ""
    spans: list[Span | None] = []
    if lines is not None:
        spans = list(lines.spans)
        if lines.text != base:
            spans = track_spans(spans, line_edits_between(lines.text, base))
    ordered = sorted(change.replacements, key=lambda r: r.start)
    steps = [LineEdit(r.start, r.end, len(lines_of(r.text))) for r in reversed(ordered)]
    carried = [span for span in track_spans(spans, steps) if span is not None]
    offset = 0
    for r in ordered:
        count = len(lines_of(r.text))
        if count:
            carried.append(Span(r.start + offset, r.start + offset + count))
        offset += count - (r.end - r.start)
    return AgentLines(change.new_text, sorted(carried, key=lambda s: (s.start, s.end)))


def user_edit_note(rel: str, lines: AgentLines, current: str | None) -> str | None:
    """A note when the text moved on from `lines.text` in a way that touches the agent's lines
    (the user edited them); carries `lines` to `current` either way."""
    if current == lines.text:
        return None
    if current is None:
        lines.spans, lines.text = [], ""
        return f"{rel}, which you edited, no longer exists."
    replacements = sorted(line_replacements(lines.text, current), key=lambda r: r.start)
    hit_rows: list[str] = []
    offset = 0
    new_lines = lines_of(current)
    for r in replacements:
        count = len(lines_of(r.text))
        if any(_overlaps(span, r.start, r.end) for span in lines.spans):
            start = r.start + offset
            shown = new_lines[start : start + count]
            where = f"line {start + 1}" if count == 1 else f"lines {start + 1}-{start + count}"
            hit_rows.append(
                f"{where} now read:" if count else f"the lines before line {start + 1} were deleted"
            )
            hit_rows.extend("  " + _clip_line(line) for line in shown[:PREVIEW_MAX_LINES])
        offset += count - (r.end - r.start)
    survivors = track_spans(lines.spans, line_edits_between(lines.text, current))
    lines.spans = [span for span in survivors if span is not None]
    lines.text = current
    if not hit_rows:
        return None
    return "\n".join(
        [
            f"The user edited lines you had changed in {rel}:",
            *hit_rows,
            "Keep the user's version (do not revert it); read the file again before editing near it.",
        ]
    )


# --- user-facing words for a review's outcome (the model keeps the error prefixes) ---


def user_review_message(note: str) -> str:
    """Plain words for a review note that carries a machine prefix (`edit_rejected: ...`)."""
    text = note
    for prefix in (
        "edit_rejected: ",
        "review_declined: ",
        "review_unavailable: ",
        "stale_document: ",
        "review_cancelled: ",
    ):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    return text[:1].upper() + text[1:] if text else note
