"""MCP servers in the language server, on the wire: the agent's call to an MCP tool is asked for
(capability mcp/call, approval ask by default) and then runs on the user's server; lich.status
shows the server. In-process: the servers live as long as the session and stop at shutdown."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from lsp_harness import provider_options, tool_messages

from tests.mcp.mcp_support import PLAIN_SERVER, PLAIN_TOOLS, pid_alive

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")


def mcp_options(fake_provider, **extra) -> dict:
    servers = {"tools": {"command": sys.executable, "args": [PLAIN_SERVER]}}
    return provider_options(fake_provider, mcp_servers=servers, **extra)


@pytest.mark.parametrize("client_name", ["visual-studio-code", "neovim@v0.7.0"])
async def test_an_mcp_tool_call_is_asked_for_then_runs(
    session, root: Path, fake_provider, client_name: str
) -> None:
    fake_provider.script(
        {"tool_calls": [{"name": "mcp_tools_echo", "arguments": {"text": "hi from mcp"}}]},
        {"tool_calls": [{"name": "mcp_tools_add", "arguments": {"a": 2, "b": 3}}]},
        {"text": "done"},
    )
    client = await session(client_name, init_options=mcp_options(fake_provider))
    client.editor.message_answers.extend(["Allow once", "Deny"])
    result = await client.command("lich.ask", {"prompt": "use the MCP tools"})
    assert result["stopped_reason"] == "final"
    asked, denied = client.editor.message_requests
    assert "mcp_tools_echo" in asked.message and "mcp/call" in asked.message
    assert "mcp_tools_add" in denied.message
    echoed, refused = tool_messages(fake_provider)
    assert echoed == "hi from mcp"
    assert json.loads(refused)["error"].startswith("approval_denied:")
    # The model was offered the server's tools on the first request.
    offered = {tool["function"]["name"] for tool in fake_provider.requests[0]["json"]["tools"]}
    assert {"mcp_tools_echo", "mcp_tools_add"} <= offered
    status = await client.command("lich.status", {})
    (server,) = status["mcp_servers"]
    assert (server["name"], server["state"], server["tools"]) == ("tools", "connected", PLAIN_TOOLS)


async def test_mcp_servers_stop_when_the_language_server_shuts_down(
    editor, root: Path, fake_provider
) -> None:
    fake_provider.script(
        {"tool_calls": [{"name": "mcp_tools_info", "arguments": {}}]}, {"text": "done"}
    )
    fake = await editor(init_options=mcp_options(fake_provider, approval={"mcp/call": "allow"}))
    status = await fake.command("lich.status", {})
    assert status["mcp_servers"][0]["state"] == "not_started"  # attached by the first task
    result = await fake.command("lich.ask", {"prompt": "who are you"})
    assert result["stopped_reason"] == "final"
    (info,) = tool_messages(fake_provider)
    pid = int(json.loads(info)["pid"])
    assert pid_alive(pid)
    await fake.session.shutdown(5.0)
    assert not pid_alive(pid)
