"""Language server benchmarks.

- start -> `initialize` result for `python -m lich_lsp` against a bare pygls server with no
  features, in the same run (target <= 1.1x: heavy imports stay lazy);
- `textDocument/codeAction` round trip p50/p99 with 1,000 open documents while a lich.ask task
  streams from the fake provider (target p99 <= 5 ms);
- the server's RSS with 1,000 open 10,000-line documents, above the idle server's, against the
  documents' text size (target <= 1.5x);
- lich.cancel on that streaming task until its lich.ask is answered (the issue: within a second);
- bytes of the WorkspaceEdit sent for a one-line change in a 10,000-line file (a one-line edit,
  not the file), against the file's own size;
- plugin module executions over 10 lich.ask tasks and the commands around them (target 1: the
  session's one tool runtime per config generation loads a plugin once);
- a keystroke in a 4,000-line file with 2,000 pending review hunks: an incremental didChange
  typing one character between two hunks, then the codeAction request an editor sends for the
  cursor's line, round trip p50/p99 against the same keystrokes in the same text without hunks
  (target p99 <= 5 ms: following the hunks costs the lines an edit touches, not every hunk);
  info lines: a line typed and deleted at the top (every hunk moves, every diagnostic is
  published again) and lich.reviewList of the 2,000 hunks.
"""

from __future__ import annotations

import asyncio
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.run import Figure
from tests.support.fake_provider import standalone_process

BARE_SERVER = (
    "from pygls.lsp.server import LanguageServer\nLanguageServer('bare', '0').start_io()\n"
)
LICH_SERVER = [sys.executable, "-m", "lich_lsp"]
OPEN_DOCUMENTS = 1000
CODE_ACTION_P99_TARGET_MS = 5.0
RSS_DOCUMENTS = 1000
RSS_QUICK_DOCUMENTS = 100
RSS_DOCUMENT_LINES = 10_000
RSS_TARGET_RATIO = 1.5
STREAM_START_TIMEOUT_S = 30  # a hang fails the bench instead of waiting for ever


def chat_options(url: str, **settings: Any) -> dict[str, Any]:
    """The server's config: the fake provider at `url` as its one chat model, and `settings`."""
    provider = {"name": "fake", "kind": "openai_compat", "base_url": url + "/v1", "model": "m"}
    return {"providers": [provider], **settings}


async def initialize(
    client: Any, root: Path, options: dict[str, Any] | None = None, capabilities: Any = None
) -> None:
    """`initialize` (no capabilities unless given) and `initialized`, for workspace `root`."""
    from lsprotocol import types

    await client.initialize_async(
        types.InitializeParams(
            capabilities=capabilities or types.ClientCapabilities(),
            root_uri=root.as_uri(),
            initialization_options=options,
        )
    )
    client.initialized(types.InitializedParams())


def _frame(payload: dict[str, Any]) -> bytes:
    body = json.dumps(payload).encode()
    return f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def _initialize_payload(root: Path) -> bytes:
    return _frame(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"processId": None, "rootUri": root.as_uri(), "capabilities": {}},
        }
    )


