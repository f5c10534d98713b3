"""The completion models: config `completion` as a FimModel speaking one of three wire formats.

- `completions`: OpenAI-compatible `POST {base_url}/completions` with `prompt` (the prefix) and
  `suffix`, streamed as SSE (llama.cpp's server, vLLM, Ollama's /v1, DeepSeek and Mistral FIM);
- `generate`: Ollama's `POST {base_url}/api/generate` with `suffix`, streamed as NDJSON;
- `chat`: a fill-in-the-middle prompt over a chat provider (lich_core.providers), for models
  that only chat (Anthropic's, OpenAI's chat models).

The HTTP formats share the chat providers' client construction (httpx, on a pooled client of
their own: the `completion` lane), error mapping and response bounds (lich_core.providers.http).
A stream is closed at once when the caller leaves the iteration (`aclose()`, which
`async with contextlib.aclosing(...)` does) or when the CancelToken fires; the token firing
ends the iteration with asyncio.CancelledError, as a chat model call does.
Building the request bodies and prompts are pure functions, tested directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from typing import Any

import httpx

from lich_core.completion.model import FimRequest
from lich_core.config import COMPLETION_FORMATS_BY_KIND, v_completion
from lich_core.errors import ConfigError
from lich_core.providers.base import CallOptions, Model, ProviderError
from lich_core.providers.factory import ProviderSpec, build_provider, parse_provider
from lich_core.providers.http import (
    HttpModel,
    ResponseLimits,
    TokenCancelsTask,
    preview,
    sse_events,
    stream_lines,
)
from lich_core.providers.ollama import OLLAMA_CONNECT_HINT
from lich_core.settings import settings_of
from lich_core.vocabulary import CancelToken, Message

CONFIG_KEY = "completion"
# How long one completion may take in all, unless the entry's `timeout_ms` says otherwise: from
# the request to the answer's end, whatever the server does (a suggestion later is no use).
DEFAULT_COMPLETION_TIMEOUT_MS = 5_000
# After the final event the rest of the body is read for this long at most (so the connection
# can be kept); a server that goes on or stalls gets its connection closed instead.
DRAIN_S = 0.1
# The neighbouring snippets' comment block at the top of an HTTP prompt, at most (the context
# builder bounds the snippets already; this keeps a prompt sane whatever it is handed).
MAX_SNIPPET_HEADER_CHARS = 6_000
CURSOR_MARKER = "<CURSOR>"
FENCE = "```"

# Line comments by LSP language id; a language with none (JSON, Markdown, HTML) gets no header.
LINE_COMMENTS = {
    **dict.fromkeys(
        (
            "python",
            "ruby",
            "shellscript",
            "perl",
            "r",
            "yaml",
            "toml",
            "elixir",
            "julia",
            "nix",
            "dockerfile",
            "makefile",
            "cmake",
            "powershell",
            "coffeescript",
            "crystal",
            "nim",
        ),
        "#",
    ),
    **dict.fromkeys(
        (
            "c",
            "cpp",
            "csharp",
            "java",
            "javascript",
            "javascriptreact",
            "typescript",
            "typescriptreact",
            "go",
            "rust",
            "swift",
            "kotlin",
            "scala",
            "dart",
            "php",
            "groovy",
            "zig",
            "objective-c",
            "objective-cpp",
            "fsharp",
            "jsonc",
            "proto",
            "solidity",
            "verilog",
        ),
        "//",
    ),
    **dict.fromkeys(("lua", "sql", "haskell", "elm", "ada", "vhdl"), "--"),
    **dict.fromkeys(("clojure", "lisp", "scheme", "racket", "commonlisp", "ini"), ";"),
    **dict.fromkeys(("erlang", "latex", "tex", "matlab", "prolog"), "%"),
    "vim": '"',
    "vb": "'",
    "fortran": "!",
}

CHAT_INSTRUCTIONS = (
    "You fill in code at the cursor. The file below has the marker "
    f"{CURSOR_MARKER} where the cursor is. Reply with only the text to insert at {CURSOR_MARKER}: "
    "no explanation, no code fence, nothing repeated from before or after the cursor, and not the "
    "marker itself. Match the file's indentation and style. If nothing fits, reply with nothing."
)


# --- pure parts: prompts and bodies ---


def snippet_header(request: FimRequest) -> str:
    """The comment block that goes before the prefix: the file's path, then each neighbouring
    snippet with its path, every line commented in the file's language; bounded."""
    comment = LINE_COMMENTS.get(request.language)
    if comment is None:
        return ""
    lines: list[str] = []
    if request.path:
        lines.append(f"{comment} Path: {request.path}")
    size = sum(len(line) + 1 for line in lines)
    for snippet in request.snippets:
        block = [f"{comment} Compare this snippet from {snippet.path}:"]
        block += [f"{comment} {line}".rstrip() for line in snippet.text.splitlines()]
        block_size = sum(len(line) + 1 for line in block)
        if size + block_size > MAX_SNIPPET_HEADER_CHARS:
            break
        lines += block
        size += block_size
    return "".join(line + "\n" for line in lines)


