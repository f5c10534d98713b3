"""Limits under a runaway model: the server's memory and what reaches the editor.

- peak RSS (VmHWM) of `python -m lich_lsp` while a lich.ask task streams an endless answer for
  10 s (3 s with --quick) at ~1,000 small text deltas a second, below the 1 MiB response cap;
  reference: the same server idle after `initialize` (target < 100 MB);
- editor notifications a second during that stream (every notification the client gets:
  lich/event, window/logMessage, ...); reference: the text deltas a second the provider sent,
  which is what the editor used to get (target <= 20);
- the same endless answer as fast as loopback carries it: how long until the 1 MiB cap stops the
  task (`response_too_large:`), and the server's peak RSS meanwhile (target < 100 MB).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.bench_lsp import chat_options, initialize
from bench.run import Figure

LICH_SERVER = [sys.executable, "-m", "lich_lsp"]
SLOW_PIECE = "stream on " * 5  # 50 characters
SLOW_DELAY_S = 0.001
FAST_PIECE = "x" * 200
RSS_TARGET_MB = 100
NOTIFICATIONS_TARGET_PER_S = 20


def _proc_kib(pid: int, field: str) -> float | None:
    """A `/proc/<pid>/status` figure in KiB (VmRSS, VmHWM), or None where there is no /proc."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return float(line.split()[1])
    except OSError:
        return None
    return None


async def _stream(root: Path, piece: str, delay_s: float, seconds: float) -> dict[str, Any]:
    """Run one lich.ask against an endless answer; cancel it after `seconds` of streaming."""
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    from tests.support.fake_provider import FakeProviderServer

    fake = FakeProviderServer()
    fake.start()
    fake.script({"endless": True, "text": piece, "chunk_delay_s": delay_s})
    client = LanguageClient("bench", "0")
    received: list[tuple[float, str, Any]] = []

    def recorder(method: str) -> Any:
        def record(params: Any) -> None:
            received.append((time.perf_counter(), method, params))

        return record

    for method in ("lich/event", types.WINDOW_LOG_MESSAGE, types.WINDOW_SHOW_MESSAGE):
        client.feature(method)(recorder(method))
    await client.start_io(*LICH_SERVER)
    server = client._server  # the subprocess
    assert server is not None
    try:
        await initialize(client, root, chat_options(fake.url))
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams("lich.status", [{}])
        )
        idle_kib = _proc_kib(server.pid, "VmRSS")
        ask = asyncio.ensure_future(
            client.workspace_execute_command_async(
                types.ExecuteCommandParams("lich.ask", [{"prompt": "talk forever"}])
            )
        )
        deadline = time.perf_counter() + 30
        while not any(_is_text(params) for _, method, params in received if method == "lich/event"):
            if time.perf_counter() > deadline or ask.done():
                raise RuntimeError(
                    f"no streamed text arrived: {ask.result() if ask.done() else 'timeout'}"
                )
            await asyncio.sleep(0.01)
        started = time.perf_counter()
        first_index = len(received)
        while time.perf_counter() - started < seconds and not ask.done():
            await asyncio.sleep(0.05)
        ended = time.perf_counter()
        window = received[first_index:]
        if not ask.done():
            await client.workspace_execute_command_async(
                types.ExecuteCommandParams("lich.cancel", [{}])
            )
        result = await asyncio.wait_for(ask, 30)
        stopped_s = ended - started
        peak_kib = _proc_kib(server.pid, "VmHWM")
        await client.shutdown_async(None)
        client.exit(None)
    finally:
        await _stop(client)
        fake.stop()
    deltas = sum(
        _coalesced(params)
        for _, method, params in window
        if method == "lich/event" and _is_text(params)
    )
    return {
        "idle_mb": idle_kib / 1024 if idle_kib is not None else None,
        "peak_mb": peak_kib / 1024 if peak_kib is not None else None,
        "notifications_per_s": len(window) / stopped_s if stopped_s > 0 else 0.0,
        "busiest_second": _busiest_second([at for at, _, _ in window]),
        "deltas_per_s": deltas / stopped_s if stopped_s > 0 else 0.0,
        "stopped_s": stopped_s,
        "result": result,
    }


def _is_text(params: Any) -> bool:
    return getattr(params, "type", None) == "text_delta"


def _coalesced(params: Any) -> int:
    data = getattr(params, "data", None)
    return int(getattr(data, "coalesced", 1) or 1)


def _busiest_second(times: list[float]) -> int:
    """The most notifications received within any one second (client-side arrival times)."""
    best = 0
    start = 0
    for end, at in enumerate(times):
        while at - times[start] >= 1.0:
            start += 1
        best = max(best, end - start + 1)
    return best


async def _stop(client: Any) -> None:
    server = getattr(client, "_server", None)
    if server is not None and server.returncode is None:
        try:
            await asyncio.wait_for(server.wait(), 5)
        except asyncio.TimeoutError:
            server.kill()
    await client.stop()


def _mb(value: float | None) -> float:
    return value if value is not None else float("nan")


def run(quick: bool) -> list[Figure]:
    seconds = 3.0 if quick else 10.0
    with tempfile.TemporaryDirectory(prefix="lich-bench-limits-") as temp:
        root = Path(temp).resolve()
        slow = asyncio.run(_stream(root, SLOW_PIECE, SLOW_DELAY_S, seconds))
        fast = asyncio.run(_stream(root, FAST_PIECE, 0.0, 30.0))
    slow_outcome = slow["result"]["stopped_reason"]
    fast_result = fast["result"]
    fast_error = str(fast_result.get("error") or "")[: len("response_too_large:")]
    return [
        Figure(
            f"server peak RSS, {seconds:.0f} s endless stream",
            _mb(slow["peak_mb"]),
            "MB",
            "idle server",
            slow["idle_mb"],
            f"< {RSS_TARGET_MB} MB",
            note=f"{slow['deltas_per_s']:.0f} text deltas/s; task {slow_outcome} after {slow['stopped_s']:.1f} s",
        ),
        Figure(
            "editor notifications/s while streaming",
            slow["notifications_per_s"],
            "/s",
            "provider text deltas/s",
            slow["deltas_per_s"],
            f"<= {NOTIFICATIONS_TARGET_PER_S}/s",
            note=f"busiest second (client clock): {slow['busiest_second']}",
        ),
        Figure(
            "fast endless stream: stopped by the cap after",
            fast["stopped_s"] * 1000,
            "ms",
            note=f"{fast_result['stopped_reason']} {fast_error or '(no error)'}; {fast['deltas_per_s']:.0f} deltas/s",
        ),
        Figure(
            "server peak RSS, fast endless stream",
            _mb(fast["peak_mb"]),
            "MB",
            "idle server",
            fast["idle_mb"],
            f"< {RSS_TARGET_MB} MB",
            note=f"{fast['notifications_per_s']:.1f} editor notifications/s",
        ),
    ]