def time_to_initialize(command: list[str], root: Path) -> float:
    """Seconds from spawning the server to reading its initialize response."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(_initialize_payload(root))
    proc.stdin.flush()
    length = 0
    while True:
        line = proc.stdout.readline()
        if line.startswith(b"Content-Length:"):
            length = int(line.split(b":")[1])
        elif line in (b"\r\n", b""):
            break
    proc.stdout.read(length)
    elapsed = time.perf_counter() - started
    proc.stdin.close()
    proc.kill()
    proc.wait()
    return elapsed


def startup_figures(quick: bool, root: Path) -> list[Figure]:
    runs = 5 if quick else 11
    bare: list[float] = []
    lich: list[float] = []
    time_to_initialize(LICH_SERVER, root)  # warm the bytecode cache
    for _ in range(runs):  # interleaved, so both see the same machine load
        bare.append(time_to_initialize([sys.executable, "-c", BARE_SERVER], root))
        lich.append(time_to_initialize(LICH_SERVER, root))
    # Best of the runs (as bench.run.best_of does): the least disturbed by other load.
    return [
        Figure(
            "lsp start -> initialize (best)",
            min(lich) * 1000,
            "ms",
            "bare pygls server",
            min(bare) * 1000,
            "<= 1.1x",
            note=f"medians {statistics.median(lich) * 1000:.0f} vs {statistics.median(bare) * 1000:.0f} ms",
        )
    ]


async def code_action_latency(quick: bool, root: Path) -> tuple[float, float, int, float]:
    """codeAction p50/p99 (ms) while a task streams; then lich.cancel -> lich.ask answered (s)."""
    chunks = 300 if quick else 600
    turn = {"text": "streaming " * chunks, "chunks": chunks, "chunk_delay_s": 0.01}
    # The fake provider runs in a process of its own: as a thread of this one, it took the GIL
    # from the client at every chunk, and its own tail latency showed in the round trips.
    with standalone_process([turn]) as url:
        return await _code_action_rounds(quick, root, url)


async def _code_action_rounds(quick: bool, root: Path, url: str) -> tuple[float, float, int, float]:
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    streaming = asyncio.Event()

    def on_event(params: Any) -> None:
        if _event_type(params) == "text_delta":
            streaming.set()

    client = LanguageClient("bench", "0")
    client.feature(types.WINDOW_LOG_MESSAGE)(lambda params: None)
    client.feature(types.WINDOW_SHOW_MESSAGE)(lambda params: None)
    client.feature("lich/event")(on_event)
    await client.start_io(*LICH_SERVER)
    try:
        await initialize(client, root, chat_options(url))
        uris = []
        for index in range(OPEN_DOCUMENTS):
            path = root / f"doc_{index}.py"
            text = "".join(f"value_{index}_{line} = {line}\n" for line in range(200))
            path.write_text(text, encoding="utf-8")
            uris.append(path.as_uri())
            client.text_document_did_open(
                types.DidOpenTextDocumentParams(
                    types.TextDocumentItem(path.as_uri(), "python", 1, text)
                )
            )
        ask = asyncio.ensure_future(
            client.workspace_execute_command_async(
                types.ExecuteCommandParams("lich.ask", [{"prompt": "stream"}])
            )
        )
        await asyncio.wait_for(streaming.wait(), STREAM_START_TIMEOUT_S)  # the stream is flowing
        diagnostic = types.Diagnostic(
            range=types.Range(types.Position(3, 0), types.Position(3, 5)),
            message="undefined name",
            source="lint",
        )
        samples: list[float] = []
        count = 200 if quick else 500
        # This process stands in for the editor: its own collector's pauses are not the server's
        # latency. Its ~60,000 tracked objects (the documents' params, pygls' client) made each
        # generation-1 pass 2-3 ms and the one full pass 23-31 ms, inside the timed round trips.
        gc.collect()
        gc.freeze()
        try:
            for index in range(count):
                params = types.CodeActionParams(
                    text_document=types.TextDocumentIdentifier(uris[index % len(uris)]),
                    range=types.Range(types.Position(3, 0), types.Position(5, 0)),
                    context=types.CodeActionContext(diagnostics=[diagnostic]),
                )
                started = time.perf_counter()
                await client.text_document_code_action_async(params)
                samples.append(time.perf_counter() - started)
        finally:
            gc.unfreeze()
        still_streaming = not ask.done()
        cancel_started = time.perf_counter()
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams("lich.cancel", [{}])
        )
        await asyncio.wait_for(ask, 10)
        cancel_s = time.perf_counter() - cancel_started
        await client.shutdown_async(None)
        client.exit(None)
    finally:
        await _stop(client)
    samples.sort()
    p50 = samples[len(samples) // 2] * 1000
    p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))] * 1000
    return p50, p99, int(still_streaming), cancel_s


def _event_type(params: Any) -> str | None:
    """The `type` of a lich/event notification's params (pygls hands them on as an object or a dict)."""
    if isinstance(params, dict):
        return params.get("type")
    return getattr(params, "type", None)


