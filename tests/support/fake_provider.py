"""A scripted model server on 127.0.0.1 speaking the OpenAI, Anthropic and Ollama wire formats.

Scripts are wire-format neutral: each request consumes the next turn dict and the server renders
it in the format of the endpoint that was hit. Streaming responses use chunked transfer encoding
with one HTTP chunk per event, written straight to the socket, so a client sees every event as
soon as it is sent; `drop_after_chunks` closes the socket without the final empty chunk, which a
client sees as a broken body rather than a short one.

Turn keys (all optional): text, chunks, tool_calls [{name, arguments (dict, or str sent verbatim),
id?}], status, retry_after, body, delay_s, chunk_delay_s, drop_after_chunks, raw, usage
{input_tokens, output_tokens, cache_read_tokens?, cache_write_tokens?}; in-process only, `answer`:
a function of the request's JSON body returning the turn's `text` (a model that reads its
prompt). When the script runs out the server answers "(script exhausted)". Cache figures are sent in each format's own fields
(Anthropic: cache_read_input_tokens / cache_creation_input_tokens, with input_tokens the uncached
rest; OpenAI: prompt_tokens_details.cached_tokens) and only when the turn scripts them.
Like the real API, an Anthropic request with more than four cache_control marks is refused (400).
While it waits (delay_s, chunk_delay_s) the server watches the socket: a client that hangs up
is recorded in `disconnects`.

Runaway answers, for the limits tests (each goes on until the client hangs up or the server stops):
- `endless: true` streams text events forever, each carrying `text` (default "endless "), one
  every `chunk_delay_s` (0: as fast as the socket takes them);
- `keepalive: "comment" | "ping" | "blank"` opens the answer, then sends only keepalives, one
  every `chunk_delay_s` (default 0.02 s): SSE `: keepalive` comments, Anthropic `ping` events,
  or blank NDJSON lines; no content ever comes;
- `endless_line: true` opens the answer, then starts a line (an SSE `data:` line, an NDJSON
  line) that never ends; with `stream: false` in the request, a JSON body that never ends;
- `stall_after_chunks: N` sends the first N events, then nothing, until the client hangs up.
- `gzip_bomb_mib: N` answers 200 with `Content-Encoding: gzip` and a body that is N MiB of
  newlines once decompressed (about N KiB on the wire): a thousandfold expansion.

Fill-in-the-middle endpoints take the same turns: `POST /v1/completions` (or `/completions`;
OpenAI legacy completions: SSE `{"choices": [{"text": ...}]}` events and `[DONE]`, or one body
with `"stream": false`) and `POST /api/generate` (Ollama: NDJSON `{"response": ..., "done": ...}`
lines unless `"stream": false`); their prompt and suffix are in each request's `json`. `endless`
works there too; the other runaway answers are for the chat endpoints.

Each request's record (`requests`) has `turn` (the turn it consumed), `stream_ended_at` (when its
streamed answer was all sent) and `closed_early_at` (when the client hung up before that), both
time.monotonic(); `wait_for_request` and `wait_closed_early` block on a condition until a record
changes, so a test can tell which request's stream a client closed, and when.

Standalone: `python -m tests.support.fake_provider --port 0 --script turns.json` prints
"LISTENING http://127.0.0.1:PORT" and serves until killed; `--requests FILE` appends each
request's JSON body to FILE as one line (`requests_file=` in code).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

EXHAUSTED_TEXT = "(script exhausted)"
DEFAULT_MODEL = "fake-model"

OPENAI_PATHS = ("/v1/chat/completions", "/chat/completions")
ANTHROPIC_PATH = "/v1/messages"
OLLAMA_PATH = "/api/chat"
# Fill-in-the-middle: OpenAI-compatible legacy completions and Ollama's generate.
OPENAI_FIM_PATHS = ("/v1/completions", "/completions")
OLLAMA_GENERATE_PATH = "/api/generate"
# How often a waiting handler checks whether the client hung up or the server is stopping.
WATCH_INTERVAL_S = 0.05
PROJECT_ROOT = (
    Path(__file__).resolve().parents[2]
)  # where `-m tests.support.fake_provider` resolves
STANDALONE_STOP_TIMEOUT_S = 10


def split_pieces(text: str, count: int) -> list[str]:
    """Split `text` into `count` nearly equal pieces (never fewer than one, never empty pieces)."""
    if not text:
        return []
    count = max(1, min(count, len(text)))
    size, extra = divmod(len(text), count)
    pieces: list[str] = []
    start = 0
    for index in range(count):
        end = start + size + (1 if index < extra else 0)
        pieces.append(text[start:end])
        start = end
    return pieces


@functools.cache
def newline_bomb(mib: int) -> bytes:
    """`mib` MiB of newlines, gzip-compressed (made once per size)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b"\n" * (1 << 20)
    return b"".join(packer.compress(block) for _ in range(mib)) + packer.flush()


