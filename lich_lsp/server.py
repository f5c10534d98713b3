"""The lich language server: a thin pygls LanguageServer plus `run(argv)`.

Feature areas live in their own modules and register their handlers here (config, commands,
code actions); this module owns startup, shared state, document tracking and a clean exit:
on `shutdown`/`exit`, on end of input, and when the client process named in `initialize`
disappears (pygls itself does not watch it, so a small timer does).

Heavy imports (the agent loop, providers, httpx) happen inside the handlers that need them, so
the server answers `initialize` about as fast as an empty pygls server.

Transport limits (docs/lsp.md "Limits"): over stdio and TCP, frames are read by FrameReader, which
refuses a message larger than MAX_MESSAGE_BYTES (or a header line that never ends) without
reading it into memory, skips to the next frame and keeps serving; over a WebSocket the same
limit is the library's `max_size`. Messages to the editor are capped (MAX_EDITOR_MESSAGE_BYTES).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import logging
import os
import re
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import attrs
from lsprotocol import types
from lsprotocol.types import ResponseError
from pygls.exceptions import (
    FeatureRequestError,
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
)
from pygls.io_ import StdoutWriter, run_async, run_websocket
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method
from pygls.uris import to_fs_path

from lich_core import __version__
from lich_core.hashline.read_state import ReadState
from lich_lsp import code_actions, commands, config, trust
from lich_lsp.approvals import ApprovalGuard, ApprovalStore
from lich_lsp.edits import EditCapabilities
from lich_lsp.tasks import (
    CANCEL_HARD_STOP_S,
    MAX_EDITOR_MESSAGE_BYTES,
    MESSAGE_ENVELOPE_BYTES,
    TaskManager,
    clip_event,
    clip_text,
)
from lich_lsp.workspace import EDIT_SETTLE_TIMEOUT_S, DocumentStore

log = logging.getLogger("lich.lsp")

PARENT_CHECK_INTERVAL_S = 1.0
SHUTDOWN_TASK_WAIT_S = CANCEL_HARD_STOP_S + EDIT_SETTLE_TIMEOUT_S + 1.0
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 2087
MIB = 1024 * 1024
# One JSON-RPC message from the editor (its Content-Length). A larger one is skipped, unread.
MAX_MESSAGE_BYTES = 64 * MIB
# One header line ("Content-Length: 123"); a line longer than this is garbage and skipped.
MAX_HEADER_LINE_BYTES = 8 * 1024
# How much FrameReader asks its source for at a time: headers, and the rest of a body.
READ_CHUNK_BYTES = 64 * 1024
READ_BODY_CHUNK_BYTES = 1 * MIB
# The header pygls' reading loop takes (exactly this spelling), and the same anywhere in a stream.
_CONTENT_LENGTH_LINE = re.compile(rb"Content-Length: (\d+)\r\n")
_CONTENT_LENGTH_ANYWHERE = re.compile(rb"Content-Length: \d{1,20}\r\n")
# The longest header _CONTENT_LENGTH_ANYWHERE matches: what must be kept between reads.
_HEADER_TAIL_BYTES = len(b"Content-Length: \r\n") + 20
# Requests/notifications whose malformed params are ignored without telling the user.
QUIETLY_IGNORED = ("$/cancelRequest",)


class LspState:
    """Everything the feature modules share, reachable as `server.lich`."""

    def __init__(self, server: LichLanguageServer) -> None:
        self._server = server
        self.root: Path = Path(os.getcwd()).resolve()
        self.config_holder = config.ConfigHolder(self.root)
        self.documents = DocumentStore(server)
        self.edit_caps = EditCapabilities()
        self.approvals = ApprovalStore(self.root)
        self.guard = ApprovalGuard(server)
        self.tasks = TaskManager(server)
        # lich.read arms it; lich.applyPatch and lich.runTool use it (the user's own session).
        self.command_read_state = ReadState()
        self._runtime: Any = None
        self._runtime_generation = -1
        self._diagnostics: dict[str, tuple[int | None, list[dict[str, Any]]]] = {}
        self._reported_errors: set[str] = set()
        # Workspace config contents the user was already asked to trust (one question per content).
        self.trust_offered: set[Any] = set()
        self._background: set[asyncio.Future[Any]] = set()

    def background(self, work: Any) -> None:
        """Run a coroutine without waiting for it; the reference is kept until it ends."""
        future = asyncio.ensure_future(work)
        self._background.add(future)
        future.add_done_callback(self._background.discard)

    @property
    def config(self) -> Any:
        return self.config_holder.config

    def set_root(self, root: Path) -> None:
        self.root = root
        self.config_holder = config.ConfigHolder(root)
        self.approvals = ApprovalStore(root)

    def runtime(self) -> Any:
        """The tool runtime for the current config (rebuilt after a config change)."""
        if self._runtime is None or self._runtime_generation != self.config_holder.generation:
            from lich_core.tools.runtime import build_tool_runtime

            self._runtime = build_tool_runtime(self.config, guards=(self.guard,))
            self._runtime_generation = self.config_holder.generation
        return self._runtime


    def log(self, message: str, kind: types.MessageType = types.MessageType.Log) -> None:
        # (LichProtocol.notify caps every message; here so the common path says "cut" once.)
        message = clip_text(message, MAX_EDITOR_MESSAGE_BYTES - MESSAGE_ENVELOPE_BYTES)
        self._server.window_log_message(types.LogMessageParams(type=kind, message=message))

    def report_unexpected(self, where: str, err: BaseException) -> None:
        """Tell the user about an unexpected failure once per kind (the log has the details)."""
        self.report_once(
            f"{where}:{type(err).__name__}",
            f"lich: unexpected error in {where}: {type(err).__name__}: {err} (details in the server log)",
        )

    def report_once(self, key: str, message: str, kind: types.MessageType = types.MessageType.Error) -> None:
        if key in self._reported_errors:
            return
        self._reported_errors.add(key)
        self._server.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def remember_diagnostics(self, uri: str, diagnostics: Any) -> None:
        doc = self.documents.document_for_uri(uri)
        self._diagnostics[uri] = (
            doc.version if doc is not None else None,
            [code_actions.diagnostic_json(d) for d in diagnostics],
        )

    def diagnostics_for(self, uri: str) -> list[dict[str, Any]]:
        entry = self._diagnostics.get(uri)
        if entry is None:
            return []
        doc = self.documents.document_for_uri(uri)
        if doc is not None and doc.version != entry[0]:
            return []  # seen on an older version of the buffer
        return entry[1]

    def status(self) -> dict[str, Any]:
        caps = self.edit_caps
        return {
            "version": __version__,
            "provider": _chat_provider(self.config),
            "root": str(self.root),
            "edit_mode": self.config.get("edit_mode"),
            "disk_write_policy": self.config.get("disk_write_policy"),
            "position_encoding": str(self._server.workspace.position_encoding),
            "open_documents": self.documents.open_count(),
            "tasks": [task.status() for task in self.tasks.tasks.values()],
            "client": {
                "document_changes": caps.document_changes,
                "create_files": caps.create_files,
                "delete_files": caps.delete_files,
                "change_annotations": caps.change_annotations,
                "save_documents": caps.save_documents,
                "show_message_request": caps.show_message_request,
            },
            "config_error": self.config_holder.last_error,
            "work_dir": self.config.get("work_dir"),
            "trust": self.config.trust.to_json(),
        }


def _chat_provider(config: Any) -> dict[str, str]:
    """The chat chain's first provider, for status displays; never raises (a bad config says so)."""
    from lich_core.errors import ConfigError
    from lich_core.providers.factory import describe_model, role_specs

    try:
        first = role_specs(config, "chat")[0]
    except (ConfigError, IndexError) as err:
        return {"name": "", "kind": "", "model": "", "describe": f"misconfigured: {err}"}
    return {"name": first.name, "kind": first.kind, "model": first.model, "describe": describe_model(config)}


