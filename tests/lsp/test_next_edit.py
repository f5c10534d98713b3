"""Next edit suggestions over the wire: a real `python -m lich_lsp` answering
`textDocument/copilotInlineEdit` (Copilot's request and shape) from a fake Zeta-format model on
127.0.0.1 (tests/support/fake_provider.py's OpenAI `/v1/completions`), which reads its prompt as
the real model would: it finishes the rename the user's latest edit started, in the editable
region it was given.

A rename at the definition yields edits on the other lines, in the client's position encoding;
the prompt carries the user's edit (coalesced from keystrokes); an outdated version gets no
edits and asks nothing; an edit undoing the user's is dropped; a newer request supersedes the
older and `$/cancelRequest` cancels, each closing the provider stream; the chat format works;
secret files are never asked about; lich.status names the model."""

from __future__ import annotations

import asyncio
import json
import os
import re
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from lsp_harness import WAIT_S, EditorClient, apply_text_edits, start_session, stop_session, units
from lsprotocol import types
from pygls.exceptions import JsonRpcException

pytestmark = [
    pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning"),
    pytest.mark.timeout(60),
]

METHOD = "textDocument/copilotInlineEdit"
START = "<|editable_region_start|>"
END = "<|editable_region_end|>"
CURSOR = "<|user_cursor_is_here|>"
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")

# "𝒳" is two UTF-16 units and four UTF-8: the edits after it on its line move with the encoding.
SOURCE = (
    "def compute(values):\n"
    "    count = 0\n"
    "    for v in values:\n"
    "        count += v\n"
    '    print("𝒳", count)\n'
    "    return count\n"
)
RENAMED = SOURCE.replace("count", "total")


def renames(diff: str) -> list[tuple[str, str]]:
    """(old, new) for each identifier the diff's removed lines have where its added lines have
    another."""
    removed = [line[1:] for line in diff.splitlines() if line.startswith("-") and line[1:2] != "-"]
    added = [line[1:] for line in diff.splitlines() if line.startswith("+") and line[1:2] != "+"]
    pairs = zip(
        IDENTIFIER.findall("\n".join(removed)), IDENTIFIER.findall("\n".join(added)), strict=False
    )
    return [(a, b) for a, b in pairs if a != b]


def zeta_renames(body: dict[str, Any]) -> str:
    """A fake next-edit model: finds the newest diff in its prompt (Zeta's, or the chat
    message) that renames an identifier, and answers the editable region with that rename made
    throughout, as Zeta answers (a fence named after the file, the two markers)."""
    prompt = body.get("prompt") or body["messages"][-1]["content"]
    old, new = next(
        pair
        for diff in reversed(re.findall(r"```diff\n(.*?)\n```", prompt, re.S))
        for pair in renames(diff)
    )
    start = prompt.rindex(START) + len(START)
    region = prompt[start : prompt.index(END, start)].replace(CURSOR, "")
    region = re.sub(rf"\b{re.escape(old)}\b", new, region)
    return f"```calc.py\n{START}{region}{END}\n```"


def zeta_options(fake: Any, **extra: Any) -> dict[str, Any]:
    entry = {"kind": "openai_compat", "base_url": f"{fake.url}/v1", "model": "zeta", **extra}
    return {"next_edit": entry}


def params(uri: str, version: int | None, position: types.Position) -> dict[str, Any]:
    return {
        "textDocument": {"uri": uri, "version": version},
        "position": {"line": position.line, "character": position.character},
    }


def as_plain(value: Any) -> Any:
    """The client's answer as plain JSON (pytest-lsp gives an unknown method's result as
    named tuples)."""
    if hasattr(value, "_asdict"):
        return {key: as_plain(item) for key, item in value._asdict().items()}
    if isinstance(value, dict):
        return {key: as_plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_plain(item) for item in value]
    return value


async def next_edits(client: EditorClient, uri: str, version: int | None, position: Any) -> list:
    result = await asyncio.wait_for(
        client.protocol.send_request_async(METHOD, params(uri, version, position)), WAIT_S
    )
    return as_plain(result)["edits"]


def applied(text: str, edits: list[dict[str, Any]], encoding: str) -> str:
    """`edits` applied to `text`, positions read in the client's encoding."""
    as_edits = [
        SimpleNamespace(
            range=SimpleNamespace(
                start=types.Position(**edit["range"]["start"]),
                end=types.Position(**edit["range"]["end"]),
            ),
            new_text=edit["text"],
        )
        for edit in edits
    ]
    return apply_text_edits(text, as_edits, encoding)


