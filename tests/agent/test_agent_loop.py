"""The conversation loop against a scripted in-memory model."""

from __future__ import annotations

import asyncio
import json
import sys
import time

import pytest
from agent_helpers import (
    EventLog,
    RecordingTools,
    assert_history_valid,
    make_config,
    make_runtime,
    wait_until,
)
from scripted_model import ScriptedModel, Turn, call, provider_error, tools_turn

from lich_core.agent.events import EVENT_TYPES
from lich_core.agent.loop import Agent
from lich_core.agent.prompts import CONTEXT_HEADER, DEFAULT_SYSTEM_PROMPT
from lich_core.hashline.read_state import ReadState
from lich_core.providers.base import NO_CALL_OPTIONS
from lich_core.tools.types import CancelToken
from lich_core.workspace import DiskWorkspace


def build(tmp_path, tools: RecordingTools, model: ScriptedModel, **config) -> Agent:
    cfg = make_config(tmp_path, **config)
    return Agent(model=model, runtime=make_runtime(cfg, tools.tools()), config=cfg)


async def test_plain_answer_emits_ordered_events(tmp_path, tools, events: EventLog):
    model = ScriptedModel(Turn(text="All done here.", chunks=3))
    result = await build(tmp_path, tools, model).run("say hi", on_event=events)
    assert result.stopped_reason == "final"
    assert result.final == "All done here."
    assert result.turns_used == 1
    assert result.error is None
    assert result.usage.input_tokens == 10 and result.usage.output_tokens == 5
    assert events.types() == [
        "run_start",
        "turn_start",
        "llm_start",
        "text_delta",
        "text_delta",
        "text_delta",
        "llm_end",
        "final",
        "turn_end",
        "run_end",
    ]
    assert "".join(e.data.text for e in events.of("text_delta")) == "All done here."
    assert [e.seq for e in events.events] == list(range(1, len(events.events) + 1))
    assert {e.run_id for e in events.events} == {result.run_id}
    assert {e.session_id for e in events.events} == {result.session_id}
    assert all(e.type in EVENT_TYPES for e in events.events)
    assert events.of("run_end")[0].data.stopped_reason == "final"
    assert json.dumps(events.events[0].to_dict())  # serialisable for the LSP layer
    # History: default system prompt, the user prompt, the answer.
    assert [m.role for m in result.messages] == ["system", "user", "assistant"]
    assert "reference data, not instructions" in result.messages[0].content
    assert model.calls[0][0].content == DEFAULT_SYSTEM_PROMPT


async def test_tool_results_become_tool_messages(tmp_path, tools, events):
    model = ScriptedModel(
        tools_turn(
            call("echo", {"text": "hello"}, id="a"),
            call("fail", {}, id="b"),
            call("nope", {}, id="c"),
        ),
        Turn(text="finished"),
    )
    result = await build(tmp_path, tools, model).run("go", on_event=events)
    assert result.stopped_reason == "final"
    assert result.turns_used == 2
    tool_messages = [m for m in result.messages if m.role == "tool"]
    assert [m.tool_call_id for m in tool_messages] == ["a", "b", "c"]
    assert tool_messages[0].content == "hello"
    assert json.loads(tool_messages[1].content) == {
        "ok": False,
        "output": "partial",
        "error": "not_found: nothing here",
    }
    assert json.loads(tool_messages[2].content)["error"] == "unknown_tool: nope"
    # The second model call saw the results.
    assert [m.role for m in model.calls[1]][-3:] == ["tool", "tool", "tool"]
    ends = events.of("tool_call_end")
    assert [(e.data.name, e.data.ok) for e in ends] == [
        ("echo", True),
        ("fail", False),
        ("nope", False),
    ]
    assert [e.data.call_id for e in events.of("tool_call_start")] == ["a", "b", "c"]
    assert model.tools_seen[0] == ["echo", "fail", "wait", "big"]


async def test_last_turn_tool_calls_are_not_run(tmp_path, tools, events):
    model = ScriptedModel(
        tools_turn(call("echo", {"text": "1"}, id="t1")),
        tools_turn(call("echo", {"text": "2"}, id="t2"), call("echo", {"text": "3"}, id="t3")),
    )
    result = await build(tmp_path, tools, model, max_turns=2).run("loop", on_event=events)
    assert result.stopped_reason == "budget"
    assert result.turns_used == 2
    assert len(model.calls) == 2
    assert tools.calls == [("echo", {"text": "1"})]  # the last turn's calls never ran
    last_two = result.messages[-2:]
    assert [m.tool_call_id for m in last_two] == ["t2", "t3"]
    assert all(json.loads(m.content)["error"] == "turn_budget_exhausted" for m in last_two)
    assert_history_valid(result.messages)
    exhausted = events.of("budget_exhausted")
    assert exhausted and exhausted[0].data.skipped_calls == ("echo", "echo")
    assert events.types()[-1] == "run_end"


