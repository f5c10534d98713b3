"""Plans, client-supplied MCP servers, review mode's Discard and the edit_mode config, over ACP."""

from __future__ import annotations

import asyncio
import json
import sys

from tests.acp import sdk
from tests.acp.acp_client import WAIT_S, ScriptedClient, acp_agent, write_user_config
from tests.acp.test_acp_agent import ask, new_session, tool_messages
from tests.mcp.mcp_support import PLAIN_SERVER

PLAN = [
    {"step": "Read the failing test", "status": "completed"},
    {"step": "Fix parse_date", "status": "in_progress", "priority": "high"},
    {"step": "Run the tests", "status": "pending", "priority": "low"},
]


def model_messages(server, index: int) -> list[str]:
    return [str(m.get("content")) for m in server.requests[index]["json"]["messages"]]


async def test_update_plan_becomes_a_plan_update(tmp_path, fake_provider):
    write_user_config(fake_provider.url)
    done = [dict(step, status="completed") for step in PLAN]
    fake_provider.script(
        {
            "tool_calls": [
                {"name": "update_plan", "arguments": {"plan": PLAN, "explanation": "leap days"}}
            ]
        },
        {"tool_calls": [{"name": "update_plan", "arguments": {"plan": done}}]},
        {
            "tool_calls": [
                {"name": "update_plan", "arguments": {"plan": [{"step": "x", "status": "started"}]}}
            ]
        },
        {"text": "all done"},
    )
    client = ScriptedClient()
    async with acp_agent(client) as conn:
        sid = await new_session(conn, tmp_path)
        assert (await ask(conn, sid, "fix the date bug")).stop_reason == "end_turn"
    first, second = client.of("plan")  # the invalid third call sends none
    assert [(e.content, e.status, e.priority) for e in first.entries] == [
        ("Read the failing test", "completed", "medium"),
        ("Fix parse_date", "in_progress", "high"),
        ("Run the tests", "pending", "low"),
    ]
    assert [e.status for e in second.entries] == ["completed"] * 3
    # The plan arrives while its tool call runs, between the call's start and its end.
    kinds = [u.session_update for u in client.updates]
    assert kinds.index("plan") > kinds.index("tool_call")
    assert all(call.kind == "think" for call in client.of("tool_call"))
    assert (
        tool_messages(fake_provider, 1)[-1]
        == "Plan updated: 1 of 3 steps completed; in progress: Fix parse_date"
    )
    assert (
        "invalid_arg: plan[0].status must be one of pending, in_progress, completed"
        in tool_messages(fake_provider, 3)[-1]
    )
    # session/load replays the plans among the tool calls (not the refused one).
    replay = ScriptedClient()
    async with acp_agent(replay) as conn:
        await asyncio.wait_for(
            conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[]), WAIT_S
        )
    assert [[e.status for e in update.entries] for update in replay.of("plan")] == [
        ["completed", "in_progress", "pending"],
        ["completed"] * 3,
    ]


async def test_client_mcp_servers_give_the_session_their_tools(tmp_path, fake_provider):
    write_user_config(fake_provider.url)
    fake_provider.script(
        {
            "tool_calls": [
                {"name": "mcp_basic_echo", "arguments": {"text": "through the client's server"}},
                {"name": "mcp_basic_info", "arguments": {}},
            ]
        },
        {"text": "done"},
    )
    client = ScriptedClient()
    client.answers = ["allow_once", "allow_once"]  # mcp/call asks
    server = sdk.McpServerStdio(
        name="Basic",
        command=sys.executable,
        args=[PLAIN_SERVER],
        env=[sdk.EnvVariable(name="LICH_TEST_FROM", value="the-acp-client")],
    )
    async with acp_agent(client) as conn:
        response = await asyncio.wait_for(
            conn.new_session(cwd=str(tmp_path), mcp_servers=[server]), WAIT_S
        )
        assert (await ask(conn, response.session_id, "use the server")).stop_reason == "end_turn"
    offered = {tool["function"]["name"] for tool in fake_provider.requests[0]["json"]["tools"]}
    assert {"mcp_basic_echo", "mcp_basic_info"} <= offered
    echo, info = tool_messages(fake_provider, 1)
    assert echo == "through the client's server"
    assert json.loads(info)["LICH_TEST_FROM"] == "the-acp-client"
    assert [
        u.status for u in client.of("tool_call_update") if u.status in ("completed", "failed")
    ] == ["completed"] * 2
    assert len(client.permission_requests) == 2


