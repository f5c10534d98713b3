"""A small LSP client over a child process's stdio: JSON-RPC framing, requests both ways.

lich_core never imports pygls or lsprotocol (tests/core/test_layers.py: the editor layer sits on
top of the core), so the demo's headless editor speaks the wire format itself. Messages are plain
JSON objects as the LSP specification spells them. What the server asks of the editor
(`workspace/applyEdit`, `window/showMessageRequest`, ...) goes to the `on_request` handler, whose
return value is the answer; notifications go to `on_notification`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import Awaitable, Callable
from typing import Any

RequestHandler = Callable[[str, Any], Awaitable[Any]]
NotificationHandler = Callable[[str, Any], None]

# JSON-RPC error codes (the LSP specification's names).
METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603


class LspError(Exception):
    """An error answer to one of our requests, or the server gone before it answered."""


class MethodNotFound(Exception):
    """Raised by a request handler for a method this client does not serve."""


class LspConnection:
    """One server process, driven over its stdin and stdout."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        on_request: RequestHandler,
        on_notification: NotificationHandler,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._on_request = on_request
        self._on_notification = on_notification
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._handlers: set[asyncio.Task[None]] = set()
        self._read_task: asyncio.Task[None] | None = None
        self.closed = asyncio.Event()

    def start(self) -> None:
        self._read_task = asyncio.ensure_future(self._read_loop())

    async def request(self, method: str, params: Any) -> Any:
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return await future

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def aclose(self) -> None:
        for task in list(self._handlers):
            task.cancel()
        if self._read_task is not None:
            self._read_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._read_task
        with contextlib.suppress(Exception):
            self._writer.close()

    # --- the wire ---

    def _send(self, message: dict[str, Any]) -> None:
        if self._writer.is_closing():
            raise LspError("the server's input is closed")
        body = json.dumps(message, ensure_ascii=False).encode("utf-8")
        self._writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def _read_message(self) -> dict[str, Any] | None:
        length = None
        while True:
            line = await self._reader.readline()
            if not line:
                return None  # end of output: the server exited
            header = line.decode("ascii", "replace").strip()
            if not header:
                break
            name, _, value = header.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        if length is None:
            raise LspError("a message from the server had no Content-Length header")
        body = await self._reader.readexactly(length)
        message = json.loads(body.decode("utf-8"))
        return message if isinstance(message, dict) else {}

    async def _read_loop(self) -> None:
        try:
            while True:
                message = await self._read_message()
                if message is None:
                    break
                self._dispatch(message)
        except (asyncio.IncompleteReadError, ConnectionError, LspError, ValueError) as err:
            self._fail_pending(f"the connection to the server broke: {err}")
        finally:
            self._fail_pending("the server exited before it answered")
            self.closed.set()

    def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:
            future = self._pending.pop(message.get("id"), None)  # type: ignore[arg-type]
            if future is None or future.done():
                return
            if "error" in message:
                error = message["error"] or {}
                future.set_exception(LspError(str(error.get("message") or error)))
            else:
                future.set_result(message.get("result"))
        elif "id" in message:
            task = asyncio.ensure_future(self._answer(message["id"], method, message.get("params")))
            self._handlers.add(task)
            task.add_done_callback(self._handlers.discard)
        else:
            self._on_notification(method, message.get("params"))

    async def _answer(self, msg_id: Any, method: str, params: Any) -> None:
        try:
            result = await self._on_request(method, params)
        except MethodNotFound:
            reply: dict[str, Any] = {
                "error": {"code": METHOD_NOT_FOUND, "message": f"unsupported: {method}"}
            }
        except Exception as err:  # noqa: BLE001 - the server gets an error answer, not silence
            reply = {"error": {"code": INTERNAL_ERROR, "message": f"{type(err).__name__}: {err}"}}
        else:
            reply = {"result": result}
        with contextlib.suppress(LspError, ConnectionError):
            self._send({"jsonrpc": "2.0", "id": msg_id, **reply})

    def _fail_pending(self, why: str) -> None:
        for future in self._pending.values():
            if not future.done():
                future.set_exception(LspError(why))
        self._pending.clear()
