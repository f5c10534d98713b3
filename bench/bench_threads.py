"""Threads (#35): what a follow-up on a long conversation costs before its request goes out.

A 100-turn thread written as the agent loop writes it (per turn: the run start record with the
prompt, the user message, an assistant message calling read_file, a ~2 KB tool result of anchored
rows, the final answer, the run end record) in a SessionStore under a temp HOME/XDG:

- a follow-up's server-side cost before the request: `store.load(thread)` and
  `CompressionPolicy.due(history, 1)`, median of several runs; warm (the replay cache holds the
  thread and one turn was appended since: a long-lived server) target <= 5 ms, and cold (the
  first read after a restart: the cache cleared) as an information line;
- store growth: the file's size delta for turn 101 against the bytes of that turn's own records
  written alone (target 1.0x: a turn appends itself, never the history);
- through the real language server: `lich.ask {thread}` on the 100-turn thread until the fake
  provider receives the request, the server's first follow-up (it reads the thread from disk)
  and the next ones (its replay cache holds the thread), after a task on a new thread so the
  server's first-task costs are not counted: information lines.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.run import Figure, user_dirs_in
from lich_core.agent.compress import CompressionPolicy
from lich_core.agent.sessions import SessionStore, SessionWriter, session_dir_for
from lich_core.agent.thread_log import _cache as replay_cache
from lich_core.hashline.anchors import render_rows
from lich_core.vocabulary import Message, ToolCall, ToolResult, format_tool_result

THREAD_TURNS = 100
TOOL_RESULT_BYTES = 2 * 1024
WARM_TARGET_MS = 5.0
# Cold: the whole file is parsed once; no user waits on it more than once per thread per server.
COLD_CEILING_MS = 50.0
GROWTH_TARGET_RATIO = 1.0
# Timestamps are written as repr(time.time()): the same records written twice may differ by a
# digit or two in length.
GROWTH_TOLERANCE = 0.01
# Through the server: the HTTP request and its JSON, the task's start; no model call counted.
LSP_FOLLOW_UP_CEILING_MS = 100.0
LSP_TIMEOUT_S = 60  # a hang fails the bench instead of waiting for ever
SAMPLES = 21
QUICK_SAMPLES = 7


def _source_rows(turn: int) -> str:
    """About TOOL_RESULT_BYTES of anchored rows, as read_file returns them."""
    lines: list[str] = []
    size = 0
    number = 0
    while size < TOOL_RESULT_BYTES:
        number += 1
        line = f"    value_{turn}_{number} = compute(item_{number}, limit={number * 7})"
        lines.append(line)
        size += len(line) + 9  # the row's `LINE:HH|` prefix and newline
    return render_rows(lines, 1)


def _turn_records(turn: int, *, first: bool) -> list[dict[str, Any] | Message]:
    """One turn's records in the order the loop writes them (_announce_start, the messages as
    they come, _finish); a dict is a run record, a Message a message record."""
    run_id = f"run-{turn:04d}"
    path = f"pkg/module_{turn % 17}.py"
    prompt = f"Turn {turn}: why does module_{turn % 17} recompute the limit on every call?"
    records: list[dict[str, Any] | Message] = [
        {
            "type": "run",
            "event": "start",
            "run_id": run_id,
            "ts": time.time(),
            "prompt": prompt,
            "face": "lsp",
            "task_id": f"t{turn}",
        }
    ]
    if first:
        records.append(Message(role="system", content="You are lich, a coding agent. " * 40))
    call = ToolCall(id=f"call-{turn}", name="read_file", arguments={"path": path})
    content = format_tool_result(ToolResult(ok=True, output=_source_rows(turn)))
    records += [
        Message(role="user", content=prompt),
        Message(role="assistant", content="Reading the module first.", tool_calls=[call]),
        Message(role="tool", content=content, tool_call_id=call.id, name="read_file"),
        Message(
            role="assistant",
            content=f"In {path}, `compute` is called with a fresh limit each time because "
            "the value is derived from the loop index; caching it per item would avoid the "
            "recomputation. " * 2,
        ),
    ]
    records.append(
        {
            "type": "run",
            "event": "end",
            "run_id": run_id,
            "ts": time.time(),
            "stopped_reason": "final",
            "turns_used": 2,
            "error": None,
            "final": "caching it per item would avoid the recomputation",
            "usage": {"input_tokens": 40_000 + turn * 800, "output_tokens": 120},
            "files": [],
        }
    )
    return records


def _write(writer: SessionWriter, records: list[dict[str, Any] | Message]) -> None:
    try:
        for record in records:
            if isinstance(record, Message):
                writer.message(record)
            else:
                writer.append(record)
    finally:
        writer.close()


def build_thread(store: SessionStore, turns: int, work_dir: str) -> str:
    writer = store.create(work_dir=work_dir, title="a long conversation")
    thread = writer.session_id
    _write(writer, _turn_records(1, first=True))
    for turn in range(2, turns + 1):
        _write(store.open_append(thread), _turn_records(turn, first=False))
    return thread


def follow_up_cost(store: SessionStore, thread: str, limit_tokens: int) -> tuple[float, bool]:
    """Seconds for what a follow-up does before its first request: load, then the compression
    check (a fresh policy, as each run has)."""
    started = time.perf_counter()
    _, history = store.load(thread)
    due = CompressionPolicy(limit_tokens=limit_tokens).due(history, 1)
    return time.perf_counter() - started, due


def measure_store(quick: bool, root: Path) -> dict[str, Any]:
    samples = QUICK_SAMPLES if quick else SAMPLES
    store = SessionStore(session_dir_for({"work_dir": str(root)}))
    thread = build_thread(store, THREAD_TURNS, str(root))
    path = store.path_for(thread)
    limit = CompressionPolicy.limit_for({})
    cold: list[float] = []
    due = False
    for _ in range(samples):
        replay_cache.clear()
        seconds, due = follow_up_cost(store, thread, limit)
        cold.append(seconds)
    history_bytes = path.stat().st_size
    messages = len(store.load(thread)[1])  # and the replay cache holds the thread again
    # Turn 101: the file's growth against the same records written alone.
    records = _turn_records(THREAD_TURNS + 1, first=False)
    _write(store.open_append(thread), records)
    delta = path.stat().st_size - history_bytes
    alone = root / "alone.jsonl"
    _write(SessionWriter(alone, thread), records)
    own = alone.stat().st_size
    warm: list[float] = []
    for index in range(samples):
        if index:  # turn 101 is the first sample's new turn
            _write(store.open_append(thread), _turn_records(THREAD_TURNS + 1 + index, first=False))
        seconds, _ = follow_up_cost(store, thread, limit)
        warm.append(seconds)
    return {
        "cold_ms": statistics.median(cold) * 1000,
        "warm_ms": statistics.median(warm) * 1000,
        "history_bytes": history_bytes,
        "messages": messages,
        "delta": delta,
        "own": own,
        "due": due,
        "samples": samples,
    }


class _StampedProvider:
    """The fake provider in a thread of this process, noting when each request arrives."""

    def __init__(self, turns: list[dict[str, Any]]) -> None:
        from tests.support.fake_provider import FakeProviderServer

        arrivals: list[float] = []
        arrived = threading.Event()
        self.arrivals, self.arrived = arrivals, arrived

        class Stamped(FakeProviderServer):
            def _record(self, request: dict[str, Any]) -> None:
                arrivals.append(time.perf_counter())
                super()._record(request)
                arrived.set()

        self.server = Stamped(turns).start()


async def _wait_for(event: threading.Event, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not event.is_set():
        if time.monotonic() > deadline:
            raise TimeoutError("the fake provider got no request from the language server")
        await asyncio.sleep(0.0005)


async def lsp_follow_ups(root: Path, thread: str, count: int) -> list[float]:
    """Seconds from sending lich.ask {thread} to the fake provider receiving its request, for
    `count` follow-ups in one server, after a task of its own (the first follow-up reads the
    thread from disk)."""
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    from bench.bench_lsp import LICH_SERVER, _stop, chat_options, initialize

    provider = _StampedProvider([{"text": "noted"} for _ in range(count + 1)])
    client = LanguageClient("bench", "0")
    client.feature(types.WINDOW_LOG_MESSAGE)(lambda params: None)
    client.feature(types.WINDOW_SHOW_MESSAGE)(lambda params: None)
    client.feature("lich/event")(lambda params: None)
    await client.start_io(*LICH_SERVER)
    seconds: list[float] = []
    try:
        await initialize(client, root, chat_options(provider.server.url))
        # Not counted: a new thread's task, so the server's first-task costs (imports, the tool
        # runtime, the HTTP connection) are not taken for the thread's.
        started = await asyncio.wait_for(
            client.workspace_execute_command_async(
                types.ExecuteCommandParams("lich.ask", [{"prompt": "warm up"}])
            ),
            LSP_TIMEOUT_S,
        )
        assert started["stopped_reason"] == "final", started
        for index in range(count):
            provider.arrived.clear()
            params = types.ExecuteCommandParams(
                "lich.ask", [{"prompt": f"follow-up {index}", "thread": thread}]
            )
            sent = time.perf_counter()
            ask = asyncio.ensure_future(client.workspace_execute_command_async(params))
            await _wait_for(provider.arrived, LSP_TIMEOUT_S)
            seconds.append(provider.arrivals[-1] - sent)
            result = await asyncio.wait_for(ask, LSP_TIMEOUT_S)
            assert result["stopped_reason"] == "final", result
        await client.shutdown_async(None)
        client.exit(None)
    finally:
        await _stop(client)
        provider.server.stop()
    return seconds


def _holds(ok: bool) -> str:
    return "target holds" if ok else "TARGET MISSED"


def run(quick: bool) -> list[Figure]:
    with tempfile.TemporaryDirectory(prefix="lich-bench-threads-") as folder:
        # Its own HOME/XDG dirs (also when run as a script), given back afterwards: the threads
        # written here are gone with the temp dir.
        with user_dirs_in(Path(folder) / "home"):
            root = Path(folder).resolve() / "work"
            root.mkdir()
            figures = measure_store(quick, root)
            store = SessionStore(session_dir_for({"work_dir": str(root)}))
            thread = build_thread(store, THREAD_TURNS, str(root))
            follow_ups = asyncio.run(lsp_follow_ups(root, thread, 3 if quick else 5))
    warm, cold = figures["warm_ms"], figures["cold_ms"]
    growth = figures["delta"] / figures["own"]
    growth_ok = abs(growth - GROWTH_TARGET_RATIO) <= GROWTH_TOLERANCE
    first_ms = follow_ups[0] * 1000
    later_ms = statistics.median(follow_ups[1:]) * 1000
    shape = (
        f"{THREAD_TURNS} turns, {figures['messages']} messages, "
        f"{figures['history_bytes'] // 1024} KB; median of {figures['samples']}"
    )
    return [
        Figure(
            name="follow-up load + compression check, warm",
            value=warm,
            unit="ms",
            reference_name="cold",
            reference_value=cold,
            target=f"<= {WARM_TARGET_MS:g} ms",
            note=f"{_holds(warm <= WARM_TARGET_MS)}; {shape}; compression due: {figures['due']}",
        ),
        Figure(
            name="follow-up load + compression check, cold",
            value=cold,
            unit="ms",
            ceiling=COLD_CEILING_MS,
            note="the first read after a restart: the whole file replayed",
        ),
        Figure(
            name="store growth for turn 101",
            value=figures["delta"],
            unit="bytes",
            reference_name="the turn's own records",
            reference_value=figures["own"],
            target=f"ratio {GROWTH_TARGET_RATIO:.1f}x (within {GROWTH_TOLERANCE:.0%})",
            note=f"{_holds(growth_ok)}; history before it {figures['history_bytes']} bytes",
        ),
        Figure(
            name="lich.ask {thread} -> provider request, 1st (cold)",
            value=first_ms,
            unit="ms",
            ceiling=LSP_FOLLOW_UP_CEILING_MS,
            note="after a task on another thread; the server reads this one from disk",
        ),
        Figure(
            name="lich.ask {thread} -> provider request, later",
            value=later_ms,
            unit="ms",
            ceiling=LSP_FOLLOW_UP_CEILING_MS,
            note=f"median of {len(follow_ups) - 1}; the replay cache holds the thread",
        ),
    ]


if __name__ == "__main__":
    from bench.run import format_figure

    for figure in run(quick="--quick" in sys.argv):
        print(format_figure(figure))
