"""The terminal tool through the client's terminal/* (when it declares `terminal`): the scripted
client runs each command as a real subprocess, as an editor would, and records every call."""

from __future__ import annotations

import asyncio

import pytest

from tests.acp import sdk
from tests.acp.acp_client import CLIENT_TERMINAL_ENV, ScriptedClient, acp_agent, write_user_config
from tests.acp.test_acp_agent import ask, new_session, tool_messages

MARKER = "LICH_TEST_TERMINAL_HOST"
# Prints where it ran (the client's terminals set MARKER), its directory, whether a provider key
# of the agent's environment reached it, and PAGER.
PROBE = f'echo "host=${{{MARKER}:-local}}"; pwd; echo "key=${{MY_SERVICE_API_KEY:-unset}}"; echo "pager=$PAGER"'


def terminal_call(command: str, **extra: object) -> dict[str, object]:
    return {"tool_calls": [{"name": "terminal", "arguments": {"command": command, **extra}}]}


def terminal_updates(client: ScriptedClient) -> list[object]:
    return [
        u
        for u in client.of("tool_call_update")
        if any(c.type == "terminal" for c in u.content or [])
    ]


@pytest.mark.parametrize("declared", [True, False])
async def test_a_command_runs_in_the_clients_terminal_when_it_offers_one(
    tmp_path, fake_provider, monkeypatch, declared
):
    # The agent inherits this environment; the local tool scrubs such keys, and so must the client's run.
    monkeypatch.setenv("MY_SERVICE_API_KEY", "not-for-commands")
    write_user_config(fake_provider.url)
    fake_provider.script(terminal_call(PROBE), {"text": "ran"})
    client = ScriptedClient(terminal=declared)
    client.answers = ["allow_once"]
    async with acp_agent(client) as conn:
        sid = await new_session(conn, tmp_path)
        assert (await ask(conn, sid, "probe")).stop_reason == "end_turn"
    seen = tool_messages(fake_provider, 1)[-1]
    assert str(tmp_path.resolve()) in seen
    assert "key=unset" in seen and "pager=cat" in seen and "[exit 0]" in seen
    if not declared:
        assert "host=local" in seen
        assert client.terminal_calls == [] and terminal_updates(client) == []
        return
    assert f"host={CLIENT_TERMINAL_ENV[MARKER]}" in seen
    (terminal,) = client.terminals.values()
    assert [method for method, _ in client.terminal_calls] == [
        "create",
        "wait_for_exit",
        "output",
        "release",
    ]
    # `env -u` drops the provider keys from the client's environment, then bash -lc runs the command.
    assert terminal.command == "env"
    unset = terminal.args[: terminal.args.index("bash")]
    assert ("-u", "MY_SERVICE_API_KEY") in list(zip(unset[::2], unset[1::2], strict=True))
    assert ("-u", "OPENAI_API_KEY") in list(zip(unset[::2], unset[1::2], strict=True))
    assert terminal.args[len(unset) :] == ["bash", "-lc", PROBE]
    assert terminal.cwd == str(tmp_path) and terminal.env["PAGER"] == "cat"
    assert terminal.limit == 50_000
    # The tool call shows the terminal while it runs and when it is done; the model's text is rawOutput.
    call_id = client.of("tool_call")[0].tool_call_id
    running, done = terminal_updates(client)
    assert running.tool_call_id == done.tool_call_id == call_id
    assert running.status == "in_progress" and [c.terminal_id for c in running.content] == [
        terminal.id
    ]
    assert done.status == "completed" and [c.terminal_id for c in done.content] == [terminal.id]
    assert (
        f"host={CLIENT_TERMINAL_ENV[MARKER]}" in done.raw_output and "[exit 0]" in done.raw_output
    )


async def test_a_failing_command_and_input_through_the_client(tmp_path, fake_provider):
    """A non-zero exit fails the call with the same error as locally; a call with `input` (a
    client terminal has no stdin) runs locally."""
    write_user_config(fake_provider.url)
    fake_provider.script(
        terminal_call(f'echo "host=${{{MARKER}:-local}}"; exit 3'),
        {"text": "1"},
        terminal_call(f'echo "host=${{{MARKER}:-local}}"; cat', input="from-stdin"),
        {"text": "2"},
    )
    client = ScriptedClient(terminal=True)
    client.answers = ["allow_once", "allow_once"]
    async with acp_agent(client) as conn:
        sid = await new_session(conn, tmp_path)
        await ask(conn, sid, "fail")
        await ask(conn, sid, "stdin")
    failed = tool_messages(fake_provider, 1)[-1]
    assert "host=the-test-client" in failed and "exit_code: 3" in failed and "[exit 3]" in failed
    (done,) = [u for u in terminal_updates(client) if u.status == "failed"]
    assert [c.type for c in done.content] == [
        "terminal",
        "content",
    ] and "exit_code: 3" in done.content[1].content.text
    local = tool_messages(fake_provider, 3)[-1]
    assert "host=local" in local and "from-stdin" in local
    assert len(client.terminals) == 1


async def test_the_tools_timeout_kills_the_clients_terminal(tmp_path, fake_provider):
    write_user_config(fake_provider.url)
    fake_provider.script(
        terminal_call("echo started; sleep 60", timeout_ms=300), {"text": "timed out"}
    )
    client = ScriptedClient(terminal=True)
    client.answers = ["allow_once"]
    async with acp_agent(client) as conn:
        sid = await new_session(conn, tmp_path)
        assert (await ask(conn, sid, "slow")).stop_reason == "end_turn"
    (terminal,) = client.terminals.values()
    assert [method for method, _ in client.terminal_calls] == [
        "create",
        "wait_for_exit",
        "kill",
        "output",
        "release",
    ]
    assert terminal.killed
    seen = tool_messages(fake_provider, 1)[-1]
    assert "timeout: command exceeded 300 ms" in seen and "started" in seen
    assert client.of("tool_call_update")[-1].status == "failed"


async def test_cancel_kills_and_releases_the_clients_terminal(tmp_path, fake_provider):
    write_user_config(fake_provider.url)
    fake_provider.script(terminal_call("sleep 60"), {"text": "never"})
    client = ScriptedClient(terminal=True)
    client.answers = ["allow_once"]
    async with acp_agent(client) as conn:
        sid = await new_session(conn, tmp_path)
        prompt = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[sdk.text_block("go")]))
        await client.wait_for(lambda: ("wait_for_exit", "term-1") in client.terminal_calls)
        await conn.cancel(session_id=sid)
        assert (await asyncio.wait_for(prompt, 10)).stop_reason == "cancelled"
        await client.wait_for(lambda: ("release", "term-1") in client.terminal_calls)
    assert ("kill", "term-1") in client.terminal_calls
    assert client.terminals["term-1"].killed
