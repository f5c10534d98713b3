"""No test command runs after an agent task without process/exec wrote files, until the user
trusts the workspace again (issue #42), and that survives what re-reads the config: a settings
push (`workspace/didChangeConfiguration`, which reads the workspace config as untrusted and so
drops its `test_command`) and a new server on the same user state. Neither the configured
command nor the default pytest runs: from `lich.runTests` or from the agent's run_tests, whose
approval question is not asked for a call that would be refused. A real server over stdio; the
agent's conftest.py leaves a marker file when pytest imports it."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from lsp_harness import provider_options, tool_messages
from lsprotocol import types

from tests.support.agent_writes import (
    CONFTEST,
    REFUSAL,
    RUN_TESTS,
    WITHOUT_EXEC,
    WRITE_CONFTEST,
    conftest_ran,
    make_project,
)

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")


def assert_refused(answer: dict, root: Path) -> None:
    assert answer["ok"] is False and answer["passed"] == 0, answer
    assert answer["error"].startswith(REFUSAL), answer["error"]
    assert "lich.trustWorkspace" in answer["error"] and "`lich trust`" in answer["error"]
    assert not conftest_ran(root), "the agent's conftest.py was imported"


async def test_no_test_command_runs_after_agent_writes_until_the_user_trusts_again(
    session, root: Path, fake_provider
) -> None:
    make_project(root)
    (root / ".lich").mkdir()
    test_command = f"{shlex.quote(sys.executable)} -m pytest -q"
    (root / ".lich" / "config.json").write_text(json.dumps({"test_command": test_command}))
    fake_provider.script(
        {"tool_calls": [WRITE_CONFTEST]},
        {"text": "wrote conftest.py"},
        {"tool_calls": [RUN_TESTS]},
        {"text": "ran the tests"},
    )

    # A task without process/exec writes conftest.py, in a workspace whose config is trusted.
    first = await session(init_options=provider_options(fake_provider, capabilities=WITHOUT_EXEC))
    assert (await first.command("lich.trustWorkspace", {}))["state"] == "trusted"
    wrote = await first.command("lich.ask", {"prompt": "add a conftest"})
    assert wrote["stopped_reason"] == "final", wrote
    assert (root / "conftest.py").read_text(encoding="utf-8") == CONFTEST

    # (a) The user's settings change (process/exec granted): the config is read again, untrusted.
    with_exec = provider_options(fake_provider, capabilities=[*WITHOUT_EXEC, "process/exec"])
    first.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"lich": with_exec})
    )
    status = await first.wait_for_status(lambda s: s["trust"]["state"] == "untrusted")
    assert status["trust"]["agent_writes"] == ["conftest.py"]
    assert_refused(await first.command("lich.runTests", {}), root)

    # (b) A new server on the same user state: lich.runTests and the agent's run_tests.
    second = await session(init_options=provider_options(fake_provider))
    assert (await second.command("lich.status", {}))["trust"]["state"] == "untrusted"
    assert_refused(await second.command("lich.runTests", {}), root)
    asked = await second.command("lich.ask", {"prompt": "run the tests"})
    assert asked["stopped_reason"] == "final", asked
    error = json.loads(tool_messages(fake_provider)[-1])["error"]
    assert error.startswith(REFUSAL) and "lich.trustWorkspace" in error, error
    assert not conftest_ran(root)
    # Refused whatever the answer, so not asked (the approval policy for run_tests is "ask").
    assert not [r for r in second.editor.message_requests if "run_tests" in r.message]

    # The user's yes: the configured command runs again, with the conftest.py now there.
    assert (await second.command("lich.trustWorkspace", {}))["state"] == "trusted"
    ran = await second.command("lich.runTests", {})
    assert ran["ok"] is True and ran["passed"] == 1, ran
    assert conftest_ran(root)