def _rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def _document_text(index: int) -> str:
    # About 32 bytes a line, like code.
    return "".join(
        f"    value_{index:04d}_{line:05d} = {line:6d}\n" for line in range(RSS_DOCUMENT_LINES)
    )


async def documents_rss(quick: bool, root: Path) -> tuple[int, int, int]:
    """(idle RSS, RSS with the documents open, the documents' text bytes) of a real server."""
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    count = RSS_QUICK_DOCUMENTS if quick else RSS_DOCUMENTS
    client = LanguageClient("bench", "0")
    client.feature(types.WINDOW_LOG_MESSAGE)(lambda params: None)
    client.feature(types.WINDOW_SHOW_MESSAGE)(lambda params: None)
    await client.start_io(*LICH_SERVER)
    try:
        pid = client._server.pid  # type: ignore[attr-defined]  # pygls keeps the subprocess there
        await initialize(client, root)
        status = types.ExecuteCommandParams("lich.status", [{}])
        await client.workspace_execute_command_async(status)  # the server is up and idle
        idle = _rss_bytes(pid)
        text_bytes = 0
        for index in range(count):
            text = _document_text(index)
            text_bytes += len(text.encode("utf-8"))
            uri = (root / f"big_{index}.py").as_uri()
            client.text_document_did_open(
                types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, text))
            )
        # Notifications are handled in order: once this answers, every document is open.
        await client.workspace_execute_command_async(status)
        loaded = _rss_bytes(pid)
        await client.shutdown_async(None)
        client.exit(None)
    finally:
        await _stop(client)
    return idle, loaded, text_bytes


async def _stop(client: Any) -> None:
    """Stop the client; a server that did not get to `exit` (a failed run) is killed, not awaited."""
    server = getattr(client, "_server", None)
    if server is not None and server.returncode is None:
        try:
            await asyncio.wait_for(server.wait(), 5)
        except asyncio.TimeoutError:
            server.kill()
    await client.stop()


async def workspace_edit_bytes(root: Path) -> tuple[int, int, int]:
    """The WorkspaceEdit the server really sends for `edit_file` changing one line of an open
    10,000-line document: (its JSON bytes, the file's bytes, how many TextEdits)."""
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    text = "".join(f"line number {i} of a large file\n" for i in range(10_000))
    path = root / "big.py"
    path.write_text(text, encoding="utf-8")
    client = LanguageClient("bench", "0")
    sent: list[types.ApplyWorkspaceEditParams] = []

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        sent.append(params)
        return types.ApplyWorkspaceEditResult(applied=True)

    client.feature(types.WINDOW_LOG_MESSAGE)(lambda params: None)
    await client.start_io(*LICH_SERVER)
    try:
        capabilities = types.ClientCapabilities(
            workspace=types.WorkspaceClientCapabilities(
                workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True)
            )
        )
        await initialize(client, root, capabilities=capabilities)
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(path.as_uri(), "python", 1, text)
            )
        )
        args = {
            "path": "big.py",
            "old_string": "line number 5000 of",
            "new_string": "line number five thousand of",
        }
        result = await client.workspace_execute_command_async(
            types.ExecuteCommandParams("lich.runTool", [{"name": "edit_file", "args": args}])
        )
        assert result["ok"] and len(sent) == 1, result
        await client.shutdown_async(None)
        client.exit(None)
    finally:
        await _stop(client)
    edit = sent[0].edit
    body = json.dumps(client.protocol._converter.unstructure(edit)).encode()
    text_edits = sum(
        len(change.edits)
        for change in edit.document_changes or []
        if isinstance(change, types.TextDocumentEdit)
    )
    return len(body), len(text.encode()), text_edits


