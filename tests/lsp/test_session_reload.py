"""Config reload in-process (#42): what the wire tests (test_lsp_reload.py) do not pin down.

Each test runs an EditorSession against the FakeEditor (the `editor` fixture): a
`workspace/didChangeWatchedFiles` makes the server look at once; a problem is shown when it
appears, again only after a read without it; a user config that stops parsing while the server
runs restricts the agent to reading and is `config_error`; a Trust answer to a question about
content the file no longer has trusts nothing; the tool runtime a running task borrowed is closed
when the task ends, not when a newer config replaces it. Waits are bounded by the FakeEditor.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from lsprotocol import types

from lich_lsp import config as lsp_config
from lich_lsp.context import SessionContext
from lich_lsp.runtimes import ToolRuntimes
from tests.support.fake_provider import FakeProviderServer

pytestmark = pytest.mark.timeout(60)


def user_config_path() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "lich" / "config.json"


def write_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value), encoding="utf-8")


def shown(fake: Any, text: str, kind: types.MessageType | None = None) -> list[str]:
    return [m for k, m in fake.messages if text in m and (kind is None or k == kind)]


@pytest.fixture
def no_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's periodic look at the files never comes during the test: what it sees, it sees
    through a command or a notification."""
    monkeypatch.setattr(lsp_config, "CONFIG_POLL_INTERVAL_MS", 3_600_000)


async def test_did_change_watched_files_makes_the_server_look_now(
    editor, root: Path, no_poll: None
) -> None:
    fake = await editor("visual-studio-code")
    write_json(root / ".lich" / "config.json", {"max_turns": "many"})
    assert shown(fake, "max_turns") == []  # nothing looked yet
    fake.session.did_change_watched_files()
    (warning,) = shown(fake, "max_turns", types.MessageType.Warning)
    assert "'many'" in warning


async def test_a_problem_is_shown_when_it_appears_and_again_after_a_fix(
    editor, root: Path, no_poll: None
) -> None:
    write_json(user_config_path(), {"max_turns": "many"})
    fake = await editor("neovim@v0.7.0")
    assert len(shown(fake, "max_turns")) == 1
    await fake.command("lich.status", {})
    write_json(user_config_path(), {"max_turns": "many", "edit_mode": "review"})
    status = await fake.command("lich.status", {})
    assert status["edit_mode"] == "review" and len(shown(fake, "max_turns")) == 1  # still there
    write_json(user_config_path(), {"max_turns": 7})
    status = await fake.command("lich.status", {})
    assert status["config"]["problems"] == []
    write_json(user_config_path(), {"max_turns": "many"})  # made again: said again
    status = await fake.command("lich.status", {})
    assert len(shown(fake, "max_turns")) == 2
    assert [p["key"] for p in status["config"]["problems"]] == ["max_turns"]


async def test_a_user_config_that_stops_parsing_restricts_the_agent_until_fixed(
    editor, root: Path, no_poll: None, fake_provider: FakeProviderServer
) -> None:
    provider = {"name": "mine", "kind": "openai_compat", "base_url": fake_provider.url + "/v1"}
    write_json(user_config_path(), {"providers": [{**provider, "model": "m"}]})
    fake = await editor("emacs")
    status = await fake.command("lich.status", {})
    assert status["config_error"] is None
    generation = status["config"]["generation"]

    user_config_path().write_text('{"providers": [', encoding="utf-8")  # saved half-way
    status = await fake.command("lich.status", {})
    assert status["config"]["generation"] == generation + 1
    (broken,) = status["config"]["broken_files"]
    assert broken["source"] == str(user_config_path())
    assert status["config_error"] == broken["message"]
    (error,) = shown(fake, str(user_config_path()), types.MessageType.Error)
    assert "may only read files" in error
    tools = await fake.command("lich.tools", {})
    enabled = {t["name"] for t in tools["tools"] if t["enabled"]}
    assert "read_file" in enabled and "edit_file" not in enabled

    write_json(user_config_path(), {"providers": [{**provider, "model": "m2"}]})
    status = await fake.command("lich.status", {})
    assert status["config_error"] is None and status["config"]["broken_files"] == []
    assert status["provider"]["model"] == "m2"
    assert len(shown(fake, str(user_config_path()), types.MessageType.Error)) == 1


