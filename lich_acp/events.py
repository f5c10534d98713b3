"""Agent events → ACP session updates, the history replay of session/load, and the bridge that
carries calls from the agent's loop (worker thread) to the client's connection (main loop)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from acp import (
    plan_entry,
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    tool_terminal_ref,
    update_agent_message_text,
    update_plan,
    update_tool_call,
    update_user_message_text,
)
from acp.schema import ToolCallLocation, ToolKind

from lich_core.agent.events import PlanUpdate
from lich_core.agent.targets import PLAN_TOOL, describe_tool_call
from lich_core.errors import ToolError
from lich_core.tools.builtin.update_plan import parse_plan
from lich_core.vocabulary import CancelToken, Message
from lich_core.workspace import FileChange

T = TypeVar("T")

# How long a synchronous call to the client (a file read) may take.
SYNC_CALL_TIMEOUT_S = 30.0
# How a review's outcome starts in the session history (a user-role note lich adds for the model).
REVIEW_NOTE_PREFIX = "[lich review] "


class ClientBridge:
    """Calls into the client's connection (on `client_loop`) from the agent's loop."""

    def __init__(self, conn: Any, client_loop: asyncio.AbstractEventLoop, session_id: str) -> None:
        self.conn = conn
        self.client_loop = client_loop
        self.session_id = session_id

    def _submit(self, make: Callable[[], Awaitable[T]]) -> concurrent.futures.Future[T]:
        async def run() -> T:
            return await make()

        return asyncio.run_coroutine_threadsafe(run(), self.client_loop)

    async def call(self, make: Callable[[], Awaitable[T]], cancel: CancelToken | None = None) -> T:
        """Await `make()` on the client's loop; a fired `cancel` abandons the wait (CancelledError)."""
        future = asyncio.wrap_future(self._submit(make))
        if cancel is None:
            return await future

        def abandon() -> None:
            future.cancel()

        remove = cancel.on_cancel(abandon)
        try:
            return await future
        finally:
            remove()

    def post(self, make: Callable[[], Awaitable[Any]]) -> None:
        """Start `make()` on the client's loop without waiting (clean-up from a cancelled task)."""
        self._submit(make)

    def call_sync(
        self, make: Callable[[], Awaitable[T]], timeout_s: float = SYNC_CALL_TIMEOUT_S
    ) -> T:
        """Block the calling (agent) thread on `make()` run on the client's loop."""
        return self._submit(make).result(timeout_s)

    async def update(self, update: Any) -> None:
        await self.call(lambda: self.conn.session_update(session_id=self.session_id, update=update))


# --- tool presentation ---


def tool_call_view(
    root: Path, name: str, args: dict[str, Any], capability: str | None
) -> tuple[str, ToolKind, list[ToolCallLocation] | None]:
    """(title, kind, locations) of a call, from the core's one description of tool calls
    (lich_core.agent.targets), as the editors' chats show it too."""
    described = describe_tool_call(name, args, capability)
    locations = [ToolCallLocation(path=path) for path in described.locations(root)]
    return described.title, described.kind, locations or None


def diff_items(changes: Iterable[FileChange]) -> list[Any]:
    return [
        tool_diff_content(str(change.path), change.new_text or "", change.base_text)
        for change in changes
    ]


def tool_start_update(
    call_id: str, name: str, args: dict[str, Any], capability: str | None, root: Path
) -> Any:
    """`tool_call`, pending: the call has not run yet and may still await the user's approval
    (`tool_running_update` follows once every check let it through)."""
    title, kind, locations = tool_call_view(root, name, args, capability)
    return start_tool_call(
        call_id, title, kind=kind, status="pending", locations=locations, raw_input=args
    )


def tool_running_update(call_id: str) -> Any:
    """`tool_call_update` in_progress: the approval (if any) was granted and the tool runs now."""
    return update_tool_call(call_id, status="in_progress")


