"""A tool call's status over ACP: `pending` while it awaits the user's approval, `in_progress` only
once it runs, and a failed call shows its error text (never the model's JSON envelope), live and
when the session is loaded again. `python -m lich_acp` over stdio, as in test_acp_agent."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.acp.acp_client import WAIT_S, ScriptedClient, acp_agent, write_user_config
from tests.acp.test_acp_agent import ask, new_session, tool_messages

TERMINAL_CALL = {"tool_calls": [{"name": "terminal", "arguments": {"command": "echo ran-it"}}]}
PERMISSION = "request_permission"


class TimelineClient(ScriptedClient):
    """Also keeps, in the order the client got them, each tool call's statuses and permission
    requests: (call id, status or PERMISSION)."""

    def __init__(self) -> None:
        super().__init__()
        self.timeline: list[tuple[str, str]] = []

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> Any:
        # An in_progress the client already has would be a call reported running before it was allowed.
        self.timeline.append((tool_call.tool_call_id, PERMISSION))
        return await super().request_permission(session_id, tool_call, options, **kwargs)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if update.session_update in ("tool_call", "tool_call_update") and update.status is not None:
            self.timeline.append((update.tool_call_id, update.status))
        await super().session_update(session_id, update, **kwargs)

    def steps(self, call_id: str) -> list[str]:
        return [step for who, step in self.timeline if who == call_id]


def only_text(update: Any) -> str:
    """The one text block a finished call shows."""
    assert update.content is not None and len(update.content) == 1, update.content
    block = update.content[0]
    assert block.type == "content" and block.content.type == "text"
    return str(block.content.text)


async def test_a_call_awaiting_approval_is_pending_until_allowed(
    tmp_path: Path, fake_provider: Any
) -> None:
    write_user_config(fake_provider.url)
    fake_provider.script(TERMINAL_CALL, {"text": "done"})
    client = TimelineClient()
    async with acp_agent(client) as conn:
        sid = await new_session(conn, tmp_path)
        client.answers = ["allow_once"]
        assert (await ask(conn, sid, "run")).stop_reason == "end_turn"
    call_id = client.of("tool_call")[0].tool_call_id
    assert client.steps(call_id) == ["pending", PERMISSION, "in_progress", "completed"]
    assert "ran-it" in only_text(client.of("tool_call_update")[-1])


async def test_a_denied_call_goes_from_pending_to_failed_with_the_error_text(
    tmp_path: Path, fake_provider: Any
) -> None:
    write_user_config(fake_provider.url)
    fake_provider.script(TERMINAL_CALL, {"text": "1"}, TERMINAL_CALL, {"text": "2"})
    client = TimelineClient()
    async with acp_agent(client) as conn:
        sid = await new_session(conn, tmp_path)
        client.answers = ["reject_once"]
        await ask(conn, sid, "run")
        client.answers = [None]  # the user dismissed the question: a denial too
        await ask(conn, sid, "run again")
        calls = [start.tool_call_id for start in client.of("tool_call")]
        assert len(calls) == 2
        for call_id in calls:
            assert client.steps(call_id) == ["pending", PERMISSION, "failed"]
        ends = [update for update in client.of("tool_call_update") if update.status == "failed"]
        assert [only_text(end) for end in ends] == ["approval_denied: the user denied terminal"] * 2
        # The model still reads the envelope.
        assert json.loads(tool_messages(fake_provider, 1)[-1]) == {
            "ok": False,
            "output": "",
            "error": "approval_denied: the user denied terminal",
        }

    # session/load (another agent process) shows the same text for the stored failures.
    loaded = ScriptedClient()
    async with acp_agent(loaded) as conn:
        await asyncio.wait_for(
            conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[]), WAIT_S
        )
    replayed = [update for update in loaded.of("tool_call_update") if update.status == "failed"]
    assert [only_text(end) for end in replayed] == ["approval_denied: the user denied terminal"] * 2


async def test_a_failed_call_that_needs_no_approval_shows_its_error_text(
    tmp_path: Path, fake_provider: Any
) -> None:
    write_user_config(fake_provider.url)
    fake_provider.script(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "missing.py"}}]},
        {"text": "no such file"},
    )
    client = TimelineClient()
    async with acp_agent(client) as conn:
        sid = await new_session(conn, tmp_path)
        await ask(conn, sid, "read it")
    call_id = client.of("tool_call")[0].tool_call_id
    assert client.steps(call_id) == ["pending", "in_progress", "failed"]
    text = only_text(client.of("tool_call_update")[-1])
    assert text.startswith("not_found: ") and "missing.py" in text
    assert client.permission_requests == []
