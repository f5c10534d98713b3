"""The event contract: typed dataclasses -> docs/lich-event.schema.json -> the shared fixtures
(tests/fixtures/events/*.json) every renderer's tests load.

A renamed or dropped event field changes the generated schema (the file check below fails until it
is regenerated), the regenerated schema rejects the fixtures until they are updated, and updated
fixtures break the renderer tests that read the old name (vitest, headless Neovim, these).
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import io
import json

import pytest

from lich_cli.agent import ProgressPrinter
from lich_core.agent.events import (
    EVENT_DATA,
    EVENT_TYPES,
    SCHEMA_PATH,
    AgentEvent,
    EventEmitter,
    TextDelta,
    TurnEnd,
    event_schema,
    main,
    schema_text,
)
from tests.support.event_schema import (
    FIXTURES_DIR,
    SCHEMA_FILE,
    assert_valid_event,
    fixture_files,
    load_fixture,
    schema_errors,
)

FIXTURES = [path.stem for path in fixture_files()]


def test_the_schema_on_disk_is_the_generated_one() -> None:
    assert SCHEMA_FILE == SCHEMA_PATH
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text(), (
        "docs/lich-event.schema.json is stale: run `python -m lich_core.agent.events --schema`"
    )


def test_the_generator_writes_the_file(tmp_path, capsys) -> None:
    out = tmp_path / "schema.json"
    assert main(["--schema", "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == schema_text()
    assert capsys.readouterr().out.strip() == str(out)
    assert main(["--schema", "--out", "-"]) == 0
    assert json.loads(capsys.readouterr().out) == event_schema()


def test_every_event_type_has_a_frozen_dataclass_and_a_schema_branch() -> None:
    assert set(EVENT_DATA) == set(EVENT_TYPES) and len(EVENT_TYPES) == len(set(EVENT_TYPES))
    schema = event_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["oneOf"] == [{"$ref": f"#/$defs/{name}"} for name in EVENT_TYPES]
    for name in EVENT_TYPES:
        cls = EVENT_DATA[name]
        assert cls.TYPE == name
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
        branch = schema["$defs"][name]
        assert branch["properties"]["type"] == {"const": name}
        assert set(branch["required"]) == {"type", "run_id", "session_id", "seq", "ts", "data"}
        data = schema["$defs"][cls.__name__]
        assert set(data["properties"]) == {f.name for f in dataclasses.fields(cls)}
        assert data["additionalProperties"] is False


def test_the_wire_extras_are_in_the_schema() -> None:
    schema = event_schema()
    # The language server adds task_id to every event and data.coalesced to merged text deltas.
    for name in EVENT_TYPES:
        assert "task_id" in schema["$defs"][name]["properties"]
        assert "task_id" not in schema["$defs"][name]["required"]
    assert "coalesced" in schema["$defs"]["TextDelta"]["properties"]
    assert "coalesced" not in schema["$defs"]["TextDelta"]["required"]
    # ...and data.cut when the event was too large (only short scalars stay).
    assert schema["$defs"]["ToolCallStartCut"]["required"] == ["cut"]
    assert "arguments" not in schema["$defs"]["ToolCallStartCut"]["properties"]


def test_an_event_and_its_data_must_agree() -> None:
    with pytest.raises(ValueError, match="turn_start"):
        AgentEvent("turn_start", "r", "s", 1, 0.0, TurnEnd(turn=1))


async def test_the_emitter_numbers_typed_events() -> None:
    seen: list[AgentEvent] = []
    emitter = EventEmitter("run1", "sess1", seen.append)
    await emitter.emit(TurnEnd(turn=1))
    emitter.emit_nowait(TextDelta(turn=1, text="hi"))
    assert [(e.type, e.seq) for e in seen] == [("turn_end", 1), ("text_delta", 2)]
    # Optional fields that are None stay off the wire; nullable ones are sent as null.
    assert seen[1].to_dict()["data"] == {"turn": 1, "text": "hi"}
    for event in seen:
        assert_valid_event(event.to_dict())


async def test_held_events_are_delivered_in_order_on_release() -> None:
    seen: list[AgentEvent] = []
    emitter = EventEmitter("run1", "sess1", seen.append)
    emitter.hold(60)
    await emitter.emit(TurnEnd(turn=1))
    emitter.emit_nowait(TextDelta(turn=1, text="a"))
    assert seen == []
    emitter.release()
    assert [(e.type, e.seq) for e in seen] == [("turn_end", 1), ("text_delta", 2)]
    await emitter.emit(TurnEnd(turn=2))  # no longer held
    assert [e.seq for e in seen] == [1, 2, 3]
    emitter.release()  # nothing held: nothing happens
    assert len(seen) == 3


async def test_held_events_reach_an_async_listener_in_order() -> None:
    seen: list[str] = []

    async def listener(event: AgentEvent) -> None:
        await asyncio.sleep(0)
        seen.append(event.type)

    emitter = EventEmitter("run1", "sess1", listener)
    emitter.hold(60)
    await emitter.emit(TurnEnd(turn=1))
    emitter.emit_nowait(TextDelta(turn=1, text="a"))
    emitter.release()
    emitter.emit_nowait(TextDelta(turn=1, text="b"))
    await emitter.emit(TurnEnd(turn=1))
    assert seen == ["turn_end", "text_delta", "text_delta", "turn_end"]


async def test_a_hold_ends_by_itself() -> None:
    """A request that is slow to go out (a cold connect) must not hide the run from the listener."""
    delivered = asyncio.Event()
    seen: list[str] = []

    def listener(event: AgentEvent) -> None:
        seen.append(event.type)
        delivered.set()

    emitter = EventEmitter("run1", "sess1", listener)
    emitter.hold(0.01)
    await emitter.emit(TurnEnd(turn=1))
    assert seen == []
    await asyncio.wait_for(delivered.wait(), 10)
    assert seen == ["turn_end"]
    emitter.release()
    assert seen == ["turn_end"]


async def test_an_earlier_holds_deadline_does_not_end_a_later_hold() -> None:
    """Holds share one timer per loop: a deadline set for a hold that was released must not
    end the emitter's next hold, and one emitter's deadline ends no other emitter's hold."""
    later_seen: list[str] = []
    other_seen: list[str] = []
    witness_done = asyncio.Event()
    emitter = EventEmitter("run1", "sess1", lambda event: later_seen.append(event.type))
    other = EventEmitter("run2", "sess2", lambda event: other_seen.append(event.type))
    witness = EventEmitter("run3", "sess3", lambda event: witness_done.set())

    emitter.hold(0.01)
    emitter.release()
    emitter.hold(60)  # the same emitter again, now for a long time
    await emitter.emit(TurnEnd(turn=1))
    other.hold(60)
    await other.emit(TurnEnd(turn=1))
    witness.hold(0.02)  # due after the first hold's deadline
    await witness.emit(TurnEnd(turn=1))
    await asyncio.wait_for(witness_done.wait(), 10)

    assert later_seen == [] and other_seen == []
    emitter.release()
    other.release()
    assert later_seen == ["turn_end"] and other_seen == ["turn_end"]