async def test_trust_answered_for_content_the_file_no_longer_has_trusts_nothing(
    editor, root: Path, no_poll: None, fake_provider: FakeProviderServer
) -> None:
    def repository_provider(model: str) -> dict[str, Any]:
        return {
            "providers": [
                {
                    "name": "repo",
                    "kind": "openai_compat",
                    "base_url": fake_provider.url + "/v1",
                    "model": model,
                }
            ]
        }

    fake = await editor("visual-studio-code")
    with fake.holding_questions():
        write_json(root / ".lich" / "config.json", repository_provider("read-by-the-user"))
        await fake.command("lich.status", {})  # looks at the new file: the trust question
        await fake.wait_for_questions(1)
        write_json(root / ".lich" / "config.json", repository_provider("swapped-in-later"))
        await fake.command("lich.status", {})  # and the question about the new content
        await fake.wait_for_questions(2)
        fake.message_answers = ["Trust"]  # to the first question; the second is dismissed
    await fake.wait_for_message("changed after the question was asked")
    status = await fake.command("lich.status", {})
    assert status["trust"]["state"] == "untrusted"
    assert status["provider"]["name"] != "repo"
    # lich.trustWorkspace trusts the file as it is now (the user ran it after reading it).
    trusted = await fake.command("lich.trustWorkspace", {})
    assert trusted["state"] == "trusted"
    status = await fake.command("lich.status", {})
    assert status["provider"]["model"] == "swapped-in-later"


class FakeRuntime:
    """A tool runtime with MCP servers: closing it is what a running task must not see."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.mcp = object()
        self.closed = asyncio.Event()

    async def aclose(self) -> None:
        self.closed.set()


async def test_a_borrowed_runtime_is_closed_when_its_task_ends_not_when_replaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import lich_core.runtime

    built: list[FakeRuntime] = []

    def build(config: Any, **_: Any) -> FakeRuntime:
        built.append(FakeRuntime(f"runtime {len(built)}"))
        return built[-1]

    monkeypatch.setattr(lich_core.runtime, "build_tool_runtime", build)
    background: list[asyncio.Future[Any]] = []
    messages = SimpleNamespace(
        background=lambda work: background.append(asyncio.ensure_future(work))
    )
    holder = SimpleNamespace(generation=1, config={})
    ctx = SessionContext(
        port=None,  # type: ignore[arg-type]
        messages=messages,  # type: ignore[arg-type]
        documents=None,  # type: ignore[arg-type]
        holder=holder,  # type: ignore[arg-type]
        features=None,  # type: ignore[arg-type]
        root=None,  # type: ignore[arg-type]
    )
    runtimes = ToolRuntimes(ctx=ctx, call_checks=())

    with runtimes.borrow() as task_runtime:
        holder.generation = 2  # the config was reloaded while the task runs
        assert runtimes.current() is built[1] and task_runtime is built[0]
        assert background == []  # its closing was not even scheduled
    await asyncio.wait_for(task_runtime.closed.wait(), 5)  # closed once the task let it go
    assert not built[1].closed.is_set()

    holder.generation = 3  # replaced while nobody borrows it: closed at once
    runtimes.current()
    await asyncio.wait_for(built[1].closed.wait(), 5)


async def test_trust_given_from_a_terminal_applies_at_the_next_command(
    editor, root: Path, no_poll: None
) -> None:
    """`lich trust` in a shell writes the trust store, which the server watches like a config."""
    from lich_core.config import set_workspace_trust

    write_json(root / ".lich" / "config.json", {"system_prompt": "Repository rules."})
    fake = await editor("neovim")
    status = await fake.command("lich.status", {})
    assert status["trust"]["state"] == "untrusted"
    generation = status["config"]["generation"]
    assert set_workspace_trust(root, trust=True).after.state == "trusted"
    status = await fake.command("lich.status", {})
    assert status["trust"]["state"] == "trusted"
    assert status["config"]["generation"] == generation + 1


async def test_neovims_empty_settings_table_is_no_settings_not_an_unknown_key(
    editor, root: Path, no_poll: None
) -> None:
    """`settings = { lich = {} }` in Lua is sent as `{"lich": []}`: nothing to warn about."""
    fake = await editor("neovim", init_options={"lich": []})
    await fake.session.did_change_configuration({"lich": []})
    status = await fake.command("lich.status", {})
    assert status["config"]["problems"] == []
    assert shown(fake, "unknown key") == []