def fim_prompt(request: FimRequest) -> str:
    """The prompt (the text before the cursor) an HTTP format sends."""
    return snippet_header(request) + request.prefix


def max_tokens_for(request: FimRequest, cap: int | None) -> int:
    """The request's budget, never above the entry's `max_tokens`."""
    return min(request.max_tokens, cap) if cap else request.max_tokens


def completions_body(request: FimRequest, model: str, cap: int | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "prompt": fim_prompt(request),
        "suffix": request.suffix,
        "max_tokens": max_tokens_for(request, cap),
        "stream": True,
        "temperature": 0,
    }
    if request.stop:
        body["stop"] = list(request.stop)
    return body


def generate_body(request: FimRequest, model: str, cap: int | None = None) -> dict[str, Any]:
    options: dict[str, Any] = {"num_predict": max_tokens_for(request, cap), "temperature": 0}
    if request.stop:
        options["stop"] = list(request.stop)
    return {
        "model": model,
        "prompt": fim_prompt(request),
        "suffix": request.suffix,
        "stream": True,
        "options": options,
        # The model's template wraps prompt and suffix in its own FIM tokens.
        "raw": False,
    }


def chat_prompt(request: FimRequest) -> str:
    """The one user message the chat format sends."""
    parts = [CHAT_INSTRUCTIONS, ""]
    about = request.path or "(unsaved file)"
    if request.language:
        about += f" ({request.language})"
    if request.snippets:
        parts.append("Related code from other open files, for reference only:")
        budget = MAX_SNIPPET_HEADER_CHARS
        for snippet in request.snippets:
            if len(snippet.text) > budget:
                break
            budget -= len(snippet.text)
            parts += [f'<snippet path="{snippet.path}">', snippet.text.rstrip("\n"), "</snippet>"]
        parts.append("")
    parts += [
        f"The file {about}:",
        "<file>",
        f"{request.prefix}{CURSOR_MARKER}{request.suffix}",
        "</file>",
    ]
    if request.stop:
        stops = ", ".join(repr(stop) for stop in request.stop)
        parts += ["", f"Stop before any of: {stops}."]
    return "\n".join(parts)


class FenceStripper:
    """Drops a ``` fence around a streamed answer: the opening line (```lang) and, when it was
    there, the closing fence. Text that might still turn out to be a fence is held back."""

    def __init__(self) -> None:
        self._head = ""  # before the opening line is decided
        self._opened: bool | None = None
        self._tail = ""  # held back: it may be the closing fence

    def feed(self, piece: str) -> str:
        if self._opened is None:
            self._head += piece
            stripped = self._head.lstrip()
            if len(stripped) < len(FENCE) and FENCE.startswith(stripped):
                return ""
            if not stripped.startswith(FENCE):
                self._opened = False
                text, self._head = self._head, ""
                return text
            newline = stripped.find("\n")
            if newline < 0:
                return ""  # still in the ```lang line
            self._opened = True
            piece, self._head = stripped[newline + 1 :], ""
        if not self._opened:
            return piece
        # Held back: trailing blank space, and a last line that may be the closing fence.
        text = self._tail + piece
        body = text.rstrip()
        cut = body.rfind("\n")
        last = body[cut + 1 :].strip()
        start = max(cut, 0) if FENCE.startswith(last) or last.startswith(FENCE) else len(body)
        self._tail = text[start:]
        return text[:start]

    def end(self) -> str:
        if self._opened is None:
            # Never decided: a short answer like "``" is text; an unfinished fence line is not.
            return "" if self._head.lstrip().startswith(FENCE) else self._head
        if not self._opened:
            return ""
        tail, self._tail = self._tail, ""
        return "" if tail.strip().startswith(FENCE) or not tail.strip() else tail


