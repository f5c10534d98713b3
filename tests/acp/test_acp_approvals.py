"""Allow always / reject always go to the shared approval store (the user state dir's
approvals.json for the workspace): later sessions, later agent processes and the language
server's approval check honour them without asking."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from lich_core.approvals import ApprovalStore
from lich_core.tools.builtin.python_eval import TOOL as PYTHON_EVAL
from lich_core.tools.builtin.terminal import TOOL as TERMINAL
from lich_core.tools.types import ToolContext
from lich_core.userstate import workspace_state_dir
from lich_lsp.approvals import ApprovalCheck
from lich_lsp.context import SessionContext
from tests.acp.acp_client import ScriptedClient, acp_agent, write_user_config
from tests.acp.test_acp_agent import ask, new_session, tool_messages

TERMINAL_CALL = {"tool_calls": [{"name": "terminal", "arguments": {"command": "echo ran-it"}}]}
EVAL_CALL = {"tool_calls": [{"name": "python_eval", "arguments": {"code": "print('evaluated')"}}]}


async def test_always_answers_hold_in_later_sessions_and_processes(tmp_path, fake_provider):
    write_user_config(fake_provider.url)
    # Per prompt: the tool call, then an answer (the model's requests are 2 per prompt).
    fake_provider.script(
        *[turn for call in [TERMINAL_CALL, EVAL_CALL] * 3 for turn in (call, {"text": "ok"})]
    )
    first = ScriptedClient()
    async with acp_agent(first) as conn:
        sid = await new_session(conn, tmp_path)
        first.answers = ["allow_always"]
        await ask(conn, sid, "run")
        first.answers = ["reject_always"]
        await ask(conn, sid, "eval")
        assert len(first.permission_requests) == 2
        # Another session of the same process: no question for either.
        other = await new_session(conn, tmp_path)
        await ask(conn, other, "run again")
        await ask(conn, other, "eval again")
        assert len(first.permission_requests) == 2
    saved = json.loads(
        (workspace_state_dir(tmp_path) / "approvals.json").read_text(encoding="utf-8")
    )
    assert saved == {"always": ["terminal"], "never": ["python_eval"]}
    # A new agent process.
    second = ScriptedClient()
    async with acp_agent(second) as conn:
        sid = await new_session(conn, tmp_path)
        await ask(conn, sid, "run in a new process")
        await ask(conn, sid, "eval in a new process")
    assert second.permission_requests == []
    outputs = [tool_messages(fake_provider, index)[-1] for index in range(1, 12, 2)]
    for ran in outputs[0::2]:
        assert "ran-it" in ran
    assert "approval_denied: the user denied python_eval" in outputs[1]
    for denied in outputs[3::2]:
        assert "approval_denied: the user rejected python_eval always for this workspace" in denied
        assert "evaluated" not in denied


async def test_the_language_server_honours_an_acp_reject_always(tmp_path):
    """The LSP face has no "reject always" of its own, but reads the same store."""
    store = ApprovalStore(tmp_path)
    store.remember("terminal")
    store.remember_never("python_eval")
    asked: list[Any] = []

    async def ask_user(params: Any) -> None:
        asked.append(params)
        return None

    check = ApprovalCheck(
        ctx=SessionContext(
            port=SimpleNamespace(ask=ask_user),  # type: ignore[arg-type]
            messages=SimpleNamespace(log=lambda *args: None),  # type: ignore[arg-type]
            documents=None,  # type: ignore[arg-type]
            holder=None,  # type: ignore[arg-type]
            features=SimpleNamespace(show_message_request=True),  # type: ignore[arg-type]
            root=tmp_path,
        ),
        store=ApprovalStore(tmp_path),  # a fresh reader of the file, as another process
        questions=None,  # type: ignore[arg-type]
    )
    ctx = ToolContext(work_dir=tmp_path)
    assert await check(TERMINAL, {"command": "true"}, ctx) is None
    denial = await check(PYTHON_EVAL, {"code": "1"}, ctx)
    assert denial == "approval_denied: the user rejected python_eval always for this workspace"
    assert asked == []
    # Allowing it always later (the LSP's own answer) replaces the rejection, and the other way round.
    store.remember("python_eval")
    store.remember_never("terminal")
    saved = json.loads(store.path.read_text(encoding="utf-8"))
    assert saved == {"always": ["python_eval"], "never": ["terminal"]}
