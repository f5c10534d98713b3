"""MCP over stdio with real servers (tests/mcp/servers), through the agent.

What the SDK's servers send (content kinds, many tools, names) is tested with basic_server.py,
written with the SDK; how lich handles a server's process (crashes, exits, hangs, children,
cancels, a shared attach) with plain_server.py, which has the same process tools without the
SDK's second of start-up.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from agent_helpers import wait_until
from scripted_model import ScriptedModel, Turn, call, tools_turn

from lich_core.mcp.spec import specs_from_config
from lich_core.mcp.tools import McpTool
from lich_core.tools.types import CancelToken, ToolContext
from tests.mcp.mcp_support import (
    BASIC_TOOLS,
    LEGACY_SERVER,
    PLAIN_SERVER,
    PLAIN_TOOLS,
    SILENT_SERVER,
    make_agent,
    make_config,
    pid_alive,
    stdio_entry,
    tool_outputs,
)

MAX_TOOL_NAME = 64

# The silent server fails after this; the good server of that test is the stdlib-only legacy
# server, which answers a fraction of a second after its interpreter starts, even on a loaded machine.
STATUS_TEST_ATTACH_TIMEOUT_S = 6.0
LEGACY_TOOLS = 5


def info_of(output: str) -> dict[str, str]:
    return json.loads(output)


async def test_tools_are_listed_and_called_from_an_agent_task(tmp_path: Path, runtimes) -> None:
    (tmp_path / "sub").mkdir()
    config = make_config(
        tmp_path,
        {"basic": stdio_entry(env={"LICH_TEST_GREETING": "hello"}, cwd="sub")},
    )
    runtime = runtimes(
        config,
        env={"PATH": "/usr/bin:/bin", "LICH_TEST_FROM_TOOLS": "1", "OPENAI_API_KEY": "sk-secret"},
    )
    assert runtime.mcp is not None
    assert runtime.mcp.status() == [
        {
            "name": "basic",
            "transport": "stdio",
            "state": "not_started",
            "tools": 0,
            "last_error": None,
        }
    ]
    assert "mcp_basic_echo" not in runtime.registry  # nothing starts before the first run
    model = ScriptedModel(
        tools_turn(
            call("mcp_basic_echo", {"text": "hi there"}, id="c1"), call("mcp_basic_info", id="c2")
        ),
        tools_turn(
            call("mcp_basic_env_has", {"name": "OPENAI_API_KEY"}, id="c3"),
            call("mcp_basic_mixed", id="c4"),
        ),
        tools_turn(call("mcp_basic_fail", {"message": "bad input"}, id="c5")),
        Turn(text="done"),
    )
    agent = make_agent(config, model, runtime)
    result = await agent.run("use the server")
    assert result.stopped_reason == "final", result.error
    echo, info, has_key, mixed, failed = tool_outputs(result)
    assert echo == "hi there"
    details = info_of(info)
    # The tools' environment (scrubbed) plus the entry's env, in the entry's cwd under the work dir.
    assert details["LICH_TEST_GREETING"] == "hello" and details["LICH_TEST_FROM_TOOLS"] == "1"
    assert Path(details["cwd"]).resolve() == (tmp_path / "sub").resolve()
    assert has_key == "no"
    assert mixed.splitlines() == [
        "first",
        "[image: image/png, 5 bytes]",
        "[embedded resource: file:///notes.txt (text/plain), 3 chars]",
        "[resource link: file:///big.bin (big.bin)]",
        "last",
        '{"count": 2}',
    ]
    assert json.loads(failed)["error"] == "mcp_error: bad input"
    # The model saw the server's tools, with their schemas and a description naming the server.
    assert {"mcp_basic_echo", "mcp_basic_add", "mcp_basic_hang"} <= set(model.tools_seen[0])
    echo_tool = runtime.registry.get("mcp_basic_echo")
    assert isinstance(echo_tool, McpTool)
    assert echo_tool.parameters["properties"]["text"]["type"] == "string"
    assert echo_tool.description.startswith("[MCP server basic, tool echo] Echo the text back.")
    assert (echo_tool.capability, echo_tool.timeout_ms) == ("mcp/call", 120_000)
    described = {item["name"]: item for item in runtime.describe()}
    assert (
        described["mcp_basic_echo"]["capability"] == "mcp/call"
        and described["mcp_basic_echo"]["enabled"]
    )
    [status] = runtime.mcp.status()
    assert (
        status["state"] == "connected"
        and status["tools"] == BASIC_TOOLS
        and status["last_error"] is None
    )

    # A second run reuses the connection: same server process, nothing registered twice.
    model.script(tools_turn(call("mcp_basic_info", id="c6")), Turn(text="again"))
    again = await agent.run("again")
    assert info_of(tool_outputs(again)[0])["pid"] == details["pid"]
    assert await runtime.ensure_mcp() == []


async def test_a_server_that_crashes_mid_call_is_restarted_by_the_next_run(
    tmp_path: Path, runtimes
) -> None:
    config = make_config(tmp_path, {"basic": stdio_entry(script=PLAIN_SERVER)})
    runtime = runtimes(config)
    model = ScriptedModel(
        tools_turn(call("mcp_basic_info", id="c1")),
        tools_turn(call("mcp_basic_crash", id="c2")),
        tools_turn(call("mcp_basic_echo", {"text": "anyone?"}, id="c3")),
        Turn(text="it crashed"),
    )
    agent = make_agent(config, model, runtime)
    first = await agent.run("crash it")
    assert first.stopped_reason == "final", first.error
    info, crashed, after = tool_outputs(first)
    crashed_error = json.loads(crashed)["error"]
    assert crashed_error.startswith("mcp_unavailable: basic: the server exited with code 3"), (
        crashed_error
    )
    assert "crashing on purpose" in crashed_error  # its last stderr line
    # Not restarted in the middle of the run.
    assert json.loads(after)["error"].startswith("mcp_unavailable: basic:")
    [status] = runtime.mcp.status()
    assert status["state"] == "failed" and "exited with code 3" in status["last_error"]

    model.script(tools_turn(call("mcp_basic_info", id="c4")), Turn(text="back"))
    second = await agent.run("again")
    assert second.stopped_reason == "final", second.error
    restarted = info_of(tool_outputs(second)[0])
    assert restarted["pid"] != info_of(info)["pid"]
    assert runtime.mcp.status()[0]["state"] == "connected"
    assert not pid_alive(int(info_of(info)["pid"]))


async def test_a_call_that_never_answers_times_out_and_the_run_goes_on(
    tmp_path: Path, runtimes, monkeypatch
) -> None:
    # A short executor deadline for MCP tools (120 s in real use).
    monkeypatch.setattr(McpTool, "timeout_ms", 1_000)
    config = make_config(tmp_path, {"basic": stdio_entry(script=PLAIN_SERVER)})
    runtime = runtimes(config)
    model = ScriptedModel(
        tools_turn(call("mcp_basic_info", id="c1")),
        tools_turn(call("mcp_basic_hang", id="c2")),
        tools_turn(
            call("mcp_basic_echo", {"text": "still here"}, id="c3"), call("mcp_basic_info", id="c4")
        ),
        Turn(text="done"),
    )
    result = await make_agent(config, model, runtime).run("hang")
    assert result.stopped_reason == "final", result.error
    before, hung, echoed, after = tool_outputs(result)
    assert json.loads(hung)["error"] == "timeout: mcp_basic_hang exceeded 1000ms"
    # The connection survived the abandoned call.
    assert echoed == "still here"
    assert info_of(after)["pid"] == info_of(before)["pid"]


async def test_cancelling_a_run_stops_waiting_for_the_server_at_once(
    tmp_path: Path, runtimes
) -> None:
    config = make_config(tmp_path, {"basic": stdio_entry(script=PLAIN_SERVER)})
    runtime = runtimes(config)
    cancel = CancelToken()

    def on_event(event) -> None:
        if event.type == "tool_call_start" and event.data.name == "mcp_basic_hang":
            asyncio.get_running_loop().call_soon(cancel.cancel)

    model = ScriptedModel(tools_turn(call("mcp_basic_hang", id="c1")), Turn(text="never"))
    agent = make_agent(config, model, runtime)
    started = time.monotonic()
    result = await asyncio.wait_for(agent.run("hang", cancel=cancel, on_event=on_event), 30)
    assert result.stopped_reason == "aborted"
    assert time.monotonic() - started < 10  # not the tool's 120 s deadline
    # The same connection still answers.
    ctx = runtime.context()
    echoed = await runtime.executor.execute("mcp_basic_echo", {"text": "ok"}, ctx)
    assert (echoed.ok, echoed.output) == (True, "ok")


async def test_two_hundred_tools_are_all_registered_with_unique_names(
    tmp_path: Path, runtimes
) -> None:
    config = make_config(tmp_path, {"big": stdio_entry("--many", "200")})
    runtime = runtimes(config)
    added = await runtime.ensure_mcp()
    generated = [name for name in added if not name.startswith(("mcp_big_echo", "mcp_big_add"))]
    assert len(added) == 200 + BASIC_TOOLS and len(set(added)) == 200 + BASIC_TOOLS
    assert all(len(name) <= MAX_TOOL_NAME and name.startswith("mcp_big_") for name in added)
    assert all(name in runtime.base_registry and name in runtime.registry for name in added)
    assert "mcp_big_tool_000" in added
    # The 100 long names only differ past 64 characters: each got a hash of its own.
    long = [name for name in generated if name.startswith("mcp_big_long_tool_name")]
    assert len(long) == 100 and len(set(long)) == 100
    assert runtime.mcp.status()[0]["tools"] == 200 + BASIC_TOOLS
    # Calls reach the right tool.
    tool = next(t for t in runtime.mcp.tools() if t.remote_name.endswith(".199"))
    answered = await runtime.executor.execute(tool.name, {})
    assert (answered.ok, answered.output) == (True, "generated 199")
    # The same listing gives the same names (a second runtime, a second server process).
    other = runtimes(config)
    assert await other.ensure_mcp() == added


async def test_tools_enabled_names_one_mcp_tool(tmp_path: Path, runtimes) -> None:
    config = make_config(
        tmp_path,
        {"basic": stdio_entry(script=PLAIN_SERVER)},
        tools_enabled=["read_file", "mcp_basic_echo"],
    )
    runtime = runtimes(config)
    model = ScriptedModel(
        tools_turn(
            call("mcp_basic_echo", {"text": "allowed"}, id="c1"),
            call("mcp_basic_add", {"a": 1, "b": 2}, id="c2"),
        ),
        Turn(text="done"),
    )
    result = await make_agent(config, model, runtime).run("filter")
    echoed, added = tool_outputs(result)
    assert echoed == "allowed"
    assert json.loads(added)["error"] == "unknown_tool: mcp_basic_add"
    assert sorted(model.tools_seen[0]) == ["mcp_basic_echo", "read_file"]
    assert "mcp_basic_add" in runtime.base_registry and "mcp_basic_add" not in runtime.registry
    described = {item["name"]: item for item in runtime.describe()}
    assert described["mcp_basic_echo"]["selected"] and not described["mcp_basic_add"]["selected"]


async def test_close_kills_the_whole_process_group(tmp_path: Path, runtimes) -> None:
    config = make_config(tmp_path, {"basic": stdio_entry(script=PLAIN_SERVER)})
    runtime = runtimes(config)
    await runtime.ensure_mcp()
    server_pid = int(info_of((await runtime.executor.execute("mcp_basic_info", {})).output)["pid"])
    child = await runtime.executor.execute("mcp_basic_spawn_child", {})
    # This one ignores SIGTERM: it takes the SIGKILL after the grace.
    stubborn = await runtime.executor.execute("mcp_basic_spawn_child", {"ignore_term": True})
    child_pid, stubborn_pid = int(child.output), int(stubborn.output)
    assert pid_alive(server_pid) and pid_alive(child_pid) and pid_alive(stubborn_pid)
    started = time.monotonic()
    await runtime.aclose()
    assert time.monotonic() - started < 10
    assert not pid_alive(server_pid)
    assert not pid_alive(child_pid)
    assert not pid_alive(stubborn_pid)
    assert runtime.mcp.status()[0]["state"] == "not_started"
    assert await runtime.ensure_mcp() == []  # closed: nothing starts again
    gone = await runtime.executor.execute("mcp_basic_echo", {"text": "x"})
    assert not gone.ok and gone.error.startswith("mcp_unavailable: basic:")


async def test_status_states(tmp_path: Path) -> None:
    servers = {
        "off": stdio_entry(enabled=False),
        "runner": {"command": "npx", "args": ["-y", "some-server"]},
        "far": {"url": "http://mcp.example.org/mcp"},
        "missing": {"command": str(tmp_path / "no-such-program")},
        "silent": stdio_entry(script=SILENT_SERVER),
        "good": stdio_entry(script=LEGACY_SERVER),
        "bad_cwd": stdio_entry(cwd="nowhere"),
    }
    # Imported here, not at the top: it imports the SDK, which only the "mcp" group's worker needs.
    from lich_core.mcp.manager import McpManager

    manager = McpManager(
        specs_from_config(servers),
        work_dir=tmp_path,
        tool_env={"PATH": "/usr/bin:/bin"},
        attach_timeout_s=STATUS_TEST_ATTACH_TIMEOUT_S,
    )
    try:
        states = {item["name"]: (item["transport"], item["state"]) for item in manager.status()}
        assert states == {
            "off": ("stdio", "disabled"),
            "runner": ("stdio", "refused"),
            "far": ("http", "refused"),
            "missing": ("stdio", "not_started"),
            "silent": ("stdio", "not_started"),
            "good": ("stdio", "not_started"),
            "bad_cwd": ("stdio", "not_started"),
        }
        errors = {item["name"]: item["last_error"] for item in manager.status()}
        assert errors["runner"].startswith("mcp_refused: runner: npx downloads and runs a package")
        assert errors["far"].startswith("mcp_refused: far: plain http to mcp.example.org")
        attach = asyncio.ensure_future(manager.attach())
        await wait_until(
            lambda: manager.status()[4]["state"] == "connecting",
            "the silent server to be connecting",
        )
        await asyncio.wait_for(attach, 30)
        final = {item["name"]: item for item in manager.status()}
        assert final["good"]["state"] == "connected" and final["good"]["tools"] == LEGACY_TOOLS
        assert final["silent"]["state"] == "failed"
        assert (
            final["silent"]["last_error"]
            == f"no answer within {STATUS_TEST_ATTACH_TIMEOUT_S:g} s of starting"
        )
        assert final["missing"]["state"] == "failed"
        assert (
            final["missing"]["last_error"].startswith("cannot start ")
            and "No such file" in final["missing"]["last_error"]
        )
        assert (
            final["bad_cwd"]["state"] == "failed"
            and "is not a directory" in final["bad_cwd"]["last_error"]
        )
        assert final["off"]["state"] == "disabled" and final["runner"]["state"] == "refused"
        assert [tool.server for tool in manager.tools()] == ["good"] * LEGACY_TOOLS
    finally:
        await manager.close()


async def test_concurrent_runs_share_one_attach(tmp_path: Path, runtimes) -> None:
    config = make_config(tmp_path, {"basic": stdio_entry(script=PLAIN_SERVER)})
    runtime = runtimes(config)
    first, second = await asyncio.gather(runtime.ensure_mcp(), runtime.ensure_mcp())
    assert sorted(first + second) == sorted(tool.name for tool in runtime.mcp.tools())
    assert len(runtime.mcp.tools()) == PLAIN_TOOLS
    assert runtime.mcp.status()[0]["state"] == "connected"


async def test_a_legacy_server_with_unusable_schemas(tmp_path: Path, runtimes) -> None:
    """A handshake-era server (no server/discover) whose schemas providers would reject."""
    config = make_config(tmp_path, {"legacy": stdio_entry(script=LEGACY_SERVER)})
    runtime = runtimes(config)
    added = await runtime.ensure_mcp()
    assert added == [
        "mcp_legacy_plain",
        "mcp_legacy_stringly",
        "mcp_legacy_listy",
        "mcp_legacy_untyped",
        "mcp_legacy_schemaless",
    ]
    assert runtime.registry.get("mcp_legacy_plain").parameters == {
        "type": "object",
        "properties": {"q": {"type": "string"}},
    }
    for name in added[1:]:
        assert runtime.registry.get(name).parameters == {"type": "object"}
    answered = await runtime.executor.execute("mcp_legacy_listy", {"q": "x"})
    assert (answered.ok, answered.output) == (True, 'listy called with {"q": "x"}')


async def test_a_cancelled_direct_call_answers_promptly(tmp_path: Path, runtimes) -> None:
    config = make_config(tmp_path, {"basic": stdio_entry(script=PLAIN_SERVER)})
    runtime = runtimes(config)
    await runtime.ensure_mcp()
    token = CancelToken()
    ctx: ToolContext = runtime.context(cancel=token)
    call_task = asyncio.ensure_future(runtime.executor.execute("mcp_basic_hang", {}, ctx))
    # Cancelling the awaiting task (not the token) also stops the wait at once.
    other = asyncio.ensure_future(runtime.executor.execute("mcp_basic_hang", {}))
    token.cancel()
    answered = await asyncio.wait_for(call_task, 10)
    assert (answered.ok, answered.error) == (False, "cancelled")
    other.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(other, 10)
    echoed = await runtime.executor.execute("mcp_basic_echo", {"text": "fine"})
    assert echoed.output == "fine"


async def test_a_cancelled_run_stops_waiting_for_the_attach_and_close_stops_it(
    tmp_path: Path,
) -> None:
    from lich_core.mcp.manager import McpManager

    manager = McpManager(
        specs_from_config({"silent": stdio_entry(script=SILENT_SERVER)}),
        work_dir=tmp_path,
        tool_env={"PATH": "/usr/bin:/bin"},
        attach_timeout_s=60.0,
    )
    try:
        token = CancelToken()
        waiting = asyncio.ensure_future(manager.attach(token))
        server = manager._servers["silent"]
        await wait_until(
            lambda: server.conn is not None and server.conn.pgid is not None, "the server to start"
        )
        token.cancel()
        await asyncio.wait_for(waiting, 5)  # the run goes on; the attach does too
        assert manager.status()[0]["state"] == "connecting"
        conn = manager._servers["silent"].conn
        assert conn is not None and conn.pgid is not None
        pgid = conn.pgid
        assert pid_alive(pgid)
    finally:
        started = time.monotonic()
        await manager.close()
    assert time.monotonic() - started < 10
    assert not pid_alive(pgid)
    assert manager.status()[0] == {
        "name": "silent",
        "transport": "stdio",
        "state": "not_started",
        "tools": 0,
        "last_error": None,
    }


async def test_a_server_that_exits_between_calls_is_failed_and_restarted(
    tmp_path: Path, runtimes
) -> None:
    config = make_config(tmp_path, {"basic": stdio_entry(script=PLAIN_SERVER)})
    runtime = runtimes(config)
    await runtime.ensure_mcp()
    first_pid = info_of((await runtime.executor.execute("mcp_basic_info", {})).output)["pid"]
    assert (await runtime.executor.execute("mcp_basic_exit_soon", {})).output == "bye"
    await wait_until(lambda: runtime.mcp.status()[0]["state"] == "failed", "the exit to be noticed")
    [status] = runtime.mcp.status()
    assert status["last_error"].startswith("the server exited with code 4"), status
    gone = await runtime.executor.execute("mcp_basic_echo", {"text": "x"})
    assert gone.error.startswith("mcp_unavailable: basic: the server exited with code 4"), (
        gone.error
    )
    # The next run's attach starts it again; the tools keep their names and are not registered twice.
    assert await runtime.ensure_mcp() == []
    again = info_of((await runtime.executor.execute("mcp_basic_info", {})).output)["pid"]
    assert again != first_pid and runtime.mcp.status()[0]["state"] == "connected"
