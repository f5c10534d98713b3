"""The undo journal: every change an agent task made, per file, kept so the task can be undone.

Each task that changed files has one entry: its id, title and start time, and per file the steps
it made, each the text before it (`base`, None when the file did not exist) and the line
replacements the task applied to it (or `deleted`). Consecutive changes to a file, each starting
from the text the one before left, are one step (its replacements recomputed from the first
base); a change made on top of a user edit starts a new step, so undoing never takes the user's
edit in between for the task's.

The journal survives a server restart: one JSON file per task in the workspace's folder of the
user state dir (`undo/<task_id>.json`, written atomically through a temp file and a rename), so
the repository cannot plant or redirect it. Only the last MAX_JOURNAL_TASKS tasks are kept; the
oldest entry (and its file) goes first. A file that cannot be read or does not have the expected
shape (a link, a FIFO, over MAX_STATE_FILE_BYTES, JSON nested too deep) is ignored with a log
message; the undo dir is opened as lich_core.userstate checks every state dir. Task ids continue after the journal's (lich.undoTask names a
task by its id, so an id from before a restart must not be handed out again).

Loading reads the files once per session: on the first task, undo or status, or in a worker thread
when a code action needs the journal first (code actions never wait on disk).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from lich_core.hashline.replacements import apply_replacements, line_replacements
from lich_core.userstate import (
    StateFileError,
    list_state_dir,
    load_json,
    unlink_state_file,
    workspace_state_dir,
    write_json_atomic,
)
from lich_core.vocabulary import LineReplacement
from lich_core.workspace import FileChange
from lich_lsp.undo_rebase import Step, changed_lines, line_mapper

if TYPE_CHECKING:
    from lich_core.agent.thread_log import Turn

log = logging.getLogger("lich.lsp.journal")

JOURNAL_DIR_NAME = "undo"
JOURNAL_VERSION = 1
# Tasks kept in the undo journal (the oldest is forgotten first).
MAX_JOURNAL_TASKS = 20
REWIND_PROMPT_SHOWN_CHARS = 60  # the rewound turn's prompt, as a rewind's message names it
_TASK_ID = re.compile(r"^t[0-9]{1,12}$")


@dataclass
class JournalStep:
    base: str | None
    replacements: tuple[LineReplacement, ...]  # base -> result; none for a delete
    deleted: bool = False
    result: str | None = None  # derived: the text the step left (None: deleted)

    def __post_init__(self) -> None:
        if not self.deleted and self.result is None:
            self.result = apply_replacements(self.base or "", self.replacements)
        if self.deleted:
            self.result = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"base": self.base}
        if self.deleted:
            data["deleted"] = True
        else:
            data["replacements"] = [[r.start, r.end, r.text] for r in self.replacements]
        return data

    def as_step(self) -> Step:
        return Step(self.base, self.result)


@dataclass
class FileRecord:
    path: str  # relative to the workspace root, POSIX
    steps: list[JournalStep] = field(default_factory=list)


@dataclass
class JournalEntry:
    task_id: str
    title: str
    started: float  # the task's start (epoch seconds)
    created: float  # its first recorded change: the journal keeps the newest ones
    files: dict[str, FileRecord] = field(default_factory=dict)
    undone: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "version": JOURNAL_VERSION,
            "task_id": self.task_id,
            "title": self.title,
            "started": self.started,
            "created": self.created,
            "undone": self.undone,
            "files": [
                {"path": record.path, "steps": [step.to_json() for step in record.steps]}
                for record in self.files.values()
            ],
        }

    def summary(self, running: bool) -> dict[str, Any]:
        """What lich.status lists for an undoable task."""
        return {
            "task_id": self.task_id,
            "title": self.title,
            "started": self.started,
            "files": list(self.files),
            "running": running,
        }


class JournalFormatError(ValueError):
    pass


def entry_from_json(data: Any) -> JournalEntry:
    """A journal entry from its file's JSON; JournalFormatError says what is wrong with it."""
    if not isinstance(data, dict):
        raise JournalFormatError("not a JSON object")
    if data.get("version") != JOURNAL_VERSION:
        raise JournalFormatError(f"unknown version {data.get('version')!r}")
    task_id, title = data.get("task_id"), data.get("title")
    if not isinstance(task_id, str) or not _TASK_ID.match(task_id):
        raise JournalFormatError("bad task_id")
    if not isinstance(title, str):
        raise JournalFormatError("bad title")
    started, created = data.get("started"), data.get("created")
    if not isinstance(started, (int, float)) or not isinstance(created, (int, float)):
        raise JournalFormatError("bad times")
    files = data.get("files")
    if not isinstance(files, list):
        raise JournalFormatError("bad files")
    entry = JournalEntry(
        task_id, title, float(started), float(created), undone=data.get("undone") is True
    )
    for item in files:
        record = _record_from_json(item)
        entry.files[record.path] = record
    return entry