def _arguments_text(arguments: Any) -> str:
    # A str is sent verbatim so tests can script malformed argument JSON.
    return arguments if isinstance(arguments, str) else json.dumps(arguments or {})


def _usage(turn: dict[str, Any]) -> tuple[int, int]:
    usage = turn.get("usage") or {}
    text = turn.get("text") or ""
    return int(usage.get("input_tokens", 10)), int(
        usage.get("output_tokens", max(1, len(text) // 4))
    )


def _cache_usage(turn: dict[str, Any]) -> dict[str, int]:
    """The scripted cache figures ({} when the turn scripts none): read, written."""
    usage = turn.get("usage") or {}
    return {
        key: int(usage[key]) for key in ("cache_read_tokens", "cache_write_tokens") if key in usage
    }


def _openai_usage(turn: dict[str, Any]) -> dict[str, Any]:
    prompt, completion = _usage(turn)
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    cache = _cache_usage(turn)
    if "cache_read_tokens" in cache:
        usage["prompt_tokens_details"] = {"cached_tokens": cache["cache_read_tokens"]}
    return usage


def _anthropic_usage(turn: dict[str, Any], output_tokens: int) -> dict[str, Any]:
    """The API's input_tokens leaves out the cached parts: the scripted total is split."""
    prompt, _ = _usage(turn)
    cache = _cache_usage(turn)
    read = cache.get("cache_read_tokens", 0)
    written = cache.get("cache_write_tokens", 0)
    usage: dict[str, Any] = {
        "input_tokens": prompt - read - written,
        "output_tokens": output_tokens,
    }
    if cache:
        usage["cache_read_input_tokens"] = read
        usage["cache_creation_input_tokens"] = written
    return usage


def count_cache_control(value: Any) -> int:
    """How many cache_control marks a request carries, wherever they are."""
    if isinstance(value, dict):
        own = 1 if value.get("cache_control") is not None else 0
        return own + sum(count_cache_control(item) for item in value.values())
    if isinstance(value, list):
        return sum(count_cache_control(item) for item in value)
    return 0


ANTHROPIC_MAX_CACHE_BREAKPOINTS = 4


def _tool_calls(turn: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    calls = []
    for index, call in enumerate(turn.get("tool_calls") or []):
        calls.append(
            {
                "id": call.get("id") or f"{prefix}_{index}",
                "name": call["name"],
                "arguments": call.get("arguments", {}),
                "arguments_text": _arguments_text(call.get("arguments", {})),
            }
        )
    return calls


# --- OpenAI chat completions -------------------------------------------------------------------


def openai_events(turn: dict[str, Any], request: dict[str, Any], turn_no: int) -> Iterator[str]:
    model = request.get("model") or DEFAULT_MODEL
    chunks = int(turn.get("chunks") or 1)
    base = {
        "id": f"chatcmpl-{turn_no}",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
    }

    def event(delta: dict[str, Any], finish: str | None = None) -> str:
        body = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return f"data: {json.dumps(body)}\n\n"

    yield event({"role": "assistant", "content": ""})
    for piece in split_pieces(turn.get("text") or "", chunks):
        yield event({"content": piece})
    calls = _tool_calls(turn, f"call_{turn_no}")
    for index, call in enumerate(calls):
        head = {
            "index": index,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["name"], "arguments": ""},
        }
        yield event({"tool_calls": [head]})
        for piece in split_pieces(call["arguments_text"], chunks):
            yield event({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield event({}, "tool_calls" if calls else "stop")
    if (request.get("stream_options") or {}).get("include_usage"):
        usage = _openai_usage(turn)
        yield f"data: {json.dumps({**base, 'choices': [], 'usage': usage})}\n\n"
    yield "data: [DONE]\n\n"


def openai_body(turn: dict[str, Any], request: dict[str, Any], turn_no: int) -> dict[str, Any]:
    calls = _tool_calls(turn, f"call_{turn_no}")
    message: dict[str, Any] = {"role": "assistant", "content": turn.get("text") or None}
    if calls:
        message["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments_text"]},
            }
            for c in calls
        ]
    return {
        "id": f"chatcmpl-{turn_no}",
        "object": "chat.completion",
        "created": 0,
        "model": request.get("model") or DEFAULT_MODEL,
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": _openai_usage(turn),
    }


def openai_error(status: int, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "fake_error", "code": status}}


