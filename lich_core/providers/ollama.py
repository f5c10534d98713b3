"""Ollama `/api/chat` (NDJSON streaming). Ollama sends no tool-call ids, so we make them up."""

from __future__ import annotations

import itertools
from typing import Any

import httpx

from lich_core.agent.messages import Message, ModelResponse, ToolCall, Usage
from lich_core.providers.base import TextCallback
from lich_core.providers.http import HttpModel, function_tools, parse_tool_arguments, preview
from lich_core.tools.types import ToolDefinition

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
        return self._final([self._decode(raw)])

    async def read_stream(
        self, resp: httpx.Response, on_text: TextCallback | None
    ) -> ModelResponse:
        lines: list[dict[str, Any]] = []
        async for line in resp.aiter_lines():
            # After the done line only drain the body, so the connection goes back to the pool.
            if not line.strip() or (lines and lines[-1].get("done")):
                continue
            chunk = self._decode(line)
            lines.append(chunk)
            piece = (chunk.get("message") or {}).get("content")
            if piece and on_text is not None:
                on_text(piece)
        return self._final(lines)

    def _decode(self, line: str | bytes) -> dict[str, Any]:
        chunk = self.parse_json(line, "response line")
        if not isinstance(chunk, dict):
            raise self.malformed(f"expected an object, got {preview(line)}")
        if chunk.get("error"):
            raise self.error_in_body(chunk)
        return chunk

    def _final(self, chunks: list[dict[str, Any]]) -> ModelResponse:
        if not chunks or not chunks[-1].get("done"):
            raise self.cut_short(len(chunks))
        text: list[str] = []
        calls: list[ToolCall] = []
        for chunk in chunks:
            message = chunk.get("message") or {}
            if message.get("content"):
                text.append(message["content"])
            for call in message.get("tool_calls") or []:
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
        last = chunks[-1]
        usage = Usage(int(last.get("prompt_eval_count") or 0), int(last.get("eval_count") or 0))
        reason = last.get("done_reason") or "stop"
        return ModelResponse(
            message=Message(role="assistant", content="".join(text), tool_calls=calls),
            usage=usage,
            stop_reason="tool_calls" if calls else reason,
            provider=self.name,
            model=last.get("model") or self.model,
        )
