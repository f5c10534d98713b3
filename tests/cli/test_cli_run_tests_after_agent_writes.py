"""`lich tool run_tests` runs no test command after an agent task without process/exec wrote
files in the workspace (issue #42): not the default pytest either, which would import the
conftest.py the agent wrote; nor does an agent run's run_tests. It says why and how to trust;
after `lich trust` the tests run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.agent_writes import (
    CONFTEST,
    REFUSAL,
    RUN_TESTS,
    WITHOUT_EXEC,
    WRITE_CONFTEST,
    conftest_ran,
    make_project,
)
from tests.support.cli_runner import run_lich as lich


def replay_config(tmp_path: Path, name: str, call: dict[str, Any], **values: Any) -> Path:
    """A --config whose replayed model makes `call`, then answers."""
    turns = [{"content": "", "tool_calls": [{"id": "c", **call}]}, {"content": "Done."}]
    model = tmp_path / f"{name}.jsonl"
    model.write_text(
        "".join(json.dumps({"message": {"role": "assistant", **turn}}) + "\n" for turn in turns)
    )
    config = tmp_path / f"{name}.json"
    provider = {"name": "replay", "kind": "replay", "path": str(model)}
    config.write_text(json.dumps({"providers": [provider], **values}))
    return config


def test_lich_tool_run_tests_is_refused_after_agent_writes_until_lich_trust(
    tmp_path: Path,
) -> None:
    work = tmp_path / "repo"
    work.mkdir()
    work = make_project(work.resolve())
    writer = replay_config(tmp_path, "writer", WRITE_CONFTEST, capabilities=WITHOUT_EXEC)
    wrote = lich("add a conftest", "--config", str(writer), "--work-dir", str(work), cwd=work)
    assert wrote.returncode == 0, wrote.stderr
    assert (work / "conftest.py").read_text(encoding="utf-8") == CONFTEST

    refused = lich("tool", "run_tests", "{}", cwd=work)
    assert not conftest_ran(work), "the agent's conftest.py was imported"
    assert refused.returncode != 0
    assert refused.stderr.startswith(f"error: {REFUSAL}"), refused.stderr
    assert "`lich trust`" in refused.stderr
    # An agent run whose approval policy asks for run_tests: the refusal says why, not that
    # the command line cannot ask.
    tests = replay_config(tmp_path, "tests", RUN_TESTS, approval={"run_tests": "ask"})
    asked = lich("run the tests", "--config", str(tests), "--work-dir", str(work), cwd=work)
    assert not conftest_ran(work)
    assert REFUSAL in asked.stderr and "approval_denied" not in asked.stderr, asked.stderr

    trusted = lich("trust", "--work-dir", str(work), cwd=work)
    assert trusted.returncode == 0, trusted.stderr
    ran = lich("tool", "run_tests", "{}", cwd=work)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "1 passed" in ran.stdout
    assert conftest_ran(work)
