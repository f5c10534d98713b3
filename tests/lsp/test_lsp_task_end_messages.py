"""How a task's end reaches the user (issue #45): a turn asked from a chat ends in the chat only;
a client that shows task ends itself (experimental.lich.taskNotifications) gets no message; a
lich plugin gets one short line (a longer one is a hit-enter prompt in Neovim); a plain client
(Kate, Helix) gets the whole answer, its only view of the run. The log always has the answer.
A real server over stdio."""

from __future__ import annotations

import pytest
from lsp_harness import provider_options
from pygls.exceptions import JsonRpcException

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")

ANSWER = "First line of the answer.\nA second line with details.\nA third."


def _shown(client, title: str) -> list[str]:
    return [m.message for m in client.messages if m.message.startswith(f"lich: {title}")]


def _logged(client, title: str) -> list[str]:
    return [m.message for m in client.log_messages if m.message.startswith(f"lich: {title}")]


@pytest.mark.parametrize("client_name", ["visual-studio-code", "neovim", "emacs"])
async def test_a_turn_from_the_chat_ends_in_the_chat_only(
    session, fake_provider, client_name: str
) -> None:
    fake_provider.script({"text": ANSWER})
    client = await session(
        client_name, init_options=provider_options(fake_provider), lich_flags={"chat": True}
    )
    result = await client.command("lich.ask", {"prompt": "explain", "origin": "chat"})
    assert result["final"] == ANSWER
    assert _shown(client, "explain") == []
    assert _logged(client, "explain") == [f"lich: explain: {ANSWER}"]


async def test_a_client_that_notifies_itself_gets_no_message(session, fake_provider) -> None:
    fake_provider.script({"text": ANSWER})
    client = await session(
        init_options=provider_options(fake_provider), lich_flags={"taskNotifications": True}
    )
    result = await client.command("lich.ask", {"prompt": "explain"})  # from the palette
    assert result["final"] == ANSWER
    assert _shown(client, "explain") == []
    assert _logged(client, "explain") == [f"lich: explain: {ANSWER}"]


@pytest.mark.parametrize("client_name", ["neovim@v0.7.0", "neovim", "emacs"])
async def test_a_plugins_task_from_a_code_action_ends_in_one_short_line(
    session, fake_provider, client_name: str
) -> None:
    fake_provider.script({"text": ANSWER})
    client = await session(
        client_name, init_options=provider_options(fake_provider), lich_flags={"chat": True}
    )
    await client.command("lich.ask", {"prompt": "explain"})
    assert _shown(client, "explain") == ["lich: explain: First line of the answer. …"]
    assert _logged(client, "explain") == [f"lich: explain: {ANSWER}"]


async def test_a_long_first_line_is_clipped_to_one_editor_line(session, fake_provider) -> None:
    fake_provider.script({"text": "word " * 100})
    client = await session(
        "neovim", init_options=provider_options(fake_provider), lich_flags={"chat": True}
    )
    await client.command("lich.ask", {"prompt": "explain"})
    (shown,) = _shown(client, "explain")
    assert shown.endswith("…") and "\n" not in shown
    assert len(shown) <= len("lich: explain: ") + 120


async def test_a_plain_client_gets_the_whole_answer(session, fake_provider) -> None:
    fake_provider.script({"text": ANSWER})
    client = await session("emacs", init_options=provider_options(fake_provider))
    await client.command("lich.ask", {"prompt": "explain"})
    assert _shown(client, "explain") == [f"lich: explain: {ANSWER}"]


async def test_origin_takes_only_chat(session, fake_provider) -> None:
    client = await session(init_options=provider_options(fake_provider))
    with pytest.raises(JsonRpcException) as caught:
        await client.command("lich.ask", {"prompt": "explain", "origin": "palette"})
    assert caught.value.code == -32602 and "origin" in caught.value.message


async def test_status_says_whether_the_user_configured_a_provider(session, fake_provider) -> None:
    """Nothing configured: the local default stands in, and a client offers setup instead of
    presenting it as the user's model (VS Code's welcome view, "Lich: no model")."""
    bare = await session()
    provider = (await bare.command("lich.status", {}))["provider"]
    assert provider["configured"] is False and provider["kind"] == "ollama"
    configured = await session(init_options=provider_options(fake_provider))
    provider = (await configured.command("lich.status", {}))["provider"]
    assert provider["configured"] is True and provider["model"] == "fake-model"


async def test_a_client_that_notifies_itself_shows_its_own_rewind_notice(
    session, fake_provider
) -> None:
    fake_provider.script({"text": "one"}, {"text": "two"})
    client = await session(
        init_options=provider_options(fake_provider), lich_flags={"taskNotifications": True}
    )
    first = await client.command("lich.ask", {"prompt": "first", "origin": "chat"})
    await client.command(
        "lich.ask", {"prompt": "second", "thread": first["thread"], "origin": "chat"}
    )
    rewound = await client.command("lich.rewind", {"thread": first["thread"], "turn": 2})
    assert rewound["message"] == 'lich: rewound to before "second" (1 turn)'
    assert [m.message for m in client.messages if "rewound" in m.message] == []
    assert [m.message for m in client.log_messages if "rewound" in m.message] == [
        rewound["message"]
    ]


async def test_a_turn_runs_on_the_model_the_user_picked(session, fake_provider) -> None:
    """lich.status lists the configured providers; lich.ask `model` runs one turn on one of
    them (the chat's model picker), and an unknown name is InvalidParams naming the choices."""
    fake_provider.script({"text": "from the first"}, {"text": "from the second"})
    options = provider_options(fake_provider)
    second = {**options["providers"][0], "name": "second", "model": "second-model"}
    options["providers"].append(second)
    client = await session(init_options=options)
    status = await client.command("lich.status", {})
    assert status["models"] == [
        {"name": "fake", "kind": "openai_compat", "model": "fake-model"},
        {"name": "second", "kind": "openai_compat", "model": "second-model"},
    ]
    await client.command("lich.ask", {"prompt": "one"})
    await client.command("lich.ask", {"prompt": "two", "model": "second"})
    assert [r["json"]["model"] for r in fake_provider.requests] == ["fake-model", "second-model"]
    with pytest.raises(JsonRpcException) as caught:
        await client.command("lich.ask", {"prompt": "three", "model": "gpt-9"})
    assert caught.value.code == -32602
    assert "unknown_model: no configured provider is named 'gpt-9' (configured: fake, second)" in (
        caught.value.message
    )
