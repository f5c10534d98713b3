"""Conversations: lich.threads, lich.thread and lich.rewind (docs/conversations.md).

A thread is a session of lich_core.agent.sessions: the one store the CLI (`lich --thread`,
`lich threads`) and ACP (`session/load`) use, in the user state dir per workspace. Each lich.ask
is one turn of a thread; `lich.ask {thread}` continues it (lich_lsp.agent_commands checks the id
here first). A rewind takes back the files the rewound turns changed, through the undo journal
as lich.undoTask does (one versioned edit, a file refused where the user changed those lines
since), then appends a rewind record: the next turn continues from before them, and they stay
readable in lich.thread as a discarded branch.

A thread id a client gives is checked by the core's one rule (check_thread_id: InvalidParams
`invalid_thread_id:`). A thread is busy while a task runs a turn of it and while a rewind of it
waits for the editor to apply its edit: a follow-up or another rewind then is `thread_busy:`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types

from lich_core.agent.sessions import InvalidThreadId, SessionError, SessionStore, check_thread_id
from lich_core.agent.thread_log import Replay, Turn, usage_summary
from lich_lsp.arguments import BadArguments
from lich_lsp.commands import REWIND, THREAD, THREADS
from lich_lsp.contract import (
    NoParams,
    RewindParams,
    RewindResult,
    ThreadParams,
    ThreadResult,
    ThreadsResult,
    result_of,
)
from lich_lsp.journal import rewind_message

if TYPE_CHECKING:
    from lich_lsp.commands import CommandTable
    from lich_lsp.context import SessionContext
    from lich_lsp.journal import TaskJournal
    from lich_lsp.review_hunks import ModelNotes
    from lich_lsp.tasks import TaskManager
    from lich_lsp.undo import TaskUndo

THREADS_LISTED_MAX = 100
STATUS_THREADS_MAX = 10


class ThreadCommands:
    def __init__(
        self,
        *,
        ctx: SessionContext,
        tasks: TaskManager,
        journal: TaskJournal,
        undo: TaskUndo,
        notes: ModelNotes,
    ) -> None:
        self._holder = ctx.holder
        self._tasks = tasks
        self._journal = journal
        self._undo = undo
        self._notes = notes
        self._messages = ctx.messages
        self._features = ctx.features
        self._root = ctx.root
        # Threads whose rewind is under way (waiting for the editor to apply its edit).
        self._rewinding: set[str] = set()

    def register(self, table: CommandTable) -> None:
        table.add(THREADS, self.threads, typed=True)
        table.add(THREAD, self.thread, typed=True)
        table.add(REWIND, self.rewind, typed=True)

    def store(self) -> SessionStore:
        return SessionStore.for_config(self._holder.config)

    def check_can_continue(self, command: str, thread: str) -> Replay:
        """lich.ask {thread}: the thread exists and runs no task (turns are never interleaved);
        returns it as replayed."""
        replay = self._replay(command, thread)
        running = self._tasks.running_threads.get(thread)
        if running is not None:
            raise BadArguments(
                f"{command}: thread_busy: thread {thread} is running task {running}; "
                "wait for it to finish or cancel it (lich.cancel) first"
            )
        if thread in self._rewinding:
            raise BadArguments(
                f"{command}: thread_busy: thread {thread} is being rewound (the editor has not "
                "applied the rewind's edit yet); wait for lich.rewind to answer"
            )
        return replay

    def check_new_thread(self, command: str, thread: str) -> None:
        """lich.ask {new_thread}: a client-chosen id (so it knows its task's events from the
        first one) that is a valid thread id and names no thread yet."""
        _check_id(command, thread)
        store = self.store()
        if store.exists(thread) or thread in self._tasks.running_threads:
            raise BadArguments(
                f"{command}: thread_exists: {thread} is already a thread; continue it with 'thread'"
            )

    def _replay(self, command: str, thread: str) -> Replay:
        _check_id(command, thread)
        store = self.store()
        if not store.exists(thread):
            raise BadArguments(
                f"{command}: unknown_thread: {thread!r} is not a thread of this workspace "
                f"(it may have been pruned: {store.keep or 'every'} are kept; lich.threads lists them)"
            )
        try:
            return store.replay(thread)[1]
        except SessionError as err:
            raise BadArguments(f"{command}: {err}") from None

    # --- lich.threads / lich.thread ---

    async def threads(self, params: NoParams, request_id: Any) -> ThreadsResult:
        return ThreadsResult(threads=self.listing(THREADS_LISTED_MAX))

    def listing(self, limit: int, *, usage: bool = False) -> list[dict[str, Any]]:
        """The newest `limit` threads: {thread, title, turns, updated, running} (and `usage`,
        tokens in/out/cached, when asked); a damaged file is told once in the log and left out
        (the others are listed). From the store's per-file summaries: nothing is replayed."""
        running = self._tasks.running_threads
        listed = []
        for info in self.store().list()[:limit]:
            entry: dict[str, Any] = {
                "thread": info.session_id,
                "title": info.title,
                "turns": info.turns,
                "updated": info.modified,
                "running": info.session_id in running,
            }
            if usage:
                entry["usage"] = usage_summary(info.usage)
            listed.append(entry)
        return listed

    def status(self) -> list[dict[str, Any]]:
        """lich.status's `threads`: the newest few, with their tokens in/out/cached."""
        return self.listing(STATUS_THREADS_MAX, usage=True)

    async def thread(self, params: ThreadParams, request_id: Any) -> ThreadResult:
        thread = _check_id(THREAD, params.thread)
        replay = self._replay(THREAD, thread)
        return ThreadResult(
            thread=thread,
            title=str(replay.meta.get("title") or ""),
            created=replay.meta.get("created"),
            running=thread in self._tasks.running_threads,
            turns=[turn.to_json() for turn in replay.turns],
            usage=usage_summary(replay.usage()),
        )

    # --- lich.rewind ---

    async def rewind(self, params: RewindParams, request_id: Any) -> RewindResult:
        thread = _check_id(REWIND, params.thread)
        number = params.turn
        replay = self.check_can_continue(REWIND, thread)
        if number > len(replay.turns):
            raise BadArguments(
                f"{REWIND}: thread {thread} has {len(replay.turns)} turn(s), no turn {number}"
            )
        target = replay.turns[number - 1]
        if target.discarded_by:
            raise BadArguments(
                f"{REWIND}: turn {number} of thread {thread} was already rewound "
                f"(rewind {target.discarded_by})"
            )
        # Busy from here to the rewind record, with nothing awaited before: a follow-up or a
        # second rewind meanwhile would be taken back by this one's record, or build on turns
        # this one is taking back.
        self._rewinding.add(thread)
        try:
            return result_of(RewindResult, await self._rewind(thread, number, target, replay))
        finally:
            self._rewinding.discard(thread)

    async def _rewind(
        self, thread: str, number: int, target: Turn, replay: Replay
    ) -> dict[str, Any]:
        rewound = [turn for turn in replay.live_turns() if turn.number >= number]
        entries, not_restored = self._journal.entries_for_turns(rewound)
        files: list[dict[str, Any]] = []
        error = None
        if entries:
            label = f"lich: rewind thread to before turn {number}"
            reports, error = await self._undo.undo_entries(entries, label)
            files = reports or []
        # The conversation goes back even where a file could not: the model is told what stayed.
        self.store().rewind(thread, target.run_id)
        kept = [f["path"] for f in files if f["outcome"] in ("refused", "failed")]
        kept += [name for item in not_restored for name in item["files"]]
        if kept:
            self._notes.add(
                "The user rewound the conversation to before their request "
                f"{target.prompt[:80]!r}, but these files keep changes from the rewound turns: "
                f"{', '.join(dict.fromkeys(kept))}. Read them before editing."
            )
        message = rewind_message(target.prompt, rewound, files, not_restored)
        ok = not kept and error is None
        kind = types.MessageType.Info if ok else types.MessageType.Warning
        if self._features.task_notifications:
            self._messages.log(message, kind)  # the chat that asked shows `message` itself
        else:
            self._messages.show_message(message, kind)
        result: dict[str, Any] = {
            "thread": thread,
            "turn": number,
            "rewound": [turn.number for turn in rewound],
            "ok": ok,
            "files": files,
            "not_restored": not_restored,
            "message": message,
        }
        if error is not None:
            result["error"] = error
        return result


def _check_id(command: str, thread: str) -> str:
    """`thread` if it is a thread id (the core's rule), else InvalidParams `invalid_thread_id:`."""
    try:
        return check_thread_id(thread)
    except InvalidThreadId as err:
        raise BadArguments(f"{command}: {err}") from None
