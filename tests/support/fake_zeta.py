"""A fake Zeta-format next-edit model on 127.0.0.1, for the editor tests of next edits (#47).

It speaks OpenAI-compatible legacy completions (`POST /v1/completions`, streamed as SSE
`{"choices": [{"text": ...}]}` events and `[DONE]`, or one body with `"stream": false`), as vLLM
or llama.cpp serving Zed's Zeta do. Unlike the scripted fake provider it answers from the prompt:
it takes the editable region between `<|editable_region_start|>` and `<|editable_region_end|>`,
drops the `<|user_cursor_is_here|>` marker and applies its word renames (`old` -> `new`, whole
words only), and answers the region between the same two markers. So a user who renamed a name at
its definition gets the uses in the region renamed too, wherever the server put the region's
bounds, and an unchanged region when there is nothing to rename.

In-process: `with FakeZetaModel({"count": "total"}) as model: model.url`; `model.requests` holds
each request's JSON body, `model.wait_for_requests(n)` waits on a condition (no polling).
Standalone (the VS Code driver): `python -m tests.support.fake_zeta --port 0 --rename count=total
[--requests FILE]` prints "LISTENING http://127.0.0.1:PORT" and serves until killed.
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REGION_START = "<|editable_region_start|>"
REGION_END = "<|editable_region_end|>"
CURSOR = "<|user_cursor_is_here|>"
COMPLETIONS_PATHS = ("/v1/completions", "/completions")
WAIT_TIMEOUT_S = 30.0


def rewrite_region(prompt: str, renames: dict[str, str]) -> str:
    """The model's answer to `prompt`: its editable region, cursor marker dropped, each whole-word
    `old` renamed to `new`, between the region markers. No region in the prompt: an empty answer."""
    start = prompt.find(REGION_START)
    end = prompt.find(REGION_END, start + len(REGION_START)) if start >= 0 else -1
    if start < 0 or end < 0:
        return ""
    region = prompt[start + len(REGION_START) : end].replace(CURSOR, "")
    for old, new in renames.items():
        region = re.sub(rf"\b{re.escape(old)}\b", new, region)
    return f"{REGION_START}{region}{REGION_END}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base class signature
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        self._send(200, "application/json", b'{"ok": true}')

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        length = int(self.headers.get("content-length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            body = {}
        model = self.server.model
        if self.path.split("?", 1)[0].rstrip("/") not in COMPLETIONS_PATHS or not isinstance(
            body, dict
        ):
            self._send(404, "application/json", b'{"error": "fake zeta: unknown path"}')
            return
        model.record(body)
        text = rewrite_region(str(body.get("prompt") or ""), model.renames)
        choice = {"index": 0, "text": text, "finish_reason": "stop"}
        answer = {
            "id": "cmpl-zeta",
            "object": "text_completion",
            "model": body.get("model"),
            "choices": [choice],
        }
        try:
            if body.get("stream"):
                first = {**answer, "choices": [{**choice, "finish_reason": None}]}
                last = {**answer, "choices": [{**choice, "text": ""}]}
                events = (
                    f"data: {json.dumps(first)}\n\ndata: {json.dumps(last)}\n\ndata: [DONE]\n\n"
                )
                self._send(200, "text/event-stream", events.encode("utf-8"))
            else:
                self._send(200, "application/json", json.dumps(answer).encode("utf-8"))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _send(self, status: int, content_type: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    model: FakeZetaModel


class FakeZetaModel:
    """The fake model in a background thread; `renames` may be changed between requests."""

    def __init__(
        self,
        renames: dict[str, str] | None = None,
        *,
        port: int = 0,
        requests_file: Path | None = None,
    ) -> None:
        self.renames: dict[str, str] = dict(renames or {})
        self.requests: list[dict[str, Any]] = []
        self.url = ""
        self._port = port
        self._requests_file = requests_file
        self._changed = threading.Condition()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> FakeZetaModel:
        server = _Server(("127.0.0.1", self._port), _Handler)
        server.model = self
        self._server = server
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeZetaModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def record(self, body: dict[str, Any]) -> None:
        with self._changed:
            self.requests.append(body)
            if self._requests_file is not None:
                with self._requests_file.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(body, ensure_ascii=False) + "\n")
            self._changed.notify_all()

    def wait_for_requests(self, count: int, timeout_s: float = WAIT_TIMEOUT_S) -> bool:
        """Block until `count` requests arrived (woken by each one); False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: len(self.requests) >= count, timeout=timeout_s)


def parse_renames(pairs: list[str]) -> dict[str, str]:
    renames: dict[str, str] = {}
    for pair in pairs:
        old, sep, new = pair.partition("=")
        if not sep or not old:
            raise SystemExit(f"--rename takes OLD=NEW, not {pair!r}")
        renames[old] = new
    return renames


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.fake_zeta")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--rename", action="append", default=[], help="OLD=NEW (repeatable)")
    parser.add_argument("--requests", help="JSONL file: each request's body is appended to it")
    args = parser.parse_args(argv)
    model = FakeZetaModel(
        parse_renames(args.rename),
        port=args.port,
        requests_file=Path(args.requests) if args.requests else None,
    )
    model.start()
    print(f"LISTENING {model.url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        model.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