class MalformedMessage(JsonRpcInvalidParams):
    """A message from the editor that does not fit its method's types.

    `handled`: whoever waits on it was told (a request got an error answer, or our pending
    request failed with this error), so the user needs no separate message.
    """

    def __init__(self, what: str, handled: bool) -> None:
        super().__init__(message=f"{what}: malformed params")
        self.what = what
        self.handled = handled


class LichProtocol(LanguageServerProtocol):
    """pygls' protocol with these changes for robustness:

    - `$/cancelRequest` for a lich.ask request stops its agent task (pygls cancels only the
      request's outer future for workspace/executeCommand, not the command coroutine); one
      whose id is not a number or a string is ignored;
    - a request whose params cannot be read gets an InvalidParams answer (pygls drops it, and
      the editor would wait forever);
    - error responses never carry a Python traceback (pygls puts one in `data`; it stays in the
      server log);
    - `textDocument/didChange` for a document the editor never opened is ignored (pygls raises);
    - `exit` right after `shutdown` exits with 0 even when both arrive in one read;
    - no window/logMessage, window/showMessage or lich/event goes out above
      MAX_EDITOR_MESSAGE_BYTES: a longer message is cut, saying how much.
    """

    shutdown_requested = False  # a `shutdown` request came (pygls' `_shutdown`: it was handled)

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Any:
        self.shutdown_requested = True
        return (yield from super().lsp_shutdown(*args))

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        if isinstance(msg_id, bool) or not isinstance(msg_id, (int, str)):
            log.warning("ignored a $/cancelRequest whose id is not a number or a string: %.80r", msg_id)
            return
        super()._handle_cancel_notification(msg_id)
        server = self._server
        if isinstance(server, LichLanguageServer):
            server.lich.tasks.cancel_for_request(msg_id)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> Any:
        uri = params.text_document.uri
        if unquote(uri) not in self.workspace.text_documents:
            log.warning("ignored textDocument/didChange for %s: the editor never opened it", uri)
            return
        yield from super().lsp_text_document__did_change(params)

    def notify(self, method: str, params: Any | None = None) -> None:
        if method in (types.WINDOW_LOG_MESSAGE, types.WINDOW_SHOW_MESSAGE) and isinstance(
            params, (types.LogMessageParams, types.ShowMessageParams)
        ):
            message = clip_text(params.message, MAX_EDITOR_MESSAGE_BYTES - MESSAGE_ENVELOPE_BYTES)
            if message is not params.message:
                params = attrs.evolve(params, message=message)
        elif method == "lich/event" and isinstance(params, dict):
            params = clip_event(params)
        super().notify(method, params)

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as err:
            if "method" in data:
                what = str(data["method"])
                handled = "id" in data
                if handled:
                    self._send_response(data["id"], None, MalformedMessage(what, True).to_response_error())
            else:
                # A bad answer to one of our requests (applyEdit, showMessageRequest...): fail
                # that request so its caller turns it into an error instead of waiting forever.
                what = "response"
                msg_id = data.get("id")
                future = self._request_futures.pop(msg_id, None) if isinstance(msg_id, (str, int)) else None
                handled = future is not None and not future.done()
                if future is not None and handled:
                    future.set_exception(MalformedMessage(what, True))
            raise MalformedMessage(what, handled) from err

    def _send_response(self, msg_id: Any, result: Any = None, error: ResponseError | None = None) -> None:
        if error is not None and isinstance(error.data, dict) and "traceback" in error.data:
            error = ResponseError(code=error.code, message=error.message)
        super()._send_response(msg_id, result, error)


class LichLanguageServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "lich-lsp",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=LichProtocol,
        )
        self.lich = LspState(self)
        self.parent_watch: asyncio.Task[None] | None = None

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Failures outside the command handlers: logged, shown to the user once per kind."""
        if isinstance(error, MalformedMessage):
            log.warning("ignored a malformed %s from the editor", error.what)
            if not error.handled and error.what not in QUIETLY_IGNORED:
                self.lich.report_once(
                    f"malformed:{error.what}",
                    f"lich: ignored a malformed {error.what} from the editor (details in the server log)",
                )
            return
        if source is FeatureRequestError and not _unexpected_request_error(error):
            return  # a deliberate error response (bad arguments, cancelled): it says everything
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)
        self.lich.report_unexpected(getattr(source, "__name__", "server"), error)

    def reject_input(self, what: str) -> None:
        """FrameReader skipped something the editor sent: log it, tell the user once."""
        log.warning("ignored %s from the editor", what)
        self.lich.report_once(
            "oversized-input",
            f"lich: ignored {what} from the editor; a request in it stays unanswered",
            types.MessageType.Warning,
        )

    # --- transports: pygls' own, reading frames through FrameReader ---

    def start_io(self, stdin: Any = None, stdout: Any = None) -> None:
        """Serve over stdio (pygls' start_io, with FrameReader in place of its stdin reader)."""
        self._stop_event = threading.Event()
        source = stdin or sys.stdin.buffer
        read = getattr(source, "read1", None) or source.readline
        pool = self.thread_pool

        def read_chunk(size: int) -> Awaitable[bytes]:
            return asyncio.get_running_loop().run_in_executor(pool, read, size)

        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(self._serve_frames(FrameReader(read_chunk, self.reject_input)))
        except BrokenPipeError:
            log.error("the connection to the client is lost; shutting down")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()

    def start_tcp(self, host: str, port: int) -> None:
        """Serve one client over TCP (pygls' start_tcp, with FrameReader on the socket)."""
        self._stop_event = threading.Event()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.protocol.set_writer(writer)  # type: ignore[arg-type]
            await self._serve_frames(FrameReader(reader.read, self.reject_input))
            self.shutdown()

        async def serve() -> None:
            self._server = await asyncio.start_server(connection, host, port)
            async with self._server:
                await self._server.serve_forever()

        try:
            asyncio.run(serve())
        except asyncio.CancelledError:
            pass

    def start_ws(self, host: str, port: int) -> None:
        """Serve one client over a WebSocket; messages above MAX_MESSAGE_BYTES close it (1009)."""
        from websockets.asyncio.server import serve as ws_serve

        self._stop_event = stop_event = threading.Event()

        async def connection(websocket: Any) -> None:
            await run_websocket(
                stop_event=stop_event,
                websocket=websocket,
                protocol=self.protocol,
                logger=log,
                error_handler=self.report_server_error,
            )
            self.shutdown()

        async def serve() -> None:
            # The library's default max_size is 1 MiB: a large didOpen would close the connection.
            self._server = await ws_serve(connection, host, port, max_size=MAX_MESSAGE_BYTES)
            async with self._server:
                await self._server.serve_forever()

        try:
            asyncio.run(serve())
        except asyncio.CancelledError:
            pass

    async def _serve_frames(self, reader: FrameReader) -> None:
        assert self._stop_event is not None
        await run_async(
            stop_event=self._stop_event,
            reader=reader,
            protocol=self.protocol,
            logger=log,
            error_handler=self.report_server_error,
        )

    def shutdown(self) -> None:
        # pygls waits for its thread pool here, which blocks on a stdin read that may never
        # return; the process exits right after this anyway.
        if self._stop_event is not None:
            self._stop_event.set()
        if self._thread_pool:
            self._thread_pool.shutdown(wait=False, cancel_futures=True)
        if self._server:
            self._server.close()


class FrameReader:
    """The reader pygls' message loop (`pygls.io_.run_async`) takes frames from, with limits.

    pygls reads header lines with `readline()` and a body with `readexactly(Content-Length)`,
    allocating whatever length the editor claims: `Content-Length: 99999999999` was a
    MemoryError that ended the server. This reader hands pygls only frames up to
    MAX_MESSAGE_BYTES. A larger frame's header (or a header line longer than
    MAX_HEADER_LINE_BYTES) is reported through `on_reject` and never reaches pygls; its body is
    discarded as it streams past, up to the next `Content-Length:` header, which cannot occur
    inside a JSON body (JSON escapes line breaks), and serving goes on from there.

    `read_chunk(n)` returns up to n bytes as soon as some are available, and b"" at the end.
    """

    def __init__(self, read_chunk: Callable[[int], Awaitable[bytes]], on_reject: Callable[[str], None]) -> None:
        self._read_chunk = read_chunk
        self._on_reject = on_reject
        self._buffer = bytearray()
        self._eof = False

    async def readline(self) -> bytes:
        # One loop turn per line even when the lines are already buffered (pygls' own reader
        # awaited a thread for each): what the previous message started runs before the next.
        await asyncio.sleep(0)
        line = await self._line()
        while True:
            if line is None:
                self._on_reject(f"a header line longer than {MAX_HEADER_LINE_BYTES} bytes")
                line = await self._resync()
                continue
            match = _CONTENT_LENGTH_LINE.fullmatch(line)
            if match is not None and int(match.group(1)) > MAX_MESSAGE_BYTES:
                self._on_reject(
                    f"a message of {int(match.group(1))} bytes (the limit is {MAX_MESSAGE_BYTES // MIB} MiB)"
                )
                line = await self._resync()
                continue
            return line

    async def readexactly(self, size: int) -> bytes:
        """`size` bytes (fewer only at the end of input). readline() let no size above the limit by."""
        size = min(size, MAX_MESSAGE_BYTES)
        if len(self._buffer) >= size:
            with memoryview(self._buffer) as view:
                body = bytes(view[:size])
            del self._buffer[:size]
            return body
        parts = [bytes(self._buffer)]
        got = len(self._buffer)
        self._buffer.clear()
        while got < size and not self._eof:
            chunk = await self._read_chunk(min(size - got, READ_BODY_CHUNK_BYTES))
            if not chunk:
                self._eof = True
                break
            if got + len(chunk) > size:  # a source may hand out more than asked for
                self._buffer += chunk[size - got :]
                chunk = chunk[: size - got]
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)

    async def _fill(self) -> bool:
        if self._eof:
            return False
        chunk = await self._read_chunk(READ_CHUNK_BYTES)
        if not chunk:
            self._eof = True
            return False
        self._buffer += chunk
        return True

    async def _line(self) -> bytes | None:
        """The next line with its LF; None if it runs past MAX_HEADER_LINE_BYTES; b"" at the end."""
        scanned = 0
        while True:
            end = self._buffer.find(b"\n", scanned)
            if end >= 0:
                if end + 1 > MAX_HEADER_LINE_BYTES:
                    return None
                line = bytes(self._buffer[: end + 1])
                del self._buffer[: end + 1]
                return line
            if len(self._buffer) > MAX_HEADER_LINE_BYTES:
                return None
            scanned = len(self._buffer)
            if not await self._fill():
                line = bytes(self._buffer)
                self._buffer.clear()
                return line

    async def _resync(self) -> bytes:
        """Discard input up to the next `Content-Length: N` header and return that header line."""
        while True:
            match = _CONTENT_LENGTH_ANYWHERE.search(self._buffer)
            if match is not None:
                line = bytes(self._buffer[match.start() : match.end()])
                del self._buffer[: match.end()]
                return line
            if len(self._buffer) > _HEADER_TAIL_BYTES:
                del self._buffer[: len(self._buffer) - _HEADER_TAIL_BYTES]
            if not await self._fill():
                self._buffer.clear()
                return b""