def rename_at_definition(client: EditorClient, uri: str) -> types.Position:
    """The user renames `count` where it is defined, a few keystrokes at a time."""
    client.type_text(uri, SOURCE.replace("    count = 0", "    tot = 0"))
    client.type_text(uri, SOURCE.replace("    count = 0", "    total = 0"))
    return types.Position(line=1, character=len("    total"))


@pytest.fixture
async def sessions():
    started: list[EditorClient] = []
    yield started
    for client in started:
        await stop_session(client)
        assert not client.failures, client.failures


async def open_session(root: Path, client_name: str, options: dict[str, Any]) -> EditorClient:
    return await start_session(root, client_name, init_options=options)


async def test_a_rename_at_the_definition_is_finished_on_the_other_lines(
    root: Path, client_name: str, fake_provider, sessions
) -> None:
    fake_provider.script({"answer": zeta_renames, "chunks": 4})
    client = await open_session(root, client_name, zeta_options(fake_provider))
    sessions.append(client)
    uri = client.open(root / "calc.py", SOURCE)
    cursor = rename_at_definition(client, uri)

    edits = await next_edits(client, uri, 3, cursor)
    # One minimal edit per changed line, away from the cursor, in the client's own units.
    assert [edit["range"]["start"]["line"] for edit in edits] == [3, 4, 5]
    assert all(edit["text"] == "total" for edit in edits)
    assert all(edit["textDocument"] == {"uri": uri, "version": 3} for edit in edits)
    on_print = edits[1]["range"]
    assert on_print["start"]["character"] == units('    print("𝒳", ', client.encoding)
    assert on_print["end"]["character"] == units('    print("𝒳", count', client.encoding)
    assert applied(client.text(uri), edits, client.encoding) == RENAMED

    (request,) = fake_provider.requests
    assert request["path"] == "/v1/completions"
    prompt = request["json"]["prompt"]
    # The user's edit, coalesced from its keystrokes into one diff, then the excerpt.
    assert prompt.count('User edited "calc.py":') == 1
    assert "-    count = 0\n+    total = 0" in prompt
    assert "tot = 0" not in prompt
    assert f"{START}\n" in prompt and "    total<|user_cursor_is_here|> = 0" in prompt
    assert "<|start_of_file|>" in prompt
    assert prompt.startswith("### Instruction:") and prompt.endswith("### Response:\n\n")
    status = (await client.command("lich.status", {}))["next_edit"]
    assert status["model"].startswith("openai_compat zeta @") and status["requests"] == 1


async def test_an_edit_at_the_end_of_a_file_without_a_final_line_break_stays_on_its_line(
    root: Path, fake_provider, sessions
) -> None:
    """The last line has no break: an edit ending at the text's end is on that line, not one past
    it (found by the VS Code client)."""
    fake_provider.script({"answer": zeta_renames})
    client = await open_session(root, "visual-studio-code", zeta_options(fake_provider))
    sessions.append(client)
    source = SOURCE.rstrip("\n")
    uri = client.open(root / "calc.py", source)
    client.type_text(uri, source.replace("    count = 0", "    total = 0"))
    edits = await next_edits(client, uri, 2, types.Position(line=1, character=len("    total")))
    assert edits[-1]["range"]["end"] == {"line": 5, "character": len("    return count")}
    assert applied(client.text(uri), edits, client.encoding) == RENAMED.rstrip("\n")


async def test_crlf_lines_keep_their_breaks(root: Path, fake_provider, sessions) -> None:
    fake_provider.script({"answer": zeta_renames})
    client = await open_session(root, "visual-studio-code", zeta_options(fake_provider))
    sessions.append(client)
    crlf = SOURCE.replace("\n", "\r\n")
    uri = client.open(root / "calc.py", crlf)
    client.type_text(uri, crlf.replace("    count = 0", "    total = 0"))
    edits = await next_edits(client, uri, 2, types.Position(line=1, character=len("    total")))
    assert applied(client.text(uri), edits, client.encoding) == RENAMED.replace("\n", "\r\n")
    prompt = fake_provider.requests[0]["json"]["prompt"]
    assert "-    count = 0\n+    total = 0\n" in prompt  # the diff's lines, without the \r


async def test_an_outdated_version_gets_no_edits_and_asks_nothing(
    root: Path, fake_provider, sessions
) -> None:
    fake_provider.script({"answer": zeta_renames})
    client = await open_session(root, "visual-studio-code", zeta_options(fake_provider))
    sessions.append(client)
    uri = client.open(root / "calc.py", SOURCE)
    cursor = rename_at_definition(client, uri)
    assert await next_edits(client, uri, 2, cursor) == []
    assert fake_provider.requests == []
    # The current version is answered.
    assert len(await next_edits(client, uri, 3, cursor)) == 3