def failure_content(output: str, error: str | None) -> list[Any]:
    """What a failed call shows: the tool's error as text (after whatever output it had), never
    the `{"ok": false, ...}` envelope the model reads."""
    texts = [text for text in (output, error) if text]
    return [tool_content(text_block(text)) for text in texts]


def tool_end_update(
    call_id: str,
    ok: bool,
    output: str,
    changes: Iterable[FileChange],
    terminals: Iterable[str] = (),
    error: str | None = None,
) -> Any:
    """The call's last update: its output as text (a failure's: its output, if any, then its
    error), or, for a command that ran in the client's terminal, that terminal (the client shows
    its output; the text the model read is rawOutput, and a failure's error is added as text),
    plus a diff per changed file. `output` is the tool's own text, not the model's JSON envelope."""
    terminal_ids = list(terminals)
    raw_output: str | None = None
    if terminal_ids:
        content: list[Any] = [tool_terminal_ref(terminal_id) for terminal_id in terminal_ids]
        if not ok and error:
            content.append(tool_content(text_block(error)))
        raw_output = output
    elif ok:
        content = [tool_content(text_block(output))] if output else []
    else:
        content = failure_content(output, error)
    content.extend(diff_items(changes))
    return update_tool_call(
        call_id,
        status="completed" if ok else "failed",
        content=content or None,
        raw_output=raw_output,
    )


def terminal_update(call_id: str, terminal_id: str) -> Any:
    """The running call shows the client's terminal (as soon as it exists, so output streams)."""
    return update_tool_call(call_id, status="in_progress", content=[tool_terminal_ref(terminal_id)])


def _replayed_plan(arguments: dict[str, Any]) -> list[Any]:
    """The plan an update_plan call stated (none for a call the tool refused)."""
    try:
        entries, explanation = parse_plan(arguments)
    except ToolError:
        return []
    return [plan_update(PlanUpdate.from_reported(entries, explanation))]


def plan_update(data: PlanUpdate) -> Any:
    return update_plan(
        plan_entry(entry.content, priority=entry.priority, status=entry.status)
        for entry in data.entries
    )


def text_update(text: str) -> Any:
    return update_agent_message_text(text)


# --- session/load ---


def _failed_result(content: str) -> tuple[str, str | None] | None:
    """A tool message holding a failed result (format_tool_result's JSON with ok false): its
    output and error; None for any other content (a success's raw output)."""
    if not content.startswith("{"):
        return None
    try:
        data = json.loads(content)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("ok") is not False:
        return None
    output, error = data.get("output"), data.get("error")
    return (output if isinstance(output, str) else "", error if isinstance(error, str) else None)


def replay_updates(
    messages: Iterable[Message], root: Path, capability_of: Callable[[str], str | None]
) -> list[Any]:
    """The stored history as session updates: user and agent messages, tool calls and results."""
    updates: list[Any] = []
    for message in messages:
        if message.role == "user" and message.content.startswith(REVIEW_NOTE_PREFIX):
            updates.append(
                update_agent_message_text(
                    f"\n\nlich: review: {message.content[len(REVIEW_NOTE_PREFIX) :]}"
                )
            )
        elif message.role == "user":
            updates.append(update_user_message_text(message.content))
        elif message.role == "assistant":
            if message.content:
                updates.append(update_agent_message_text(message.content))
            for call in message.tool_calls:
                title, kind, locations = tool_call_view(
                    root, call.name, call.arguments, capability_of(call.name)
                )
                updates.append(
                    start_tool_call(
                        call.id,
                        title,
                        kind=kind,
                        status="pending",
                        locations=locations,
                        raw_input=call.arguments,
                    )
                )
                if call.name == PLAN_TOOL:
                    updates.extend(_replayed_plan(call.arguments))
        elif message.role == "tool" and message.tool_call_id:
            failed = _failed_result(message.content)
            if failed is not None:
                update = update_tool_call(
                    message.tool_call_id, status="failed", content=failure_content(*failed) or None
                )
            else:
                content = [tool_content(text_block(message.content))] if message.content else None
                update = update_tool_call(message.tool_call_id, status="completed", content=content)
            updates.append(update)
    return updates
