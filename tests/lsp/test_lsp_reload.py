"""Config reload over the wire (#42): the server picks up an edited user config
(`$XDG_CONFIG_HOME/lich/config.json`) and workspace config (`<root>/.lich/config.json`) without a
restart, per client profile, against a real server process.

Each test edits a file while the server runs and waits on what the user would see: `lich.status`
(which looks at the files first), a `window/showMessage` or the trust question (which the server's
own periodic look at the files sends, with no request from the editor: Neovim 0.7 and Helix cannot
watch files for the server), the next task's request to a loopback fake provider. No test sleeps
to synchronise; every wait is bounded (lsp_harness.WAIT_S), and each test has a hard timeout.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from lsp_harness import EditorClient, edit, tool_messages
from test_lsp_trust import wait_for_trust_notice
from test_session_trust import USER_TOKEN, plant_repository

from tests.support.fake_provider import FakeProviderServer

pytestmark = [
    pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning"),
    pytest.mark.timeout(60),
]


@pytest.fixture
def other_provider() -> Iterator[FakeProviderServer]:
    """A second fake provider: the one an edited config switches to."""
    with FakeProviderServer() as server:
        yield server


def provider(fake: FakeProviderServer, name: str, model: str) -> dict[str, Any]:
    return {"name": name, "kind": "openai_compat", "base_url": fake.url + "/v1", "model": model}


def user_config_path() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "lich" / "config.json"


def write_json(path: Path, value: dict[str, Any], *, by_rename: bool = False) -> None:
    """Save a config file; `by_rename`: as Vim and most tools save, a new file renamed over the old."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not by_rename:
        path.write_text(json.dumps(value), encoding="utf-8")
        return
    temporary = path.with_name(path.name + ".new")
    temporary.write_text(json.dumps(value), encoding="utf-8")
    os.replace(temporary, path)


def read_at(status: dict[str, Any]) -> float:
    return datetime.strptime(status["config"]["read_at"], "%Y-%m-%dT%H:%M:%S%z").timestamp()


def messages_naming(client: EditorClient, text: str) -> list[str]:
    return [m.message for m in client.messages if text in m.message]


async def test_an_edited_user_config_is_the_next_tasks(
    session,
    client_name: str,
    fake_provider: FakeProviderServer,
    other_provider: FakeProviderServer,
) -> None:
    write_json(user_config_path(), {"providers": [provider(fake_provider, "first", "model-a")]})
    client = await session(client_name)
    fake_provider.script({"text": "from the first provider"})
    first = await client.command("lich.ask", {"prompt": "one"})
    assert first["final"] == "from the first provider"
    before = await client.command("lich.status", {})

    edited_at = int(time.time())  # read_at has whole seconds
    write_json(
        user_config_path(),
        {"providers": [provider(other_provider, "second", "model-b")]},
        by_rename=True,
    )
    status = await client.command("lich.status", {})
    assert status["config"]["generation"] == before["config"]["generation"] + 1
    assert read_at(status) >= edited_at
    assert status["provider"]["name"] == "second" and status["provider"]["model"] == "model-b"
    other_provider.script({"text": "from the second provider"})
    result = await client.command("lich.ask", {"prompt": "two"})
    assert result["final"] == "from the second provider"
    assert other_provider.requests[0]["json"]["model"] == "model-b"
    assert len(fake_provider.requests) == 1

    # The same bytes saved again: no new generation (the tool runtime and its plugins stay).
    write_json(user_config_path(), {"providers": [provider(other_provider, "second", "model-b")]})
    same = await client.command("lich.status", {})
    assert same["config"]["generation"] == status["config"]["generation"]

    # Deleted: the defaults (no provider configured and no key: Ollama on localhost).
    user_config_path().unlink()
    gone = await client.command("lich.status", {})
    assert gone["config"]["generation"] == status["config"]["generation"] + 1
    assert gone["provider"]["kind"] == "ollama"
    assert gone["config"]["problems"] == [] and gone["config_error"] is None


