"""A run's start: its bookkeeping (run_start, turn_start, llm_start, the session's first records)
waits until the first request is out, and never changes what the run records or in what order."""

from __future__ import annotations

import json
import logging
import sys

import pytest
from agent_helpers import EventLog, RecordingTools, make_config, make_runtime
from scripted_model import ScriptedModel, Turn, provider_error

from lich_core.agent.events import AgentEvent, EventEmitter, TextDelta, TurnEnd, TurnStart
from lich_core.agent.loop import Agent
from lich_core.agent.sessions import SessionStore
from lich_core.providers.base import NO_CALL_OPTIONS
from lich_core.tools.capabilities import CapabilityGate
from lich_core.tools.types import FunctionTool, ToolResult

needs_311 = pytest.mark.skipif(
    sys.version_info < (3, 11), reason="the loop races the model on 3.10 (no Task.cancelling)"
)


def session_records(store: SessionStore) -> list[dict]:
    files = sorted(store.directory.glob("*.jsonl"))
    assert len(files) <= 1
    if not files:
        return []
    return [json.loads(line) for line in files[0].read_text(encoding="utf-8").splitlines()]


def kinds(records: list[dict]) -> list[str]:
    return [
        r["message"]["role"] if r["type"] == "message" else f"{r['type']}:{r.get('event', '')}"
        for r in records
    ]


class SessionWatchingModel(ScriptedModel):
    """Says when its request is sent (like the HTTP providers) and reads the session file and
    the listener's events just before and just after saying so."""

    stops_on_cancel = True
    reports_sent = True

    def __init__(
        self, *turns: Turn, store: SessionStore, log: EventLog, sends: bool = True
    ) -> None:
        super().__init__(*turns)
        self.store = store
        self.log = log
        self.sends = sends
        self.before: list[tuple[list[str], list[str]]] = []
        self.after: list[tuple[list[str], list[str]]] = []

    async def complete(self, messages, tools, options=NO_CALL_OPTIONS):
        self.before.append((kinds(session_records(self.store)), self.log.types()))
        if options.on_sent is not None and self.sends:
            options.on_sent()
        self.after.append((kinds(session_records(self.store)), self.log.types()))
        return await super().complete(messages, tools, options)


def build(tmp_path, model, store: SessionStore) -> Agent:
    cfg = make_config(tmp_path)
    return Agent(
        model=model,
        runtime=make_runtime(cfg, RecordingTools().tools()),
        config=cfg,
        session_store=store,
    )


@needs_311
async def test_the_session_records_of_the_start_are_written_once_the_request_is_out(
    tmp_path,
) -> None:
    store = SessionStore(tmp_path / "sessions")
    events = EventLog()
    model = SessionWatchingModel(Turn(text="done"), store=store, log=events)
    result = await build(tmp_path, model, store).run("go", on_event=events)
    assert result.stopped_reason == "final"
    # The session file exists (it was opened before anything was sent) but holds only its header...
    assert model.before == [(["meta:"], [])]
    # ...until the request is out: then the run's start and the messages sent.
    assert model.after == [
        (["meta:", "run:start", "system", "user"], ["run_start", "turn_start", "llm_start"])
    ]
    assert kinds(session_records(store)) == [
        "meta:",
        "run:start",
        "system",
        "user",
        "assistant",
        "run:end",
    ]
    assert {e.session_id for e in events.events} == {result.session_id}


@needs_311
async def test_a_run_without_a_listener_still_records_its_start(tmp_path) -> None:
    store = SessionStore(tmp_path / "sessions")
    model = SessionWatchingModel(Turn(text="done"), store=store, log=EventLog())
    result = await build(tmp_path, model, store).run("go")
    assert result.stopped_reason == "final"
    assert model.after[0][0] == ["meta:", "run:start", "system", "user"]
    assert kinds(session_records(store)) == [
        "meta:",
        "run:start",
        "system",
        "user",
        "assistant",
        "run:end",
    ]


@needs_311
async def test_the_start_is_recorded_when_the_call_fails_before_sending(tmp_path) -> None:
    store = SessionStore(tmp_path / "sessions")
    events = EventLog()
    model = SessionWatchingModel(
        Turn(error=provider_error("network", "connection refused")),
        store=store,
        log=events,
        sends=False,
    )
    result = await build(tmp_path, model, store).run("go", on_event=events)
    assert result.stopped_reason == "error"
    assert events.types() == ["run_start", "turn_start", "llm_start", "error", "run_end"]
    assert kinds(session_records(store)) == ["meta:", "run:start", "system", "user", "run:end"]


