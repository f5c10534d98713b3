"""`lich.undoTask {task_id?}`: undo every change an agent task made, as one editor edit.

The task's changes come from the undo journal (lich_lsp.journal). For each file the inverse is
planned against the text the user sees now (lich_lsp.undo_rebase): as the task left it, it is
undone outright; changed by the user since, the inverse is rebased through those edits when they
do not touch the task's lines, and the file is refused, with the reason, when they do. Everything
that can be undone goes out as ONE WorkspaceEdit through the same path as the task's own edits
(versioned documentChanges or `changes`, closed files by the disk-write policy, a save request
after), so it is one undo step in the editor and no git is involved. Files refused stay in the
journal: undo again once the conflict is resolved.

Without a task id the editor is offered the recent undoable tasks (window/showMessageRequest);
lich.status lists them too (`undoable_tasks`), for clients that pick themselves. The outcome is
shown to the user with window/showMessage (a code action's result reaches no one else) and
returned: `{task_id, title, ok, files: [{uri, path, outcome, reason?, lines?}], task_running,
message, error?}`. An undo while the task is still running only says so (`task_running: true`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from lich_core.errors import EditRejected
from lich_core.workspace import FileChange
from lich_lsp.arguments import BadArguments
from lich_lsp.commands import UNDO_TASK
from lich_lsp.contract import UndoTaskParams, UndoTaskResult, result_of
from lich_lsp.journal import MAX_JOURNAL_TASKS, JournalEntry
from lich_lsp.paths import uri_to_path
from lich_lsp.undo_rebase import Step, UndoPlan, plan_undo

if TYPE_CHECKING:
    from lich_lsp.commands import CommandTable
    from lich_lsp.context import SessionContext
    from lich_lsp.journal import TaskJournal
    from lich_lsp.review_hunks import ModelNotes
    from lich_lsp.tasks import TaskManager
    from lich_lsp.workspace import EditSender

log = logging.getLogger("lich.lsp.undo")

# Tasks offered when lich.undoTask comes without a task id (buttons of one message).
MAX_CHOICES = 5
CONFLICT = "undo_conflict"
FAILED = "undo_failed"


class TaskUndo:
    """lich.undoTask, the undoable tasks of lich.status, and "Undo task" code actions."""

    def __init__(
        self,
        *,
        ctx: SessionContext,
        journal: TaskJournal,
        sender: EditSender,
        tasks: TaskManager,
        notes: ModelNotes,
    ) -> None:
        # What the user took back is told to the model's next turn (it must not redo it).
        self._notes = notes
        self._documents = ctx.documents
        self._journal = journal
        self._sender = sender
        self._tasks = tasks
        self._features = ctx.features
        self._port = ctx.port
        self._messages = ctx.messages
        self._root = ctx.root

    def register(self, table: CommandTable) -> None:
        table.add(UNDO_TASK, self.undo_task, typed=True)

    async def undo_task(self, params: UndoTaskParams, request_id: Any) -> UndoTaskResult:
        return result_of(UndoTaskResult, await self._undo_task(params.task_id))

    async def _undo_task(self, task_id: str | None) -> dict[str, Any]:
        journal = self._journal
        if task_id is None:
            undoable = journal.undoable()
            if not undoable:
                return self._nothing(
                    None,
                    "",
                    "nothing_to_undo: no task in the undo journal has changes left to undo",
                )
            task_id = await self._pick(undoable)
            if task_id is None:
                return {
                    "task_id": None,
                    "ok": False,
                    "dismissed": True,
                    "files": [],
                    "task_running": False,
                    "message": "",
                }
        entry = journal.get(task_id)
        if entry is None:
            raise BadArguments(
                f"{UNDO_TASK}: no task {task_id!r} in the undo journal "
                f"(it keeps the last {MAX_JOURNAL_TASKS} tasks that changed files)"
            )
        if entry.undone or not entry.files:
            return self._nothing(
                entry, entry.title, f"already_undone: task {task_id} has no changes left to undo"
            )
        return await self._undo(entry)

    async def _pick(self, undoable: Sequence[JournalEntry]) -> str | None:
        offered = list(undoable[:MAX_CHOICES])
        if not self._features.show_message_request:
            listed = "; ".join(f"{e.task_id} ({e.title})" for e in offered)
            raise BadArguments(
                f"{UNDO_TASK}: no task_id given, and this editor cannot show a choice of tasks "
                f"(no window/showMessageRequest support); pass {{task_id}}; recent tasks: {listed}"
            )
        answer = await self._port.ask(
            types.ShowMessageRequestParams(
                type=types.MessageType.Info,
                message="lich: undo which task?",
                actions=[types.MessageActionItem(title=choice_title(e)) for e in offered],
            )
        )
        if answer is None:
            return None
        for entry in offered:
            if choice_title(entry) == answer.title:
                return entry.task_id
        return None

    def _running(self, task_id: str) -> bool:
        task = self._tasks.tasks.get(task_id)
        return task is not None and task.state == "running"

    def undoable_tasks(self) -> list[dict[str, Any]]:
        """lich.status's `undoable_tasks`: newest first."""
        return [entry.summary(self._running(entry.task_id)) for entry in self._journal.undoable()]

    def _nothing(self, entry: JournalEntry | None, title: str, error: str) -> dict[str, Any]:
        task_id = entry.task_id if entry is not None else None
        message = f"lich: nothing to undo: {error.split(': ', 1)[1]}"
        self._messages.show_message(message, types.MessageType.Info)
        return {
            "task_id": task_id,
            "title": title,
            "ok": False,
            "files": [],
            "task_running": bool(task_id and self._running(task_id)),
            "message": message,
            "error": error,
        }

    async def _undo(self, entry: JournalEntry) -> dict[str, Any]:
        task_running = self._running(entry.task_id)
        if not entry.files:  # another undo of this task went first (checked again under the locks)
            return self._nothing(
                entry,
                entry.title,
                f"already_undone: task {entry.task_id} has no changes left to undo",
            )
        files, error = await self.undo_entries([entry], f"lich: undo {entry.title}")
        if files is None:
            return self._nothing(
                entry,
                entry.title,
                f"already_undone: task {entry.task_id} has no changes left to undo",
            )
        problems = [report for report in files if report["outcome"] in ("refused", "failed")]
        message, kind = _message(entry, files, task_running)
        self._messages.show_message(message, kind)
        result: dict[str, Any] = {
            "task_id": entry.task_id,
            "title": entry.title,
            "ok": not problems,
            "files": files,
            "task_running": task_running,
            "message": message,
        }
        if error is not None:
            result["error"] = error
        return result

    async def undo_entries(
        self, entries: Sequence[JournalEntry], label: str
    ) -> tuple[list[dict[str, Any]] | None, str | None]:
        """Undo the changes of `entries` (oldest first) as ONE editor edit labelled `label`:
        (a report per file {uri, path, outcome, reason?, lines?}, the first problem's error or
        None). A file several entries changed is undone through all their steps, newest first.
        None for the reports when every entry's changes were undone meanwhile."""
        store = self._documents
        root = self._root
        steps_by_file: dict[str, list[Step]] = {}
        for entry in entries:
            for rel, record in entry.files.items():
                steps_by_file.setdefault(rel, []).extend(step.as_step() for step in record.steps)
        paths = {rel: root / rel for rel in steps_by_file}
        files: list[dict[str, Any]] = []
        changes: list[FileChange] = []
        sent: list[dict[str, Any]] = []
        # The same per-file locks as the tasks' edits: an edit of a task still running goes first or after.
        async with store.locked(paths.values()):
            if not any(entry.files for entry in entries):  # another undo went first
                return None, None
            for rel, steps in steps_by_file.items():
                path = paths[rel]
                report: dict[str, Any] = {"uri": store.uri_for(path), "path": rel}
                files.append(report)
                try:
                    current = await store.current_text_async(path)
                    plan = plan_undo(steps, current)
                except Exception as err:  # noqa: BLE001 - this file cannot be undone; the others still are
                    log.debug("undo (%s): reading %s failed", label, rel, exc_info=True)
                    report.update(outcome="refused", reason=f"{FAILED}: {err}")
                    continue
                report["outcome"] = plan.outcome
                if plan.outcome == "refused":
                    report["reason"] = f"{CONFLICT}: {plan.reason}"
                    if plan.conflict is not None:
                        report["lines"] = list(plan.conflict)
                    continue
                if plan.outcome == "unchanged":
                    continue
                change = _change_for(path, current, plan)
                try:
                    self._sender.route(change)  # refuses a delete the editor cannot make
                except EditRejected as err:
                    report.update(outcome="refused", reason=str(err))
                    continue
                changes.append(change)
                sent.append(report)
            error = None
            if changes:
                try:
                    await self._sender.send(changes, label)
                except EditRejected as err:
                    error = str(err)  # edit_rejected: <why>
                    for report in sent:
                        report.update(outcome="failed", reason=error)
        done = [
            report["path"]
            for report in files
            if report["outcome"] in ("undone", "rebased", "unchanged")
        ]
        for entry in entries:
            self._journal.mark_undone(entry.task_id, [rel for rel in done if rel in entry.files])
        problems = [report for report in files if report["outcome"] in ("refused", "failed")]
        if error is None and problems:
            # The first problem, its file named after the reason's prefix: "undo_conflict: c.py: ...".
            prefix, _, rest = problems[0]["reason"].partition(": ")
            error = f"{prefix}: {problems[0]['path']}: {rest}"
        restored = [
            report["path"] for report in files if report["outcome"] in ("undone", "rebased")
        ]
        if restored:
            self._notes.add(
                f"The user took back your changes to {', '.join(restored)} ({label.removeprefix('lich: ')}); "
                "those files are as they were before. Read them again before editing them."
            )
        return files, error

    def code_action_tasks(self, params: types.CodeActionParams) -> list[tuple[str, str]]:
        """(task_id, title) of the undoable tasks that changed a line of the request's range, newest
        first, but not a task the file reads as before (undone in the editor: ctrl-z, by hand).
        From memory only: an open document's text and the journal once it is loaded."""
        journal = self._journal
        if not journal.loaded:
            journal.load_soon()
            return []
        path = uri_to_path(params.text_document.uri)
        if path is None:
            return []
        rel = journal.relative(path)
        if rel is None:
            return []
        entries = journal.loaded_entries_for(rel)
        if not entries:
            return []
        doc = self._documents.document(path)
        if doc is None:
            return []
        current = self._documents.current_text(path)
        if current is None:
            return []
        first = params.range.start.line
        last = params.range.end.line
        if last > first and params.range.end.character == 0:
            last -= 1  # a selection of whole lines ends at the start of the next one
        found = []
        for entry in entries:
            if _reads_as_before(entry, rel, current):
                continue  # undone already, by the editor's own undo or by hand: nothing to offer
            ranges = journal.changed_ranges(entry, rel, current)
            if any(start <= last and first < end for start, end in ranges):
                found.append((entry.task_id, entry.title))
        return found


