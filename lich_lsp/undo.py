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
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from lich_core.errors import EditRejected
from lich_core.workspace import FileChange
from lich_lsp.commands import UNDO_TASK, BadArguments, get_str, single_object
from lich_lsp.journal import MAX_JOURNAL_TASKS, JournalEntry
from lich_lsp.undo_rebase import UndoPlan, plan_undo
from lich_lsp.workspace import route_change, send_changes, uri_to_path

if TYPE_CHECKING:
    from lich_lsp.session import EditorSession

log = logging.getLogger("lich.lsp.undo")

# Tasks offered when lich.undoTask comes without a task id (buttons of one message).
MAX_CHOICES = 5
CONFLICT = "undo_conflict"
FAILED = "undo_failed"


def _running(session: EditorSession, task_id: str) -> bool:
    task = session.tasks.tasks.get(task_id)
    return task is not None and task.state == "running"


def undoable_tasks(session: EditorSession) -> list[dict[str, Any]]:
    """lich.status's `undoable_tasks`: newest first."""
    return [entry.summary(_running(session, entry.task_id)) for entry in session.journal.undoable()]


def choice_title(entry: JournalEntry) -> str:
    return f"{entry.task_id}: {entry.title}"


async def undo_task(session: EditorSession, args: tuple[Any, ...], request_id: Any) -> dict[str, Any]:
    obj = single_object(UNDO_TASK, args, required=False)
    task_id = get_str(UNDO_TASK, obj, "task_id", required=False)
    journal = session.journal
    if task_id is None:
        undoable = journal.undoable()
        if not undoable:
            return _nothing(session, None, "", "nothing_to_undo: no task in the undo journal has changes left to undo")
        task_id = await _pick(session, undoable)
        if task_id is None:
            return {"task_id": None, "ok": False, "dismissed": True, "files": [], "task_running": False, "message": ""}
    entry = journal.get(task_id)
    if entry is None:
        raise BadArguments(
            f"{UNDO_TASK}: no task {task_id!r} in the undo journal "
            f"(it keeps the last {MAX_JOURNAL_TASKS} tasks that changed files)"
        )
    if entry.undone or not entry.files:
        return _nothing(session, entry, entry.title, f"already_undone: task {task_id} has no changes left to undo")
    return await _undo(session, entry)


