"""`lich demo` without an editor: the real `lich-lsp` over stdio, driven by a headless editor.

The editor here does what VS Code or Neovim would: it opens the file the prompt is about, sends
`lich.ask`, applies each `workspace/applyEdit` to its buffers for real (versions checked, files
it does not have open read from disk), saves on `lich/saveDocuments`, answers the approval
question with "Allow once", and shows work-done progress. Every step is printed as it happens
(lich_cli.demo.render). The model is the replay provider playing the bundled recording, so no
API key and no network are involved; the server runs with a config and state dir of its own in
the demo's temp dir, so the user's settings cannot change the demo and the demo leaves nothing
behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from lich_cli.demo.lsp_client import LspConnection, LspError, MethodNotFound
from lich_cli.demo.render import Printer
from lich_cli.demo.sample_files import DemoSetup
from lich_core import __version__

# Bounds, so a broken server can never leave the demo hanging (it normally ends in ~2 s).
START_TIMEOUT_S = 60.0
ASK_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 10.0
ARGS_MAX_CHARS = 100
SUMMARY_MAX_CHARS = 200
ALLOW_ONCE = "Allow once"
LSP_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# The server's environment: nothing of the user's lich setup reaches it (config and state come
# from the demo's own folders), and no provider key is passed to a run that needs none.
SCRUBBED_ENV_PREFIXES = ("LICH_",)
SCRUBBED_ENV_NAMES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY")


def uri_of(path: Path) -> str:
    return path.resolve().as_uri()


def path_of(uri: str) -> Path:
    return Path(unquote(urlsplit(uri).path))


def language_of(uri: str) -> str:
    return "python" if uri.endswith(".py") else "plaintext"


def server_env(setup: DemoSetup) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(SCRUBBED_ENV_PREFIXES) and name not in SCRUBBED_ENV_NAMES
    }
    env["XDG_CONFIG_HOME"] = str(setup.config_home)
    env["XDG_STATE_HOME"] = str(setup.state_home)
    return env


def server_options(setup: DemoSetup) -> dict[str, Any]:
    """initializationOptions: the editor's settings, trusted like any editor's."""
    return {
        "providers": [{"name": "demo", "kind": "replay", "path": str(setup.recording)}],
        # Spelled out although it is the default: the approval step is part of the demo.
        "approval": {"process/exec": "ask"},
    }


def units(text: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-32":
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def offset_at(text: str, position: dict[str, int], encoding: str) -> int:
    """An LSP position (line breaks as LSP counts them, characters in `encoding`) -> str index."""
    starts = [0] + [match.end() for match in LSP_LINE_BREAK.finditer(text)]
    line = int(position.get("line", 0))
    if line >= len(starts):
        return len(text)
    start = starts[line]
    end = starts[line + 1] if line + 1 < len(starts) else len(text)
    content = LSP_LINE_BREAK.sub("", text[start:end])
    wanted = int(position.get("character", 0))
    count = 0
    for index, char in enumerate(content):
        if count >= wanted:
            return start + index
        count += units(char, encoding)
    return start + len(content)


def apply_text_edits(text: str, edits: list[dict[str, Any]], encoding: str) -> str:
    spans = sorted(
        (
            offset_at(text, e["range"]["start"], encoding),
            offset_at(text, e["range"]["end"], encoding),
            e["newText"],
        )
        for e in edits
    )
    for start, end, new in reversed(spans):
        text = text[:start] + new + text[end:]
    return text


@dataclass
class Buffer:
    text: str
    version: int
    open: bool


@dataclass
class DemoOutcome:
    """What the run showed; the CLI's exit status and the tests read it."""

    result: dict[str, Any] | None = None
    edits: int = 0
    approvals: int = 0
    tool_calls: int = 0
    failed_tools: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return (
            self.result is not None
            and self.result.get("stopped_reason") == "final"
            and self.edits > 0
            and not self.failed_tools
            and not self.problems
        )


