"""An in-memory editor for lich-lsp: implements `lich_lsp.port.EditorPort` in-process.

`FakeEditor` is the editor that `tests/lsp/lsp_harness.py` puts on the other end of a pipe,
without the pipe: each EditorPort method is one server-to-editor message (apply_edit is
workspace/applyEdit, ask is window/showMessageRequest, save_documents is lich/saveDocuments,
send_event is lich/event, and so on), and editor-to-server notifications are direct calls on the
session (`did_open` / `did_close` / `did_save`; a didChange is the fake updating the pygls
`Workspace` the session reads through `text_document`). The fake keeps its own buffers (`docs`,
the editor's truth: applied edits change them at once) apart from that Workspace (what the server
was told). It applies edits as the harness does (documentChanges with version checks, `changes`,
CreateFile/DeleteFile on the real disk, every position encoding) and, as on the wire, sends the
echo of an applied edit or a save (didChange/didOpen/didClose/didSave) only after the request has
been answered: by default with `loop.call_soon` (`await settle()` runs it); `echo="before"` sends
it before answering (the order the harness and VS Code produce), `echo="manual"` holds it until
`deliver_echoes()` (an editor that debounces didChange, like Neovim). A user action (open, type,
close) first sends any echo still pending, so the server sees messages in the editor's order.
Nothing here waits on the wall clock: the waiting helpers wake on each recorded message, bounded
only so that a broken test fails instead of hanging.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import inspect
import itertools
import json
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import unquote

from lsp_harness import (
    COMMAND_WAIT_S,
    INTENDED_FAILURE,
    WAIT_S,
    Doc,
    apply_text_edits,
    bounded,
    capabilities_for,
    client_converter,
    uri_of,
)
from lsprotocol import types
from pygls.capabilities import ServerCapabilitiesBuilder
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument, Workspace
from pygls.workspace.position_codec import PositionCodec

from lich_lsp.port import EditorRequestError, ProgressValue

if TYPE_CHECKING:
    from lich_lsp.session import EditorSession

EchoMode = Literal["soon", "before", "manual"]


def _path(uri: str) -> Path:
    return Path(to_fs_path(uri) or "")


def _encoding_name(value: Any) -> str:
    return str(getattr(value, "value", value) or "utf-16")


class FakeEditor:
    """An editor in memory; see the module docstring. Every message it gets is recorded."""

    def __init__(
        self,
        root: Path | None = None,
        *,
        encoding: str = "utf-16",
        open_on_edit: bool = True,
        echo: EchoMode = "soon",
    ) -> None:
        self.root = root
        self.workspace = self._new_workspace(root, encoding)
        self.docs: dict[str, Doc] = {}  # the editor's buffers: open ones and hidden ones (Neovim)
        self.session: Any = None  # gets did_open/did_close/did_save; set by start()
        self.declared = types.ClientCapabilities()  # what this editor told the server it supports
        self.open_on_edit = (
            open_on_edit  # an edited file that was not open opens (documentChanges editors)
        )
        self.echo: EchoMode = echo
        self.failures: list[str] = []  # protocol mistakes by the server, and errors in its handlers
        # workspace/applyEdit
        self.applied: list[types.ApplyWorkspaceEditParams] = []
        self.answer: str = "apply"  # "apply" | "reject" | "error" | "garbage"
        self.hold: asyncio.Event | None = None
        self.before_apply: Callable[[], None] | None = None
        # lich/saveDocuments
        self.save_requests: list[list[str]] = []
        self.saved: list[str] = []
        self.save_answer: str = "ok"  # "ok" | "error"
        # window/showMessageRequest
        self.message_requests: list[types.ShowMessageRequestParams] = []
        self.message_answers: list[
            str | None
        ] = []  # popped per question; None (or none left) = dismissed
        self.ask_hold: asyncio.Event | None = None
        self.ask_answer: str = "answer"  # "answer" | "error"
        # window/showDocument, workspace/configuration
        self.shown_documents: list[types.ShowDocumentParams] = []
        self.configuration_requests: list[types.ConfigurationParams] = []
        self.settings: Any = None  # the answer for each configuration item
        self.configuration_answer: str = "ok"  # "ok" | "error"
        # progress
        self.progress_created: list[str] = []
        self.progress_tokens: set[str] = set()  # created and not ended
        self.progress_reports: list[tuple[str, ProgressValue]] = []
        self.progress_create_answer: str = "ok"  # "ok" | "error"
        # notifications
        self.messages: list[tuple[types.MessageType, str]] = []  # window/showMessage
        self.logs: list[tuple[types.MessageType, str]] = []  # window/logMessage
        self.events: list[dict[str, Any]] = []  # lich/event, as the JSON the wire would carry
        # textDocument/publishDiagnostics: the latest list per uri
        self.diagnostics: dict[str, list[types.Diagnostic]] = {}

        self._echoes: deque[Callable[[], None]] = deque()
        self._echo_scheduled = False
        self._session_tasks: set[asyncio.Future[Any]] = set()
        self._waiters: list[asyncio.Future[None]] = []
        self._request_ids = itertools.count(1)
        self._commands: dict[int, asyncio.Future[Any]] = {}  # running commands by request id

    @staticmethod
    def _new_workspace(root: Path | None, encoding: str) -> Workspace:
        root_uri = uri_of(root) if root is not None else None
        folders = (
            [types.WorkspaceFolder(uri=root_uri, name=root.name)]
            if root is not None and root_uri
            else None
        )
        return Workspace(
            root_uri,
            sync_kind=types.TextDocumentSyncKind.Incremental,
            workspace_folders=folders,
            position_encoding=encoding,
        )

    # --- starting ---

    async def start(
        self,
        root: Path,
        client_name: str = "visual-studio-code",
        *,
        init_options: dict[str, Any] | None = None,
        encodings: list[str] | None = None,
        save_documents: bool = False,
        work_done_progress: bool = True,
        settings: Any = None,
    ) -> EditorSession:
        """initialize + initialized, as `client_name` (one of lsp_harness.CLIENTS) would send them."""
        from lich_lsp.session import EditorSession

        if self.docs:
            raise RuntimeError("start() the fake editor before opening documents")
        caps = capabilities_for(
            client_name,
            encodings=encodings,
            save_documents=save_documents,
            work_done_progress=work_done_progress,
        )
        self.declared = caps
        # Editors without documentChanges (Neovim) load an edited file into a hidden buffer.
        self.open_on_edit = bool(
            caps.workspace
            and caps.workspace.workspace_edit
            and caps.workspace.workspace_edit.document_changes
        )
        self.settings = settings
        self.root = root
        # What pygls' lsp_initialize picks: the client's first supported encoding, else utf-16.
        encoding = _encoding_name(ServerCapabilitiesBuilder.choose_position_encoding(caps))
        self.workspace = self._new_workspace(root, encoding)
        params = types.InitializeParams(
            capabilities=caps,
            root_uri=uri_of(root),
            workspace_folders=[types.WorkspaceFolder(uri=uri_of(root), name=root.name)],
            initialization_options=init_options,
            process_id=None,
        )
        self.session = EditorSession.from_initialize(self, params)
        await self.session.initialized()
        return self.session

    async def command(
        self,
        name: str,
        argument: Any = None,
        *,
        no_args: bool = False,
        timeout_s: float = COMMAND_WAIT_S,
    ) -> Any:
        """workspace/executeCommand with a fresh request id; the session's JsonRpc errors propagate."""
        _, task = self.start_command(name, argument, no_args=no_args)
        return await bounded(task, timeout_s, f"the answer to {name}")

    def start_command(
        self, name: str, argument: Any = None, *, no_args: bool = False
    ) -> tuple[int, asyncio.Task[Any]]:
        """Send the command without waiting: (its request id, for a cancel; the task answering it)."""
        arguments = None if no_args else [argument if argument is not None else {}]
        request_id = next(self._request_ids)
        coro = self.session.execute_command(name, arguments, request_id=request_id)
        task = asyncio.ensure_future(coro)
        self._commands[request_id] = task
        task.add_done_callback(lambda _: self._commands.pop(request_id, None))
        return request_id, task

    def cancel(self, request_id: int) -> None:
        """$/cancelRequest for a command sent with start_command: as pygls does, the request's
        handler is cancelled first, then the session hears of it."""
        task = self._commands.get(request_id)
        if task is not None:
            task.cancel()
        self.session.cancel_request(request_id)

    def cancel_progress(self, token: str) -> None:
        """The user presses cancel on a progress bar (window/workDoneProgress/cancel)."""
        self.session.cancel_progress(token)

    async def change_settings(self, settings: Any, *, push: bool = False) -> None:
        """The user edits the settings: didChangeConfiguration, pushing them or (VS Code) null to pull."""
        self.settings = settings
        await self.session.did_change_configuration(copy.deepcopy(settings) if push else None)

    async def stop(self, wait_s: float | None = None) -> None:
        """shutdown + exit, as the editor sends them when it closes; held requests are let go first."""
        from lich_lsp.server import SHUTDOWN_TASK_WAIT_S

        self.release_all()
        if self.session is None:
            return
        await bounded(
            self.session.shutdown(SHUTDOWN_TASK_WAIT_S if wait_s is None else wait_s),
            SHUTDOWN_TASK_WAIT_S + WAIT_S,
            "shutdown",
        )
        self.session.exit()
        await self.settle()

    # --- EditorPort: documents and positions ---

    def text_document(self, uri: str) -> TextDocument | None:
        return self.workspace.text_documents.get(unquote(uri))

    @property
    def position_codec(self) -> PositionCodec:
        return self.workspace.position_codec

    @property
    def position_encoding(self) -> str:
        return _encoding_name(self.workspace.position_encoding)

    # --- EditorPort: requests ---

    async def apply_edit(
        self, params: types.ApplyWorkspaceEditParams
    ) -> types.ApplyWorkspaceEditResult:
        self.applied.append(params)
        self._notify()
        if self.hold is not None:
            await self.hold.wait()
        if self.before_apply is not None:
            self.before_apply()
        if self.answer == "reject":
            return types.ApplyWorkspaceEditResult(
                applied=False, failure_reason="the user rejected the edit"
            )
        if self.answer == "error":
            raise EditorRequestError(INTENDED_FAILURE)
        if self.answer == "garbage":
            # What PyglsEditor raises when the answer does not parse (pygls_adapter.MalformedMessage);
            # the adapter's own "ignored a malformed response" report does not happen here.
            raise EditorRequestError("response: malformed params")
        try:
            return self._apply(params.edit)
        except (ValueError, OSError) as err:
            # The harness's handler would raise here: the client answers with an error, and the
            # test fails on the recorded failure.
            self.failures.append(f"workspace/applyEdit: {type(err).__name__}: {err}")
            raise EditorRequestError(f"workspace/applyEdit: {err}") from None

    def _doc_for_edit(self, uri: str, staged: dict[str, Doc]) -> Doc:
        if uri in staged:
            return staged[uri]
        if uri in self.docs:
            current = self.docs[uri]
            return Doc(current.text, current.version, current.open)
        path = _path(uri)
        return Doc(path.read_text(encoding="utf-8") if path.exists() else "", 0, False)

    def _apply(self, edit: types.WorkspaceEdit) -> types.ApplyWorkspaceEditResult:
        encoding = self.position_encoding
        staged: dict[str, Doc] = {}
        created: list[str] = []
        deleted: list[str] = []
        for change in edit.document_changes or []:
            if isinstance(change, types.CreateFile):
                options = change.options
                if _path(change.uri).exists() and not (
                    options and (options.overwrite or options.ignore_if_exists)
                ):
                    return types.ApplyWorkspaceEditResult(
                        applied=False, failure_reason=f"{change.uri} exists"
                    )
                staged[change.uri] = Doc("", 0, False)
                created.append(change.uri)
            elif isinstance(change, types.DeleteFile):
                deleted.append(change.uri)
            elif isinstance(change, types.TextDocumentEdit):
                uri = change.text_document.uri
                doc = self._doc_for_edit(uri, staged)
                version = change.text_document.version
                if version is not None and doc.open and version != doc.version:
                    return types.ApplyWorkspaceEditResult(
                        applied=False,
                        failure_reason=f"version mismatch: edit for {version}, buffer at {doc.version}",
                    )
                doc.text = apply_text_edits(doc.text, list(change.edits), encoding)
                staged[uri] = doc
            else:
                return types.ApplyWorkspaceEditResult(
                    applied=False, failure_reason=f"unsupported {change!r}"
                )
        for uri, edits in (edit.changes or {}).items():
            doc = self._doc_for_edit(uri, staged)
            doc.text = apply_text_edits(doc.text, list(edits), encoding)
            staged[uri] = doc
        for uri in created:
            path = _path(uri)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
        for uri, doc in staged.items():
            if doc.open:
                doc.version += 1
                self.docs[uri] = doc
                self._queue_echo(self._echo_change(uri, doc.version, doc.text))
            else:
                doc.version = 1
                doc.open = self.open_on_edit
                self.docs[uri] = doc
                if doc.open:
                    self._queue_echo(self._echo_open(uri, doc.text, "text"))
        for uri in deleted:
            path = _path(uri)
            if path.exists():
                path.unlink()
            gone = self.docs.pop(uri, None)
            if gone is not None and gone.open:
                self._queue_echo(self._echo_close(uri))
        return types.ApplyWorkspaceEditResult(applied=True)

    async def save_documents(self, uris: list[str]) -> None:
        self.save_requests.append(list(uris))
        self._notify()
        if self.save_answer == "error":
            raise EditorRequestError("lich/saveDocuments: the editor could not save")
        for uri in uris:
            doc = self.docs.get(uri)
            if doc is None:
                continue
            _path(uri).write_text(doc.text, encoding="utf-8")
            self.saved.append(uri)
            if doc.open:
                self._queue_echo(self._echo_save(uri))
        self._notify()

    async def ask(self, params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
        self.message_requests.append(params)
        self._notify()
        if self.ask_hold is not None:
            await self.ask_hold.wait()
        if self.ask_answer == "error":
            raise EditorRequestError("window/showMessageRequest: the editor failed the request")
        answer = self.message_answers.pop(0) if self.message_answers else None
        return types.MessageActionItem(title=answer) if answer is not None else None

    async def show_document(self, params: types.ShowDocumentParams) -> None:
        self.shown_documents.append(params)
        self._notify()

    async def configuration(self, params: types.ConfigurationParams) -> list[Any]:
        self.configuration_requests.append(params)
        self._notify()
        if self.configuration_answer == "error":
            raise EditorRequestError("workspace/configuration: the editor failed the request")
        return [copy.deepcopy(self.settings) for _ in params.items]

    async def create_progress(self, token: str) -> None:
        self.progress_created.append(token)
        self._notify()
        if self.progress_create_answer == "error":
            raise EditorRequestError(
                "window/workDoneProgress/create: the editor failed the request"
            )
        self.progress_tokens.add(token)

    # --- EditorPort: notifications ---

    def progress(self, token: str, value: ProgressValue) -> None:
        self.progress_reports.append((token, value))
        if token not in self.progress_tokens:
            self.failures.append(f"$/progress for a token that is not live: {token!r} {value!r}")
        if isinstance(value, types.WorkDoneProgressEnd):
            self.progress_tokens.discard(token)
        self._notify()

    def show_message(self, message: str, kind: types.MessageType) -> None:
        self.messages.append((kind, message))
        self._notify()

    def log_message(self, message: str, kind: types.MessageType) -> None:
        self.logs.append((kind, message))
        self._notify()

    def publish_diagnostics(self, uri: str, diagnostics: list[types.Diagnostic]) -> None:
        self.diagnostics[uri] = list(diagnostics)
        self._notify()

    def send_event(self, payload: dict[str, Any]) -> None:
        try:
            self.events.append(json.loads(json.dumps(payload)))
        except (TypeError, ValueError) as err:
            self.failures.append(f"lich/event is not JSON: {err}: {payload!r}")
            self.events.append(copy.deepcopy(payload))
        self._notify()

    # --- the user's side ---

    def open(self, path: Path, text: str | None = None, language_id: str = "python") -> str:
        """The user opens a file (didOpen): `text`, else a hidden buffer's text, else the disk's."""
        self.deliver_echoes()
        uri = uri_of(path)
        if uri in self.docs and self.docs[uri].open:
            raise AssertionError(f"{uri} is already open")
        if text is None:
            hidden = self.docs.get(uri)
            text = hidden.text if hidden is not None else path.read_text(encoding="utf-8")
        self.docs[uri] = Doc(text, 1, True)
        self.workspace.put_text_document(
            types.TextDocumentItem(uri=uri, language_id=language_id, version=1, text=text)
        )
        self._tell_session("did_open", uri)
        return uri

    def type_text(self, uri: str, new_text: str) -> None:
        """The user replaces the buffer's text (a full-content didChange, like a paste)."""
        self.deliver_echoes()
        doc = self.docs[uri]
        if not doc.open:
            raise AssertionError(f"{uri} is not open")
        doc.text = new_text
        doc.version += 1
        self._sync_change(uri, doc.version, new_text)
        self._notify()

    def close(self, uri: str) -> None:
        """The user closes the buffer (didClose); unsaved text is dropped."""
        self.deliver_echoes()
        if not self.docs[uri].open:
            raise AssertionError(f"{uri} is not open")
        del self.docs[uri]
        self.workspace.remove_text_document(uri)
        self._tell_session("did_close", uri)

    def text(self, uri: str) -> str:
        """The buffer's text as the editor has it (the server's copy may lag until the echo)."""
        return self.docs[uri].text

    # --- holding requests (the "user" looks at them before answering) ---

    @contextlib.contextmanager
    def holding_edits(self) -> Iterator[asyncio.Event]:
        """Hold every workspace/applyEdit until the block ends, also when an assert in it fails."""
        hold = asyncio.Event()
        self.hold = hold
        try:
            yield hold
        finally:
            hold.set()
            if self.hold is hold:
                self.hold = None

    @contextlib.contextmanager
    def holding_questions(self) -> Iterator[asyncio.Event]:
        """Keep every window/showMessageRequest open until the block ends."""
        hold = asyncio.Event()
        self.ask_hold = hold
        try:
            yield hold
        finally:
            hold.set()
            if self.ask_hold is hold:
                self.ask_hold = None

    def release_all(self) -> None:
        """Let held edits and questions go (call before shutting a session down)."""
        for hold in (self.hold, self.ask_hold):
            if hold is not None:
                hold.set()

    # --- echoes (editor-to-server notifications that follow an answered request) ---

    def _queue_echo(self, echo: Callable[[], None]) -> None:
        self._echoes.append(echo)
        if self.echo == "before":
            self.deliver_echoes()
        elif self.echo == "soon" and not self._echo_scheduled:
            self._echo_scheduled = True
            asyncio.get_running_loop().call_soon(self._scheduled_echoes)

    def _scheduled_echoes(self) -> None:
        self._echo_scheduled = False
        self._run_echoes()

    def deliver_echoes(self) -> None:
        """Send every pending echo now, in order."""
        self._run_echoes()

    def _run_echoes(self) -> None:
        while self._echoes:
            echo = self._echoes.popleft()
            try:
                echo()
            except Exception as err:  # noqa: BLE001 - a notification handler's error is reported, as pygls does
                self.failures.append(f"echo: {type(err).__name__}: {err}")
        self._notify()

    @property
    def pending_echoes(self) -> int:
        return len(self._echoes)

    def _sync_change(self, uri: str, version: int, text: str) -> None:
        self.workspace.update_text_document(
            types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            types.TextDocumentContentChangeWholeDocument(text=text),
        )

    def _echo_change(self, uri: str, version: int, text: str) -> Callable[[], None]:
        return lambda: self._sync_change(uri, version, text)

    def _echo_open(self, uri: str, text: str, language_id: str) -> Callable[[], None]:
        def echo() -> None:
            self.workspace.put_text_document(
                types.TextDocumentItem(uri=uri, language_id=language_id, version=1, text=text)
            )
            self._tell_session("did_open", uri)

        return echo

    def _echo_close(self, uri: str) -> Callable[[], None]:
        def echo() -> None:
            self.workspace.remove_text_document(uri)
            self._tell_session("did_close", uri)

        return echo

    def _echo_save(self, uri: str) -> Callable[[], None]:
        return lambda: self._tell_session("did_save", uri)

    def _tell_session(self, method: str, uri: str) -> None:
        if self.session is None:
            return
        result = getattr(self.session, method)(uri)
        if inspect.isawaitable(result):
            future = asyncio.ensure_future(result)
            self._session_tasks.add(future)
            future.add_done_callback(self._session_task_done)

    def _session_task_done(self, future: asyncio.Future[Any]) -> None:
        self._session_tasks.discard(future)
        if not future.cancelled() and future.exception() is not None:
            self.failures.append(f"session handler: {future.exception()!r}")
        self._notify()

    async def settle(self, timeout_s: float = WAIT_S) -> None:
        """Until the scheduled echoes have run and the session's handlers of them have finished.

        Echoes held by echo="manual" are not waited for: deliver_echoes() sends them.
        """

        async def drain() -> None:
            await asyncio.sleep(0)
            while self._echo_scheduled or self._session_tasks:
                if self._session_tasks:
                    await asyncio.wait(list(self._session_tasks))
                else:
                    await asyncio.sleep(0)

        await bounded(drain(), timeout_s, "the editor's echoes to settle")

    # --- waiting (woken by each recorded message, never by polling the clock) ---

    def _notify(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def wait_until(
        self, predicate: Callable[[], bool], timeout_s: float = WAIT_S, what: str = "the condition"
    ) -> None:
        """Until `predicate` (over what this editor recorded) holds; re-checked at each record."""

        async def until() -> None:
            while not predicate():
                waiter = asyncio.get_running_loop().create_future()
                self._waiters.append(waiter)
                await waiter

        await bounded(until(), timeout_s, what)

    def find_event(
        self, kind: str, task_id: str | None = None, **data: Any
    ) -> dict[str, Any] | None:
        for event in self.events:
            if event.get("type") != kind or (
                task_id is not None and event.get("task_id") != task_id
            ):
                continue
            if all((event.get("data") or {}).get(k) == v for k, v in data.items()):
                return event
        return None

    async def wait_for_event(
        self, kind: str, task_id: str | None = None, timeout_s: float = WAIT_S, **data: Any
    ) -> dict[str, Any]:
        """Until a lich/event of type `kind` (of that task, with these `data` values); returns it."""
        what = (
            f"a lich/event {kind}"
            + (f" of {task_id}" if task_id else "")
            + (f" with {data}" if data else "")
        )
        await self.wait_until(
            lambda: self.find_event(kind, task_id, **data) is not None, timeout_s, what
        )
        found = self.find_event(kind, task_id, **data)
        assert found is not None
        return found

    async def wait_for_log(self, text: str, timeout_s: float = WAIT_S) -> None:
        """Until a window/logMessage containing `text`."""
        await self.wait_until(
            lambda: any(text in m for _, m in self.logs), timeout_s, f"a log message with {text!r}"
        )

    async def wait_for_message(self, text: str, timeout_s: float = WAIT_S) -> None:
        """Until a window/showMessage containing `text`."""
        await self.wait_until(
            lambda: any(text in m for _, m in self.messages), timeout_s, f"a message with {text!r}"
        )

    async def wait_for_edits(
        self, count: int = 1, timeout_s: float = WAIT_S
    ) -> types.ApplyWorkspaceEditParams:
        """Until `count` workspace/applyEdit requests have arrived (held or not); returns the last."""
        await self.wait_until(
            lambda: len(self.applied) >= count, timeout_s, f"{count} workspace/applyEdit"
        )
        return self.applied[count - 1]

    async def wait_for_questions(
        self, count: int = 1, timeout_s: float = WAIT_S
    ) -> types.ShowMessageRequestParams:
        """Until `count` window/showMessageRequest questions have arrived; returns the last."""
        await self.wait_until(
            lambda: len(self.message_requests) >= count, timeout_s, f"{count} showMessageRequest"
        )
        return self.message_requests[count - 1]

    # --- textDocument/codeAction (appended for tests/lsp/test_session_basics.py) ---

    def code_action(self, params: types.CodeActionParams) -> list[types.CodeAction | types.Command]:
        """textDocument/codeAction: `params` go through pygls' converter first, as they would on
        the wire (a `CodeActionKind` in `only` arrives as its plain string), and the answer must
        serialize (else a recorded failure)."""
        converter = client_converter()  # pygls' converter, with the test editor's CodeAction fix
        sent = converter.structure(
            json.loads(json.dumps(converter.unstructure(params))), types.CodeActionParams
        )
        actions = self.session.code_actions(sent)
        try:
            json.dumps(converter.unstructure(actions))
        except (TypeError, ValueError) as err:
            self.failures.append(f"textDocument/codeAction: the answer is not JSON: {err}")
        return actions