HUNK_FILE_LINES = 4000
PENDING_HUNKS = 2000  # every other line of the file changed by one task
KEYSTROKE_P99_TARGET_MS = 5.0
HUNK_TASK_TIMEOUT_S = 60  # the task that proposes the hunks; a hang fails the bench


def _hunk_file_texts() -> tuple[str, str]:
    """The 4,000-line file and the task's version of it: every even line changed, so each is a
    hunk of its own and the odd lines between them are free for the user's typing."""
    old = "".join(f"value_{n:04d} = {n}\n" for n in range(HUNK_FILE_LINES))
    new = "".join(
        f"value_{n:04d} = {n}{' + 1' if n % 2 == 0 else ''}\n" for n in range(HUNK_FILE_LINES)
    )
    return old, new


class _Typist:
    """Incremental didChange notifications as an editor sends them, each followed by the
    codeAction request an editor sends for the cursor's line: the pair's round trip is the
    keystroke's cost (the server handles the notification before the request that follows it)."""

    def __init__(self, client: Any, uri: str) -> None:
        self.client = client
        self.uri = uri
        self.version = 1
        self.typed: dict[int, int] = {}  # characters typed so far at the end of each line

    def change(self, start: tuple[int, int], end: tuple[int, int], text: str) -> None:
        from lsprotocol import types

        self.version += 1
        change_range = types.Range(types.Position(*start), types.Position(*end))
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=self.uri, version=self.version
                ),
                content_changes=[
                    types.TextDocumentContentChangePartial(range=change_range, text=text)
                ],
            )
        )

    async def code_action(self, line: int) -> Any:
        from lsprotocol import types

        at = types.Position(line, 0)
        return await self.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(self.uri),
                range=types.Range(at, at),
                context=types.CodeActionContext(diagnostics=[]),
            )
        )

    async def keystrokes(self, count: int) -> list[float]:
        """`count` characters typed at the end of odd lines (between the hunks), one per line,
        spread over the file; the round trip of each, in seconds."""
        samples: list[float] = []
        for index in range(count):
            line = 1 + 2 * ((index * 97) % (HUNK_FILE_LINES // 2))
            column = len(f"value_{line:04d} = {line}") + self.typed.get(line, 0)
            started = time.perf_counter()
            self.change((line, column), (line, column), "x")
            await self.code_action(line)
            samples.append(time.perf_counter() - started)
            self.typed[line] = self.typed.get(line, 0) + 1
        return samples


def _percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


async def review_hunk_latency(quick: bool, root: Path) -> dict[str, float]:
    """Keystrokes in a 4,000-line file before and with 2,000 pending review hunks, a newline at
    its top (every hunk moves) and lich.reviewList, through a real server (seconds)."""
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    from tests.support.fake_provider import FakeProviderServer

    old, new = _hunk_file_texts()
    path = root / "hunks.py"
    path.write_text(old, encoding="utf-8")
    fake = FakeProviderServer()
    fake.start()
    fake.script(
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "hunks.py", "content": new}}]},
        {"text": "done"},
    )
    client = LanguageClient("bench", "0")
    for method in (types.WINDOW_LOG_MESSAGE, types.WINDOW_SHOW_MESSAGE, "lich/event"):
        client.feature(method)(lambda params: None)
    client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)(lambda params: None)
    await client.start_io(*LICH_SERVER)
    timings: dict[str, float] = {}
    try:
        await initialize(
            client, root, chat_options(fake.url, edit_mode="review", review_style="hunks")
        )
        uri = path.as_uri()
        plain = root / "plain.py"  # the same text without hunks: the reference
        plain.write_text(old, encoding="utf-8")
        for opened in (uri, plain.as_uri()):
            client.text_document_did_open(
                types.DidOpenTextDocumentParams(types.TextDocumentItem(opened, "python", 1, old))
            )
        ask = client.workspace_execute_command_async(
            types.ExecuteCommandParams("lich.ask", [{"prompt": "bump"}])
        )
        result = await asyncio.wait_for(ask, HUNK_TASK_TIMEOUT_S) or {}
        expected = f"{PENDING_HUNKS} changes pending review in hunks.py"
        if result.get("review") != expected:
            raise RuntimeError(f"the task did not leave {PENDING_HUNKS} hunks: {result}")
        typist, reference = _Typist(client, uri), _Typist(client, plain.as_uri())
        count = 100 if quick else 400
        for warming in (typist, reference):  # the server's first edits import and fill caches
            await warming.keystrokes(10)
        gc.collect()
        gc.freeze()  # the client's collector pauses are not the server's time (see _code_action_rounds)
        try:
            bare = await reference.keystrokes(count)
            pending = await typist.keystrokes(count)
            newlines: list[float] = []
            for _ in range(4 if quick else 10):  # a line in and out at the top: every hunk moves
                for start, end, text in (((0, 0), (0, 0), "\n"), ((0, 0), (1, 0), "")):
                    started = time.perf_counter()
                    typist.change(start, end, text)
                    await typist.code_action(0)
                    newlines.append(time.perf_counter() - started)
            listings: list[float] = []
            for _ in range(3 if quick else 5):
                started = time.perf_counter()
                listing = await client.workspace_execute_command_async(
                    types.ExecuteCommandParams("lich.reviewList", [{"uri": uri}])
                )
                listings.append(time.perf_counter() - started)
        finally:
            gc.unfreeze()
        listed = len((listing or {}).get("hunks", []))
        if listed != PENDING_HUNKS:
            raise RuntimeError(f"lich.reviewList lists {listed} hunks, not {PENDING_HUNKS}")
        await client.shutdown_async(None)
        client.exit(None)
    finally:
        await _stop(client)
        fake.stop()
    timings["bare_p50"] = _percentile(bare, 0.5)
    timings["bare_p99"] = _percentile(bare, 0.99)
    timings["pending_p50"] = _percentile(pending, 0.5)
    timings["pending_p99"] = _percentile(pending, 0.99)
    timings["newline"] = statistics.median(newlines)
    timings["review_list"] = statistics.median(listings)
    return timings