class HeadlessEditor:
    """The editor half of the conversation: buffers, edits, saves, approvals, and the printout."""

    def __init__(self, setup: DemoSetup, printer: Printer) -> None:
        self.setup = setup
        self.printer = printer
        self.buffers: dict[str, Buffer] = {}
        self.encoding = "utf-16"
        self.outcome = DemoOutcome()
        self.connection: LspConnection | None = None
        self._turn_text: list[str] = []
        self._progress_title = ""

    # --- what the user does ---

    def open(self, path: Path) -> str:
        uri = uri_of(path)
        text = path.read_text(encoding="utf-8")
        self.buffers[uri] = Buffer(text, 1, True)
        self._notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": uri,
                    "languageId": language_of(uri),
                    "version": 1,
                    "text": text,
                }
            },
        )
        return uri

    def _notify(self, method: str, params: Any) -> None:
        assert self.connection is not None
        self.connection.notify(method, params)

    def relative(self, uri: str) -> str:
        path = path_of(uri)
        with contextlib.suppress(ValueError):
            return path.relative_to(self.setup.workspace.resolve()).as_posix()
        return str(path)

    # --- what the server asks ---

    async def on_request(self, method: str, params: Any) -> Any:
        if method == "workspace/applyEdit":
            return self.apply_edit(params)
        if method == "window/showMessageRequest":
            return self.answer_question(params)
        if method == "lich/saveDocuments":
            return self.save(params)
        if method in (
            "window/workDoneProgress/create",
            "client/registerCapability",
            "client/unregisterCapability",
        ):
            return None
        if method == "workspace/configuration":
            return [None for _ in (params or {}).get("items", [])]
        raise MethodNotFound(method)

    def apply_edit(self, params: dict[str, Any]) -> dict[str, Any]:
        edit = params.get("edit") or {}
        label = params.get("label") or "lich"
        staged: dict[str, Buffer] = {}
        before: dict[str, str] = {}
        created: set[str] = set()
        for change in edit.get("documentChanges") or []:
            kind = change.get("kind")
            if kind == "create":
                staged[change["uri"]] = Buffer("", 0, False)
                before[change["uri"]] = ""
                created.add(change["uri"])
            elif kind is None and "textDocument" in change:
                uri = change["textDocument"]["uri"]
                buffer = staged.get(uri) or self._buffer_for_edit(uri)
                version = change["textDocument"].get("version")
                if version is not None and buffer.open and version != buffer.version:
                    return {
                        "applied": False,
                        "failureReason": f"version mismatch: edit for {version}, buffer at {buffer.version}",
                    }
                before.setdefault(uri, buffer.text)
                buffer.text = apply_text_edits(
                    buffer.text, change.get("edits") or [], self.encoding
                )
                staged[uri] = buffer
            else:
                return {
                    "applied": False,
                    "failureReason": f"the demo editor does not do {kind!r} changes",
                }
        for uri, edits in (edit.get("changes") or {}).items():
            buffer = staged.get(uri) or self._buffer_for_edit(uri)
            before.setdefault(uri, buffer.text)
            buffer.text = apply_text_edits(buffer.text, edits, self.encoding)
            staged[uri] = buffer
        files = ", ".join(self.relative(uri) for uri in staged)
        self.printer.step(
            "edit", f'{files} (workspace/applyEdit, label "{label}")', "bold", "magenta"
        )
        for uri, buffer in staged.items():
            self.printer.diff(self.relative(uri), before[uri], buffer.text, created=uri in created)
            self._echo(uri, buffer)
        self.outcome.edits += 1
        return {"applied": True}

    def _buffer_for_edit(self, uri: str) -> Buffer:
        if uri in self.buffers:
            current = self.buffers[uri]
            return Buffer(current.text, current.version, current.open)
        path = path_of(uri)
        return Buffer(path.read_text(encoding="utf-8") if path.exists() else "", 0, False)

    def _echo(self, uri: str, buffer: Buffer) -> None:
        """Tell the server what the buffer holds now, as an editor does after applying an edit."""
        if buffer.open:
            buffer.version += 1
            self.buffers[uri] = buffer
            self._notify(
                "textDocument/didChange",
                {
                    "textDocument": {"uri": uri, "version": buffer.version},
                    "contentChanges": [{"text": buffer.text}],
                },
            )
        else:
            # An edited file the editor did not have open is now loaded in a (hidden) buffer.
            buffer.version, buffer.open = 1, True
            self.buffers[uri] = buffer
            self._notify(
                "textDocument/didOpen",
                {
                    "textDocument": {
                        "uri": uri,
                        "languageId": language_of(uri),
                        "version": 1,
                        "text": buffer.text,
                    }
                },
            )

    def answer_question(self, params: dict[str, Any]) -> dict[str, Any] | None:
        titles = [action.get("title") for action in params.get("actions") or []]
        self.printer.step(
            "approval",
            f"{params.get('message', '')}\n[{' / '.join(str(t) for t in titles)}]",
            "bold",
            "yellow",
        )
        if ALLOW_ONCE not in titles:
            self.printer.step(
                "dismissed", "the demo only answers approval questions", "bold", "yellow"
            )
            return None
        self.printer.step(
            "allowed",
            f"{ALLOW_ONCE} (the demo answers for you; an editor asks you)",
            "bold",
            "yellow",
        )
        self.outcome.approvals += 1
        return {"title": ALLOW_ONCE}

    def save(self, params: dict[str, Any]) -> dict[str, Any]:
        saved = []
        for uri in params.get("uris") or []:
            buffer = self.buffers.get(uri)
            if buffer is None:
                continue
            path_of(uri).write_text(buffer.text, encoding="utf-8")
            saved.append(uri)
            self._notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        if saved:
            self.printer.step(
                "save",
                f"lich/saveDocuments: saved {', '.join(self.relative(u) for u in saved)}",
                "dim",
            )
        return {"saved": saved}

    # --- what the server tells ---

    def on_notification(self, method: str, params: Any) -> None:
        if method == "lich/event":
            self.on_event(params or {})
        elif method == "$/progress":
            value = (params or {}).get("value") or {}
            if value.get("kind") == "begin":
                self._progress_title = str(value.get("title") or "")
                self.printer.progress(self._progress_title, f"began: {self._progress_title}")
            elif value.get("kind") == "report":
                message = str(value.get("message") or "")
                # "turn 2" starts a turn; "turn 2: edit_file" names the tool the steps show anyway.
                self.printer.progress(
                    f"{self._progress_title}: {message}", None if ":" in message else message
                )
            elif value.get("kind") == "end":
                self.printer.end_progress(f"ended: {value.get('message', '')}")
        elif method == "window/showMessage":
            params = params or {}
            if params.get("type") in (
                1,
                2,
            ):  # Error, Warning; the Info one repeats the final answer
                self.printer.step("server", str(params.get("message", "")), "bold", "red")
                if params.get("type") == 1:
                    self.outcome.problems.append(str(params.get("message", "")))

    def on_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        data = event.get("data") or {}
        if kind == "text_delta":
            self._turn_text.append(str(data.get("text", "")))
        elif kind == "tool_call_start":
            self._flush_model_text()
            self.outcome.tool_calls += 1
            args = json.dumps(data.get("arguments") or {}, ensure_ascii=False)
            if len(args) > ARGS_MAX_CHARS:
                args = args[: ARGS_MAX_CHARS - 3] + "..."
            self.printer.step("tool", f"{data.get('name')} {args}", "bold", "blue")
        elif kind == "tool_call_end":
            self.on_tool_end(data)
        elif kind == "final":
            self._turn_text = []
            self.printer.step("answer", str(data.get("text", "")), "bold", "green")
        elif kind == "turn_end":
            self._flush_model_text()
        elif kind == "error":
            self.printer.step("error", str(data.get("message", "")), "bold", "red")
            self.outcome.problems.append(str(data.get("message", "")))
        elif kind == "run_end":
            usage = data.get("usage") or {}
            self.printer.step(
                "done",
                f"{data.get('stopped_reason')} after {data.get('turns_used')} turn(s) "
                f"(tokens in {usage.get('input_tokens', 0)}, out {usage.get('output_tokens', 0)}, as recorded)",
            )

    def _flush_model_text(self) -> None:
        text = "".join(self._turn_text).strip()
        self._turn_text = []
        if text:
            self.printer.step("model", text, "bold", "cyan")

    def on_tool_end(self, data: dict[str, Any]) -> None:
        took = f"{float(data.get('duration_ms') or 0):.0f} ms"
        name = data.get("name")
        if data.get("ok"):
            line = f"ok {name} ({took})"
            summary = " ".join(str(data.get("summary") or "").split())
            if name == "terminal" and summary:
                line += f": {summary[:SUMMARY_MAX_CHARS]}"
            self.printer.step("result", line, "dim")
        else:
            self.outcome.failed_tools.append(str(name))
            error = " ".join(str(data.get("error") or "").split())[:SUMMARY_MAX_CHARS]
            self.printer.step("result", f"failed {name} ({took}): {error}", "bold", "red")