def _unexpected_request_error(error: Exception) -> bool:
    """A request handler raised something other than a JSON-RPC error (pygls wraps it with a traceback)."""
    if not isinstance(error, JsonRpcException):
        return True
    return isinstance(error, JsonRpcInternalError) and isinstance(error.data, dict) and "traceback" in error.data


def workspace_root(params: types.InitializeParams) -> Path:
    for uri in [f.uri for f in params.workspace_folders or []] + [params.root_uri or ""]:
        if uri:
            path = to_fs_path(uri)
            if path:
                return Path(path).resolve()
    if params.root_path:
        return Path(params.root_path).resolve()
    return Path(os.getcwd()).resolve()


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    except OSError:
        return False
    return True


async def watch_parent(server: LichLanguageServer, pid: int) -> None:
    while True:
        await asyncio.sleep(PARENT_CHECK_INTERVAL_S)
        if not process_alive(pid):
            log.warning("client process %s is gone; exiting", pid)
            await server.lich.tasks.cancel_all(wait_s=1.0)
            _exit_now(0)


def _exit_now(code: int) -> None:
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def register_lifecycle(server: LichLanguageServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: LichLanguageServer, params: types.InitializeParams) -> None:
        state = ls.lich
        state.set_root(workspace_root(params))
        state.edit_caps = EditCapabilities.from_client(params.capabilities)
        state.config_holder.init_options = config.settings_from_client(params.initialization_options)
        error = state.config_holder.rebuild()
        if error is not None:
            config.report_config_error(ls, error)
        if params.process_id and params.process_id != os.getpid():
            ls.parent_watch = asyncio.ensure_future(watch_parent(ls, params.process_id))

    @server.feature(types.INITIALIZED)
    async def initialized(ls: LichLanguageServer, params: types.InitializedParams) -> None:
        if config.client_supports_configuration(ls):
            await config.refresh_config(ls)  # offers trust itself once the editor's settings are in
        else:
            trust.offer_trust(ls)

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: LichLanguageServer, params: Any) -> None:
        # Long enough for the hard stop plus an edit the editor still holds: a task left pending
        # here makes pygls' own shutdown fail (it cancels request futures while iterating them).
        await ls.lich.tasks.cancel_all(wait_s=SHUTDOWN_TASK_WAIT_S)

    @server.feature(types.EXIT)
    def exit_(ls: LichLanguageServer, params: Any) -> None:
        for task in ls.lich.tasks.running():
            ls.lich.tasks.cancel_task(task, "exit")
        protocol = ls.protocol
        if isinstance(protocol, LichProtocol) and protocol.shutdown_requested:
            # `exit` right behind `shutdown` (one read can hold both): pygls marks the shutdown
            # done only once our shutdown handler has run, but the client did shut down first.
            ls.protocol._shutdown = True

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: LichLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.lich.documents.did_open(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: LichLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.lich.documents.did_close(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: LichLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.lich.documents.did_save(params.text_document.uri)

    @server.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def progress_cancel(ls: LichLanguageServer, params: types.WorkDoneProgressCancelParams) -> None:
        ls.lich.tasks.cancel_for_progress(params.token)


def create_server() -> LichLanguageServer:
    server = LichLanguageServer()
    register_lifecycle(server)
    config.register(server)
    commands.register(server)
    code_actions.register(server)
    return server


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="lich-lsp", description="lich: a coding agent inside a language server")
    transport = parser.add_mutually_exclusive_group()
    transport.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (default)")
    transport.add_argument("--tcp", action="store_true", help="listen for one client on TCP")
    transport.add_argument("--ws", action="store_true", help="listen for one client on a WebSocket")
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"address for --tcp/--ws (default {DEFAULT_HOST})")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port for --tcp/--ws (default {DEFAULT_PORT})")
    parser.add_argument("--log-level", default="WARNING", help="server log level on stderr (default WARNING)")
    parser.add_argument("--version", action="version", version=f"lich-lsp {__version__}")
    return parser.parse_args(argv)


class _QuietClientErrors(logging.Filter):
    """pygls logs a traceback for every error response; argument errors are the client's, not ours."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], JsonRpcInvalidParams):
            record.exc_info = None
            record.exc_text = None
        return True


def run(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(
        stream=sys.stderr, level=getattr(logging, str(args.log_level).upper(), logging.WARNING),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("pygls.protocol.json_rpc").addFilter(_QuietClientErrors())
    if args.ws and importlib.util.find_spec("websockets") is None:
        print("lich-lsp: --ws needs the websockets package: pip install 'pygls[ws]'", file=sys.stderr)
        return 2
    server = create_server()
    if args.tcp:
        server.start_tcp(args.host, args.port)
    elif args.ws:
        server.start_ws(args.host, args.port)
    else:
        server.start_io()
    # Whatever ended the loop (exit, end of input), leave now: a blocked stdin reader thread or a
    # straggling child must not keep the process alive.
    _exit_now(0 if server.protocol._shutdown else 1)
    return 0