# --- the HTTP formats ---


class FimWire(HttpModel):
    """One HTTP completion format over HttpModel's plumbing (client, hints, error translation,
    limits); HttpFimModel is the FimModel around it. Its chat `complete` is not for use: a
    completion endpoint takes no conversation."""

    wire_format = ""
    client_lane = "completion"  # built as the chat lane is; its own connections

    def __init__(self, **kwargs: Any) -> None:
        kwargs["timeout_ms"] = kwargs.get("timeout_ms") or DEFAULT_COMPLETION_TIMEOUT_MS
        super().__init__(**kwargs)
        # Every timeout of the client is the completion's whole budget at most; the deadline
        # itself is ResponseLimits' (above the transport).
        self.deadline_s = kwargs["timeout_ms"] / 1000
        self.timeout = httpx.Timeout(self.deadline_s)

    def request_body_for(self, request: FimRequest) -> dict[str, Any]:
        raise NotImplementedError

    def pieces(
        self, resp: httpx.Response, limits: ResponseLimits
    ) -> AsyncGenerator[str | None, None]:
        """The answer's text pieces; None marks the final event (what follows is drained)."""
        raise NotImplementedError

    def request_headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def describe(self) -> str:
        return f"{self.kind} {self.model} @ {self.base_url} ({self.wire_format})"

    async def fim_stream(
        self, request: FimRequest, cancel: CancelToken, on_sent: Callable[[], None] | None = None
    ) -> AsyncIterator[str]:
        # The token cancels this task only while the generator awaits the server (never while
        # the caller runs between pieces), and each time that cancellation is taken back on the
        # way out (TokenCancelsTask), so the caller sees the CancelledError this raises. The
        # whole exchange has `deadline_s` (ResponseLimits), the response's head included.
        body = self.request_body_for(request)
        limits = ResponseLimits(self, deadline_s=self.deadline_s)
        done = False
        try:
            async with contextlib.AsyncExitStack() as stack:
                with TokenCancelsTask(cancel):
                    limits.arm()  # the deadline counts from here, the response's head included
                    try:
                        resp = await stack.enter_async_context(
                            self._open(self.endpoint_url(), body, self.request_headers(), on_sent)
                        )
                    finally:
                        limits.disarm()
                pieces = self.pieces(resp, limits)
                stack.push_async_callback(pieces.aclose)
                while True:
                    with TokenCancelsTask(cancel):
                        limits.arm()
                        try:
                            piece = await anext(pieces)
                        except StopAsyncIteration:
                            break
                        finally:
                            limits.disarm()
                    if piece is None:
                        done = True
                        limits.finish(DRAIN_S)
                    elif not done:
                        yield piece
        except asyncio.CancelledError:
            if done and limits.took_back_expiry():
                return  # the drain ran out of time: the answer is whole, the connection closed
            limits.raise_if_idle()
            raise
        except ProviderError:
            if done:
                return  # the body broke after the final event: the answer is whole
            raise


