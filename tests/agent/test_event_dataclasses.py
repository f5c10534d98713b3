"""The event dataclasses' constructors (events._fast_frozen_init): built without the frozen
dataclass's per-field object.__setattr__, they must still take exactly the arguments the
dataclass declares, fill in its defaults, and stay frozen.
"""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from typing import Any

import pytest

from lich_core.agent.events import (
    EVENT_DATA,
    AgentEvent,
    EventEmitter,
    LlmEnd,
    PlanEntry,
    RunError,
    TokenUsage,
    TurnEnd,
    TurnStart,
    _fast_frozen_init,
)

CLASSES: list[type[Any]] = [TokenUsage, PlanEntry, AgentEvent, *EVENT_DATA.values()]


def _expected_parameters(cls: type[Any]) -> list[tuple[str, Any, Any]]:
    """(name, kind, default) of the __init__ the dataclass itself would generate."""
    fields = dataclasses.fields(cls)
    ordered = [f for f in fields if not f.kw_only] + [f for f in fields if f.kw_only]
    return [
        (
            f.name,
            inspect.Parameter.KEYWORD_ONLY if f.kw_only else inspect.Parameter.POSITIONAL_OR_KEYWORD,
            inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default,
        )
        for f in ordered
    ]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_the_constructor_has_the_dataclass_signature(cls: type[Any]) -> None:
    parameters = list(inspect.signature(cls).parameters.values())
    assert [(p.name, p.kind, p.default) for p in parameters] == _expected_parameters(cls)
    assert cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__"
    # The fast __init__ is the one in use (the dataclass's own would be right, but slow).
    assert cls.__init__.__code__.co_filename == f"<__init__ of {cls.__qualname__}>"


@pytest.mark.parametrize("cls", [c for c in CLASSES if c is not AgentEvent], ids=lambda cls: cls.__name__)
def test_keyword_only_required_and_unknown_arguments_are_refused(cls: type[Any]) -> None:
    required = [f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING]
    with pytest.raises(TypeError):
        cls(*range(len(dataclasses.fields(cls))))  # positional: every data field is keyword-only
    values = {name: index for index, name in enumerate(required)}
    if required:
        missing = dict(values)
        del missing[required[-1]]
        with pytest.raises(TypeError, match=required[-1]):
            cls(**missing)
    with pytest.raises(TypeError, match="no_such_field"):
        cls(**values, no_such_field=1)
    made = cls(**values)
    for item in dataclasses.fields(cls):
        expected = values[item.name] if item.name in values else item.default
        assert getattr(made, item.name) == expected


def test_instances_are_frozen_slotted_values() -> None:
    usage = TokenUsage(input_tokens=3, output_tokens=4)
    end = LlmEnd(
        turn=2,
        stop_reason="tool_calls",
        provider="p",
        model="m",
        usage=usage,
        text_chars=5,
        tool_calls=("read_file",),
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        end.turn = 3  # type: ignore[misc]
    with pytest.raises((AttributeError, TypeError)):
        end.extra = 1  # type: ignore[attr-defined]
    assert not hasattr(end, "__dict__")
    same = LlmEnd(
        turn=2,
        stop_reason="tool_calls",
        provider="p",
        model="m",
        usage=TokenUsage(input_tokens=3, output_tokens=4),
        text_chars=5,
        tool_calls=("read_file",),
    )
    assert end == same and hash(end) == hash(same)
    assert dataclasses.replace(end, turn=3).turn == 3 and end.turn == 2
    assert end.to_dict()["usage"] == {"input_tokens": 3, "output_tokens": 4}
    # Optional fields default to None and stay off the wire.
    assert RunError(kind="network", message="down").to_dict() == {"kind": "network", "message": "down"}


def test_an_event_checks_its_type_against_its_data_and_takes_positional_arguments() -> None:
    data = TurnStart(turn=1, max_turns=5)
    event = AgentEvent("turn_start", "r", "s", 1, 2.5, data)
    assert (event.type, event.run_id, event.session_id, event.seq, event.ts, event.data) == (
        "turn_start",
        "r",
        "s",
        1,
        2.5,
        data,
    )
    assert AgentEvent(type="turn_start", run_id="r", session_id="s", seq=1, ts=2.5, data=data) == event
    with pytest.raises(ValueError, match="turn_end"):
        AgentEvent("turn_end", "r", "s", 1, 2.5, data)
    with pytest.raises(TypeError):
        AgentEvent("turn_start", "r", "s", 1, 2.5)  # type: ignore[call-arg]


def test_a_dataclass_it_cannot_handle_keeps_its_own_constructor() -> None:
    @dataclasses.dataclass(frozen=True)
    class WithFactory:
        items: list[int] = dataclasses.field(default_factory=list)

    generated = WithFactory.__init__
    assert _fast_frozen_init(WithFactory) is WithFactory
    assert WithFactory.__init__ is generated
    assert WithFactory().items == [] and WithFactory().items is not WithFactory().items


async def test_the_emitters_events_are_plain_frozen_agent_events() -> None:
    seen: list[AgentEvent] = []
    emitter = EventEmitter("run1", "sess1", seen.append)
    data = TurnStart(turn=1, max_turns=5)
    await emitter.emit(data)
    emitter.emit_nowait(TurnEnd(turn=1))
    event = seen[0]
    assert type(event) is AgentEvent and not hasattr(event, "__dict__")
    assert event == AgentEvent("turn_start", "run1", "sess1", 1, event.ts, data)
    assert hash(event) == hash(AgentEvent("turn_start", "run1", "sess1", 1, event.ts, data))
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.seq = 2  # type: ignore[misc]
    assert dataclasses.replace(event, seq=9).seq == 9 and event.seq == 1
    assert pickle.loads(pickle.dumps(event)) == event
    assert repr(event).startswith("AgentEvent(type='turn_start', run_id='run1'")
    assert [(e.type, e.seq) for e in seen] == [("turn_start", 1), ("turn_end", 2)]
    assert event.to_dict() == {
        "type": "turn_start",
        "run_id": "run1",
        "session_id": "sess1",
        "seq": 1,
        "ts": event.ts,
        "data": {"turn": 1, "max_turns": 5},
    }
