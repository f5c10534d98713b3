"""Agent tasks: each `lich.ask` runs as its own asyncio task while the server keeps serving.

A task owns a cancel token, an EditorWorkspace, an optional work-done progress token and a
transcript. Three ways stop it: the progress cancel button (window/workDoneProgress/cancel),
`$/cancelRequest` on the lich.ask request, and `lich.cancel`. Each fires the token (the agent
aborts its model call and tools, killing their processes); if the run has not ended within
CANCEL_HARD_STOP_S the asyncio task itself is cancelled. Edits are atomic WorkspaceEdits and a
review overlay is discarded on cancel, so no patch is left half-applied.

Limits on what a task sends the editor (docs/lsp.md "Limits"): streamed text is coalesced, so a
task sends at most one text `lich/event` per EVENT_COALESCE_INTERVAL_S (other events flush the
text before them, keeping the order); no `window/logMessage`, `window/showMessage` or
`lich/event` payload passes MAX_EDITOR_MESSAGE_BYTES, and what was cut is said in place
("… [cut N chars]"); only the last MAX_FINISHED_TASKS finished tasks are kept.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import logging
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from lich_core.agent.sessions import new_session_id
from lich_core.errors import EditRejected
from lich_core.tools.guard import CANCEL_GRACE_MS
from lich_core.vocabulary import CancelToken, Message
from lich_core.workspace import FileChange
from lich_lsp.messages import (
    MAX_EDITOR_MESSAGE_BYTES,
    MESSAGE_ENVELOPE_BYTES,
    clip_event,
    clip_text,
    json_size,
)
from lich_lsp.paths import relative_path, uri_to_path
from lich_lsp.review_hunks import user_review_message
from lich_lsp.workspace import EDIT_SETTLE_TIMEOUT_S, EditorWorkspace

if TYPE_CHECKING:
    from lich_core.agent.events import AgentEvent, TextDelta
    from lich_core.config import Config
    from lich_core.hashline.read_state import ReadState
    from lich_lsp.context import SessionContext
    from lich_lsp.journal import TaskJournal
    from lich_lsp.runtimes import ToolRuntimes

log = logging.getLogger("lich.lsp.tasks")

# The backstop after the cooperative path (docs/architecture.md "Cancellation"): a cancelled tool
# has CANCEL_GRACE_MS to clean up (kill and reap its processes), the model call less; the task's
# asyncio task is cancelled only after that, so the hard stop never cuts a tool's cleanup short.
HARD_STOP_MARGIN_S = 1.0
CANCEL_HARD_STOP_S = CANCEL_GRACE_MS / 1000 + HARD_STOP_MARGIN_S
TITLE_MAX_CHARS = 60
FINAL_MESSAGE_MAX_CHARS = 1_000  # the final answer in the log
SHORT_MESSAGE_MAX_CHARS = 120  # its first line in window/showMessage: fits one editor line
LOG_SUMMARY_MAX_CHARS = 300
TRANSCRIPTS_DIR_NAME = "transcripts"
# Streamed text goes to the editor at most once per interval per task: <= 20 lich/event a second.
EVENT_COALESCE_INTERVAL_S = 0.05
# Files named in the final message's "Not applied" line; the rest are counted.
REFUSED_NAMED_FILES = 5
# Finished tasks kept for lich.status; older ones are forgotten first.
MAX_FINISHED_TASKS = 100


class CappedText:
    """Streamed text kept up to `cap_chars` characters; the rest is only counted (`cut`)."""

    def __init__(self, cap_chars: int = MAX_EDITOR_MESSAGE_BYTES) -> None:
        self.cap_chars = cap_chars
        self.parts: list[str] = []
        self.chars = 0
        self.cut = 0

    def add(self, text: str) -> None:
        room = self.cap_chars - self.chars
        if len(text) <= room:
            self.parts.append(text)
            self.chars += len(text)
        else:
            if room > 0:
                self.parts.append(text[:room])
                self.chars += room
            self.cut += len(text) - max(room, 0)

    def take(self) -> tuple[str, int]:
        """(the kept text, how many characters were cut), and start over."""
        text, cut = "".join(self.parts), self.cut
        self.parts, self.chars, self.cut = [], 0, 0
        return text, cut

    def clear(self) -> None:
        self.take()

    def __bool__(self) -> bool:
        return bool(self.chars or self.cut)


@dataclass
class TextBatch:
    """Text deltas waiting to go out as one coalesced lich/event."""

    first: AgentEvent | None = None  # the batch's first text_delta (its envelope)
    last: AgentEvent | None = None  # its latest one (seq, ts)
    turn: int = 0  # the turn of the batch's deltas
    count: int = 0
    text: CappedText = field(default_factory=CappedText)
    timer: asyncio.TimerHandle | None = None


def task_title(prompt: str) -> str:
    first = prompt.strip().splitlines()[0] if prompt.strip() else "task"
    return first if len(first) <= TITLE_MAX_CHARS else first[: TITLE_MAX_CHARS - 1] + "…"


def _picked(config: Config, task: LichTask) -> dict[str, Any]:
    """build_agent's model arguments for the turn's picked model (compression keeps its own)."""
    if task.model is None:
        return {}
    from lich_core.providers.factory import build_model, chosen_model

    return {
        "model": chosen_model(config, task.model),
        "compress_model": build_model(config, "compress"),
    }


def _first_line(text: str) -> str:
    """The first non-blank line, clipped; `…` says there is more (in the log and transcript)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()] or [""]
    first = _clip(lines[0], SHORT_MESSAGE_MAX_CHARS)
    return first if len(lines) == 1 or first.endswith("…") else first + " …"


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class TaskOutcome:
    """How a task ended, as the server reads it; `to_json()` is lich.ask's answer (docs/lsp.md)."""

    task_id: str
    stopped_reason: str
    final: str
    edited: list[str]
    thread: str = ""
    # The thread's number of this turn (lich.thread's `turn`: 1, 2, ... rewound turns included).
    turn: int | None = None
    error: str | None = None
    # In review mode: machine words (error prefixes) for clients and the log, and plain words.
    review: str | None = None
    review_message: str | None = None
    # Edits the editor refused ({uri, error}) and one line saying so to the user.
    refused: list[dict[str, str]] = field(default_factory=list)
    refused_message: str | None = None

    def to_json(self) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "task_id": self.task_id,
            "thread": self.thread,
            "turn": self.turn,
            "stopped_reason": self.stopped_reason,
            "final": self.final,
            "edited": list(self.edited),
        }
        if self.error:
            answer["error"] = self.error
        if self.review:
            answer["review"] = self.review
            answer["review_message"] = self.review_message
        if self.refused:
            answer["refused"] = list(self.refused)
            answer["refused_message"] = self.refused_message
        return answer


