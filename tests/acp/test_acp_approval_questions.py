"""`session/request_permission` says what will run: the tool call's content is the same line the
language server's question shows (lich_core.approvals.what_will_run): for run_tests in an untrusted
repository the pytest command line, the user's interpreter and the files pytest loads; for
python_eval its interpreter. `lich acp` over stdio."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.acp.acp_client import ScriptedClient, acp_agent, write_user_config
from tests.acp.test_acp_agent import ask, new_session, tool_messages
from tests.support.untrusted_repo import (
    EVAL_CODE,
    PYTHON_EVAL_RUNS,
    RUN_TESTS_RUNS,
    make_untrusted_repo,
    nothing_of_the_repo_ran,
)


def content_texts(tool_call) -> list[str]:  # type: ignore[no-untyped-def]
    return [item.content.text for item in tool_call.content or []]


async def test_the_permission_request_names_the_command_and_the_interpreter(
    tmp_path: Path, fake_provider
) -> None:
    root = make_untrusted_repo(tmp_path)
    write_user_config(fake_provider.url)
    fake_provider.script(
        {"tool_calls": [{"name": "run_tests", "arguments": {}}]},
        {"tool_calls": [{"name": "python_eval", "arguments": {"code": EVAL_CODE}}]},
        {"text": "done"},
    )
    client = ScriptedClient()
    client.answers = ["reject_once", "allow_once"]
    async with acp_agent(client) as conn:
        sid = await new_session(conn, root)
        await ask(conn, sid, "test it")
    (tests_call, _), (eval_call, _) = client.permission_requests
    assert content_texts(tests_call) == [RUN_TESTS_RUNS]
    assert content_texts(eval_call) == [PYTHON_EVAL_RUNS]
    denied, evaluated = tool_messages(fake_provider, -1)
    assert "approval_denied: the user denied run_tests" in denied
    assert evaluated == repr(sys.executable)  # the interpreter the request named
    assert nothing_of_the_repo_ran(root)
