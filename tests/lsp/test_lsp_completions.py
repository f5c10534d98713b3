"""Inline completions over the wire: a real `python -m lich_lsp` under every client profile
against the fake FIM server (OpenAI `/v1/completions`, Ollama `/api/generate`), which logs each
request's prompt and suffix and when its stream was closed.

The capability is read from the initialize result; ghost text where the client declares
inlineCompletion, completion items where it does not; a newer request and `$/cancelRequest`
close the older provider stream; typing through a suggestion asks nothing; the suffix overlap is
trimmed; neighbouring documents' snippets reach the prompt; a provider error is an empty answer
and one log line."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from lsp_harness import (
    WAIT_S,
    EditorClient,
    apply_text_edits,
    provider_options,
    start_session,
    stop_session,
    units,
)
from lsprotocol import types
from pygls.exceptions import JsonRpcException

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")

SOURCE = "def add(a, b):\n    return \n\nprint(add(1, 2))\n"
CURSOR = types.Position(line=1, character=len("    return "))


def completion_options(fake: Any, wire: str = "completions", **extra: Any) -> dict[str, Any]:
    kind = "ollama" if wire == "generate" else "openai_compat"
    base_url = fake.url if kind == "ollama" else f"{fake.url}/v1"
    return {
        "completion": {"kind": kind, "format": wire, "base_url": base_url, "model": "fim"},
        "completion_debounce_ms": 0,
        **extra,
    }


async def inline(client: EditorClient, uri: str, position: types.Position) -> list[Any]:
    result = await asyncio.wait_for(
        client.text_document_inline_completion_async(
            types.InlineCompletionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=position,
                context=types.InlineCompletionContext(
                    trigger_kind=types.InlineCompletionTriggerKind.Automatic
                ),
            )
        ),
        WAIT_S,
    )
    if result is None:
        return []
    return list(result.items if isinstance(result, types.InlineCompletionList) else result)


async def complete(client: EditorClient, uri: str, position: types.Position) -> Any:
    return await asyncio.wait_for(
        client.text_document_completion_async(
            types.CompletionParams(
                text_document=types.TextDocumentIdentifier(uri=uri), position=position
            )
        ),
        WAIT_S,
    )


async def open_session(
    root: Path, client_name: str, options: dict[str, Any], *, ghost_text: bool
) -> EditorClient:
    return await start_session(
        root, client_name, init_options=options, inline_completion=ghost_text
    )


@pytest.fixture
async def sessions():
    started: list[EditorClient] = []
    yield started
    for client in started:
        await stop_session(client)
        assert not client.failures, client.failures


@pytest.mark.parametrize("wire", ["completions", "generate"])
async def test_ghost_text_where_declared_and_the_prompt_it_was_made_from(
    root: Path, client_name: str, fake_provider, sessions, wire: str
) -> None:
    (root / "helpers.py").write_text("def add_numbers(a, b):\n    return a + b\n")
    fake_provider.script({"text": "a + b\n\ndef other():\n    pass", "chunks": 3})
    client = await open_session(
        root, client_name, completion_options(fake_provider, wire), ghost_text=True
    )
    sessions.append(client)
    assert client.init_result.capabilities.inline_completion_provider is not None
    uri = client.open(root / "calc.py", SOURCE)
    client.open(root / "helpers.py")

    (item,) = await inline(client, uri, CURSOR)
    # The block ends where the function does; the rest of the model's text is not offered.
    assert item.insert_text == "a + b"
    body = fake_provider.requests[0]["json"]
    prompt = body["prompt"]
    assert prompt.endswith("def add(a, b):\n    return ")
    assert "helpers.py" in prompt and "def add_numbers(a, b):" in prompt  # the neighbour snippet
    assert body["suffix"].startswith("\n\nprint(add(1, 2))")
    # A client that shows ghost text gets no duplicate completion item.
    assert await complete(client, uri, CURSOR) is None
    # lich.status times the server's own part of each answered completion.
    own = (await client.command("lich.status", {}))["completion"]["own_ms"]
    assert own["count"] == 1 and 0 <= own["p50"] <= own["p99"]


async def test_completion_items_where_ghost_text_is_not_declared(
    root: Path, client_name: str, fake_provider, sessions
) -> None:
    fake_provider.script({"text": "total)"})
    client = await open_session(
        root, client_name, completion_options(fake_provider), ghost_text=False
    )
    sessions.append(client)
    uri = client.open(root / "m.py", "x = max(va)\n")
    position = types.Position(line=0, character=len("x = max(va"))
    result = await complete(client, uri, position)
    (item,) = result.items
    # The model re-typed the ")" already after the cursor: trimmed. The item replaces the word
    # typed so far ("va") with itself plus the suggestion, so the client's filter keeps it.
    assert item.text_edit.new_text == "vatotal"
    assert item.text_edit.range.start.character == len("x = max(")
    assert item.filter_text == "vatotal" and item.label == "vatotal"
    assert result.is_incomplete is True
    assert fake_provider.requests[0]["json"]["prompt"].endswith("x = max(va")


async def test_the_item_replaces_a_word_of_any_script_in_the_clients_units(
    root: Path, client_name: str, fake_provider, sessions
) -> None:
    # "ï" is two UTF-8 units, "𝒳" (a letter outside the BMP) two UTF-16 units and four UTF-8.
    fake_provider.script({"text": "lue)"})
    client = await open_session(
        root, client_name, completion_options(fake_provider), ghost_text=False
    )
    sessions.append(client)
    text = "x = max(naïve_𝒳va)\n"
    uri = client.open(root / "w.py", text)
    position = types.Position(line=0, character=units("x = max(naïve_𝒳va", client.encoding))
    (item,) = (await complete(client, uri, position)).items
    assert item.filter_text == "naïve_𝒳value"
    assert item.text_edit.range.start.character == units("x = max(", client.encoding)
    assert apply_text_edits(text, [item.text_edit], client.encoding) == "x = max(naïve_𝒳value)\n"


async def test_typing_through_a_suggestion_asks_nothing(
    root: Path, fake_provider, sessions
) -> None:
    fake_provider.script({"text": "print('hello')"})
    client = await open_session(
        root, "visual-studio-code", completion_options(fake_provider), ghost_text=True
    )
    sessions.append(client)
    uri = client.open(root / "t.py", "\n")
    (item,) = await inline(client, uri, types.Position(line=0, character=0))
    assert item.insert_text == "print('hello')"
    client.type_text(uri, "prin\n")
    (item,) = await inline(client, uri, types.Position(line=0, character=4))
    assert item.insert_text == "t('hello')"
    assert len(fake_provider.requests) == 1
    # Typing something else asks again.
    fake_provider.script({"text": "x = 1"})
    client.type_text(uri, "prix\n")
    (item,) = await inline(client, uri, types.Position(line=0, character=4))
    assert len(fake_provider.requests) == 2


async def test_text_seen_before_is_answered_with_its_suggestion_again(
    root: Path, fake_provider, sessions
) -> None:
    fake_provider.script({"text": "(a, b)"}, {"text": " = 2"})
    client = await open_session(
        root, "visual-studio-code", completion_options(fake_provider), ghost_text=True
    )
    sessions.append(client)
    uri = client.open(root / "s.py", "total = add\n")
    at_add = types.Position(line=0, character=len("total = add"))
    (item,) = await inline(client, uri, at_add)
    assert item.insert_text == "(a, b)"
    # A typo: the suggestion does not start with "x", so the model is asked again...
    client.type_text(uri, "total = addx\n")
    (item,) = await inline(client, uri, types.Position(line=0, character=len("total = addx")))
    assert item.insert_text == " = 2"
    # ...and deleting it brings the first suggestion back without a request.
    client.type_text(uri, "total = add\n")
    (item,) = await inline(client, uri, at_add)
    assert item.insert_text == "(a, b)"
    assert len(fake_provider.requests) == 2
    # The same text with something else after the cursor is another question.
    fake_provider.script({"text": "(c)"})
    client.type_text(uri, "total = add\nmore\n")
    (item,) = await inline(client, uri, at_add)
    assert item.insert_text == "(c)"
    assert len(fake_provider.requests) == 3


async def test_a_newer_request_supersedes_and_closes_the_older_stream(
    root: Path, fake_provider, sessions
) -> None:
    fake_provider.script(
        {"text": "slow answer", "chunks": 2, "stall_after_chunks": 1},
        {"text": "fresh"},
    )
    client = await open_session(
        root, "visual-studio-code", completion_options(fake_provider), ghost_text=True
    )
    sessions.append(client)
    uri = client.open(root / "s.py", "a\nb\n")
    older = asyncio.ensure_future(inline(client, uri, types.Position(line=0, character=1)))
    assert await asyncio.to_thread(fake_provider.wait_for_request, lambda r: True, 0, WAIT_S)
    newer = await inline(client, uri, types.Position(line=1, character=1))
    assert [item.insert_text for item in newer] == ["fresh"]
    assert await older == []  # superseded: an empty answer, not an error
    assert await asyncio.to_thread(fake_provider.wait_closed_early, 0, WAIT_S) is not None


async def test_cancel_request_closes_the_provider_stream(
    root: Path, fake_provider, sessions
) -> None:
    fake_provider.script({"text": "never finished", "chunks": 2, "stall_after_chunks": 1})
    client = await open_session(root, "neovim", completion_options(fake_provider), ghost_text=False)
    sessions.append(client)
    uri = client.open(root / "c.py", "value = \n")
    params = types.CompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=0, character=8),
    )
    pending = asyncio.ensure_future(
        client.protocol.send_request_async("textDocument/completion", params, msg_id="fim-1")
    )
    assert await asyncio.to_thread(fake_provider.wait_for_request, lambda r: True, 0, WAIT_S)
    client.protocol.notify("$/cancelRequest", types.CancelParams(id="fim-1"))
    with pytest.raises(JsonRpcException):
        await asyncio.wait_for(pending, WAIT_S)
    assert await asyncio.to_thread(fake_provider.wait_closed_early, 0, WAIT_S) is not None
    # The server still answers; a code action meanwhile is not held up.
    status = await client.command("lich.status", {})
    assert status["completion"]["requests"] == 1
    assert status["completion"]["own_ms"]["count"] == 0  # a cancelled completion is not timed


async def test_a_provider_error_is_an_empty_answer_and_one_log_line(
    root: Path, fake_provider, sessions
) -> None:
    fake_provider.script(
        {"status": 500, "body": "boom"}, {"status": 500, "body": "boom"}, {"text": "42"}
    )
    client = await open_session(root, "emacs", completion_options(fake_provider), ghost_text=False)
    sessions.append(client)
    uri = client.open(root / "e.py", "z = \n")
    for _ in range(2):
        result = await complete(client, uri, types.Position(line=0, character=4))
        assert list(result.items) == []
    failures = [m for m in client.log_messages if "completion failed" in m.message]
    assert len(failures) == 1
    assert client.messages == []  # no popup
    # lich.status says why ghost text is gone, and when, until a completion succeeds again.
    completion = (await client.command("lich.status", {}))["completion"]
    assert completion["last_error"] == (
        f"The model server at {fake_provider.url}/v1 failed (HTTP 500)."
    )
    assert completion["last_error_at"]
    result = await complete(client, uri, types.Position(line=0, character=4))
    assert [item.insert_text or item.label for item in result.items] != []
    completion = (await client.command("lich.status", {}))["completion"]
    assert completion["last_error"] is None and completion["last_error_at"] is None


async def test_completions_are_off_without_a_model(root: Path, fake_provider, sessions) -> None:
    client = await open_session(root, "visual-studio-code", {}, ghost_text=True)
    sessions.append(client)
    uri = client.open(root / "o.py", "x = \n")
    assert await inline(client, uri, types.Position(line=0, character=4)) == []
    status = await client.command("lich.status", {})
    assert status["completion"]["model"] is None
    assert fake_provider.requests == []


# --- what never reaches a prompt: files the tools may not read, and secret files ---

# Each secret shares the identifiers around the cursor in SECRETS_SOURCE, so a file that were not
# withheld would be the best-ranked neighbouring snippet (helpers.py shows that snippets are sent).
SECRETS_SOURCE = "api_token = settings.api_token\nsecret_key = settings.\n"
SECRETS_CURSOR = types.Position(line=1, character=len("secret_key = settings."))


def _secret_text(tag: str) -> str:
    return f"api_token = settings.api_token\nsecret_key = settings.secret_key  # {tag}\n"


async def test_secret_and_forbidden_files_never_reach_the_completion_prompt(
    root: Path, fake_provider, sessions
) -> None:
    (root / ".env").write_text(_secret_text("dotenv-secret-1"))
    (root / "notes.txt").symlink_to(".env")  # its own name is harmless; it leads to .env
    (root / "id_rsa").write_text(_secret_text("ssh-key-secret-2"))
    (root / "helpers.py").write_text(_secret_text("helpers-visible-0"))
    fake_provider.script({"text": "secret_key"})
    client = await open_session(
        root, "visual-studio-code", completion_options(fake_provider), ghost_text=True
    )
    sessions.append(client)
    uri = client.open(root / "app.py", SECRETS_SOURCE)
    client.open(root / ".env")
    client.open(root / "notes.txt")
    client.open(root / "id_rsa")
    # The agent's own config, open in the editor (tools may not read it); never written to disk
    # here, so it configures nothing.
    client.open(root / ".lich" / "config.json", _secret_text("lich-config-secret-3"))
    client.open(root / "helpers.py")

    (item,) = await inline(client, uri, SECRETS_CURSOR)
    assert item.insert_text == "secret_key"
    (request,) = fake_provider.requests
    sent = json.dumps(request["json"])
    assert "helpers-visible-0" in sent  # the neighbour that may be sent is
    for secret in ("dotenv-secret-1", "ssh-key-secret-2", "lich-config-secret-3"):
        assert secret not in sent
    for name in (".env", "notes.txt", "id_rsa", "config.json"):
        assert name not in sent


async def test_no_completion_is_asked_for_in_a_secret_file(
    root: Path, fake_provider, sessions
) -> None:
    (root / ".env").write_text("API_TOKEN=sk-dotenv-secret\nSECRET_KEY=\n")
    fake_provider.script({"text": "never sent"})
    client = await open_session(root, "neovim", completion_options(fake_provider), ghost_text=True)
    sessions.append(client)
    uri = client.open(root / ".env", language_id="dotenv")
    assert await inline(client, uri, types.Position(line=1, character=len("SECRET_KEY="))) == []
    # A file linked to it is the same secret.
    (root / "env.link").symlink_to(".env")
    linked = client.open(root / "env.link", language_id="plaintext")
    assert await inline(client, linked, types.Position(line=1, character=11)) == []
    status = await client.command("lich.status", {})
    assert status["completion"]["requests"] == 0
    assert fake_provider.requests == []


async def test_lich_ask_on_a_secret_file_sends_its_name_but_not_its_text(
    root: Path, fake_provider, sessions
) -> None:
    (root / ".env").write_text("API_TOKEN=sk-dotenv-selected-secret\n")
    fake_provider.script({"text": "I cannot see it"})
    client = await open_session(
        root, "visual-studio-code", provider_options(fake_provider), ghost_text=False
    )
    sessions.append(client)
    uri = client.open(root / ".env", language_id="dotenv")
    selection = {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}}
    result = await client.command(
        "lich.ask", {"prompt": "what is in the selection?", "uri": uri, "range": selection}
    )
    assert result["final"] == "I cannot see it"
    sent = json.dumps(fake_provider.requests[0]["json"])
    assert "sk-dotenv-selected-secret" not in sent
    assert "is not shared with the model" in sent and ".env" in sent
