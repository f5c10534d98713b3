"""lich acp end to end: `python -m lich_acp` over stdio, driven by the SDK's client side, with the
fake HTTP provider configured in lich's user config (under the temp HOME conftest sets)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from lich_core.agent.targets import describe_tool_call
from tests.acp import sdk
from tests.acp.acp_client import WAIT_S, ScriptedClient, acp_agent, write_user_config


def tool_messages(server, index: int) -> list[str]:
    return [
        str(m.get("content"))
        for m in server.requests[index]["json"]["messages"]
        if m.get("role") == "tool"
    ]


async def new_session(conn, root: Path) -> str:
    response = await asyncio.wait_for(conn.new_session(cwd=str(root), mcp_servers=[]), WAIT_S)
    assert {m.id for m in response.modes.available_modes} == {"apply", "review"}
    return response.session_id


async def ask(conn, session_id: str, text: str):
    return await asyncio.wait_for(
        conn.prompt(session_id=session_id, prompt=[sdk.text_block(text)]), WAIT_S
    )


async def test_initialize_and_streamed_text(tmp_path, fake_provider):
    write_user_config(fake_provider.url)
    fake_provider.script({"text": "Hello from lich.", "chunks": 4})
    client = ScriptedClient()
    async with acp_agent(client) as conn:
        init = conn.initialize_response
        assert init.protocol_version == 1
        assert init.agent_capabilities.load_session is True
        assert init.agent_capabilities.prompt_capabilities.embedded_context is True
        assert init.auth_methods == []
        sid = await new_session(conn, tmp_path)
        response = await ask(conn, sid, "hi")
        assert response.stop_reason == "end_turn"
        assert len(client.of("agent_message_chunk")) >= 2
        assert client.text() == "Hello from lich."


async def test_read_through_client_sees_unsaved_text(tmp_path, fake_provider):
    (tmp_path / "a.py").write_text("on disk\n")
    write_user_config(fake_provider.url)
    fake_provider.script(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}]},
        {"text": "done"},
    )
    client = ScriptedClient(fs_read=True)
    client.buffers[str(tmp_path / "a.py")] = "unsaved buffer text\n"
    async with acp_agent(client) as conn:
        sid = await new_session(conn, tmp_path)
        assert (await ask(conn, sid, "read a.py")).stop_reason == "end_turn"
    assert str(tmp_path / "a.py") in client.reads
    seen = "\n".join(tool_messages(fake_provider, 1))
    assert "unsaved buffer text" in seen and "on disk" not in seen
    start = client.of("tool_call")[0]
    assert start.kind == "read" and start.status == "pending"
    assert start.locations[0].path == str(tmp_path / "a.py")
    # Title, kind and locations are the core's one description of the call, as the editors'
    # chats get it in the tool events and lich.thread.
    described = describe_tool_call("read_file", {"path": "a.py"})
    assert (
        (start.title, start.kind) == (described.title, described.kind) == ("read_file a.py", "read")
    )
    assert [loc.path for loc in start.locations] == described.locations(tmp_path)
    statuses = [u.status for u in client.of("tool_call_update")]
    assert statuses == ["in_progress", "completed"]


@pytest.mark.parametrize("through_client", [True, False])
async def test_edit_reports_a_diff(tmp_path, fake_provider, through_client):
    target = tmp_path / "calc.py"
    target.write_text("def add(a, b):\n    return a - b\n")
    write_user_config(fake_provider.url)
    fake_provider.script(
        {
            "tool_calls": [
                {
                    "name": "edit_file",
                    "arguments": {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"},
                }
            ]
        },
        {"text": "fixed"},
    )
    client = ScriptedClient(fs_read=through_client, fs_write=through_client)
    async with acp_agent(client) as conn:
        sid = await new_session(conn, tmp_path)
        assert (await ask(conn, sid, "fix")).stop_reason == "end_turn"
    assert client.of("tool_call")[0].kind == "edit"
    end = client.of("tool_call_update")[-1]
    assert end.status == "completed"
    diffs = [c for c in end.content if c.type == "diff"]
    assert len(diffs) == 1
    assert diffs[0].path == str(target)
    assert diffs[0].old_text == "def add(a, b):\n    return a - b\n"
    assert diffs[0].new_text == "def add(a, b):\n    return a + b\n"
    if through_client:
        assert client.writes == [(str(target), "def add(a, b):\n    return a + b\n")]
        assert (
            target.read_text() == "def add(a, b):\n    return a - b\n"
        )  # the client owns the write
    else:
        assert client.writes == []
        assert target.read_text() == "def add(a, b):\n    return a + b\n"


async def test_stale_client_write_is_refused(tmp_path, fake_provider):
    target = tmp_path / "calc.py"
    target.write_text("x = 1\n")
    write_user_config(fake_provider.url)
    fake_provider.script(
        {
            "tool_calls": [
                {
                    "name": "edit_file",
                    "arguments": {"path": "calc.py", "old_string": "x = 1", "new_string": "x = 2"},
                }
            ]
        },
        {"text": "ok"},
    )
    client = ScriptedClient(fs_read=True, fs_write=True)
    key = str(target)
    client.buffers[key] = "x = 1\n"

    def user_types(path: str) -> None:  # the user edits the buffer right after the tool read it
        client.buffers[path] = "x = 1\ny = 3\n"
        client.on_read = None

    client.on_read = user_types
    async with acp_agent(client) as conn:
        sid = await new_session(conn, tmp_path)
        assert (await ask(conn, sid, "edit")).stop_reason == "end_turn"
    assert client.writes == []
    assert client.of("tool_call_update")[-1].status == "failed"
    assert "edit_rejected: stale_document" in "\n".join(tool_messages(fake_provider, 1))


async def test_permission_answers(tmp_path, fake_provider):
    write_user_config(fake_provider.url)
    call = {"tool_calls": [{"name": "terminal", "arguments": {"command": "echo ran-it"}}]}
    fake_provider.script(
        call,
        {"text": "1"},
        call,
        {"text": "2"},
        call,
        {"text": "3"},
        call,
        {"text": "4"},
        call,
        {"text": "5"},
    )
    client = ScriptedClient()
    async with acp_agent(client) as conn:
        sid = await new_session(conn, tmp_path)
        client.answers = ["allow_once"]
        await ask(conn, sid, "one")
        assert len(client.permission_requests) == 1
        tool_call, options = client.permission_requests[0]
        assert {o.option_id for o in options} == {
            "allow_once",
            "allow_always",
            "reject_once",
            "reject_always",
        }
        assert tool_call.tool_call_id == client.of("tool_call")[0].tool_call_id
        assert "ran-it" in "\n".join(tool_messages(fake_provider, 1))

        client.answers = ["reject_once"]
        await ask(conn, sid, "two")
        assert len(client.permission_requests) == 2
        assert "approval_denied" in tool_messages(fake_provider, 3)[-1]

        client.answers = [None]  # cancelled outcome: denied
        await ask(conn, sid, "three")
        assert len(client.permission_requests) == 3
        assert "approval_denied" in tool_messages(fake_provider, 5)[-1]

        client.answers = ["allow_always"]
        await ask(conn, sid, "four")
        assert "ran-it" in tool_messages(fake_provider, 7)[-1]
        await ask(conn, sid, "five")  # remembered: no question
        assert len(client.permission_requests) == 4
        assert "ran-it" in tool_messages(fake_provider, 9)[-1]


async def test_reject_always(tmp_path, fake_provider):
    write_user_config(fake_provider.url)
    call = {"tool_calls": [{"name": "terminal", "arguments": {"command": "echo ran-it"}}]}
    fake_provider.script(call, {"text": "1"}, call, {"text": "2"})
    client = ScriptedClient()
    async with acp_agent(client) as conn:
        sid = await new_session(conn, tmp_path)
        client.answers = ["reject_always"]
        await ask(conn, sid, "one")
        await ask(conn, sid, "two")
    assert len(client.permission_requests) == 1
    assert "approval_denied" in tool_messages(fake_provider, 1)[-1]
    assert "approval_denied" in tool_messages(fake_provider, 3)[-1]


async def test_cancel_mid_stream(tmp_path, fake_provider):
    write_user_config(fake_provider.url)
    fake_provider.script({"endless": True, "chunk_delay_s": 0.02})
    client = ScriptedClient()
    async with acp_agent(client) as conn:
        sid = await new_session(conn, tmp_path)
        prompt = asyncio.ensure_future(
            conn.prompt(session_id=sid, prompt=[sdk.text_block("go on")])
        )
        await client.wait_for(lambda: len(client.of("agent_message_chunk")) >= 3)
        cancelled_at = time.monotonic()
        await conn.cancel(session_id=sid)
        response = await asyncio.wait_for(prompt, 5)
        assert time.monotonic() - cancelled_at < 1.0
        assert response.stop_reason == "cancelled"


async def test_load_session_replays_history(tmp_path, fake_provider):
    (tmp_path / "a.py").write_text("print(1)\n")
    write_user_config(fake_provider.url)
    fake_provider.script(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}]},
        {"text": "It prints one."},
    )
    first = ScriptedClient()
    async with acp_agent(first) as conn:
        sid = await new_session(conn, tmp_path)
        await ask(conn, sid, "what does a.py do")
    second = ScriptedClient()
    async with acp_agent(second) as conn:
        await asyncio.wait_for(
            conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[]), WAIT_S
        )
        kinds = [u.session_update for u in second.updates]
        assert kinds == [
            "user_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk",
        ]
        assert second.updates[0].content.text == "what does a.py do"
        assert second.updates[-1].content.text == "It prints one."
        # The loaded session goes on with its history.
        fake_provider.script({"text": "again"})
        assert (await ask(conn, sid, "and now?")).stop_reason == "end_turn"
        contents = [str(m.get("content")) for m in fake_provider.requests[-1]["json"]["messages"]]
        assert "what does a.py do" in contents and "It prints one." in contents


async def test_review_mode_applies_at_the_end(tmp_path, fake_provider):
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
        {"text": "done"},
    )
    client = ScriptedClient()
    async with acp_agent(client) as conn:
        sid = await new_session(conn, tmp_path)
        await asyncio.wait_for(conn.set_session_mode(session_id=sid, mode_id="review"), WAIT_S)
        client.answers = ["apply"]
        assert (await ask(conn, sid, "edit")).stop_reason == "end_turn"
    assert len(client.permission_requests) == 1
    assert "n.txt" in client.permission_requests[0][0].title
    assert target.read_text() == "two\n"


async def test_bad_params_are_jsonrpc_errors(tmp_path, fake_provider):
    write_user_config(fake_provider.url)
    client = ScriptedClient()
    async with acp_agent(client) as conn:
        with pytest.raises(sdk.RequestError) as err:
            await conn.new_session(cwd="relative/dir", mcp_servers=[])
        assert err.value.code == -32602
        with pytest.raises(sdk.RequestError) as err:
            await conn.prompt(session_id="nope", prompt=[sdk.text_block("x")])
        assert err.value.code == -32602
        with pytest.raises(sdk.RequestError) as err:
            await conn.load_session(cwd=str(tmp_path), session_id="../etc", mcp_servers=[])
        assert err.value.code == -32602
        sid = await new_session(conn, tmp_path)
        with pytest.raises(sdk.RequestError) as err:
            await conn.set_session_mode(session_id=sid, mode_id="yolo")
        assert err.value.code == -32602
        # A malformed request straight on the wire (the SDK's client would not send it).
        with pytest.raises(sdk.RequestError) as err:
            await conn._conn.send_request("session/prompt", {"sessionId": sid})
        assert err.value.code == -32602
        # Still alive.
        fake_provider.script({"text": "alive"})
        assert (await ask(conn, sid, "still there?")).stop_reason == "end_turn"