# --- Anthropic messages ------------------------------------------------------------------------


def anthropic_events(turn: dict[str, Any], request: dict[str, Any], turn_no: int) -> Iterator[str]:
    model = request.get("model") or DEFAULT_MODEL
    chunks = int(turn.get("chunks") or 1)
    _, completion = _usage(turn)

    def event(name: str, data: dict[str, Any]) -> str:
        return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n"

    message = {
        "id": f"msg_{turn_no}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "usage": _anthropic_usage(turn, 1),
    }
    yield event("message_start", {"message": message})
    index = 0
    text = turn.get("text") or ""
    if text:
        yield event(
            "content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}}
        )
        yield event("ping", {})
        for piece in split_pieces(text, chunks):
            yield event(
                "content_block_delta",
                {"index": index, "delta": {"type": "text_delta", "text": piece}},
            )
        yield event("content_block_stop", {"index": index})
        index += 1
    calls = _tool_calls(turn, f"toolu_{turn_no}")
    for call in calls:
        block = {"type": "tool_use", "id": call["id"], "name": call["name"], "input": {}}
        yield event("content_block_start", {"index": index, "content_block": block})
        for piece in split_pieces(call["arguments_text"], chunks):
            delta = {"type": "input_json_delta", "partial_json": piece}
            yield event("content_block_delta", {"index": index, "delta": delta})
        yield event("content_block_stop", {"index": index})
        index += 1
    stop = "tool_use" if calls else "end_turn"
    yield event(
        "message_delta",
        {
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": completion},
        },
    )
    yield event("message_stop", {})


