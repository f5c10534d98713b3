"""Agent events: the one stream the CLI and the language server render a run from.

Every event carries the run id, the session id, a per-run sequence number (1, 2, 3, ...) and a
wall-clock timestamp, so a consumer can order, group and replay them without any other state.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("lich.agent")

EVENT_TYPES = (
    "run_start",
    "turn_start",
    "llm_start",
    "text_delta",
    # A provider attempt failed and another follows (retry or failover); data.discarded_chars
    # of this turn's streamed text are void, the next attempt streams the answer from its start.
    "llm_retry",
    "llm_end",
    "tool_call_start",
    "tool_call_end",
    "compress_start",
    "compress_end",
    "final",
    "budget_exhausted",
    "turn_end",
    "run_end",
    "error",
    # A plugin failed to load or a hook threw; the run goes on without it.
    "plugin_warning",
)


@dataclass(frozen=True)
class AgentEvent:
    type: str
    run_id: str
    session_id: str
    seq: int
    ts: float  # seconds since the epoch
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "run_id": self.run_id,
            "session_id": self.session_id,
            "seq": self.seq,
            "ts": self.ts,
            "data": self.data,
        }


# A listener may be a plain function or a coroutine function.
EventListener = Callable[[AgentEvent], "Awaitable[None] | None"]


class EventEmitter:
    """Numbers events for one run and hands them to the listener.

    A listener that raises is logged and otherwise ignored: rendering must never break a run.
    """

    def __init__(self, run_id: str, session_id: str, listener: EventListener | None) -> None:
        self.run_id = run_id
        self.session_id = session_id
        self._listener = listener
        self._seq = 0
        # Coroutines of async listeners started from synchronous callbacks (streamed text);
        # awaited before the next event so a listener sees events in order.
        self._pending: list[asyncio.Future[Any]] = []

    async def emit(self, event_type: str, **data: Any) -> AgentEvent:
        self._seq += 1
        event = AgentEvent(event_type, self.run_id, self.session_id, self._seq, time.time(), data)
        if self._listener is None:
            return event
        if self._pending:
            await self.drain()
        try:
            outcome = self._listener(event)
            # A plain function returns None: skip the (abc-based, slow) awaitable check.
            if outcome is not None and inspect.isawaitable(outcome):
                await outcome
        except Exception:  # noqa: BLE001 - a broken renderer must not end the run
            log.warning("event listener failed on %s", event_type, exc_info=True)
        return event

    def emit_nowait(self, event_type: str, **data: Any) -> AgentEvent:
        """For synchronous callbacks (streamed text): an async listener's coroutine is scheduled."""
        self._seq += 1
        event = AgentEvent(event_type, self.run_id, self.session_id, self._seq, time.time(), data)
        if self._listener is None:
            return event
        try:
            outcome = self._listener(event)
            if outcome is not None and inspect.isawaitable(outcome):
                self._pending.append(asyncio.ensure_future(_ordered(self._pending[-1:], outcome)))
        except Exception:  # noqa: BLE001
            log.warning("event listener failed on %s", event_type, exc_info=True)
        return event

    async def drain(self) -> None:
        pending, self._pending = self._pending, []
        for task in pending:
            try:
                await task
            except Exception:  # noqa: BLE001
                log.warning("event listener failed", exc_info=True)


async def _ordered(before: list[asyncio.Future[Any]], outcome: Awaitable[Any]) -> None:
    """Run an async listener's coroutine only after the previously scheduled one finished."""
    for task in before:
        try:
            await asyncio.shield(task)
        except Exception:  # noqa: BLE001
            pass
    await outcome