class CompletionsWire(FimWire):
    """OpenAI-compatible `/completions` (legacy completions with `suffix`), streamed as SSE."""

    kind = "openai_compat"
    wire_format = "completions"
    suggest_v1_on_404 = True

    def endpoint(self) -> str:
        return f"{self.base_url}/completions"

    def request_body_for(self, request: FimRequest) -> dict[str, Any]:
        return completions_body(request, self.model, self.max_tokens)

    def request_headers(self) -> dict[str, str]:
        return {"accept": "text/event-stream", **super().request_headers()}

    async def pieces(
        self, resp: httpx.Response, limits: ResponseLimits
    ) -> AsyncGenerator[str | None, None]:
        events = 0
        finished = False
        stray: list[str] = []
        async for _event, data in sse_events(resp, stray, limits=limits):
            if finished:
                continue  # drained, so the connection goes back to the pool
            events += 1
            if data == "[DONE]":
                finished = True
                yield None
                continue
            chunk = self.parse_json(data, "stream chunk")
            if not isinstance(chunk, dict):
                raise self.malformed(f"stream chunk is not an object: {preview(data)}")
            if chunk.get("error"):
                raise self.error_in_body(chunk)
            choices = chunk.get("choices")
            if not isinstance(choices, list):
                raise self.malformed(f"expected a completion chunk, got {preview(data)}")
            for choice in choices:
                if not isinstance(choice, dict):
                    raise self.malformed(f"expected a completion choice, got {preview(data)}")
                text = choice.get("text")
                if text is None and isinstance(choice.get("delta"), dict):
                    # Mistral's FIM endpoint streams chat-shaped deltas.
                    text = choice["delta"].get("content")
                if text and isinstance(text, str):
                    limits.content(text)
                    yield text
                elif choice.get("finish_reason"):
                    limits.progress()
        if not finished:
            raise self.cut_short(events, stray)


class GenerateWire(FimWire):
    """Ollama's `/api/generate` with `suffix`, streamed as NDJSON."""

    kind = "ollama"
    wire_format = "generate"

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("connect_hint", OLLAMA_CONNECT_HINT)
        super().__init__(**kwargs)

    def endpoint(self) -> str:
        return f"{self.base_url}/api/generate"

    def request_body_for(self, request: FimRequest) -> dict[str, Any]:
        return generate_body(request, self.model, self.max_tokens)

    async def pieces(
        self, resp: httpx.Response, limits: ResponseLimits
    ) -> AsyncGenerator[str | None, None]:
        lines = 0
        finished = False
        async for line in stream_lines(resp, limits):
            if finished or not line.strip():
                continue  # blank lines are keepalives, not progress
            lines += 1
            chunk = self.parse_json(line, "response line")
            if not isinstance(chunk, dict):
                raise self.malformed(f"expected an object, got {preview(line)}")
            if chunk.get("error"):
                raise self.error_in_body(chunk)
            text = chunk.get("response")
            if text and isinstance(text, str):
                limits.content(text)
                yield text
            if chunk.get("done"):
                finished = True
                yield None
        if not finished:
            raise self.cut_short(lines)


class HttpFimModel:
    """A FimModel speaking `wire` (HttpModel's own `stream` is its streaming switch, so the
    wire cannot be the FimModel itself)."""

    def __init__(self, wire: FimWire) -> None:
        self.wire = wire
        self.name = wire.name
        self.model = wire.model

    def describe(self) -> str:
        return self.wire.describe()

    def stream(
        self, request: FimRequest, cancel: CancelToken, on_sent: Callable[[], None] | None = None
    ) -> AsyncIterator[str]:
        return self.wire.fim_stream(request, cancel, on_sent)


# --- the chat fallback ---


class ChatFimModel:
    """A FimModel over a chat Model: one user message (chat_prompt), the answer streamed through
    `on_text` and stripped of a surrounding code fence. `chat_for(max_tokens)` makes the chat
    model for one call (its max_tokens is fixed when it is made). The whole call has
    `timeout_ms` (default DEFAULT_COMPLETION_TIMEOUT_MS), as the HTTP formats do."""

    wire_format = "chat"

    def __init__(
        self,
        chat_for: Callable[[int], Model],
        *,
        name: str,
        model: str,
        description: str = "",
        max_tokens_cap: int | None = None,
        timeout_ms: int | None = None,
    ) -> None:
        self.chat_for = chat_for
        self.name = name
        self.model = model
        self.description = description or f"{name} {model}"
        self.max_tokens_cap = max_tokens_cap
        self.deadline_s = (timeout_ms or DEFAULT_COMPLETION_TIMEOUT_MS) / 1000

    def describe(self) -> str:
        return f"{self.description} (chat)"

    async def stream(
        self, request: FimRequest, cancel: CancelToken, on_sent: Callable[[], None] | None = None
    ) -> AsyncIterator[str]:
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        chat = self.chat_for(max_tokens_for(request, self.max_tokens_cap))
        options = CallOptions(on_text=queue.put_nowait, cancel=cancel, on_sent=on_sent)
        messages = [Message(role="user", content=chat_prompt(request))]
        call = asyncio.ensure_future(chat.complete(messages, [], options))
        call.add_done_callback(lambda _: queue.put_nowait(None))
        expired: list[bool] = []

        def expire() -> None:
            if not call.done():
                expired.append(True)
                call.cancel()

        timer = asyncio.get_running_loop().call_later(self.deadline_s, expire)
        stripper = FenceStripper()
        streamed = False
        try:
            while True:
                piece = await queue.get()
                if piece is None:
                    break
                streamed = True
                text = stripper.feed(piece)
                if text:
                    yield text
            response = call.result()  # raises the call's ProviderError or CancelledError
            if not streamed and response.message.content:
                # A provider that does not stream (stream: false) answers all at once.
                text = stripper.feed(response.message.content)
                if text:
                    yield text
            rest = stripper.end()
            if rest:
                yield rest
        except asyncio.CancelledError:
            if not expired:
                raise
            raise ProviderError(
                "network",
                f"timed out: no complete answer within {self.deadline_s:g} s (timeout_ms); "
                "stopped waiting for it",
                provider=self.name,
            ) from None
        finally:
            timer.cancel()
            if not call.done():
                call.cancel()
                # The HTTP stream is closed before the caller goes on.
                with contextlib.suppress(asyncio.CancelledError, ProviderError):
                    await call