async def test_an_edited_workspace_config_names_a_bad_value_once_and_the_rest_applies(
    session, root: Path, client_name: str, fake_provider: FakeProviderServer
) -> None:
    write_json(user_config_path(), {"providers": [provider(fake_provider, "mine", "m")]})
    workspace_config = root / ".lich" / "config.json"
    write_json(workspace_config, {"max_turns": 5})
    (root / "a.py").write_text("a = 1\n", encoding="utf-8")
    client = await session(client_name)
    await client.wait_for_startup()
    before = await client.command("lich.status", {})

    # Narrowed (an untrusted workspace file may narrow) and one bad value.
    write_json(workspace_config, {"capabilities": ["file/read"], "max_turns": "many"})
    # No request from the editor: the server's own look at the files names the bad value.
    await client.wait_until(
        lambda: bool(messages_naming(client, "max_turns")), what="a message naming max_turns"
    )
    (message,) = messages_naming(client, "max_turns")
    assert str(workspace_config) in message and "'many'" in message

    fake_provider.script({"tool_calls": [edit("a.py", "a = 1", "a = 2")]}, {"text": "tried"})
    result = await client.command("lich.ask", {"prompt": "edit a"})
    assert result["final"] == "tried"
    (denied,) = [json.loads(text) for text in tool_messages(fake_provider)]
    assert denied["error"] == "capability_denied: file/edit"
    assert (root / "a.py").read_text(encoding="utf-8") == "a = 1\n"
    status = await client.command("lich.status", {})
    assert status["config"]["generation"] == before["config"]["generation"] + 1
    assert [p["key"] for p in status["config"]["problems"]] == ["max_turns"]
    assert status["config_error"] is None

    # Edited again, the bad value still there: the new value applies, the old problem is not
    # repeated (a showMessage sent for this read would arrive before the status answer).
    write_json(
        workspace_config,
        {"capabilities": ["file/read"], "max_turns": "many", "edit_mode": "review"},
    )
    again = await client.command("lich.status", {})
    assert again["edit_mode"] == "review"
    assert len(messages_naming(client, "max_turns")) == 1


async def test_a_running_task_keeps_its_settings(
    session,
    root: Path,
    client_name: str,
    fake_provider: FakeProviderServer,
    other_provider: FakeProviderServer,
) -> None:
    write_json(user_config_path(), {"providers": [provider(fake_provider, "first", "model-a")]})
    (root / "c.py").write_text("c = 1\n", encoding="utf-8")
    client = await session(client_name)
    generation = (await client.command("lich.status", {}))["config"]["generation"]
    fake_provider.script(
        {"tool_calls": [edit("c.py", "c = 1", "c = 2")]}, {"text": "finished on the first"}
    )
    client.open(root / "c.py")  # open: its edit goes through workspace/applyEdit, held below
    with client.holding_edits():
        running = asyncio.ensure_future(client.command("lich.ask", {"prompt": "edit c"}))
        await client.wait_until(lambda: bool(client.editor.applied), what="the held edit")
        write_json(
            user_config_path(),
            {"providers": [provider(other_provider, "second", "model-b")], "max_turns": 1},
        )
        status = await client.command("lich.status", {})
        assert status["config"]["generation"] == generation + 1
        assert status["provider"]["name"] == "second"
        assert [t["state"] for t in status["tasks"]] == ["running"]
    result = await running
    # Its second model call went where its config said when it started, with its turn budget.
    assert result["stopped_reason"] == "final" and result["final"] == "finished on the first"
    assert [r["json"]["model"] for r in fake_provider.requests] == ["model-a", "model-a"]
    assert other_provider.requests == []

    other_provider.script({"text": "the next task's"})
    following = await client.command("lich.ask", {"prompt": "next"})
    assert following["final"] == "the next task's"
    assert [r["json"]["model"] for r in other_provider.requests] == ["model-b"]


async def test_a_workspace_config_created_while_running_is_offered_for_trust(
    session,
    root: Path,
    client_name: str,
    fake_provider: FakeProviderServer,
    other_provider: FakeProviderServer,
) -> None:
    write_json(user_config_path(), {"providers": [provider(fake_provider, "mine", "m")]})
    # The token the repository's provider names (api_key_env), in the server's environment.
    client = await session(client_name, env={"GITHUB_TOKEN": USER_TOKEN})
    await client.wait_for_startup()
    status = await client.command("lich.status", {})
    assert status["trust"]["state"] == "no_config"

    plant_repository(root, other_provider)  # the repository's config appears (a git pull, say)
    # The same question (or message) as at startup, from the server's own look at the files.
    notice = await wait_for_trust_notice(client)
    assert "load plugin .lich/plugins/evil.py" in notice
    status = await client.command("lich.status", {})
    assert status["trust"]["state"] == "untrusted" and status["provider"]["name"] == "mine"
    await client.command("lich.tools", {})
    assert not (root / "PWNED").exists()

    trusted = await client.command("lich.trustWorkspace", {})
    assert trusted["state"] == "trusted"
    other_provider.script({"text": "answered by the repository's provider"})
    result = await client.command("lich.ask", {"prompt": "hello"})
    assert result["final"] == "answered by the repository's provider"
    assert other_provider.requests[0]["headers"]["authorization"] == f"Bearer {USER_TOKEN}"