def anthropic_body(turn: dict[str, Any], request: dict[str, Any], turn_no: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if turn.get("text"):
        content.append({"type": "text", "text": turn["text"]})
    calls = _tool_calls(turn, f"toolu_{turn_no}")
    for call in calls:
        content.append(
            {"type": "tool_use", "id": call["id"], "name": call["name"], "input": call["arguments"]}
        )
    _, completion = _usage(turn)
    return {
        "id": f"msg_{turn_no}",
        "type": "message",
        "role": "assistant",
        "model": request.get("model") or DEFAULT_MODEL,
        "content": content,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": _anthropic_usage(turn, completion),
    }


def anthropic_error(status: int, message: str) -> dict[str, Any]:
    kinds = {
        401: "authentication_error",
        403: "permission_error",
        429: "rate_limit_error",
        529: "overloaded_error",
    }
    kind = kinds.get(status, "invalid_request_error" if status < 500 else "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


# --- Ollama /api/chat --------------------------------------------------------------------------


def ollama_events(turn: dict[str, Any], request: dict[str, Any], turn_no: int) -> Iterator[str]:
    model = request.get("model") or DEFAULT_MODEL
    chunks = int(turn.get("chunks") or 1)

    def line(message: dict[str, Any], done: bool = False, **extra: Any) -> str:
        body = {
            "model": model,
            "created_at": "2024-01-01T00:00:00Z",
            "message": message,
            "done": done,
            **extra,
        }
        return json.dumps(body) + "\n"

    for piece in split_pieces(turn.get("text") or "", chunks):
        yield line({"role": "assistant", "content": piece})
    calls = _tool_calls(turn, f"ollama_{turn_no}")
    for call in calls:
        wire = {"function": {"name": call["name"], "arguments": call["arguments"]}}
        yield line({"role": "assistant", "content": "", "tool_calls": [wire]})
    prompt, completion = _usage(turn)
    yield line(
        {"role": "assistant", "content": ""},
        True,
        done_reason="stop",
        prompt_eval_count=prompt,
        eval_count=completion,
    )


def ollama_body(turn: dict[str, Any], request: dict[str, Any], turn_no: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.get("text") or ""}
    calls = _tool_calls(turn, f"ollama_{turn_no}")
    if calls:
        message["tool_calls"] = [
            {"function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls
        ]
    prompt, completion = _usage(turn)
    return {
        "model": request.get("model") or DEFAULT_MODEL,
        "created_at": "2024-01-01T00:00:00Z",
        "message": message,
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": prompt,
        "eval_count": completion,
    }


def ollama_error(status: int, message: str) -> dict[str, Any]:
    return {"error": message}


# --- fill in the middle: OpenAI /v1/completions, Ollama /api/generate ---------------------------


def openai_fim_events(turn: dict[str, Any], request: dict[str, Any], turn_no: int) -> Iterator[str]:
    base = {
        "id": f"cmpl-{turn_no}",
        "object": "text_completion",
        "created": 0,
        "model": request.get("model") or DEFAULT_MODEL,
    }

    def event(text: str, finish: str | None = None) -> str:
        body = {**base, "choices": [{"index": 0, "text": text, "finish_reason": finish}]}
        return f"data: {json.dumps(body)}\n\n"

    for piece in split_pieces(turn.get("text") or "", int(turn.get("chunks") or 1)):
        yield event(piece)
    yield event("", "stop")
    yield "data: [DONE]\n\n"


def openai_fim_body(turn: dict[str, Any], request: dict[str, Any], turn_no: int) -> dict[str, Any]:
    return {
        "id": f"cmpl-{turn_no}",
        "object": "text_completion",
        "created": 0,
        "model": request.get("model") or DEFAULT_MODEL,
        "choices": [{"index": 0, "text": turn.get("text") or "", "finish_reason": "stop"}],
        "usage": _openai_usage(turn),
    }


def ollama_generate_events(
    turn: dict[str, Any], request: dict[str, Any], turn_no: int
) -> Iterator[str]:
    model = request.get("model") or DEFAULT_MODEL

    def line(text: str, done: bool = False, **extra: Any) -> str:
        body = {
            "model": model,
            "created_at": "2024-01-01T00:00:00Z",
            "response": text,
            "done": done,
            **extra,
        }
        return json.dumps(body) + "\n"

    for piece in split_pieces(turn.get("text") or "", int(turn.get("chunks") or 1)):
        yield line(piece)
    prompt, completion = _usage(turn)
    yield line("", True, done_reason="stop", prompt_eval_count=prompt, eval_count=completion)


def ollama_generate_body(
    turn: dict[str, Any], request: dict[str, Any], turn_no: int
) -> dict[str, Any]:
    prompt, completion = _usage(turn)
    return {
        "model": request.get("model") or DEFAULT_MODEL,
        "created_at": "2024-01-01T00:00:00Z",
        "response": turn.get("text") or "",
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": prompt,
        "eval_count": completion,
    }


# --- runaway answers (the limits tests) ---------------------------------------------------------

ENDLESS_PIECE = "endless "
KEEPALIVE_INTERVAL_S = 0.02
ENDLESS_LINE_CHUNK = "x" * 65536


def endless_events(
    wire: str, turn: dict[str, Any], request: dict[str, Any], turn_no: int
) -> Iterator[str]:
    """Text events that never end (no final event)."""
    piece = turn.get("text") or ENDLESS_PIECE
    if wire == "openai":
        base = {
            "id": f"chatcmpl-{turn_no}",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": request.get("model") or DEFAULT_MODEL,
        }
        event = (
            "data: "
            + json.dumps(
                {
                    **base,
                    "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}],
                }
            )
            + "\n\n"
        )
    elif wire == "openai_fim":
        body = {"choices": [{"index": 0, "text": piece, "finish_reason": None}]}
        event = f"data: {json.dumps(body)}\n\n"
    elif wire == "ollama_generate":
        event = json.dumps({"response": piece, "done": False}) + "\n"
    elif wire == "anthropic":
        yield from _anthropic_opening(request, turn_no)
        delta = {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": piece},
        }
        event = f"event: content_block_delta\ndata: {json.dumps(delta)}\n\n"
    else:
        event = (
            json.dumps(
                {
                    "model": request.get("model") or DEFAULT_MODEL,
                    "message": {"role": "assistant", "content": piece},
                    "done": False,
                }
            )
            + "\n"
        )
    while True:
        yield event


def keepalive_events(
    wire: str, turn: dict[str, Any], request: dict[str, Any], turn_no: int
) -> Iterator[str]:
    """The answer's opening, then keepalives only."""
    style = turn.get("keepalive")
    if wire == "openai":
        base = {
            "id": f"chatcmpl-{turn_no}",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": request.get("model") or DEFAULT_MODEL,
        }
        yield (
            "data: "
            + json.dumps(
                {
                    **base,
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"role": "assistant", "content": ""},
                            "finish_reason": None,
                        }
                    ],
                }
            )
            + "\n\n"
        )
    elif wire == "anthropic":
        yield from _anthropic_opening(request, turn_no)
    if wire == "ollama" or style == "blank":
        keepalive = "\n"
    elif style == "ping":
        keepalive = 'event: ping\ndata: {"type": "ping"}\n\n'
    else:
        keepalive = ": keepalive\n\n"
    while True:
        yield keepalive


