"""A new `lich acp` process in a workspace where an agent task without process/exec wrote a
conftest.py (issue #42): the model's run_tests is refused (`workspace_changed:`) without a
permission request, and pytest never imports that conftest.py."""

from __future__ import annotations

import json
from pathlib import Path

from tests.acp.acp_client import ScriptedClient, acp_agent, write_user_config
from tests.acp.test_acp_agent import ask, new_session, tool_messages
from tests.support.agent_writes import (
    CONFTEST,
    REFUSAL,
    RUN_TESTS,
    WITHOUT_EXEC,
    WRITE_CONFTEST,
    conftest_ran,
    make_project,
)


async def test_run_tests_is_refused_in_a_new_acp_process_after_agent_writes(
    tmp_path: Path, fake_provider
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    root = make_project(root.resolve())
    fake_provider.script(
        {"tool_calls": [WRITE_CONFTEST]},
        {"text": "wrote conftest.py"},
        {"tool_calls": [RUN_TESTS]},
        {"text": "ran the tests"},
    )
    write_user_config(fake_provider.url, capabilities=WITHOUT_EXEC)
    async with acp_agent(ScriptedClient()) as conn:
        await ask(conn, await new_session(conn, root), "add a conftest")
    assert (root / "conftest.py").read_text(encoding="utf-8") == CONFTEST

    write_user_config(fake_provider.url)  # every capability; run_tests asks (the default)
    client = ScriptedClient()
    client.answers = ["allow_once"]  # were it asked, the user would allow it
    async with acp_agent(client) as conn:
        response = await ask(conn, await new_session(conn, root), "run the tests")
    assert response.stop_reason == "end_turn"
    assert not conftest_ran(root), "the agent's conftest.py was imported"
    assert client.permission_requests == []  # refused whatever the answer: not asked
    (refused,) = tool_messages(fake_provider, -1)
    error = json.loads(refused)["error"]
    assert error.startswith(REFUSAL) and "`lich trust`" in error, error