async def _pick(session: EditorSession, undoable: Sequence[JournalEntry]) -> str | None:
    offered = list(undoable[:MAX_CHOICES])
    if not session.features.show_message_request:
        listed = "; ".join(f"{e.task_id} ({e.title})" for e in offered)
        raise BadArguments(
            f"{UNDO_TASK}: no task_id given, and this editor cannot show a choice of tasks "
            f"(no window/showMessageRequest support); pass {{task_id}}; recent tasks: {listed}"
        )
    answer = await session.port.ask(
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


def _nothing(session: EditorSession, entry: JournalEntry | None, title: str, error: str) -> dict[str, Any]:
    task_id = entry.task_id if entry is not None else None
    message = f"lich: nothing to undo: {error.split(': ', 1)[1]}"
    session.show_message(message, types.MessageType.Info)
    return {
        "task_id": task_id,
        "title": title,
        "ok": False,
        "files": [],
        "task_running": bool(task_id and _running(session, task_id)),
        "message": message,
        "error": error,
    }


async def _undo(session: EditorSession, entry: JournalEntry) -> dict[str, Any]:
    store = session.documents
    root = session.root
    task_running = _running(session, entry.task_id)
    paths = {rel: root / rel for rel in entry.files}
    files: list[dict[str, Any]] = []
    changes: list[FileChange] = []
    sent: list[dict[str, Any]] = []
    # The same per-file locks as the task's edits: an edit of a task still running goes first or after.
    async with store.locked(paths.values()):
        if not entry.files:  # another undo of this task went first
            return _nothing(session, entry, entry.title, f"already_undone: task {entry.task_id} has no changes left to undo")
        for rel, record in list(entry.files.items()):
            path = paths[rel]
            report: dict[str, Any] = {"uri": store.uri_for(path), "path": rel}
            files.append(report)
            try:
                current = await store.current_text_async(path)
                plan = plan_undo([step.as_step() for step in record.steps], current)
            except Exception as err:  # noqa: BLE001 - this file cannot be undone; the others still are
                log.debug("undo of %s: reading %s failed", entry.task_id, rel, exc_info=True)
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
                route_change(session, change)  # refuses a delete the editor cannot make
            except EditRejected as err:
                report.update(outcome="refused", reason=str(err))
                continue
            changes.append(change)
            sent.append(report)
        error = None
        if changes:
            try:
                await send_changes(session, changes, f"lich: undo {entry.title}")
            except EditRejected as err:
                error = str(err)  # edit_rejected: <why>
                for report in sent:
                    report.update(outcome="failed", reason=error)
    done = [report["path"] for report in files if report["outcome"] in ("undone", "rebased", "unchanged")]
    session.journal.mark_undone(entry.task_id, done)
    problems = [report for report in files if report["outcome"] in ("refused", "failed")]
    if error is None and problems:
        # The first problem, its file named after the reason's prefix: "undo_conflict: c.py: ...".
        prefix, _, rest = problems[0]["reason"].partition(": ")
        error = f"{prefix}: {problems[0]['path']}: {rest}"
    message, kind = _message(entry, files, task_running)
    session.show_message(message, kind)
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


def _change_for(path: Path, current: str | None, plan: UndoPlan) -> FileChange:
    if plan.new_text is None:
        return FileChange.delete(path, current)
    if current is None:
        return FileChange.write(path, plan.new_text, None)
    return FileChange(path, "write", plan.new_text, current, plan.replacements)


def _message(entry: JournalEntry, files: Sequence[dict[str, Any]], task_running: bool) -> tuple[str, types.MessageType]:
    """One line for the user: what was undone, what was left and why."""
    restored = [f["path"] + (" (your later edits kept)" if f["outcome"] == "rebased" else "") for f in files if f["outcome"] in ("undone", "rebased")]
    already = [f["path"] for f in files if f["outcome"] == "unchanged"]
    problems = [f for f in files if f["outcome"] in ("refused", "failed")]
    parts = []
    if restored:
        parts.append("restored " + ", ".join(restored))
    if already:
        parts.append(", ".join(already) + (" was" if len(already) == 1 else " were") + " already as before the task")
    for problem in problems:
        reason = problem["reason"].partition(": ")[2] or problem["reason"]
        parts.append(f"not undone: {problem['path']}: {reason}")
    text = f"lich: undo {entry.task_id} ({entry.title}): " + "; ".join(parts)
    if task_running:
        text += " (the task is still running)"
    if not problems:
        return text, types.MessageType.Info
    return text, types.MessageType.Warning if restored or already else types.MessageType.Error


def record_task_changes(session: EditorSession, task_id: str, changes: Sequence[FileChange]) -> None:
    """Journal `changes` as task `task_id`'s, for edits applied on its behalf outside its own
    workspace (review hunks the user accepts after the task ended), so undoing it takes them too."""
    task = session.tasks.tasks.get(task_id)
    entry = session.journal.get(task_id)
    title = task.title if task is not None else entry.title if entry is not None else task_id
    started = task.started if task is not None else entry.started if entry is not None else time.time()
    session.journal.recorder(task_id, title, started)(changes)


def code_action_tasks(session: EditorSession, params: types.CodeActionParams) -> list[tuple[str, str]]:
    """(task_id, title) of the undoable tasks that changed a line of the request's range, newest
    first. From memory only: an open document's text and the journal once it is loaded."""
    journal = session.journal
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
    doc = session.documents.document(path)
    if doc is None:
        return []
    current = session.documents.current_text(path)
    if current is None:
        return []
    first = params.range.start.line
    last = params.range.end.line
    if last > first and params.range.end.character == 0:
        last -= 1  # a selection of whole lines ends at the start of the next one
    found = []
    for entry in entries:
        ranges = journal.changed_ranges(entry, rel, current)
        if any(start <= last and first < end for start, end in ranges):
            found.append((entry.task_id, entry.title))
    return found
