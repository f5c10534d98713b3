"""Context compression and session files, with the scripted model."""

from __future__ import annotations

import json
import os
import time

from agent_helpers import EventLog, RecordingTools, assert_history_valid, make_config, make_runtime
from scripted_model import ScriptedModel, Turn, call, provider_error, tools_turn

from lich_core.agent.compress import (
    COMPRESS_BACKOFF_TURNS,
    SUMMARY_PREFIX,
    estimate_tokens,
    split_for_compression,
)
from lich_core.agent.loop import Agent
from lich_core.agent.messages import Message, ToolCall
from lich_core.agent.prompts import COMPRESS_SYSTEM_PROMPT
from lich_core.agent.sessions import SessionStore, repair_history, session_dir_for

# With these settings compression is due from turn 5 (see the arithmetic in the first test).
SMALL_BUDGET = {"context_budget_tokens": 1000, "compress_threshold": 0.5, "system_prompt": "sys"}


def _is_summary(message: Message) -> bool:
    """The summary compression puts in place of the older history."""
    return message.role == "user" and message.content.startswith(SUMMARY_PREFIX)


def build(
    tmp_path, tools: RecordingTools, model, *, compress_model=None, store=True, **config
) -> Agent:
    cfg = make_config(tmp_path, **config)
    return Agent(
        model=model,
        runtime=make_runtime(cfg, tools.tools()),
        config=cfg,
        compress_model=compress_model,
        session_store=SessionStore.for_config(cfg) if store else None,
    )


def big_turns(count: int, size: int = 500) -> list[Turn]:
    return [tools_turn(call("big", {"size": size}, id=f"c{i}")) for i in range(count)]


async def test_compression_backs_off_after_a_useless_summary_then_compresses(tmp_path, tools):
    # Each turn adds ~548 chars; the limit is 0.5 * 1000 tokens = ~2000 chars, reached after 4
    # turns. At turn 5 only the user prompt lies outside the 8 kept messages, so its summary is
    # not smaller: back off 3 turns. At turn 8 there are 3 older turns to summarise.
    events = EventLog()
    compressor = ScriptedModel(
        *[Turn(text="SUMMARY: read big output") for _ in range(10)], name="compress"
    )
    model = ScriptedModel(*big_turns(9), Turn(text="done"))
    agent = build(tmp_path, tools, model, compress_model=compressor, **SMALL_BUDGET)
    result = await agent.run("go", on_event=events)
    assert result.stopped_reason == "final"
    ends = events.of("compress_end")
    assert ends[0].data.turn == 5 and ends[0].data.ok is False
    assert ends[0].data.error == "summary_not_smaller"
    assert ends[1].data.turn == 5 + COMPRESS_BACKOFF_TURNS and ends[1].data.ok is True
    assert ends[1].data.after_tokens < ends[1].data.before_tokens
    assert ends[1].data.removed_messages == 7
    assert [e.data.turn for e in events.of("compress_start")][:2] == [5, 8]
    # The summariser got a transcript of the older turns, including the task.
    request = compressor.calls[1]
    assert request[0].content == COMPRESS_SYSTEM_PROMPT
    assert "[user]\ngo" in request[1].content and "[assistant calls big]" in request[1].content
    # History: system, summary (a user message), then a kept tail that starts with a call.
    history = result.messages
    assert history[0].content == "sys"
    assert _is_summary(history[1]) and "SUMMARY: read big output" in history[1].content
    assert history[2].role == "assistant"
    assert_history_valid(history)
    # The model's later calls were made with the compressed history.
    assert _is_summary(model.calls[8][1])
    assert estimate_tokens(model.calls[8]) < estimate_tokens(model.calls[7]) + 200


async def test_compression_failure_is_never_fatal(tmp_path, tools):
    events = EventLog()
    compressor = ScriptedModel(
        *[Turn(error=provider_error("network", "connection refused")) for _ in range(5)]
    )
    model = ScriptedModel(*big_turns(10), Turn(text="done"))
    agent = build(tmp_path, tools, model, compress_model=compressor, **SMALL_BUDGET)
    result = await agent.run("go", on_event=events)
    assert result.stopped_reason == "final"
    ends = events.of("compress_end")
    assert ends and all(not e.data.ok for e in ends)
    assert "connection refused" in ends[0].data.error
    turns = [e.data.turn for e in ends]
    assert all(b - a >= COMPRESS_BACKOFF_TURNS for a, b in zip(turns, turns[1:], strict=False))


async def test_compression_falls_back_to_the_chat_model(tmp_path, tools):
    model = ScriptedModel(
        *big_turns(4), Turn(text="useless"), *big_turns(3), Turn(text="SUM"), Turn(text="done")
    )
    agent = build(tmp_path, tools, model, **SMALL_BUDGET)
    result = await agent.run("go")
    assert result.stopped_reason == "final"
    compress_calls = [c for c in model.calls if c[0].content == COMPRESS_SYSTEM_PROMPT]
    assert len(compress_calls) == 2
    assert any(_is_summary(m) for m in result.messages)


def test_split_never_starts_the_kept_part_on_a_tool_result():
    def turn(i: int, calls: int) -> list[Message]:
        ids = [f"{i}-{k}" for k in range(calls)]
        assistant = Message("assistant", tool_calls=[ToolCall(id=x, name="t") for x in ids])
        return [assistant, *[Message("tool", "r", tool_call_id=x, name="t") for x in ids]]

    messages = [Message("system", "s"), Message("user", "u"), *turn(1, 1), *turn(2, 3), *turn(3, 3)]
    split = split_for_compression(messages)
    assert split is not None
    assert split.kept[0].role == "assistant"
    assert len(split.kept) >= 8
    assert split.head == messages[:1]
    assert split.old + split.kept == messages[1:]
    # Nothing older than the tail: no split.
    assert split_for_compression(messages[:6]) is None


