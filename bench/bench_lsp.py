"""Language server benchmarks.

- start -> `initialize` result for `python -m lich_lsp` against a bare pygls server with no
  features, in the same run (target <= 1.3x: heavy imports stay lazy);
- `textDocument/codeAction` round trip p50/p99 with 200 open documents while a lich.ask task
  streams from the fake provider (target p99 <= 10 ms);
- bytes of the WorkspaceEdit sent for a one-line change in a 10,000-line file (a one-line edit,
  not the file), against the file's own size.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.run import Figure

BARE_SERVER = (
    "from pygls.lsp.server import LanguageServer\n"
    "LanguageServer('bare', '0').start_io()\n"
)
LICH_SERVER = [sys.executable, "-m", "lich_lsp"]
OPEN_DOCUMENTS = 200


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
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
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
            "<= 1.3x",
            note=f"medians {statistics.median(lich) * 1000:.0f} vs {statistics.median(bare) * 1000:.0f} ms",
        )
    ]


async def code_action_latency(quick: bool, root: Path) -> tuple[float, float, int]:
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    from tests.support.fake_provider import FakeProviderServer

    chunks = 300 if quick else 600
    fake = FakeProviderServer()
    fake.start()
    fake.script({"text": "streaming " * chunks, "chunks": chunks, "chunk_delay_s": 0.01})
    client = LanguageClient("bench", "0")
    client.feature(types.WINDOW_LOG_MESSAGE)(lambda params: None)
    client.feature(types.WINDOW_SHOW_MESSAGE)(lambda params: None)
    client.feature("lich/event")(lambda params: None)
    await client.start_io(*LICH_SERVER)
    try:
        options = {"providers": [{"name": "fake", "kind": "openai_compat", "base_url": fake.url + "/v1", "model": "m"}]}
        await client.initialize_async(
            types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=root.as_uri(), initialization_options=options)
        )
        client.initialized(types.InitializedParams())
        uris = []
        for index in range(OPEN_DOCUMENTS):
            path = root / f"doc_{index}.py"
            text = "".join(f"value_{index}_{line} = {line}\n" for line in range(200))
            path.write_text(text, encoding="utf-8")
            uris.append(path.as_uri())
            client.text_document_did_open(
                types.DidOpenTextDocumentParams(types.TextDocumentItem(path.as_uri(), "python", 1, text))
            )
        ask = asyncio.ensure_future(
            client.workspace_execute_command_async(types.ExecuteCommandParams("lich.ask", [{"prompt": "stream"}]))
        )
        while not fake.requests:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)  # the stream is flowing
        diagnostic = types.Diagnostic(
            range=types.Range(types.Position(3, 0), types.Position(3, 5)), message="undefined name", source="lint"
        )
        samples: list[float] = []
        count = 200 if quick else 500
        for index in range(count):
            params = types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uris[index % len(uris)]),
                range=types.Range(types.Position(3, 0), types.Position(5, 0)),
                context=types.CodeActionContext(diagnostics=[diagnostic]),
            )
            started = time.perf_counter()
            await client.text_document_code_action_async(params)
            samples.append(time.perf_counter() - started)
        still_streaming = not ask.done()
        await client.workspace_execute_command_async(types.ExecuteCommandParams("lich.cancel", [{}]))
        await asyncio.wait_for(ask, 10)
        await client.shutdown_async(None)
        client.exit(None)
    finally:
        await client.stop()
        fake.stop()
    samples.sort()
    p50 = samples[len(samples) // 2] * 1000
    p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))] * 1000
    return p50, p99, int(still_streaming)


def workspace_edit_bytes() -> tuple[int, int]:
    from pygls.protocol import default_converter
    from pygls.workspace.position_codec import PositionCodec

    from lich_core.workspace import FileChange
    from lich_lsp.edits import EditCapabilities, EditEntry, build_workspace_edit

    old = "".join(f"line number {i} of a large file\n" for i in range(10_000))
    new = old.replace("line number 5000 of", "line number five thousand of")
    change = FileChange(Path("/w/big.py"), "write", new, old)  # no replacements: the diff path
    edit = build_workspace_edit(
        [EditEntry("file:///w/big.py", change, 7)], EditCapabilities(document_changes=True), PositionCodec("utf-16")
    )
    body = json.dumps(default_converter().unstructure(edit)).encode()
    return len(body), len(old.encode())


def run(quick: bool) -> list[Figure]:
    with tempfile.TemporaryDirectory(prefix="lich-bench-lsp-") as temp:
        root = Path(temp).resolve()
        figures = startup_figures(quick, root)
        p50, p99, streaming = asyncio.run(code_action_latency(quick, root))
    note = "task streamed throughout" if streaming else "task ended before sampling did"
    figures.append(Figure(f"codeAction p50 ({OPEN_DOCUMENTS} docs, task streaming)", p50, "ms", note=note))
    figures.append(Figure(f"codeAction p99 ({OPEN_DOCUMENTS} docs, task streaming)", p99, "ms", target="<= 10 ms", note=note))
    sent, whole = workspace_edit_bytes()
    figures.append(
        Figure("WorkspaceEdit bytes, 1-line change in 10,000 lines", sent, "bytes", "whole file", whole, note="one TextEdit")
    )
    return figures