def _record_from_json(item: Any) -> FileRecord:
    if not isinstance(item, dict) or not isinstance(item.get("path"), str):
        raise JournalFormatError("bad file record")
    path = item["path"]
    if not safe_relative(path):
        raise JournalFormatError(f"path {path!r} is not inside the workspace")
    steps = item.get("steps")
    if not isinstance(steps, list) or not steps:
        raise JournalFormatError(f"bad steps for {path}")
    record = FileRecord(path)
    for raw in steps:
        if not isinstance(raw, dict):
            raise JournalFormatError(f"bad step for {path}")
        base = raw.get("base")
        if base is not None and not isinstance(base, str):
            raise JournalFormatError(f"bad base text for {path}")
        if raw.get("deleted") is True:
            record.steps.append(JournalStep(base, (), deleted=True))
            continue
        replacements = raw.get("replacements")
        if not isinstance(replacements, list):
            raise JournalFormatError(f"bad replacements for {path}")
        parsed: list[LineReplacement] = []
        lines = len((base or "").split("\n"))
        for rep in replacements:
            if (
                not isinstance(rep, list)
                or len(rep) != 3
                or not all(isinstance(n, int) and not isinstance(n, bool) for n in rep[:2])
                or not isinstance(rep[2], str)
                or not 0 <= rep[0] <= rep[1] <= lines
            ):
                raise JournalFormatError(f"bad replacement for {path}")
            if parsed and rep[0] < parsed[-1].end:
                raise JournalFormatError(f"overlapping replacements for {path}")
            parsed.append(LineReplacement(rep[0], rep[1], rep[2]))
        record.steps.append(JournalStep(base, tuple(parsed)))
    return record


def safe_relative(path: str) -> bool:
    """A relative POSIX path that stays inside the root it is joined to."""
    pure = PurePosixPath(path)
    return (
        bool(path)
        and not pure.is_absolute()
        and ".." not in pure.parts
        and "\\" not in path
        and "\0" not in path
    )


