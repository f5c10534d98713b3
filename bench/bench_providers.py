"""Time to first streamed token: OpenAICompatModel.complete(on_text=...) against plain httpx.

Both read the same 200-chunk SSE stream from the fake provider server (run as a separate process
so its thread does not compete with the client for the GIL), over a warm keep-alive connection,
in the same run. The reference is the least a client can do: POST, iterate lines, json.loads each
data line, take the first non-empty delta. Runs alternate between the two so drift hits both.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.run import Figure
from lich_core.agent.messages import Message
from lich_core.providers.http import aclose_client
from lich_core.providers.openai_compat import OpenAICompatModel

ROOT = Path(__file__).resolve().parents[1]
STREAM_CHUNKS = 200
TARGET_RATIO = 1.2


def _start_server(turns: int) -> tuple[subprocess.Popen[str], str, str]:
    script = [{"text": "token " * STREAM_CHUNKS, "chunks": STREAM_CHUNKS} for _ in range(turns)]
    handle, path = tempfile.mkstemp(suffix=".json", prefix="lich-bench-")
    with os.fdopen(handle, "w") as out:
        json.dump(script, out)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.fake_provider", "--port", "0", "--script", path],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("LISTENING "):
        proc.kill()
        raise RuntimeError(f"fake provider did not start: {line!r}")
    return proc, line.split(" ", 1)[1], path


async def _through_model(model: OpenAICompatModel, messages: list[Message]) -> tuple[float, float]:
    first: list[float] = []
    start = time.perf_counter()

    def on_text(piece: str) -> None:
        if not first:
            first.append(time.perf_counter())

    await model.complete(messages, [], on_text=on_text)
    end = time.perf_counter()
    return first[0] - start, end - start


async def _plain_httpx(client: httpx.AsyncClient, url: str, body: dict) -> tuple[float, float]:
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


async def _measure(url: str, rounds: int) -> dict[str, list[float]]:
    messages = [Message(role="user", content="benchmark")]
    model = OpenAICompatModel(model="fake-model", name="bench", base_url=url + "/v1")
    body = model.request_body(messages, [])
    results: dict[str, list[float]] = {
        "model_first": [],
        "model_total": [],
        "plain_first": [],
        "plain_total": [],
    }
    async with httpx.AsyncClient(trust_env=False) as client:
        # Warm both connections before timing.
        await _through_model(model, messages)
        await _plain_httpx(client, url + "/v1/chat/completions", body)
        for _ in range(rounds):
            first, total = await _through_model(model, messages)
            results["model_first"].append(first)
            results["model_total"].append(total)
            first, total = await _plain_httpx(client, url + "/v1/chat/completions", body)
            results["plain_first"].append(first)
            results["plain_total"].append(total)
    await aclose_client()
    return results


def run(quick: bool) -> list[Figure]:
    rounds = 15 if quick else 60
    proc, url, script_path = _start_server(2 * rounds + 4)
    try:
        results = asyncio.run(_measure(url, rounds))
    finally:
        proc.kill()
        proc.wait(timeout=10)
        os.unlink(script_path)
    ms = {key: statistics.median(values) * 1000 for key, values in results.items()}
    note = f"median of {rounds}, {STREAM_CHUNKS}-chunk SSE stream, fake server in a subprocess"
    return [
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
    ]


if __name__ == "__main__":
    from bench.run import format_figure

    for figure in run("--quick" in sys.argv):
        print(format_figure(figure))
