"""Agent tasks: each `lich.ask` runs as its own asyncio task while the server keeps serving.

A task owns a cancel token, an EditorWorkspace, an optional work-done progress token and a
transcript. Three ways stop it: the progress cancel button (window/workDoneProgress/cancel),
`$/cancelRequest` on the lich.ask request, and `lich.cancel`. Each fires the token (the agent
aborts its model call and tools, killing their processes); if the run has not ended within
CANCEL_HARD_STOP_S the asyncio task itself is cancelled. Edits are atomic WorkspaceEdits and a
review overlay is discarded on cancel, so no patch is left half-applied.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from lich_core.errors import EditRejected
from lich_core.tools.types import CancelToken
from lich_lsp.workspace import EDIT_SETTLE_TIMEOUT_S, EditorWorkspace

if TYPE_CHECKING:
    from lich_lsp.server import LichLanguageServer

log = logging.getLogger("lich.lsp.tasks")

CANCEL_HARD_STOP_S = 0.8
TITLE_MAX_CHARS = 60
FINAL_MESSAGE_MAX_CHARS = 1_000
LOG_SUMMARY_MAX_CHARS = 300
TRANSCRIPTS_DIR_NAME = "transcripts"


def task_title(prompt: str) -> str:
    first = prompt.strip().splitlines()[0] if prompt.strip() else "task"
    return first if len(first) <= TITLE_MAX_CHARS else first[: TITLE_MAX_CHARS - 1] + "…"


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
    text_buffer: list[str] = field(default_factory=list)
    cancel_reason: str = ""

    @property
    def label(self) -> str:
        return f"lich: {self.title}"

    def status(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "title": self.title,
            "state": self.state,
            "mode": self.mode,
            "turns": self.turns,
            "tool_calls": self.tool_calls,
            "elapsed_s": round(time.time() - self.started, 3),
        }


class TaskManager:
    def __init__(self, server: LichLanguageServer) -> None:
        self._server = server
        self._ids = itertools.count(1)
        self.tasks: dict[str, LichTask] = {}
        self.by_progress_token: dict[str, LichTask] = {}
        self.by_request_id: dict[str, LichTask] = {}

    def running(self) -> list[LichTask]:
        return [task for task in self.tasks.values() if task.state == "running"]

    # --- starting ---

    async def ask(self, prompt: str, *, context: str | None, mode: str) -> dict[str, Any]:
        """Run one agent task to its end (the lich.ask request waits for it)."""
        task_id = f"t{next(self._ids)}"
        title = task_title(prompt)
        workspace = EditorWorkspace(self._server, mode=mode, title=f"lich: {title}")
        task = LichTask(task_id, title, prompt, mode, CancelToken(), workspace)
        self.tasks[task_id] = task
        request_id = self._server.protocol.msg_id
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
        task.state = "done"
        for key in [k for k, v in self.by_request_id.items() if v is task]:
            self.by_request_id.pop(key, None)

    async def _drive(self, task: LichTask, context: str | None) -> dict[str, Any]:
        """The run, then the wrap-up (progress end, message, transcript) that a cancel never cuts short."""
        # Only the run is hard-stopped after a cancel: cancelling the wrap-up would turn a
        # finished task's answer into a "request cancelled" error.
        task.run_future = asyncio.ensure_future(self._run(task, context))
        try:
            stopped_reason, final, error, review_note = await task.run_future
        except asyncio.CancelledError:
            stopped_reason, final, error, review_note = "aborted", "", task.cancel_reason or "cancelled", ""
            task.workspace.discard_overlay()
        finally:
            # The agent gives up on a cancelled tool call after a short grace, but an edit already
            # sent to the editor is still answered: wait for it, so `edited` says what landed.
            if not await task.workspace.settle():
                log.warning("task %s: an edit is still unanswered by the editor", task.task_id)
            self._finish(task)
        self._flush_text(task)
        if review_note:
            self._log(task, f"review: {review_note}")
        outcome = {
            "task_id": task.task_id,
            "stopped_reason": stopped_reason,
            "final": final,
            "edited": list(task.workspace.edited_uris),
        }
        if error:
            outcome["error"] = error
        if review_note:
            outcome["review"] = review_note
        self._end_progress(task, stopped_reason)
        await self._announce(task, outcome)
        return outcome

    async def _run(self, task: LichTask, context: str | None) -> tuple[str, str, str | None, str]:
        """The agent run and, in review mode, the reviewed edit: (stopped_reason, final, error, review_note)."""
        state = self._server.lich
        try:
            from lich_core.agent.factory import build_agent  # heavy: only when a task runs

            agent = build_agent(state.config, workspace=task.workspace, guards=(state.guard,))
            result = await agent.run(
                task.prompt,
                on_event=lambda event: self._on_event(task, event),
                cancel=task.cancel,
                context=context,
                workspace=task.workspace,
                edit_label=task.label,
            )
        except Exception as err:  # noqa: BLE001 - a bad provider/config is a result, not a crash
            task.workspace.discard_overlay()
            log.debug("task %s failed", task.task_id, exc_info=True)
            return "error", "", _error_text(err), ""
        stopped_reason = "aborted" if task.cancel.cancelled else result.stopped_reason
        review_note = ""
        if task.mode == "review":
            if stopped_reason in ("final", "budget"):
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
            loop = asyncio.get_running_loop()
            loop.call_later(CANCEL_HARD_STOP_S, _hard_stop, future)

    def cancel(self, task_id: str | None) -> list[str]:
        targets = self.running() if task_id is None else [t for t in self.running() if t.task_id == task_id]
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

    def _progress_supported(self) -> bool:
        window = self._server.client_capabilities.window
        return bool(window and window.work_done_progress)

    async def _begin_progress(self, task: LichTask) -> None:
        if not self._progress_supported():
            return
        token = f"lich-{task.task_id}-{uuid.uuid4().hex[:8]}"
        try:
            await self._server.work_done_progress.create_async(token)
        except Exception as err:  # noqa: BLE001 - no progress bar is not worth failing the task
            log.warning("window/workDoneProgress/create failed: %s", err)
            return
        task.progress_token = token
        self.by_progress_token[token] = task
        self._server.work_done_progress.begin(
            token,
            types.WorkDoneProgressBegin(title=task.label, cancellable=True, message="starting"),
        )

    def _report(self, task: LichTask, message: str) -> None:
        if task.progress_token is not None and task.state == "running":
            self._server.work_done_progress.report(
                task.progress_token, types.WorkDoneProgressReport(message=message, cancellable=True)
            )

    def _end_progress(self, task: LichTask, stopped_reason: str) -> None:
        token = task.progress_token
        if token is None:
            return
        self._server.work_done_progress.end(token, types.WorkDoneProgressEnd(message=stopped_reason))
        self._server.work_done_progress.tokens.pop(token, None)
        self.by_progress_token.pop(token, None)

    # --- events and transcript ---

    def _log(self, task: LichTask, line: str) -> None:
        task.transcript.append(line)
        self._server.lich.log(f"[{task.task_id}] {line}")

    def _flush_text(self, task: LichTask) -> None:
        if task.text_buffer:
            text = "".join(task.text_buffer).strip()
            task.text_buffer.clear()
            if text:
                self._log(task, f"assistant: {text}")

    def _on_event(self, task: LichTask, event: Any) -> None:
        payload = event.to_dict()
        payload["task_id"] = task.task_id
        self._server.protocol.notify("lich/event", payload)
        data = payload.get("data") or {}
        kind = payload.get("type")
        if kind == "text_delta":
            task.text_buffer.append(str(data.get("text", "")))
        elif kind == "turn_start":
            task.turns = int(data.get("turn", task.turns + 1))
            self._report(task, f"turn {task.turns}")
        elif kind == "llm_end":
            self._flush_text(task)
        elif kind == "tool_call_start":
            self._flush_text(task)
            task.tool_calls += 1
            name = data.get("name", "?")
            arguments = data.get("arguments")
            self._log(task, f"→ {name} {_clip(_json(arguments), LOG_SUMMARY_MAX_CHARS)}")
            self._report(task, f"turn {task.turns}: {name}")
        elif kind == "tool_call_end":
            name = data.get("name", "?")
            if data.get("ok"):
                self._log(task, f"← {name} ok: {_clip(str(data.get('summary', '')), LOG_SUMMARY_MAX_CHARS)}")
            else:
                self._log(task, f"← {name} error: {_clip(str(data.get('error', '')), LOG_SUMMARY_MAX_CHARS)}")
        elif kind == "error":
            self._log(task, f"error: {data.get('message', '')}")
        elif kind == "plugin_warning":
            self._log(task, f"plugin warning: {data.get('message', '')}")
        elif kind == "llm_retry":
            # The broken stream's text is void: the next attempt streams the answer from the start.
            task.text_buffer.clear()
            action = "retrying" if data.get("action") == "retry" else f"failing over to {data.get('next_provider', '?')}"
            self._log(task, f"provider {data.get('provider', '?')} failed ({data.get('kind', '?')}): {action}")

    async def _announce(self, task: LichTask, outcome: dict[str, Any]) -> None:
        reason = outcome["stopped_reason"]
        if reason == "final":
            kind, text = types.MessageType.Info, outcome["final"] or "(no answer)"
        elif reason == "error":
            kind, text = types.MessageType.Error, f"failed: {outcome.get('error') or 'unknown error'}"
        elif reason == "aborted":
            kind, text = types.MessageType.Warning, "cancelled"
        else:
            kind, text = types.MessageType.Warning, f"stopped ({reason}): {outcome['final'] or ''}"
        if outcome.get("review"):
            text += f"\n(review: {outcome['review']})"
        self._server.window_show_message(
            types.ShowMessageParams(type=kind, message=f"{task.label}: {_clip(text, FINAL_MESSAGE_MAX_CHARS)}")
        )
        path = self._write_transcript(task, outcome)
        window = self._server.client_capabilities.window
        show_document = window.show_document if window else None
        if path is not None and show_document is not None and show_document.support:
            try:
                await self._server.window_show_document_async(
                    types.ShowDocumentParams(uri=path.as_uri(), take_focus=False)
                )
            except Exception as err:  # noqa: BLE001 - the transcript stays on disk regardless
                log.warning("window/showDocument failed: %s", err)

    def _write_transcript(self, task: LichTask, outcome: dict[str, Any]) -> Path | None:
        from lich_core.userstate import workspace_state_dir

        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(task.started))
        # The user state dir, not the repository's .lich/: a symlink there cannot redirect the write.
        path = workspace_state_dir(self._server.lich.root) / TRANSCRIPTS_DIR_NAME / f"{stamp}-{task.task_id}.md"
        lines = [f"# {task.label}", "", "## Prompt", "", task.prompt, "", "## Transcript", ""]
        lines += [_markdown_entry(line) for line in task.transcript]
        lines += ["", f"## Outcome: {outcome['stopped_reason']}", "", outcome["final"] or outcome.get("error") or ""]
        if outcome["edited"]:
            lines += ["", "Edited:", *[f"- {uri}" for uri in outcome["edited"]]]
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        except OSError as err:
            log.warning("could not write transcript %s: %s", path, err)
            return None
        return path


def _markdown_entry(line: str) -> str:
    """Tool calls and results go in as indented code blocks, every line of them (anchored rows)."""
    if line.startswith(("→", "←")):
        return "\n".join(f"    {part}" for part in line.split("\n"))
    return line


def _hard_stop(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.cancel()


def _json(value: Any) -> str:
    import json

    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)


def _error_text(err: BaseException) -> str:
    text = str(err).strip()
    return text or type(err).__name__
