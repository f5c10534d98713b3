"""Trust given to a workspace config covers the code it makes the server run: a test command or
MCP server whose code changed after it was trusted does not run (issue #31). The server looks at
those files with the config files (#42), so the next task's config is untrusted; a task already
running keeps its trusted settings, and the check before a trusted command starts refuses the
changed code there. A real server over stdio; the commands leave a marker when run."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from lsp_harness import edit, provider_options, tool_messages

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")


def workspace_config(root: Path, **values: object) -> None:
    (root / ".lich").mkdir(exist_ok=True)
    (root / ".lich" / "config.json").write_text(json.dumps(values), encoding="utf-8")


def ran(root: Path) -> str | None:
    marker = root / "ran.txt"
    return marker.read_text(encoding="utf-8") if marker.exists() else None


async def test_a_trusted_test_command_whose_script_changed_since_does_not_run(
    session, root: Path, fake_provider
) -> None:
    (root / "t5.sh").write_text("echo trusted > ran.txt\n", encoding="utf-8")
    (root / "a.py").write_text("a = 1\n", encoding="utf-8")
    workspace_config(root, test_command="sh<t5.sh")
    run_tests = {"tool_calls": [{"name": "run_tests", "arguments": {}}]}
    fake_provider.script(
        run_tests,
        {"text": "done"},
        {"tool_calls": [edit("a.py", "a = 1", "a = 2")]},
        run_tests,
        {"text": "done"},
        run_tests,
        {"text": "done"},
    )
    client = await session(
        init_options=provider_options(fake_provider, approval={"run_tests": "allow"})
    )
    trusted = await client.command("lich.trustWorkspace", {})
    assert trusted["state"] == "trusted", trusted

    first = await client.command("lich.ask", {"prompt": "run the tests"})
    assert first["stopped_reason"] == "final", first
    assert ran(root) == "trusted\n"

    # Changed while a task runs (its edit held by the editor): the task keeps its trusted
    # settings, and the check before the command starts refuses the changed script.
    (root / "ran.txt").unlink()
    client.open(root / "a.py")
    with client.holding_edits():
        running = asyncio.ensure_future(client.command("lich.ask", {"prompt": "edit, test"}))
        await client.wait_until(lambda: bool(client.editor.applied), what="the held edit")
        (root / "t5.sh").write_text("echo changed > ran.txt\n", encoding="utf-8")
    second = await running
    assert second["stopped_reason"] == "final", second
    assert ran(root) is None, "the changed script ran under the trust given before"
    error = json.loads(tool_messages(fake_provider)[-1])["error"]
    assert error.startswith("workspace_changed: t5.sh changed since you trusted this workspace"), (
        error
    )

    # The next task reads the config again: untrusted, so it has no test command at all.
    status = await client.command("lich.status", {})
    assert status["trust"]["state"] == "untrusted" and status["trust"]["changed"] is True
    third = await client.command("lich.ask", {"prompt": "run the tests again"})
    assert third["stopped_reason"] == "final", third
    assert ran(root) is None
    assert json.loads(tool_messages(fake_provider)[-1])["error"].startswith("no_test_command:")


async def test_a_trusted_mcp_server_whose_code_changed_since_does_not_start(
    session, root: Path, fake_provider
) -> None:
    server = root / "tools" / "srv.py"
    server.parent.mkdir()
    code = "from pathlib import Path\nPath(__file__).resolve().parents[1].joinpath('ran.txt').write_text({!r})\n"
    server.write_text(code.format("trusted"), encoding="utf-8")
    workspace_config(
        root, mcp_servers={"srv": {"command": sys.executable, "args": ["srv.py"], "cwd": "tools"}}
    )
    fake_provider.script({"text": "first"}, {"text": "second"})
    client = await session(init_options=provider_options(fake_provider))
    trusted = await client.command("lich.trustWorkspace", {})
    assert trusted["state"] == "trusted", trusted

    await client.command("lich.ask", {"prompt": "hello"})
    assert ran(root) == "trusted"  # it started (and exited: the next task starts it again)

    (root / "ran.txt").unlink()
    server.write_text(code.format("changed"), encoding="utf-8")
    # The next task reads the config again: its trust no longer holds, no MCP server is configured.
    await client.command("lich.ask", {"prompt": "hello again"})
    assert ran(root) is None, "the changed server ran under the trust given before"
    status = await client.command("lich.status", {})
    assert status["trust"]["state"] == "untrusted" and status["trust"]["changed"] is True
    assert status["mcp_servers"] == []
