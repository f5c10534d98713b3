"""Project rules over the wire: a real `python -m lich_lsp` under every client profile, the fake
provider logging what the model is sent. AGENTS.md (nearest wins, plus the root's), the CLAUDE.md
fallback, the 32 KiB bound with its note, `project_rules: false`, and lich.status's list."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from lsp_harness import provider_options, uri_of

from lich_core.project_rules import PROJECT_RULES_MAX_BYTES

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")

RULES_LABEL = "Project rules from the repository"
BIG_RULES_BYTES = 40 * 1024


def first_user_message(request: dict[str, Any]) -> str:
    return next(m["content"] for m in request["json"]["messages"] if m.get("role") == "user")


async def test_agents_md_reaches_the_model_nearest_and_root(
    session, root: Path, client_name: str, fake_provider
) -> None:
    (root / "AGENTS.md").write_text("Root rule: run `make check` before answering.\n")
    (root / "CLAUDE.md").write_text("Claude rule: never read when AGENTS.md exists.\n")
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "AGENTS.md").write_text("Pkg rule: use tabs in pkg.\n")
    (root / "pkg" / "sub" / "mod.py").write_text("x = 1\n")
    # An untrusted workspace config (it asks for a test command): the rules are read anyway.
    (root / ".lich").mkdir()
    (root / ".lich" / "config.json").write_text(json.dumps({"test_command": "make check"}))
    fake_provider.script({"text": "ok one"}, {"text": "ok two"})
    client = await session(client_name, init_options=provider_options(fake_provider))

    status = await client.command("lich.status", {})
    assert status["project_rules"] == [
        {
            "path": "AGENTS.md",
            "bytes": len("Root rule: run `make check` before answering.\n"),
            "truncated": False,
        }
    ]

    uri = uri_of(root / "pkg" / "sub" / "mod.py")
    result = await client.command("lich.ask", {"prompt": "tidy this", "uri": uri})
    assert result["stopped_reason"] == "final"
    message = first_user_message(fake_provider.requests[0])
    assert message.startswith("tidy this\n\n")
    assert f"{RULES_LABEL} (AGENTS.md, pkg/AGENTS.md;" in message
    assert "Root rule: run `make check`" in message
    assert "Pkg rule: use tabs in pkg." in message
    assert "Claude rule" not in message
    # Root first, the nearer file after it (it wins where they disagree).
    assert message.index("Root rule") < message.index("Pkg rule")
    # The rules come before the editor's context, which stays last.
    assert message.index("Pkg rule") < message.index("Context from the editor")
    status = await client.command("lich.status", {})
    assert [r["path"] for r in status["project_rules"]] == ["AGENTS.md", "pkg/AGENTS.md"]

    # Without a uri: the root's file only.
    await client.command("lich.ask", {"prompt": "and the rest"})
    message = first_user_message(fake_provider.requests[1])
    assert "Root rule" in message and "Pkg rule" not in message


async def test_claude_md_fallback_truncated_at_the_bound(
    session, root: Path, client_name: str, fake_provider
) -> None:
    line = "Keep functions short and named for what they do.\n"
    big = (line * (BIG_RULES_BYTES // len(line) + 1))[:BIG_RULES_BYTES] + "TAIL-MARKER\n"
    (root / "CLAUDE.md").write_text(big)
    fake_provider.script({"text": "ok"})
    client = await session(client_name, init_options=provider_options(fake_provider))

    result = await client.command("lich.ask", {"prompt": "go"})
    assert result["stopped_reason"] == "final"
    message = first_user_message(fake_provider.requests[0])
    assert f"{RULES_LABEL} (CLAUDE.md;" in message
    assert "TAIL-MARKER" not in message
    assert (
        f"[lich: CLAUDE.md was cut here: it is {len(big)} bytes and project rules are limited "
        f"to {PROJECT_RULES_MAX_BYTES} bytes in all]"
    ) in message
    body = message.split("--- CLAUDE.md ---\n", 1)[1].split("\n[lich: CLAUDE.md was cut", 1)[0]
    assert len(body.encode()) == PROJECT_RULES_MAX_BYTES
    status = await client.command("lich.status", {})
    assert status["project_rules"] == [
        {"path": "CLAUDE.md", "bytes": len(big.encode()), "truncated": True}
    ]


async def test_project_rules_false_sends_nothing(
    session, root: Path, client_name: str, fake_provider
) -> None:
    (root / "AGENTS.md").write_text("Root rule: should not be sent.\n")
    fake_provider.script({"text": "ok"})
    client = await session(
        client_name, init_options=provider_options(fake_provider, project_rules=False)
    )
    assert (await client.command("lich.status", {}))["project_rules"] == []
    await client.command("lich.ask", {"prompt": "go"})
    message = first_user_message(fake_provider.requests[0])
    assert message == "go"
    assert (await client.command("lich.status", {}))["project_rules"] == []


async def test_a_workspace_config_cannot_turn_rules_on(
    session, root: Path, client_name: str, fake_provider
) -> None:
    """The user's false holds against a workspace file's true (it may only turn the switch off)."""
    (root / "AGENTS.md").write_text("Root rule.\n")
    (root / ".lich").mkdir()
    (root / ".lich" / "config.json").write_text(json.dumps({"project_rules": True}))
    fake_provider.script({"text": "ok"})
    client = await session(
        client_name, init_options=provider_options(fake_provider, project_rules=False)
    )
    await client.command("lich.ask", {"prompt": "go"})
    assert first_user_message(fake_provider.requests[0]) == "go"
