"""@-mentions over the wire, every client profile: `@file` and `@file:a-b` put the open buffer's
anchored rows (its unsaved text, not the disk's) in the first request and arm the read state,
`@../x` is refused with its note in the request, `@problems` attaches the diagnostics code action
requests and lich.ask brought for the open files (or says none are known), and lich.mentions lists
candidate paths."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from lsp_harness import EditorClient, provider_options, tool_messages
from lsprotocol import types

from lich_core.hashline.anchors import line_hash
from lich_lsp.agent_commands import NO_PROBLEMS_NOTE, PROBLEMS_MAX

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")


def first_request_text(fake_provider) -> str:
    return json.dumps(fake_provider.requests[0]["json"]["messages"], ensure_ascii=False)


async def test_file_mention_attaches_the_buffer_rows_and_counts_as_read(
    session, root: Path, client_name: str, fake_provider
) -> None:
    (root / "m.py").write_text("disk one\ndisk two\n", encoding="utf-8")
    anchor = f"2:{line_hash('beta')}"
    # No read_file: the mention's rows are the anchors the patch uses.
    fake_provider.script(
        {
            "tool_calls": [
                {
                    "name": "apply_patch",
                    "arguments": {"input": f"@@ m.py\n= {anchor}..{anchor}\n~BETA\n"},
                }
            ]
        },
        {"text": "patched"},
    )
    client = await session(client_name, init_options=provider_options(fake_provider))
    uri = client.open(root / "m.py", "alpha\nbeta\ngamma\n")
    result = await client.command("lich.ask", {"prompt": "uppercase beta in @m.py"})
    assert result["stopped_reason"] == "final", result
    sent = first_request_text(fake_provider)
    assert f"1:{line_hash('alpha')}|alpha\\n{anchor}|beta\\n3:{line_hash('gamma')}|gamma" in sent
    assert "disk one" not in sent
    assert not any("not_read" in m for m in tool_messages(fake_provider))
    assert client.text(uri) == "alpha\nBETA\ngamma\n"


async def test_range_mention_attaches_only_those_rows(
    session, root: Path, client_name: str, fake_provider
) -> None:
    (root / "r.py").write_text("x\n", encoding="utf-8")
    fake_provider.script({"text": "seen"})
    client = await session(client_name, init_options=provider_options(fake_provider))
    client.open(root / "r.py", "one\ntwo\nthree\nfour\n")
    result = await client.command("lich.ask", {"prompt": "explain @r.py:2-3"})
    assert result["stopped_reason"] == "final", result
    sent = first_request_text(fake_provider)
    assert f"2:{line_hash('two')}|two\\n3:{line_hash('three')}|three" in sent
    assert "lines 2-3 of 4" in sent
    assert "|one" not in sent and "|four" not in sent


async def test_escaping_and_unresolved_mentions_are_refused_with_a_note(
    session, root: Path, client_name: str, fake_provider
) -> None:
    (root.parent / "x").write_text("outside secret\n", encoding="utf-8")
    fake_provider.script({"text": "could not attach"})
    client = await session(client_name, init_options=provider_options(fake_provider))
    result = await client.command("lich.ask", {"prompt": "compare @../x with @gone.py"})
    assert result["stopped_reason"] == "final", result
    sent = first_request_text(fake_provider)
    assert "outside secret" not in sent
    assert "@../x: path_escape: ../x escapes" in sent
    assert "@gone.py: not_found: gone.py" in sent
    assert "tell the user in your answer" in sent
    # The mentions stay text in the prompt itself.
    assert "compare @../x with @gone.py" in sent


async def test_mentions_command_lists_candidates(session, root: Path, client_name: str) -> None:
    (root / "pkg").mkdir()
    for rel in ("pkg/alpha.py", "pkg/beta.py", "notes.md"):
        (root / rel).write_text("", encoding="utf-8")
    client = await session(client_name)
    assert await client.command("lich.mentions", {"prefix": "pkg/a"}) == {
        "candidates": ["pkg/alpha.py"]
    }
    listed = await client.command("lich.mentions", {"prefix": "beta"})
    assert listed == {"candidates": ["pkg/beta.py"]}
    everything = await client.command("lich.mentions", {})
    assert sorted(everything["candidates"]) == ["notes.md", "pkg/alpha.py", "pkg/beta.py"]


def diagnostic(line: int, message: str, source: str | None = None) -> types.Diagnostic:
    return types.Diagnostic(
        range=types.Range(
            start=types.Position(line=line, character=0), end=types.Position(line=line, character=1)
        ),
        message=message,
        severity=types.DiagnosticSeverity.Error if source else types.DiagnosticSeverity.Warning,
        source=source,
    )


async def send_code_action(client: EditorClient, uri: str, found: list[types.Diagnostic]) -> None:
    """What an editor does when the user opens the code action menu: lich remembers `found`."""
    await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(
                start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)
            ),
            context=types.CodeActionContext(diagnostics=found),
        )
    )


async def test_problems_mention_attaches_the_open_files_diagnostics(
    session, root: Path, client_name: str, fake_provider
) -> None:
    (root / "pkg").mkdir()
    fake_provider.script({"text": "fixed"}, {"text": "nothing"})
    client = await session(client_name, init_options=provider_options(fake_provider))
    first = client.open(root / "pkg" / "a.py", "imp os\nx = y\n")
    second = client.open(root / "b.py", "print(z)\n")
    closed = client.open(root / "c.py", "w\n")
    await send_code_action(
        client,
        first,
        [
            diagnostic(0, "invalid syntax", "python"),
            diagnostic(1, "undefined name 'y'", "pyflakes"),
        ],
    )
    await send_code_action(client, closed, [diagnostic(0, "closed file's problem", "pyflakes")])
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=closed))
    )
    # lich.ask's own diagnostics (a code action's arguments) count for its file.
    result = await client.command(
        "lich.ask",
        {
            "prompt": "fix @problems",
            "uri": second,
            "diagnostics": [{"range": {"start": {"line": 0}}, "message": "z is unbound"}],
        },
    )
    assert result["stopped_reason"] == "final", result
    sent = first_request_text(fake_provider)
    assert (
        "Diagnostics in b.py:\\n- line 1: problem: z is unbound\\n\\n"
        "Diagnostics in pkg/a.py:\\n- line 1: error [python]: invalid syntax\\n"
        "- line 2: error [pyflakes]: undefined name 'y'"
    ) in sent
    assert "closed file's problem" not in sent
    assert "fix @problems" in sent
    # An edit makes what the editor reported for the old text stale: nothing is known now.
    client.type_text(first, "import os\nx = 1\n")
    result = await client.command("lich.ask", {"prompt": "again @problems"})
    assert result["stopped_reason"] == "final", result
    later = json.dumps(fake_provider.requests[1]["json"]["messages"], ensure_ascii=False)
    assert NO_PROBLEMS_NOTE in later and "invalid syntax" not in later


async def test_problems_mention_without_diagnostics_says_so(
    session, root: Path, client_name: str, fake_provider
) -> None:
    fake_provider.script({"text": "no problems known"})
    client = await session(client_name, init_options=provider_options(fake_provider))
    uri = client.open(root / "clean.py", "x = 1\n")
    await send_code_action(client, uri, [])
    result = await client.command("lich.ask", {"prompt": "fix @problems"})
    assert result["stopped_reason"] == "final", result
    sent = first_request_text(fake_provider)
    assert NO_PROBLEMS_NOTE in sent
    assert "Diagnostics in clean.py" not in sent and "@problems: not_found" not in sent


async def test_problems_mention_is_bounded_with_a_note(
    session, root: Path, client_name: str, fake_provider
) -> None:
    fake_provider.script({"text": "too many"})
    client = await session(client_name, init_options=provider_options(fake_provider))
    uri = client.open(root / "noisy.py", "x\n" * 10)
    many = [diagnostic(n % 10, f"warning number {n}") for n in range(PROBLEMS_MAX + 7)]
    await send_code_action(client, uri, many)
    result = await client.command("lich.ask", {"prompt": "triage @problems"})
    assert result["stopped_reason"] == "final", result
    sent = first_request_text(fake_provider)
    assert f"warning number {PROBLEMS_MAX - 1}" in sent
    assert f"warning number {PROBLEMS_MAX}\\n" not in sent
    assert f"7 more diagnostics left out: @problems attaches at most {PROBLEMS_MAX}" in sent


CONFIG_MARKER = "CONFIG-MARKER-7f3a"
BUFFER_MARKER = "BUFFER-MARKER-c41e"
GIT_MARKER = "GIT-MARKER-91c2"
OUTSIDE_MARKER = "OUTSIDE-MARKER-5e0d"
ENV_MARKER = "ENV-MARKER-2b8c"


async def test_mentions_go_through_the_read_guard_and_refusals_are_shown(
    session, root: Path, fake_provider
) -> None:
    """Issue #43: a FIFO, the agent's config (on disk and as an open buffer), `.git/config`, a
    link to the config, a file outside the root and a secret file are refused with the guard's
    prefix, named to the user (window/showMessage) and to the model, and none of their text is
    sent; the allowed mention still is."""
    (root / ".lich").mkdir()
    (root / ".lich" / "config.json").write_text(json.dumps({"quick_prompts": [CONFIG_MARKER]}))
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text(f"[remote]\n\turl = https://x:{GIT_MARKER}@h/r\n")
    (root / "link").symlink_to(Path(".lich") / "config.json")
    (root.parent / "outside.txt").write_text(f"{OUTSIDE_MARKER}\n")
    (root / ".env").write_text(f"TOKEN={ENV_MARKER}\n")
    os.mkfifo(root / "fifo.py")
    (root / "ok.py").write_text("print('attached')\n")
    fake_provider.script({"text": "some were not attached"})
    client = await session(init_options=provider_options(fake_provider))
    client.open(root / ".lich" / "config.json", json.dumps({"max_turns": BUFFER_MARKER}))
    prompt = "see @fifo.py @.lich/config.json @.git/config @link @../outside.txt @.env and @ok.py"
    result = await client.command("lich.ask", {"prompt": prompt})
    assert result["stopped_reason"] == "final", result
    sent = first_request_text(fake_provider)
    for marker in (CONFIG_MARKER, BUFFER_MARKER, GIT_MARKER, OUTSIDE_MARKER, ENV_MARKER):
        assert marker not in sent, marker
    assert "print('attached')" in sent
    refusals = [
        "@fifo.py: not_regular_file: fifo.py is a FIFO, not a regular file",
        "@.lich/config.json: forbidden_path: .lich/config.json",
        "@.git/config: forbidden_path: .git/config",
        "@link: forbidden_path: .lich/config.json",
        "@../outside.txt: path_escape: ../outside.txt",
        "@.env: secret_file: .env",
    ]
    await client.wait_until(
        lambda: any("lich: not attached:" in m.message for m in client.messages),
        what="the refused mentions shown to the user",
    )
    (shown,) = [m for m in client.messages if "lich: not attached:" in m.message]
    assert shown.type == types.MessageType.Warning
    for refusal in refusals:
        assert refusal in sent, refusal
        assert refusal in shown.message, refusal