COUNTING_PLUGIN = """\
from pathlib import Path

from lich_core.plugins import Plugin
from lich_core.tools.types import FunctionTool, ToolResult

with Path(__file__).with_name("executions.log").open("a") as log:
    log.write("executed\\n")


async def tick(args, ctx):
    return ToolResult(ok=True, output="tick")


plugin = Plugin(name="counter", tools=[FunctionTool("tick", "Count.", {"type": "object", "properties": {}}, tick)])
"""
PLUGIN_ASKS = 10


async def plugin_executions(root: Path) -> int:
    """How many times a plugin module runs over 10 asks (each calling its tool) and lich.tools/runTool."""
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    from tests.support.fake_provider import FakeProviderServer

    plugin = root / "plugins" / "counter.py"
    plugin.parent.mkdir(parents=True, exist_ok=True)
    plugin.write_text(COUNTING_PLUGIN, encoding="utf-8")
    fake = FakeProviderServer()
    fake.start()
    for _ in range(PLUGIN_ASKS):
        fake.script({"tool_calls": [{"name": "tick", "arguments": {}}]}, {"text": "ok"})
    client = LanguageClient("bench", "0")
    for method in (types.WINDOW_LOG_MESSAGE, types.WINDOW_SHOW_MESSAGE, "lich/event"):
        client.feature(method)(lambda params: None)
    await client.start_io(*LICH_SERVER)
    try:
        # The editor's settings are the user's own (trusted): the plugin loads without a question.
        await initialize(client, root, chat_options(fake.url, plugins=[str(plugin)]))
        await client.workspace_execute_command_async(types.ExecuteCommandParams("lich.tools", [{}]))
        for _ in range(PLUGIN_ASKS):
            await client.workspace_execute_command_async(
                types.ExecuteCommandParams("lich.ask", [{"prompt": "tick"}])
            )
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams("lich.runTool", [{"name": "tick", "args": {}}])
        )
        await client.shutdown_async(None)
        client.exit(None)
    finally:
        await _stop(client)
        fake.stop()
    log = plugin.with_name("executions.log")
    return log.read_text(encoding="utf-8").count("executed") if log.exists() else 0


