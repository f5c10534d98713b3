"""The language server reads its config once, so trust given then is checked again before a
trusted command starts: a test command or MCP server whose code changed after the config was
read does not run (issue #31). A real server over stdio; the commands leave a marker when run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from lsp_harness import provider_options, tool_messages

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
    workspace_config(root, test_command="sh<t5.sh")
    run_tests = {"tool_calls": [{"name": "run_tests", "arguments": {}}]}
    fake_provider.script(run_tests, {"text": "done"}, run_tests, {"text": "done"})
    client = await session(
        init_options=provider_options(fake_provider, approval={"run_tests": "allow"})
    )
    trusted = await client.command("lich.trustWorkspace", {})
    assert trusted["state"] == "trusted", trusted

    first = await client.command("lich.ask", {"prompt": "run the tests"})
    assert first["stopped_reason"] == "final", first
    assert ran(root) == "trusted\n"

    (root / "ran.txt").unlink()
    (root / "t5.sh").write_text("echo changed > ran.txt\n", encoding="utf-8")
    second = await client.command("lich.ask", {"prompt": "run the tests again"})
    assert second["stopped_reason"] == "final", second
    assert ran(root) is None, "the changed script ran under the trust given before"
    error = json.loads(tool_messages(fake_provider)[-1])["error"]
    assert error.startswith("workspace_changed: t5.sh changed since you trusted this workspace"), (
        error
    )


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
    await client.command("lich.ask", {"prompt": "hello again"})
    assert ran(root) is None, "the changed server ran under the trust given before"
    status = await client.command("lich.status", {})
    errors = [item.get("last_error") or "" for item in status["mcp_servers"]]
    assert any(
        error.startswith("workspace_changed: tools/srv.py changed since you trusted")
        for error in errors
    ), errors