async def test_a_document_changed_while_the_model_answered_gets_no_edits(
    root: Path, fake_provider, sessions
) -> None:
    release = threading.Event()

    def after_the_user_typed(body: dict[str, Any]) -> str:
        release.wait(WAIT_S)  # the fake's thread: the model "thinks" until the user has typed
        return zeta_renames(body)

    fake_provider.script({"answer": after_the_user_typed}, {"answer": zeta_renames})
    client = await open_session(root, "visual-studio-code", zeta_options(fake_provider))
    sessions.append(client)
    uri = client.open(root / "calc.py", SOURCE)
    cursor = rename_at_definition(client, uri)
    pending = asyncio.ensure_future(next_edits(client, uri, 3, cursor))
    assert await asyncio.to_thread(fake_provider.wait_for_request, lambda r: True, 0, WAIT_S)
    client.type_text(uri, client.text(uri).replace("    return count", "    return count  #"))
    await client.command("lich.status", {})  # the server has taken the change (messages in order)
    release.set()
    assert await pending == []
    # Asked again for the new version, it answers.
    assert len(await next_edits(client, uri, 4, cursor)) == 3


async def test_an_edit_that_would_undo_the_users_edit_is_dropped(
    root: Path, fake_provider, sessions
) -> None:
    def undo_and_rename(body: dict[str, Any]) -> str:
        # Puts `count` back at the definition, and renames `v` on the loop's lines.
        answer = zeta_renames(body).replace("total", "count")
        return answer.replace("for v in", "for value in").replace("+= v\n", "+= value\n")

    fake_provider.script({"answer": undo_and_rename})
    client = await open_session(root, "neovim", zeta_options(fake_provider))
    sessions.append(client)
    uri = client.open(root / "calc.py", SOURCE)
    cursor = rename_at_definition(client, uri)
    edits = await next_edits(client, uri, 3, cursor)
    assert [edit["text"] for edit in edits] == ["alue", "alue"]  # `v` -> `value`, minimal
    assert [edit["range"]["start"]["line"] for edit in edits] == [2, 3]


async def test_a_newer_request_supersedes_and_closes_the_older_stream(
    root: Path, fake_provider, sessions
) -> None:
    fake_provider.script(
        {"text": f"```calc.py\n{START}\nslow", "chunks": 2, "stall_after_chunks": 1},
        {"answer": zeta_renames},
    )
    client = await open_session(root, "visual-studio-code", zeta_options(fake_provider))
    sessions.append(client)
    uri = client.open(root / "calc.py", SOURCE)
    cursor = rename_at_definition(client, uri)
    older = asyncio.ensure_future(next_edits(client, uri, 3, cursor))
    assert await asyncio.to_thread(fake_provider.wait_for_request, lambda r: True, 0, WAIT_S)
    newer = await next_edits(client, uri, 3, cursor)
    assert len(newer) == 3
    assert await older == []  # superseded: no edits, not an error
    assert await asyncio.to_thread(fake_provider.wait_closed_early, 0, WAIT_S) is not None


async def test_the_rest_of_an_answer_is_read_and_a_rambling_one_is_cut_off(
    root: Path, fake_provider, sessions
) -> None:
    whole = f"```calc.py\n{START}\n{SOURCE.replace('count', 'total')}{END}"
    fake_provider.script(
        # The region is whole in the first of four pieces; the rest follows, paced.
        {"text": whole + "\n```" + "." * (3 * len(whole) - 4), "chunks": 4, "chunk_delay_s": 0.02},
        {"endless": True, "text": whole, "chunk_delay_s": 0.01},
    )
    client = await open_session(root, "visual-studio-code", zeta_options(fake_provider))
    sessions.append(client)
    uri = client.open(root / "calc.py", SOURCE)
    cursor = rename_at_definition(client, uri)
    assert len(await next_edits(client, uri, 3, cursor)) == 3  # answered at the region's end
    # The rest was read, not hung up on: the server can keep the connection.
    ended = await asyncio.to_thread(
        fake_provider.wait_for_request,
        lambda r: r["stream_ended_at"] is not None or r["closed_early_at"] is not None,
        0,
        WAIT_S,
    )
    assert ended and fake_provider.requests[0]["closed_early_at"] is None
    # A model that goes on after the region is answered just as soon, then cut off.
    assert len(await next_edits(client, uri, 3, cursor)) == 3
    assert await asyncio.to_thread(fake_provider.wait_closed_early, 1, WAIT_S) is not None