def run(quick: bool) -> list[Figure]:
    with tempfile.TemporaryDirectory(prefix="lich-bench-lsp-") as temp:
        root = Path(temp).resolve()
        figures = startup_figures(quick, root)
        p50, p99, streaming, cancel_s = asyncio.run(code_action_latency(quick, root))
        sent, whole, text_edits = asyncio.run(workspace_edit_bytes(root))
        executions = asyncio.run(plugin_executions(root))
        idle_rss, loaded_rss, text_bytes = asyncio.run(documents_rss(quick, root))
        hunks = asyncio.run(review_hunk_latency(quick, root))
    note = "task streamed throughout" if streaming else "task ended before sampling did"
    figures.append(
        Figure(f"codeAction p50 ({OPEN_DOCUMENTS} docs, task streaming)", p50, "ms", note=note)
    )
    figures.append(
        Figure(
            f"codeAction p99 ({OPEN_DOCUMENTS} docs, task streaming)",
            p99,
            "ms",
            target=f"<= {CODE_ACTION_P99_TARGET_MS:g} ms",
            note=note,
        )
    )
    figures.append(
        Figure(
            "lich.cancel -> streaming lich.ask answered", cancel_s * 1000, "ms", target="<= 1000 ms"
        )
    )
    figures.append(
        Figure(
            "WorkspaceEdit bytes, 1-line change in 10,000 lines",
            sent,
            "bytes",
            "whole file",
            whole,
            note=f"{text_edits} TextEdit(s), as sent by the server",
        )
    )
    figures.append(
        Figure(
            f"plugin module executions per {PLUGIN_ASKS} asks",
            executions,
            "runs",
            target="= 1",
            note="plus lich.tools and lich.runTool around them, one config generation",
        )
    )
    hunk_case = f"{PENDING_HUNKS:,} pending hunks in {HUNK_FILE_LINES:,} lines"
    figures.append(
        Figure(
            f"keystroke p50, {hunk_case}",
            hunks["pending_p50"] * 1000,
            "ms",
            "no hunks",
            hunks["bare_p50"] * 1000,
        )
    )
    figures.append(
        Figure(
            f"keystroke p99, {hunk_case}",
            hunks["pending_p99"] * 1000,
            "ms",
            "no hunks",
            hunks["bare_p99"] * 1000,
            target=f"<= {KEYSTROKE_P99_TARGET_MS:g} ms",
            note="didChange + the cursor's codeAction, round trip",
        )
    )
    figures.append(
        Figure(
            f"newline at the top, {hunk_case}",
            hunks["newline"] * 1000,
            "ms",
            note="median; every hunk moves (info)",
        )
    )
    figures.append(
        Figure(
            f"lich.reviewList, {hunk_case}", hunks["review_list"] * 1000, "ms", note="median (info)"
        )
    )
    documents = RSS_QUICK_DOCUMENTS if quick else RSS_DOCUMENTS
    mib = 1024 * 1024
    figures.append(
        Figure(
            f"server RSS above idle, {documents} open {RSS_DOCUMENT_LINES:,}-line docs",
            (loaded_rss - idle_rss) / mib,
            "MiB",
            "the documents' text",
            text_bytes / mib,
            target=f"<= {RSS_TARGET_RATIO}x",
            note=f"idle server {idle_rss / mib:.1f} MiB, with the documents {loaded_rss / mib:.1f} MiB (VmRSS)",
        )
    )
    return figures
