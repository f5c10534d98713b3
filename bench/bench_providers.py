"""Time to first streamed token through the agent loop, and through the provider alone, against
plain httpx.

All read the same 200-chunk SSE stream from the fake provider server (run as a separate process
so its thread does not compete with the client for the GIL), over a warm keep-alive connection,
in the same run. "Through the loop" is Agent.run with the provider chain (retry wrapper), from
the call until the first `text_delta` event reaches the listener, and the whole run. The
reference is the least a client can do: POST, iterate lines, json.loads each data line, take the
first non-empty delta. It POSTs the very body the loop sends (system prompt and user message),
so the ratio is the loop's own cost, not a longer request's. The providers give httpx their
endpoint parsed once (HttpModel.endpoint_url), which plain httpx, given the URL as text, parses
again on every request; an info line compares the loop with httpx given the parsed URL too, so
the loop's own cost shows apart from that saving. Each round runs the variants in a shuffled
order, so drift and ordering hit all of them; a ratio of a few per cent needs a few hundred
rounds to stand out of this machine's noise.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.run import Figure
from lich_core.agent.events import AgentEvent
from lich_core.agent.loop import Agent
from lich_core.agent.messages import Message
from lich_core.agent.prompts import system_prompt_for
from lich_core.config import load_config
from lich_core.providers.base import CallOptions
from lich_core.providers.chain import ProviderChain
from lich_core.providers.http import aclose_client, get_client
from lich_core.providers.openai_compat import OpenAICompatModel
from lich_core.runtime import ToolRuntime
from lich_core.tools.executor import ToolExecutor
from lich_core.tools.registry import ToolRegistry
from tests.support.fake_provider import standalone_process

STREAM_CHUNKS = 200
TARGET_RATIO = 1.05
ROUNDS = 240
QUICK_ROUNDS = 40
ROUND_ORDER_SEED = 11


async def _through_model(model: OpenAICompatModel, messages: list[Message]) -> tuple[float, float]:
    first: list[float] = []
    start = time.perf_counter()

    def on_text(piece: str) -> None:
        if not first:
            first.append(time.perf_counter())

    await model.complete(messages, [], CallOptions(on_text=on_text))
    end = time.perf_counter()
    return first[0] - start, end - start


def _agent(model: OpenAICompatModel, work_dir: Path) -> Agent:
    config = load_config(work_dir, env={"HOME": str(work_dir)})
    registry = ToolRegistry([])
    executor = ToolExecutor(registry, work_dir=work_dir, settings=config)
    runtime = ToolRuntime(registry, registry, executor, config)
    return Agent(model=ProviderChain([model]), runtime=runtime, config=config)


async def _through_loop(agent: Agent) -> tuple[float, float]:
    first: list[float] = []
    start = time.perf_counter()

    def on_event(event: AgentEvent) -> None:
        if event.type == "text_delta" and not first:
            first.append(time.perf_counter())

    result = await agent.run("benchmark", on_event=on_event)
    end = time.perf_counter()
    assert result.stopped_reason == "final", result.error
    return first[0] - start, end - start


async def _plain_httpx(
    client: httpx.AsyncClient, url: str | httpx.URL, body: dict
) -> tuple[float, float]:
    first = 0.0
    start = time.perf_counter()
    async with client.stream("POST", url, json=body) as resp:
        async for line in resp.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            choices = chunk.get("choices") or [{}]
            if not first and choices[0].get("delta", {}).get("content"):
                first = time.perf_counter()
    end = time.perf_counter()
    return first - start, end - start


async def _measure(url: str, rounds: int, work_dir: Path) -> dict[str, list[float]]:
    model = OpenAICompatModel(model="fake-model", name="bench", base_url=url + "/v1")
    agent = _agent(model, work_dir)
    # What Agent.run sends on its first turn (no tools are registered).
    messages = [
        Message(role="system", content=system_prompt_for(agent.config)),
        Message(role="user", content="benchmark"),
    ]
    body = model.request_body(messages, [])
    results: dict[str, list[float]] = {
        "loop_first": [],
        "loop_total": [],
        "model_first": [],
        "model_total": [],
        "plain_first": [],
        "plain_total": [],
        "parsed_first": [],
        "parsed_total": [],
    }
    # The references use the same pooled client, so all four read over the same warm
    # connection (a second client would add a second connection and server thread as a confound).
    client = get_client()
    # Warm the connection before timing.
    await _through_loop(agent)
    await _through_model(model, messages)
    await _plain_httpx(client, url + "/v1/chat/completions", body)
    parsed_url = httpx.URL(url + "/v1/chat/completions")
    runners = {
        "loop": lambda: _through_loop(agent),
        "model": lambda: _through_model(model, messages),
        "plain": lambda: _plain_httpx(client, url + "/v1/chat/completions", body),
        "parsed": lambda: _plain_httpx(client, parsed_url, body),
    }
    names = list(runners)
    order = random.Random(ROUND_ORDER_SEED)
    for _ in range(rounds):
        # A fresh order each round, so no variant always runs first (or right after another).
        order.shuffle(names)
        for name in names:
            first, total = await runners[name]()
            results[f"{name}_first"].append(first)
            results[f"{name}_total"].append(total)
    await aclose_client()
    return results


def run(quick: bool) -> list[Figure]:
    rounds = QUICK_ROUNDS if quick else ROUNDS
    turns = [
        {"text": "token " * STREAM_CHUNKS, "chunks": STREAM_CHUNKS} for _ in range(4 * rounds + 8)
    ]
    with standalone_process(turns) as url, tempfile.TemporaryDirectory() as work_dir:
        results = asyncio.run(_measure(url, rounds, Path(work_dir)))
    ms = {key: statistics.median(values) * 1000 for key, values in results.items()}
    note = f"median of {rounds}, {STREAM_CHUNKS}-chunk SSE stream, fake server in a subprocess"
    return [
        Figure(
            "providers: time to first token through the agent loop",
            ms["loop_first"],
            "ms",
            "plain httpx",
            ms["plain_first"],
            f"<= {TARGET_RATIO}x",
            note + "; Agent.run + ProviderChain, first text_delta event",
        ),
        Figure(
            "providers: time to first token, OpenAICompatModel",
            ms["model_first"],
            "ms",
            "plain httpx",
            ms["plain_first"],
            f"<= {TARGET_RATIO}x",
            note,
        ),
        Figure(
            "providers: whole stream, OpenAICompatModel",
            ms["model_total"],
            "ms",
            "plain httpx",
            ms["plain_total"],
            "",
            note,
        ),
        Figure(
            "providers: time to first token through the agent loop, against httpx given a parsed URL",
            ms["loop_first"],
            "ms",
            "httpx, URL parsed once",
            ms["parsed_first"],
            "",
            note + "; the loop's own cost apart from parsing the endpoint once",
        ),
    ]


if __name__ == "__main__":
    from bench.run import format_figure

    for figure in run("--quick" in sys.argv):
        print(format_figure(figure))