def _reads_as_before(entry: JournalEntry, rel: str, current: str) -> bool:
    """Whether `rel` reads as it did before `entry`'s task changed it (lich.undoTask would
    find nothing to undo there: plan_undo's "unchanged")."""
    record = entry.files.get(rel)
    return record is not None and bool(record.steps) and record.steps[0].base == current


def choice_title(entry: JournalEntry) -> str:
    return f"{entry.task_id}: {entry.title}"


def _change_for(path: Path, current: str | None, plan: UndoPlan) -> FileChange:
    if plan.new_text is None:
        return FileChange.delete(path, current)
    if current is None:
        return FileChange.write(path, plan.new_text, None)
    return FileChange(path, "write", plan.new_text, current, plan.replacements)


def _message(
    entry: JournalEntry, files: Sequence[dict[str, Any]], task_running: bool
) -> tuple[str, types.MessageType]:
    """One line for the user: what was undone, what was left and why."""
    restored = [
        f["path"] + (" (your later edits kept)" if f["outcome"] == "rebased" else "")
        for f in files
        if f["outcome"] in ("undone", "rebased")
    ]
    already = [f["path"] for f in files if f["outcome"] == "unchanged"]
    problems = [f for f in files if f["outcome"] in ("refused", "failed")]
    parts = []
    if restored:
        parts.append("restored " + ", ".join(restored))
    if already:
        parts.append(
            ", ".join(already)
            + (" was" if len(already) == 1 else " were")
            + " already as before the task"
        )
    for problem in problems:
        reason = problem["reason"].partition(": ")[2] or problem["reason"]
        parts.append(f"not undone: {problem['path']}: {reason}")
    text = f"lich: undo {entry.task_id} ({entry.title}): " + "; ".join(parts)
    if task_running:
        text += " (the task is still running)"
    if not problems:
        return text, types.MessageType.Info
    return text, types.MessageType.Warning if restored or already else types.MessageType.Error