async def test_cancel_request_closes_the_provider_stream(
    root: Path, fake_provider, sessions
) -> None:
    fake_provider.script({"text": f"{START}\nnever", "chunks": 2, "stall_after_chunks": 1})
    client = await open_session(root, "neovim@v0.7.0", zeta_options(fake_provider))
    sessions.append(client)
    uri = client.open(root / "calc.py", SOURCE)
    cursor = rename_at_definition(client, uri)
    pending = asyncio.ensure_future(
        client.protocol.send_request_async(METHOD, params(uri, 3, cursor), msg_id="edit-1")
    )
    assert await asyncio.to_thread(fake_provider.wait_for_request, lambda r: True, 0, WAIT_S)
    client.protocol.notify("$/cancelRequest", types.CancelParams(id="edit-1"))
    with pytest.raises(JsonRpcException):
        await asyncio.wait_for(pending, WAIT_S)
    assert await asyncio.to_thread(fake_provider.wait_closed_early, 0, WAIT_S) is not None
    status = await client.command("lich.status", {})
    assert status["next_edit"]["requests"] == 1


async def test_the_chat_format_asks_a_chat_model(root: Path, fake_provider, sessions) -> None:
    fake_provider.script({"answer": zeta_renames, "chunks": 3})
    client = await open_session(
        root, "emacs", zeta_options(fake_provider, format="chat", model="any-chat-model")
    )
    sessions.append(client)
    uri = client.open(root / "calc.py", SOURCE)
    cursor = rename_at_definition(client, uri)
    edits = await next_edits(client, uri, 3, cursor)
    assert applied(client.text(uri), edits, client.encoding) == RENAMED
    (request,) = fake_provider.requests
    assert request["path"] == "/v1/chat/completions"
    (message,) = request["json"]["messages"]
    assert message["role"] == "user"
    assert 'User edited "calc.py":' in message["content"]
    assert "-    count = 0\n+    total = 0" in message["content"]
    status = (await client.command("lich.status", {}))["next_edit"]
    assert status["model"].endswith("(chat)")


async def test_off_without_a_model_and_never_for_a_secret_file(
    root: Path, fake_provider, sessions
) -> None:
    (root / ".env").write_text("API_TOKEN=sk-secret-next-edit\n")
    client = await open_session(root, "visual-studio-code", {})
    sessions.append(client)
    uri = client.open(root / "calc.py", SOURCE)
    cursor = rename_at_definition(client, uri)
    assert await next_edits(client, uri, 3, cursor) == []
    assert (await client.command("lich.status", {}))["next_edit"]["model"] is None

    fake_provider.script({"answer": zeta_renames})
    other = await open_session(root, "neovim", zeta_options(fake_provider))
    sessions.append(other)
    secret = other.open(root / ".env", language_id="dotenv")
    other.type_text(secret, "API_TOKEN=sk-secret-next-edit-2\n")
    code = other.open(root / "calc.py", SOURCE)
    cursor = rename_at_definition(other, code)
    assert await next_edits(other, secret, 2, types.Position(line=0, character=3)) == []
    assert fake_provider.requests == []
    # The secret file's edit never reaches another file's prompt either.
    assert len(await next_edits(other, code, 3, cursor)) == 3
    sent = json.dumps(fake_provider.requests[0]["json"])
    assert "sk-secret" not in sent and ".env" not in sent


async def test_a_model_configured_while_the_server_runs_is_used(
    root: Path, fake_provider, sessions
) -> None:
    client = await open_session(root, "neovim", {})
    sessions.append(client)
    uri = client.open(root / "calc.py", SOURCE)
    assert (await client.command("lich.status", {}))["next_edit"]["model"] is None
    user_config = Path(os.environ["XDG_CONFIG_HOME"]) / "lich" / "config.json"
    user_config.parent.mkdir(parents=True, exist_ok=True)
    user_config.write_text(json.dumps(zeta_options(fake_provider)), encoding="utf-8")
    status = (await client.command("lich.status", {}))["next_edit"]  # looks at the files first
    assert status["model"].startswith("openai_compat zeta @")
    fake_provider.script({"answer": zeta_renames})
    client.type_text(uri, SOURCE)  # the first change seen from now on (version 2)
    client.type_text(uri, SOURCE.replace("    count = 0", "    tot = 0"))
    client.type_text(uri, SOURCE.replace("    count = 0", "    total = 0"))
    edits = await next_edits(client, uri, 4, types.Position(line=1, character=len("    total")))
    assert applied(client.text(uri), edits, client.encoding) == RENAMED


async def test_bad_params_are_a_clear_error(root: Path, sessions) -> None:
    client = await open_session(root, "visual-studio-code", {})
    sessions.append(client)
    with pytest.raises(JsonRpcException, match="invalid_arg: textDocument/copilotInlineEdit"):
        await client.raw_request(METHOD, {"textDocument": {"uri": "file:///x.py"}})
