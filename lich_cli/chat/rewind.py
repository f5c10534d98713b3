"""Rewind and undo for `lich chat`, through the editors' own undo journal.

The terminal's turns record what they change in the same journal the language server keeps
(lich_lsp.journal: `undo/<task_id>.json` in the workspace's state dir, the turn's run record
naming its task id), so an editor's lich.rewind restores the files of a terminal turn and
`/rewind` here restores the files of an editor's turn. Undoing a file's steps is the editors'
plan (lich_lsp.undo_rebase.plan_undo: refused where the user changed those lines since); the
conversation goes back through the core's SessionStore.rewind, as lich.rewind does. The only
difference is where the restored text goes: to the disk, all files in one all-or-nothing write.

lich_lsp.journal and lich_lsp.undo_rebase are pure leaves (no pygls, no lsprotocol); the CLI
sits above the faces and may use them.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lich_core.agent.sessions import SessionError, SessionStore
from lich_core.agent.thread_log import Turn
from lich_core.errors import ToolError
from lich_core.workspace import DiskWorkspace, FileChange, apply_to_disk, decode_text
from lich_lsp.journal import JournalEntry, TaskJournal, file_outcome_parts, rewind_message
from lich_lsp.undo_rebase import Step, UndoPlan, plan_undo

RESTORED = ("undone", "rebased")
PROBLEMS = ("refused", "failed")


class RewindError(Exception):
    """A rewind or undo that cannot start; the message is one line with a stable prefix."""


@dataclass
class Outcome:
    """What a rewind or undo did: one line for the user, and the per-file reports."""

    ok: bool
    message: str
    files: list[dict[str, Any]] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # files that keep changes of the rewound turns


class JournalingWorkspace(DiskWorkspace):
    """The disk, with each applied change set journaled as task `task_id`'s (so a rewind, here
    or in an editor, can take it back) and handed to `on_changes` (the diff on screen)."""

    def __init__(
        self,
        root: Path,
        journal: TaskJournal,
        task_id: str,
        title: str,
        on_changes: Callable[[Sequence[FileChange]], None] | None = None,
    ) -> None:
        super().__init__(root)
        self._record = journal.recorder(task_id, title, time.time())
        self._on_changes = on_changes

    async def apply(self, changes: Sequence[FileChange], label: str) -> None:
        await super().apply(changes, label)
        self._record(changes)
        if self._on_changes is not None:
            self._on_changes(changes)


def fresh_task_id(journal: TaskJournal) -> str:
    """A task id after every id the journal holds (the editors' ids continue past them too)."""
    numbers = [int(task_id[1:]) for task_id in journal.entries()]
    return journal.fresh_task_id(itertools.count(max(numbers, default=0) + 1))


def turn_to_rewind(store: SessionStore, thread: str, number: int) -> Turn:
    """Turn `number` of `thread`, if it can be rewound; RewindError says why not."""
    try:
        _, replay = store.replay(thread)
    except SessionError as err:
        raise RewindError(str(err)) from None
    if number < 1 or number > len(replay.turns):
        raise RewindError(f"no_such_turn: thread {thread} has {len(replay.turns)} turn(s)")
    target = replay.turns[number - 1]
    if target.discarded_by:
        raise RewindError(
            f"already_rewound: turn {number} of thread {thread} was already rewound "
            f"(rewind {target.discarded_by})"
        )
    return target


def rewind_thread(store: SessionStore, journal: TaskJournal, thread: str, number: int) -> Outcome:
    """Rewind `thread` to before turn `number`: its files back from the journal where they can
    be, then the rewind record (the next turn continues from before it)."""
    target = turn_to_rewind(store, thread, number)
    _, replay = store.replay(thread)
    rewound = [turn for turn in replay.live_turns() if turn.number >= number]
    entries, not_restored = journal.entries_for_turns(rewound)
    files = undo_on_disk(journal, entries) if entries else []
    store.rewind(thread, target.run_id)
    kept = [f["path"] for f in files if f["outcome"] in PROBLEMS]
    kept += [name for item in not_restored for name in item["files"]]
    message = rewind_message(target.prompt, rewound, files, not_restored)
    return Outcome(not kept, message, files, list(dict.fromkeys(kept)))


def undo_task(journal: TaskJournal, task_id: str | None) -> Outcome:
    """Undo the edits of task `task_id` (the chat's last turn)."""
    entry = journal.get(task_id) if task_id else None
    if entry is None or not entry.files:
        raise RewindError("nothing_to_undo: the last turn changed no file that can be undone")
    files = undo_on_disk(journal, [entry])
    parts = file_outcome_parts(files)
    message = f"lich: undo {entry.task_id} ({entry.title}): " + ("; ".join(parts) or "no change")
    return Outcome(not any(f["outcome"] in PROBLEMS for f in files), message, files)


def undo_on_disk(journal: TaskJournal, entries: Sequence[JournalEntry]) -> list[dict[str, Any]]:
    """Undo `entries` (oldest first) on the disk, as the editors' undo plans it: a report per
    file {path, outcome, reason?}; the files that can be restored are written together."""
    root = journal.root
    steps_by_file: dict[str, list[Step]] = {}
    for entry in entries:
        for rel, record in entry.files.items():
            steps_by_file.setdefault(rel, []).extend(step.as_step() for step in record.steps)
    reports: list[dict[str, Any]] = []
    changes: list[FileChange] = []
    planned: list[dict[str, Any]] = []
    for rel, steps in steps_by_file.items():
        report: dict[str, Any] = {"path": rel}
        reports.append(report)
        path = root / rel
        try:
            current = _disk_text(path)
            plan = plan_undo(steps, current)
        except (OSError, ValueError) as err:
            report.update(outcome="refused", reason=f"undo_failed: {err}")
            continue
        report["outcome"] = plan.outcome
        if plan.outcome == "refused":
            report["reason"] = f"undo_conflict: {plan.reason}"
        elif plan.outcome in RESTORED:
            changes.append(_change_for(path, current, plan))
            planned.append(report)
    if changes:
        try:
            apply_to_disk(changes, root)
        except ToolError as err:
            for report in planned:
                report.update(outcome="failed", reason=str(err))
    done = [r["path"] for r in reports if r["outcome"] in (*RESTORED, "unchanged")]
    for entry in entries:
        journal.mark_undone(entry.task_id, [rel for rel in done if rel in entry.files])
    return reports


def _disk_text(path: Path) -> str | None:
    try:
        return decode_text(path.read_bytes())
    except FileNotFoundError:
        return None


def _change_for(path: Path, current: str | None, plan: UndoPlan) -> FileChange:
    if plan.new_text is None:
        return FileChange.delete(path, current)
    if current is None:
        return FileChange.write(path, plan.new_text, None)
    return FileChange(path, "write", plan.new_text, current, plan.replacements)