@dataclass
class LichTask:
    task_id: str
    title: str
    prompt: str
    mode: str
    cancel: CancelToken
    workspace: EditorWorkspace
    started: float = field(default_factory=time.time)
    state: str = "running"
    turns: int = 0
    tool_calls: int = 0
    progress_token: str | None = None
    future: asyncio.Future[dict[str, Any]] | None = None  # run + wrap-up; what lich.ask awaits
    run_future: asyncio.Future[Any] | None = None  # the agent run alone; what a hard stop cancels
    transcript: list[str] = field(default_factory=list)
    text_buffer: CappedText = field(default_factory=CappedText)  # this turn's text, for the log
    text_batch: TextBatch = field(default_factory=TextBatch)  # streamed text not yet sent
    text_sent_at: float = float("-inf")  # loop time of the last text lich/event
    finished: float | None = None
    cancel_reason: str = ""
    # The run is past the agent, handing its edits to the review: no tool is left to clean up, so
    # a cancel stops it at once (its edit, if sent, still gets EDIT_SETTLE_TIMEOUT_S to be answered).
    wrapping_up: bool = False
    # Files the context already shows the model (@-mentions): read before its first call.
    read_paths: tuple[Path, ...] = ()
    # The repository's rules for the first message (lich_core.project_rules), or None.
    project_rules: str | None = None
    # The conversation this task is a turn of (a session id), and whether it has earlier turns.
    thread: str = ""
    continues: bool = False
    # This turn's number in the thread (its earlier turns, rewound ones included, plus one).
    turn: int = 1
    # A follow-up's history, replayed by lich.ask's check (None: the run reads the thread).
    history: list[Message] | None = None
    # Asked from a chat (lich.ask origin "chat"): the chat shows how it ended.
    from_chat: bool = False
    # The configured provider the user picked for this turn (None: the chat chain).
    model: str | None = None

    @property
    def label(self) -> str:
        return f"lich: {self.title}"

    def status(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "thread": self.thread,
            "title": self.title,
            "state": self.state,
            "mode": self.mode,
            "turns": self.turns,
            "tool_calls": self.tool_calls,
            "elapsed_s": round((self.finished or time.time()) - self.started, 3),
        }