# --- building from config ---


def completion_entry(config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The validated `completion` entry (format filled in), or None when it is unset."""
    value = settings_of(config).completion
    if value is None:
        return None
    return v_completion(CONFIG_KEY, value)


def entry_spec(config_key: str, entry: Mapping[str, Any], env: Mapping[str, str]) -> ProviderSpec:
    """A one-provider entry (`completion`, `next_edit`) as a provider spec, the API key resolved;
    errors name `<config_key>.<field>`."""
    fields = {key: value for key, value in entry.items() if key != "format"}
    fields.setdefault("name", config_key)
    try:
        spec = parse_provider(fields, 0, env)
    except ConfigError as err:
        raise ConfigError(str(err).replace("providers[0]", config_key)) from None
    spec.where = config_key
    return spec


def _completions_base_url(spec: ProviderSpec) -> str:
    # Ollama speaks the OpenAI shapes under /v1; its base_url is usually given without it.
    if spec.kind == "ollama" and not spec.base_url.endswith("/v1"):
        return f"{spec.base_url}/v1"
    return spec.base_url


def build_fim_model(
    config: Mapping[str, Any], *, env: Mapping[str, str] | None = None
) -> HttpFimModel | ChatFimModel | None:
    """The completion model config `completion` names; None when it is unset. A bad entry is a
    ConfigError naming `completion.<field>`."""
    entry = completion_entry(config)
    if entry is None:
        return None
    spec = entry_spec(CONFIG_KEY, entry, os.environ if env is None else env)
    wire = entry["format"]
    assert wire in COMPLETION_FORMATS_BY_KIND[spec.kind]
    timeout_ms = spec.timeout_ms or DEFAULT_COMPLETION_TIMEOUT_MS
    if wire == "chat":
        chat_spec = dataclasses.replace(spec, timeout_ms=timeout_ms)
        return ChatFimModel(
            lambda max_tokens: build_provider(
                dataclasses.replace(chat_spec, max_tokens=max_tokens)
            ),
            name=spec.name,
            model=spec.model,
            description=spec.describe(),
            max_tokens_cap=spec.max_tokens,
            timeout_ms=timeout_ms,
        )
    hints = {
        "connect_hint": f"is the server running? check {CONFIG_KEY}.base_url",
        "auth_hint": f"check the API key ({CONFIG_KEY}.api_key_env)",
    }
    if spec.kind == "ollama":
        hints["connect_hint"] = f"is Ollama running (`ollama serve`)? check {CONFIG_KEY}.base_url"
    options: dict[str, Any] = {
        "name": spec.name,
        "model": spec.model,
        "api_key": spec.api_key,
        "headers": spec.headers,
        "timeout_ms": timeout_ms,
        "max_tokens": spec.max_tokens,
        **hints,
    }
    if wire == "generate":
        return HttpFimModel(GenerateWire(base_url=spec.base_url, **options))
    return HttpFimModel(CompletionsWire(base_url=_completions_base_url(spec), **options))