async def test_session_file_is_written_as_the_run_goes(tmp_path, tools):
    model = ScriptedModel(tools_turn(call("echo", {"text": "hi"})), Turn(text="done"))
    agent = build(tmp_path, tools, model)
    result = await agent.run("write a session")
    path = session_dir_for({"work_dir": str(tmp_path)}) / f"{result.session_id}.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert records[0]["type"] == "meta" and records[0]["session_id"] == result.session_id
    assert records[0]["title"] == "write a session"
    assert records[1]["type"] == "run" and records[1]["event"] == "start"
    messages = [r["message"] for r in records if r["type"] == "message"]
    assert messages == [m.to_dict() for m in result.messages]
    assert records[-1]["type"] == "run" and records[-1]["stopped_reason"] == "final"


async def test_resume_by_id_and_latest_appends_to_the_same_session(tmp_path, tools):
    model = ScriptedModel(Turn(text="first answer"), Turn(text="second answer"), Turn(text="third"))
    agent = build(tmp_path, tools, model)
    first = await agent.run("first question")
    second = await agent.run("follow up", resume=first.session_id)
    assert second.session_id == first.session_id
    sent = [m.content for m in model.calls[1]]
    assert sent[1:] == ["first question", "first answer", "follow up"]
    third = await agent.run("and again", resume="latest")
    assert third.session_id == first.session_id
    assert [m.content for m in third.messages][-2:] == ["and again", "third"]
    store = SessionStore(session_dir_for({"work_dir": str(tmp_path)}))
    infos = store.list()
    assert len(infos) == 1 and infos[0].runs == 3 and infos[0].messages == 7
    _, loaded = store.load(first.session_id)
    assert [m.to_dict() for m in loaded] == [m.to_dict() for m in third.messages]


async def test_latest_is_the_most_recently_written_session(tmp_path, tools):
    model = ScriptedModel(Turn(text="a"), Turn(text="b"), Turn(text="c"))
    agent = build(tmp_path, tools, model)
    older = await agent.run("older")
    newer = await agent.run("newer")
    store = SessionStore(session_dir_for({"work_dir": str(tmp_path)}))
    os.utime(store.path_for(older.session_id), (time.time() - 100, time.time() - 100))
    assert store.resolve("latest") == newer.session_id
    assert [i.session_id for i in store.list()] == [newer.session_id, older.session_id]


async def test_resume_unknown_session_is_an_error_result(tmp_path, tools, events):
    agent = build(tmp_path, tools, ScriptedModel(Turn(text="x")))
    result = await agent.run("x", resume="20990101-000000-abcdef", on_event=events)
    assert result.stopped_reason == "error"
    assert result.error.startswith("session_not_found")
    assert events.types() == ["run_start", "error", "run_end"]
    bad = await agent.run("x", resume="../../etc/passwd")
    assert bad.stopped_reason == "error"


async def test_compaction_is_recorded_and_loaded(tmp_path, tools):
    compressor = ScriptedModel(*[Turn(text="S") for _ in range(10)])
    model = ScriptedModel(*big_turns(8), Turn(text="done"))
    agent = build(tmp_path, tools, model, compress_model=compressor, **SMALL_BUDGET)
    result = await agent.run("go")
    store = SessionStore(session_dir_for({"work_dir": str(tmp_path)}))
    _, loaded = store.load(result.session_id)
    assert [m.to_dict() for m in loaded] == [m.to_dict() for m in result.messages]


def test_a_crashed_session_loads_repaired(tmp_path):
    store = SessionStore(tmp_path)
    writer = store.create(title="crash")
    writer.message(Message("system", "s"))
    writer.message(Message("user", "u"))
    writer.message(
        Message("assistant", "", tool_calls=[ToolCall("a", "echo"), ToolCall("b", "echo")])
    )
    writer.message(Message("tool", "ra", tool_call_id="a", name="echo"))
    writer.close()
    with open(store.path_for(writer.session_id), "a") as handle:
        handle.write('{"type": "message", "message": {"role": "tool", "con')  # torn write
    session_id, loaded = store.load("latest")
    assert session_id == writer.session_id
    assert [m.role for m in loaded] == ["system", "user", "assistant", "tool", "tool"]
    assert json.loads(loaded[-1].content)["error"] == "interrupted"
    assert_history_valid(loaded)


def test_repair_drops_orphaned_results():
    messages = [Message("user", "u"), Message("tool", "orphan", tool_call_id="x")]
    assert [m.role for m in repair_history(messages)] == ["user"]


def test_running_estimate_matches_a_full_count():
    from lich_core.agent.compress import CompressionPolicy

    policy = CompressionPolicy({"context_budget_tokens": 1000, "compress_threshold": 0.5})
    history = [Message("system", "s" * 50), Message("user", "u" * 300)]
    assert policy.estimate(history) == estimate_tokens(history)
    history.append(Message("assistant", "", tool_calls=[ToolCall("a", "big", {"size": 5})]))
    history.append(Message("tool", "x" * 2000, tool_call_id="a"))
    assert policy.estimate(history) == estimate_tokens(history)
    assert policy.due(history, 1)
    history[:] = [history[0], Message("user", "short")]  # replaced by a compaction
    assert policy.estimate(history) == estimate_tokens(history)
    assert not policy.due(history, 2)