def endless_line_events(
    wire: str, turn: dict[str, Any], request: dict[str, Any], turn_no: int
) -> Iterator[str]:
    """A line that starts like a text chunk and never ends."""
    if wire == "openai":
        yield 'data: {"choices": [{"index": 0, "delta": {"content": "'
    elif wire == "anthropic":
        yield from _anthropic_opening(request, turn_no)
        yield 'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "'
    else:
        yield '{"message": {"role": "assistant", "content": "'
    while True:
        yield ENDLESS_LINE_CHUNK


def _anthropic_opening(request: dict[str, Any], turn_no: int) -> Iterator[str]:
    message = {
        "id": f"msg_{turn_no}",
        "type": "message",
        "role": "assistant",
        "model": request.get("model") or DEFAULT_MODEL,
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    yield f"event: message_start\ndata: {json.dumps({'type': 'message_start', 'message': message})}\n\n"
    block = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "text", "text": ""},
    }
    yield f"event: content_block_start\ndata: {json.dumps(block)}\n\n"


FORMATS = {
    "openai": (openai_events, openai_body, openai_error, "text/event-stream"),
    "anthropic": (anthropic_events, anthropic_body, anthropic_error, "text/event-stream"),
    "ollama": (ollama_events, ollama_body, ollama_error, "application/x-ndjson"),
    "openai_fim": (openai_fim_events, openai_fim_body, openai_error, "text/event-stream"),
    "ollama_generate": (
        ollama_generate_events,
        ollama_generate_body,
        ollama_error,
        "application/x-ndjson",
    ),
}
# Formats that stream unless the request says `"stream": false` (Ollama's default).
STREAM_BY_DEFAULT = ("ollama", "ollama_generate")


