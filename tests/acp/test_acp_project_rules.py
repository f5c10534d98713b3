"""Project rules in `lich acp` (issue #43): a session's first prompt gets the rules read through
the read guard (an AGENTS.md linked to .lich/config.json is not sent), and the agent writing a
project rules file asks the client's permission though file writes are allowed by default:
rejected, the file is unchanged; allowed, it is written and noted in the trust store's agent
writes; "allow always" is remembered for that tool and file only."""

from __future__ import annotations

import json
from pathlib import Path

from lich_core.trust import TrustStore
from lich_core.userstate import workspace_state_dir
from tests.acp.acp_client import ScriptedClient, acp_agent, write_user_config
from tests.acp.test_acp_agent import ask, new_session, tool_messages

CONFIG_MARKER = "CONFIG-MARKER-7f3a"
RULES_LABEL = "Project rules from the repository"
WRITE_RULES = {
    "tool_calls": [
        {"name": "write_file", "arguments": {"path": "AGENTS.md", "content": "Obey the model.\n"}}
    ]
}
RULES_WRITE_TEXT = "writes AGENTS.md, project rules that later tasks are given as instructions"


def first_user_message(server, index: int) -> str:
    messages = server.requests[index]["json"]["messages"]
    return next(str(m["content"]) for m in messages if m.get("role") == "user")


async def test_rules_linked_to_the_config_are_not_sent(tmp_path: Path, fake_provider) -> None:
    (tmp_path / ".lich").mkdir()
    (tmp_path / ".lich" / "config.json").write_text(json.dumps({"quick_prompts": [CONFIG_MARKER]}))
    (tmp_path / "AGENTS.md").symlink_to(Path(".lich") / "config.json")
    write_user_config(fake_provider.url)
    fake_provider.script({"text": "ok"})
    client = ScriptedClient()
    async with acp_agent(client) as conn:
        sid = await new_session(conn, tmp_path)
        await ask(conn, sid, "tidy up")
    message = first_user_message(fake_provider, 0)
    assert message.startswith("tidy up")
    assert CONFIG_MARKER not in message and RULES_LABEL not in message


async def test_an_agent_write_to_agents_md_asks_permission(tmp_path: Path, fake_provider) -> None:
    (tmp_path / "AGENTS.md").write_text("Root rule.\n")
    write_user_config(fake_provider.url)
    fake_provider.script(
        WRITE_RULES,
        {"text": "rejected"},
        WRITE_RULES,
        {"text": "written"},
        WRITE_RULES,
        {"text": "written again"},
        WRITE_RULES,
        {"text": "no question"},
    )
    client = ScriptedClient()
    async with acp_agent(client) as conn:
        sid = await new_session(conn, tmp_path)
        client.answers = ["reject_once"]
        await ask(conn, sid, "update the rules")
        assert len(client.permission_requests) == 1
        tool_call, _ = client.permission_requests[0]
        assert RULES_WRITE_TEXT in tool_call.content[0].content.text
        assert "approval_denied: the user denied write_file" in tool_messages(fake_provider, 1)[-1]
        assert (tmp_path / "AGENTS.md").read_text() == "Root rule.\n"
        assert TrustStore.for_env().agent_writes(tmp_path) == []

        client.answers = ["allow_once"]
        await ask(conn, sid, "update the rules")
        assert len(client.permission_requests) == 2
        assert (tmp_path / "AGENTS.md").read_text() == "Obey the model.\n"
        assert TrustStore.for_env().agent_writes(tmp_path) == ["AGENTS.md"]

        client.answers = ["allow_always"]
        await ask(conn, sid, "update the rules")
        await ask(conn, sid, "update the rules")  # remembered: no question
        assert len(client.permission_requests) == 3
    saved = json.loads((workspace_state_dir(tmp_path) / "approvals.json").read_text())
    assert saved == {"always": ["write_file@AGENTS.md"]}
