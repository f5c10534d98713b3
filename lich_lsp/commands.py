"""The `workspace/executeCommand` surface (docs/lsp.md "Commands"; names are a public contract).

This module owns the command names and the table that runs them; it knows no feature. Each
feature (agent tasks, review, undo, trust, tests, pending questions) adds its handlers to the
session's `CommandTable` when the session is assembled (lich_lsp.session), the way esbonio's
features register theirs. The names are listed here because the server announces them to the
editor at `initialize`, before any feature exists; adding a handler under a name not listed is
an error, and every listed name has a handler once the session is built.

Each command takes one object argument, typed in lich_lsp.contract (its params and result
dataclasses): the table converts and checks it before any handler runs, so a malformed argument is
a JSON-RPC InvalidParams error naming the command and the field, and a typed handler's result
dataclass is serialised here; an unexpected failure is an
InternalError with one line of text (the traceback goes to the server log, never to the editor).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams

from lich_core.errors import ToolError
from lich_lsp.arguments import BadArguments
from lich_lsp.contract import parse_params, to_json

if TYPE_CHECKING:
    from lich_lsp.messages import EditorMessages

log = logging.getLogger("lich.lsp.commands")

ASK = "lich.ask"
CANCEL = "lich.cancel"
STATUS = "lich.status"
TOOLS = "lich.tools"
READ = "lich.read"
APPLY_PATCH = "lich.applyPatch"
RUN_TOOL = "lich.runTool"
MENTIONS = "lich.mentions"
THREADS = "lich.threads"
THREAD = "lich.thread"
REWIND = "lich.rewind"
TRUST_WORKSPACE = "lich.trustWorkspace"
RUN_TESTS = "lich.runTests"
UNDO_TASK = "lich.undoTask"
ANSWER_QUESTION = (
    "lich.answerQuestion"  # a pending question's code action (lich_lsp.pending_questions)
)
ACCEPT_HUNK = "lich.acceptHunk"
REJECT_HUNK = "lich.rejectHunk"
ACCEPT_ALL = "lich.acceptAll"
REJECT_ALL = "lich.rejectAll"
REVIEW_LIST = "lich.reviewList"
REVIEW_COMMANDS = (ACCEPT_HUNK, REJECT_HUNK, ACCEPT_ALL, REJECT_ALL, REVIEW_LIST)
COMMANDS = (
    ASK,
    CANCEL,
    STATUS,
    TOOLS,
    READ,
    APPLY_PATCH,
    RUN_TOOL,
    MENTIONS,
    THREADS,
    THREAD,
    REWIND,
    TRUST_WORKSPACE,
    RUN_TESTS,
    UNDO_TASK,
    ANSWER_QUESTION,
    *REVIEW_COMMANDS,
)

# A command's handler: (its params dataclass, or for an untyped handler the raw arguments,
# already checked; the request id) -> its result (a result dataclass or JSON).
CommandHandler = Callable[[Any, Any], Awaitable[Any]]


class CommandTable:
    """The session's commands: features add their handlers, the server runs them by name."""

    def __init__(self, messages: EditorMessages) -> None:
        self._messages = messages
        self._handlers: dict[str, CommandHandler] = {}
        self._typed: set[str] = set()
        # Commands other than lich.ask that wait on the editor (lich.acceptHunk): $/cancelRequest
        # cancels them (pygls cancels only the request's outer future, not the command).
        self._running: dict[str, asyncio.Task[Any]] = {}

    def add(self, name: str, handler: CommandHandler, *, typed: bool = False) -> None:
        """`typed`: the handler takes the params dataclass (lich_lsp.contract); else the raw
        argument tuple, checked against the same type first."""
        if name not in COMMANDS:
            raise ValueError(
                f"{name} is not one of lich's commands (list it in lich_lsp.commands.COMMANDS)"
            )
        if name in self._handlers:
            raise ValueError(f"{name} has a handler already")
        self._handlers[name] = handler
        if typed:
            self._typed.add(name)

    def names(self) -> list[str]:
        return list(self._handlers)

    async def run(self, name: str, args: tuple[Any, ...], request_id: Any = None) -> Any:
        """Run one command; argument errors become InvalidParams and anything unexpected a one-line
        InternalError (the traceback goes to the server log, never to the editor)."""
        handler = self._handlers.get(name)
        if handler is None:
            raise JsonRpcInvalidParams(
                message=f"unknown command {name!r}; lich's commands: {', '.join(COMMANDS)}"
            )
        try:
            params = parse_params(name, args)
            return to_json(await handler(params if name in self._typed else args, request_id))
        except BadArguments as err:
            raise JsonRpcInvalidParams(message=str(err)) from None
        except (
            ToolError
        ) as err:  # a refused path (not_regular_file:, path_escape:, ...): the caller's input
            raise JsonRpcInvalidParams(message=f"{name}: {err}") from None
        except JsonRpcException:
            raise
        except Exception as err:  # noqa: BLE001 - logged once, reported as a clean error
            log.exception("%s failed", name)
            self._messages.report_unexpected(name, err)
            raise JsonRpcInternalError(
                message=f"{name}: internal error: {type(err).__name__}: {err}"
            ) from None

    @contextlib.contextmanager
    def cancellable(self, request_id: Any) -> Iterator[None]:
        """While the block runs, $/cancelRequest for `request_id` cancels the running command."""
        current = asyncio.current_task()
        if request_id is None or current is None:
            yield
            return
        key = str(request_id)
        self._running[key] = current
        try:
            yield
        finally:
            if self._running.get(key) is current:
                del self._running[key]

    def cancel(self, request_id: Any) -> None:
        """$/cancelRequest: cancel the command running under `cancellable` for that request."""
        command = self._running.pop(str(request_id), None)
        if command is not None:
            command.cancel()
