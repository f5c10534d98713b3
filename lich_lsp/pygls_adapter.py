"""The pygls adapter: the only module that touches pygls internals.

- `PyglsEditor` is the EditorPort (lich_lsp.port) over a pygls LanguageServer: every call the
  session makes to the editor becomes an LSP request or notification here.
- `LichProtocol` is pygls' protocol with the robustness changes listed on it.
- `LichLanguageServer` serves stdio, TCP and WebSocket with FrameReader's limits, holds the
  EditorSession (`server.session`) and reports failures outside the handlers.

Transport limits (docs/lsp.md "Limits"): over stdio and TCP, frames are read by FrameReader, which
refuses a message larger than MAX_MESSAGE_BYTES (or a header line that never ends) without
reading it into memory, skips to the next frame and keeps serving; over a WebSocket the same
limit is the library's `max_size`. Messages to the editor are capped (MAX_EDITOR_MESSAGE_BYTES).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sys
import threading
import typing
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import attrs
from lsprotocol import types
from lsprotocol.types import ResponseError
from pygls.exceptions import (
    FeatureRequestError,
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcMethodNotFound,
)
from pygls.io_ import StdoutWriter, run_async, run_websocket
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from lich_core import __version__
from lich_lsp.frames import MAX_MESSAGE_BYTES, FrameReader
from lich_lsp.messages import (
    MAX_EDITOR_MESSAGE_BYTES,
    MESSAGE_ENVELOPE_BYTES,
    clip_event,
    clip_text,
)
from lich_lsp.port import EditorRequestError, ProgressValue
from lich_lsp.session import EditorSession

if TYPE_CHECKING:
    from pygls.workspace import TextDocument
    from pygls.workspace.position_codec import PositionCodec

log = logging.getLogger("lich.lsp")

SAVE_DOCUMENTS_METHOD = "lich/saveDocuments"
EVENT_METHOD = "lich/event"
# Requests/notifications whose malformed params are ignored without telling the user.
QUIETLY_IGNORED = ("$/cancelRequest",)


class PyglsEditor:
    """The EditorPort over the wire: LSP requests and notifications through pygls."""

    def __init__(self, server: LanguageServer) -> None:
        self._server = server

    def text_document(self, uri: str) -> TextDocument | None:
        return self._server.workspace.text_documents.get(unquote(uri))

    @property
    def position_codec(self) -> PositionCodec:
        return self._server.workspace.position_codec

    @property
    def position_encoding(self) -> str:
        encoding = self._server.workspace.position_encoding
        return str(getattr(encoding, "value", encoding) or "utf-16")

    async def apply_edit(
        self, params: types.ApplyWorkspaceEditParams
    ) -> types.ApplyWorkspaceEditResult:
        try:
            return await self._server.workspace_apply_edit_async(params)
        except JsonRpcException as err:
            raise EditorRequestError(err.message) from None

    async def save_documents(self, uris: list[str]) -> None:
        try:
            await self._server.protocol.send_request_async(SAVE_DOCUMENTS_METHOD, {"uris": uris})
        except JsonRpcException as err:
            raise EditorRequestError(err.message) from None

    async def ask(self, params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
        try:
            return await self._server.window_show_message_request_async(params)
        except JsonRpcException as err:
            raise EditorRequestError(err.message) from None

    async def show_document(self, params: types.ShowDocumentParams) -> None:
        try:
            await self._server.window_show_document_async(params)
        except JsonRpcException as err:
            raise EditorRequestError(err.message) from None

    async def configuration(self, params: types.ConfigurationParams) -> list[Any]:
        try:
            return list(await self._server.workspace_configuration_async(params) or [])
        except JsonRpcException as err:
            raise EditorRequestError(err.message) from None

    async def create_progress(self, token: str) -> None:
        try:
            await self._server.work_done_progress.create_async(token)
        except JsonRpcException as err:
            raise EditorRequestError(err.message) from None

    def progress(self, token: str, value: ProgressValue) -> None:
        progress = self._server.work_done_progress
        if isinstance(value, types.WorkDoneProgressBegin):
            progress.begin(token, value)
        elif isinstance(value, types.WorkDoneProgressReport):
            progress.report(token, value)
        else:
            progress.end(token, value)
            progress.tokens.pop(token, None)  # pygls keeps every token otherwise

    def show_message(self, message: str, kind: types.MessageType) -> None:
        self._server.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def log_message(self, message: str, kind: types.MessageType) -> None:
        self._server.window_log_message(types.LogMessageParams(type=kind, message=message))

    def send_event(self, payload: dict[str, Any]) -> None:
        self._server.protocol.notify(EVENT_METHOD, payload)

    def publish_diagnostics(self, uri: str, diagnostics: list[types.Diagnostic]) -> None:
        self._server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics)
        )


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
      MAX_EDITOR_MESSAGE_BYTES: a longer message is cut, saying how much;
    - a request the server does not serve (textDocument/documentSymbol: Kate asks whatever was
      advertised) gets `null` where LSP allows that result, else MethodNotFound, and a
      notification it does not serve is dropped, both without pygls' warning on stderr (which
      Kate shows in its output pane, once per keystroke or file switch).
    """

    shutdown_requested = False  # a `shutdown` request came (pygls' `_shutdown`: it was handled)

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Any:
        self.shutdown_requested = True
        return (yield from super().lsp_shutdown(*args))

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Any:
        if self.shutdown_requested:
            # `exit` right behind `shutdown` (one read can hold both): pygls marks the shutdown
            # done only once our shutdown handler has run, but the client did shut down first.
            self._shutdown = True
        yield from super().lsp_exit(*args)

    @property
    def clean_exit(self) -> bool:
        """The client sent `shutdown` before the connection ended."""
        return bool(self._shutdown)

    def _serves(self, method: str) -> bool:
        return method in self.fm.builtin_features or method in self.fm.features

    def _handle_request(self, msg_id: Any, method_name: str, params: Any) -> None:
        if self._serves(method_name):
            super()._handle_request(msg_id, method_name, params)
            return
        log.debug("answered %s quietly: the server does not serve it", method_name)
        if result_may_be_null(method_name):
            self._send_response(msg_id, None)
        else:
            self._send_response(
                msg_id, None, JsonRpcMethodNotFound.of(method_name).to_response_error()
            )

    def _handle_notification(self, method_name: str, params: Any) -> None:
        if method_name == types.CANCEL_REQUEST or self._serves(method_name):
            super()._handle_notification(method_name, params)
            return
        log.debug("ignored the notification %s: the server does not serve it", method_name)

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        if isinstance(msg_id, bool) or not isinstance(msg_id, (int, str)):
            log.warning(
                "ignored a $/cancelRequest whose id is not a number or a string: %.80r", msg_id
            )
            return
        super()._handle_cancel_notification(msg_id)
        server = self._server
        if isinstance(server, LichLanguageServer):
            server.session.cancel_request(msg_id)

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
        elif method == EVENT_METHOD and isinstance(params, dict):
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
                    self._send_response(
                        data["id"], None, MalformedMessage(what, True).to_response_error()
                    )
            else:
                # A bad answer to one of our requests (applyEdit, showMessageRequest...): fail
                # that request so its caller turns it into an error instead of waiting forever.
                what = "response"
                msg_id = data.get("id")
                future = (
                    self._request_futures.pop(msg_id, None)
                    if isinstance(msg_id, (str, int))
                    else None
                )
                handled = future is not None and not future.done()
                if future is not None and handled:
                    future.set_exception(MalformedMessage(what, True))
            raise MalformedMessage(what, handled) from err

    def _send_response(
        self, msg_id: Any, result: Any = None, error: ResponseError | None = None
    ) -> None:
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
        self.editor = PyglsEditor(self)
        # Replaced at `initialize` (EditorSession.from_initialize); this one serves a client
        # that sends something first.
        self.session = EditorSession(self.editor, Path.cwd().resolve())
        self.parent_watch: asyncio.Task[None] | None = None

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Failures outside the command handlers: logged, shown to the user once per kind."""
        if isinstance(error, MalformedMessage):
            log.warning("ignored a malformed %s from the editor", error.what)
            if not error.handled and error.what not in QUIETLY_IGNORED:
                self.session.report_once(
                    f"malformed:{error.what}",
                    f"lich: ignored a malformed {error.what} from the editor (details in the server log)",
                )
            return
        if source is FeatureRequestError and not _unexpected_request_error(error):
            return  # a deliberate error response (bad arguments, cancelled): it says everything
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)
        self.session.report_unexpected(getattr(source, "__name__", "server"), error)

    def reject_input(self, what: str) -> None:
        """FrameReader skipped something the editor sent: log it, tell the user once."""
        log.warning("ignored %s from the editor", what)
        self.session.report_once(
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


@functools.cache
def result_may_be_null(method: str) -> bool:
    """LSP lets this request's result be `null` (lsprotocol's response type says so)."""
    entry = types.METHOD_TO_TYPES.get(method)
    response = entry[1] if entry else None
    if response is None or not attrs.has(response):
        return False
    result = attrs.fields_dict(response).get("result")
    return result is not None and (
        result.type is type(None) or type(None) in typing.get_args(result.type)
    )


def _unexpected_request_error(error: Exception) -> bool:
    """A request handler raised something other than a JSON-RPC error (pygls wraps it with a traceback)."""
    if not isinstance(error, JsonRpcException):
        return True
    return (
        isinstance(error, JsonRpcInternalError)
        and isinstance(error.data, dict)
        and "traceback" in error.data
    )
