"""lich acp and a config with bad values: the session starts with the rest of the config, and the
first answer names what was dropped (ACP has no other channel to the user), once."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.acp.acp_client import ScriptedClient, acp_agent, write_user_config
from tests.acp.test_acp_agent import ask, new_session


async def test_dropped_values_are_named_once_and_the_rest_applies(tmp_path, fake_provider):
    write_user_config(fake_provider.url, approval={"process/exec": "denyy"})
    (tmp_path / ".lich").mkdir()
    (tmp_path / ".lich" / "config.json").write_text(json.dumps({"max_turns": "many"}))
    fake_provider.script(
        {"tool_calls": [{"name": "terminal", "arguments": {"command": "touch ran"}}]},
        {"text": "first"},
        {"text": "second"},
    )
    client = ScriptedClient()
    async with acp_agent(client) as conn:
        sid = await new_session(conn, tmp_path)
        await ask(conn, sid, "one")
        first = client.text()
        assert "max_turns: expected an integer from 1 to 1000, got str 'many'" in first
        assert "approval.process/exec" in first and "did you mean 'deny'?" in first
        assert first.endswith("first")
        # The user's mistyped deny still denies: the command never asked and never ran.
        assert not client.permission_requests
        assert not (tmp_path / "ran").exists()
        tool_results = [
            m for m in fake_provider.requests[1]["json"]["messages"] if m.get("role") == "tool"
        ]
        assert "approval_denied" in str(tool_results[0]["content"])
        await ask(conn, sid, "two")
        assert client.text().count("max_turns") == 1  # said once per session


async def test_a_broken_user_config_leaves_the_session_reading_only(
    tmp_path, fake_provider, monkeypatch
):
    write_user_config(fake_provider.url)
    # The provider comes from the environment: the user config's cannot be read either.
    monkeypatch.setenv("LICH_BASE_URL", fake_provider.url + "/v1")
    monkeypatch.setenv("LICH_MODEL", "fake-model")
    fake_provider.script({"text": "ok"})
    user_file = Path(os.environ.get("XDG_CONFIG_HOME") or Path(os.environ["HOME"]) / ".config")
    user_file = user_file / "lich" / "config.json"
    user_file.write_text(user_file.read_text()[:-1] + ",,}")
    client = ScriptedClient()
    async with acp_agent(client) as conn:
        sid = await new_session(conn, tmp_path)
        await ask(conn, sid, "hi")
        text = client.text()
        assert str(user_file) in text and "invalid JSON at line 1" in text
        assert "may only read files" in text and text.endswith("ok")
        offered = {tool["function"]["name"] for tool in fake_provider.requests[0]["json"]["tools"]}
        assert "read_file" in offered and not offered & {"write_file", "terminal", "apply_patch"}
