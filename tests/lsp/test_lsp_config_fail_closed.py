"""The issue's fail-open cases over the wire (#42): a real `lich-lsp`, every client profile.

A repository's `.lich/config.json` with one bad value used to make the server drop every setting
and run on built-in defaults: the editor's Restricted Mode grant, the user's `approval: deny` and
the editor's provider with them. Now the bad value is named once and everything else holds. A user
config that cannot be parsed leaves the agent reading only, with one error naming the file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from lsp_harness import provider_options
from lsprotocol import types

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")

GATED_TOOLS = {"write_file", "apply_patch", "terminal", "edit_file"}


def user_config(data: object) -> Path:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "lich" / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def offered_tools(request: dict) -> set[str]:
    return {tool["function"]["name"] for tool in request["json"].get("tools", [])}


@pytest.mark.parametrize(
    "bad", [{"max_turns": "many"}, {"completion_prefix_chars": 999999}], ids=["type", "range"]
)
async def test_a_bad_workspace_value_keeps_restricted_mode_and_the_users_deny(
    session, root: Path, client_name: str, fake_provider, bad: dict
) -> None:
    user_config({"approval": {"process/exec": "deny"}})
    (root / ".lich").mkdir()
    (root / ".lich" / "config.json").write_text(json.dumps(bad), encoding="utf-8")
    fake_provider.script(
        {"tool_calls": [{"name": "terminal", "arguments": {"command": "touch ran"}}]},
        {"text": "done"},
    )
    restricted = provider_options(
        fake_provider, capabilities=["file/read"], workspace_trust="never"
    )
    client = await session(client_name, init_options=restricted)
    [key] = bad
    await client.wait_until(
        lambda: any(f".lich/config.json: {key}:" in m.message for m in client.messages),
        what="the bad value named",
    )
    status = await client.command("lich.status", {})
    assert status["provider"]["name"] == "fake"
    assert [p["key"] for p in status["config"]["problems"]] == [key]
    result = await client.command("lich.ask", {"prompt": "run it"})
    assert result["stopped_reason"] == "final"
    offered = offered_tools(fake_provider.requests[0])
    assert "read_file" in offered and not offered & GATED_TOOLS
    assert not (root / "ran").exists()
    named = [m for m in client.messages if f"{key}:" in m.message]
    assert len(named) == 1 and named[0].type == types.MessageType.Warning


async def test_a_broken_user_config_is_one_error_and_the_agent_only_reads(
    session, root: Path, client_name: str, fake_provider
) -> None:
    path = user_config('{\n  "approval": {"process/exec": "deny"},\n  oops\n}')
    fake_provider.script({"text": "read only"})
    client = await session(client_name, init_options=provider_options(fake_provider))
    await client.wait_until(
        lambda: any(str(path) in m.message for m in client.messages), what="the broken file named"
    )
    [error] = [m for m in client.messages if str(path) in m.message]
    assert error.type == types.MessageType.Error and "line 3" in error.message
    status = await client.command("lich.status", {})
    assert status["config_error"] == error.message
    result = await client.command("lich.ask", {"prompt": "look"})
    assert result["final"] == "read only"
    offered = offered_tools(fake_provider.requests[0])
    assert "read_file" in offered and not offered & GATED_TOOLS


async def test_a_typo_in_the_users_completion_entry_leaves_the_providers_alone(
    session, root: Path, client_name: str, fake_provider
) -> None:
    path = user_config(
        {
            **provider_options(fake_provider),
            "completion": {"kind": "ollama", "modle": "qwen2.5-coder"},
        }
    )
    client = await session(client_name)
    await client.wait_until(
        lambda: any("completion.modle" in m.message for m in client.messages),
        what="the typo named",
    )
    [named] = [m for m in client.messages if "completion.modle" in m.message]
    assert str(path) in named.message and "did you mean 'model'?" in named.message
    status = await client.command("lich.status", {})
    assert status["provider"]["name"] == "fake"
    assert status["completion"]["model"] is None  # completions off, nothing else
