"""A test editor for lich-lsp: a pytest-lsp client that behaves like a real one.

It keeps its own copy of every document, applies `workspace/applyEdit` to that copy for real
(documentChanges with version checks, `changes`, CreateFile/DeleteFile, every position
encoding), echoes the result back with `didChange`/`didOpen` as an editor does, can answer
`applied: false` or an error, can hold an edit while the "user" types, answers
`window/showMessageRequest` from a script, and saves on `lich/saveDocuments`.

Nothing here waits without a bound: starting a session, every command and every wait_until has a
deadline, and stop_session releases a held edit, then kills a server that does not leave, so a
failed test cannot hang the run (pytest-timeout stops the test itself; see pyproject.toml).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import os
import re
import sys
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, Union

from lsprotocol import types
from pygls.protocol import default_converter
from pygls.uris import from_fs_path, to_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import register_lsp_features

from tests.support import client_profiles, prefork

CLIENTS = ("visual-studio-code", "neovim@v0.7.0", "neovim", "emacs")
# The real start-up, for the tests of the process itself (raw stdio, --tcp, --ws, the parent's
# death); start_session forks the server from a process that has imported it (tests/support/prefork.py).
SERVER_COMMAND = [sys.executable, "-m", "lich_lsp"]
LSP_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# Bounds, generous for a loaded two-core machine: they only decide how soon a broken test fails.
WAIT_S = 20.0  # a condition the test waits for (wait_until, wait_for_status, raw requests)
START_WAIT_S = 60.0  # start `python -m lich_lsp` and answer `initialize`
COMMAND_WAIT_S = 90.0  # one workspace/executeCommand (a whole lich.ask with its model turns)
STOP_WAIT_S = 20.0  # shutdown + exit, then the server process ending after a kill
INTENDED_FAILURE = "editor exploded while applying the edit"

T = TypeVar("T")


async def bounded(awaitable: Awaitable[T], timeout_s: float, what: str) -> T:
    """Await with a deadline; on timeout an AssertionError that says what was awaited."""
    try:
        return await asyncio.wait_for(awaitable, timeout_s)
    except asyncio.TimeoutError:
        raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}") from None


def uri_of(path: Path) -> str:
    return from_fs_path(str(path)) or path.as_uri()


def units(text: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-32":
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def offset_at(text: str, position: types.Position, encoding: str) -> int:
    """Client-side position -> code point offset, following LSP's line breaks and the encoding."""
    starts = [0] + [m.end() for m in LSP_LINE_BREAK.finditer(text)]
    if position.line >= len(starts):
        return len(text)
    start = starts[position.line]
    end = starts[position.line + 1] if position.line + 1 < len(starts) else len(text)
    line = text[start:end]
    line = line[: len(line) - len(m.group())] if (m := re.search(r"(\r\n|\r|\n)$", line)) else line
    count = 0
    for index, char in enumerate(line):
        if count >= position.character:
            return start + index
        count += units(char, encoding)
    if count < position.character:
        raise ValueError(f"position {position} is past the end of line {position.line}")
    return start + len(line)


def apply_text_edits(text: str, edits: list[Any], encoding: str) -> str:
    spans = sorted(
        (
            (
                offset_at(text, e.range.start, encoding),
                offset_at(text, e.range.end, encoding),
                e.new_text,
            )
            for e in edits
        ),
        key=lambda span: (span[0], span[1]),
    )
    for (_, end_a, _), (start_b, _, _) in zip(spans, spans[1:], strict=False):
        if start_b < end_a:
            raise ValueError("overlapping text edits")
    for start, end, new in reversed(spans):
        text = text[:start] + new + text[end:]
    return text


@dataclass
class Doc:
    text: str
    version: int
    open: bool  # open in the editor (the server was told with didOpen)


@dataclass
class EditorState:
    docs: dict[str, Doc] = field(default_factory=dict)
    applied: list[types.ApplyWorkspaceEditParams] = field(default_factory=list)
    answer: str = "apply"  # "apply" | "reject" | "error" | "garbage" (a result of the wrong type)
    hold: asyncio.Event | None = None
    before_apply: Callable[[], None] | None = None
    message_answers: list[str | None] = field(default_factory=list)
    message_requests: list[types.ShowMessageRequestParams] = field(default_factory=list)
    saved: list[str] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    open_on_edit: bool = True
    configuration_requests: int = 0  # workspace/configuration items answered


