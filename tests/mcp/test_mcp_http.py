"""MCP over streamable HTTP with a real server on 127.0.0.1 (a free port), through the agent."""

from __future__ import annotations

import json
import os
from pathlib import Path

from scripted_model import ScriptedModel, Turn, call, tools_turn

from lich_core.mcp.tools import McpTool
from tests.mcp.mcp_support import BASIC_TOOLS, http_server, make_agent, make_config, tool_outputs

TOKEN = "Bearer s3cret-token"


async def test_http_server_with_headers_from_the_environment(
    tmp_path: Path, runtimes, monkeypatch
) -> None:
    monkeypatch.setattr(McpTool, "timeout_ms", 1_000)  # a short deadline for the hanging call
    async with http_server("--require-header", f"Authorization={TOKEN}") as (port, process):
        url = f"http://127.0.0.1:{port}/mcp"
        config = make_config(
            tmp_path, {"web": {"url": url, "headers_env": {"Authorization": "LICH_TEST_WEB_AUTH"}}}
        )
        runtime = runtimes(
            config, env={"PATH": os.environ.get("PATH", ""), "LICH_TEST_WEB_AUTH": TOKEN}
        )
        # The header's variable is a credential: tools (terminal, stdio servers) never see it.
        assert "LICH_TEST_WEB_AUTH" not in runtime.executor.env
        model = ScriptedModel(
            tools_turn(
                call("mcp_web_whoami", id="c1"), call("mcp_web_add", {"a": 2, "b": 40}, id="c2")
            ),
            tools_turn(call("mcp_web_hang", id="c3")),
            tools_turn(call("mcp_web_echo", {"text": "over http"}, id="c4")),
            Turn(text="done"),
        )
        result = await make_agent(config, model, runtime).run("use the web server")
        assert result.stopped_reason == "final", result.error
        whoami, added, hung, echoed = tool_outputs(result)
        assert whoami == TOKEN
        assert added == "42"
        assert json.loads(hung)["error"] == "timeout: mcp_web_hang exceeded 1000ms"
        assert echoed == "over http"
        assert runtime.mcp.status() == [
            {
                "name": "web",
                "transport": "http",
                "state": "connected",
                "tools": BASIC_TOOLS,
                "last_error": None,
            }
        ]

        # The server goes away: calls fail cleanly and the server is marked failed.
        process.kill()
        await process.wait()
        gone = await runtime.executor.execute("mcp_web_echo", {"text": "anyone?"})
        assert not gone.ok and gone.error.startswith(
            f"mcp_unavailable: web: the connection to {url} closed"
        ), gone.error
        [status] = runtime.mcp.status()
        assert status["state"] == "failed" and url in status["last_error"]


async def test_http_attach_failures_and_refusals(tmp_path: Path, runtimes) -> None:
    async with http_server("--require-header", f"Authorization={TOKEN}") as (port, _process):
        url = f"http://127.0.0.1:{port}/mcp"
        config = make_config(
            tmp_path,
            {
                "unset": {"url": url, "headers_env": {"Authorization": "LICH_TEST_NOT_SET"}},
                "anonymous": {"url": url},
                "remote": {"url": "http://mcp.example.org/mcp"},
                "private": {"url": f"http://10.1.2.3:{port}/mcp"},
                "local": {
                    "url": f"http://localhost:{port}/mcp",
                    "headers_env": {"Authorization": "LICH_TEST_WEB_AUTH"},
                },
            },
        )
        runtime = runtimes(config, env={"LICH_TEST_WEB_AUTH": TOKEN})
        before = {item["name"]: item for item in runtime.mcp.status()}
        assert before["remote"]["state"] == "refused" and before["private"]["state"] == "refused"
        assert before["remote"]["last_error"] == (
            "mcp_refused: remote: plain http to mcp.example.org is not allowed: use https, "
            "or a loopback address (127.0.0.1, ::1, localhost)"
        )
        added = await runtime.ensure_mcp()
        assert added and all(name.startswith("mcp_local_") for name in added)
        after = {item["name"]: item for item in runtime.mcp.status()}
        assert after["unset"]["state"] == "failed"
        assert after["unset"]["last_error"] == (
            "headers_env: the environment variable LICH_TEST_NOT_SET (for the Authorization header) is not set"
        )
        assert after["anonymous"]["state"] == "failed"
        assert after["anonymous"]["last_error"].startswith(f"HTTP 401 from {url}")
        assert after["remote"]["state"] == "refused" and after["private"]["state"] == "refused"
        assert after["local"]["state"] == "connected"
        answered = await runtime.executor.execute("mcp_local_whoami", {})
        assert answered.output == TOKEN