async def test_holds_end_in_deadline_order_whatever_order_they_began() -> None:
    seen: list[str] = []
    both = asyncio.Event()

    def listener(event: AgentEvent) -> None:
        seen.append(event.run_id)
        if len(seen) == 2:
            both.set()

    slow = EventEmitter("slow", "s", listener)
    fast = EventEmitter("fast", "s", listener)
    slow.hold(0.05)
    await slow.emit(TurnEnd(turn=1))
    fast.hold(0.001)  # begun later, due first: the shared timer is re-armed earlier
    await fast.emit(TurnEnd(turn=1))
    await asyncio.wait_for(both.wait(), 10)
    assert seen == ["fast", "slow"]


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_is_a_valid_run(name: str) -> None:
    events = load_fixture(name)
    for index, event in enumerate(events):
        assert_valid_event(event, f"{name}.json[{index}]")
    assert events[0]["type"] == "run_start" and events[-1]["type"] == "run_end"
    assert len({(e["run_id"], e["session_id"], e.get("task_id")) for e in events}) == 1
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(set(seqs)), "seq must increase (a coalesced delta may skip numbers)"
    ts = [e["ts"] for e in events]
    assert ts == sorted(ts)


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_events_round_trip_through_the_dataclasses(name: str) -> None:
    for event in load_fixture(name):
        if "cut" in event["data"]:
            with pytest.raises(ValueError, match="cut"):
                AgentEvent.from_dict(event)
            continue
        wire = {key: value for key, value in event.items() if key != "task_id"}
        assert AgentEvent.from_dict(event).to_dict() == wire