def format_for(path: str) -> str | None:
    path = path.split("?", 1)[0].rstrip("/")
    if path in OPENAI_PATHS:
        return "openai"
    if path == ANTHROPIC_PATH:
        return "anthropic"
    if path == OLLAMA_PATH:
        return "ollama"
    if path in OPENAI_FIM_PATHS:
        return "openai_fim"
    if path == OLLAMA_GENERATE_PATH:
        return "ollama_generate"
    return None


# --- server ------------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        # Real servers disable Nagle for streaming; without this each small SSE chunk waits for
        # the client's delayed ACK (~40 ms) on a kept-alive connection.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base class signature
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        # Lets health checks and "is the server up" probes succeed.
        self._send_json(200, {"ok": True})

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        fake = self.server.fake
        self._request: dict[str, Any] = {
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "json": body,
            # Which client socket sent it: tests check that connections are reused.
            "peer": f"{self.client_address[0]}:{self.client_address[1]}",
            # The scripted turn it consumed (1-based; None for an unknown path), and
            # time.monotonic() when its streamed answer was all sent, or when the client
            # hung up before that.
            "turn": None,
            "stream_ended_at": None,
            "closed_early_at": None,
        }
        fake._record(self._request)
        wire = format_for(self.path)
        if wire is None:
            self._send_json(404, {"error": f"fake provider: unknown path {self.path}"})
            return
        turn, turn_no = fake._next_turn()
        if callable(turn.get("answer")):
            turn = {**turn, "text": turn["answer"](body)}
        self._turn_no = turn_no
        fake._update(self._request, turn=turn_no)
        try:
            self._answer(wire, turn, turn_no, body if isinstance(body, dict) else {})
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            # The client went away (cancelled); nothing left to do for this request.
            fake._record_disconnect(turn_no, self._request)
            self.close_connection = True

    def _answer(
        self, wire: str, turn: dict[str, Any], turn_no: int, request: dict[str, Any]
    ) -> None:
        events_fn, body_fn, error_fn, stream_type = FORMATS[wire]
        if turn.get("delay_s") and self._pause(float(turn["delay_s"])):
            self.close_connection = True
            return
        stream = bool(request.get("stream", wire in STREAM_BY_DEFAULT))
        marks = count_cache_control(request) if wire == "anthropic" else 0
        if marks > ANTHROPIC_MAX_CACHE_BREAKPOINTS:
            message = f"A maximum of 4 blocks with cache_control may be provided. Found {marks}."
            self._send_json(400, error_fn(400, message))
            return
        if turn.get("status"):
            status = int(turn["status"])
            headers = {}
            if turn.get("retry_after") is not None:
                headers["Retry-After"] = _retry_after_text(turn["retry_after"])
            if turn.get("body") is not None:
                self._send_raw(status, str(turn["body"]).encode(), "application/json", headers)
            else:
                self._send_json(status, error_fn(status, f"scripted HTTP {status}"), headers)
            return
        if turn.get("gzip_bomb_mib"):
            content_type = stream_type if stream else "application/json"
            bomb = newline_bomb(int(turn["gzip_bomb_mib"]))
            self._send_raw(200, bomb, content_type, {"Content-Encoding": "gzip"})
            return
        if turn.get("raw") is not None:
            content_type = stream_type if stream else "application/json"
            self._send_raw(200, str(turn["raw"]).encode(), content_type)
            return
        if not stream:
            if turn.get("endless_line"):
                # A body that never ends: `{"message": {"content": "xxxx...`.
                self._stream(
                    endless_line_events("ollama", turn, request, turn_no), "application/json", turn
                )
                return
            self._send_json(200, body_fn(turn, request, turn_no))
            return
        if turn.get("endless"):
            events = endless_events(wire, turn, request, turn_no)
        elif turn.get("keepalive"):
            turn = {"chunk_delay_s": KEEPALIVE_INTERVAL_S, **turn}
            events = keepalive_events(wire, turn, request, turn_no)
        elif turn.get("endless_line"):
            events = endless_line_events(wire, turn, request, turn_no)
        else:
            events = events_fn(turn, request, turn_no)
        self._stream(events, stream_type, turn)

    def _stream(self, events: Iterator[str], content_type: str, turn: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        drop_after = turn.get("drop_after_chunks")
        stall_after = turn.get("stall_after_chunks")
        chunk_delay_s = float(turn.get("chunk_delay_s") or 0)
        stopping = self.server.fake._stopping
        for sent, event in enumerate(events):
            if drop_after is not None and sent >= int(drop_after):
                self._drop()
                return
            if stall_after is not None and sent >= int(stall_after):
                # Say nothing more until the client hangs up (or the server stops).
                while not self._pause(3600):
                    pass
                self._drop()
                return
            if stopping.is_set():
                self._drop()
                return
            if sent and chunk_delay_s and self._pause(chunk_delay_s):
                self._drop()
                return
            data = event.encode("utf-8")
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.write(b"0\r\n\r\n")
        self.server.fake._update(self._request, stream_ended_at=time.monotonic())

    def _pause(self, seconds: float) -> bool:
        """Wait `seconds` while watching the socket. True: stop answering, because the server is
        stopping or the client hung up (recorded in `disconnects`, so tests can prove that a
        cancelled client really closed its connection)."""
        fake = self.server.fake
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0:
            if fake._stopping.is_set():
                return True
            readable, _, _ = select.select(
                [self.connection], [], [], min(remaining, WATCH_INTERVAL_S)
            )
            if readable and self._client_hung_up():
                fake._record_disconnect(self._turn_no, self._request)
                return True
        return fake._stopping.is_set()

    def _client_hung_up(self) -> bool:
        # A client waiting for its answer sends nothing, so a readable socket means EOF or reset.
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except (ConnectionResetError, ConnectionAbortedError, OSError):
            return True

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(body).encode("utf-8"), "application/json", headers)

    def _send_raw(
        self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)