@needs_311
async def test_a_resumed_run_records_only_its_new_messages(tmp_path) -> None:
    store = SessionStore(tmp_path / "sessions")
    first = await build(
        tmp_path, SessionWatchingModel(Turn(text="one"), store=store, log=EventLog()), store
    ).run("a")
    model = SessionWatchingModel(Turn(text="two"), store=store, log=EventLog())
    result = await build(tmp_path, model, store).run("b", resume=first.session_id)
    assert result.stopped_reason == "final"
    assert [m.role for m in model.calls[0]] == ["system", "user", "assistant", "user"]
    assert kinds(session_records(store)) == [
        "meta:", "run:start", "system", "user", "assistant", "run:end",
        "run:start", "user", "assistant", "run:end",
    ]  # fmt: skip


async def test_a_session_that_cannot_be_opened_ends_the_run_before_any_request(tmp_path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the session directory should be")
    store = SessionStore(blocker / "sessions")
    events = EventLog()
    model = SessionWatchingModel(
        Turn(text="never"), store=SessionStore(tmp_path / "unused"), log=events
    )
    result = await build(tmp_path, model, store).run("go", on_event=events)
    assert result.stopped_reason == "error"
    assert model.calls == [] and model.before == []
    assert events.types() == ["run_start", "error", "run_end"]
    assert events.of("error")[0].data.kind == "session"


# --- EventEmitter.defer ---


async def test_deferred_work_runs_in_its_place_among_the_held_events() -> None:
    seen: list[AgentEvent] = []
    emitter = EventEmitter("run1", "sess1", seen.append)
    ran: list[int] = []
    emitter.hold(60)
    await emitter.emit(TurnEnd(turn=1))
    emitter.defer(
        lambda: (ran.append(len(seen)), emitter.emit_nowait(TurnStart(turn=2, max_turns=5)))
    )
    emitter.emit_nowait(TextDelta(turn=2, text="a"))
    assert seen == [] and ran == []
    emitter.release()
    # The work ran after the first held event was delivered, and its event kept its place.
    assert ran == [1]
    assert [(e.type, e.seq) for e in seen] == [
        ("turn_end", 1),
        ("turn_start", 2),
        ("text_delta", 3),
    ]


async def test_deferred_work_runs_at_once_when_nothing_is_held() -> None:
    emitter = EventEmitter("run1", "sess1", None)
    ran: list[str] = []
    emitter.defer(lambda: ran.append("now"))
    assert ran == ["now"]


async def test_deferred_work_is_held_without_a_listener_too() -> None:
    emitter = EventEmitter("run1", "sess1", None)
    ran: list[str] = []
    emitter.hold(60)
    emitter.defer(lambda: ran.append("later"))
    assert ran == []
    emitter.release()
    assert ran == ["later"]


async def test_a_failing_deferred_work_is_logged_and_the_rest_still_delivered(caplog) -> None:
    seen: list[AgentEvent] = []
    emitter = EventEmitter("run1", "sess1", seen.append)
    emitter.hold(60)

    def broken() -> None:
        raise RuntimeError("disk on fire")

    emitter.defer(broken)
    await emitter.emit(TurnEnd(turn=1))
    with caplog.at_level(logging.WARNING, logger="lich.agent"):
        emitter.release()
    assert [e.type for e in seen] == ["turn_end"]
    assert any("deferred" in record.getMessage() for record in caplog.records)


# --- the tool list offered to the model ---


async def _noop(args, ctx) -> ToolResult:
    return ToolResult(ok=True, output="")


def _tool(name: str, capability: str = "file/read") -> FunctionTool:
    tool = FunctionTool(name, f"{name} tool", {"type": "object"}, _noop)
    tool.capability = capability
    return tool


def test_the_tool_list_follows_the_registry_and_the_gate(tmp_path) -> None:
    cfg = make_config(tmp_path)
    runtime = make_runtime(cfg, [_tool("alpha")])
    agent = Agent(model=ScriptedModel(), runtime=runtime, config=cfg)
    assert [d.name for d in agent.tool_definitions()] == ["alpha"]
    runtime.registry.register(_tool("beta", "process/exec"))
    assert [d.name for d in agent.tool_definitions()] == ["alpha", "beta"]
    runtime.executor.gate = CapabilityGate(["file/read"])
    assert [d.name for d in agent.tool_definitions()] == ["alpha"]
    # A caller changing the returned list does not change the next run's.
    runtime.registry.register(_tool("gamma"))
    offered = agent.tool_definitions()
    offered.clear()
    assert [d.name for d in agent.tool_definitions()] == ["alpha", "gamma"]