class EditorClient(LanguageClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.editor = EditorState()
        self.encoding = "utf-16"
        self.failures: list[str] = []
        self.declared = (
            types.ClientCapabilities()
        )  # what this test editor told the server it supports

    def report_server_error(self, error: Exception, source: Any) -> None:
        if INTENDED_FAILURE not in str(error):
            self.failures.append(f"{getattr(source, '__name__', source)}: {error!r}")
        super().report_server_error(error, source)

    def get_configuration(self, *, section: str | None = None, scope_uri: str | None = None) -> Any:
        """pytest-lsp's answer to each item of a workspace/configuration request, counted."""
        self.editor.configuration_requests += 1
        return super().get_configuration(section=section, scope_uri=scope_uri)

    # --- the user's side ---

    def open(self, path: Path, text: str | None = None, language_id: str = "python") -> str:
        uri = uri_of(path)
        if text is None:
            text = path.read_text(encoding="utf-8")
        self.editor.docs[uri] = Doc(text, 1, True)
        self.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id=language_id, version=1, text=text
                )
            )
        )
        return uri

    def type_text(self, uri: str, new_text: str) -> None:
        """The user replaces the buffer's text (a full-content change, like a paste)."""
        doc = self.editor.docs[uri]
        doc.text = new_text
        doc.version += 1
        self.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=doc.version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=new_text)],
            )
        )

    def text(self, uri: str) -> str:
        return self.editor.docs[uri].text

    async def command(
        self,
        name: str,
        argument: Any = None,
        *,
        no_args: bool = False,
        timeout_s: float = COMMAND_WAIT_S,
    ) -> Any:
        arguments = None if no_args else [argument if argument is not None else {}]
        return await bounded(
            self.workspace_execute_command_async(
                types.ExecuteCommandParams(command=name, arguments=arguments)
            ),
            timeout_s,
            f"the answer to {name}",
        )

    async def raw_request(self, method: str, params: Any) -> Any:
        """Send a request as plain JSON, bypassing the client's types (for malformed params)."""
        msg_id = f"raw-{uuid.uuid4().hex}"
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.protocol._request_futures[msg_id] = future
        self.protocol._send_data(
            {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        )
        return await bounded(future, WAIT_S, f"the answer to {method}")

    def raw_notify(self, method: str, params: Any) -> None:
        self.protocol._send_data({"jsonrpc": "2.0", "method": method, "params": params})

    # --- holding edits (the "user" looks at an edit before answering) ---

    @contextlib.contextmanager
    def holding_edits(self) -> Iterator[asyncio.Event]:
        """Hold every workspace/applyEdit until the block ends, also when an assert in it fails.

        A held edit keeps its task, and so the server's shutdown, waiting: always release it.
        """
        hold = asyncio.Event()
        self.editor.hold = hold
        try:
            yield hold
        finally:
            hold.set()

    def release_edits(self) -> None:
        if self.editor.hold is not None:
            self.editor.hold.set()

    # --- applying edits like an editor ---

    def _doc_for_edit(self, uri: str, staged: dict[str, Doc]) -> Doc:
        if uri in staged:
            return staged[uri]
        if uri in self.editor.docs:
            current = self.editor.docs[uri]
            return Doc(current.text, current.version, current.open)
        path = Path(to_fs_path(uri) or "")
        return Doc(path.read_text(encoding="utf-8") if path.exists() else "", 0, False)

    async def handle_apply_edit(
        self, params: types.ApplyWorkspaceEditParams
    ) -> types.ApplyWorkspaceEditResult:
        self.editor.applied.append(params)
        if self.editor.hold is not None:
            await self.editor.hold.wait()
        if self.editor.before_apply is not None:
            self.editor.before_apply()
        if self.editor.answer == "reject":
            return types.ApplyWorkspaceEditResult(
                applied=False, failure_reason="the user rejected the edit"
            )
        if self.editor.answer == "error":
            raise RuntimeError(INTENDED_FAILURE)
        if self.editor.answer == "garbage":
            return 5  # type: ignore[return-value]
        edit = params.edit
        staged: dict[str, Doc] = {}
        created: list[str] = []
        deleted: list[str] = []
        if edit.document_changes is not None:
            for change in edit.document_changes:
                if isinstance(change, types.CreateFile):
                    path = Path(to_fs_path(change.uri) or "")
                    if path.exists() and not (
                        change.options
                        and (change.options.overwrite or change.options.ignore_if_exists)
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
                    doc.text = apply_text_edits(doc.text, list(change.edits), self.encoding)
                    staged[uri] = doc
                else:
                    return types.ApplyWorkspaceEditResult(
                        applied=False, failure_reason=f"unsupported {change!r}"
                    )
        for uri, edits in (edit.changes or {}).items():
            doc = self._doc_for_edit(uri, staged)
            doc.text = apply_text_edits(doc.text, list(edits), self.encoding)
            staged[uri] = doc
        for uri in created:
            path = Path(to_fs_path(uri) or "")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
        for uri, doc in staged.items():
            if doc.open:
                doc.version += 1
                self.editor.docs[uri] = doc
                self.text_document_did_change(
                    types.DidChangeTextDocumentParams(
                        text_document=types.VersionedTextDocumentIdentifier(
                            uri=uri, version=doc.version
                        ),
                        content_changes=[
                            types.TextDocumentContentChangeWholeDocument(text=doc.text)
                        ],
                    )
                )
            else:
                doc.version = 1
                doc.open = self.editor.open_on_edit
                self.editor.docs[uri] = doc
                if doc.open:
                    self.text_document_did_open(
                        types.DidOpenTextDocumentParams(
                            text_document=types.TextDocumentItem(
                                uri=uri, language_id="text", version=1, text=doc.text
                            )
                        )
                    )
        for uri in deleted:
            path = Path(to_fs_path(uri) or "")
            if path.exists():
                path.unlink()
            doc = self.editor.docs.pop(uri, None)
            if doc is not None and doc.open:
                self.text_document_did_close(
                    types.DidCloseTextDocumentParams(
                        text_document=types.TextDocumentIdentifier(uri=uri)
                    )
                )
        return types.ApplyWorkspaceEditResult(applied=True)

    def handle_save_documents(self, params: Any) -> dict[str, Any]:
        uris = as_dict(params)["uris"]
        for uri in uris:
            doc = self.editor.docs.get(uri)
            if doc is None:
                continue
            Path(to_fs_path(uri) or "").write_text(doc.text, encoding="utf-8")
            self.editor.saved.append(uri)
            if doc.open:
                self.text_document_did_save(
                    types.DidSaveTextDocumentParams(
                        text_document=types.TextDocumentIdentifier(uri=uri)
                    )
                )
        return {"saved": list(uris)}

    def handle_message_request(
        self, params: types.ShowMessageRequestParams
    ) -> types.MessageActionItem | None:
        self.editor.message_requests.append(params)
        answer = self.editor.message_answers.pop(0) if self.editor.message_answers else None
        return types.MessageActionItem(title=answer) if answer is not None else None

    # --- waiting ---

    async def wait_until(
        self, predicate: Callable[[], bool], timeout_s: float = WAIT_S, what: str = "the condition"
    ) -> None:
        """Poll `predicate` (state this client records as messages arrive) until it holds."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while not predicate():
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
            await asyncio.sleep(0.02)

    async def wait_for_log(self, text: str, timeout_s: float = WAIT_S) -> None:
        """Until a window/logMessage containing `text` has arrived."""
        await self.wait_until(
            lambda: any(text in m.message for m in self.log_messages),
            timeout_s,
            f"a log message with {text!r}",
        )

    async def wait_for_event(
        self, kind: str, task_id: str | None = None, timeout_s: float = WAIT_S, **data: Any
    ) -> dict[str, Any]:
        """Until a lich/event of type `kind` (of that task, with these `data` values) has arrived;
        returns it."""

        def match() -> dict[str, Any] | None:
            for event in self.editor.events:
                if event.get("type") != kind or (
                    task_id is not None and event.get("task_id") != task_id
                ):
                    continue
                if all((event.get("data") or {}).get(k) == v for k, v in data.items()):
                    return event
            return None

        what = (
            f"a lich/event {kind}"
            + (f" of {task_id}" if task_id else "")
            + (f" with {data}" if data else "")
        )
        await self.wait_until(lambda: match() is not None, timeout_s, what)
        found = match()
        assert found is not None
        return found

    async def wait_for_startup(self) -> None:
        """Until the server has taken the editor's settings it asks for after `initialized` (when
        this editor declares workspace/configuration), then one lich.status round trip: the
        server read the answer before that request. A config file a test writes afterwards is
        seen by the server's own look at the files, not by that startup read."""
        workspace = self.declared.workspace
        if workspace is not None and workspace.configuration:
            await self.wait_until(
                lambda: self.editor.configuration_requests > 0, what="workspace/configuration"
            )
        await self.command("lich.status", {})

    async def wait_for_status(
        self, predicate: Callable[[dict[str, Any]], bool], timeout_s: float = WAIT_S
    ) -> dict[str, Any]:
        """Poll lich.status until predicate(status) holds; returns that status."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while True:
            status = await self.command("lich.status", {})
            if predicate(status):
                return status
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"timed out waiting for the status; last: {status}")
            await asyncio.sleep(0.02)


def as_dict(value: Any) -> Any:
    """Custom messages arrive as pygls' generic objects (namedtuple-like); tests want plain data."""
    if isinstance(value, dict):
        return {k: as_dict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return [as_dict(v) for v in value]
    if hasattr(value, "_asdict"):
        return {k: as_dict(v) for k, v in value._asdict().items()}
    return value


_CLIENT_CONVERTER: Any = None


def client_converter() -> Any:
    """pygls' converter, except that a CodeAction carrying a Command parses as a CodeAction.

    lsprotocol's hook takes any object with a "command" key for a Command, which misreads
    `CodeAction.command` (an object, where Command.command is a string); editors check the type.

    One for every client of this test process: cattrs writes (and compiles) a function for each
    type the first time it meets it, ~0.3 s of CPU for a session's messages, and a converter keeps
    them; it holds no other state.
    """
    global _CLIENT_CONVERTER
    if _CLIENT_CONVERTER is None:
        _CLIENT_CONVERTER = _new_client_converter()
    return _CLIENT_CONVERTER


def _new_client_converter() -> Any:
    converter = default_converter()

    def command_or_code_action(obj: Any, _: type) -> Any:
        if isinstance(obj.get("command"), str):
            return converter.structure(obj, types.Command)
        return converter.structure(obj, types.CodeAction)

    converter.register_structure_hook(
        Union[types.Command, types.CodeAction],  # noqa: UP007 - the key cattrs looks the union up by
        command_or_code_action,
    )
    return converter


def make_client() -> EditorClient:
    client = EditorClient(converter_factory=client_converter)
    register_lsp_features(client)

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    async def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        return await client.handle_apply_edit(params)

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def message_request(params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
        return client.handle_message_request(params)

    @client.feature("lich/saveDocuments")
    def save_documents(params: Any) -> dict[str, Any]:
        return client.handle_save_documents(params)

    @client.feature("lich/event")
    def lich_event(params: Any) -> None:
        client.editor.events.append(as_dict(params))

    return client


@functools.cache
def _published_capabilities(name: str) -> types.ClientCapabilities:
    # pytest-lsp structures the editor's whole InitializeParams with a converter of its own each
    # time (~33 ms of CPU; a deep copy of the result takes 0.4 ms), and the suite asks ~600 times.
    # Profiles pytest-lsp does not ship are ours: "helix@25.07.1" is
    # tests/support/clients/helix_v25.07.1.json.
    editor, _, version = name.partition("@")
    if client_profiles.has_profile(editor, version):
        return client_profiles.capabilities(editor, version)
    return client_capabilities(name)


def capabilities_for(
    name: str,
    *,
    encodings: list[str] | None = None,
    save_documents: bool = False,
    work_done_progress: bool = True,
    inline_completion: bool = False,
    lich_flags: dict[str, bool] | None = None,
) -> types.ClientCapabilities:
    caps = copy.deepcopy(_published_capabilities(name))
    if inline_completion:
        # LSP 3.18's ghost text; none of pytest-lsp's recorded clients declares it yet.
        caps.text_document = caps.text_document or types.TextDocumentClientCapabilities()
        caps.text_document.inline_completion = types.InlineCompletionClientCapabilities()
    if not work_done_progress and caps.window is not None:
        caps.window.work_done_progress = False
    if encodings is not None:
        caps.general = caps.general or types.GeneralClientCapabilities()
        caps.general.position_encodings = encodings
    flags = {**({"saveDocuments": True} if save_documents else {}), **(lich_flags or {})}
    if flags:  # experimental.lich: what a lich plugin (VS Code, Neovim, Emacs) declares
        caps.experimental = {"lich": flags}
    return caps


def negotiated_encoding(result: types.InitializeResult) -> str:
    value = result.capabilities.position_encoding
    return str(getattr(value, "value", value) or "utf-16")


async def start_session(
    root: Path,
    client_name: str = "visual-studio-code",
    *,
    init_options: dict[str, Any] | None = None,
    encodings: list[str] | None = None,
    save_documents: bool = False,
    work_done_progress: bool = True,
    env: dict[str, str] | None = None,
    inline_completion: bool = False,
    lich_flags: dict[str, bool] | None = None,
) -> EditorClient:
    server_env = {**os.environ, **(env or {})}
    config = ClientServerConfig(
        server_command=prefork.command("lich_lsp"),
        client_factory=make_client,
        server_env=server_env,
    )
    client = await bounded(config.start(), START_WAIT_S, "the server process to start")
    assert isinstance(client, EditorClient)
    try:
        await _initialize(
            client,
            root,
            client_name,
            init_options,
            encodings,
            save_documents,
            work_done_progress,
            inline_completion,
            lich_flags,
        )
    except BaseException:
        await _kill_server(client)
        with contextlib.suppress(Exception):
            await bounded(client.stop(), STOP_WAIT_S, "the client to stop")
        raise
    return client


async def _initialize(
    client: EditorClient,
    root: Path,
    client_name: str,
    init_options: dict[str, Any] | None,
    encodings: list[str] | None,
    save_documents: bool,
    work_done_progress: bool,
    inline_completion: bool = False,
    lich_flags: dict[str, bool] | None = None,
) -> None:
    caps = capabilities_for(
        client_name,
        encodings=encodings,
        save_documents=save_documents,
        work_done_progress=work_done_progress,
        inline_completion=inline_completion,
        lich_flags=lich_flags,
    )
    client.declared = caps
    # Editors without documentChanges (Neovim) load an edited file into a hidden buffer.
    client.editor.open_on_edit = bool(
        caps.workspace
        and caps.workspace.workspace_edit
        and caps.workspace.workspace_edit.document_changes
    )
    result = await bounded(
        client.initialize_session(
            types.InitializeParams(
                capabilities=caps,
                root_uri=uri_of(root),
                workspace_folders=[types.WorkspaceFolder(uri=uri_of(root), name=root.name)],
                initialization_options=init_options,
            )
        ),
        START_WAIT_S,
        "the answer to initialize",
    )
    client.encoding = negotiated_encoding(result)
    client.init_result = result  # type: ignore[attr-defined]


async def _kill_server(client: EditorClient) -> None:
    server = client._server
    if server is not None and server.returncode is None:
        server.kill()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait(), STOP_WAIT_S)


async def stop_session(client: EditorClient) -> None:
    """shutdown + exit, bounded; a server still running afterwards is killed, never waited on.

    pygls' client.stop() waits for the server process without a bound, so a server that was never
    told to exit (a failed or timed-out shutdown) would hang the test run there forever.
    """
    client.release_edits()  # a held edit keeps its task, and so the shutdown, waiting
    try:
        await bounded(client.shutdown_session(), STOP_WAIT_S, "shutdown and exit")
    except Exception as err:  # noqa: BLE001 - reported (the session fixture asserts no failures), not raised,
        # so the fixture still stops its other sessions
        client.failures.append(f"shutdown: {type(err).__name__}: {err}")
    finally:
        await _kill_server(client)
        await bounded(client.stop(), STOP_WAIT_S, "the client to stop")


# --- what the tests script the fake model with (shared by the wire and the in-process tests) ---


def provider_options(fake: Any, **extra: Any) -> dict[str, Any]:
    """initializationOptions pointing lich at the fake provider (tests/support/fake_provider.py)."""
    return {
        "providers": [
            {
                "name": "fake",
                "kind": "openai_compat",
                "base_url": fake.url + "/v1",
                "model": "fake-model",
            }
        ],
        **extra,
    }


def tool_contents(request: dict[str, Any]) -> list[str]:
    return [
        m.get("content") or ""
        for m in request["json"].get("messages", [])
        if m.get("role") == "tool"
    ]


def tool_messages(fake: Any) -> list[str]:
    """Contents of every tool message the model was sent (last request holds the whole history)."""
    return tool_contents(fake.requests[-1]) if fake.requests else []


def edit(path: str, old: str, new: str) -> dict[str, Any]:
    """A scripted edit_file tool call."""
    return {"name": "edit_file", "arguments": {"path": path, "old_string": old, "new_string": new}}
