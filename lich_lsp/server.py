"""The lich language server: a thin pygls LanguageServer plus `run(argv)`.

Feature areas live in their own modules and register their handlers here (config, commands,
code actions); this module owns startup, shared state, document tracking and a clean exit:
on `shutdown`/`exit`, on end of input, and when the client process named in `initialize`
disappears (pygls itself does not watch it, so a small timer does).

Heavy imports (the agent loop, providers, httpx) happen inside the handlers that need them, so
the server answers `initialize` about as fast as an empty pygls server.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import logging
import os
import sys
from pathlib import Path
from typing import Any

from lsprotocol import types
from lsprotocol.types import ResponseError
from pygls.exceptions import (
    FeatureRequestError,
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
)
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path

from lich_core import __version__
from lich_core.hashline.read_state import ReadState
from lich_lsp import code_actions, commands, config, trust
from lich_lsp.approvals import ApprovalGuard, ApprovalStore
from lich_lsp.edits import EditCapabilities
from lich_lsp.tasks import TaskManager
from lich_lsp.workspace import DocumentStore

log = logging.getLogger("lich.lsp")

PARENT_CHECK_INTERVAL_S = 1.0
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 2087


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

    def on_config_changed(self) -> None:
        self._runtime = None

    def log(self, message: str, kind: types.MessageType = types.MessageType.Log) -> None:
        self._server.window_log_message(types.LogMessageParams(type=kind, message=message))

    def report_unexpected(self, where: str, err: BaseException) -> None:
        """Tell the user about an unexpected failure once per kind (the log has the details)."""
        self.report_once(
            f"{where}:{type(err).__name__}",
            f"lich: unexpected error in {where}: {type(err).__name__}: {err} (details in the server log)",
        )

    def report_once(self, key: str, message: str) -> None:
        if key in self._reported_errors:
            return
        self._reported_errors.add(key)
        self._server.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=message))

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
    """pygls' protocol with three changes for robustness:

    - `$/cancelRequest` for a lich.ask request stops its agent task (pygls cancels only the
      request's outer future for workspace/executeCommand, not the command coroutine);
    - a request whose params cannot be read gets an InvalidParams answer (pygls drops it, and
      the editor would wait forever);
    - error responses never carry a Python traceback (pygls puts one in `data`; it stays in the
      server log).
    """

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        super()._handle_cancel_notification(msg_id)
        server = self._server
        if isinstance(server, LichLanguageServer):
            server.lich.tasks.cancel_for_request(msg_id)

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
                future = self._request_futures.pop(data.get("id"), None)
                handled = future is not None and not future.done()
                if handled:
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
            if not error.handled:
                self.lich.report_once(
                    f"malformed:{error.what}",
                    f"lich: ignored a malformed {error.what} from the editor (details in the server log)",
                )
            return
        if source is FeatureRequestError and not _unexpected_request_error(error):
            return  # a deliberate error response (bad arguments, cancelled): it says everything
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)
        self.lich.report_unexpected(getattr(source, "__name__", "server"), error)

    def shutdown(self) -> None:
        # pygls waits for its thread pool here, which blocks on a stdin read that may never
        # return; the process exits right after this anyway.
        if self._stop_event is not None:
            self._stop_event.set()
        if self._thread_pool:
            self._thread_pool.shutdown(wait=False, cancel_futures=True)
        if self._server:
            self._server.close()


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
        await ls.lich.tasks.cancel_all(wait_s=2.0)

    @server.feature(types.EXIT)
    def exit_(ls: LichLanguageServer, params: Any) -> None:
        for task in ls.lich.tasks.running():
            ls.lich.tasks.cancel_task(task, "exit")

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