def client_capabilities() -> dict[str, Any]:
    """What a full editor declares (VS Code's set, the parts lich uses)."""
    return {
        "general": {"positionEncodings": ["utf-32", "utf-16"]},
        "workspace": {
            "applyEdit": True,
            "workspaceEdit": {"documentChanges": True, "resourceOperations": ["create"]},
        },
        "textDocument": {"synchronization": {"didSave": True}},
        "window": {
            "workDoneProgress": True,
            "showMessage": {"messageActionItem": {"additionalPropertiesSupport": False}},
        },
        "experimental": {"lich": {"saveDocuments": True}},
    }


async def run_headless(setup: DemoSetup, printer: Printer) -> DemoOutcome:
    """The whole demo: start the server, ask, print every step, stop the server."""
    editor = HeadlessEditor(setup, printer)
    started = time.monotonic()
    stderr_path = setup.root / "server-stderr.log"
    with stderr_path.open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "lich_lsp",
            cwd=str(setup.workspace),
            env=server_env(setup),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
        )
    assert process.stdin is not None and process.stdout is not None
    connection = LspConnection(
        process.stdout, process.stdin, editor.on_request, editor.on_notification
    )
    editor.connection = connection
    connection.start()
    try:
        await _converse(editor, connection, setup, printer)
        await _stop(connection, process)
    except (LspError, asyncio.TimeoutError) as err:
        what = "timed out" if isinstance(err, asyncio.TimeoutError) else str(err)
        editor.outcome.problems.append(what)
        printer.step("error", f"the demo stopped: {what}", "bold", "red")
        tail = stderr_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-20:]
        for row in tail:
            printer.line(printer.style(f"  server: {row}", "dim"))
    finally:
        printer.end_progress()
        if process.returncode is None:
            process.kill()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(process.wait(), STOP_TIMEOUT_S)
        await connection.aclose()
    editor.outcome.elapsed_s = time.monotonic() - started
    return editor.outcome


