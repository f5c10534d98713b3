"""One thread through the three faces: started by the `lich` command line, continued by the
language server's lich.ask {thread}, then loaded and continued over ACP. Each face is a real
process on the same HOME/XDG state and the same workspace root, so they share one thread file;
the last model request carries the whole conversation in order."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from lich_core.agent.sessions import SessionStore, session_dir_for
from tests.acp.acp_client import WAIT_S, ScriptedClient, acp_agent, write_user_config
from tests.acp.test_acp_agent import ask
from tests.support.cli_runner import run_lich_subprocess

# The language-server harness sits in tests/lsp, which has no __init__.py (see its conftest).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lsp"))
from lsp_harness import provider_options, start_session, stop_session  # noqa: E402

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")

ANSWERS = ("ANSWER-ONE from the model", "ANSWER-TWO from the model", "ANSWER-THREE")


async def test_a_cli_thread_continues_in_the_editor_and_then_over_acp(
    tmp_path: Path, fake_provider
) -> None:
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    write_user_config(fake_provider.url)  # the CLI's and ACP's provider
    fake_provider.script(*({"text": answer} for answer in ANSWERS))

    cli = await asyncio.to_thread(run_lich_subprocess, "prompt one", cwd=root)
    assert cli.returncode == 0, cli.stderr
    assert ANSWERS[0] in cli.stdout
    store = SessionStore(session_dir_for({"work_dir": str(root)}))
    (info,) = store.list()
    thread = info.session_id

    client = await start_session(
        root, "visual-studio-code", init_options=provider_options(fake_provider)
    )
    try:
        two = await client.command("lich.ask", {"prompt": "prompt two", "thread": thread})
        assert two["thread"] == thread and two["stopped_reason"] == "final", two
    finally:
        await stop_session(client)
    assert not client.failures, client.failures

    acp_client = ScriptedClient()
    async with acp_agent(acp_client) as conn:
        listed = await asyncio.wait_for(conn.list_sessions(cwd=str(root)), WAIT_S)
        assert [(s.session_id, s.title) for s in listed.sessions] == [(thread, "prompt one")]
        await asyncio.wait_for(
            conn.load_session(cwd=str(root), session_id=thread, mcp_servers=[]), WAIT_S
        )
        # The replay shows the editor's turn too.
        replayed = [
            u.content.text for u in acp_client.updates if u.session_update == "user_message_chunk"
        ]
        assert replayed == ["prompt one", "prompt two"]
        assert (await ask(conn, thread, "prompt three")).stop_reason == "end_turn"

    assert len(fake_provider.requests) == 3
    last = json.dumps(fake_provider.requests[-1]["json"]["messages"], ensure_ascii=False)
    said = ["prompt one", ANSWERS[0], "prompt two", ANSWERS[1], "prompt three"]
    positions = [last.find(text) for text in said]
    assert -1 not in positions and positions == sorted(positions), positions

    _, replay = store.replay(thread)
    assert [t.prompt for t in replay.turns] == ["prompt one", "prompt two", "prompt three"]
    assert [t.face for t in replay.turns] == ["cli", "lsp", "acp"]
    assert [t.final for t in replay.turns] == list(ANSWERS)