class TaskManager:
    def __init__(
        self, *, ctx: SessionContext, journal: TaskJournal, runtimes: ToolRuntimes
    ) -> None:
        self._journal = journal
        # (mode, title) -> the task's EditorWorkspace; set once the workspaces' parts exist
        # (they include the review store, which records accepted hunks here): use_workspaces.
        self._new_workspace: Callable[[str, str], EditorWorkspace] | None = None
        self._runtimes = runtimes
        self._holder = ctx.holder
        self._features = ctx.features
        self._port = ctx.port
        self._messages = ctx.messages
        self._root = ctx.root
        self._ids = itertools.count(1)
        self.tasks: dict[str, LichTask] = {}
        self.by_progress_token: dict[str, LichTask] = {}
        self.by_request_id: dict[str, LichTask] = {}
        self._finished: deque[str] = deque()  # ids of finished tasks, oldest first
        # thread -> the id of the task running a turn of it (one at a time: never interleaved).
        self.running_threads: dict[str, str] = {}
        # thread -> the lines its last task wrote: the next turn is told the user's edits to them.
        self._thread_lines: OrderedDict[str, dict[str, Any]] = OrderedDict()

    def use_workspaces(self, new_workspace: Callable[[str, str], EditorWorkspace]) -> None:
        """(mode, title) -> a task's EditorWorkspace: the session sets it once the workspaces'
        parts are built (before any command can run)."""
        self._new_workspace = new_workspace

    def running(self) -> list[LichTask]:
        return [task for task in self.tasks.values() if task.state == "running"]

    def record_changes(self, task_id: str, changes: Sequence[FileChange]) -> None:
        """Journal `changes` as task `task_id`'s, for edits applied on its behalf outside its own
        workspace (review hunks the user accepts after the task ended), so undoing it takes them too."""
        task = self.tasks.get(task_id)
        entry = self._journal.get(task_id)
        title = task.title if task is not None else entry.title if entry is not None else task_id
        started = (
            task.started
            if task is not None
            else entry.started
            if entry is not None
            else time.time()
        )
        self._journal.recorder(task_id, title, started)(changes)

    # --- starting ---

    async def ask(
        self,
        prompt: str,
        *,
        context: str | None,
        mode: str,
        request_id: Any = None,
        read_paths: Sequence[Path] = (),
        project_rules: str | None = None,
        thread: str | None = None,
        new_thread: str | None = None,
        earlier_turns: int = 0,
        history: Sequence[Message] | None = None,
        from_chat: bool = False,
        model: str | None = None,
    ) -> dict[str, Any]:
        """Run one agent task to its end (the lich.ask request `request_id` waits for it).

        `read_paths`: files the context shows as anchored rows (@-mentions), recorded as read
        so the model can patch them without a read_file first. `thread`: the conversation to
        continue (the caller checked it exists and runs nothing); None starts a new one, with
        the id `new_thread` when the client chose one."""
        # Ids continue past the undo journal's, which outlive the server: lich.undoTask names one.
        task_id = self._journal.fresh_task_id(self._ids)
        title = task_title(prompt)
        if self._new_workspace is None:
            raise RuntimeError("TaskManager.use_workspaces was not called")
        workspace = self._new_workspace(mode, f"lich: {title}")
        task = LichTask(task_id, title, prompt, mode, CancelToken(), workspace)
        task.read_paths = tuple(read_paths)
        task.project_rules = project_rules
        task.from_chat = from_chat
        task.model = model
        # Registered before the first await: a second ask on this thread sees it running.
        task.continues = thread is not None
        task.turn = earlier_turns + 1
        # The thread's history as the caller's check replayed it: the run continues from it
        # instead of reading the thread file again.
        task.history = list(history) if history is not None else None
        task.thread = thread or new_thread or new_session_id()
        self.running_threads[task.thread] = task_id
        if thread is not None:
            workspace.agent_lines.update(self._thread_lines.pop(thread, {}))
        workspace.on_applied = self._journal.recorder(task_id, title, task.started)
        workspace.task_id = task_id
        self.tasks[task_id] = task
        if request_id is not None:
            self.by_request_id[str(request_id)] = task
        try:
            await self._begin_progress(task)
        except asyncio.CancelledError:
            # $/cancelRequest before the task started: it must not stay "running" in lich.status.
            self._finish(task)
            raise
        task.future = asyncio.ensure_future(self._drive(task, context))
        try:
            return await asyncio.shield(task.future)
        except asyncio.CancelledError:
            # $/cancelRequest on lich.ask: stop the task, then let pygls answer "cancelled".
            self.cancel_task(task, "request cancelled")
            await asyncio.wait({task.future}, timeout=CANCEL_HARD_STOP_S + EDIT_SETTLE_TIMEOUT_S)
            raise

    def _finish(self, task: LichTask) -> None:
        if task.state == "done":
            return
        task.state = "done"
        task.finished = time.time()
        if self.running_threads.get(task.thread) == task.task_id:
            del self.running_threads[task.thread]
        if task.workspace.agent_lines:
            self._thread_lines[task.thread] = dict(task.workspace.agent_lines)
            while len(self._thread_lines) > MAX_FINISHED_TASKS:
                self._thread_lines.popitem(last=False)
        for key in [k for k, v in self.by_request_id.items() if v is task]:
            self.by_request_id.pop(key, None)
        # Keep the last MAX_FINISHED_TASKS finished tasks (lich.status would grow forever).
        self._finished.append(task.task_id)
        while len(self._finished) > MAX_FINISHED_TASKS:
            old = self.tasks.pop(self._finished.popleft(), None)
            if old is not None and old.progress_token is not None:
                self.by_progress_token.pop(old.progress_token, None)

    async def _drive(self, task: LichTask, context: str | None) -> dict[str, Any]:
        """The run, then the wrap-up (progress end, message, transcript) that a cancel never cuts short."""
        # Only the run is hard-stopped after a cancel: cancelling the wrap-up would turn a
        # finished task's answer into a "request cancelled" error.
        task.run_future = asyncio.ensure_future(self._run(task, context))
        try:
            stopped_reason, final, error, review_note = await task.run_future
        except asyncio.CancelledError:
            stopped_reason, final, error, review_note = (
                "aborted",
                "",
                task.cancel_reason or "cancelled",
                "",
            )
            task.workspace.discard_overlay()
            if task.wrapping_up:
                # Cancelled while its reviewed edit was out: send_changes put any disk part back.
                review_note = (
                    "review_cancelled: the task was cancelled while its changes were being applied"
                )
                task.workspace.review_summary = (
                    None
                    if task.workspace.edited_uris
                    else (
                        "No changes applied: the task was cancelled before the editor applied them."
                    )
                )
        finally:
            # The agent gives up on a cancelled tool call after a short grace, but an edit already
            # sent to the editor is still answered: wait for it, so `edited` says what landed.
            if not await task.workspace.settle():
                log.warning("task %s: an edit is still unanswered by the editor", task.task_id)
            self._finish(task)
        self._send_text(task)
        self._flush_text(task)
        if review_note:
            self._log(task, f"review: {review_note}")
        refused = task.workspace.refused
        outcome = TaskOutcome(
            task_id=task.task_id,
            thread=task.thread,
            turn=task.turn,
            stopped_reason=stopped_reason,
            final=final,
            edited=list(task.workspace.edited_uris),
            error=error,
            review=review_note or None,
            review_message=(task.workspace.review_summary or user_review_message(review_note))
            if review_note
            else None,
            # The model was told (its tool failed) but may claim the edit anyway: the user hears it first.
            refused=[{"uri": uri, "error": why} for uri, why in refused.items()],
            refused_message=refused_message(self._root, refused) if refused else None,
        )
        self._end_progress(task, stopped_reason)
        transcript = await self._announce(task, outcome)
        answer = outcome.to_json()
        if transcript is not None:
            # For a client that opens it when the user asks (it is not put in front of them).
            answer["transcript"] = transcript.as_uri()
        return answer

    async def _run(self, task: LichTask, context: str | None) -> tuple[str, str, str | None, str]:
        """The agent run and, in review mode, the reviewed edit: (stopped_reason, final, error, review_note)."""
        try:
            from lich_core.agent.factory import build_agent  # heavy: only when a task runs

            # The task's settings are the config of now, for its whole run: a config reloaded
            # meanwhile (lich_lsp.session.reload_config_files) is the next task's. The agent,
            # the tool runtime it borrows (kept open until the run ends) and the workspace
            # (review style, disk writes, transcript) all hold this one.
            config = task.workspace.config = self._holder.config
            # The session's one runtime for this config: plugins were loaded once, and the
            # commands (lich.tools, lich.runTool) see the same plugin state as the agent.
            with self._runtimes.borrow() as runtime:
                agent = build_agent(
                    config, workspace=task.workspace, runtime=runtime, **_picked(config, task)
                )
                # The run holds the follow-up's history from here; a finished task (kept for
                # lich.status) need not.
                history, task.history = task.history, None
                result = await agent.run(
                    task.prompt,
                    on_event=lambda event: self._on_event(task, event),
                    cancel=task.cancel,
                    context=context,
                    workspace=task.workspace,
                    read_state=_read_state(task.read_paths),
                    edit_label=task.label,
                    project_rules=task.project_rules,
                    resume=task.thread if task.continues else None,
                    resume_history=history,
                    session_id=None if task.continues else task.thread,
                    run_record={"face": "lsp", "task_id": task.task_id},
                )
        except Exception as err:  # noqa: BLE001 - a bad provider/config is a result, not a crash
            task.workspace.discard_overlay()
            log.debug("task %s failed", task.task_id, exc_info=True)
            return "error", "", _error_text(err), ""
        stopped_reason = "aborted" if task.cancel.cancelled else result.stopped_reason
        review_note = ""
        if task.mode == "review":
            if stopped_reason in ("final", "budget"):
                task.wrapping_up = True
                try:
                    review_note = await task.workspace.flush_review(task.label)
                except EditRejected as err:
                    review_note = str(err)
            else:
                task.workspace.discard_overlay()
        return stopped_reason, result.final or "", result.error, review_note

    # --- cancelling ---

    def cancel_task(self, task: LichTask, reason: str) -> None:
        if task.state != "running":
            return
        task.cancel_reason = reason
        task.cancel.cancel("cancelled")
        future = task.run_future
        if future is not None and not future.done():
            if task.wrapping_up:
                future.cancel()
                return
            loop = asyncio.get_running_loop()
            loop.call_later(CANCEL_HARD_STOP_S, _hard_stop, future)

    def cancel(self, task_id: str | None) -> list[str]:
        targets = (
            self.running()
            if task_id is None
            else [t for t in self.running() if t.task_id == task_id]
        )
        for task in targets:
            self.cancel_task(task, "lich.cancel")
        return [t.task_id for t in targets]

    def cancel_for_request(self, request_id: Any) -> None:
        task = self.by_request_id.pop(str(request_id), None)
        if task is not None:
            self.cancel_task(task, "request cancelled")

    def cancel_for_progress(self, token: Any) -> None:
        task = self.by_progress_token.get(str(token))
        if task is not None:
            self.cancel_task(task, "progress cancelled")

    async def cancel_all(self, wait_s: float = 2.0) -> None:
        tasks = self.running()
        for task in tasks:
            self.cancel_task(task, "server shutting down")
        futures = {t.future for t in tasks if t.future is not None}
        if futures:
            await asyncio.wait(futures, timeout=wait_s)

    # --- progress ---

    async def _begin_progress(self, task: LichTask) -> None:
        if not self._features.work_done_progress:
            return
        token = f"lich-{task.task_id}-{uuid.uuid4().hex[:8]}"
        try:
            await self._port.create_progress(token)
        except Exception as err:  # noqa: BLE001 - no progress bar is not worth failing the task
            log.warning("window/workDoneProgress/create failed: %s", err)
            return
        task.progress_token = token
        self.by_progress_token[token] = task
        self._port.progress(
            token,
            types.WorkDoneProgressBegin(
                title=f"{task.label} · thread {task.thread}", cancellable=True, message="starting"
            ),
        )

    def _report(self, task: LichTask, message: str) -> None:
        if task.progress_token is not None and task.state == "running":
            self._port.progress(
                task.progress_token, types.WorkDoneProgressReport(message=message, cancellable=True)
            )

    def _end_progress(self, task: LichTask, stopped_reason: str) -> None:
        token = task.progress_token
        if token is None:
            return
        self._port.progress(token, types.WorkDoneProgressEnd(message=stopped_reason))
        self.by_progress_token.pop(token, None)

    # --- events and transcript ---

    def _log(self, task: LichTask, line: str, already_cut: int = 0) -> None:
        line = clip_text(line, MAX_EDITOR_MESSAGE_BYTES - MESSAGE_ENVELOPE_BYTES, already_cut)
        task.transcript.append(line)
        self._messages.log(f"[{task.task_id}] {line}")

    def _flush_text(self, task: LichTask) -> None:
        if task.text_buffer:
            text, cut = task.text_buffer.take()
            text = text.strip() if not cut else text.lstrip()
            if text or cut:
                self._log(task, f"assistant: {text}", cut)

    def _notify(self, payload: dict[str, Any]) -> None:
        self._port.send_event(clip_event(payload))

    def _queue_text(self, task: LichTask, event: AgentEvent, delta: TextDelta) -> None:
        """Coalesce a text_delta: sent now if the interval since the last text passed, else soon."""
        batch = task.text_batch
        if batch.first is not None and batch.turn != delta.turn:
            self._send_text(task)
        if batch.first is None:
            batch.first = event
            batch.turn = delta.turn
        batch.last = event
        batch.count += 1
        batch.text.add(delta.text)
        loop = asyncio.get_running_loop()
        due = task.text_sent_at + EVENT_COALESCE_INTERVAL_S
        if loop.time() >= due:
            self._send_text(task)
        elif batch.timer is None:
            batch.timer = loop.call_at(due, self._send_text, task)

    def _send_text(self, task: LichTask) -> None:
        """Send the coalesced text waiting in the task's batch (one text_delta lich/event)."""
        batch = task.text_batch
        if batch.timer is not None:
            batch.timer.cancel()
            batch.timer = None
        first, last = batch.first, batch.last
        if first is None or last is None:
            return
        text, cut = batch.text.take()
        count = batch.count
        batch.first = batch.last = None
        batch.count = 0
        from lich_core.agent.events import TextDelta  # the agent's modules load with the first task

        delta = first.data
        assert isinstance(delta, TextDelta)
        joined = dataclasses.replace(delta, text="", coalesced=count if count > 1 else None)
        merged = dataclasses.replace(first, seq=last.seq, ts=last.ts, data=joined).to_dict()
        merged["task_id"] = task.task_id
        merged["thread"] = task.thread
        merged["data"]["text"] = clip_text(text, MAX_EDITOR_MESSAGE_BYTES - json_size(merged), cut)
        task.text_sent_at = asyncio.get_running_loop().time()
        self._notify(merged)

    def _on_event(self, task: LichTask, event: AgentEvent) -> None:
        from lich_core.agent.events import (  # the agent's modules load with the first task
            LlmEnd,
            LlmRetry,
            PluginWarning,
            RunError,
            TextDelta,
            ToolCallEnd,
            ToolCallStart,
            TurnStart,
        )

        data = event.data
        if isinstance(data, TextDelta):
            task.text_buffer.add(data.text)
            self._queue_text(task, event, data)
            return
        self._send_text(task)  # the text before this event goes first: the order is kept
        payload = event.to_dict()
        payload["task_id"] = task.task_id
        payload["thread"] = task.thread
        self._notify(payload)
        if isinstance(data, TurnStart):
            task.turns = data.turn
            self._report(task, f"turn {task.turns}")
        elif isinstance(data, LlmEnd):
            self._flush_text(task)
        elif isinstance(data, ToolCallStart):
            self._flush_text(task)
            task.tool_calls += 1
            self._log(task, f"→ {data.name} {_clip(_json(data.arguments), LOG_SUMMARY_MAX_CHARS)}")
            self._report(task, f"turn {task.turns}: {data.name}")
        elif isinstance(data, ToolCallEnd):
            if data.ok:
                self._log(task, f"← {data.name} ok: {_clip(data.summary, LOG_SUMMARY_MAX_CHARS)}")
            else:
                self._log(
                    task, f"← {data.name} error: {_clip(data.error or '', LOG_SUMMARY_MAX_CHARS)}"
                )
        elif isinstance(data, RunError):
            self._log(task, f"error: {data.message}")
        elif isinstance(data, PluginWarning):
            self._log(task, f"plugin warning: {data.message}")
        elif isinstance(data, LlmRetry):
            # The broken stream's text is void: the next attempt streams the answer from the start.
            task.text_buffer.clear()
            action = (
                "retrying" if data.action == "retry" else f"failing over to {data.next_provider}"
            )
            self._log(task, f"provider {data.provider} failed ({data.kind}): {action}")

    async def _announce(self, task: LichTask, outcome: TaskOutcome) -> Path | None:
        """The final message, and the transcript written (its path; None if it could not be)."""
        reason = outcome.stopped_reason
        if reason == "final":
            kind, text = types.MessageType.Info, outcome.final or "(no answer)"
        elif reason == "error":
            kind, text = types.MessageType.Error, f"failed: {outcome.error or 'unknown error'}"
        elif reason == "aborted":
            kind, text = types.MessageType.Warning, "cancelled"
        else:
            kind, text = types.MessageType.Warning, f"stopped ({reason}): {outcome.final or ''}"
        happened = [
            message for message in (outcome.refused_message, outcome.review_message) if message
        ]
        if happened:
            # What happened to the files first, in plain words; the agent's claim after it.
            text = "\n".join(happened) + f"\nThe agent said: {text}"
        whole = f"{task.label}: {_clip(text, FINAL_MESSAGE_MAX_CHARS)}"
        if task.from_chat or self._features.task_notifications:
            # The chat, or the client's own notification, shows how it ended.
            self._messages.log(whole, kind)
        elif self._features.lich_client:
            # Its plugin shows the run (chat, transcript): one short line, since a longer one is
            # a hit-enter prompt in Neovim. The whole answer goes to the log.
            self._messages.log(whole, kind)
            self._messages.show_message(f"{task.label}: {_first_line(text)}", kind)
        else:
            # A plain client (Kate, Helix) shows nothing else of the run: the message is all.
            self._messages.show_message(whole, kind)
        path = self._write_transcript(task, outcome)
        # Only where the user or the editor's integration asks: in front of the user's file it
        # hides the file (in review mode, the one whose hunks wait for an answer).
        wanted = task.workspace.task_config().settings.show_transcript
        if path is not None and wanted and self._features.show_document:
            try:
                await self._port.show_document(
                    types.ShowDocumentParams(uri=path.as_uri(), take_focus=False)
                )
            except Exception as err:  # noqa: BLE001 - the transcript stays on disk regardless
                log.warning("window/showDocument failed: %s", err)
        return path

    def _write_transcript(self, task: LichTask, outcome: TaskOutcome) -> Path | None:
        from lich_core.userstate import workspace_state_dir, write_state_bytes

        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(task.started))
        # The user state dir, not the repository's .lich/: a symlink there cannot redirect the write.
        path = workspace_state_dir(self._root) / TRANSCRIPTS_DIR_NAME / f"{stamp}-{task.task_id}.md"
        lines = [f"# {task.label}", "", "## Prompt", "", task.prompt, "", "## Transcript", ""]
        lines += [_markdown_entry(line) for line in task.transcript]
        lines += [
            "",
            f"## Outcome: {outcome.stopped_reason}",
            "",
            outcome.final or outcome.error or "",
        ]
        if outcome.edited:
            lines += ["", "Edited:", *[f"- {uri}" for uri in outcome.edited]]
        if outcome.refused_message:
            lines += ["", outcome.refused_message]
        try:
            # Not through a link, not into a dir others can write (lich_core.userstate).
            write_state_bytes(path, ("\n".join(lines) + "\n").encode("utf-8"))
        except OSError as err:
            log.warning("could not write transcript %s: %s", path, err)
            return None
        return path


