"""Ollama `/api/chat` (NDJSON streaming). Ollama sends no tool-call ids, so we make them up."""

from __future__ import annotations

import itertools
import json
from typing import Any

import httpx

from lich_core.providers.base import TextCallback
from lich_core.providers.http import (
    HttpModel,
    ResponseLimits,
    TextBuffer,
    function_tools,
    parse_tool_arguments,
    preview,
    stream_lines,
)
from lich_core.vocabulary import Message, ModelResponse, ToolCall, ToolDefinition, Usage

OLLAMA_BASE_URL = "http://localhost:11434"
OLLAMA_CONNECT_HINT = (
    "is Ollama running (`ollama serve`)? set providers[].base_url or LICH_BASE_URL"
)


def to_wire_messages(messages: list[Message]) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    for message in messages:
        item: dict[str, Any] = {"role": message.role, "content": message.content}
        if message.role == "assistant" and message.tool_calls:
            item["tool_calls"] = [
                {"function": {"name": call.name, "arguments": call.arguments}}
                for call in message.tool_calls
            ]
        if message.role == "tool" and message.name:
            item["tool_name"] = message.name
        wire.append(item)
    return wire


class OllamaModel(HttpModel):
    kind = "ollama"
    default_base_url = OLLAMA_BASE_URL

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("connect_hint", OLLAMA_CONNECT_HINT)
        super().__init__(**kwargs)
        # Ids stay unique across the whole conversation, not just one response.
        self._call_ids = itertools.count(1)

    def request_body(self, messages: list[Message], tools: list[ToolDefinition]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": to_wire_messages(messages),
            "stream": self.stream,
        }
        if tools:
            body["tools"] = function_tools(tools)
        if self.max_tokens:
            body["options"] = {"num_predict": self.max_tokens}
        return body

    def request_headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def endpoint(self) -> str:
        return f"{self.base_url}/api/chat"

    def parse_body(self, raw: bytes) -> ModelResponse:
        answer = _Answer()
        answer.add(self._decode(raw))
        return self._final(answer)

    async def read_stream(
        self, resp: httpx.Response, on_text: TextCallback | None, limits: ResponseLimits
    ) -> ModelResponse:
        answer = _Answer()
        async for line in stream_lines(resp, limits):
            # After the done line only drain the body, so the connection goes back to the pool.
            # Blank lines (keepalives) are not progress.
            if not line.strip() or answer.done:
                continue
            chunk = self._decode(line)
            message = _message(chunk)
            piece = message.get("content")
            if piece:
                limits.content(str(piece))
            if message.get("tool_calls"):
                limits.content(json.dumps(message["tool_calls"], ensure_ascii=False))
            if message.get("thinking"):
                limits.content(str(message["thinking"]))  # reasoning: progress, counted
            answer.add(chunk)
            if answer.done:
                limits.finish()
            if piece and on_text is not None:
                on_text(str(piece))
        return self._final(answer)

    def _decode(self, line: str | bytes) -> dict[str, Any]:
        chunk = self.parse_json(line, "response line")
        if not isinstance(chunk, dict):
            raise self.malformed(f"expected an object, got {preview(line)}")
        if chunk.get("error"):
            raise self.error_in_body(chunk)
        return chunk

    def _final(self, answer: _Answer) -> ModelResponse:
        if not answer.done or answer.last is None:
            raise self.cut_short(answer.chunks)
        calls: list[ToolCall] = []
        for call in answer.tool_calls:
            function = call.get("function") or {}
            arguments, raw = parse_tool_arguments(function.get("arguments"))
            call_id = call.get("id") or f"call_{next(self._call_ids)}"
            calls.append(
                ToolCall(
                    id=call_id,
                    name=function.get("name", ""),
                    arguments=arguments,
                    raw_arguments=raw,
                )
            )
        last = answer.last
        usage = Usage(int(last.get("prompt_eval_count") or 0), int(last.get("eval_count") or 0))
        reason = last.get("done_reason") or "stop"
        return ModelResponse(
            message=Message(role="assistant", content=answer.text.text(), tool_calls=calls),
            usage=usage,
            stop_reason="tool_calls" if calls else reason,
            provider=self.name,
            model=last.get("model") or self.model,
        )


class _Answer:
    """The NDJSON lines of one answer, folded as they come (the lines themselves are not kept)."""

    def __init__(self) -> None:
        self.text = TextBuffer()
        self.tool_calls: list[dict[str, Any]] = []
        self.chunks = 0
        self.last: dict[str, Any] | None = None

    @property
    def done(self) -> bool:
        return bool(self.last and self.last.get("done"))

    def add(self, chunk: dict[str, Any]) -> None:
        self.chunks += 1
        self.last = chunk
        message = _message(chunk)
        if message.get("content"):
            self.text.add(str(message["content"]))
        self.tool_calls.extend(message.get("tool_calls") or [])


def _message(chunk: dict[str, Any]) -> dict[str, Any]:
    message = chunk.get("message")
    return message if isinstance(message, dict) else {}
