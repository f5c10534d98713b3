"""The review's pending hunks following the file's text (see lich_lsp.review): proposing them at
the end of a review-mode task, carrying them through the user's edits (didChange, unseen changes,
an accept the editor applied late), and showing them as diagnostics."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types

from lich_core.errors import ToolError
from lich_core.workspace import FileChange
from lich_lsp.edits import PositionMapper, hashline_line_starts
from lich_lsp.hunk_tracking import (
    LineEdit,
    carry_sorted,
    line_edits_between,
    lines_of,
    splice_line_edit,
    track_spans,
)
from lich_lsp.paths import path_key, relative_path, uri_to_path
from lich_lsp.review_hunks import (
    REVIEW_SOURCE,
    Hunk,
    ModelNotes,
    ProposeOutcome,
    ReviewFile,
    change_offsets,
    lines_match,
    preview,
    range_json,
    shown_lines,
    task_title,
)

if TYPE_CHECKING:
    from lich_lsp.documents import DocumentStore
    from lich_lsp.messages import EditorMessages
    from lich_lsp.port import EditorPort

# Hunks refused because their file can no longer be read (a link out of the root): their ids are
# kept, so an accept or reject of one says why; the oldest are forgotten first.
MAX_REFUSED_HUNKS = 1_000


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


class ReviewTracking:
    """Pending hunks of one editor session, per file, kept in step with the text; answered by
    lich_lsp.review_apply.ReviewApply, commanded by lich_lsp.review.ReviewStore."""

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
            "range": range_json(self._range(review_file, hunk)),
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
            kept = [h for h in kept if lines_match(lines, h)]
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
            if not all(lines_match(lines, h) for h in checked):
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
            start, end = change_offsets(text, codec, change_range)
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
        first, last = shown_lines(hunk, len(starts) - (1 if starts[-1] == len(text) else 0))
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
            f"lich: proposed change {hunk.hunk_id} ({task_title(hunk.label)}): {hunk.summary()}",
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