def refused_message(root: Path, refused: dict[str, str]) -> str:
    """Plain words for the task's edits that were not applied (apply mode: the editor answered
    applied: false or nothing, the disk write failed), naming the files."""
    names = []
    for uri in refused:
        path = uri_to_path(uri)
        names.append(relative_path(root, path) if path is not None else uri)
    reasons = sorted(set(refused.values()))
    shown = ", ".join(names[:REFUSED_NAMED_FILES]) + (
        f" and {len(names) - REFUSED_NAMED_FILES} more" if len(names) > REFUSED_NAMED_FILES else ""
    )
    files = "that file" if len(names) == 1 else "those files"
    return f"Not applied: the agent's edit to {shown} was refused ({'; '.join(reasons)}); it is not in {files}."


def _markdown_entry(line: str) -> str:
    """Tool calls and results go in as indented code blocks, every line of them (anchored rows)."""
    if line.startswith(("→", "←")):
        return "\n".join(f"    {part}" for part in line.split("\n"))
    return line


def _hard_stop(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.cancel()


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)


def _read_state(paths: tuple[Path, ...]) -> ReadState:
    from lich_core.hashline.read_state import ReadState

    state = ReadState()
    for path in paths:
        state.record(path)
    return state


def _error_text(err: BaseException) -> str:
    text = str(err).strip()
    return text or type(err).__name__