async def test_review_discard_leaves_the_file_and_tells_the_model(tmp_path, fake_provider):
    target = tmp_path / "n.txt"
    target.write_text("one\n")
    write_user_config(fake_provider.url)
    fake_provider.script(
        {
            "tool_calls": [
                {
                    "name": "edit_file",
                    "arguments": {"path": "n.txt", "old_string": "one", "new_string": "two"},
                }
            ]
        },
        {"text": "changed it"},
        {"text": "understood"},
    )
    client = ScriptedClient(fs_read=True, fs_write=True)
    async with acp_agent(client) as conn:
        sid = await new_session(conn, tmp_path)
        await asyncio.wait_for(conn.set_session_mode(session_id=sid, mode_id="review"), WAIT_S)
        client.answers = ["discard"]
        assert (await ask(conn, sid, "edit")).stop_reason == "end_turn"
        assert client.writes == [] and target.read_text() == "one\n"
        (request,) = client.permission_requests
        tool_call, options = request
        assert {o.option_id: o.kind for o in options} == {
            "apply": "allow_once",
            "discard": "reject_once",
        }
        (diff,) = tool_call.content
        assert (diff.path, diff.old_text, diff.new_text) == (str(target), "one\n", "two\n")
        assert "discarded" in client.text()
        assert (await ask(conn, sid, "and?")).stop_reason == "end_turn"
    assert target.read_text() == "one\n" and client.writes == []
    # The model reads the user's decision with the next prompt.
    notes = [m for m in model_messages(fake_provider, 2) if m.startswith("[lich review]")]
    assert notes == [
        "[lich review] The user discarded the changes you made to n.txt in the last request: "
        "those files are as they were before it."
    ]
    # Replayed by session/load as lich's words, not as something the user typed.
    replay = ScriptedClient()
    async with acp_agent(replay) as conn:
        await asyncio.wait_for(
            conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[]), WAIT_S
        )
    assert [u.content.text for u in replay.of("user_message_chunk")] == ["edit", "and?"]
    assert "lich: review: The user discarded the changes you made to n.txt" in replay.text()


async def test_edit_mode_config_sets_the_sessions_initial_mode(tmp_path, fake_provider):
    """The workspace's `edit_mode: review` (a narrowing setting, so it counts untrusted) makes
    sessions start in review mode; another folder starts in apply."""
    (tmp_path / ".lich").mkdir()
    (tmp_path / ".lich" / "config.json").write_text(json.dumps({"edit_mode": "review"}))
    (tmp_path / "n.txt").write_text("one\n")
    other = tmp_path / "other"
    other.mkdir()
    write_user_config(fake_provider.url)
    fake_provider.script(
        {
            "tool_calls": [
                {
                    "name": "edit_file",
                    "arguments": {"path": "n.txt", "old_string": "one", "new_string": "two"},
                }
            ]
        },
        {"text": "done"},
    )
    client = ScriptedClient()
    async with acp_agent(client) as conn:
        response = await asyncio.wait_for(
            conn.new_session(cwd=str(tmp_path), mcp_servers=[]), WAIT_S
        )
        assert response.modes.current_mode_id == "review"
        elsewhere = await asyncio.wait_for(conn.new_session(cwd=str(other), mcp_servers=[]), WAIT_S)
        assert elsewhere.modes.current_mode_id == "apply"
        client.answers = ["discard"]
        assert (await ask(conn, response.session_id, "edit")).stop_reason == "end_turn"
        loaded = await asyncio.wait_for(
            conn.load_session(cwd=str(tmp_path), session_id=response.session_id, mcp_servers=[]),
            WAIT_S,
        )
        assert loaded.modes.current_mode_id == "review"
    assert len(client.permission_requests) == 1  # the review question: the mode was applied
    assert (tmp_path / "n.txt").read_text() == "one\n"