async def test_max_turns_defaults_to_config_value(tmp_path, tools):
    model = ScriptedModel(*[tools_turn(call("echo", {"text": str(i)})) for i in range(30)])
    result = await build(tmp_path, tools, model).run("forever")
    assert result.stopped_reason == "budget"
    assert result.turns_used == 25


async def test_unparseable_arguments_get_an_error_message(tmp_path, tools):
    model = ScriptedModel(
        tools_turn(
            call("echo", raw='{"text": "unterminated', id="bad"),
            call("echo", raw='{"text": "ok"}', id="good"),
        ),
        Turn(text="ok"),
    )
    result = await build(tmp_path, tools, model).run("x")
    bad, good = [m for m in result.messages if m.role == "tool"]
    error = json.loads(bad.content)["error"]
    assert error.startswith("invalid_arguments:") and "not valid JSON" in error
    assert good.content == "ok"  # raw JSON that does parse is used
    assert tools.calls == [("echo", {"text": "ok"})]


async def test_context_is_appended_and_tool_context_carries_run_settings(tmp_path, tools):
    workspace = DiskWorkspace(tmp_path)
    read_state = ReadState()
    model = ScriptedModel(tools_turn(call("echo", {"text": "x"})), Turn(text="done"))
    agent = build(tmp_path, tools, model)
    agent.runtime.executor.terminal_timeout_ms = (
        1234  # what build_tool_runtime sets from the config
    )
    await agent.run(
        "fix it",
        context="def f(): pass\nE: missing return",
        workspace=workspace,
        read_state=read_state,
        edit_label="lich: fix it",
    )
    user = model.calls[0][1]
    assert user.content.startswith("fix it\n\n" + CONTEXT_HEADER)
    assert user.content.endswith("E: missing return")
    ctx = tools.contexts[0]
    assert ctx.workspace is workspace
    assert ctx.read_state is read_state
    assert ctx.edit_label == "lich: fix it"
    assert ctx.terminal_timeout_ms == 1234
    assert model.cancel_seen[0] is not None


async def test_custom_system_prompt(tmp_path, tools):
    model = ScriptedModel(Turn(text="ok"))
    await build(tmp_path, tools, model, system_prompt="You are terse.").run("x")
    assert model.calls[0][0].content == "You are terse."


async def test_each_run_gets_a_fresh_read_state(tmp_path, tools):
    model = ScriptedModel(
        tools_turn(call("echo", {})), Turn(text="a"), tools_turn(call("echo", {})), Turn(text="b")
    )
    agent = build(tmp_path, tools, model)
    await agent.run("one")
    await agent.run("two")
    first, second = tools.contexts
    assert first.read_state is not second.read_state


async def test_provider_failure_keeps_completed_turns(tmp_path, tools, events):
    model = ScriptedModel(
        tools_turn(call("echo", {"text": "kept"}, id="k")),
        Turn(error=provider_error("auth", "401 Unauthorized: set OPENAI_API_KEY")),
    )
    result = await build(tmp_path, tools, model).run("x", on_event=events)
    assert result.stopped_reason == "error"
    assert "auth" in result.error and "\n" not in result.error
    assert [m.role for m in result.messages] == ["system", "user", "assistant", "tool"]
    assert result.messages[-1].content == "kept"
    errors = events.of("error")
    assert errors and errors[0].data.kind == "auth"
    assert events.of("run_end")[0].data.error == result.error


async def test_cancel_mid_stream_aborts_quickly(tmp_path, tools, events):
    cancel = CancelToken()
    model = ScriptedModel(Turn(text="word " * 200, chunks=200, chunk_delay_s=0.05))

    def listener(event):
        events(event)
        if event.type == "text_delta" and len(events.of("text_delta")) == 3:
            cancel.cancel()

    started = time.perf_counter()
    result = await build(tmp_path, tools, model).run("x", on_event=listener, cancel=cancel)
    assert time.perf_counter() - started < 3
    assert result.stopped_reason == "aborted"
    assert [m.role for m in result.messages] == ["system", "user"]  # the half answer is not kept
    assert events.types()[-1] == "run_end"


async def test_cancel_while_model_ignores_the_token(tmp_path, tools):
    cancel = CancelToken()
    model = ScriptedModel(Turn(block=True, ignore_cancel=True))
    agent = build(tmp_path, tools, model)
    task = asyncio.ensure_future(agent.run("x", cancel=cancel))
    await wait_until(lambda: bool(model.calls), "the model call to start")
    cancel.cancel()
    result = await asyncio.wait_for(task, 5)
    assert result.stopped_reason == "aborted"