def test_the_fixtures_cover_every_event_type_and_the_optional_shapes() -> None:
    assert len(FIXTURES) >= 5, FIXTURES_DIR
    events = [event for name in FIXTURES for event in load_fixture(name)]
    assert {e["type"] for e in events} == set(EVENT_TYPES)

    def some(kind: str, test) -> bool:  # type: ignore[no-untyped-def]
        return any(e["type"] == kind and test(e["data"]) for e in events)

    assert some("text_delta", lambda d: d.get("coalesced", 1) > 1)
    assert some("llm_retry", lambda d: d["discarded_chars"] > 0 and d["action"] == "retry")
    assert some("llm_retry", lambda d: d["discarded_chars"] > 0 and d["action"] == "failover")
    assert some("llm_retry", lambda d: d["discarded_chars"] == 0)
    assert some("tool_call_end", lambda d: d["ok"] is True and d["error"] is None)
    assert some("tool_call_end", lambda d: d["ok"] is False and d["error"])
    assert some("compress_end", lambda d: d["ok"] and "after_tokens" in d)
    assert some("compress_end", lambda d: not d["ok"] and "after_tokens" not in d)
    assert some("error", lambda d: "turn" in d) and some("error", lambda d: "turn" not in d)
    assert some("plugin_warning", lambda d: "plugin" in d) and some(
        "plugin_warning", lambda d: "plugin" not in d
    )
    assert some("tool_call_start", lambda d: "cut" in d)
    assert {e["data"]["stopped_reason"] for e in events if e["type"] == "run_end"} == {
        "final",
        "budget",
        "aborted",
        "error",
    }


def test_a_renamed_or_missing_field_fails_validation() -> None:
    retry = next(e for e in load_fixture("run_tools_retry") if e["type"] == "llm_retry")
    assert schema_errors(retry) == []
    renamed = copy.deepcopy(retry)
    renamed["data"]["discarded"] = renamed["data"].pop("discarded_chars")
    assert any("discarded_chars" in error for error in schema_errors(renamed))
    assert any("discarded" in error for error in schema_errors(renamed))
    invented = copy.deepcopy(
        next(e for e in load_fixture("run_tools_retry") if e["type"] == "run_start")
    )
    invented["data"]["prompt"] = "fix the bug"  # the server never sends the prompt
    assert any("prompt" in error for error in schema_errors(invented))
    wrong_type = copy.deepcopy(retry)
    wrong_type["data"]["action"] = "restart"
    assert schema_errors(wrong_type)
    no_envelope = {k: v for k, v in retry.items() if k != "seq"}
    assert any("seq" in error for error in schema_errors(no_envelope))


def _printed(name: str) -> str:
    out = io.StringIO()
    printer = ProgressPrinter(out, out)  # one stream: stdout and stderr lines in order
    for event in load_fixture(name):
        if "cut" not in event["data"]:  # the CLI renders core events, never a server-cut one
            printer(AgentEvent.from_dict(event))
    return out.getvalue()


def test_the_cli_renders_the_fixture_runs() -> None:
    assert _printed("run_tools_retry").splitlines() == [
        "lich: provider fake-model, up to 25 turns",
        "lich: warning: plugin .lich/plugins/lint.py: SyntaxError: invalid syntax (lint.py, line 3)",
        "Let me look at the file first.",
        '-> read_file {"path": "src/app.py", "end": 3}',
        "   ok read_file (4 ms)",
        '-> apply_patch {"input": "@@ src/app.py\\n= 2:9f..2:9f\\n~    return 2\\n"}',
        "   failed apply_patch (12 ms): edit_rejected: stale_document: src/app.py changed in the editor; read it again",
        "lich: compressing context (~81234 tokens)",
        "lich: compressed ~81234 -> ~9120 tokens",
        "The answe",
        "lich: fake failed (network): retrying in 0.5 s (attempt 2 of 3); the answer restarts below",
        "The answer is 42.",
        "lich: final after 2 turn(s) (tokens in 3122, out 53)",
    ]
    # The failover provider does not stream: its final answer is printed whole.
    assert _printed("run_failover").splitlines() == [
        "lich: provider a-model, up to 25 turns (resumed)",
        "Reading.",
        '-> read_file {"path": "README.md", "end": 2}',
        "   ok read_file (3 ms)",
        "lich: warning: plugin 'audit': before_llm_call raised KeyError: 'turn'",
        "héllo",
        "wor",
        "lich: a failed (bad_request): trying b; the answer restarts below",
        "Done.",
        "lich: final after 2 turn(s) (tokens in 1340, out 22)",
    ]
    assert _printed("run_budget").splitlines()[1:] == [
        "lich: turn budget exhausted (1 model calls); raise --max-turns to go on",
        "lich: budget after 1 turn(s) (tokens in 500, out 30)",
    ]
    assert _printed("run_error").splitlines()[1:] == [
        "lich: fake failed (rate_limit): retrying in 2.0 s (attempt 2 of 3)",
        "lich: error: provider 'fake' at http://127.0.0.1:8765/v1: auth: HTTP 401: invalid API key (check api_key_env)",
        "lich: error after 1 turn(s) (tokens in 0, out 0)",
    ]
    assert _printed("run_cancelled").splitlines()[1:] == [
        "   ok edit_file (85 ms)",
        "lich: compressing context (~83010 tokens)",
        "lich: compression skipped: cancelled",
        "lich: aborted after 2 turn(s) (tokens in 900, out 30000)",
    ]
