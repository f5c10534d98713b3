"""Session records and JSON text built without json.dumps' per-call encoder: the bytes written
must be the ones json.dumps(..., ensure_ascii=False) gives, whatever the messages hold.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from lich_core.agent.messages import Message, ToolCall
from lich_core.agent.sessions import SessionStore, message_json
from lich_core.vocabulary import ToolResult, format_tool_result, json_text

AWKWARD = 'quote " backslash \\ tab \t nl \n nul \x00 del \x7f é 中文 🙂 \u2028 \u2029 lone \ud800 </script>'

MESSAGES = [
    Message(role="system", content=""),
    Message(role="user", content=AWKWARD),
    Message(
        role="assistant",
        content="working",
        tool_calls=[ToolCall(id="c1", name="noop", arguments={"n": 1})],
    ),
    Message(
        role="assistant",
        content="",
        tool_calls=[
            ToolCall(
                id="a",
                name="edit",
                arguments={"path": AWKWARD, "nested": {"list": [1, 2.5, None, True]}},
            ),
            ToolCall(id="b", name="bad", arguments={}, raw_arguments='{"unterminated'),
            ToolCall(id=AWKWARD, name=AWKWARD, arguments={"k": float("nan"), "i": float("-inf")}),
        ],
    ),
    Message(role="tool", content="ok 1", tool_call_id="c1", name="noop"),
    Message(role="tool", content=AWKWARD, tool_call_id="", name=""),
    Message(role="tool", content="no name", tool_call_id="x"),
    Message(role="assistant", content="named", name="someone"),
]


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


@pytest.mark.parametrize("message", MESSAGES, ids=range(len(MESSAGES)))
def test_a_message_encodes_as_its_dict_does(message: Message) -> None:
    assert message_json(message) == _dumps(message.to_dict())


def test_fields_of_an_unexpected_type_go_through_the_dict() -> None:
    odd: list[Any] = [
        Message(role="user", content=7),  # type: ignore[arg-type]
        Message(role="tool", content="x", tool_call_id=12, name=None),  # type: ignore[arg-type]
        # The shape of a tool result (id and name, no calls), with a field of another type.
        Message(role="tool", content="x", tool_call_id=12, name="n"),  # type: ignore[arg-type]
        Message(role="tool", content=3.5, tool_call_id="i", name="n"),  # type: ignore[arg-type]
        Message(role="tool", content="x", tool_call_id="i", name=["n"]),  # type: ignore[arg-type]
        Message(role="assistant", tool_calls=[ToolCall(id=None, name="n", arguments={})]),  # type: ignore[arg-type]
        Message(role="assistant", tool_calls=[ToolCall(id="i", name="n", arguments=[1, 2])]),  # type: ignore[arg-type]
    ]
    for message in odd:
        assert message_json(message) == _dumps(message.to_dict())
    with pytest.raises(TypeError):
        message_json(Message(role="user", content=object()))  # type: ignore[arg-type]


def test_json_text_is_json_dumps_without_ascii_escapes() -> None:
    values: list[Any] = [
        AWKWARD,
        "",
        0,
        -1.5,
        1e300,
        float("nan"),
        None,
        True,
        [],
        {},
        {"a": [1, {"b": AWKWARD}], "c": None},
        {1: "int key", 2.5: "float key", False: "bool key", None: "null key"},
        [[[]], {"": ""}],
        ("a", "tuple"),
    ]
    for value in values:
        assert json_text(value) == _dumps(value), value
    with pytest.raises(TypeError, match="not JSON serializable"):
        json_text({"a": object()})
    with pytest.raises(TypeError):
        json_text({("tuple", "key"): 1})
    error = ToolResult(ok=False, error=AWKWARD)
    assert format_tool_result(error) == _dumps({"ok": False, "output": "", "error": AWKWARD})


def test_the_session_file_holds_the_records_json_dumps_would_write(tmp_path) -> None:
    store = SessionStore(tmp_path / "sessions")
    writer = store.create(work_dir=str(tmp_path), title="t")
    for message in MESSAGES:
        writer.message(message)
    writer.append({"type": "run", "event": "end", "run_id": "r", "note": AWKWARD})
    writer.close()
    # split("\n"), not splitlines(): U+2028 in a string is written as is, and is not a line end.
    raw = writer.path.read_bytes().decode("utf-8", "surrogatepass").split("\n")
    assert raw.pop() == ""  # the last record ends its line
    assert len(raw) == 1 + len(MESSAGES) + 1
    for line, message in zip(raw[1:], MESSAGES, strict=False):
        ts = json.loads(line)["ts"]
        assert isinstance(ts, float)
        assert line == _dumps({"type": "message", "ts": ts, "message": message.to_dict()})
    assert raw[-1] == _dumps({"type": "run", "event": "end", "run_id": "r", "note": AWKWARD})
