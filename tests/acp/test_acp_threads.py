"""ACP sessions as threads: each prompt's run records the `acp` face, the first prompt of a new
session carries the repository's rules (later prompts and loaded sessions do not repeat them),
and session/list lists a workspace's threads newest first, a page at a time."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from pathlib import Path

import pytest

from lich_core.agent.sessions import SessionStore, session_dir_for
from tests.acp import sdk
from tests.acp.acp_client import WAIT_S, ScriptedClient, acp_agent, write_user_config
from tests.acp.test_acp_agent import ask, new_session

RULE = "RULE-MARKER-7f3: name every variable in French."


def request_text(fake_provider, index: int) -> str:
    return json.dumps(fake_provider.requests[index]["json"]["messages"], ensure_ascii=False)


def store_for(root: Path) -> SessionStore:
    return SessionStore(session_dir_for({"work_dir": str(root)}))


async def list_page(conn, cwd: str | None, cursor: str | None = None):
    return await asyncio.wait_for(conn.list_sessions(cwd=cwd, cursor=cursor), WAIT_S)


async def test_a_new_session_gets_the_rules_once_and_records_the_acp_face(
    tmp_path: Path, fake_provider
) -> None:
    (tmp_path / "AGENTS.md").write_text(RULE + "\n", encoding="utf-8")
    write_user_config(fake_provider.url)
    fake_provider.script({"text": "first answer"}, {"text": "second answer"}, {"text": "third"})
    async with acp_agent(ScriptedClient()) as conn:
        sid = await new_session(conn, tmp_path)
        assert (await ask(conn, sid, "first prompt")).stop_reason == "end_turn"
        assert (await ask(conn, sid, "second prompt")).stop_reason == "end_turn"
    first = request_text(fake_provider, 0)
    assert RULE in first and "AGENTS.md" in first
    assert first.index("first prompt") < first.index(RULE)  # after the prompt, as lich.ask does
    # The second prompt's request has the rules once: from the history, not added again.
    assert request_text(fake_provider, 1).count(RULE) == 1

    # Loaded in a new agent process: the history has them, the prompt adds none.
    async with acp_agent(ScriptedClient()) as conn:
        await asyncio.wait_for(
            conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[]), WAIT_S
        )
        assert (await ask(conn, sid, "third prompt")).stop_reason == "end_turn"
    third = request_text(fake_provider, 2)
    assert third.count(RULE) == 1 and "third prompt" in third

    _, replay = store_for(tmp_path).replay(sid)
    assert [(t.prompt, t.face, t.final) for t in replay.turns] == [
        ("first prompt", "acp", "first answer"),
        ("second prompt", "acp", "second answer"),
        ("third prompt", "acp", "third"),
    ]


async def test_project_rules_off_sends_none(tmp_path: Path, fake_provider) -> None:
    (tmp_path / "AGENTS.md").write_text(RULE + "\n", encoding="utf-8")
    write_user_config(fake_provider.url, project_rules=False)
    fake_provider.script({"text": "ok"})
    async with acp_agent(ScriptedClient()) as conn:
        sid = await new_session(conn, tmp_path)
        assert (await ask(conn, sid, "a prompt")).stop_reason == "end_turn"
    assert RULE not in request_text(fake_provider, 0)


async def test_session_list_gives_the_workspace_threads_newest_first(
    tmp_path: Path, fake_provider
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    other = tmp_path / "other"
    other.mkdir()
    write_user_config(fake_provider.url)
    fake_provider.script({"text": "one"}, {"text": "two"}, {"text": "elsewhere"})
    async with acp_agent(ScriptedClient()) as conn:
        capabilities = conn.initialize_response.agent_capabilities.session_capabilities
        assert capabilities.list is not None  # advertised: session/list is answered
        older = await new_session(conn, root)
        assert (await ask(conn, older, "the older thread")).stop_reason == "end_turn"
        newer = await new_session(conn, root)
        assert (await ask(conn, newer, "the newer thread")).stop_reason == "end_turn"
        elsewhere = await new_session(conn, other)
        assert (await ask(conn, elsewhere, "another workspace")).stop_reason == "end_turn"

        listed = await list_page(conn, str(root))
        assert [(s.session_id, s.title, s.cwd) for s in listed.sessions] == [
            (newer, "the newer thread", str(root.resolve())),
            (older, "the older thread", str(root.resolve())),
        ]
        assert listed.next_cursor is None
        assert all(s.field_meta == {"lich": {"turns": 1}} for s in listed.sessions)
        stamps = [datetime.fromisoformat(s.updated_at) for s in listed.sessions]
        assert stamps[0] >= stamps[1] and stamps[0].tzinfo is not None
        assert [s.session_id for s in (await list_page(conn, str(other))).sessions] == [elsewhere]
        # No cwd: the agent's own working directory (the test starts it in the repository,
        # whose state dir under this test's HOME has no threads).
        assert (await list_page(conn, None)).sessions == []

        for bad in ({"cwd": "relative/ws"}, {"cwd": str(tmp_path / "missing")}):
            with pytest.raises(sdk.RequestError) as err:
                await conn.list_sessions(**bad)
            assert err.value.code == -32602 and "cwd" in err.value.data
        with pytest.raises(sdk.RequestError) as err:
            await conn.list_sessions(cwd=str(root), cursor="not-a-cursor")
        assert err.value.code == -32602 and "invalid_arg:" in err.value.data["cursor"]
        # Still answering after the refusals.
        assert len((await list_page(conn, str(root))).sessions) == 2


async def test_session_list_pages_through_many_threads(tmp_path: Path, fake_provider) -> None:
    write_user_config(fake_provider.url)
    store = store_for(tmp_path.resolve())
    for index in range(62):
        store.create(work_dir=str(tmp_path), title=f"thread {index}").close()
    expected = [info.session_id for info in store.list()]
    assert len(expected) == 62
    async with acp_agent(ScriptedClient()) as conn:
        first = await list_page(conn, str(tmp_path))
        assert len(first.sessions) == 50 and first.next_cursor
        # A thread written between the pages goes to the top, and moves no later page.
        fake_provider.script({"text": "fresh"})
        fresh = await new_session(conn, tmp_path)
        assert (await ask(conn, fresh, "written meanwhile")).stop_reason == "end_turn"
        second = await list_page(conn, str(tmp_path), first.next_cursor)
        assert second.next_cursor is None
        again = await list_page(conn, str(tmp_path))
    paged = [s.session_id for s in first.sessions + second.sessions]
    assert paged == expected
    assert again.sessions[0].session_id == fresh
    assert again.sessions[0].title == "written meanwhile"


async def test_session_ids_outside_the_thread_id_rule_are_refused(
    tmp_path: Path, fake_provider
) -> None:
    """session/load and session/prompt take the id from the client: the core's one rule applies
    (`latest` would otherwise load the newest thread under the name `latest`)."""
    write_user_config(fake_provider.url)
    fake_provider.script({"text": "one"})
    async with acp_agent(ScriptedClient()) as conn:
        sid = await new_session(conn, tmp_path)
        assert (await ask(conn, sid, "a prompt")).stop_reason == "end_turn"
        for bad in ("abc\n", "latest", "a/b", "x" * 65, ""):
            with pytest.raises(sdk.RequestError) as err:
                await asyncio.wait_for(
                    conn.load_session(cwd=str(tmp_path), session_id=bad, mcp_servers=[]), WAIT_S
                )
            assert err.value.code == -32602, bad
            assert err.value.data["sessionId"].startswith(f"invalid_thread_id: {bad!r}"), err.value
            with pytest.raises(sdk.RequestError) as err:
                await ask(conn, bad, "x")
            assert err.value.code == -32602, bad
            assert err.value.data["sessionId"].startswith("invalid_thread_id: "), err.value
        # Still answering, and nothing was sent or created for the refused ids.
        listed = await list_page(conn, str(tmp_path))
        assert [s.session_id for s in listed.sessions] == [sid]
    assert len(fake_provider.requests) == 1
