"""The next-edit model: config `next_edit` as a model answering one prompt, in one of two formats.

- `zeta`: OpenAI-compatible `POST {base_url}/completions` with the Zeta prompt, streamed as SSE
  (Zed's open Zeta model served by vLLM, llama.cpp's server or Ollama's /v1): the completion
  providers' HTTP code (lich_core.completion.providers.CompletionsWire: client, limits, errors);
- `chat`: any chat model through the chat providers (lich_core.providers), asked the chat prompt.

`stream(prompt, cancel, on_sent)` yields the answer in pieces; leaving the iteration early, or
`cancel` firing, closes the provider's stream at once (asyncio.CancelledError, as completions do).
Failures raise lich_core.providers.base.ProviderError; a bad entry is a ConfigError naming
`next_edit.<field>`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Protocol

from lich_core.completion.model import FimRequest
from lich_core.completion.providers import CompletionsWire, HttpFimModel, entry_spec
from lich_core.config import v_next_edit
from lich_core.providers.base import CallOptions, Model
from lich_core.providers.factory import build_provider
from lich_core.settings import settings_of
from lich_core.vocabulary import CancelToken, Message

CONFIG_KEY = "next_edit"
# A whole rewritten region takes longer than a completion's few words.
DEFAULT_NEXT_EDIT_TIMEOUT_MS = 10_000
# The answer's budget: the region again, with room for what the model adds.
DEFAULT_NEXT_EDIT_MAX_TOKENS = 2_048


class NextEditModel(Protocol):
    name: str
    model: str
    wire_format: str

    def describe(self) -> str: ...

    def stream(
        self, prompt: str, cancel: CancelToken, on_sent: Callable[[], None] | None = None
    ) -> AsyncIterator[str]: ...


class ZetaWire(CompletionsWire):
    """CompletionsWire with the whole Zeta prompt as `prompt` (no suffix: not a FIM request)."""

    wire_format = "zeta"

    def request_body_for(self, request: FimRequest) -> dict[str, Any]:
        return {
            "model": self.model,
            "prompt": request.prefix,
            "max_tokens": request.max_tokens,
            "stream": True,
            "temperature": 0,
        }


class ZetaModel:
    """A NextEditModel over ZetaWire."""

    wire_format = "zeta"

    def __init__(self, wire: ZetaWire) -> None:
        self.fim = HttpFimModel(wire)
        self.name = wire.name
        self.model = wire.model
        self.max_tokens = wire.max_tokens or DEFAULT_NEXT_EDIT_MAX_TOKENS

    def describe(self) -> str:
        return self.fim.describe()

    def stream(
        self, prompt: str, cancel: CancelToken, on_sent: Callable[[], None] | None = None
    ) -> AsyncIterator[str]:
        request = FimRequest(prefix=prompt, suffix="", max_tokens=self.max_tokens)
        return self.fim.stream(request, cancel, on_sent)


class ChatNextEditModel:
    """A NextEditModel over a chat Model: the prompt as one user message, the answer whole."""

    wire_format = "chat"

    def __init__(self, chat: Model, *, name: str, model: str, description: str) -> None:
        self.chat = chat
        self.name = name
        self.model = model
        self.description = description

    def describe(self) -> str:
        return f"{self.description} (chat)"

    async def stream(
        self, prompt: str, cancel: CancelToken, on_sent: Callable[[], None] | None = None
    ) -> AsyncIterator[str]:
        # The token closes the provider's stream (asyncio.CancelledError here), as a chat does.
        options = CallOptions(cancel=cancel, on_sent=on_sent)
        response = await self.chat.complete([Message(role="user", content=prompt)], [], options)
        if response.message.content:
            yield response.message.content


def build_next_edit_model(
    config: Mapping[str, Any], *, env: Mapping[str, str] | None = None
) -> ZetaModel | ChatNextEditModel | None:
    """The model config `next_edit` names; None when it is unset."""
    value = settings_of(config).next_edit
    if value is None:
        return None
    entry = v_next_edit(CONFIG_KEY, value)
    spec = entry_spec(CONFIG_KEY, entry, os.environ if env is None else env)
    timeout_ms = spec.timeout_ms or DEFAULT_NEXT_EDIT_TIMEOUT_MS
    if entry["format"] == "chat":
        chat_spec = dataclasses.replace(
            spec,
            timeout_ms=timeout_ms,
            max_tokens=spec.max_tokens or DEFAULT_NEXT_EDIT_MAX_TOKENS,
        )
        return ChatNextEditModel(
            build_provider(chat_spec), name=spec.name, model=spec.model, description=spec.describe()
        )
    base_url = spec.base_url
    if spec.kind == "ollama" and not base_url.endswith("/v1"):
        base_url = f"{base_url}/v1"  # Ollama speaks the OpenAI shapes under /v1
    connect_hint = f"is the server running? check {CONFIG_KEY}.base_url"
    if spec.kind == "ollama":
        connect_hint = f"is Ollama running (`ollama serve`)? check {CONFIG_KEY}.base_url"
    wire = ZetaWire(
        base_url=base_url,
        name=spec.name,
        model=spec.model,
        api_key=spec.api_key,
        headers=spec.headers,
        timeout_ms=timeout_ms,
        max_tokens=spec.max_tokens,
        connect_hint=connect_hint,
        auth_hint=f"check the API key ({CONFIG_KEY}.api_key_env)",
    )
    return ZetaModel(wire)