async def _converse(
    editor: HeadlessEditor, connection: LspConnection, setup: DemoSetup, printer: Printer
) -> None:
    workspace_uri = uri_of(setup.workspace)
    result = await asyncio.wait_for(
        connection.request(
            "initialize",
            {
                "processId": os.getpid(),
                "clientInfo": {"name": "lich demo", "version": __version__},
                "rootUri": workspace_uri,
                "workspaceFolders": [{"uri": workspace_uri, "name": setup.workspace.name}],
                "capabilities": client_capabilities(),
                "initializationOptions": server_options(setup),
            },
        ),
        START_TIMEOUT_S,
    )
    capabilities = (result or {}).get("capabilities") or {}
    editor.encoding = str(capabilities.get("positionEncoding") or "utf-16")
    server = (result or {}).get("serverInfo") or {}
    printer.step(
        "server",
        f"{server.get('name', 'lich-lsp')} {server.get('version', '')} on stdio "
        f"({len(capabilities.get('executeCommandProvider', {}).get('commands', []))} commands); "
        f"model: the replay provider playing {setup.recording_name}",
        "bold",
    )
    connection.notify("initialized", {})
    target = setup.workspace / setup.open_file
    uri = editor.open(target)
    printer.step("open", f"{setup.open_file} (textDocument/didOpen)", "dim")
    printer.step("prompt", setup.prompt, "bold", "cyan")
    answer = await asyncio.wait_for(
        connection.request(
            "workspace/executeCommand",
            {"command": "lich.ask", "arguments": [{"prompt": setup.prompt, "uri": uri}]},
        ),
        ASK_TIMEOUT_S,
    )
    editor.outcome.result = (
        answer if isinstance(answer, dict) else {"stopped_reason": "?", "raw": answer}
    )


async def _stop(connection: LspConnection, process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(LspError, asyncio.TimeoutError):
        await asyncio.wait_for(connection.request("shutdown", None), STOP_TIMEOUT_S)
    with contextlib.suppress(LspError):
        connection.notify("exit", None)
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(process.wait(), STOP_TIMEOUT_S)