def _retry_after_text(value: Any) -> str:
    # Whole seconds print without a fraction, as real servers send them; strings pass through (HTTP dates).
    if isinstance(value, (int, float)) and float(value).is_integer():
        return str(int(value))
    return str(value)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: FakeProviderServer


class FakeProviderServer:
    """Real HTTP on 127.0.0.1 in a background thread; each request consumes the next scripted turn."""

    def __init__(
        self,
        turns: list[dict[str, Any]] | None = None,
        *,
        port: int = 0,
        requests_file: Path | None = None,
    ) -> None:
        self._turns: list[dict[str, Any]] = list(turns or [])
        # Each request's JSON body is appended here as one line, at once (a driver in another
        # process reads it while the server runs: the VS Code e2e).
        self._requests_file = requests_file
        self._lock = threading.Lock()
        # Notified on every change to `requests` and `disconnects` (wait_for_request).
        self._changed = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._turn_count = 0
        self._port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.requests: list[dict[str, Any]] = []
        # Turn numbers (1-based, in request order) whose answer the client hung up on.
        self.disconnects: list[int] = []
        self.url = ""

    def start(self) -> FakeProviderServer:
        server = _Server(("127.0.0.1", self._port), _Handler)
        server.fake = self
        self._server = server
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeProviderServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def script(self, *turns: dict[str, Any]) -> None:
        with self._lock:
            self._turns.extend(turns)

    @property
    def pending_turns(self) -> int:
        with self._lock:
            return len(self._turns)

    def wait_for_requests(self, count: int, timeout_s: float = 10.0) -> bool:
        """Poll until at least `count` requests arrived (tests use this instead of fixed sleeps)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if len(self.requests) >= count:
                return True
            time.sleep(0.01)
        return len(self.requests) >= count

    def wait_for_disconnects(self, count: int, timeout_s: float = 10.0) -> bool:
        """Poll until at least `count` clients hung up mid-answer."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if len(self.disconnects) >= count:
                return True
            time.sleep(0.01)
        return len(self.disconnects) >= count

    def wait_for_request(
        self, predicate: Callable[[dict[str, Any]], bool], index: int = -1, timeout_s: float = 10.0
    ) -> bool:
        """Block until request `index` (in arrival order) exists and `predicate` holds for its
        record; woken by every change to the records (no polling). False on timeout."""

        def ready() -> bool:
            try:
                return predicate(self.requests[index])
            except IndexError:
                return False

        with self._changed:
            return self._changed.wait_for(ready, timeout=timeout_s)

    def wait_closed_early(self, index: int = -1, timeout_s: float = 10.0) -> float | None:
        """When the client closed request `index`'s stream before its end (time.monotonic()),
        waiting for it; None if it did not within `timeout_s`."""
        self.wait_for_request(lambda r: r["closed_early_at"] is not None, index, timeout_s)
        try:
            return self.requests[index]["closed_early_at"]
        except IndexError:
            return None

    def _record_disconnect(self, turn_no: int, request: dict[str, Any] | None = None) -> None:
        with self._changed:
            self.disconnects.append(turn_no)
            if request is not None and request["closed_early_at"] is None:
                request["closed_early_at"] = time.monotonic()
            self._changed.notify_all()

    def _record(self, request: dict[str, Any]) -> None:
        with self._changed:
            self.requests.append(request)
            if self._requests_file is not None:
                with self._requests_file.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(request.get("json"), ensure_ascii=False) + "\n")
            self._changed.notify_all()

    def _update(self, request: dict[str, Any], **fields: Any) -> None:
        with self._changed:
            request.update(fields)
            self._changed.notify_all()

    def _next_turn(self) -> tuple[dict[str, Any], int]:
        with self._lock:
            self._turn_count += 1
            turn = self._turns.pop(0) if self._turns else {"text": EXHAUSTED_TEXT}
            return turn, self._turn_count

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless the server is stopping; True means stop now."""
        return self._stopping.wait(seconds)


def load_script(path: str) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    turns = data.get("turns", []) if isinstance(data, dict) else data
    if not isinstance(turns, list):
        raise SystemExit(f'{path}: expected a list of turns or {{"turns": [...]}}')
    return turns


@contextmanager
def standalone_process(turns: list[dict[str, Any]]) -> Iterator[str]:
    """Serve `turns` from a child process in standalone mode (`main`); yields its base URL.

    For latency benchmarks: a server thread in the measuring process takes the GIL from the
    client at every chunk it writes; in its own process it competes for a core at most.
    """
    handle, script_path = tempfile.mkstemp(suffix=".json", prefix="lich-fake-provider-")
    with os.fdopen(handle, "w") as out:
        json.dump(turns, out)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.fake_provider",
            "--port",
            "0",
            "--script",
            script_path,
        ],
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if not line.startswith("LISTENING "):
            raise RuntimeError(f"fake provider did not start: {line!r}")
        yield line.split(" ", 1)[1]
    finally:
        proc.kill()
        proc.wait(timeout=STANDALONE_STOP_TIMEOUT_S)
        os.unlink(script_path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.fake_provider")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", help='JSON file: a list of turns (or {"turns": [...]})')
    parser.add_argument("--requests", help="JSONL file: each request's body is appended to it")
    args = parser.parse_args(argv)
    server = FakeProviderServer(
        load_script(args.script) if args.script else [],
        port=args.port,
        requests_file=Path(args.requests) if args.requests else None,
    )
    server.start()
    print(f"LISTENING {server.url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