class TaskJournal:
    """The undo journal of one workspace (see the module docstring)."""

    def __init__(
        self,
        root: Path,
        report: Callable[[str], None] | None = None,
        directory: Path | None = None,
    ) -> None:
        self.root = root
        self._directory = directory
        self._report = report
        self._entries: dict[str, JournalEntry] | None = None
        # The first load may run in a worker thread (for a code action) while the server goes on.
        self._lock = threading.Lock()
        self._loading: asyncio.Future[Any] | None = None
        self._write_failed = False
        self._reports: list[str] = []
        # (task_id, path) -> (the text the ranges are for, the lines the task changed in it)
        self._line_cache: dict[tuple[str, str], tuple[str, list[tuple[int, int]]]] = {}

    @property
    def directory(self) -> Path:
        if self._directory is None:
            self._directory = workspace_state_dir(self.root) / JOURNAL_DIR_NAME
        return self._directory

    # --- loading ---

    @property
    def loaded(self) -> bool:
        return self._entries is not None

    def entries(self) -> dict[str, JournalEntry]:
        """Every entry by task id (loaded on first use). Call from the server's thread."""
        entries = self._load()
        self._flush_reports()
        return entries

    def load_soon(self) -> None:
        """Load in a worker thread (once), for callers that must not wait on the disk."""
        if self._entries is None and self._loading is None:
            self._loading = asyncio.ensure_future(asyncio.to_thread(self._load))
            self._loading.add_done_callback(lambda _: self._flush_reports())

    def _load(self) -> dict[str, JournalEntry]:
        with self._lock:
            if self._entries is None:
                self._entries = self._read_all()
            return self._entries

    def _read_all(self) -> dict[str, JournalEntry]:
        found: dict[str, JournalEntry] = {}
        try:
            names = sorted(list_state_dir(self.directory))
        except FileNotFoundError:
            return found
        except OSError as err:
            self._tell(f"lich: could not read the undo journal {self.directory}: {err}")
            return found
        for name in names:
            if not name.endswith(".json") or name.startswith("."):
                continue
            path = self.directory / name
            try:
                # Bounded, never through a link or from a FIFO, deep nesting a skip: a planted
                # file must not fail every later task, status or undo.
                data = load_json(path)
            except StateFileError as err:
                self._tell(f"lich: ignored a corrupt undo journal file {path}: {err.reason}")
                continue
            try:
                entry = entry_from_json(data)
                if f"{entry.task_id}.json" != name:
                    raise JournalFormatError(f"holds task {entry.task_id}")
            except JournalFormatError as err:
                self._tell(f"lich: ignored a corrupt undo journal file {path}: {err}")
                continue
            found[entry.task_id] = entry
        for old in _oldest_first(found.values())[: max(0, len(found) - MAX_JOURNAL_TASKS)]:
            self._forget(found, old.task_id)
        return found

    def _tell(self, message: str) -> None:
        log.warning("%s", message)
        # Told to the editor from the server's thread only (the load may run in a worker).
        self._reports.append(message)

    def _flush_reports(self) -> None:
        reports, self._reports = self._reports, []
        for message in reports:
            if self._report is not None:
                try:
                    self._report(message)
                except Exception:  # noqa: BLE001 - the message is in the server log already
                    log.debug("could not report %r", message, exc_info=True)

    # --- ids ---

    def fresh_task_id(self, numbers: Iterator[int]) -> str:
        """The next `t<N>` from `numbers` that no journal entry (of this or an earlier server) holds."""
        entries = self.entries()
        while True:
            candidate = f"t{next(numbers)}"
            if candidate not in entries and not os.path.lexists(
                self.directory / f"{candidate}.json"
            ):
                return candidate

    # --- recording ---

    def recorder(
        self, task_id: str, title: str, started: float
    ) -> Callable[[Sequence[FileChange]], None]:
        """The callback an EditorWorkspace calls with each change set the editor applied."""

        def record(changes: Sequence[FileChange]) -> None:
            try:
                self.record(task_id, title, started, changes)
            except Exception:  # noqa: BLE001 - the edit landed; losing its undo record must not fail it
                log.exception("could not journal the changes of task %s", task_id)

        return record

    def record(
        self, task_id: str, title: str, started: float, changes: Sequence[FileChange]
    ) -> None:
        if not _TASK_ID.match(task_id):
            log.warning("not journaling changes of %r: not a task id", task_id)
            return
        entries = self.entries()
        entry = entries.get(task_id)
        created = entry is None
        if entry is None:
            entry = JournalEntry(task_id, title, started, time.time())
        for change in changes:
            rel = self.relative(change.path)
            if rel is None:
                log.warning("not journaling %s: outside the workspace root", change.path)
                continue
            _add_change(entry, rel, change)
            self._line_cache.pop((task_id, rel), None)
        if entry.files:
            entry.undone = False  # a task still running changed files again after an undo
        if created:
            if not entry.files:
                return
            entries[task_id] = entry
            for old in _oldest_first(entries.values())[: max(0, len(entries) - MAX_JOURNAL_TASKS)]:
                self._forget(entries, old.task_id)
        self._write(entry)

    def relative(self, path: Path) -> str | None:
        try:
            rel = Path(os.path.realpath(path)).relative_to(os.path.realpath(self.root)).as_posix()
        except ValueError:
            return None
        return rel if safe_relative(rel) else None

    # --- reading ---

    def get(self, task_id: str) -> JournalEntry | None:
        return self.entries().get(task_id)

    def entries_for_turns(
        self, turns: Sequence[Turn]
    ) -> tuple[list[JournalEntry], list[dict[str, Any]]]:
        """The entries of a thread's `turns` (oldest first), and the turns that changed files
        this journal cannot restore: {turn, files, reason} (lich.rewind, lich chat's /rewind)."""
        entries = []
        missing: list[dict[str, Any]] = []
        for turn in turns:
            entry = self.get(turn.task_id) if turn.task_id else None
            if entry is not None:
                if entry.files:
                    entries.append(entry)
                continue
            if not turn.files:
                continue
            if (
                not turn.task_id
            ):  # the faces that journal their turns (lich-lsp, lich chat) name them
                reason = (
                    f"not_restorable: turn {turn.number} ran in {turn.face or 'another client'}, "
                    "whose changes are not in the undo journal"
                )
            else:
                reason = (
                    f"not_restorable: turn {turn.number}'s task {turn.task_id} is no longer in "
                    "the undo journal (it keeps the last tasks that changed files)"
                )
            missing.append({"turn": turn.number, "files": list(turn.files), "reason": reason})
        return entries, missing

    def undoable(self) -> list[JournalEntry]:
        """Entries with changes left to undo, newest first."""
        return [
            e for e in reversed(_oldest_first(self.entries().values())) if not e.undone and e.files
        ]

    def loaded_entries_for(self, rel: str) -> list[JournalEntry]:
        """Undoable entries that changed `rel`, newest first; none until the journal is loaded."""
        if self._entries is None:
            return []
        return [
            e
            for e in reversed(_oldest_first(self._entries.values()))
            if not e.undone and rel in e.files
        ]

    def changed_ranges(self, entry: JournalEntry, rel: str, current: str) -> list[tuple[int, int]]:
        """The lines [start, end) of `current` (0-based) that the task's changes to `rel` wrote,
        followed through the user's edits since; cached per text (code actions ask often)."""
        key = (entry.task_id, rel)
        cached = self._line_cache.get(key)
        if cached is not None and cached[0] == current:
            return cached[1]
        record = entry.files.get(rel)
        ranges: list[tuple[int, int]] = []
        for step in record.steps if record is not None else []:
            if step.result is None:
                continue
            to_current = line_mapper(step.result, current)
            for start, end in changed_lines(step.as_step()):
                first = to_current(start)
                ranges.append((first, max(first + 1, to_current(end - 1) + 1)))
        self._line_cache[key] = (current, ranges)
        return ranges

    # --- after an undo ---

    def mark_undone(self, task_id: str, paths: Sequence[str]) -> None:
        """`paths` of the task are undone (or were already back as before): drop them."""
        entry = self.entries().get(task_id)
        if entry is None:
            return
        for rel in paths:
            entry.files.pop(rel, None)
            self._line_cache.pop((task_id, rel), None)
        if not entry.files:
            entry.undone = True
        self._write(entry)

    # --- disk ---

    def path_for(self, task_id: str) -> Path:
        return self.directory / f"{task_id}.json"

    def _write(self, entry: JournalEntry) -> None:
        try:
            write_json_atomic(self.path_for(entry.task_id), entry.to_json())
        except OSError as err:
            # The journal still works from memory; say so once, not on every edit.
            if not self._write_failed:
                self._write_failed = True
                self._tell(
                    f"lich: could not write the undo journal ({err}); undo works until the server restarts"
                )
                self._flush_reports()

    def _forget(self, entries: dict[str, JournalEntry], task_id: str) -> None:
        entries.pop(task_id, None)
        try:
            unlink_state_file(self.path_for(task_id))
        except FileNotFoundError:
            pass
        except OSError as err:
            log.warning("could not remove the undo journal file of %s: %s", task_id, err)


