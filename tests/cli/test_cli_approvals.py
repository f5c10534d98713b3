"""The `lich` command line and what tools start: nothing there can ask, so an `ask` entry of the
approval policy is a refusal that says what would have run (the line the editors' questions show);
and what python_eval's interpreter started, a `setsid -f` daemon included, is gone once `lich`
exits."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path

from tests.support.cli_runner import run_lich, run_lich_subprocess
from tests.support.processes import pid_alive
from tests.support.untrusted_repo import (
    EVAL_CODE,
    PYTHON_EVAL_RUNS,
    RUN_TESTS_RUNS,
    make_untrusted_repo,
    nothing_of_the_repo_ran,
)

# Starts a daemon in its own session (the parent `setsid` exits at once, so it leaves the
# interpreter's process group and is re-parented away) and returns its pid once it runs.
DAEMON_EVAL = (
    "import subprocess\n"
    "daemon = subprocess.Popen(['setsid', '-f', 'sh', '-c', 'echo $$; exec sleep 3199 >/dev/null 2>&1'],"
    " stdout=subprocess.PIPE, text=True)\n"
    "int(daemon.stdout.readline())"
)


def write_user_config(**values: object) -> None:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "lich" / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(values))


def tool_errors(fake_provider) -> list[str]:  # type: ignore[no-untyped-def]
    messages = [
        m for m in fake_provider.requests[-1]["json"]["messages"] if m.get("role") == "tool"
    ]
    return [json.loads(m["content"])["error"] for m in messages]


def provider_flags(fake_provider) -> list[str]:  # type: ignore[no-untyped-def]
    return [
        "--base-url",
        fake_provider.url + "/v1",
        "--model",
        "fake-model",
        "--provider-kind",
        "openai_compat",
    ]


def test_an_ask_entry_is_refused_with_what_would_have_run(tmp_path: Path, fake_provider) -> None:
    root = make_untrusted_repo(tmp_path)
    write_user_config(approval={"run_tests": "ask", "image/eval": "ask"})
    fake_provider.script(
        {"tool_calls": [{"name": "run_tests", "arguments": {}}]},
        {"tool_calls": [{"name": "python_eval", "arguments": {"code": EVAL_CODE}}]},
        {"text": "done"},
    )
    result = run_lich("test it", "--work-dir", str(root), *provider_flags(fake_provider), cwd=root)
    assert result.returncode == 0, result.stderr
    assert tool_errors(fake_provider) == [
        'approval_denied: run_tests needs the user\'s approval (approval.run_tests is "ask") and the lich '
        f'command line cannot ask; the call {RUN_TESTS_RUNS}; allow it with the config key approval.run_tests = "allow"',
        'approval_denied: python_eval needs the user\'s approval (approval.image/eval is "ask") and the lich '
        f'command line cannot ask; the call {PYTHON_EVAL_RUNS}; allow it with the config key approval.python_eval = "allow"',
    ]
    assert nothing_of_the_repo_ran(root)


def test_a_deny_entry_is_refused(tmp_path: Path, fake_provider) -> None:
    write_user_config(approval={"terminal": "deny"})
    fake_provider.script(
        {"tool_calls": [{"name": "terminal", "arguments": {"command": "touch ran"}}]},
        {"text": "done"},
    )
    result = run_lich(
        "run it", "--work-dir", str(tmp_path), *provider_flags(fake_provider), cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert tool_errors(fake_provider) == [
        "approval_denied: terminal is denied by the approval policy"
    ]
    assert not (tmp_path / "ran").exists()


def test_the_eval_interpreters_daemons_are_gone_after_lich_exits(
    tmp_path: Path, fake_provider
) -> None:
    fake_provider.script(
        {"tool_calls": [{"name": "python_eval", "arguments": {"code": DAEMON_EVAL}}]},
        {"text": "done"},
    )
    result = run_lich_subprocess(
        "start a daemon", "--work-dir", str(tmp_path), *provider_flags(fake_provider), cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    messages = [
        m["content"]
        for m in fake_provider.requests[-1]["json"]["messages"]
        if m.get("role") == "tool"
    ]
    pid = int(messages[0])
    try:
        assert not pid_alive(pid), f"the eval's daemon {pid} outlived lich"
    finally:
        with contextlib.suppress(OSError):
            if b"3199" in Path(f"/proc/{pid}/cmdline").read_bytes():
                os.kill(pid, signal.SIGKILL)
