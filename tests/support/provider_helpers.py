"""Helpers for provider tests: models pointed at the fake server, a recording sleep, polling."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from lich_core.providers.anthropic import AnthropicModel
from lich_core.providers.http import HttpModel
from lich_core.providers.ollama import OllamaModel
from lich_core.providers.openai_compat import OpenAICompatModel
from tests.support.fake_provider import FakeProviderServer

KINDS = ("openai_compat", "anthropic", "ollama")


def make_model(kind: str, server: FakeProviderServer, **kwargs: Any) -> HttpModel:
    """A provider model of `kind` whose base_url points at `server`."""
    kwargs.setdefault("model", "fake-model")
    kwargs.setdefault("name", f"fake-{kind}")
    if kind == "openai_compat":
        return OpenAICompatModel(base_url=server.url + "/v1", **kwargs)
    if kind == "anthropic":
        return AnthropicModel(base_url=server.url, **kwargs)
    return OllamaModel(base_url=server.url, **kwargs)


class SleepRecorder:
    """An injectable sleep for ProviderChain that records the delays and does not wait."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(0)


async def wait_until(predicate: Callable[[], bool], timeout_s: float = 10.0) -> None:
    """Poll `predicate` (instead of sleeping a fixed time) until true or fail after `timeout_s`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.01)