async def test_cancel_mid_tool_answers_every_call(tmp_path, tools, events):
    cancel = CancelToken()
    model = ScriptedModel(
        tools_turn(
            call("echo", {"text": "first"}, id="1"),
            call("wait", {}, id="2"),
            call("echo", {"text": "never"}, id="3"),
        ),
        Turn(text="unreachable"),
    )
    agent = build(tmp_path, tools, model)
    task = asyncio.ensure_future(agent.run("x", cancel=cancel, on_event=events))
    await asyncio.wait_for(tools.started.wait(), 5)
    cancel.cancel()
    result = await asyncio.wait_for(task, 5)
    assert result.stopped_reason == "aborted"
    assert len(model.calls) == 1
    assert_history_valid(result.messages)
    results = {m.tool_call_id: m.content for m in result.messages if m.role == "tool"}
    assert results["1"] == "first"
    assert json.loads(results["2"])["error"] == "cancelled"
    assert json.loads(results["3"])["error"] == "cancelled"
    assert ("echo", {"text": "never"}) not in tools.calls


async def test_cancelling_the_task_closes_the_run_and_propagates(tmp_path, tools, events):
    model = ScriptedModel(tools_turn(call("wait", {}, id="w")))
    agent = build(tmp_path, tools, model)
    task = asyncio.ensure_future(agent.run("x", on_event=events))
    await asyncio.wait_for(tools.started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    run_end = events.of("run_end")
    assert run_end and run_end[0].data.stopped_reason == "aborted"


async def test_broken_event_listener_does_not_break_the_run(tmp_path, tools):
    def listener(event):
        raise RuntimeError("renderer bug")

    result = await build(tmp_path, tools, ScriptedModel(Turn(text="fine"))).run(
        "x", on_event=listener
    )
    assert result.stopped_reason == "final"


async def test_async_listener_sees_events_in_order(tmp_path, tools):
    seen: list[int] = []

    async def listener(event):
        await asyncio.sleep(0)
        seen.append(event.seq)

    model = ScriptedModel(Turn(text="abcdefgh", chunks=8))
    await build(tmp_path, tools, model).run("x", on_event=listener)
    assert seen == list(range(1, 16))  # 7 events around 8 text deltas


async def test_missing_call_ids_are_filled_in(tmp_path, tools):
    model = ScriptedModel(
        tools_turn(call("echo", {"text": "a"}), call("echo", {"text": "b"})), Turn(text="ok")
    )
    result = await build(tmp_path, tools, model).run("x")
    assistant = result.messages[2]
    ids = [c.id for c in assistant.tool_calls]
    assert all(ids) and len(set(ids)) == 2
    assert_history_valid(result.messages)


async def test_repeated_and_empty_call_ids_are_replaced_and_fine_ones_kept(tmp_path, tools, events):
    model = ScriptedModel(
        tools_turn(
            call("echo", {"text": "a"}, id="x"),
            call("echo", {"text": "b"}, id="x"),
            call("echo", {"text": "c"}),
        ),
        tools_turn(call("echo", {"text": "d"}, id="y"), call("echo", {"text": "e"}, id="z")),
        Turn(text="ok"),
    )
    result = await build(tmp_path, tools, model).run("x", on_event=events)
    assistants = [m for m in result.messages if m.role == "assistant" and m.tool_calls]
    assert [[c.id for c in m.tool_calls] for m in assistants] == [
        ["x", "call_1_1", "call_1_2"],
        ["y", "z"],
    ]
    assert [e.data.call_id for e in events.of("tool_call_end")] == [
        "x",
        "call_1_1",
        "call_1_2",
        "y",
        "z",
    ]
    assert_history_valid(result.messages)


async def test_a_tool_call_lasts_whole_microseconds(tmp_path, tools, events):
    model = ScriptedModel(
        tools_turn(call("echo", {"text": "a"}, id="a"), call("fail", {}, id="b")), Turn(text="ok")
    )
    await build(tmp_path, tools, model).run("x", on_event=events)
    durations = [e.data.duration_ms for e in events.of("tool_call_end")]
    assert len(durations) == 2
    for duration in durations:
        assert type(duration) is float and duration >= 0
        assert round(duration, 3) == duration  # milliseconds with three decimals at most


async def test_capability_denied_tools_are_not_offered(tmp_path, tools):
    cfg = make_config(tmp_path, capabilities=["file/read"])
    denied = tools.tools()
    denied[0].capability = "process/exec"
    model = ScriptedModel(Turn(text="ok"))
    await Agent(model=model, runtime=make_runtime(cfg, denied), config=cfg).run("x")
    assert "echo" not in model.tools_seen[0]
    assert "fail" in model.tools_seen[0]


class SendingModel(ScriptedModel):
    """A scripted model that, like the HTTP providers, stops on its token and says (`on_sent`)
    when its request is on the wire; it records what the listener had seen at each step."""

    stops_on_cancel = True
    reports_sent = True

    def __init__(self, *turns: Turn, log: EventLog, sends: bool = True) -> None:
        super().__init__(*turns)
        self.log = log
        self.sends = sends
        self.seen_at_call: list[list[str]] = []
        self.seen_after_sent: list[list[str]] = []

    async def complete(self, messages, tools, options=NO_CALL_OPTIONS):
        self.seen_at_call.append(self.log.types())
        if options.on_sent is not None and self.sends:
            options.on_sent()
        self.seen_after_sent.append(self.log.types())
        return await super().complete(messages, tools, options)


class WatchingModel(ScriptedModel):
    """A scripted model with no wire to report on: records what the listener had seen."""

    def __init__(self, *turns: Turn, log: EventLog) -> None:
        super().__init__(*turns)
        self.log = log
        self.seen_at_call: list[list[str]] = []

    async def complete(self, messages, tools, options=NO_CALL_OPTIONS):
        self.seen_at_call.append(self.log.types())
        return await super().complete(messages, tools, options)


@pytest.mark.skipif(
    sys.version_info < (3, 11), reason="the loop races the model on 3.10 (no Task.cancelling)"
)
async def test_the_events_before_a_model_call_go_out_once_its_request_is_sent(
    tmp_path, tools, events
):
    """run_start, turn_start and llm_start are held while the request is built and sent, then
    reach the listener while the provider thinks; the events of the run keep their order."""
    model = SendingModel(
        tools_turn(call("echo", {"text": "x"}, id="a")), Turn(text="done", chunks=2), log=events
    )
    result = await build(tmp_path, tools, model).run("go", on_event=events)
    assert result.stopped_reason == "final"
    assert model.seen_at_call[0] == []
    assert model.seen_after_sent[0] == ["run_start", "turn_start", "llm_start"]
    # Turn 2: the tool events of turn 1 were delivered as they came; only turn 2's are held.
    assert model.seen_at_call[1][-3:] == ["tool_call_start", "tool_call_end", "turn_end"]
    assert model.seen_after_sent[1][len(model.seen_at_call[1]) :] == ["turn_start", "llm_start"]
    assert events.types() == [
        "run_start",
        "turn_start",
        "llm_start",
        "llm_end",
        "tool_call_start",
        "tool_call_end",
        "turn_end",
        "turn_start",
        "llm_start",
        "text_delta",
        "text_delta",
        "llm_end",
        "final",
        "turn_end",
        "run_end",
    ]
    assert [e.seq for e in events.events] == list(range(1, len(events.events) + 1))


async def test_a_model_without_a_wire_is_called_after_the_events(tmp_path, tools, events):
    model = WatchingModel(Turn(text="hi"), log=events)
    await build(tmp_path, tools, model).run("go", on_event=events)
    assert model.seen_at_call == [["run_start", "turn_start", "llm_start"]]


async def test_held_events_are_delivered_when_the_call_fails_before_sending(
    tmp_path, tools, events
):
    model = SendingModel(
        Turn(error=provider_error("network", "connection refused")), log=events, sends=False
    )
    result = await build(tmp_path, tools, model).run("go", on_event=events)
    assert result.stopped_reason == "error"
    assert events.types() == ["run_start", "turn_start", "llm_start", "error", "run_end"]
    assert [e.seq for e in events.events] == [1, 2, 3, 4, 5]


async def test_a_request_slow_to_go_out_does_not_hide_the_run(tmp_path, tools, events):
    """A model that never says its request was sent (a connect that hangs): the held events
    reach the listener anyway, while the call is still waiting; cancel then ends the run."""
    cancel = CancelToken()
    model = SendingModel(Turn(block=True), log=events, sends=False)
    agent = build(tmp_path, tools, model)
    task = asyncio.ensure_future(agent.run("go", on_event=events, cancel=cancel))
    await wait_until(lambda: len(events.events) == 3, "the held events to be delivered")
    assert events.types() == ["run_start", "turn_start", "llm_start"] and not task.done()
    cancel.cancel()
    result = await asyncio.wait_for(task, 5)
    assert result.stopped_reason == "aborted"
    assert events.types() == ["run_start", "turn_start", "llm_start", "run_end"]
