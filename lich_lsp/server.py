"""The lich language server: routes the editor's messages to the EditorSession, plus `run(argv)`.

The session (lich_lsp.session) builds the feature parts and runs the commands. This module
registers one pygls handler per LSP message,
each a line that hands the message to the session, and owns startup and a clean exit: on
`shutdown`/`exit`, on end of input, and when the client process named in `initialize`
disappears (pygls itself does not watch it, so a small timer does). pygls itself is adapted in
lich_lsp.pygls_adapter.

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
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from lich_core import __version__
from lich_lsp.code_actions import ASK_KIND, FIX_KIND
from lich_lsp.commands import COMMANDS
from lich_lsp.next_edit import NEXT_EDIT_METHOD
from lich_lsp.pygls_adapter import LichLanguageServer
from lich_lsp.session import EditorSession
from lich_lsp.tasks import CANCEL_HARD_STOP_S
from lich_lsp.workspace import EDIT_SETTLE_TIMEOUT_S

log = logging.getLogger("lich.lsp")

PARENT_CHECK_INTERVAL_S = 1.0
SHUTDOWN_TASK_WAIT_S = CANCEL_HARD_STOP_S + EDIT_SETTLE_TIMEOUT_S + 1.0
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 2087


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
            await server.session.shutdown(wait_s=1.0)
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
        ls.session = EditorSession.from_initialize(ls.editor, params)
        if params.process_id and params.process_id != os.getpid():
            ls.parent_watch = asyncio.ensure_future(watch_parent(ls, params.process_id))

    @server.feature(types.INITIALIZED)
    async def initialized(ls: LichLanguageServer, params: types.InitializedParams) -> None:
        await ls.session.initialized()

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: LichLanguageServer, params: Any) -> None:
        # Long enough for the hard stop plus an edit the editor still holds: a task left pending
        # here makes pygls' own shutdown fail (it cancels request futures while iterating them).
        await ls.session.shutdown(wait_s=SHUTDOWN_TASK_WAIT_S)

    @server.feature(types.EXIT)
    def exit_(ls: LichLanguageServer, params: Any) -> None:
        ls.session.exit()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: LichLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.session.did_open(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: LichLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.session.did_change(params.text_document.uri, params.content_changes)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: LichLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.session.did_close(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: LichLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.session.did_save(params.text_document.uri)

    @server.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def progress_cancel(ls: LichLanguageServer, params: types.WorkDoneProgressCancelParams) -> None:
        ls.session.cancel_progress(params.token)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(
        ls: LichLanguageServer, params: types.DidChangeConfigurationParams
    ) -> None:
        await ls.session.did_change_configuration(params.settings)

    # Not registered for: the session polls the config files itself (lich_lsp.config). A client
    # that sends it anyway (its own file watchers) only makes the server look sooner.
    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(
        ls: LichLanguageServer, params: types.DidChangeWatchedFilesParams
    ) -> None:
        ls.session.did_change_watched_files()

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[ASK_KIND, FIX_KIND], resolve_provider=False),
    )
    def code_action(
        ls: LichLanguageServer, params: types.CodeActionParams
    ) -> list[types.CodeAction | types.Command]:
        return ls.session.code_actions(params)

    # Ghost text (LSP 3.18) where the client asks for it; completion items for the others.
    # Answered empty until a completion model is configured (docs/completions.md).
    @server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
    async def inline_completion(
        ls: LichLanguageServer, params: types.InlineCompletionParams
    ) -> types.InlineCompletionList | None:
        return await ls.session.inline_completion(params)

    @server.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(resolve_provider=False))
    async def completion(
        ls: LichLanguageServer, params: types.CompletionParams
    ) -> types.CompletionList | None:
        return await ls.session.completion(params)

    # Next edit suggestions, Copilot's request and shape (docs/next-edit.md); no edits until a
    # `next_edit` model is configured.
    @server.feature(NEXT_EDIT_METHOD)
    async def copilot_inline_edit(ls: LichLanguageServer, params: Any) -> dict[str, Any]:
        return await ls.session.copilot_inline_edit(params)


def register_commands(server: LichLanguageServer) -> None:
    for name in COMMANDS:
        _register_command(server, name)


def _register_command(server: LichLanguageServer, name: str) -> None:
    # No annotations on purpose: pygls evaluates a command handler's type hints to structure
    # its arguments, and these take any JSON.
    async def handler(ls, *args):  # type: ignore[no-untyped-def]
        return await ls.session.execute_command(name, list(args), ls.protocol.msg_id)

    handler.__name__ = name.replace(".", "_")
    server.command(name)(handler)


def create_server() -> LichLanguageServer:
    server = LichLanguageServer()
    register_lifecycle(server)
    register_commands(server)
    return server


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="lich-lsp", description="lich: a coding agent inside a language server"
    )
    transport = parser.add_mutually_exclusive_group()
    transport.add_argument(
        "--stdio", action="store_true", help="talk LSP over stdin/stdout (default)"
    )
    transport.add_argument("--tcp", action="store_true", help="listen for one client on TCP")
    transport.add_argument("--ws", action="store_true", help="listen for one client on a WebSocket")
    parser.add_argument(
        "--host", default=DEFAULT_HOST, help=f"address for --tcp/--ws (default {DEFAULT_HOST})"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port for --tcp/--ws (default {DEFAULT_PORT})",
    )
    parser.add_argument(
        "--log-level", default="WARNING", help="server log level on stderr (default WARNING)"
    )
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
        stream=sys.stderr,
        level=getattr(logging, str(args.log_level).upper(), logging.WARNING),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("pygls.protocol.json_rpc").addFilter(_QuietClientErrors())
    if args.ws and importlib.util.find_spec("websockets") is None:
        print(
            "lich-lsp: --ws needs the websockets package: pip install 'pygls[ws]'", file=sys.stderr
        )
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
    protocol = server.protocol
    _exit_now(0 if getattr(protocol, "clean_exit", False) else 1)
    return 0
