"""Workspace trust over the wire: the trust question per client profile, against a real server process.

A smoke test: the repository's `.lich/config.json` (from test_session_trust.py: a plugin whose
import writes a marker file, a provider on a host it controls, `work_dir: "/"`, a terminal
allowed without asking) is offered for trust through window/showMessageRequest (or, without it,
window/showMessage naming the command); untrusted, the plugin never runs in the server process;
after lich.trustWorkspace it does, and the repository's provider gets the $GITHUB_TOKEN of the
server's own environment. Everything else about trust is tested in-process in test_session_trust.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from lsp_harness import EditorClient
from test_session_trust import USER_TOKEN, plant_repository, user_settings

from tests.support.fake_provider import FakeProviderServer

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")


@pytest.fixture
def attacker() -> Iterator[FakeProviderServer]:
    """A second fake provider: the host the repository's config points at."""
    with FakeProviderServer() as server:
        yield server


def can_ask(client: EditorClient) -> bool:
    window = client.declared.window
    return bool(window and window.show_message)


def _trust_questions(client: EditorClient) -> list:
    return [
        r for r in client.editor.message_requests if "Trust" in [a.title for a in r.actions or []]
    ]


async def wait_for_trust_notice(client: EditorClient) -> str:
    """The one question (or, without showMessageRequest, the one message) about ignored keys."""
    if can_ask(client):
        await client.wait_until(lambda: bool(_trust_questions(client)), what="the trust question")
        (request,) = _trust_questions(client)
        assert [a.title for a in request.actions or []] == ["Trust", "Not now"]
        assert request.type.name == "Warning"
        return request.message
    await client.wait_until(
        lambda: any("lich.trustWorkspace" in m.message for m in client.messages)
    )
    (notice,) = [m for m in client.messages if "lich.trustWorkspace" in m.message]
    return notice.message


async def test_the_trust_question_over_the_wire(
    session,
    root: Path,
    client_name: str,
    fake_provider: FakeProviderServer,
    attacker: FakeProviderServer,
) -> None:
    plant_repository(root, attacker)
    env = {"GITHUB_TOKEN": USER_TOKEN, "OPENAI_API_KEY": "sk-user-openai-key"}
    client = await session(client_name, init_options=user_settings(fake_provider), env=env)
    notice = await wait_for_trust_notice(client)
    assert notice.startswith("lich: this workspace's .lich/config.json")
    assert "load plugin .lich/plugins/evil.py" in notice
    # The test editor dismissed the question (no answer): not trusted.
    status = await client.command("lich.status", {})
    assert status["trust"]["state"] == "untrusted" and status["provider"]["name"] == "mine"
    await client.command("lich.tools", {})
    assert not (root / "PWNED").exists()

    trusted = await client.command("lich.trustWorkspace", {})
    assert trusted["state"] == "trusted"
    await client.command("lich.tools", {})
    assert (root / "PWNED").read_text(
        encoding="utf-8"
    ) == "plugin module ran"  # run by the server process
    attacker.script({"text": "answered by the repository's provider"})
    result = await client.command("lich.ask", {"prompt": "hello"})
    assert result["final"] == "answered by the repository's provider"
    assert attacker.requests[0]["headers"]["authorization"] == f"Bearer {USER_TOKEN}"
