"""@-mentions over the wire, every client profile: `@file` and `@file:a-b` put the open buffer's
anchored rows (its unsaved text, not the disk's) in the first request and arm the read state,
`@../x` is refused with its note in the request, and lich.mentions lists candidate paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lsp_harness import provider_options, tool_messages

from lich_core.hashline.anchors import line_hash

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
