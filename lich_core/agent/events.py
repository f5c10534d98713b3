"""Agent events: the one stream the CLI and the language server render a run from.

Every event carries the run id, the session id, a per-run sequence number (1, 2, 3, ...) and a
wall-clock timestamp, so a consumer can order, group and replay them without any other state.

Each event type's `data` is a frozen dataclass below (one per entry of EVENT_TYPES); the loop
constructs them, so a field cannot be misspelt or left out without mypy saying so. Fields typed
`X | None` without a default are always sent (null when there is nothing); fields made with
`optional(...)` are left out of the wire data when None.

The wire shape (`AgentEvent.to_dict()`, plus what the language server adds: `task_id` and `thread`, and
`data.coalesced` on merged text deltas, `data.cut` on an event too large to send whole) is
described by one JSON Schema generated from these dataclasses:

    python -m lich_core.agent.events --schema       # writes docs/lich-event.schema.json

Every editor's renderer tests validate their fixtures (tests/fixtures/events/*.json) against it.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import inspect
import json
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar, get_args, get_type_hints

from lich_core.json_schema import type_schema

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
    # The model stated or updated its plan (the update_plan tool): the whole plan, every time.
    "plan",
    # A tool call waits for the user's approval: the question as data (the face's question,
    # a window/showMessageRequest or a pending question, follows with the same text).
    "approval",
)

StoppedReason = Literal["final", "budget", "aborted", "error"]
RetryAction = Literal["retry", "failover"]
PlanStatus = Literal["pending", "in_progress", "completed"]
PlanPriority = Literal["high", "medium", "low"]
# What a tool call does (lich_core.agent.targets decides it; ACP's ToolKind has the same words).
ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "fetch", "think", "other"]


def doc(text: str, **schema: Any) -> Any:
    """A required field, with its description (and extra JSON Schema keywords) for the schema."""
    return field(metadata={"doc": text, "schema": schema})


def optional(text: str, **schema: Any) -> Any:
    """A field that may be absent: None here, left out of the wire data."""
    return field(default=None, metadata={"doc": text, "schema": schema, "omit_if_none": True})


@dataclass(frozen=True, kw_only=True, slots=True)
class TokenUsage:
    """Tokens the provider reported (a snapshot: the run's own counter keeps growing)."""

    input_tokens: int = doc("prompt tokens, cached ones included", minimum=0)
    output_tokens: int = doc("completion tokens", minimum=0)
    cache_read_tokens: int | None = optional(
        "prompt tokens served from the provider's prompt cache (absent when none)", minimum=0
    )
    cache_write_tokens: int | None = optional(
        "prompt tokens written to the provider's prompt cache (absent when none)", minimum=0
    )

    def to_dict(self) -> dict[str, int]:
        data = {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}
        if self.cache_read_tokens is not None:
            data["cache_read_tokens"] = self.cache_read_tokens
        if self.cache_write_tokens is not None:
            data["cache_write_tokens"] = self.cache_write_tokens
        return data


@dataclass(frozen=True, kw_only=True, slots=True)
class PlanEntry:
    """One step of the model's plan."""

    content: str = doc("what the step does", minLength=1)
    status: PlanStatus = doc("pending, in_progress (at most one step) or completed")
    priority: PlanPriority = doc("high, medium or low")

    def to_dict(self) -> dict[str, str]:
        return {"content": self.content, "status": self.status, "priority": self.priority}


@dataclass(frozen=True, kw_only=True, slots=True)
class LineRange:
    """Lines of a file a tool call reads (1-based, inclusive)."""

    start: int = doc("first line", minimum=1)
    end: int | None = optional("last line (absent: to the end of the file)", minimum=1)

    def to_dict(self) -> dict[str, int]:
        return {"start": self.start} if self.end is None else {"start": self.start, "end": self.end}


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolTarget:
    """What a tool call works on: a file (and lines), a command, a URL or a query
    (lich_core.agent.targets computes it from the tool and its arguments)."""

    path: str | None = optional(
        "the file or directory, as the model named it (relative to the workspace root, or absolute)"
    )
    paths: tuple[str, ...] | None = optional(
        "every file it names, `path` first, when it names more than one (a patch)"
    )
    lines: LineRange | None = optional("the lines it reads")
    command: str | None = optional("the command or code it runs")
    cwd: str | None = optional("where the command runs, when the call says")
    url: str | None = optional("the URL it fetches")
    query: str | None = optional("what it searches for (a pattern, glob or query)")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in ("path", "paths", "lines", "command", "cwd", "url", "query"):
            value = getattr(self, name)
            if isinstance(value, LineRange):
                value = value.to_dict()
            elif isinstance(value, tuple):
                value = list(value)
            if value is not None:
                out[name] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolTarget:
        fields = dict(data)
        lines = fields.get("lines")
        if isinstance(lines, Mapping):
            fields["lines"] = LineRange(**lines)
        if isinstance(fields.get("paths"), list):
            fields["paths"] = tuple(fields["paths"])
        try:
            return cls(**fields)
        except TypeError as err:
            raise ValueError(f"tool target: {err}") from err


@dataclass(frozen=True, kw_only=True, slots=True)
class EventData:
    """Base of every event type's `data`; `TYPE` is the event's `type`."""

    TYPE: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        """The wire `data` object: optional fields that are None are left out."""
        out: dict[str, Any] = {}
        for name, omit_if_none in _wire_fields(type(self)):
            value = getattr(self, name)
            if value is None:
                if omit_if_none:
                    continue
            elif isinstance(value, tuple):
                value = [item.to_dict() if isinstance(item, PlanEntry) else item for item in value]
            elif isinstance(value, (TokenUsage, ToolTarget)):
                value = value.to_dict()
            out[name] = value
        return out

    @classmethod
    def from_dict(cls: type[_D], data: Mapping[str, Any]) -> _D:
        """Parse a wire `data` object of this type (ValueError on a missing or unknown field)."""
        if "cut" in data:
            raise ValueError(f"{cls.TYPE}: the event's data was cut by the server: {data['cut']}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{cls.TYPE}: unknown data field(s) {unknown}")
        kwargs: dict[str, Any] = {}
        hints = get_type_hints(cls)
        for item in dataclasses.fields(cls):
            if item.name not in data:
                if item.metadata.get("omit_if_none"):
                    continue
                raise ValueError(f"{cls.TYPE}: data.{item.name} is missing")
            value = data[item.name]
            if isinstance(value, list):
                value = tuple(_part(hints[item.name], element) for element in value)
            elif hints[item.name] is TokenUsage and isinstance(value, Mapping):
                value = TokenUsage(**value)
            elif ToolTarget in get_args(hints[item.name]) and isinstance(value, Mapping):
                value = ToolTarget.from_dict(value)
            kwargs[item.name] = value
        return cls(**kwargs)


_D = TypeVar("_D", bound=EventData)


def _part(hint: Any, element: Any) -> Any:
    """One element of a wire array: a PlanEntry for `tuple[PlanEntry, ...]`, else as sent."""
    if get_args(hint)[:1] == (PlanEntry,) and isinstance(element, Mapping):
        try:
            return PlanEntry(**element)
        except TypeError as err:
            raise ValueError(f"plan entry: {err}") from err
    return element


_WIRE_FIELDS: dict[type, tuple[tuple[str, bool], ...]] = {}


def _wire_fields(cls: type) -> tuple[tuple[str, bool], ...]:
    cached = _WIRE_FIELDS.get(cls)
    if cached is None:
        cached = tuple(
            (f.name, bool(f.metadata.get("omit_if_none"))) for f in dataclasses.fields(cls)
        )
        _WIRE_FIELDS[cls] = cached
    return cached


@dataclass(frozen=True, kw_only=True, slots=True)
class RunStart(EventData):
    """The run began (first event of every run)."""

    TYPE: ClassVar[str] = "run_start"
    prompt_chars: int = doc("length of the prompt (the prompt itself is not sent)", minimum=0)
    resumed: bool = doc("the run continues a saved session")
    max_turns: int = doc("model calls allowed", minimum=1)
    model: str = doc("the chat model's name ('' when unknown)")
    work_dir: str = doc("the workspace root, resolved")


@dataclass(frozen=True, kw_only=True, slots=True)
class TurnStart(EventData):
    """A turn (one model call and the tool calls it asks for) begins."""

    TYPE: ClassVar[str] = "turn_start"
    turn: int = doc("1-based turn number", minimum=1)
    max_turns: int = doc("model calls allowed", minimum=1)


@dataclass(frozen=True, kw_only=True, slots=True)
class LlmStart(EventData):
    """The model is called."""

    TYPE: ClassVar[str] = "llm_start"
    turn: int = doc("1-based turn number", minimum=1)
    messages: int = doc("messages sent (history plus plugin notes)", minimum=0)
    tools: int = doc("tools offered", minimum=0)
    notes: int = doc("plugin notes added for this call only", minimum=0)


@dataclass(frozen=True, kw_only=True, slots=True)
class TextDelta(EventData):
    """Streamed answer text."""

    TYPE: ClassVar[str] = "text_delta"
    turn: int = doc("1-based turn number", minimum=1)
    text: str = doc("the text streamed since the last delta")
    coalesced: int | None = optional(
        "set by the language server when it merged consecutive deltas of a turn: how many",
        minimum=2,
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class LlmRetry(EventData):
    """A provider attempt failed and another follows (retry, or failover to the next provider)."""

    TYPE: ClassVar[str] = "llm_retry"
    turn: int = doc("1-based turn number", minimum=1)
    provider: str = doc("the provider whose attempt failed")
    attempt: int = doc("1-based attempt on `provider` that failed", minimum=1)
    max_attempts: int = doc("attempts allowed on `provider`", minimum=1)
    kind: str = doc("the provider error kind (network, rate_limit, ...)")
    message: str = doc("the failure, one line")
    action: RetryAction = doc("retry the same provider, or fail over to `next_provider`")
    delay_s: float = doc("wait before the next attempt (0 for a failover)", minimum=0)
    next_provider: str = doc("the provider of the next attempt")
    discarded_chars: int = doc(
        "characters of this turn's streamed text that are void: drop them, the next attempt streams "
        "the answer again from its start",
        minimum=0,
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class LlmEnd(EventData):
    """The model answered."""

    TYPE: ClassVar[str] = "llm_end"
    turn: int = doc("1-based turn number", minimum=1)
    stop_reason: str = doc("why the model stopped (stop, tool_calls, length, ...)")
    provider: str = doc("the provider that answered")
    model: str = doc("the model that answered")
    usage: TokenUsage = doc("tokens of this call")
    text_chars: int = doc("length of the answer text", minimum=0)
    tool_calls: tuple[str, ...] = doc("names of the tools the model asked for, in order")


TOOL_KIND_DOC = (
    "what the call does: read, edit, delete, move, search, execute, fetch, think or other "
    "(lich_core.agent.targets; the same for every face)"
)
TOOL_TARGET_DOC = "what it works on (a file and lines, a command, a URL or a query), or null"
TOOL_TITLE_DOC = "the call in one line: the tool and what it works on"


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallStart(EventData):
    """A tool call starts."""

    TYPE: ClassVar[str] = "tool_call_start"
    turn: int = doc("1-based turn number", minimum=1)
    call_id: str = doc("the call's id (unique within the turn)")
    name: str = doc("the tool")
    arguments: dict[str, Any] = doc("the parsed arguments ({} when they were not valid JSON)")
    kind: ToolKind = doc(TOOL_KIND_DOC)
    target: ToolTarget | None = doc(TOOL_TARGET_DOC)
    title: str = doc(TOOL_TITLE_DOC)


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallEnd(EventData):
    """A tool call ended."""

    TYPE: ClassVar[str] = "tool_call_end"
    turn: int = doc("1-based turn number", minimum=1)
    call_id: str = doc("the call's id")
    name: str = doc("the tool")
    ok: bool = doc("the call succeeded")
    error: str | None = doc("the tool's error when not ok ('prefix: detail'), else null")
    summary: str = doc("the start of the result the model sees (300 characters)")
    duration_ms: float = doc("wall time of the call", minimum=0)
    kind: ToolKind = doc(TOOL_KIND_DOC)
    target: ToolTarget | None = doc(TOOL_TARGET_DOC)
    title: str = doc(TOOL_TITLE_DOC)


@dataclass(frozen=True, kw_only=True, slots=True)
class CompressStart(EventData):
    """The history neared the context budget: older turns are being summarised."""

    TYPE: ClassVar[str] = "compress_start"
    turn: int = doc("1-based turn number", minimum=1)
    messages: int = doc("messages in the history", minimum=0)
    estimated_tokens: int = doc("estimated size of the history", minimum=0)


@dataclass(frozen=True, kw_only=True, slots=True)
class CompressEnd(EventData):
    """Compression ended (a failed one never ends the run)."""

    TYPE: ClassVar[str] = "compress_end"
    turn: int = doc("1-based turn number", minimum=1)
    ok: bool = doc("the history was replaced by a smaller one")
    error: str | None = doc("why not, when not ok (e.g. summary_not_smaller, cancelled), else null")
    before_tokens: int | None = optional(
        "estimated tokens before (absent when cancelled)", minimum=0
    )
    after_tokens: int | None = optional("estimated tokens after (absent when cancelled)", minimum=0)
    removed_messages: int | None = optional(
        "messages summarised away (absent when cancelled)", minimum=0
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class FinalAnswer(EventData):
    """The model answered without asking for tools: the run's answer."""

    TYPE: ClassVar[str] = "final"
    turn: int = doc("1-based turn number", minimum=1)
    text: str = doc("the whole answer (also when it was streamed)")


@dataclass(frozen=True, kw_only=True, slots=True)
class BudgetExhausted(EventData):
    """The last allowed turn asked for tools: they are not run."""

    TYPE: ClassVar[str] = "budget_exhausted"
    turn: int = doc("1-based turn number", minimum=1)
    max_turns: int = doc("model calls allowed", minimum=1)
    skipped_calls: tuple[str, ...] = doc("names of the tool calls not run")


@dataclass(frozen=True, kw_only=True, slots=True)
class TurnEnd(EventData):
    """A turn ended."""

    TYPE: ClassVar[str] = "turn_end"
    turn: int = doc("1-based turn number", minimum=1)


@dataclass(frozen=True, kw_only=True, slots=True)
class RunEnd(EventData):
    """The run ended (last event of every run)."""

    TYPE: ClassVar[str] = "run_end"
    stopped_reason: StoppedReason = doc(
        "final: answered; budget: turns ran out; aborted: cancelled; error"
    )
    turns_used: int = doc("model calls made", minimum=0)
    usage: TokenUsage = doc("tokens of the whole run")
    error: str | None = doc("what failed when stopped_reason is error, else null")


@dataclass(frozen=True, kw_only=True, slots=True)
class RunError(EventData):
    """The run failed (a run_end with stopped_reason error follows)."""

    TYPE: ClassVar[str] = "error"
    kind: str = doc("a provider error kind (auth, network, ...), session or internal")
    message: str = doc("the failure, one line")
    turn: int | None = optional(
        "the turn that failed (absent for session and internal errors)", minimum=1
    )
    summary: str | None = optional(
        "a provider failure in plain words for the user, without config names or kinds"
        " (`message` keeps the details)"
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class PluginWarning(EventData):
    """A plugin failed to load (repeated at each run start) or a hook threw; the run goes on."""

    TYPE: ClassVar[str] = "plugin_warning"
    message: str = doc("what failed")
    plugin: str | None = optional("the plugin whose hook failed (absent for load errors)")


@dataclass(frozen=True, kw_only=True, slots=True)
class PlanUpdate(EventData):
    """The model stated or changed its plan (update_plan): the whole plan, replacing the last one."""

    TYPE: ClassVar[str] = "plan"
    entries: tuple[PlanEntry, ...] = doc("the steps, in order", minItems=1)
    explanation: str | None = optional("why the plan is what it is, or what changed")

    @classmethod
    def from_reported(
        cls, entries: Sequence[Mapping[str, str]], explanation: str | None
    ) -> PlanUpdate:
        """From update_plan's plain entries ({content, status, priority}, already checked)."""
        plan = tuple(PlanEntry(**entry) for entry in entries)  # type: ignore[arg-type]
        return cls(entries=plan, explanation=explanation)


@dataclass(frozen=True, kw_only=True, slots=True)
class ApprovalAsked(EventData):
    """A tool call waits for the user's approval. Sent just before the question itself (a
    window/showMessageRequest whose message is `question`, or a pending question `id`), so a
    client shows the question from this data instead of reading its text."""

    TYPE: ClassVar[str] = "approval"
    turn: int = doc("1-based turn number", minimum=1)
    call_id: str = doc("the waiting tool call's id (its tool_call_start came before)")
    id: str = doc("the question's id (for a pending question, the id lich.answerQuestion takes)")
    tool: str = doc("the tool")
    capability: str | None = doc("the tool's capability (process/exec, net/fetch, ...), or null")
    kind: ToolKind = doc(TOOL_KIND_DOC)
    target: ToolTarget | None = doc(TOOL_TARGET_DOC)
    command: str | None = doc("the command line or code the call runs, or null")
    cwd: str | None = doc("the directory it runs in, when it runs something, else null")
    host: str | None = doc(
        "the host a net/fetch call reaches (an 'always' answer is for it), or null"
    )
    what_will_run: str | None = doc(
        "what the call starts, in a sentence (command line, interpreter, repository files it "
        "loads), or null"
    )
    question: str = doc("the question's text, exactly as the request's message")
    options: tuple[str, ...] = doc("the answers offered, in order (Allow once, Allow always, Deny)")


EVENT_DATA: dict[str, type[EventData]] = {
    cls.TYPE: cls
    for cls in (
        RunStart,
        TurnStart,
        LlmStart,
        TextDelta,
        LlmRetry,
        LlmEnd,
        ToolCallStart,
        ToolCallEnd,
        CompressStart,
        CompressEnd,
        FinalAnswer,
        BudgetExhausted,
        TurnEnd,
        RunEnd,
        RunError,
        PluginWarning,
        PlanUpdate,
        ApprovalAsked,
    )
}


@dataclass(frozen=True, slots=True)
class AgentEvent:
    type: str
    run_id: str
    session_id: str
    seq: int
    ts: float  # seconds since the epoch
    data: EventData

    def __post_init__(self) -> None:
        if self.type != self.data.TYPE:
            raise ValueError(f"event type {self.type!r} with data of {self.data.TYPE!r}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "run_id": self.run_id,
            "session_id": self.session_id,
            "seq": self.seq,
            "ts": self.ts,
            "data": self.data.to_dict(),
        }

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> AgentEvent:
        """Parse a wire event (a `lich/event`'s `task_id` is ignored); ValueError when malformed."""
        kind = payload.get("type")
        data_cls = EVENT_DATA.get(kind) if isinstance(kind, str) else None
        if data_cls is None:
            raise ValueError(f"unknown event type {kind!r}")
        return cls(
            data_cls.TYPE,
            str(payload["run_id"]),
            str(payload["session_id"]),
            int(payload["seq"]),
            float(payload["ts"]),
            data_cls.from_dict(payload.get("data") or {}),
        )


# A listener may be a plain function or a coroutine function.
EventListener = Callable[[AgentEvent], "Awaitable[None] | None"]


class EventEmitter:
    """Numbers events for one run and hands them to the listener.

    A listener that raises is logged and otherwise ignored: rendering must never break a run.

    Between `hold()` and `release()` events are queued, then delivered in order (numbered and
    stamped as they are delivered). The agent loop holds the bookkeeping events that precede a
    model call (run_start, turn_start, llm_start) until the call's request is on the wire, so
    they reach the listener while the provider thinks rather than before the request goes out;
    a hold ends by itself after `max_s`, so a slow connect never leaves the listener waiting.
    `defer(work)` queues work itself (building an event, writing the session's first records)
    in the same order, so it too runs only once the request is out.
    """

    def __init__(self, run_id: str, session_id: str, listener: EventListener | None) -> None:
        self.run_id = run_id
        self.session_id = session_id
        self._listener = listener
        self._seq = 0
        # Coroutines of async listeners started from synchronous callbacks (streamed text, a
        # release); awaited before the next event so a listener sees events in order.
        self._pending: list[asyncio.Future[Any]] = []
        # Held events, and deferred work (callables) in their place in the order.
        self._held: list[EventData | Callable[[], None]] | None = None
        # Ends the hold after its `max_s`; cancelled by an earlier release().
        self._hold_timer: asyncio.TimerHandle | None = None

    def _event(self, data: EventData) -> AgentEvent:
        self._seq += 1
        return AgentEvent(data.TYPE, self.run_id, self.session_id, self._seq, time.time(), data)

    def hold(self, max_s: float) -> None:
        """Queue events (and deferred work) from now until release(), or for `max_s` at most."""
        if self._held is None:
            self._held = []
            self._hold_timer = asyncio.get_running_loop().call_later(max_s, self.release)

    @property
    def holding(self) -> bool:
        return self._held is not None

    def defer(self, work: Callable[[], None]) -> None:
        """Run `work` where it stands among the held events when they are delivered; at once when
        nothing is held. It emits with emit_nowait; an error in it is logged, never raised."""
        if self._held is not None:
            self._held.append(work)
        else:
            _run_deferred(work)

    def release(self) -> None:
        """Deliver the held events and run the deferred work, in order, and stop holding (a
        no-op when not holding).

        Synchronous, so a transport callback or a timer can call it: an async listener's
        coroutines are scheduled in order, as for emit_nowait.
        """
        held, self._held = self._held, None
        if self._hold_timer is not None:
            self._hold_timer.cancel()
            self._hold_timer = None
        for item in held or ():
            if callable(item):
                _run_deferred(item)
            elif self._listener is not None:
                self._deliver_nowait(self._event(item))

    async def emit(self, data: EventData) -> None:
        listener = self._listener
        if listener is None:
            return
        if self._held is not None:
            self._held.append(data)
            return
        if self._pending:
            await self.drain()
        event = self._event(data)
        try:
            outcome = listener(event)
            # A plain function returns None: skip the (abc-based, slow) awaitable check.
            if outcome is not None and inspect.isawaitable(outcome):
                await outcome
        except Exception:  # noqa: BLE001 - a broken renderer must not end the run
            log.warning("event listener failed on %s", event.type, exc_info=True)

    def emit_nowait(self, data: EventData) -> None:
        """For synchronous callbacks (streamed text): an async listener's coroutine is scheduled."""
        if self._listener is None:
            return
        if self._held is not None:
            self._held.append(data)
            return
        self._deliver_nowait(self._event(data))

    def _deliver_nowait(self, event: AgentEvent) -> None:
        listener = self._listener
        if listener is None:
            return
        try:
            outcome = listener(event)
            if outcome is not None and inspect.isawaitable(outcome):
                self._pending.append(asyncio.ensure_future(_ordered(self._pending[-1:], outcome)))
        except Exception:  # noqa: BLE001
            log.warning("event listener failed on %s", event.type, exc_info=True)

    async def drain(self) -> None:
        pending, self._pending = self._pending, []
        for task in pending:
            try:
                await task
            except Exception:  # noqa: BLE001
                log.warning("event listener failed", exc_info=True)


def _run_deferred(work: Callable[[], None]) -> None:
    try:
        work()
    except Exception:  # noqa: BLE001 - it may run from a timer or a transport callback
        log.warning("deferred run bookkeeping failed", exc_info=True)


async def _ordered(before: list[asyncio.Future[Any]], outcome: Awaitable[Any]) -> None:
    """Run an async listener's coroutine only after the previously scheduled one finished."""
    for task in before:
        try:
            await asyncio.shield(task)
        except Exception:  # noqa: BLE001
            pass
    await outcome


# --- the JSON Schema of `lich/event` ---

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "docs" / "lich-event.schema.json"
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
# What the language server adds to AgentEvent.to_dict() (lich_lsp/tasks.py).
SERVER_ENVELOPE_FIELDS: dict[str, dict[str, Any]] = {
    "task_id": {
        "type": "string",
        "description": "the language server's task id (t1, t2, ...); absent outside it",
    },
    "thread": {
        "type": "string",
        "description": "the conversation the task is a turn of (its session_id); absent outside the language server",
    },
}
CUT_DOC = (
    "set by the language server when the event did not fit in one message even with its strings cut: "
    "only the data's short scalar fields are kept"
)
_ENVELOPE: dict[str, dict[str, Any]] = {
    "run_id": {"type": "string", "description": "the run (hex digits, unique per process and run)"},
    "session_id": {
        "type": "string",
        "description": "the session the run belongs to ('' when none could be opened)",
    },
    "seq": {
        "type": "integer",
        "minimum": 1,
        "description": "1, 2, 3, ... within a run (a coalesced text_delta has its last delta's)",
    },
    "ts": {"type": "number", "description": "seconds since the epoch"},
}


def _type_schema(annotation: Any, defs: dict[str, Any]) -> dict[str, Any]:
    return type_schema(annotation, defs, _object_schema)


def _field_schema(
    item: dataclasses.Field[Any], annotation: Any, defs: dict[str, Any]
) -> dict[str, Any]:
    schema = _type_schema(annotation, defs)
    extra = dict(item.metadata.get("schema") or {})
    if "$ref" in schema and extra:
        schema = {"allOf": [schema]}
    if item.metadata.get("doc"):
        schema["description"] = item.metadata["doc"]
    schema.update(extra)
    return schema


def _object_schema(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    hints = get_type_hints(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for item in dataclasses.fields(cls):
        properties[item.name] = _field_schema(item, hints[item.name], defs)
        if not item.metadata.get("omit_if_none"):
            required.append(item.name)
    schema: dict[str, Any] = {"type": "object"}
    if cls.__doc__:
        schema["description"] = " ".join(cls.__doc__.split())
    schema.update({"properties": properties, "required": required, "additionalProperties": False})
    return schema


def _cut_schema(cls: type[EventData], full: dict[str, Any]) -> dict[str, Any]:
    """What clip_event (lich_lsp/tasks.py) leaves of this type's data: short scalars and `cut`."""
    kept = {
        name: {key: value for key, value in prop.items() if key != "description"}
        for name, prop in full["properties"].items()
        if set(_as_list(prop.get("type"))) & {"string", "boolean", "integer", "number"}
    }
    return {
        "type": "object",
        "description": f"{cls.TYPE} data cut down: {CUT_DOC}",
        "properties": {**kept, "cut": {"type": "string", "description": "what was cut and why"}},
        "required": ["cut"],
        "additionalProperties": False,
    }


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def event_schema() -> dict[str, Any]:
    """The JSON Schema of a `lich/event` notification's params (AgentEvent.to_dict() + server fields)."""
    defs: dict[str, Any] = {}
    events: dict[str, Any] = {}
    for type_name in EVENT_TYPES:
        cls = EVENT_DATA[type_name]
        data = _object_schema(cls, defs)
        defs[cls.__name__] = data
        defs[f"{cls.__name__}Cut"] = _cut_schema(cls, data)
        events[type_name] = {
            "type": "object",
            "description": data.get("description", type_name),
            "properties": {
                "type": {"const": type_name},
                **_ENVELOPE,
                **SERVER_ENVELOPE_FIELDS,
                "data": {
                    "anyOf": [
                        {"$ref": f"#/$defs/{cls.__name__}"},
                        {"$ref": f"#/$defs/{cls.__name__}Cut"},
                    ]
                },
            },
            "required": ["type", *_ENVELOPE, "data"],
            "additionalProperties": False,
        }
    return {
        "$schema": SCHEMA_DIALECT,
        "$comment": (
            "Generated from the dataclasses in lich_core/agent/events.py by "
            "`python -m lich_core.agent.events --schema`; do not edit by hand."
        ),
        "title": "lich/event",
        "description": (
            "One agent event as the language server sends it in a lich/event notification: "
            "AgentEvent.to_dict() plus task_id and thread. See docs/agent.md (Events) and docs/lsp.md."
        ),
        "oneOf": [{"$ref": f"#/$defs/{type_name}"} for type_name in EVENT_TYPES],
        "$defs": {**events, **dict(sorted(defs.items()))},
    }


def schema_text() -> str:
    """The schema file's exact contents."""
    return json.dumps(event_schema(), indent=2, ensure_ascii=False) + "\n"


def write_schema(path: Path = SCHEMA_PATH) -> Path:
    path.write_text(schema_text(), encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lich_core.agent.events",
        description="The JSON Schema of agent events (lich/event).",
    )
    parser.add_argument(
        "--schema", action="store_true", help=f"write the schema (default {SCHEMA_PATH})"
    )
    parser.add_argument("--out", default=None, help="where to write it ('-' for stdout)")
    args = parser.parse_args(argv)
    if not args.schema:
        parser.print_usage(sys.stderr)
        return 2
    if args.out == "-":
        sys.stdout.write(schema_text())
        return 0
    print(write_schema(Path(args.out) if args.out else SCHEMA_PATH))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
