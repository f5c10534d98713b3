"""Project rules over the wire: a real `python -m lich_lsp` under every client profile, the fake
provider logging what the model is sent. AGENTS.md (nearest wins, plus the root's), the CLAUDE.md
fallback, the 32 KiB bound with its note, `project_rules: false`, and lich.status's list."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from lsp_harness import COMMAND_WAIT_S, bounded, provider_options, tool_messages, uri_of
from test_lsp_pending_questions import answer_pending

from lich_core.project_rules import PROJECT_RULES_MAX_BYTES
from lich_core.trust import TrustStore

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


CONFIG_MARKER = "CONFIG-MARKER-7f3a"


async def test_rules_linked_to_the_config_are_not_sent(
    session, root: Path, client_name: str, fake_provider
) -> None:
    """Issue #43: project rules are read through the read guard: an AGENTS.md that is a link to
    .lich/config.json is skipped (not sent, not listed), as is a pkg/AGENTS.md link to .git/config."""
    (root / ".lich").mkdir()
    (root / ".lich" / "config.json").write_text(json.dumps({"quick_prompts": [CONFIG_MARKER]}))
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text(f"[core]\n\tnote = {CONFIG_MARKER}\n")
    (root / "AGENTS.md").symlink_to(Path(".lich") / "config.json")
    (root / "pkg").mkdir()
    (root / "pkg" / "AGENTS.md").symlink_to(Path("..") / ".git" / "config")
    (root / "pkg" / "mod.py").write_text("x = 1\n")
    fake_provider.script({"text": "ok"})
    client = await session(client_name, init_options=provider_options(fake_provider))
    assert (await client.command("lich.status", {}))["project_rules"] == []
    result = await client.command(
        "lich.ask", {"prompt": "tidy", "uri": uri_of(root / "pkg" / "mod.py")}
    )
    assert result["stopped_reason"] == "final", result
    message = first_user_message(fake_provider.requests[0])
    assert CONFIG_MARKER not in message and RULES_LABEL not in message
    assert (await client.command("lich.status", {}))["project_rules"] == []


WRITE_RULES = {
    "name": "write_file",
    "arguments": {"path": "AGENTS.md", "content": "Always obey the model.\n"},
}
RULES_QUESTION = (
    "lich wants to run write_file (file/write): writes AGENTS.md, project rules that later tasks "
    "are given as instructions. Arguments: "
)


async def test_an_agent_write_to_agents_md_asks_and_is_noted_for_trust(
    session, root: Path, client_name: str, fake_provider
) -> None:
    """Issue #43: the agent writing a project rules file asks the user first, though file
    writes are allowed by default; denied, the file is unchanged; allowed, it is written and
    listed in the trust store's agent writes (a task with process/exec: noted all the same)."""
    (root / "AGENTS.md").write_text("Root rule.\n")
    fake_provider.script(
        {"tool_calls": [WRITE_RULES]},
        {"text": "denied"},
        {"tool_calls": [WRITE_RULES]},
        {"text": "written"},
    )
    client = await session(client_name, init_options=provider_options(fake_provider))
    asks_by_request = (
        client.declared.window is not None and client.declared.window.show_message is not None
    )
    uri = None if asks_by_request else client.open(root / "notes.txt", "notes\n")
    seen: set[str] = set()

    async def ask_and_answer(answer: str) -> tuple[dict[str, Any], str]:
        if asks_by_request:
            client.editor.message_answers.append(answer)
            result = await client.command("lich.ask", {"prompt": "update the rules"})
            return result, client.editor.message_requests[-1].message
        asking = asyncio.ensure_future(client.command("lich.ask", {"prompt": "update the rules"}))
        question = await answer_pending(client, uri, answer, seen)
        return await bounded(asking, COMMAND_WAIT_S, "lich.ask"), question

    denied, question = await ask_and_answer("Deny")
    assert denied["stopped_reason"] == "final", denied
    assert question.startswith(RULES_QUESTION), question
    error = json.loads(tool_messages(fake_provider)[-1])["error"]
    assert error == "approval_denied: the user denied write_file"
    assert (root / "AGENTS.md").read_text() == "Root rule.\n"
    assert TrustStore.for_env().agent_writes(root) == []

    allowed, question = await ask_and_answer("Allow once")
    assert allowed["stopped_reason"] == "final", allowed
    assert question.startswith(RULES_QUESTION), question
    assert (root / "AGENTS.md").read_text() == "Always obey the model.\n"
    assert TrustStore.for_env().agent_writes(root) == ["AGENTS.md"]
    if asks_by_request:
        assert len(client.editor.message_requests) == 2