def _oldest_first(entries: Any) -> list[JournalEntry]:
    return sorted(entries, key=lambda e: (e.created, _number(e.task_id)))


def _number(task_id: str) -> int:
    return int(task_id[1:]) if _TASK_ID.match(task_id) else 0


def _add_change(entry: JournalEntry, rel: str, change: FileChange) -> None:
    """Add one applied change to the entry: merged into the file's last step when it starts from
    the text that step left, else a step of its own."""
    record = entry.files.get(rel)
    deleted = change.kind == "delete"
    new_text = None if deleted else change.new_text
    if record is not None and record.steps and record.steps[-1].result == change.base_text:
        last = record.steps[-1]
        record.steps.pop()
        if new_text != last.base:
            if new_text is None:
                record.steps.append(JournalStep(last.base, (), deleted=True))
            else:
                record.steps.append(
                    JournalStep(
                        last.base, line_replacements(last.base or "", new_text), result=new_text
                    )
                )
        # else: the task put the file back as it found it; nothing of this step is left to undo
        if not record.steps:
            entry.files.pop(rel, None)
        return
    if change.base_text == new_text:
        return
    if record is None:
        record = entry.files[rel] = FileRecord(rel)
    if new_text is None:
        record.steps.append(JournalStep(change.base_text, (), deleted=True))
    else:
        record.steps.append(JournalStep(change.base_text, change.replacements, result=new_text))


def rewind_message(
    prompt: str,
    rewound: Sequence[Turn],
    files: Sequence[Mapping[str, Any]],
    not_restored: Sequence[Mapping[str, Any]],
) -> str:
    """What a rewind did, for the user: the turn named by its prompt (no ids), then the files
    restored and those not (lich.rewind's message, lich chat's /rewind)."""
    turns = "turn" if len(rewound) == 1 else "turns"
    asked = " ".join(prompt.split())
    if len(asked) > REWIND_PROMPT_SHOWN_CHARS:
        asked = asked[: REWIND_PROMPT_SHOWN_CHARS - 1] + "…"
    parts = [f'lich: rewound to before "{asked}" ({len(rewound)} {turns})']
    parts += file_outcome_parts(files)
    for item in not_restored:
        parts.append(f"not restored: {', '.join(item['files'])}: {item['reason']}")
    return "; ".join(parts)


def file_outcome_parts(files: Sequence[Mapping[str, Any]]) -> list[str]:
    """An undo's per-file reports {path, outcome, reason?} in words: restored, or not and why."""
    parts = []
    restored = [f["path"] for f in files if f["outcome"] in ("undone", "rebased")]
    if restored:
        parts.append("restored " + ", ".join(restored))
    for problem in files:
        if problem["outcome"] in ("refused", "failed"):
            reason = problem["reason"].partition(": ")[2] or problem["reason"]
            parts.append(f"not restored: {problem['path']}: {reason}")
    return parts
